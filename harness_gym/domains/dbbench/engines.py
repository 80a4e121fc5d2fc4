"""SQL engines for DB-Bench: SQLite made MySQL-like (default) and a real MySQL / MariaDB server.

Both load a record's table the way AgentBench does (every column ``TEXT``, every value inserted as
``str(value)``) and run one statement at a time. :class:`SQLiteEngine` is in-memory and needs nothing
installed; it parses each statement as MySQL with sqlglot, rewrites what SQLite would answer differently
and generates SQLite SQL:

* identifiers are always quoted, with backticks (table and column names hold spaces, commas, slashes, ...);
* text comparisons are case- and accent-insensitive and ignore trailing spaces (a ``MYSQL_CI`` collation on
  every column, like MariaDB's ``utf8mb4_general_ci``), and ``LIKE`` is too, with ``\\`` as its escape;
* MySQL string escapes (``'It\\'s'``, ``"double-quoted strings"``) are read as MySQL reads them;
* a text value compared with a number is compared as a number (``CAST(col AS REAL)``, which parses the
  leading numeric prefix like MySQL: ``'12 goals'`` is 12, ``'abc'`` is 0), also in ``IN`` and ``BETWEEN``;
* ``/`` is always real division;
* ``SHOW TABLES``, ``SHOW COLUMNS FROM t`` and ``DESCRIBE t`` are answered in MySQL's shape.

:class:`MySQLEngine` (``engine="mysql", dsn="mysql://user:password@host:port/prefix"``) creates one schema
``<prefix>_<hex>`` per session and drops it when the session closes.

Sessions keep the loaded table pristine: callers run each draft inside :meth:`DatabaseSession.scratch`,
which rolls back whatever the statement changed. Statements other than SELECT / INSERT / UPDATE / DELETE /
SHOW / DESCRIBE (DDL, transactions, several statements) are refused before they reach the server, so nothing
can commit implicitly.
"""

from __future__ import annotations

import re
import sqlite3
import time
import unicodedata
import uuid
import weakref
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import unquote, urlparse

import sqlglot
from sqlglot import exp
from sqlglot.dialects.sqlite import SQLite
from sqlglot.errors import ErrorLevel
from sqlglot.tokens import Token, TokenType

_MYSQL = sqlglot.Dialect.get_or_raise("mysql")
READ_KINDS = frozenset({"select", "show", "describe"})
STATEMENT_TIMEOUT_S = 5.0


class SQLError(Exception):
    """A statement failed; the message is what the agent is shown."""


@dataclass(frozen=True)
class TableSpec:
    """A record's table: its name, column names and rows of text values (``None`` for NULL)."""

    name: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str | None, ...], ...]


@dataclass(frozen=True)
class QueryResult:
    """Rows a statement returned (empty for writes)."""

    rows: list[tuple[Any, ...]]
    kind: str


_FIRST_WORD = re.compile(r"^(?:\s|/\*.*?\*/|--[^\n]*\n|#[^\n]*\n|\()*([A-Za-z]+)", re.DOTALL)
_KIND_OF_WORD = {"select": "select", "with": "select", "insert": "insert", "replace": "insert",
                 "update": "update", "delete": "delete", "show": "show", "describe": "describe",
                 "desc": "describe", "explain": "describe"}


def statement_kind(sql: str) -> str:
    """``select``, ``insert``, ``update``, ``delete``, ``show`` or ``describe``.

    :raises SQLError: for an empty statement or any other kind (DDL, transaction control, ...)
    """
    if "\x00" in sql:
        raise SQLError("the statement contains a NUL character")
    match = _FIRST_WORD.match(sql)
    if not match:
        raise SQLError("empty statement")
    word = match.group(1).lower()
    kind = _KIND_OF_WORD.get(word)
    if kind is None:
        raise SQLError(f"statement {word.upper()} is not allowed here; use one SELECT, INSERT, UPDATE, DELETE, "
                       "SHOW or DESCRIBE statement")
    return kind


def _syntax_error(exc: Exception) -> SQLError:
    errors = getattr(exc, "errors", None) or [{}]
    first = errors[0]
    where = f" near {first.get('highlight')!r}" if first.get("highlight") else ""
    return SQLError(f"You have an error in your SQL syntax{where}: {first.get('description', exc)}")


def parse_mysql(sql: str, tokens: list[Token] | None = None) -> exp.Expression:
    """Parse one MySQL statement with sqlglot (from ``tokens`` when the caller has tokenized it already).

    :raises SQLError: on a syntax error or when ``sql`` holds more than one statement
    """
    try:
        if tokens is None:
            tokens = _MYSQL.tokenize(sql)
        trees = [t for t in _MYSQL.parser(error_level=ErrorLevel.RAISE).parse(tokens, sql) if t is not None]
    except sqlglot.errors.SqlglotError as exc:
        raise _syntax_error(exc) from None
    except (RecursionError, ValueError, KeyError, TypeError) as exc:  # the parser's limits on hostile input
        raise SQLError(f"cannot parse the statement: {type(exc).__name__}: {exc}") from None
    if len(trees) != 1:
        raise SQLError(f"expected one statement, got {len(trees)}")
    return trees[0]


class DatabaseSession(ABC):
    """One loaded copy of a record's table on an engine."""

    def __init__(self, table: TableSpec) -> None:
        self.table = table

    @abstractmethod
    def execute(self, sql: str) -> QueryResult:
        """Run one statement. :raises SQLError: when it is refused or fails."""

    @abstractmethod
    def table_rows(self) -> list[tuple[Any, ...]]:
        """The table's current rows, in the record's column order."""

    @abstractmethod
    def _begin(self) -> None: ...

    @abstractmethod
    def _rollback(self) -> None: ...

    @contextmanager
    def scratch(self) -> Iterator[DatabaseSession]:
        """A transaction rolled back on exit: statements run inside it leave the table as it was."""
        self._begin()
        try:
            yield self
        finally:
            self._rollback()

    @abstractmethod
    def close(self) -> None:
        """Drop the database. Idempotent."""


class Engine(ABC):
    """Opens sessions on one SQL backend."""

    name: str = ""

    @abstractmethod
    def open(self, table: TableSpec) -> DatabaseSession:
        """A fresh database holding ``table``."""


# ----- SQLite ---------------------------------------------------------------------------------------------


@lru_cache(maxsize=65536)
def fold_text(text: str) -> str:
    """Case- and accent-insensitive key of a string (what ``utf8mb4_general_ci`` compares)."""
    decomposed = unicodedata.normalize("NFD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)).casefold()


def _mysql_ci(a: str, b: str) -> int:
    ka, kb = fold_text(a.rstrip(" ")), fold_text(b.rstrip(" "))
    return (ka > kb) - (ka < kb)


@lru_cache(maxsize=1024)
def _like_regex(pattern: str, escape: str) -> re.Pattern[str]:
    out, i = [], 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == escape and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        out.append(".*" if ch == "%" else "." if ch == "_" else re.escape(ch))
        i += 1
    return re.compile("".join(out), re.DOTALL)


def _mysql_like(pattern: Any, value: Any, escape: str = "\\") -> int | None:
    if pattern is None or value is None:
        return None
    regex = _like_regex(fold_text(str(pattern)), escape)
    return int(regex.fullmatch(fold_text(str(value))) is not None)


_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.NullSafeEQ)


def _is_number(node: exp.Expression | None) -> bool:
    if isinstance(node, exp.Neg):
        node = node.this
    if isinstance(node, exp.Paren):
        return _is_number(node.this)
    return isinstance(node, exp.Literal) and not node.is_string


def _as_number(node: exp.Expression) -> None:
    if not _is_number(node) and not isinstance(node, exp.Cast):
        node.replace(exp.cast(node.copy(), "REAL"))


def _numeric_comparisons(tree: exp.Expression) -> exp.Expression:
    """Compare text with numbers as numbers, as MySQL does."""
    for node in list(tree.find_all(*_COMPARISONS)):
        if isinstance(node.parent, exp.Update) and node.arg_key == "expressions":
            continue  # SET col = value is an assignment, not a comparison
        left, right = node.left, node.right
        if _is_number(right):
            _as_number(left)
        elif _is_number(left):
            _as_number(right)
    for node in list(tree.find_all(exp.Between)):
        if _is_number(node.args.get("low")) or _is_number(node.args.get("high")):
            _as_number(node.this)
    for node in list(tree.find_all(exp.In)):
        items = node.expressions
        if items and all(_is_number(i) for i in items):
            _as_number(node.this)
    return tree


_RESERVED = frozenset(_MYSQL.generator_class.RESERVED_KEYWORDS) - {
    # reserved by MySQL 8 but not by MariaDB: both servers must accept what the SQLite engine accepts
    "cume_dist", "dense_rank", "empty", "first_value", "grouping", "groups", "json_table", "lag", "last_value",
    "lateral", "lead", "nth_value", "ntile", "of", "percent_rank", "rank", "row_number", "system", "window",
    "cube", "function", "optimizer_costs", "master_bind", "io_after_gtids", "io_before_gtids", "generated",
    "stored", "virtual", "get", "row", "rows"}
_TABLE_POSITION = frozenset({TokenType.FROM, TokenType.JOIN, TokenType.UPDATE, TokenType.INTO})


def _reject_non_mysql(sql: str, tokens: list[Token]) -> None:
    """Refuse what MySQL refuses but SQLite would run: a double-quoted table name, a reserved word as a name.

    :raises SQLError: in MySQL's words
    """
    for prev, tok, nxt in zip([None, *tokens], tokens, [*tokens[1:], None]):
        bad_table = (tok.token_type == TokenType.STRING and prev is not None and prev.token_type in _TABLE_POSITION)
        bad_name = (tok.token_type == TokenType.VAR and tok.text.lower() in _RESERVED
                    and (nxt is None or nxt.token_type != TokenType.L_PAREN))
        if bad_table or bad_name:
            raise SQLError(f"(1064, \"You have an error in your SQL syntax; check the manual that corresponds to "
                           f"your MySQL server version for the right syntax to use near '{sql[tok.start:tok.start + 40]}'\")")


class _SQLiteBacktick(SQLite):
    """SQLite written with backtick-quoted names: an unknown double-quoted name would silently become a
    string literal in SQLite (its "DQS" misfeature), an unknown backticked one is an error, as in MySQL."""

    class Tokenizer(SQLite.Tokenizer):
        IDENTIFIERS = ["`"]


@lru_cache(maxsize=8192)
def mysql_to_sqlite(sql: str) -> str:
    """Translate one MySQL statement to SQLite with MySQL's comparison semantics (see the module doc)."""
    try:
        tokens = _MYSQL.tokenize(sql)
    except sqlglot.errors.SqlglotError as exc:
        raise _syntax_error(exc) from None
    _reject_non_mysql(sql, tokens)
    tree = _numeric_comparisons(parse_mysql(sql, tokens))
    return tree.sql(dialect=_SQLiteBacktick, identify=True, copy=False)


_SHOW_TABLES = re.compile(r"^\s*show\s+(?:full\s+)?tables\b", re.IGNORECASE)
_DESCRIBE = re.compile(r"^\s*(?:describe|desc|explain|show\s+(?:full\s+)?(?:columns|fields)\s+(?:from|in))\s+"
                       r"(`[^`]+`|\"[^\"]+\"|[^\s;]+)\s*;?\s*$", re.IGNORECASE)


def _unquote_identifier(name: str) -> str:
    return name[1:-1] if len(name) > 1 and name[0] == name[-1] and name[0] in "`\"" else name


def _quote_sqlite(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


class SQLiteSession(DatabaseSession):
    """An in-memory SQLite database holding one table, queried in MySQL's dialect."""

    def __init__(self, table: TableSpec) -> None:
        super().__init__(table)
        self._conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        self._conn.create_collation("MYSQL_CI", _mysql_ci)
        self._conn.create_function("like", 2, _mysql_like, deterministic=True)
        self._conn.create_function("like", 3, _mysql_like, deterministic=True)
        self._deadline = 0.0
        self._conn.set_progress_handler(lambda: int(time.monotonic() > self._deadline), 20000)
        cols = ", ".join(f"{_quote_sqlite(c)} TEXT COLLATE MYSQL_CI" for c in table.columns)
        self._deadline = time.monotonic() + 60.0
        try:
            self._conn.execute(f"CREATE TABLE {_quote_sqlite(table.name)} ({cols})")
            marks = ", ".join("?" * len(table.columns))
            self._conn.executemany(f"INSERT INTO {_quote_sqlite(table.name)} VALUES ({marks})", table.rows)
        except sqlite3.Error as exc:
            self._conn.close()
            raise SQLError(f"cannot load table {table.name!r}: {exc}") from None
        self._select_all = f"SELECT {', '.join(map(_quote_sqlite, table.columns))} FROM {_quote_sqlite(table.name)}"

    def execute(self, sql: str) -> QueryResult:
        kind = statement_kind(sql)
        if kind == "show":
            if _SHOW_TABLES.match(sql):
                return QueryResult([(self.table.name,)], kind)
            match = _DESCRIBE.match(sql)
        elif kind == "describe":
            match = _DESCRIBE.match(sql)
        else:
            match = None
        if kind in ("show", "describe"):
            if match is None:
                raise SQLError(f"unsupported {kind.upper()} statement; supported: SHOW TABLES, DESCRIBE t, "
                               "SHOW COLUMNS FROM t")
            name = _unquote_identifier(match.group(1))
            if name.lower() != self.table.name.lower():
                raise SQLError(f"Table '{name}' doesn't exist")
            return QueryResult([(c, "text", "YES", "", None, "") for c in self.table.columns], kind)  # MySQL's shape
        translated = mysql_to_sqlite(sql)
        self._deadline = time.monotonic() + STATEMENT_TIMEOUT_S
        try:
            cursor = self._conn.execute(translated)
            rows = [tuple(r) for r in cursor.fetchall()] if cursor.description else []
        except sqlite3.OperationalError as exc:
            if str(exc) == "interrupted":
                raise SQLError(f"Query execution was interrupted (max_statement_time {STATEMENT_TIMEOUT_S:g}s exceeded)") from None
            raise SQLError(self._mysql_message(str(exc))) from None
        except sqlite3.Error as exc:
            raise SQLError(self._mysql_message(str(exc))) from None
        return QueryResult(rows, kind)

    def _mysql_message(self, message: str) -> str:
        """SQLite's error text in MySQL's words where the two differ in a way an agent would notice."""
        if message.startswith("no such table: "):
            return f"Table '{message[len('no such table: '):]}' doesn't exist"
        if message.startswith("no such column: "):
            return f"Unknown column '{message[len('no such column: '):]}' in 'field list'"
        return message

    def table_rows(self) -> list[tuple[Any, ...]]:
        return [tuple(r) for r in self._conn.execute(self._select_all).fetchall()]

    def _begin(self) -> None:
        self._conn.execute("BEGIN")

    def _rollback(self) -> None:
        if self._conn.in_transaction:
            self._conn.execute("ROLLBACK")

    def close(self) -> None:
        self._conn.close()


class SQLiteEngine(Engine):
    """In-memory SQLite, one database per session (the default engine)."""

    name = "sqlite"

    def open(self, table: TableSpec) -> SQLiteSession:
        return SQLiteSession(table)


# ----- MySQL / MariaDB --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MySQLDsn:
    """Where the MySQL engine connects: ``mysql://user:password@host:port/prefix``."""

    host: str
    port: int
    user: str
    password: str
    prefix: str

    @classmethod
    def parse(cls, dsn: str) -> MySQLDsn:
        url = urlparse(dsn)
        if url.scheme not in ("mysql", "mariadb") or not url.hostname:
            raise ValueError(f"dsn must look like mysql://user:password@host:port/prefix, got {dsn!r}")
        prefix = url.path.strip("/") or "hgdb"
        if not re.fullmatch(r"[A-Za-z0-9_]{1,40}", prefix):
            raise ValueError(f"dsn schema prefix must be letters, digits or _, got {prefix!r}")
        return cls(url.hostname, url.port or 3306, unquote(url.username or "root"), unquote(url.password or ""), prefix)


def _quote_mysql(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


class MySQLSession(DatabaseSession):
    """A schema of its own on a MySQL / MariaDB server, dropped on :meth:`close`."""

    def __init__(self, table: TableSpec, dsn: MySQLDsn) -> None:
        import pymysql

        super().__init__(table)
        self._errors = pymysql.MySQLError
        self.schema = f"{dsn.prefix}_{uuid.uuid4().hex[:16]}"
        self._conn = pymysql.connect(host=dsn.host, port=dsn.port, user=dsn.user, password=dsn.password,
                                     charset="utf8mb4", autocommit=True, connect_timeout=10,
                                     ssl_disabled=dsn.host in ("127.0.0.1", "localhost", "::1"))
        self._finalizer = weakref.finalize(self, MySQLSession._drop, self._conn, self.schema)
        qtable = _quote_mysql(table.name)
        cols = ", ".join(f"{_quote_mysql(c)} TEXT" for c in table.columns)
        try:
            with self._conn.cursor() as cur:
                cur.execute(f"CREATE DATABASE {_quote_mysql(self.schema)} "
                            "CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci")
                cur.execute(f"USE {_quote_mysql(self.schema)}")
                # Non-strict mode, as the records' answer hashes were made: a text value compared with a
                # number in an UPDATE's WHERE is a warning there, not an error.
                cur.execute(f"SET SESSION max_statement_time = {STATEMENT_TIMEOUT_S:g}, "
                            "SESSION group_concat_max_len = 1024, SESSION sql_mode = 'NO_ENGINE_SUBSTITUTION'")
                cur.execute(f"CREATE TABLE {qtable} ({cols})")
                if table.rows:
                    marks = "(" + ", ".join(["%s"] * len(table.columns)) + ")"
                    cur.execute(f"INSERT INTO {qtable} VALUES " + ", ".join([marks] * len(table.rows)),
                                [v for row in table.rows for v in row])
        except pymysql.MySQLError as exc:
            self.close()
            raise SQLError(f"cannot load table {table.name!r}: {exc}") from None
        self._select_all = f"SELECT {', '.join(map(_quote_mysql, table.columns))} FROM {qtable}"

    def execute(self, sql: str) -> QueryResult:
        kind = statement_kind(sql)
        try:
            with self._conn.cursor() as cur:
                cur.execute(sql)
                rows = [tuple(r) for r in cur.fetchall()] if cur.description else []
        except self._errors as exc:
            raise SQLError(str(exc)) from None
        return QueryResult(rows, kind)

    def table_rows(self) -> list[tuple[Any, ...]]:
        with self._conn.cursor() as cur:
            cur.execute(self._select_all)
            return [tuple(r) for r in cur.fetchall()]

    def _begin(self) -> None:
        self._conn.begin()

    def _rollback(self) -> None:
        self._conn.rollback()

    def close(self) -> None:
        self._finalizer()

    @staticmethod
    def _drop(conn: Any, schema: str) -> None:
        """Drop the session's schema and close its connection (also run when the session is collected)."""
        if conn.open:
            try:
                with conn.cursor() as cur:
                    cur.execute(f"DROP DATABASE IF EXISTS {_quote_mysql(schema)}")
            finally:
                conn.close()


class MySQLEngine(Engine):
    """A MySQL / MariaDB server reached with pymysql; one schema per session.

    :param dsn: ``mysql://user:password@host:port/prefix`` (schemas are named ``<prefix>_<hex>``)
    """

    name = "mysql"

    def __init__(self, dsn: str) -> None:
        self.dsn = MySQLDsn.parse(dsn)

    def open(self, table: TableSpec) -> MySQLSession:
        return MySQLSession(table, self.dsn)


def make_engine(engine: str | Engine = "sqlite", dsn: str | None = None) -> Engine:
    """An engine from its name (``"sqlite"`` or ``"mysql"`` with a ``dsn``) or an instance passed through."""
    if isinstance(engine, Engine):
        return engine
    if engine == "sqlite":
        return SQLiteEngine()
    if engine == "mysql":
        if not dsn:
            raise ValueError("engine='mysql' needs dsn='mysql://user:password@host:port/prefix'")
        return MySQLEngine(dsn)
    raise ValueError(f"unknown engine {engine!r}; expected 'sqlite' or 'mysql'")


def run_statement(session: DatabaseSession, sql: str) -> tuple[QueryResult, list[tuple[Any, ...]]]:
    """Run ``sql`` on a scratch copy of the session's table: its result and the table rows afterwards."""
    with session.scratch():
        result = session.execute(sql)
        return result, session.table_rows()


def rows_changed(before: Sequence[Sequence[Any]], after: Sequence[Sequence[Any]]) -> int:
    """How many rows differ between two versions of a table (inserted + deleted + updated)."""
    old, new = Counter(map(tuple, before)), Counter(map(tuple, after))
    return max(sum((old - new).values()), sum((new - old).values()))
