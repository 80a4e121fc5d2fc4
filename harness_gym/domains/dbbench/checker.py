"""CHECK for DB-Bench drafts: a dry run on the episode's database (rolled back) and validation of the result's
shape, or of an answer list's shape and values; never the label or the answer hash."""

from __future__ import annotations

import re
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from sqlglot import exp

from harness_gym.core.types import CheckResult
from harness_gym.domains.dbbench.engines import (
    DatabaseSession,
    SQLError,
    fold_text,
    parse_mysql,
    rows_changed,
    run_statement,
    statement_kind,
)
from harness_gym.domains.dbbench.grader import answer_problem, format_result, normalize_answer
from harness_gym.domains.dbbench.records import DBRecord

_SINGLE_VALUE_TYPES = frozenset({"counting", "aggregation-SUM", "aggregation-AVG", "aggregation-MIN", "aggregation-MAX"})
_NUMERIC_TYPES = frozenset({"counting", "aggregation-SUM"})
"""Types whose answer is always a number (MIN / MAX / AVG of a text column may be text in upstream labels)."""
_TOKEN = re.compile(r"\w+")


def quote_name(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _expected_kind(qtype: str) -> str:
    return qtype.lower() if qtype in ("INSERT", "UPDATE", "DELETE") else "select"


def _is_number(text: Any) -> bool:
    try:
        float(str(text))
    except ValueError:
        return False
    return True


def tables_and_columns(sql: str) -> tuple[set[str], set[str]]:
    tree = parse_mysql(sql)
    tables = {t.name.lower() for t in tree.find_all(exp.Table)}
    aliases = {a.alias.lower() for a in tree.find_all(exp.Alias)}
    columns = {c.name.lower() for c in tree.find_all(exp.Column) if c.name} - aliases
    if isinstance(tree, exp.Insert) and isinstance(tree.this, exp.Schema):
        columns |= {i.name.lower() for i in tree.this.expressions if isinstance(i, exp.Identifier)}
    return tables, columns



def check_sql(record: DBRecord, sql: str,
              session_scope: Callable[[], AbstractContextManager[DatabaseSession]]) -> CheckResult:
    """CHECK of a SQL draft: the statement kind and table the question asks for, then a dry run.

    :param record: the task's record
    :param sql: the draft
    :param session_scope: gives the episode's database (a context manager)
    """
    try:
        kind = statement_kind(sql)
        want = _expected_kind(record.qtype)
        if kind != want:
            return CheckResult(False, f"the question asks for {want.upper()}, the draft is {kind.upper()}", 0.9)
        tables, _ = tables_and_columns(sql)
        if tables != {record.table.name.lower()}:
            return CheckResult(False, f"the draft uses table(s) {sorted(tables)}; the task's table is "
                               f"{quote_name(record.table.name)}", 0.9)
        with session_scope() as session:
            result, after = run_statement(session, sql)
    except SQLError as exc:
        return CheckResult(False, f"SQL error: {exc}", 0.8)
    if record.is_mutation:
        changed = rows_changed(record.table.rows, after)
        if changed == 0:
            return CheckResult(False, f"dry run: the {kind.upper()} changed no rows (does its WHERE match "
                               "the intended row?)", 0.6)
        return CheckResult(True, f"dry run ok: {changed} row(s) changed", 0.5)
    problem = _shape_problem(record.qtype, result.rows)
    if problem:
        return CheckResult(False, f"dry run: {problem}; result {format_result(result.rows)[:200]}", 0.6)
    return CheckResult(True, f"dry run ok: {format_result(result.rows)[:200]}", 0.5)



def check_answer(record: DBRecord, content: str) -> CheckResult:
    """CHECK of an answer-list draft: its shape, and its values appearing in the table or the question.

    :param record: the task's record
    :param content: the draft
    """
    too_long = answer_problem(content)
    if too_long:
        return CheckResult(False, too_long, 0.5)
    values = normalize_answer(content)
    if not values or not content.strip() or content.strip() == "[]":
        return CheckResult(False, "the answer is empty", 0.5)
    problem = _shape_problem(record.qtype, [(v,) for v in values])
    if problem:
        return CheckResult(False, f"answer {values}: {problem}", 0.6)
    cells = [fold_text(v) for row in record.table.rows for v in row]
    tokens = {t for c in [*cells, fold_text(record.description)] for t in _TOKEN.findall(c)}
    missing = [v for v in values if not _is_number(v) and not _in_table(fold_text(v), cells, tokens)]
    if missing:
        return CheckResult(False, f"value(s) {missing} appear neither in the table nor in the question", 0.6)
    return CheckResult(True, "every value appears in the table or the question", 0.5)


def _shape_problem(qtype: str, rows: list[tuple[Any, ...]]) -> str:
    """What is wrong with a result's shape for the question type ('' when nothing)."""
    if not rows:
        return "no rows"
    if qtype in _SINGLE_VALUE_TYPES:
        if len(rows) != 1 or len(rows[0]) != 1:
            return f"a {qtype} question takes one value, got {len(rows)} row(s) of {len(rows[0])} column(s)"
        if rows[0][0] is None:
            return f"a {qtype} question takes one value, got NULL (no row matched)"
        if qtype in _NUMERIC_TYPES and not _is_number(rows[0][0]):
            return f"a {qtype} question takes a number, got {rows[0][0]!r}"
    return ""


def _in_table(value: str, cells: list[str], tokens: set[str]) -> bool:
    """Whether a (folded) answer value is part of some cell or shares a word with the table or question."""
    return any(value in c for c in cells) or any(t in tokens for t in _TOKEN.findall(value))


