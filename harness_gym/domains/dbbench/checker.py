"""CHECK for DB-Bench drafts: a dry run on the episode's database (rolled back) and validation of the result's
shape, or of an answer list's shape and values; never the label or the answer hash. Each check is counted
(``n_passed`` / ``n_total``; how many a question gets depends on its type: :func:`visible_checks`) and the
statements sent to the database are billed (``db_query`` each)."""

from __future__ import annotations

import re
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from harness_gym.core.types import CheckResult
from harness_gym.domains.dbbench.collation import fold_text
from harness_gym.domains.dbbench.engines import DatabaseSession, SQLError, rows_changed, run_statement
from harness_gym.domains.dbbench.grader import answer_problem, format_result, normalize_answer
from harness_gym.domains.dbbench.statements import statement_kind, tables_and_columns
from harness_gym.domains.dbbench.upstream import DBRecord

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


def shape_checks(qtype: str) -> int:
    """How many checks a result's shape gets for the question type: at least one row; for a single-value
    type also one value (one row of one column, not NULL); for a numeric type also a number."""
    return 1 + (qtype in _SINGLE_VALUE_TYPES) + (qtype in _NUMERIC_TYPES)


def visible_checks(qtype: str, mode: str) -> int:
    """How many checks CHECK runs on a draft for a question of ``qtype`` whose drafts are ``mode`` (``"sql"``:
    statement kind, table, the dry run, then the changed rows of a mutation or the result's shape; ``"answer"``:
    the answer's shape, then its values found in the table or the question)."""
    if mode == "answer":
        return shape_checks(qtype) + 1
    return 3 + (1 if qtype in ("INSERT", "UPDATE", "DELETE") else shape_checks(qtype))


def _shape_failures(qtype: str, rows: list[tuple[Any, ...]]) -> list[str]:
    """What is wrong with a result's shape for the question type, one entry per failed shape check."""
    if not rows:
        return ["no rows"] * shape_checks(qtype)
    out = []
    if qtype in _SINGLE_VALUE_TYPES:
        if len(rows) != 1 or len(rows[0]) != 1:
            out.append(f"a {qtype} question takes one value, got {len(rows)} row(s) of {len(rows[0])} column(s)")
        elif rows[0][0] is None:
            out.append(f"a {qtype} question takes one value, got NULL (no row matched)")
    if qtype in _NUMERIC_TYPES and not (len(rows[0]) >= 1 and _is_number(rows[0][0])):
        out.append(f"a {qtype} question takes a number, got {rows[0][0] if rows[0] else None!r}")
    return out


def _verdict(failures: list[tuple[str, float]], n_total: int, ok_message: str,
             billed: dict[str, float]) -> CheckResult:
    n_passed = n_total - len(failures)
    if failures:
        message, specificity = failures[0]
        return CheckResult(False, f"{message} ({n_passed} of {n_total} checks pass)", specificity,
                           n_passed=n_passed, n_total=n_total, billed=billed)
    return CheckResult(True, f"{ok_message} ({n_total} of {n_total} checks pass)", 0.5, n_passed=n_total,
                       n_total=n_total, billed=billed)


def check_sql(record: DBRecord, sql: str,
              session_scope: Callable[[], AbstractContextManager[DatabaseSession]]) -> CheckResult:
    """CHECK of a SQL draft: the statement kind and table the question asks for, then a dry run and what it
    changed or returned. Every check is evaluated (:func:`visible_checks` of them) and the feedback names the
    first that fails. ``billed``: the statements sent to the database: the draft (when it parses as one
    statement), and for a mutation the read of the table afterwards.

    :param record: the task's record
    :param sql: the draft
    :param session_scope: gives the episode's database (a context manager)
    """
    n_total = visible_checks(record.qtype, "sql")
    want = _expected_kind(record.qtype)
    try:
        kind = statement_kind(sql)
    except SQLError as exc:
        return _verdict([(f"SQL error: {exc}", 0.8)] * n_total, n_total, "", {})
    failures: list[tuple[str, float]] = []
    if kind != want:
        failures.append((f"the question asks for {want.upper()}, the draft is {kind.upper()}", 0.9))
    try:
        tables, _ = tables_and_columns(sql)
    except SQLError as exc:
        failures.append((f"SQL error: {exc}", 0.8))
    else:
        if tables != {record.table.name.lower()}:
            failures.append((f"the draft uses table(s) {sorted(tables)}; the task's table is "
                             f"{quote_name(record.table.name)}", 0.9))
    mutation = kind in ("insert", "update", "delete")
    billed = {"db_query": 2.0 if mutation else 1.0}
    try:
        with session_scope() as session:
            result, after = run_statement(session, sql)
    except SQLError as exc:
        return _verdict(failures + [(f"SQL error: {exc}", 0.8)] * (n_total - 2), n_total, "", billed)
    if record.is_mutation:
        changed = rows_changed(record.table.rows, after)
        if changed == 0:
            failures.append((f"dry run: the {kind.upper()} changed no rows (does its WHERE match the intended "
                             "row?)", 0.6))
        return _verdict(failures, n_total, f"dry run ok: {changed} row(s) changed", billed)
    shown = format_result(result.rows)[:200]
    failures += [(f"dry run: {problem}; result {shown}", 0.6) for problem in _shape_failures(record.qtype, result.rows)]
    return _verdict(failures, n_total, f"dry run ok: {shown}", billed)


def check_answer(record: DBRecord, content: str) -> CheckResult:
    """CHECK of an answer-list draft: its shape, and its values appearing in the table or the question
    (:func:`visible_checks` of them). Looking values up in the table is one read of it: ``billed`` one
    ``db_query``.

    :param record: the task's record
    :param content: the draft
    """
    n_total = visible_checks(record.qtype, "answer")
    too_long = answer_problem(content)
    if too_long:
        return _verdict([(too_long, 0.5)] * n_total, n_total, "", {})
    values = normalize_answer(content)
    if not values or not content.strip() or content.strip() == "[]":
        return _verdict([("the answer is empty", 0.5)] * n_total, n_total, "", {})
    failures = [(f"answer {values}: {problem}", 0.6) for problem in _shape_failures(record.qtype, [(v,) for v in values])]
    cells = [fold_text(v) for row in record.table.rows for v in row]
    tokens = {t for c in [*cells, fold_text(record.description)] for t in _TOKEN.findall(c)}
    missing = [v for v in values if not _is_number(v) and not _in_table(fold_text(v), cells, tokens)]
    if missing:
        failures.append((f"value(s) {missing} appear neither in the table nor in the question", 0.6))
    return _verdict(failures, n_total, "every value appears in the table or the question", {"db_query": 1.0})


def _in_table(value: str, cells: list[str], tokens: set[str]) -> bool:
    """Whether a (folded) answer value is part of some cell or shares a word with the table or question."""
    return any(value in c for c in cells) or any(t in tokens for t in _TOKEN.findall(value))
