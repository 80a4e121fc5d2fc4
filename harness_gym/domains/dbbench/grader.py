"""DB-Bench scoring, computed in Python for every engine exactly as AgentBench's DB-Bench scores.

* Mutation tasks (INSERT / UPDATE / DELETE): the table hash is
  ``md5(group_concat(rowhash ORDER BY rowhash))`` with ``rowhash = substring(md5(concat_ws(',', cols...)), 1, 5)``.
  ``concat_ws`` skips NULLs, ``group_concat`` joins with ``,`` and stops at ``group_concat_max_len``
  (1024 bytes, MySQL's default), and an empty table hashes to NULL. A record's ``answer_md5`` is the
  Python repr of that query's result, ``"[('<hex>',)]"``.
* SELECT-like tasks: the answer and the label are cleaned the same way (surrounding quotes stripped, a
  trailing ``%`` dropped, thousands separators removed, NULL / none / nan / empty read as ``"0"``), then a
  single value matches a single value numerically within 0.01 (or as equal strings); several values match
  as a multiset of numbers within 0.01 when all are numbers, otherwise as sets.
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Iterable, Sequence
from decimal import Decimal
from typing import Any, Protocol

from harness_gym.core.intake import literal_value
from harness_gym.domains.dbbench.engines import DatabaseSession, SQLError, run_statement


class GradedTask(Protocol):
    """What :func:`grade_content` reads of a task's payload (a ``records.DBTaskPayload``)."""

    record: Any
    mode: str

GROUP_CONCAT_MAX_LEN = 1024
"""MySQL's default ``group_concat_max_len``: the joined row hashes are cut at this many bytes."""
FLOAT_TOLERANCE = 1e-2
RESULT_MAX_CHARS = 800
"""Upstream cuts a query result shown to the agent at this many characters and appends the marker."""
TRUNCATED_MARKER = "[TRUNCATED]"
MAX_ANSWER_CHARS = 64 * 1024
"""The longest answer draft read (characters); an answer list of a public DB-Bench record is under 1 KB."""

_NULL_WORDS = frozenset({"none", "null", "undefined", "nan", "inf", "infinity", "-inf", "-infinity", ""})


def table_hash(rows: Iterable[Sequence[Any]]) -> str | None:
    """The upstream table hash of ``rows`` (each a sequence of column values, ``None`` for NULL)."""
    row_hashes = [hashlib.md5(",".join([v if type(v) is str else _sql_text(v) for v in row if v is not None])
                              .encode("utf-8")).hexdigest()[:5] for row in rows]
    if not row_hashes:
        return None
    concat = ",".join(sorted(row_hashes)).encode("ascii")[:GROUP_CONCAT_MAX_LEN]
    return hashlib.md5(concat).hexdigest()


def parse_answer_md5(value: str) -> str | None:
    """The hex digest inside a record's ``answer_md5`` (``"[('<hex>',)]"``; ``"[(None,)]"`` is an empty table).

    :raises ValueError: when ``value`` is not of that form
    """
    try:
        parsed = ast.literal_eval(value.strip())
    except (ValueError, SyntaxError):
        parsed = value.strip()
    if isinstance(parsed, str):
        digest: Any = parsed
    elif isinstance(parsed, (list, tuple)) and len(parsed) == 1 and isinstance(parsed[0], tuple) and len(parsed[0]) == 1:
        digest = parsed[0][0]
    else:
        raise ValueError(f"not an md5 result: {value!r:.80}")
    if digest is None:
        return None
    if not (isinstance(digest, str) and len(digest) == 32 and all(c in "0123456789abcdef" for c in digest.lower())):
        raise ValueError(f"not an md5 hex digest: {digest!r:.80}")
    return digest.lower()


def format_result(rows: Sequence[Sequence[Any]]) -> str:
    """A query result as upstream shows it to the agent: the Python repr of the row tuples, cut at 800 chars.
    Rows are formatted one by one only until the cut, so a long result costs no more than its first rows (a
    fetched result is at most :data:`~harness_gym.domains.dbbench.engines.MAX_RESULT_BYTES` in all)."""
    parts, size = ["["], 1
    for i, row in enumerate(rows):
        piece = (", " if i else "") + repr(tuple(row))
        parts.append(piece)
        size += len(piece)
        if size > RESULT_MAX_CHARS:
            return "".join(parts)[:RESULT_MAX_CHARS] + TRUNCATED_MARKER
    text = "".join(parts) + "]"
    return text if len(text) <= RESULT_MAX_CHARS else text[:RESULT_MAX_CHARS] + TRUNCATED_MARKER


def rows_to_answer(rows: Sequence[Sequence[Any]]) -> list[str]:
    """Every cell of a SELECT result, row by row, as the text an agent would report."""
    return [_sql_text(v) if v is not None else "None" for row in rows for v in row]


def _sql_text(value: Any) -> str:
    """A column value as MySQL renders it in text (``Decimal('2.50')`` -> ``2.50``, floats by ``repr``)."""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, Decimal):
        return format(value, "f")
    return str(value)


def normalize_value(value: Any) -> str:
    """One answer value cleaned as upstream cleans it before comparing."""
    if value is None:
        return "0"
    text = str(value).strip().strip("'\"").strip()
    if text.endswith("%"):
        return text[:-1].strip()
    if "," in text and not (text.startswith("[") or text.endswith("]")):
        text = text.replace(",", "")
    return "0" if text.lower() in _NULL_WORDS else text


def normalize_answer(answer: Any) -> list[str]:
    """An answer (a list of values, a result repr such as ``"[('x',), (3,)]"``, or one value) as cleaned values.
    A list literal is read within the bounds of :func:`~harness_gym.core.intake.literal_value` (an answer draft
    is at most :data:`MAX_ANSWER_CHARS` long, see :func:`answer_problem`)."""
    if isinstance(answer, str):
        text = answer.strip()
        if text.startswith("[") and text.endswith("]"):
            try:
                parsed = literal_value(text, max_chars=MAX_ANSWER_CHARS)
            except (ValueError, SyntaxError):  # InputLimitError is a ValueError
                parsed = _split_list_literal(text[1:-1])
            if isinstance(parsed, list):
                answer = parsed
    if isinstance(answer, (list, tuple)):
        values = []
        for item in answer:
            if isinstance(item, tuple):
                values.extend(normalize_value(v) for v in item)
            else:
                values.append(normalize_value(item))
        return values
    return [normalize_value(answer)]


def answer_problem(content: str) -> str:
    """Why an answer draft is not read at all ("" when it is): longer than :data:`MAX_ANSWER_CHARS`.

    :param content: the draft
    """
    if len(content) > MAX_ANSWER_CHARS:
        return f"the answer has {len(content)} characters; at most {MAX_ANSWER_CHARS} are read"
    return ""


def _split_list_literal(body: str) -> list[str]:
    """Split the inside of a list literal that is not valid Python on commas outside quotes."""
    items, current, quote = [], "", ""
    for ch in body:
        if quote:
            if ch == quote:
                quote = ""
            else:
                current += ch
        elif ch in "'\"":
            quote = ch
        elif ch == ",":
            if current.strip():
                items.append(current.strip())
            current = ""
        else:
            current += ch
    if current.strip():
        items.append(current.strip())
    return items


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= FLOAT_TOLERANCE


def answers_match(answer: Any, label: Any) -> bool:
    """Whether an answer matches a SELECT record's label under upstream's comparison."""
    got, want = normalize_answer(answer), normalize_answer(label)
    if len(got) == 1 and len(want) == 1:
        a, b = _number(got[0]), _number(want[0])
        if a is not None and b is not None:
            return _close(a, b)
        return got[0] == want[0]
    got_num = [_number(v) for v in got]
    want_num = [_number(v) for v in want]
    if got and want and None not in got_num and None not in want_num:
        if len(got_num) != len(want_num):
            return False
        unmatched = list(want_num)
        for a in got_num:
            hit = next((i for i, b in enumerate(unmatched) if _close(a, b)), None)  # type: ignore[arg-type]
            if hit is None:
                return False
            unmatched.pop(hit)
        return True
    return set(got) == set(want)


def grade_content(session: DatabaseSession, payload: GradedTask, content: str) -> float:
    """Upstream score (0 or 1) of a draft: run it on a scratch copy of the table and compare."""
    record = payload.record
    if payload.mode == "answer":
        return 0.0 if answer_problem(content) else float(answers_match(content, record.label))
    try:
        result, rows = run_statement(session, content)
    except SQLError:
        return 0.0
    if record.is_mutation:
        return float(table_hash(rows) == record.answer_md5)
    return float(answers_match(rows_to_answer(result.rows), record.label))
