"""What worker SQL may touch on the SQLite engine: the authorizer every session installs and the functions it
allows (:class:`~harness_gym.domains.dbbench.engines.SQLiteSession`)."""

from __future__ import annotations

import sqlite3

SQLITE_FUNCTIONS: frozenset[str] = frozenset({
    # scalar
    "abs", "char", "coalesce", "hex", "ifnull", "iif", "instr", "length", "like", "lower", "ltrim", "max", "min",
    "nullif", "quote", "random", "replace", "round", "rtrim", "sign", "soundex", "substr", "substring", "trim",
    "upper",
    # date and time
    "date", "datetime", "julianday", "strftime", "time", "unixepoch",
    # math
    "acos", "asin", "atan", "atan2", "ceil", "ceiling", "cos", "degrees", "exp", "floor", "ln", "log", "log10",
    "log2", "mod", "pi", "pow", "power", "radians", "sin", "sqrt", "tan", "trunc",
    # aggregate
    "avg", "count", "group_concat", "sum", "total",
    # window
    "row_number", "rank", "dense_rank", "percent_rank", "cume_dist", "ntile", "lag", "lead", "first_value",
    "last_value", "nth_value",
})  # fmt: skip
"""The functions worker SQL may call on the SQLite engine: SQLite's built-in value functions that MySQL also has
(under the name sqlglot writes for SQLite: ``IF`` is ``iif``, ``RAND`` is ``random``, ...). Every other function is
refused as MySQL refuses an unknown one: the engine's introspection (``sqlite_version``, ``sqlite_compileoption_*``,
``changes``), ``load_extension``, ``fts3_tokenizer`` and the full-text and R-tree functions, the JSON functions,
``zeroblob`` / ``randomblob`` / ``printf``, and the planner hints."""


class SQLiteAuthorizer:
    """SQLite's authorizer callback for one session (``Connection.set_authorizer``), consulted when a statement
    is prepared: the task's table may be read (in ``main``), and written only while :attr:`writable`; a function
    must be one of :data:`SQLITE_FUNCTIONS`; ``SELECT`` and the engine's own ``BEGIN`` / ``ROLLBACK`` pass.
    Everything else is denied: any other table (the schema table, eponymous virtual tables such as ``json_each``,
    ``pragma_*`` and ``fts3tokenize``), ``PRAGMA``, ``ATTACH`` / ``DETACH``, virtual-table creation, DDL. The first
    denial of a statement is kept in :attr:`refusal` in MySQL's words; :attr:`schema_write` says it was the
    schema-table write that SQLite checks first when a statement connects an eponymous virtual table (the session
    then names the table the statement asked for).

    The engine's own pragmas are set before the authorizer is installed. ``SQLITE_DBCONFIG_DEFENSIVE`` is turned
    on where Python offers ``Connection.setconfig`` (3.12 and later); on older Pythons this authorizer is what
    keeps worker SQL away from the schema, pragmas and virtual tables that the defensive flag guards.

    :param table: the task's table name
    """

    _PASS = frozenset({sqlite3.SQLITE_SELECT, sqlite3.SQLITE_TRANSACTION, sqlite3.SQLITE_RECURSIVE})
    _WRITES = frozenset({sqlite3.SQLITE_INSERT, sqlite3.SQLITE_UPDATE, sqlite3.SQLITE_DELETE})
    _SCHEMA_TABLES = frozenset({"sqlite_master", "sqlite_schema", "sqlite_temp_master", "sqlite_temp_schema"})

    def __init__(self, table: str) -> None:
        self.table = table.lower()
        self.writable = True
        """Whether the task's table may be written (a read-only scratch sets it to ``False``)."""
        self.refusal = ""
        """Why the last statement was denied ("" when it was not); :meth:`clear` empties it before each statement."""
        self.schema_write = False
        """Whether :attr:`refusal` is a write to SQLite's schema table."""

    def clear(self) -> None:
        """Forget the last statement's refusal."""
        self.refusal, self.schema_write = "", False

    def __call__(self, action: int, arg1: str | None, arg2: str | None, db: str | None, trigger: str | None) -> int:
        if action in self._PASS:
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_FUNCTION:
            if arg2 is not None and arg2.lower() in SQLITE_FUNCTIONS:
                return sqlite3.SQLITE_OK
            return self._deny(f"FUNCTION {arg2} does not exist")
        if action == sqlite3.SQLITE_READ or action in self._WRITES:
            if arg1 is None or arg1.lower() != self.table or db not in (None, "main"):
                return self._deny(f"Table '{arg1}' doesn't exist",
                                  schema_write=action in self._WRITES and str(arg1).lower() in self._SCHEMA_TABLES)
            if action == sqlite3.SQLITE_READ or self.writable:
                return sqlite3.SQLITE_OK
            return self._deny(f"a write to '{arg1}' is not allowed here (read-only)")
        return self._deny(f"this statement is not allowed here (SQLite authorizer action {action})")

    def _deny(self, why: str, schema_write: bool = False) -> int:
        if not self.refusal:
            self.refusal, self.schema_write = why, schema_write
        return sqlite3.SQLITE_DENY
