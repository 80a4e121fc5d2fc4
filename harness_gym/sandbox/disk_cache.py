"""The on-disk layer of the execution-result cache (docs/harness_mdp.md, "Sandboxes").

A :class:`DiskStore` keeps completed jobs' results in one SQLite file per cache folder,
``exec-v<FORMAT>.sqlite3``, so that a second run, another process of a vector env or another seed starts warm.
Why SQLite rather than one file per key: the results are small (a few hundred bytes typically), so a file per
key would cost a file system entry and an inode each and pruning would have to list and stat the whole folder;
SQLite gives atomic writes, concurrent readers beside one writer (WAL mode) with waits instead of errors when
processes collide (``busy_timeout``), and least-recently-used pruning from an index. ``synchronous=NORMAL``:
a power cut may lose the last results written (they are rerun), never corrupt earlier ones.

Every row carries a digest of its key and content; a row that does not match it, a file that is not a database
or a folder that cannot be written is a miss with one warning per store, never an exception and never a wrong
result: an unusable file or folder turns the store off for the process (the memory layer still works); delete
the folder to start afresh. The store is bounded by :attr:`DiskStore.max_bytes` (the stdout, stderr and key
of its results): when a write takes it over the bound, the least recently used results go until it is at
90% of it. A read marks its result used in memory; the marks are written in one transaction (an ``UPDATE`` per
read took ~80 us, most of a disk hit) before the next write of this process, at the read that makes
:data:`_TOUCH_BATCH` of them or comes :data:`_TOUCH_DELAY_S` seconds after the oldest, and at
:meth:`DiskStore.close`, so a process that ends without writing or
closing may leave its last reads unmarked: those results then look older to the pruning than they are.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
import time
import warnings
from pathlib import Path

from harness_gym.core.sandbox import ExecResult

FORMAT = 1
"""The cache format: part of the file name and of every key; a change of the rows' meaning bumps it."""
DEFAULT_DISK_MAX_BYTES = 512 * 1024 * 1024
"""Default bound on the bytes of results a :class:`DiskStore` keeps."""
BUSY_TIMEOUT_MS = 10_000
"""How long a process waits for another's write lock before the read or write is given up (a miss)."""
CACHE_DIR_ENV = "HARNESS_GYM_CACHE_DIR"
"""Environment variable naming the cache folder (see :func:`cache_dir`)."""
_ROW_OVERHEAD = 200
_CHECK_EVERY = 64
"""Puts between two exact measurements of the file's total bytes (other processes write too)."""
_TOUCH_BATCH = 64
"""Reads whose use marks are written together (see the module docstring)."""
_TOUCH_DELAY_S = 5.0
"""The longest a read's use mark waits in memory before a later read writes it."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS results (
    key TEXT PRIMARY KEY, stdout TEXT NOT NULL, stderr TEXT NOT NULL, exit_code INTEGER NOT NULL,
    duration_s REAL NOT NULL, nbytes INTEGER NOT NULL, used REAL NOT NULL, digest TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS results_used ON results (used);
"""


def cache_dir() -> Path:
    """The folder of the on-disk execution cache: ``$HARNESS_GYM_CACHE_DIR`` if set, else
    ``$XDG_CACHE_HOME/harness-gym/exec``, else ``~/.cache/harness-gym/exec``."""
    named = os.environ.get(CACHE_DIR_ENV)
    if named:
        return Path(named).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "harness-gym" / "exec"


def _digest(key: str, stdout: str, stderr: str, exit_code: int, duration_s: float) -> str:
    text = "\0".join((key, stdout, stderr, str(int(exit_code)), repr(float(duration_s))))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _execute_many(conn: sqlite3.Connection, sql: str, rows: list[tuple[object, ...]]) -> None:
    """Run ``sql`` on every row of ``rows`` in one transaction (rolled back if any fails)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.executemany(sql, rows)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


class DiskStore:
    """Completed jobs' results by key in one SQLite file, shared by every process that opens the same folder.

    Opened on first use (and again in a forked child); every failure is a miss (see the module docstring).

    :param folder: where the file lives (made if missing)
    :param max_bytes: bound on the bytes of the results kept
    """

    def __init__(self, folder: str | os.PathLike[str], max_bytes: int = DEFAULT_DISK_MAX_BYTES) -> None:
        if int(max_bytes) < 0:
            raise ValueError(f"max_bytes must be >= 0, got {max_bytes}")
        self.folder = Path(folder)
        self.path = self.folder / f"exec-v{FORMAT}.sqlite3"
        self.max_bytes = int(max_bytes)
        self.disabled_reason = ""
        """Why the store is off for this process ("" while it works)."""
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid = -1
        self._puts_since_check = 0
        self._touched: dict[str, float] = {}
        """Keys read since the last write of the use marks, with when they were read."""
        self._touched_since = 0.0
        self._warned: set[str] = set()

    def __getstate__(self) -> dict[str, object]:
        return {"folder": self.folder, "max_bytes": self.max_bytes}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__init__(state["folder"], state["max_bytes"])  # type: ignore[misc, arg-type]

    @property
    def enabled(self) -> bool:
        """Whether the store still reads and writes (False after an unusable file or folder)."""
        return not self.disabled_reason

    def _warn(self, kind: str, message: str) -> None:
        if kind not in self._warned:
            self._warned.add(kind)
            warnings.warn(f"execution cache {self.path}: {message}", RuntimeWarning, stacklevel=4)

    def _disable(self, error: BaseException | str) -> None:
        self.disabled_reason = str(error)
        self._warn("disabled", f"unusable ({error}); results are kept in memory only for this process "
                   "(delete the folder to start afresh)")
        self._close_conn()

    def _close_conn(self) -> None:
        conn, self._conn = self._conn, None
        self._touched.clear()
        if conn is not None and self._pid == os.getpid():
            try:
                conn.close()
            except sqlite3.Error:
                pass

    def _connection(self) -> sqlite3.Connection | None:
        """The open connection of this process, opened now if needed; None when the store is off."""
        if self.disabled_reason:
            return None
        if self._conn is not None and self._pid == os.getpid():
            return self._conn
        self._conn = None  # a connection inherited through fork is never used
        self._touched.clear()  # nor the parent's use marks: the parent writes them
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                                   check_same_thread=False)
            try:
                conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = NORMAL")
                conn.executescript(_SCHEMA)
            except BaseException:
                conn.close()
                raise
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                self._warn("busy", f"busy ({exc}); this lookup is a miss")
                return None
            self._disable(exc)
            return None
        except (OSError, sqlite3.Error) as exc:
            self._disable(exc)
            return None
        self._conn, self._pid = conn, os.getpid()
        return conn

    def _failed(self, exc: sqlite3.Error) -> None:
        """A read or write failed: a busy file is one miss, anything else turns the store off."""
        if isinstance(exc, sqlite3.OperationalError) and ("locked" in str(exc) or "busy" in str(exc)):
            self._warn("busy", f"busy ({exc}); a lookup or write was skipped")
        else:
            self._disable(exc)

    def get(self, key: str) -> ExecResult | None:
        """The stored result for ``key`` (now the most recently used), or None."""
        with self._lock:
            conn = self._connection()
            if conn is None:
                return None
            try:
                row = conn.execute("SELECT stdout, stderr, exit_code, duration_s, digest FROM results WHERE key = ?",
                                   (key,)).fetchone()
                if row is None:
                    return None
                stdout, stderr, exit_code, duration_s, digest = row
                if not (isinstance(stdout, str) and isinstance(stderr, str) and isinstance(exit_code, int)
                        and isinstance(duration_s, float) and digest == _digest(key, stdout, stderr, exit_code,
                                                                                 duration_s)):
                    self._warn("entry", "a result does not match its digest; it is dropped and rerun")
                    conn.execute("DELETE FROM results WHERE key = ?", (key,))
                    return None
            except sqlite3.Error as exc:
                self._failed(exc)
                return None
            now = time.time()
            if not self._touched:
                self._touched_since = now
            self._touched[key] = now
            if len(self._touched) >= _TOUCH_BATCH or now - self._touched_since >= _TOUCH_DELAY_S:
                try:
                    self._write_touches(conn)
                except sqlite3.Error as exc:
                    self._failed(exc)  # the result read stays good
        return ExecResult(stdout=stdout, stderr=stderr, exit_code=exit_code, timed_out=False,
                          duration_s=duration_s)

    def put(self, key: str, result: ExecResult) -> None:
        """Store ``result`` (a completed job's) under ``key``, pruning the oldest results beyond the bound."""
        nbytes = len(key) + len(result.stdout) + len(result.stderr) + _ROW_OVERHEAD
        if nbytes > self.max_bytes:
            return
        row = (key, result.stdout, result.stderr, int(result.exit_code), float(result.duration_s), nbytes,
               time.time(), _digest(key, result.stdout, result.stderr, result.exit_code, result.duration_s))
        with self._lock:
            conn = self._connection()
            if conn is None:
                return
            try:
                self._write_touches(conn)
            except sqlite3.Error as exc:
                self._failed(exc)  # the marks are lost; the result is still stored
                if self._conn is None:
                    return
            try:
                conn.execute("INSERT OR REPLACE INTO results VALUES (?, ?, ?, ?, ?, ?, ?, ?)", row)
                self._puts_since_check += 1
                if self._puts_since_check >= _CHECK_EVERY or self.max_bytes < _CHECK_EVERY * nbytes:
                    self._puts_since_check = 0
                    self._prune(conn)
            except sqlite3.Error as exc:
                self._failed(exc)

    def _write_touches(self, conn: sqlite3.Connection) -> None:
        """Write the pending use marks of :meth:`get` in one transaction (under the lock)."""
        if not self._touched:
            return
        marks = [(used, key) for key, used in self._touched.items()]
        self._touched.clear()
        _execute_many(conn, "UPDATE results SET used = ? WHERE key = ?", marks)

    def _prune(self, conn: sqlite3.Connection) -> None:
        """Drop the least recently used results while the total is over 90% of the bound, once it is over it."""
        (total,) = conn.execute("SELECT COALESCE(SUM(nbytes), 0) FROM results").fetchone()
        if total <= self.max_bytes:
            return
        target = int(0.9 * self.max_bytes)
        doomed = []
        for key, nbytes in conn.execute("SELECT key, nbytes FROM results ORDER BY used").fetchall():
            if total <= target:
                break
            doomed.append((key,))
            total -= nbytes
        _execute_many(conn, "DELETE FROM results WHERE key = ?", doomed)

    def _count(self, sql: str) -> int:
        """The one number ``sql`` selects (0 when the store is off or the read fails)."""
        with self._lock:
            conn = self._connection()
            if conn is None:
                return 0
            try:
                return int(conn.execute(sql).fetchone()[0])
            except sqlite3.Error as exc:
                self._failed(exc)
                return 0

    @property
    def nbytes(self) -> int:
        """The bytes of the results in the file now (0 when the store is off)."""
        return self._count("SELECT COALESCE(SUM(nbytes), 0) FROM results")

    def __len__(self) -> int:
        return self._count("SELECT COUNT(*) FROM results")

    def clear(self) -> None:
        """Delete every stored result (for every process using the folder)."""
        with self._lock:
            conn = self._connection()
            if conn is None:
                return
            self._touched.clear()
            try:
                conn.execute("DELETE FROM results")
                conn.execute("VACUUM")
            except sqlite3.Error as exc:
                self._failed(exc)

    def close(self) -> None:
        """Write the pending use marks and close this process's connection (the next use reopens it)."""
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                try:
                    self._write_touches(self._conn)
                except sqlite3.Error as exc:
                    self._warn("busy", f"the last use marks were not written ({exc})")
            self._close_conn()
