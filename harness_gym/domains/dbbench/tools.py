"""The DB-Bench domain's tool: ``execute_sql`` runs a read-only query on the episode's database."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager

from harness_gym.core.types import ToolResult
from harness_gym.domains.dbbench.engines import READ_KINDS, DatabaseSession, SQLError, statement_kind
from harness_gym.domains.dbbench.grader import format_result
from harness_gym.domains.tool_table import ToolTable, object_schema

TOOLS = ToolTable()
"""The DB-Bench tool; it takes the episode's database scope first."""


@TOOLS.tool("Run one read-only MySQL query (SELECT, SHOW TABLES, DESCRIBE) on the task's database and return its "
            "rows as a Python list of tuples (cut at 800 characters).",
            object_schema({"sql": {"type": "string", "minLength": 1}}), bills={"db_query": 1})
def execute_sql(session_scope: Callable[[], AbstractContextManager[DatabaseSession]], sql: str) -> ToolResult:
    """Run a read-only query and answer as upstream does (the rows' repr, cut at 800 characters).

    Stands for one statement on the task's live database (a serverless SQL database: ``db_query``); a statement
    refused before it is sent (not one read-only statement, or unparseable) costs nothing.

    :param session_scope: gives the episode's database (a context manager)
    :param sql: the query
    """
    try:
        kind = statement_kind(sql)
    except SQLError as exc:
        return ToolResult(ok=False, output="", error=str(exc), billed={})
    if kind not in READ_KINDS:
        return ToolResult(ok=False, output="", error=f"execute_sql runs read-only queries; a {kind.upper()} "
                          "belongs in the draft, which CHECK dry-runs and SUBMIT grades", billed={})
    try:
        with session_scope() as session, session.scratch(writable=False):
            result = session.execute(sql)  # a read: the table afterwards is the table before, not read again
    except SQLError as exc:
        return ToolResult(ok=False, output="", error=str(exc), ran_code=True)
    return ToolResult(ok=True, output=format_result(result.rows), ran_code=True)
