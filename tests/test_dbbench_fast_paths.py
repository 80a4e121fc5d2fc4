"""DB-Bench's fast paths against the definitions they replace: one parse per statement text (kind, names and
SQLite translation from one analysis) against a fresh parse per question, on every shipped statement and on
hostile texts; each episode's database, a copy of the table loaded once, against the table loaded anew, and
never reached by another episode's writes; the table hash and the collation against their per-value forms."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest

from harness_gym.domains.dbbench import statements
from harness_gym.domains.dbbench.collation import fold_text, mysql_ci
from harness_gym.domains.dbbench.domain import load_dbbench_domain
from harness_gym.domains.dbbench.engines import (
    SQLITE_HARD_HEAP_BYTES,
    SQLITE_MAX_DB_BYTES,
    SQLITE_MAX_VALUE_BYTES,
    SQLError,
    SQLiteSession,
    TableSpec,
    run_statement,
)
from harness_gym.domains.dbbench.grader import _sql_text, table_hash
from harness_gym.domains.dbbench.statements import (
    MAX_STATEMENT_CHARS,
    mysql_to_sqlite,
    parse_mysql,
    statement_kind,
    tables_and_columns,
)

HOSTILE = (
    "", "   ", ";", "SELECT 1\x00", "/*! DROP TABLE t */ SELECT 1", "/*M!100000 SELECT 1 */", "SELECT * FROM \"t\"",
    "SELECT rank FROM t", "SELECT 1; SELECT 2", "SELECT a INTO @x FROM t", "DROP TABLE t", "SET @a = 1",
    "REPLACE INTO t VALUES (1)", "SHOW TABLES", "DESCRIBE `t`", "SELECT (", "SELECT 'unterminated", "x" * 5000,
    "SELECT " + "(" * 400 + "1" + ")" * 400, "SELECT " + "+".join(["1"] * 1500), "UPDATE t SET a = 1 WHERE b = 2",
    "INSERT INTO t (a, b) VALUES ('1', '2')", "SELECT a AS x FROM t WHERE x > 3 ORDER BY x",
    "SELECT `weird name` FROM `my table` WHERE c BETWEEN 1 AND 2 AND d IN (1, 2) AND e <> -3",
    "SELECT * FROM t WHERE a LIKE '%x\\_%'", "SELECT COUNT(*) FROM t WHERE name = 'Zürich '", "BEGIN", "COMMIT",
    "DELETE FROM t WHERE a = (SELECT MAX(a) FROM t)", "SELECT a FROM t UNION SELECT b FROM u", "WITH c AS (SELECT 1) "
    "SELECT * FROM c", "SELECT * FROM t WHERE a = 'It\\'s'", "SELECT \"double\" FROM t", "select\n*\nfrom\tt",
)


def _outcome(fn: Callable[[str], Any], sql: str) -> tuple[str, Any]:
    try:
        return "ok", fn(sql)
    except SQLError as exc:
        return "error", str(exc)


def _kind_by_definition(sql: str) -> str:
    """statement_kind as it was defined: the refusals, then a fresh parse of the whole text."""
    if len(sql) > MAX_STATEMENT_CHARS:
        statements._check_length(sql)
    refusal = statements._refusal(sql)
    if refusal:
        raise SQLError(refusal)
    return statements._kind_of_tree(parse_mysql(sql))


def _names_by_definition(sql: str) -> tuple[set[str], set[str]]:
    tables, columns = statements._names_of_tree(parse_mysql(sql))
    return set(tables), set(columns)


def _sqlite_by_definition(sql: str) -> str:
    """mysql_to_sqlite as it was defined: tokens, MySQL's refusals, a fresh parse, then the rewrite."""
    statements._check_length(sql)
    try:
        tokens = statements._MYSQL.tokenize(sql)
    except statements.sqlglot.errors.SqlglotError as exc:
        raise statements._syntax_error(exc) from None
    statements._reject_non_mysql(sql, tokens)
    tree = statements._numeric_comparisons(parse_mysql(sql, tokens))
    return tree.sql(dialect=statements._SQLiteBacktick, identify=True, copy=False)


def _shipped_statements() -> list[str]:
    domain = load_dbbench_domain()
    texts = {c.content for t in domain.all_tasks() for c in t.candidates if t.payload.mode == "sql"}
    texts |= {call.args["sql"] for t in domain.all_tasks() for call in t.tool_calls}
    texts |= {call.args["sql"] for t in domain.all_tasks() for call in domain.wrong_tool_calls(t)}
    return sorted(texts)


@pytest.mark.parametrize("fast, definition", [(statement_kind, _kind_by_definition),
                                              (tables_and_columns, _names_by_definition),
                                              (mysql_to_sqlite, _sqlite_by_definition)],
                         ids=["statement_kind", "tables_and_columns", "mysql_to_sqlite"])
def test_one_analysis_per_text_answers_as_a_fresh_parse_does(fast, definition):
    texts = [*_shipped_statements(), *HOSTILE]
    assert len(texts) > 1000
    for _ in range(2):  # the first call analyses the text (or finds the load's analysis), the second reuses it
        for sql in texts:
            if "(" * 400 in sql:  # the parser's recursion limit: both refuse it, the messages name the frame
                assert _outcome(fast, sql)[0] == _outcome(definition, sql)[0] == "error"
                continue
            assert _outcome(fast, sql) == _outcome(definition, sql), sql[:200]


def test_errors_are_kept_and_long_texts_are_refused_before_any_parse():
    bad = "SELECT FROM WHERE ((("
    first, again = _outcome(statement_kind, bad), _outcome(statement_kind, bad)
    assert first == again and first[0] == "error"
    statements._ANALYSES.clear()
    with pytest.raises(SQLError, match="characters"):
        tables_and_columns("SELECT 1 " + " " * MAX_STATEMENT_CHARS)
    assert len(statements._ANALYSES) == 0
    with pytest.raises(SQLError, match="must be text"):
        statement_kind(b"SELECT 1")  # type: ignore[arg-type]


def _loaded_anew(table: TableSpec) -> sqlite3.Connection:
    """The episode database as it was made before the copy: a new connection, then CREATE TABLE and INSERT."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute(f"PRAGMA hard_heap_limit = {SQLITE_HARD_HEAP_BYTES}")
    conn.create_collation("MYSQL_CI", mysql_ci)
    conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, SQLITE_MAX_VALUE_BYTES)
    conn.execute("PRAGMA page_size = 4096")
    conn.execute(f"PRAGMA max_page_count = {SQLITE_MAX_DB_BYTES // 4096}")
    conn.execute("PRAGMA temp_store = MEMORY")
    quoted = '"' + table.name.replace('"', '""') + '"'
    cols = ", ".join('"' + c.replace('"', '""') + '" TEXT COLLATE MYSQL_CI' for c in table.columns)
    conn.execute(f"CREATE TABLE {quoted} ({cols})")
    conn.executemany(f"INSERT INTO {quoted} VALUES ({', '.join('?' * len(table.columns))})", table.rows)
    return conn


_SETTINGS = ("page_size", "max_page_count", "temp_store", "journal_mode", "page_count", "encoding")


def test_each_episode_database_is_the_table_loaded_anew():
    domain = load_dbbench_domain()
    for task in domain.all_tasks():
        table = task.payload.record.table
        session, anew = SQLiteSession(table), _loaded_anew(table)
        try:
            conn = session._conn
            conn.set_authorizer(None)  # inspected as the engine, not as worker SQL (which may not read pragmas)
            for setting in _SETTINGS:
                assert conn.execute(f"PRAGMA {setting}").fetchall() == anew.execute(f"PRAGMA {setting}").fetchall()
            assert conn.execute("SELECT type, name, sql FROM sqlite_master").fetchall() == \
                anew.execute("SELECT type, name, sql FROM sqlite_master").fetchall()
            select_all = session._select_all.replace("`", '"')
            assert session.table_rows() == anew.execute(select_all).fetchall() == [tuple(r) for r in table.rows]
        finally:
            session.close()
            anew.close()


def test_one_episode_writes_never_reach_another():
    table = TableSpec("t", ("a", "b"), (("1", "x"), ("2", None)))
    first = SQLiteSession(table)
    result, after = run_statement(first, "DELETE FROM t WHERE a = '1'")
    assert after == [("2", None)] and first.table_rows() == [("1", "x"), ("2", None)]  # rolled back
    first._conn.execute("DELETE FROM t")  # even a committed write (no scratch) stays in this database
    first._conn.execute("INSERT INTO t VALUES ('9', '9')")
    assert first.table_rows() == [("9", "9")]
    second = SQLiteSession(table)
    assert second.table_rows() == [("1", "x"), ("2", None)]
    first.close()
    third = SQLiteSession(TableSpec("t", ("a", "b"), (("1", "x"), ("2", None))))  # an equal table, another object
    assert third.table_rows() == [("1", "x"), ("2", None)]


def test_a_large_table_reads_back_right_after_the_copy():
    rows = tuple((str(i), f"name {i}") for i in range(5000))
    session = SQLiteSession(TableSpec("big", ("id", "name"), rows))
    try:
        assert session.table_rows() == list(rows)  # outside execute: under the deadline the copy set
    finally:
        session.close()


def test_a_table_that_cannot_load_fails_every_time():
    table = TableSpec("t", ("a", "a"), (("1", "2"),))  # two columns of one name
    for _ in range(2):
        with pytest.raises(SQLError, match="cannot load table"):
            SQLiteSession(table)


def test_table_hash_and_collation_equal_their_definitions():
    rows = [("a", None, "Zürich"), (b"\xc3\xa9", Decimal("2.50"), 3, 1.5), (None, None), ("x" * 300,), ()]
    row_hashes = sorted(hashlib.md5(",".join(_sql_text(v) for v in row if v is not None).encode()).hexdigest()[:5]
                        for row in rows)
    assert table_hash(rows) == hashlib.md5(",".join(row_hashes).encode()[:1024]).hexdigest()
    texts = ["a", "A ", "é", "E", "zürich", "Zurich  ", "b" * 300 + " ", "B" * 300, "", " "]
    for a in texts:
        for b in texts:
            ka, kb = fold_text(a.rstrip(" ")), fold_text(b.rstrip(" "))
            assert mysql_ci(a, b) == (ka > kb) - (ka < kb), (a, b)


def test_the_analysis_cache_is_bounded_by_what_the_analyses_hold(monkeypatch):
    from harness_gym.core.lru import ByteLRU

    small = ByteLRU(100_000, statements._analysis_bytes, max_entries=statements.ANALYSIS_CACHE_ENTRIES)
    monkeypatch.setattr(statements, "_ANALYSES", small)
    wide = ["SELECT " + ", ".join(f"c{t}_{i}" for i in range(300)) + f" FROM t{t}" for t in range(10)]
    first = [tables_and_columns(sql) for sql in wide]
    assert all(len(columns) == 300 for _, columns in first)
    assert statements._analysis_bytes(wide[0], statements.analyse_statement(wide[0])) > 300 * statements._NAME_OVERHEAD
    assert small.bytes <= 100_000 and len(small) <= 100_000 // (300 * statements._NAME_OVERHEAD)
    assert [tables_and_columns(sql) for sql in wide] == first  # evicted ones are analysed again, alike
