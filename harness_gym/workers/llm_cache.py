"""Record/replay cache of LLM calls in SQLite, safe with several writing processes and threads.

Every logical call of a live worker (one draft, one tool proposal, ...) is keyed by the SHA-256 of the
canonical JSON of ``(model, messages, sampling parameters, sample index)``; the sample index counts how
often the same request was made before in the same episode, so repeated identical prompts at
temperature > 0 stay distinct and an episode replays in order. The stored value is the whole outcome of
the call: the final reply text (or the fault that ended it) and what it cost (requests, errors, tokens,
latency), so a replayed step reports the same ``info["cost"]`` as the recorded one.

Modes:

- ``off``: no cache; every call goes to the server.
- ``record``: a fresh recording: the first request of each key in this cache object's life goes to the
  server and its outcome replaces any older entry; later requests of that key reuse what was recorded,
  so every episode of the recording replays exactly. (Two processes recording the same key at once:
  the last write wins; let concurrent recorders run different tasks or seeds, or use ``auto``.)
- ``replay``: every call is answered from the cache; a miss raises :class:`CacheMissError`.
- ``auto``: answered from the cache when the key holds a completed call, else sent to the server and
  stored (the first writer of a key wins; everyone continues with the stored outcome).

The file uses WAL journaling and a busy timeout, and every write is one short transaction, so several
processes and threads (each on its own connection) can record into one file at once, on one machine. WAL
needs shared memory between the processes, so it does not work on a network filesystem (NFS, SMB):
across machines give each node (or actor) its own file on local disk and join them with
:func:`merge_caches` (``harness-gym merge-cache``; ``docs/scale_out.md``).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
import urllib.parse
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

CACHE_MODES: tuple[str, ...] = ("off", "record", "replay", "auto")
SCHEMA_VERSION = 1
BUSY_TIMEOUT_MS = 60_000
QUERY_LIMIT_S = 10.0
"""The longest one query of a cache file may run (a progress handler interrupts it): a file is user input."""
_TABLES = {"calls": ("key", "model", "request", "outcome", "created"), "meta": ("name", "value")}
_OUTCOME_TYPES = {"text": str, "ok": bool, "error": str, "requests": int, "errors": int, "prompt_tokens": int,
                  "completion_tokens": int, "latency_s": (int, float)}


class CacheFileError(ValueError):
    """A cache file that is not a harness_gym LLM cache as this version writes it (its schema or a row), named
    with the file, the table and the row."""


class CacheMissError(LookupError):
    """A replay-mode cache has no entry for a request: the episode differs from the recorded one."""


@dataclass(frozen=True)
class CallOutcome:
    """What one logical LLM call produced and cost.

    :param text: the final reply text ("" when the call failed)
    :param ok: True when a usable reply came back (it may still fail to parse; the parser decides)
    :param error: the last fault ("" when none), e.g. ``"timeout"``, ``"http 500"``, ``"malformed body"``
    :param requests: requests sent, retries included
    :param errors: requests that failed
    :param prompt_tokens: prompt tokens the server reported, summed over the requests
    :param completion_tokens: completion tokens the server reported, summed over the requests
    :param latency_s: seconds from the first request to the end of the last, back-off included
    :param causes: the failed requests by cause (:data:`~harness_gym.core.cost.LLM_ERROR_CAUSES`); entries
        recorded before causes were stored have none, and :meth:`error_causes` reads their ``error``
    """

    text: str
    ok: bool
    error: str = ""
    requests: int = 1
    errors: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    causes: dict[str, int] = field(default_factory=dict)

    def error_causes(self) -> dict[str, int]:
        """The failed requests by cause: :attr:`causes`, or for an entry recorded without them all of its
        ``errors`` under the cause its last fault (``error``) names (``unparseable`` when it names none)."""
        if self.causes or not self.errors:
            return dict(self.causes)
        return {error_cause(self.error): self.errors}

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, raw: str, where: str = "outcome") -> CallOutcome:
        """The outcome a cache row stores, checked field by field.

        :param raw: the row's ``outcome`` column
        :param where: the file, table and row, for the error
        :raises CacheFileError: for anything but the JSON object :meth:`to_json` writes
        """
        if not isinstance(raw, str):
            raise CacheFileError(f"{where}: outcome is {type(raw).__name__}, not JSON text")
        try:
            fields = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            raise CacheFileError(f"{where}: outcome is not JSON ({exc})") from None
        if not isinstance(fields, dict) or set(fields) - {"causes"} != set(_OUTCOME_TYPES):
            keys = sorted(fields) if isinstance(fields, dict) else type(fields).__name__
            raise CacheFileError(f"{where}: outcome holds {keys}, not the fields {sorted(_OUTCOME_TYPES)} "
                                 "(and causes)")
        causes = fields.get("causes", {})
        if not isinstance(causes, dict) or not all(
                type(k) is str and type(v) is int and 0 <= v < 1e12 for k, v in causes.items()):
            raise CacheFileError(f"{where}: outcome field 'causes' is {causes!r}, not a dict of counts by cause")
        for name, kind in _OUTCOME_TYPES.items():
            value = fields[name]
            if not isinstance(value, kind) or (kind is int and isinstance(value, bool)) or (
                    name != "text" and name != "error" and name != "ok" and not 0 <= value < 1e12):
                raise CacheFileError(f"{where}: outcome field {name!r} is {value!r}, not a valid "
                                     f"{getattr(kind, '__name__', 'number')}")
        return cls(**fields)


def error_cause(error: str) -> str:
    """The cause (:data:`~harness_gym.core.cost.LLM_ERROR_CAUSES`) a worker's fault text names, e.g.
    ``"http 503"`` -> ``"http_status"``; ``"unparseable"`` for a text naming none.

    :param error: a :attr:`CallOutcome.error`
    """
    for prefix, cause in (("connection", "connection"), ("timeout", "timeout"), ("http", "http_status"),
                          ("malformed", "malformed_body")):
        if error.startswith(prefix):
            return cause
    return "unparseable"


def request_key(request: dict[str, Any]) -> str:
    """The cache key of a request: SHA-256 of its canonical JSON (sorted keys, no whitespace).

    :param request: ``{"model", "messages", "params", "sample"}``
    """
    canonical = json.dumps(request, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def first_prompt_line(request: dict[str, Any]) -> str:
    """The first line of the request's last user message that is neither blank nor a ``#`` heading (to name
    a request in errors).

    :param request: a request as passed to :func:`request_key`
    """
    for message in reversed(request.get("messages", [])):
        if message.get("role") == "user":
            for line in str(message.get("content", "")).splitlines():
                if line.strip() and not line.lstrip().startswith("#"):
                    return line.strip()[:160]
    return ""


class LLMCache:
    """A SQLite file of recorded LLM calls.

    :param path: the cache file (created with its folder when missing, except in ``replay`` mode)
    :param mode: one of :data:`CACHE_MODES` other than ``off``
    """

    def __init__(self, path: str | Path, mode: str = "auto") -> None:
        if mode not in CACHE_MODES or mode == "off":
            raise ValueError(f"cache mode must be one of {CACHE_MODES[1:]} for a cache file, got {mode!r}")
        self.path = Path(path)
        self.mode = mode
        if mode == "replay" and not self.path.is_file():
            raise FileNotFoundError(f"replay cache {self.path} does not exist")
        self._local = threading.local()
        self._pid = -1
        self.hits = 0
        self._recorded: set[str] = set()
        self._connect()  # create the schema now, so a bad path fails at construction

    # ----- connection (one per thread and process) ---------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is not None and self._pid == os.getpid():
            return conn
        if self.mode != "replay":
            self.path.parent.mkdir(parents=True, exist_ok=True)
        uri = "file:" + urllib.parse.quote(str(self.path.absolute())) + ("?mode=ro" if self.mode == "replay" else "")
        conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                               check_same_thread=True)
        self._local.deadline = float("inf")
        conn.set_progress_handler(self._past_deadline, 10_000)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA trusted_schema = OFF")  # no function a view or trigger of the file names runs
        if self.mode == "replay":
            conn.execute("PRAGMA query_only = ON")
        self._check_schema(conn)
        if self.mode != "replay":
            self._use_wal(conn)
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, model TEXT NOT NULL, "
                         "request TEXT NOT NULL, outcome TEXT NOT NULL, created REAL NOT NULL)")
            conn.execute("CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
            conn.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        self._local.conn = conn
        self._pid = os.getpid()
        return conn

    def _use_wal(self, conn: sqlite3.Connection) -> None:
        """Switch the file to WAL. The first switch needs the file to itself, and SQLite answers a connection that
        asks while another (a thread or process opening the same new file) holds a lock with "database is locked" at
        once, without its busy handler; so ask again until the busy timeout has passed."""
        deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
        while True:
            try:
                conn.execute("PRAGMA journal_mode = WAL")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    def _past_deadline(self) -> int:
        """SQLite's progress handler: non-zero (interrupt the query) once the query's deadline has passed."""
        return int(time.monotonic() > self._local.deadline)

    def _check_schema(self, conn: sqlite3.Connection) -> None:
        """Refuse a file whose ``calls`` or ``meta`` is not a table with this version's columns (a view, another
        layout): :class:`CacheFileError` naming the file and the table."""
        try:
            self._local.deadline = time.monotonic() + QUERY_LIMIT_S
            kinds = dict(conn.execute("SELECT name, type FROM sqlite_master WHERE name IN ('calls', 'meta')"))
            columns = {table: tuple(row[1] for row in conn.execute(f"PRAGMA table_info({table})"))
                       for table, kind in kinds.items() if kind == "table"}
        except sqlite3.DatabaseError as exc:
            raise CacheFileError(f"cache {self.path} is not a harness_gym LLM cache: {exc}") from None
        finally:
            self._local.deadline = float("inf")
        for table, expected in _TABLES.items():
            kind = kinds.get(table)
            if kind is None:
                if self.mode == "replay" and table == "calls":
                    raise CacheFileError(f"cache {self.path} is not a harness_gym LLM cache: it has no table 'calls'")
                continue  # created by a recording mode
            if kind != "table":
                raise CacheFileError(f"cache {self.path}: '{table}' is a {kind}, not a table")
            if columns[table] != expected:
                raise CacheFileError(f"cache {self.path}: table '{table}' has columns {list(columns[table])}, "
                                     f"not {list(expected)}")

    def _rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """The rows of one query of the file, run within :data:`QUERY_LIMIT_S`."""
        conn = self._connect()
        self._local.deadline = time.monotonic() + QUERY_LIMIT_S
        try:
            return conn.execute(sql, params).fetchall()
        except sqlite3.OperationalError:
            if time.monotonic() > self._local.deadline:
                raise CacheFileError(f"cache {self.path}: a query ran past {QUERY_LIMIT_S:g} s ({sql[:60]!r})") from None
            raise
        finally:
            self._local.deadline = float("inf")

    def _outcome(self, key: Any, raw: Any) -> CallOutcome:
        return CallOutcome.from_json(raw, f"cache {self.path}, table 'calls', row key {str(key)[:80]!r}")

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.pop("_local")
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._local = threading.local()
        self._pid = -1

    # ----- reading and writing -----------------------------------------------------------------------
    def get(self, key: str) -> CallOutcome | None:
        """The stored outcome of ``key``, or ``None``.

        :param key: a key from :func:`request_key`
        """
        rows = self._rows("SELECT outcome FROM calls WHERE key = ?", (key,))
        return None if not rows else self._outcome(key, rows[0][0])

    def put(self, key: str, request: dict[str, Any], outcome: CallOutcome, *, replace: bool) -> CallOutcome:
        """Store ``outcome`` under ``key`` and return what the cache now holds for it.

        :param key: a key from :func:`request_key`
        :param request: the request (stored for inspection and for fitting worker profiles)
        :param outcome: what the call produced
        :param replace: replace an existing entry (``record``) instead of keeping the first one (``auto``)
        """
        verb = "INSERT OR REPLACE" if replace else "INSERT OR IGNORE"
        self._recorded.add(key)
        conn = self._connect()
        conn.execute(f"{verb} INTO calls (key, model, request, outcome, created) VALUES (?, ?, ?, ?, ?)",
                     (key, str(request.get("model", "")), json.dumps(request, sort_keys=True, ensure_ascii=False),
                      outcome.to_json(), time.time()))
        if replace:
            return outcome
        stored = self.get(key)
        return stored if stored is not None else outcome

    def lookup(self, request: dict[str, Any]) -> tuple[str, CallOutcome | None]:
        """The key of ``request`` and the outcome to use from the cache (``None``: call the server).

        In ``replay`` mode a miss raises :class:`CacheMissError` naming the key and the prompt's first line;
        in ``auto`` mode a stored failure counts as a miss (it is retried).

        :param request: ``{"model", "messages", "params", "sample"}``
        """
        key = request_key(request)
        if self.mode == "record":
            found = self.get(key) if key in self._recorded else None
            if found is None:
                return key, None
            self.hits += 1
            return key, found
        found = self.get(key)
        if self.mode == "replay":
            if found is None:
                raise CacheMissError(
                    f"replay cache {self.path} has no entry for key {key} (model {request.get('model')!r}, "
                    f"sample {request.get('sample')}, prompt starting {first_prompt_line(request)!r}): "
                    + (self.settings_hint(request) or "the episode asked for a call that was not recorded "
                       "(different task, seed, actions, prompts or sampling parameters)"))
            self.hits += 1
            return key, found
        if found is not None and found.ok:
            self.hits += 1
            return key, found
        return key, None

    def settings_hint(self, request: dict[str, Any]) -> str:
        """For a replay miss: when the cache holds this very prompt recorded with another model or other
        sampling parameters, which ones (``gym.make`` keywords and the command line's flags), else ``""``.

        :param request: the request that missed
        """
        messages = json.dumps(request.get("messages"), sort_keys=True, ensure_ascii=False)
        for key, raw in self._rows("SELECT key, request FROM calls"):
            stored = self._request(key, raw)
            if json.dumps(stored.get("messages"), sort_keys=True, ensure_ascii=False) != messages:
                continue
            wanted = {"model": stored.get("model"), **stored.get("params", {})}
            asked = {"model": request.get("model"), **request.get("params", {})}
            differ = [k for k in sorted(wanted.keys() | asked.keys()) if wanted.get(k) != asked.get(k)]
            if differ:
                return ("the cache holds this prompt recorded with "
                        + ", ".join(f"{k}={wanted.get(k)!r} (asked {asked.get(k)!r})" for k in differ)
                        + ": replay with the recorded settings (" + ", ".join(
                            f"{k}={wanted.get(k)!r}, --{k.replace('_', '-')} {wanted.get(k)}" for k in differ
                            if k in ("model", "temperature", "max_tokens"))
                        + "), or with --recording MANIFEST, which reads them from the recording's manifest")
        return ""

    def __len__(self) -> int:
        return int(self._rows("SELECT COUNT(*) FROM calls")[0][0])

    def entries(self) -> list[tuple[str, dict[str, Any], CallOutcome]]:
        """Every entry as ``(key, request, outcome)``, oldest first."""
        rows = self._rows("SELECT key, request, outcome FROM calls ORDER BY created, key")
        return [(key, self._request(key, req), self._outcome(key, out)) for key, req, out in rows]

    def _request(self, key: Any, raw: Any) -> dict[str, Any]:
        """A row's ``request`` column as the dict :meth:`put` stored (:class:`CacheFileError` otherwise)."""
        where = f"cache {self.path}, table 'calls', row key {str(key)[:80]!r}"
        try:
            request = json.loads(raw) if isinstance(raw, str) else None
        except (ValueError, RecursionError):
            request = None
        if not isinstance(request, dict) or not isinstance(request.get("params", {}), dict):
            raise CacheFileError(f"{where}: request is not the JSON object of a request")
        return request

    def close(self) -> None:
        """Close this thread's connection (others close when their threads end)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None


@dataclass(frozen=True)
class MergeReport:
    """What :func:`merge_caches` did.

    :param added: entries new to the destination
    :param kept: entries the destination already held (the same outcome, or a completed call where the source
        has a failure)
    :param replaced: stored failures replaced by a completed call from a source
    :param conflicts: keys held with another completed outcome; the destination's (the first seen) was kept
    """

    added: int = 0
    kept: int = 0
    replaced: int = 0
    conflicts: int = 0


def merge_caches(dest: str | Path, sources: list[str | Path]) -> MergeReport:
    """Merge the entries of cache files recorded separately (one per node or per actor) into ``dest``.

    A key new to ``dest`` is copied with its recording time; a key ``dest`` holds as a failure takes a source's
    completed call; for a key held with two different completed outcomes the first one seen (``dest``'s, then
    the sources' in order) is kept, as ``auto`` mode keeps the first writer, and counted as a conflict.
    ``dest`` is left in rollback-journal mode (not WAL), so that it is one self-contained file that replay
    readers can open read-only, from a network filesystem too.

    :param dest: the merged cache (created when missing)
    :param sources: cache files written by :class:`LLMCache`
    """
    counts = {"added": 0, "kept": 0, "replaced": 0, "conflicts": 0}
    dest_path = Path(dest).resolve()
    merged = LLMCache(dest_path, "auto")
    conn = merged._connect()
    for source in sources:
        if Path(source).resolve() == dest_path:
            raise ValueError(f"merge source {source} is the destination itself")
        reader = LLMCache(source, "replay")  # a clear error for a missing file or one that is not a cache
        rows = reader._rows("SELECT key, model, request, outcome, created FROM calls ORDER BY created, key")
        reader.close()
        for key, model, request, outcome, created in rows:
            held = merged.get(key)
            new = reader._outcome(key, outcome)
            reader._request(key, request)
            if held is None or (not held.ok and new.ok):
                conn.execute("INSERT OR REPLACE INTO calls (key, model, request, outcome, created) VALUES "
                             "(?, ?, ?, ?, ?)", (key, model, request, outcome, created))
                counts["added" if held is None else "replaced"] += 1
            elif held == new or not new.ok:
                counts["kept"] += 1
            else:
                counts["conflicts"] += 1
    conn.execute("PRAGMA journal_mode = DELETE")
    merged.close()
    return MergeReport(**counts)
