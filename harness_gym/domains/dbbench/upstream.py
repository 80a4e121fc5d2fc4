"""Reading AgentBench DB-Bench records (``standard.jsonl`` / ``dev.jsonl``) and assigning their splits.

A record holds one table (``table.table_name``, ``table.table_info.columns[].name``,
``table.table_info.rows``), a ``description`` (the question), a ``type`` (``["INSERT"]``, ``["counting"]``,
...), and either an ``answer_md5`` (mutation types: the table hash after the right change) or a ``label``
(the answer values). The reference SQL is ``sql.query`` when present, else, for mutation records, the
statement stored as ``label[0]``. Every value is loaded as ``str(value)``, as upstream inserts it.

Splits: a record with a ``split`` field keeps it; any other is assigned from a hash of its content
(description, table name, type, answer), so the assignment does not depend on file order or on other
records: the first 8 hex digits of the SHA-256, read as a fraction ``u`` in [0, 1), give train for
``u < 0.6``, val for ``u < 0.8`` and test otherwise (:data:`SPLIT_RATIOS`). The ood split holds out
schemas: a record whose ``source`` is :data:`OOD_SOURCE` (tables from WikiTableQuestions, with every
question type) and whose hash gives train or val goes to ``ood`` instead, so no table of that corpus is
trained or validated on; test is assigned as without it. A file without ``source`` fields has no ood split
unless its records name one.

Records that cannot be built are left out and reported (:class:`LeftOutRecord`: file, line, record id,
reason); :func:`load_records` with ``strict=True`` raises on the first instead. What upstream AgentBench
does with such a record decides the treatment:

- **Duplicate column names** (MySQL compares column names case-insensitively): upstream builds the table
  with ``CREATE TABLE `name` (`col` TEXT, ...)``, which MySQL refuses (error 1060, duplicate column name).
  AgentBench v0.1/v0.2 swallows the error and runs the sample on a database without the table (every query
  fails, no answer can be checked against data); the current release raises and scores the sample 0 as a
  task error. Either way the record has no solvable table, so it is left out.
- **A row whose value count differs from the column count**: upstream's single multi-row ``INSERT`` fails
  (MySQL error 1136), so the table stays empty (v0.2) or the sample is a task error (current): left out.
- **A reference that does not reproduce ``answer_md5``** (checked when tasks are built): no draft can be
  scored correct from the table as given: left out.
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
OOD_SOURCE = "wikitq"
"""The ``source`` corpus whose records are held out of train and val as the ood split."""
SPLIT_RATIOS: tuple[tuple[str, float], ...] = (("train", 0.6), ("val", 0.2), ("test", 0.2))
"""Content-hash split ratios for records without a ``split`` field."""


@dataclass(frozen=True)
class LeftOutRecord:
    """A record that could not be built: where it is and why (what upstream would do with it)."""

    path: str
    line: int | None
    record_id: str
    reason: str

    def __str__(self) -> str:
        where = self.path + (f", line {self.line}" if self.line is not None else "")
        return f"{where}, record {self.record_id!r}: {self.reason}"


@dataclass(frozen=True)
class RecordSet:
    """The records of a file that could be read, and those left out with the reason."""

    records: tuple[DBRecord, ...]
    left_out: tuple[LeftOutRecord, ...]


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
        dup = [c for c in columns if folded.count(c.lower()) > 1]
        raise TaskFileError(path, f"duplicate column name {dup[0]!r} (columns {', '.join(map(repr, dup))}): "
                            "MySQL refuses upstream's CREATE TABLE (error 1060), so AgentBench runs this record "
                            "without its table (v0.2) or scores it 0 as a task error (current)", line=line,
                            task_id=rid, field="table.table_info.columns")
    rows = []
    for i, row in enumerate(rows_raw):
        where = f"table.table_info.rows[{i}]"
        if not isinstance(row, list):
            raise TaskFileError(path, f"expected a list, got {type(row).__name__}", line=line, task_id=rid, field=where)
        if len(row) != len(columns):
            raise TaskFileError(path, f"row has {len(row)} values for {len(columns)} columns: upstream's INSERT "
                                "fails (MySQL error 1136), so AgentBench runs this record on an empty table (v0.2) "
                                "or scores it 0 as a task error (current)", line=line, task_id=rid, field=where)
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
    if "split" not in rec and rec.get("source") == OOD_SOURCE and split in ("train", "val"):
        split = "ood"
    return DBRecord(record_id=rid, line=line, description=description,
                    add_description=str(rec.get("add_description", "")), qtype=qtype, table=table, label=label,
                    answer_md5=answer_md5, sql=sql.strip() if sql else None, split=split)


def _reason(exc: TaskFileError) -> str:
    """The message of a record error without its location prefix, led by the field when there is one."""
    prefix = str(TaskFileError(exc.path, "", line=exc.line, task_id=exc.task_id, field=exc.field))
    message = str(exc)[len(prefix):]
    field = exc.field
    if field is None and exc.task_id and ": " in exc.task_id:  # a table part names its place in the task id
        field = exc.task_id.split(": ", 1)[1]
    return f"field {field!r}: {message}" if field else message


def load_records(path: str | Path, *, strict: bool = False) -> RecordSet:
    """Every record of a DB-Bench JSONL file that can be read; ids are ``<file stem>-<line>`` unless a record
    has an ``id``. A malformed record (or a later one repeating an id) is left out with the reason.

    :param path: a DB-Bench JSONL file
    :param strict: raise on the first record that cannot be read instead of leaving it out
    :raises TaskFileError: for a file that cannot be read as JSONL, an empty file, or (``strict``) a bad record
    """
    path = Path(path)
    records: list[DBRecord] = []
    left_out: list[LeftOutRecord] = []
    seen: dict[str, int] = {}
    for line, rec in read_jsonl(path):
        try:
            record = parse_record(rec, path=path, line=line, record_id=f"{path.stem}-{line}")
            if record.record_id in seen:
                raise TaskFileError(path, f"duplicate record id (also on line {seen[record.record_id]})", line=line,
                                    task_id=record.record_id, field="id")
        except TaskFileError as exc:
            if strict:
                raise
            left_out.append(LeftOutRecord(str(path), line, str(rec.get("id", f"{path.stem}-{line}")),
                                          _reason(exc)))
            continue
        seen[record.record_id] = line
        records.append(record)
    if not records and not left_out:
        raise TaskFileError(path, "no records")
    return RecordSet(tuple(records), tuple(left_out))


@dataclass(frozen=True)
class DBTaskPayload:
    """What the checker and grader of a task need: its record and whether drafts are SQL or answer lists."""

    record: DBRecord
    mode: str
