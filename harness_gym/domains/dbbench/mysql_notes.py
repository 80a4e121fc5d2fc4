"""The DB-Bench RETRIEVE corpus: short notes on the MySQL a DB-Bench task needs, written for this project and
kept in ``sources/mysql_notes.jsonl``.

Each entry is ``(doc_id, title, text)``; :data:`TYPE_DOCS` names the note each question type needs and
:data:`QUOTING_DOC` the note a task needs when its table or column names must be quoted.
"""

from __future__ import annotations

from harness_gym.core.taskfile import read_documents
from harness_gym.domains.source_files import source_path

NOTES_FILE = source_path("dbbench", "mysql_notes.jsonl")
MYSQL_NOTES: tuple[tuple[str, str, str], ...] = tuple((d.doc_id, d.title, d.text) for d in read_documents(NOTES_FILE))
"""The notes of :data:`NOTES_FILE` as ``(doc_id, title, text)``."""

TYPE_DOCS: dict[str, str] = {
    "INSERT": "mysql-insert",
    "UPDATE": "mysql-update",
    "DELETE": "mysql-delete",
    "counting": "mysql-count",
    "aggregation-SUM": "mysql-aggregate",
    "aggregation-AVG": "mysql-aggregate",
    "aggregation-MIN": "mysql-aggregate",
    "aggregation-MAX": "mysql-aggregate",
    "comparison": "mysql-where-compare",
    "ranking": "mysql-order-limit",
    "other": "mysql-select-where",
}
QUOTING_DOC = "mysql-quoting"
