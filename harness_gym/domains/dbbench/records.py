"""Reading AgentBench DB-Bench records (``standard.jsonl`` / ``dev.jsonl``) and assigning their splits.

A record holds one table (``table.table_name``, ``table.table_info.columns[].name``,
``table.table_info.rows``), a ``description`` (the question), a ``type`` (``["INSERT"]``, ``["counting"]``,
...), and either an ``answer_md5`` (mutation types: the table hash after the right change) or a ``label``
(the answer values). The reference SQL is ``sql.query`` when present, else, for mutation records, the
statement stored as ``label[0]``. Every value is loaded as ``str(value)``, as upstream inserts it.

Splits: a record with a ``split`` field keeps it; any other is assigned from a hash of its content
(description, table name, type, answer), so the assignment does not depend on file order or on other
records: the first 8 hex digits of the SHA-256, read as a fraction ``u`` in [0, 1), give train for
``u < 0.6``, val for ``u < 0.8`` and test otherwise (:data:`SPLIT_RATIOS`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness_gym.core.taskfile import TaskFileError, read_jsonl, require
from harness_gym.core.types import SPLITS
from harness_gym.domains.dbbench.engines import TableSpec
from harness_gym.domains.dbbench.grader import parse_answer_md5

MUTATION_TYPES = frozenset({"INSERT", "UPDATE", "DELETE"})
SPLIT_RATIOS: tuple[tuple[str, float], ...] = (("train", 0.6), ("val", 0.2), ("test", 0.2))
"""Content-hash split ratios for records without a ``split`` field."""


@dataclass(frozen=True)
class DBRecord:
    """One DB-Bench record, validated.

    ``answer_md5`` is the expected table hash of a mutation record (``None`` for an empty table);
    ``label`` the expected answer of a SELECT-like record; ``sql`` the reference statement, if any.
    """

    record_id: str
    line: int
    description: str
    add_description: str
    qtype: str
    table: TableSpec
    label: tuple[str, ...]
    answer_md5: str | None
    sql: str | None
    split: str

    @property
    def is_mutation(self) -> bool:
        return self.qtype in MUTATION_TYPES


def content_split(rec: dict[str, Any]) -> str:
    """The split a record gets from its content (see the module doc)."""
    key = json.dumps([rec.get("description"), rec.get("table", {}).get("table_name"), rec.get("type"),
                      rec.get("answer_md5"), rec.get("label")], sort_keys=True, ensure_ascii=False, default=str)
    u = int(hashlib.sha256(key.encode("utf-8")).hexdigest()[:8], 16) / 16**8
    acc = 0.0
    for split, ratio in SPLIT_RATIOS:
        acc += ratio
        if u < acc:
            return split
    return SPLIT_RATIOS[-1][0]


def _parse_table(raw: dict[str, Any], *, path: Path, line: int, rid: str) -> TableSpec:
    name = require(raw, "table_name", str, path=path, line=line, task_id=rid)
    info = require(raw, "table_info", dict, path=path, line=line, task_id=rid)
    cols_raw = require(info, "columns", list, path=path, line=line, task_id=rid)
    rows_raw = require(info, "rows", list, path=path, line=line, task_id=rid)
    if not name.strip():
        raise TaskFileError(path, "empty table name", line=line, task_id=rid, field="table.table_name")
    columns = []
    for i, col in enumerate(cols_raw):
        where = f"table.table_info.columns[{i}]"
        if not isinstance(col, dict):
            raise TaskFileError(path, f"expected an object, got {type(col).__name__}", line=line, task_id=rid, field=where)
        columns.append(require(col, "name", str, path=path, line=line, task_id=f"{rid}: {where}"))
    if not columns:
        raise TaskFileError(path, "a table needs at least one column", line=line, task_id=rid,
                            field="table.table_info.columns")
    folded = [c.lower() for c in columns]
    if len(set(folded)) != len(folded):
        dup = next(c for c in columns if folded.count(c.lower()) > 1)
        raise TaskFileError(path, f"duplicate column name {dup!r}", line=line, task_id=rid,
                            field="table.table_info.columns")
    rows = []
    for i, row in enumerate(rows_raw):
        where = f"table.table_info.rows[{i}]"
        if not isinstance(row, list):
            raise TaskFileError(path, f"expected a list, got {type(row).__name__}", line=line, task_id=rid, field=where)
        if len(row) != len(columns):
            raise TaskFileError(path, f"row has {len(row)} values for {len(columns)} columns", line=line,
                                task_id=rid, field=where)
        rows.append(tuple(str(v) for v in row))
    return TableSpec(name=name, columns=tuple(columns), rows=tuple(rows))


def parse_record(rec: dict[str, Any], *, path: Path, line: int, record_id: str) -> DBRecord:
    """Validate one raw record. :raises TaskFileError: naming the file, line, record and field."""
    rid = str(rec.get("id", record_id))
    description = require(rec, "description", str, path=path, line=line, task_id=rid)
    types = require(rec, "type", list, path=path, line=line, task_id=rid)
    if not types or not isinstance(types[0], str) or not types[0]:
        raise TaskFileError(path, "expected a list starting with a type name", line=line, task_id=rid, field="type")
    qtype = types[0]
    table = _parse_table(require(rec, "table", dict, path=path, line=line, task_id=rid), path=path, line=line, rid=rid)
    label_raw = require(rec, "label", list, path=path, line=line, task_id=rid, default=[])
    label = tuple(str(v) for v in label_raw)
    sql_field = require(rec, "sql", dict, path=path, line=line, task_id=rid, default={})
    sql = sql_field.get("query") if sql_field else None
    if sql is not None and not isinstance(sql, str):
        raise TaskFileError(path, f"expected string, got {type(sql).__name__}", line=line, task_id=rid, field="sql.query")
    answer_md5 = None
    if qtype in MUTATION_TYPES:
        raw_md5 = require(rec, "answer_md5", str, path=path, line=line, task_id=rid)
        try:
            answer_md5 = parse_answer_md5(raw_md5)
        except ValueError as exc:
            raise TaskFileError(path, str(exc), line=line, task_id=rid, field="answer_md5") from None
        if sql is None and label and label[0].strip():
            sql = label[0]
    elif not label:
        raise TaskFileError(path, "a SELECT-like record needs a non-empty label", line=line, task_id=rid, field="label")
    split = require(rec, "split", str, path=path, line=line, task_id=rid, default="") or content_split(rec)
    if split not in SPLITS:
        raise TaskFileError(path, f"unknown split {split!r}; expected one of {SPLITS}", line=line, task_id=rid,
                            field="split")
    return DBRecord(record_id=rid, line=line, description=description,
                    add_description=str(rec.get("add_description", "")), qtype=qtype, table=table, label=label,
                    answer_md5=answer_md5, sql=sql.strip() if sql else None, split=split)


def read_records(path: str | Path) -> list[DBRecord]:
    """Every record of a DB-Bench JSONL file; ids are ``<file stem>-<line>`` unless a record has an ``id``."""
    path = Path(path)
    records = [parse_record(rec, path=path, line=line, record_id=f"{path.stem}-{line}")
               for line, rec in read_jsonl(path)]
    if not records:
        raise TaskFileError(path, "no records")
    seen: dict[str, int] = {}
    for r in records:
        if r.record_id in seen:
            raise TaskFileError(path, f"duplicate record id (also on line {seen[r.record_id]})", line=r.line,
                                task_id=r.record_id, field="id")
        seen[r.record_id] = r.line
    return records
