"""A replay cache or recording is a file a user is handed (issue 41, part B): it is opened read-only, its
``calls`` and ``meta`` must be real tables with this version's columns, every row it answers with is checked
field by field, and no query of it runs past :data:`~harness_gym.workers.llm_cache.QUERY_LIMIT_S`. Each failure
is a :class:`~harness_gym.workers.llm_cache.CacheFileError` naming the file, the table and the row."""

from __future__ import annotations

import hashlib
import sqlite3
import time
from pathlib import Path

import pytest

from harness_gym.workers import llm_cache
from harness_gym.workers.llm_cache import CacheFileError, CallOutcome, LLMCache, request_key

REQUEST = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "params": {"temperature": 0.0},
           "sample": 0}
CALLS = "CREATE TABLE calls (key TEXT PRIMARY KEY, model TEXT NOT NULL, request TEXT NOT NULL, outcome TEXT NOT NULL, " \
        "created REAL NOT NULL)"


def _file(path: Path, *statements: str, rows: list[tuple] = ()) -> Path:
    conn = sqlite3.connect(path)
    for sql in statements:
        conn.execute(sql)
    if rows:
        conn.executemany("INSERT INTO calls VALUES (?, ?, ?, ?, ?)", rows)
    conn.commit()
    conn.close()
    return path


def test_a_recorded_file_replays_and_stays_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "rec.sqlite"
    writer = LLMCache(path, "record")
    key = request_key(REQUEST)
    writer.put(key, REQUEST, CallOutcome(text="hello", ok=True, prompt_tokens=3), replace=True)
    writer.close()
    sqlite3.connect(path).execute("PRAGMA wal_checkpoint(TRUNCATE)").close()
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    reader = LLMCache(path, "replay")
    assert reader.lookup(REQUEST)[1] == CallOutcome(text="hello", ok=True, prompt_tokens=3)
    with pytest.raises(sqlite3.OperationalError, match="readonly|query_only"):
        reader._connect().execute("DELETE FROM calls")
    reader.close()
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before


@pytest.mark.parametrize("mode", ["replay", "auto"])
def test_calls_as_a_view_over_an_endless_recursive_query_is_refused_at_once(tmp_path: Path, mode: str) -> None:
    path = _file(tmp_path / "endless.sqlite",
                 "CREATE VIEW calls AS WITH RECURSIVE r(key, model, request, outcome, created) AS "
                 "(SELECT 'k', 'm', '{}', '{}', 0 UNION ALL SELECT key || 'x', model, request, outcome, created FROM r) "
                 "SELECT * FROM r")
    start = time.monotonic()
    with pytest.raises(CacheFileError, match=rf"{path.name}: 'calls' is a view, not a table"):
        LLMCache(path, mode)
    assert time.monotonic() - start < 5.0


def test_wrong_schema_is_refused_naming_the_table(tmp_path: Path) -> None:
    path = _file(tmp_path / "old.sqlite", "CREATE TABLE calls (key TEXT, reply TEXT)")
    with pytest.raises(CacheFileError, match=r"table 'calls' has columns \['key', 'reply'\]"):
        LLMCache(path, "replay")
    empty = _file(tmp_path / "none.sqlite", "CREATE TABLE other (x)")
    with pytest.raises(CacheFileError, match="has no table 'calls'"):
        LLMCache(empty, "replay")
    not_db = tmp_path / "text.sqlite"
    not_db.write_text("not a database " * 100)
    with pytest.raises(CacheFileError, match="not a harness_gym LLM cache"):
        LLMCache(not_db, "replay")


@pytest.mark.parametrize("outcome, expected", [
    ('{"text": 1}', "outcome holds"),
    ("[]", "outcome holds list"),
    (42, "outcome holds int"),  # the column's text affinity stores '42'
    (b"\x00\x01", "outcome is bytes, not JSON text"),
    ("{not json", "outcome is not JSON"),
    ('{"text": "a", "ok": true, "error": "", "requests": -1, "errors": 0, "prompt_tokens": 0, '
     '"completion_tokens": 0, "latency_s": 0.0}', "field 'requests' is -1"),
    ('{"text": "a", "ok": 1, "error": "", "requests": 1, "errors": 0, "prompt_tokens": 0, '
     '"completion_tokens": 0, "latency_s": 0.0}', "field 'ok' is 1"),
])
def test_poisoned_row_names_file_table_and_row(tmp_path: Path, outcome: object, expected: str) -> None:
    key = request_key(REQUEST)
    path = _file(tmp_path / "poisoned.sqlite", CALLS, rows=[(key, "m", '{"params": {}}', outcome, 0.0)])
    cache = LLMCache(path, "replay")
    with pytest.raises(CacheFileError) as caught:
        cache.lookup(REQUEST)
    message = str(caught.value)
    assert f"cache {path}, table 'calls', row key '{key}'" in message and expected in message, message
    with pytest.raises(CacheFileError, match=expected):
        cache.entries()


def test_poisoned_request_column_is_named(tmp_path: Path) -> None:
    path = _file(tmp_path / "req.sqlite", CALLS, rows=[("k1", "m", "[1, 2]", CallOutcome("x", True).to_json(), 0.0)])
    with pytest.raises(CacheFileError, match=r"row key 'k1': request is not the JSON object of a request"):
        LLMCache(path, "replay").settings_hint(REQUEST)


def test_a_query_past_the_time_limit_is_interrupted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rows = [(f"k{i}", "m", "{}", CallOutcome("x", True).to_json(), float(-i)) for i in range(200_000)]
    path = _file(tmp_path / "big.sqlite", CALLS, rows=rows)
    cache = LLMCache(path, "replay")
    assert len(cache) == 200_000
    monkeypatch.setattr(llm_cache, "QUERY_LIMIT_S", 0.001)
    start = time.monotonic()
    with pytest.raises(CacheFileError, match=r"a query ran past 0.001 s"):
        cache._rows("SELECT key FROM calls ORDER BY created, request, key")
    assert time.monotonic() - start < 2.0


def test_a_new_file_opened_while_another_connection_writes_it_waits_instead_of_failing(tmp_path: Path) -> None:
    """Switching a new file to WAL needs it alone; SQLite answers "database is locked" at once, without its busy
    handler, while another connection holds the write lock (two threads or processes opening one new cache)."""
    import threading

    path = tmp_path / "calls.sqlite"
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("CREATE TABLE t (x)")
    other.execute("BEGIN IMMEDIATE")  # a write lock, held until the timer commits
    probe = sqlite3.connect(path, timeout=5.0, isolation_level=None)
    start = time.monotonic()
    with pytest.raises(sqlite3.OperationalError, match="locked"):  # what the cache meets: SQLite does not wait
        probe.execute("PRAGMA journal_mode = WAL")
    probe.close()
    assert time.monotonic() - start < 2.0
    release = threading.Timer(0.3, lambda: other.execute("COMMIT"))
    release.start()
    start = time.monotonic()
    try:
        cache = LLMCache(path, "record")
    finally:
        release.join()
        other.close()
    assert time.monotonic() - start >= 0.25  # it waited for the reader instead of failing
    assert cache._connect().execute("PRAGMA journal_mode").fetchone()[0] == "wal"
