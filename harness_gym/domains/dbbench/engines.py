"""SQL engines for DB-Bench: SQLite made MySQL-like (default) and a real MySQL / MariaDB server.

Both load a record's table the way AgentBench does (every column ``TEXT``, every value inserted as
``str(value)``) and run one statement at a time. :class:`SQLiteEngine` is in-memory and needs nothing
installed; it parses each statement as MySQL with sqlglot, rewrites what SQLite would answer differently
and generates SQLite SQL (:mod:`~harness_gym.domains.dbbench.statements`, once per statement text):

* identifiers are always quoted, with backticks (table and column names hold spaces, commas, slashes, ...);
* text comparisons are case- and accent-insensitive and ignore trailing spaces (a ``MYSQL_CI`` collation on
  every column, like MariaDB's ``utf8mb4_general_ci``), and ``LIKE`` is too, with ``\\`` as its escape;
* MySQL string escapes (``'It\\'s'``, ``"double-quoted strings"``) are read as MySQL reads them;
* a text value compared with a number is compared as a number (``CAST(col AS REAL)``, which parses the
  leading numeric prefix like MySQL: ``'12 goals'`` is 12, ``'abc'`` is 0), also in ``IN`` and ``BETWEEN``;
* ``/`` is always real division;
* ``SHOW TABLES``, ``SHOW COLUMNS FROM t`` and ``DESCRIBE t`` are answered in MySQL's shape.

:class:`MySQLEngine` (``engine="mysql", dsn="mysql://user:password@host:port/prefix"``) creates one schema
``<prefix>_<hex>`` and one account reaching only that schema per session, and drops both when the session
closes (see :class:`MySQLSession`).

Sessions keep the loaded table pristine: callers run each draft inside :meth:`DatabaseSession.scratch`,
which rolls back whatever the statement changed. :func:`statement_kind` classifies each statement from
sqlglot's parse of its whole text; anything but one SELECT / INSERT / UPDATE / DELETE / SHOW / DESCRIBE (DDL,
``SET``, transactions, ``SELECT ... INTO``, several statements) and every MariaDB executable comment
(``/*! ... */``) is refused before it reaches a server, so nothing can commit implicitly or lift a limit.

Limits on both engines: :data:`~harness_gym.domains.dbbench.statements.MAX_STATEMENT_CHARS` (before parsing),
:data:`STATEMENT_TIMEOUT_S`, :data:`MAX_RESULT_ROWS` and :data:`MAX_RESULT_BYTES` per result, counted as rows arrive
(MariaDB's results are read unbuffered; its time limit is also enforced by the server). SQLite runs in the host
process: one deadline covers parsing, execution and fetching; :data:`SQLITE_MAX_VALUE_BYTES`,
:data:`SQLITE_MAX_DB_BYTES`, :data:`SQLITE_HARD_HEAP_BYTES`; LIKE is
:func:`~harness_gym.domains.dbbench.collation.like_match` (interruptible).

What a statement may touch: on SQLite an authorizer (:class:`SQLiteAuthorizer`) lets it read only the task's table,
write it only inside a writable :meth:`DatabaseSession.scratch`, and call only :data:`SQLITE_FUNCTIONS`; no other
table, schema table, virtual table (``json_each``, ``pragma_*``, ``fts3tokenize``) or ``PRAGMA``, ``ATTACH`` and
virtual-table creation. On MariaDB the per-session account holds only SELECT, INSERT, UPDATE and DELETE on its own
schema, and a read-only scratch is a ``READ ONLY`` transaction. A refusal, a bound, a lost connection or a failed
rollback is an :class:`~harness_gym.domains.dbbench.statements.SQLError` (MariaDB then reconnects), never another
exception.
"""

from __future__ import annotations

import re
import sqlite3
import time
import uuid
import weakref
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlparse

from harness_gym.core.lru import ByteLRU
from harness_gym.domains.dbbench.collation import fold_text, like_match, mysql_ci
from harness_gym.domains.dbbench.sql_guard import SQLiteAuthorizer
from harness_gym.domains.dbbench.statements import SQLError, mysql_to_sqlite, statement_kind, tables_and_columns

READ_KINDS = frozenset({"select", "show", "describe"})
STATEMENT_TIMEOUT_S = 5.0
"""Wall-clock limit of one statement on both engines (SQLite: a progress handler and the registered
functions check it; MariaDB: the per-episode account's MAX_STATEMENT_TIME, and the client's read timeout)."""
_INTERRUPTED = f"Query execution was interrupted (max_statement_time {STATEMENT_TIMEOUT_S:g}s exceeded)"
CLIENT_GRACE_S = 5.0
"""The MySQL client's read and write timeouts exceed :data:`STATEMENT_TIMEOUT_S` by this much."""
MAX_RESULT_ROWS = 100_000
"""A statement returning more rows is an error (DB-Bench tables have at most a few thousand rows)."""
SQLITE_MAX_VALUE_BYTES = 1_000_000
"""SQLite's limit on one string or blob (``randomblob(1e9)`` fails) and on a statement's text."""
SQLITE_MAX_DB_BYTES = 64 * 1024 * 1024
"""SQLite's limit on the episode database (``max_page_count``): a statement that grows it further fails."""
SQLITE_HARD_HEAP_BYTES = 256 * 1024 * 1024
"""``PRAGMA hard_heap_limit``, set by every session (it only lowers a limit): a sort or join past it fails instead
of growing the host. Process-wide: it bounds every SQLite use of the process together."""
MAX_RESULT_BYTES = 4 * 1024 * 1024
"""The most bytes a fetched result may hold (text and blob lengths, 8 per number), an error while fetching; the
largest table of the shipped and public DB-Bench records holds under 5 KB."""
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
    def _begin(self, writable: bool) -> None:
        """Start the scratch transaction. :raises SQLError: when it cannot be started"""

    @abstractmethod
    def _rollback(self) -> None:
        """Roll the scratch transaction back. :raises SQLError: when it cannot be (the table is left as it was)"""

    @contextmanager
    def scratch(self, writable: bool = True) -> Iterator[DatabaseSession]:
        """A transaction rolled back on exit: statements run inside it leave the table as it was.

        :param writable: whether statements may write the table (``False``: a write is an :class:`SQLError`)
        :raises SQLError: when the transaction cannot be started or rolled back
        """
        self._begin(writable)
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


class _Interrupted(Exception):
    """Raised inside a registered SQLite function once the statement's deadline has passed."""


_SHOW_TABLES = re.compile(r"^\s*show\s+(?:full\s+)?tables\b", re.IGNORECASE)
_DESCRIBE = re.compile(r"^\s*(?:describe|desc|explain|show\s+(?:full\s+)?(?:columns|fields)\s+(?:from|in))\s+"
                       r"(`[^`]+`|\"[^\"]+\"|[^\s;]+)\s*;?\s*$", re.IGNORECASE)


def _fetch_capped(cursor: Any, deadline: float, chunk_rows: int = 100) -> list[tuple[Any, ...]]:
    """All rows of a cursor, read ``chunk_rows`` at a time; :class:`SQLError` past :data:`MAX_RESULT_ROWS`,
    :data:`MAX_RESULT_BYTES` or ``deadline`` (checked after each chunk)."""
    rows: list[tuple[Any, ...]] = []
    held = 0
    while True:
        chunk = cursor.fetchmany(chunk_rows)
        if not chunk:
            return rows
        for row in map(tuple, chunk):
            rows.append(row)
            for value in row:
                held += len(value) if isinstance(value, (str, bytes)) else 8
        if len(rows) > MAX_RESULT_ROWS:
            raise SQLError(f"the result has more than {MAX_RESULT_ROWS} rows")
        if held > MAX_RESULT_BYTES:
            raise SQLError(f"the result holds more than {MAX_RESULT_BYTES} bytes")
        if time.monotonic() > deadline:
            raise SQLError(_INTERRUPTED)


def _unquote_identifier(name: str) -> str:
    return name[1:-1] if len(name) > 1 and name[0] == name[-1] and name[0] in "`\"" else name


def _quote_sqlite(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _sqlite_connection() -> sqlite3.Connection:
    """A new in-memory SQLite connection with the engine's collation, limits and pragmas."""
    conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    conn.execute(f"PRAGMA hard_heap_limit = {SQLITE_HARD_HEAP_BYTES}")  # only ever lowers it
    conn.create_collation("MYSQL_CI", mysql_ci)
    conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, SQLITE_MAX_VALUE_BYTES)
    conn.setlimit(sqlite3.SQLITE_LIMIT_SQL_LENGTH, SQLITE_MAX_VALUE_BYTES)
    conn.execute("PRAGMA page_size = 4096")
    conn.execute(f"PRAGMA max_page_count = {SQLITE_MAX_DB_BYTES // 4096}")
    conn.execute("PRAGMA temp_store = MEMORY")
    conn.execute("PRAGMA trusted_schema = OFF")
    if hasattr(conn, "setconfig"):  # Python >= 3.12
        conn.setconfig(sqlite3.SQLITE_DBCONFIG_DEFENSIVE, True)
    return conn


@dataclass(frozen=True)
class _PristineTable:
    """A table loaded once into a database of its own that nothing ever writes: sessions copy it."""

    conn: sqlite3.Connection
    select_all: str


PRISTINE_CACHE_BYTES = 128 * 1024 * 1024
"""Bound on the loaded tables kept for copying (their pages plus 64 KiB per database)."""
_pristine_tables: ByteLRU[TableSpec, _PristineTable] = ByteLRU(
    PRISTINE_CACHE_BYTES,
    lambda table, pristine: 65536 + 4096 * pristine.conn.execute("PRAGMA page_count").fetchone()[0])


def _pristine_table(table: TableSpec) -> _PristineTable:
    """The loaded table (kept per table content, a pure function of it).

    :raises SQLError: when the table cannot be created or loaded
    """
    found = _pristine_tables.get(table)
    if found is not None:
        return found
    conn = _sqlite_connection()
    deadline = time.monotonic() + 60.0
    conn.set_progress_handler(lambda: int(time.monotonic() > deadline), 1000)
    cols = ", ".join(f"{_quote_sqlite(c)} TEXT COLLATE MYSQL_CI" for c in table.columns)
    try:
        conn.execute(f"CREATE TABLE {_quote_sqlite(table.name)} ({cols})")
        marks = ", ".join("?" * len(table.columns))
        conn.executemany(f"INSERT INTO {_quote_sqlite(table.name)} VALUES ({marks})", table.rows)
    except sqlite3.Error as exc:
        conn.close()
        raise SQLError(f"cannot load table {table.name!r}: {exc}") from None
    conn.set_progress_handler(None, 0)
    found = _PristineTable(conn, f"SELECT {', '.join(map(_quote_sqlite, table.columns))} FROM "
                                 f"{_quote_sqlite(table.name)}")
    _pristine_tables.put(table, found)
    return found


class SQLiteSession(DatabaseSession):
    """An in-memory SQLite database holding one table, queried in MySQL's dialect: a page-by-page copy (SQLite's
    backup) of the table loaded once per table content, which the session never shares. Statements pass its
    :class:`SQLiteAuthorizer`, installed once the copy is made."""

    def __init__(self, table: TableSpec) -> None:
        super().__init__(table)
        pristine = _pristine_table(table)
        self._conn = _sqlite_connection()
        self._conn.create_function("like", 2, self._like, deterministic=True)
        self._conn.create_function("like", 3, self._like, deterministic=True)
        self._deadline = 0.0
        self._interrupted = False
        self._conn.set_progress_handler(lambda: int(time.monotonic() > self._deadline), 1000)
        try:
            pristine.conn.backup(self._conn)
        except sqlite3.Error as exc:
            self._conn.close()
            raise SQLError(f"cannot load table {table.name!r}: {exc}") from None
        self._deadline = time.monotonic() + 60.0  # what runs outside execute (table_rows) has the load's deadline
        self._select_all = pristine.select_all
        self._authorizer = SQLiteAuthorizer(table.name)
        self._conn.set_authorizer(self._authorizer)

    def execute(self, sql: str) -> QueryResult:
        deadline = time.monotonic() + STATEMENT_TIMEOUT_S  # one deadline: parsing, execution and fetching
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
        if time.monotonic() > deadline:
            raise SQLError(_INTERRUPTED)
        self._deadline, self._interrupted = deadline, False
        self._authorizer.clear()
        try:
            cursor = self._conn.execute(translated)
            rows = _fetch_capped(cursor, deadline) if cursor.description else []
        except sqlite3.Error as exc:
            if self._authorizer.refusal:
                raise SQLError(self._refusal(sql)) from None
            if str(exc) == "interrupted" or self._interrupted:
                raise SQLError(_INTERRUPTED) from None
            if isinstance(exc, sqlite3.DataError) or "too big" in str(exc) or "database or disk is full" in str(exc):
                raise SQLError(f"the statement exceeds the engine's memory bound ({exc})") from None
            raise SQLError(self._mysql_message(str(exc))) from None
        except MemoryError:  # SQLITE_NOMEM: the hard heap limit
            raise SQLError(f"the statement exceeds the engine's heap bound ({SQLITE_HARD_HEAP_BYTES} bytes)") from None
        finally:
            self._deadline = time.monotonic() + 60.0
        return QueryResult(rows, kind)

    def _like(self, pattern: Any, value: Any, escape: str = "\\") -> int | None:
        """MySQL's LIKE (case- and accent-insensitive), interruptible at the statement's deadline."""
        if time.monotonic() > self._deadline:
            self._interrupted = True
            raise _Interrupted()
        if pattern is None or value is None:
            return None
        return int(like_match(fold_text(str(pattern)), fold_text(str(value)), escape))

    def _refusal(self, sql: str) -> str:
        """The authorizer's refusal of ``sql``; a schema-table write names the other table ``sql`` asks for."""
        refusal = self._authorizer.refusal
        if self._authorizer.schema_write:
            others = sorted(tables_and_columns(sql)[0] - {self.table.name.lower(), ""})
            if others:
                return f"Table '{others[0]}' doesn't exist"
        return refusal

    def _mysql_message(self, message: str) -> str:
        """SQLite's error text in MySQL's words where the two differ in a way an agent would notice."""
        if message.startswith("no such table: "):
            return f"Table '{message[len('no such table: '):]}' doesn't exist"
        if message.startswith("no such column: "):
            return f"Unknown column '{message[len('no such column: '):]}' in 'field list'"
        return message

    def table_rows(self) -> list[tuple[Any, ...]]:
        """The table's rows; :class:`SQLError` past :data:`MAX_RESULT_BYTES` (a draft's write can grow it)."""
        return _fetch_capped(self._conn.execute(self._select_all), time.monotonic() + STATEMENT_TIMEOUT_S)

    def _begin(self, writable: bool) -> None:
        self._authorizer.writable = writable
        self._conn.execute("BEGIN")

    def _rollback(self) -> None:
        try:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
        except sqlite3.Error as exc:
            raise SQLError(f"the statement could not be rolled back: {exc}") from None

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
        if not url.username:
            raise ValueError(f"dsn {dsn!r} names no user: give the account scripts/start_mariadb.sh makes "
                             "(mysql://user:password@host:port/prefix); the engine never defaults to root")
        return cls(url.hostname, url.port or 3306, unquote(url.username), unquote(url.password or ""), prefix)


def _quote_mysql(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


class MySQLSession(DatabaseSession):
    """A schema of its own on a MySQL / MariaDB server, reached through an account of its own.

    The DSN's account (the *admin*, made by ``scripts/start_mariadb.sh``) creates the schema, loads the
    table and creates a per-session account granted SELECT, INSERT, UPDATE and DELETE on that schema only,
    with ``MAX_STATEMENT_TIME`` :data:`STATEMENT_TIMEOUT_S`. Statements run through that account, whose
    connection also has client read and write timeouts; results are read unbuffered (``SSCursor``) within the
    SQLite engine's row, byte and time bounds. When the connection can no longer be trusted (a bound hit while rows
    arrive, a statement the server does not answer in time, a lost connection, a failed transaction start or
    rollback) the statement is an :class:`SQLError` and the session reconnects, ending the old connection on the
    server. :meth:`close` drops the schema and the account.
    """

    def __init__(self, table: TableSpec, dsn: MySQLDsn) -> None:
        import pymysql

        super().__init__(table)
        self._pymysql = pymysql
        self._errors = pymysql.MySQLError
        self._dsn = dsn
        token = uuid.uuid4().hex[:16]
        self.schema = f"{dsn.prefix}_{token}"
        self.account = f"{dsn.prefix}_u{token}"
        self._password = uuid.uuid4().hex
        self._admin = self._connect(dsn.user, dsn.password, None)
        self._conn: Any = None
        self._finalizer = weakref.finalize(self, MySQLSession._drop, self._admin, [None], self.schema, self.account)
        qtable = _quote_mysql(table.name)
        cols = ", ".join(f"{_quote_mysql(c)} TEXT" for c in table.columns)
        qschema = _quote_mysql(self.schema)
        try:
            with self._admin.cursor() as cur:
                cur.execute(f"CREATE DATABASE {qschema} CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci")
                cur.execute(f"CREATE TABLE {qschema}.{qtable} ({cols})")
                if table.rows:
                    marks = "(" + ", ".join(["%s"] * len(table.columns)) + ")"
                    cur.execute(f"INSERT INTO {qschema}.{qtable} VALUES " + ", ".join([marks] * len(table.rows)),
                                [v for row in table.rows for v in row])
                cur.execute(f"CREATE USER '{self.account}'@'%' IDENTIFIED BY '{self._password}' WITH "
                            f"MAX_STATEMENT_TIME {STATEMENT_TIMEOUT_S:g} MAX_USER_CONNECTIONS 2")
                # In GRANT a database name is a pattern: escape its "_" so that it names this schema only.
                pattern = _quote_mysql(self.schema.replace("_", "\\_"))
                cur.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON {pattern}.* TO '{self.account}'@'%'")
            self._reconnect()
        except (pymysql.MySQLError, SQLError) as exc:
            self.close()
            raise SQLError(f"cannot load table {table.name!r}: {exc}") from None
        self._select_all = f"SELECT {', '.join(map(_quote_mysql, table.columns))} FROM {qtable}"

    def _connect(self, user: str, password: str, database: str | None) -> Any:
        dsn = self._dsn
        return self._pymysql.connect(host=dsn.host, port=dsn.port, user=user, password=password, database=database,
                                     charset="utf8mb4", autocommit=True, connect_timeout=10,
                                     read_timeout=STATEMENT_TIMEOUT_S + CLIENT_GRACE_S,
                                     write_timeout=STATEMENT_TIMEOUT_S + CLIENT_GRACE_S,
                                     ssl_disabled=dsn.host in ("127.0.0.1", "localhost", "::1"))

    def _reconnect(self) -> None:
        """(Re)open the session's own connection; the old one, if any, is ended on the server (from the new one:
        an account may end its own connections) and closed without reading what it still has to send.

        :raises SQLError: when no connection can be opened
        """
        old, self._conn = self._conn, None
        try:
            conn = self._connect(self.account, self._password, self.schema)
        except self._errors as exc:
            if old is not None and old.open:
                old.close()
            raise SQLError(f"cannot reconnect to the database: {exc}") from None
        if old is not None:
            try:
                with conn.cursor() as cur:
                    cur.execute(f"KILL CONNECTION {int(old.thread_id())}")
            except self._errors:
                pass  # it ended already
            if old.open:
                old.close()  # sends COM_QUIT only: an unread unbuffered result is not drained
        self._conn = conn
        self._finalizer.detach()
        self._finalizer = weakref.finalize(self, MySQLSession._drop, self._admin, [self._conn], self.schema,
                                           self.account)
        try:
            with conn.cursor() as cur:
                # Non-strict mode, as the records' answer hashes were made: a text value compared with a
                # number in an UPDATE's WHERE is a warning there, not an error.
                cur.execute("SET SESSION group_concat_max_len = 1024, SESSION sql_mode = 'NO_ENGINE_SUBSTITUTION', "
                            f"SESSION sql_select_limit = {MAX_RESULT_ROWS + 1}")
        except self._errors as exc:
            raise SQLError(f"cannot set up the database connection: {exc}") from None

    def _failed(self, message: str) -> SQLError:
        """The error of a statement whose connection can no longer be trusted, after reconnecting."""
        try:
            self._reconnect()
        except SQLError as exc:
            return SQLError(f"{message}; {exc}")
        return SQLError(f"{message} (the session reconnected)")

    def _rows(self, sql: str) -> list[tuple[Any, ...]]:
        """Run ``sql`` and read its rows unbuffered, within :data:`MAX_RESULT_ROWS`, :data:`MAX_RESULT_BYTES` and
        :data:`STATEMENT_TIMEOUT_S`. An error the server reports for the statement leaves the connection as it
        was; any failure while rows arrive (a bound, a lost connection, the host's memory) abandons the rest of
        the result and reconnects.

        :raises SQLError: for each of these
        """
        deadline = time.monotonic() + STATEMENT_TIMEOUT_S
        if self._conn is None:
            self._reconnect()
        cur = self._conn.cursor(self._pymysql.cursors.SSCursor)
        try:
            cur.execute(sql)
        except self._pymysql.err.OperationalError as exc:
            if exc.args and exc.args[0] in (2013, 2006):  # lost connection: the client's timeout
                raise self._failed(f"Query execution was interrupted (the server did not answer within "
                                   f"{STATEMENT_TIMEOUT_S + CLIENT_GRACE_S:g} s)") from None
            raise self._server_error(exc) from None
        except self._errors as exc:
            raise self._server_error(exc) from None
        except MemoryError:
            raise self._failed("the statement's reply exceeds the host's memory") from None
        try:
            # one row at a time: a row can be as large as the server's max_allowed_packet
            rows = _fetch_capped(cur, deadline, chunk_rows=1) if cur.description else []
        except SQLError as exc:
            raise self._abandon(cur, str(exc)) from None
        except self._errors as exc:
            raise self._abandon(cur, str(exc)) from None
        except MemoryError:
            raise self._abandon(cur, f"the result exceeds the host's memory (more than {MAX_RESULT_BYTES} bytes "
                                     "are refused)") from None
        cur.close()  # every row was read: nothing is left to drain
        return rows

    def _abandon(self, cur: Any, message: str) -> SQLError:
        """Leave the rest of an unbuffered result unread and reconnect (:meth:`_failed`). pymysql drains an unread
        result when its cursor is closed or collected; marking it finished keeps the rest from ever being read."""
        result = cur._result
        if result is not None:
            result.unbuffered_active = False
        cur._result = None
        return self._failed(message)

    def _server_error(self, exc: Exception) -> SQLError:
        """A statement's error: the server's own (codes below 2000) keeps the connection, a client one replaces it."""
        code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else 0
        return SQLError(str(exc)) if 0 < code < 2000 else self._failed(str(exc))

    def execute(self, sql: str) -> QueryResult:
        kind = statement_kind(sql)
        return QueryResult(self._rows(sql), kind)

    def table_rows(self) -> list[tuple[Any, ...]]:
        """The table's rows; :class:`SQLError` past the result bounds (a draft's write can grow it)."""
        return self._rows(self._select_all)

    def _begin(self, writable: bool) -> None:
        if self._conn is None:
            self._reconnect()
        try:
            with self._conn.cursor() as cur:
                cur.execute("START TRANSACTION" if writable else "START TRANSACTION READ ONLY")
        except (self._errors, MemoryError) as exc:
            raise self._failed(f"cannot start the statement's transaction: {exc}") from None

    def _rollback(self) -> None:
        if self._conn is None:
            return  # the connection was replaced: the server rolled back what the old one had not committed
        try:
            self._conn.rollback()
        except (self._errors, MemoryError) as exc:
            raise self._failed(f"cannot roll the statement back: {exc}") from None

    def close(self) -> None:
        self._finalizer()

    @staticmethod
    def _drop(admin: Any, conns: list[Any], schema: str, account: str) -> None:
        """Drop the session's schema and account and close its connections (also run at garbage collection)."""
        for conn in conns:
            if conn is not None and conn.open:
                conn.close()
        if admin.open:
            try:
                with admin.cursor() as cur:
                    cur.execute(f"DROP USER IF EXISTS '{account}'@'%'")
                    cur.execute(f"DROP DATABASE IF EXISTS {_quote_mysql(schema)}")
            finally:
                admin.close()


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
