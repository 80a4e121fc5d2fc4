"""Execution-result cache for sandboxes (docs/harness_mdp.md, "Sandboxes").

A job whose code, files, stdin and limits are identical gives the same result when the code is
deterministic, so its result can be reused. A :class:`ResultCache` is an in-process LRU (thread-safe), bounded
by the total size of the results it holds (their stdout, stderr and key, :data:`DEFAULT_MAX_BYTES` by default)
and by their count, optionally in front of a :class:`~harness_gym.sandbox.disk_cache.DiskStore` shared by every
process on the machine: memory first, then disk, and a disk hit is promoted to memory. Only results of jobs
that ran to completion (``reason == ""``, no timeout, no kill) are stored; a job whose result is in neither
layer runs. Code that reads the clock or a random source is cached too, which is why ``exec_cache=False``
exists. Cached results come back with ``cached=True``; the env reports it in ``info["exec_cached"]``.

:func:`resolve_cache` maps a sandbox's ``cache=`` (an env's ``exec_cache=``) to a cache: ``True`` or ``"disk"``
the process-wide memory + disk cache of :func:`~harness_gym.sandbox.disk_cache.cache_dir` (read when the
sandbox is made), ``"memory"`` the process-wide memory-only one, ``False`` none.

A key holds the isolation in force when the result was computed (a sandbox's ``salt_in_force()``, which starts
its server first), never the isolation requested: a result computed under a weaker mode is never served to a
sandbox running in a stronger one, and a sandbox that requires isolation raises
:class:`~harness_gym.sandbox.process.IsolationError` before it reads the cache. It also holds the package
version (:func:`package_version`) and :data:`~harness_gym.sandbox.disk_cache.FORMAT`, so that a result written
by another release is never read.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sys
import threading
from collections.abc import Callable
from functools import lru_cache
from json.encoder import encode_basestring  # type: ignore[attr-defined]
from typing import Any

from harness_gym.core.lru import ByteLRU
from harness_gym.core.sandbox import ExecResult, Sandbox
from harness_gym.sandbox.disk_cache import DEFAULT_DISK_MAX_BYTES, FORMAT, DiskStore, cache_dir

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
"""Default bound on the bytes a :class:`ResultCache` holds (a result's stdout and stderr are at most 64 KiB each)."""


def _result_bytes(key: str, result: ExecResult) -> int:
    return len(key) + len(result.stdout) + len(result.stderr) + 200


def _marked(result: ExecResult, cached: bool) -> ExecResult:
    """``dataclasses.replace(result, cached=cached)``, built directly (``replace`` took ~8 us a lookup)."""
    if result.cached is cached:
        return result
    return ExecResult(result.stdout, result.stderr, result.exit_code, result.timed_out, result.duration_s,
                      result.reason, cached)


class ResultCache:
    """A thread-safe LRU of :class:`ExecResult` by job key, bounded in bytes and entries, optionally in front of
    a :class:`~harness_gym.sandbox.disk_cache.DiskStore`.

    :param maxsize: the most results kept in memory
    :param max_bytes: the most bytes kept in memory (a result counts its stdout, stderr and key); the least
        recently used results go first
    :param disk: the on-disk layer (None: memory only); a result missing in memory is looked up there, and a
        stored result is written to both
    """

    def __init__(self, maxsize: int = 8192, max_bytes: int = DEFAULT_MAX_BYTES, disk: DiskStore | None = None) -> None:
        self.maxsize = maxsize
        self.max_bytes = max_bytes
        self.disk = disk
        self.hits = 0
        """Lookups answered, from memory or disk."""
        self.disk_hits = 0
        """Lookups answered from disk."""
        self.misses = 0
        self._data: ByteLRU[str, ExecResult] = ByteLRU(max_bytes, _result_bytes, max_entries=maxsize)
        self._lock = threading.Lock()
        self._shared_as: tuple[Any, ...] | None = None

    def __reduce__(self) -> tuple[Any, ...]:
        if self._shared_as is not None:  # a process-wide cache is the other process's own one
            return self._shared_as
        return (type(self), (self.maxsize, self.max_bytes, self.disk))

    @property
    def nbytes(self) -> int:
        """The bytes the results in memory hold now."""
        return self._data.bytes

    def get(self, key: str) -> ExecResult | None:
        """The stored result for ``key`` (marked ``cached=True``), or None."""
        res = self._data.get(key)
        from_disk = False
        if res is None and self.disk is not None:
            res = self.disk.get(key)
            if res is not None:
                from_disk = True
                self._data.put(key, res)
        with self._lock:
            if res is None:
                self.misses += 1
                return None
            self.hits += 1
            self.disk_hits += from_disk
        return _marked(res, cached=True)

    def put(self, key: str, result: ExecResult) -> None:
        """Store ``result`` if it is cacheable (a completed job)."""
        if not cacheable(result):
            return
        result = _marked(result, cached=False)
        self._data.put(key, result)
        if self.disk is not None:
            self.disk.put(key, result)

    def clear(self) -> None:
        """Forget every result, in memory and on disk, and reset the counters."""
        self._data.clear()
        if self.disk is not None:
            self.disk.clear()
        with self._lock:
            self.hits = self.misses = self.disk_hits = 0

    def __len__(self) -> int:
        return len(self._data)


_MEMORY_CACHE = ResultCache()
_DISK_CACHES: dict[tuple[str, int], ResultCache] = {}
_DISK_CACHES_LOCK = threading.Lock()
CACHE_MODES: tuple[Any, ...] = (True, False, "disk", "memory")
"""The values of a sandbox's ``cache=`` (besides a :class:`ResultCache`) and of an env's ``exec_cache=``."""


def memory_cache() -> ResultCache:
    """The process-wide memory-only cache (``cache="memory"``)."""
    return _MEMORY_CACHE


_MEMORY_CACHE._shared_as = (memory_cache, ())


def disk_cache(folder: str | os.PathLike[str] | None = None, max_bytes: int = DEFAULT_DISK_MAX_BYTES) -> ResultCache:
    """The process-wide memory + disk cache of ``folder`` (default :func:`cache_dir`, read now), one per folder.

    :param folder: the cache folder
    :param max_bytes: bound on the bytes of its results on disk (the first call for a folder sets it)
    """
    path = os.path.abspath(os.fspath(folder if folder is not None else cache_dir()))
    with _DISK_CACHES_LOCK:
        found = _DISK_CACHES.get((path, os.getpid()))
        if found is None:
            found = ResultCache(disk=DiskStore(path, max_bytes))
            found._shared_as = (disk_cache, (path, max_bytes))
            _DISK_CACHES[(path, os.getpid())] = found
    return found


def default_cache() -> ResultCache:
    """The process-wide cache shared by the sandboxes made with ``cache=True``: memory, then the on-disk store
    of :func:`~harness_gym.sandbox.disk_cache.cache_dir` (read now)."""
    return disk_cache()


def resolve_cache(cache: bool | str | ResultCache | None, where: str = "cache") -> ResultCache | None:
    """The cache a ``cache=`` value names (see the module docstring).

    :param cache: ``True``/``"disk"``, ``"memory"``, ``False``/``None`` or a :class:`ResultCache`
    :param where: the argument's name, for the error
    :raises ValueError: for any other value
    """
    if isinstance(cache, ResultCache):
        return cache
    if cache is None or cache is False:
        return None
    if cache is True or cache == "disk":
        return default_cache()
    if cache == "memory":
        return memory_cache()
    raise ValueError(f"{where} must be True or 'disk' (memory + disk), 'memory' (this process only) or False "
                     f"(no result cache), got {cache!r}")


def package_version() -> str:
    """The version of the loaded ``harness_gym`` (part of every key), read without importing the package."""
    return str(getattr(sys.modules.get("harness_gym"), "__version__", "unknown"))


def cacheable(result: ExecResult) -> bool:
    """Whether a result comes from a job that ran to completion (so rerunning it would give the same)."""
    return not result.timed_out and not result.reason and not result.cached


def cache_key(
    code: str,
    files: dict[str, str] | None,
    stdin: str,
    timeout_s: float,
    memory_mb: int,
    salt: str = "",
) -> str:
    """The sha256 of everything that determines a job's result, with the package version and the cache format.

    The payload hashed is ``json.dumps([FORMAT, version, salt, code, sorted(files.items()), stdin,
    float(timeout_s), int(memory_mb)], ensure_ascii=False)``, fed to the hash in two parts: the hash state after
    the part up to ``code`` is kept per (version, salt, code), since a domain's jobs mostly share one script; the
    rest is written out part by part as ``json.dumps`` writes it (:func:`_json_part`).

    :param salt: what else the result depends on (the sandbox kind and settings, the isolation in force)
    """
    digest = _hashed_job_head(package_version(), salt, code).copy()
    listed = ", ".join(f"[{_json_part(name)}, {_json_part(text)}]" for name, text in sorted((files or {}).items()))
    tail = f"[{listed}], {_json_part(stdin)}, {_json_number(float(timeout_s))}, {_json_number(int(memory_mb))}]"
    digest.update(tail.encode())
    return digest.hexdigest()


_LONG_TEXT = 2048
"""Texts of at least this many characters are encoded through :data:`_ENCODED_LONG`."""
_ENCODED_LONG: ByteLRU[str, str] = ByteLRU(16 * 1024 * 1024, lambda text, encoded: len(text) + len(encoded))
"""JSON encodings of long texts, e.g. a data task's CSV file, which every job of the task carries."""


def _json_part(value: Any) -> str:
    """``json.dumps(value, ensure_ascii=False)``; a ``str`` directly through the encoder's own string function
    (long ones kept in :data:`_ENCODED_LONG`)."""
    if type(value) is not str:
        return json.dumps(value, ensure_ascii=False)
    if len(value) < _LONG_TEXT:
        return encode_basestring(value)
    encoded = _ENCODED_LONG.get(value)
    if encoded is None:
        encoded = encode_basestring(value)
        _ENCODED_LONG.put(value, encoded)
    return encoded


def _json_number(value: float | int) -> str:
    """``json.dumps(value)`` of a ``float`` or ``int`` (``NaN`` and ``Infinity`` as ``json`` spells them)."""
    if type(value) is int or math.isfinite(value):
        return repr(value)
    return json.dumps(value)


@lru_cache(maxsize=64)
def _hashed_job_head(version: str, salt: str, code: str) -> Any:
    """The sha256 state after the key payload's head ``[FORMAT, version, salt, code, `` (copy it to go on)."""
    head = ", ".join(map(_json_part, (FORMAT, version, salt, code)))
    return hashlib.sha256(f"[{head}, ".encode())


def cached_run(
    cache: ResultCache,
    salt: str,
    run: Callable[..., ExecResult],
    code: str,
    files: dict[str, str] | None,
    stdin: str,
    timeout_s: float,
    memory_mb: int,
    salt_after: Callable[[], str | None] | None = None,
) -> ExecResult:
    """Answer a job from ``cache`` or by calling ``run`` (and remember the result).

    :param cache: where results are kept
    :param salt: see :func:`cache_key`
    :param run: the uncached ``Sandbox.run``
    :param salt_after: the salt of what ran the job, read after it ran; a result is remembered only when it is
        still ``salt`` (a server restarted in another isolation mode meanwhile keys nothing)
    """
    key = cache_key(code, files, stdin, timeout_s, memory_mb, salt)
    hit = cache.get(key)
    if hit is not None:
        return hit
    result = run(code, files=files, stdin=stdin, timeout_s=timeout_s, memory_mb=memory_mb)
    if salt_after is None or salt_after() == salt:
        cache.put(key, result)
    return result


class CachedSandbox:
    """Wraps any sandbox with the result cache.

    :param inner: the sandbox that runs cache misses
    :param cache: the cache (default: the process-wide one)
    :param salt: distinguishes results of differently configured sandboxes (default, read before every job: the
        inner's ``salt_in_force()`` where it has one, which holds the isolation in force, else its
        ``cache_salt``, else its class)
    """

    def __init__(self, inner: Sandbox, cache: ResultCache | None = None, salt: str | None = None) -> None:
        self.inner = inner
        self.cache = cache if cache is not None else default_cache()
        self.salt = salt

    def run(
        self,
        code: str,
        *,
        files: dict[str, str] | None = None,
        stdin: str = "",
        timeout_s: float = 5.0,
        memory_mb: int = 512,
    ) -> ExecResult:
        """Run ``code`` in the inner sandbox unless an identical job's result is cached."""
        salt = self.salt
        if salt is None:
            in_force = getattr(self.inner, "salt_in_force", None)
            salt = in_force() if in_force is not None else getattr(self.inner, "cache_salt",
                                                                    type(self.inner).__qualname__)
        if salt is None:  # the inner sandbox cannot start: its failure result, never cached
            return self.inner.run(code, files=files, stdin=stdin, timeout_s=timeout_s, memory_mb=memory_mb)
        return cached_run(self.cache, salt, self.inner.run, code, files, stdin, timeout_s, memory_mb)

    def close(self) -> None:
        """Close the inner sandbox."""
        self.inner.close()


class ExecRecorder:
    """Passes jobs to a sandbox and remembers, since :meth:`start`, whether any result came from a cache and
    how many metered jobs ran (the cost ledger's ``sandbox_jobs``; jobs run while :attr:`metering` is False,
    the hidden grader's, are not counted).

    The env wraps the sandbox it hands to a domain in one recorder per env, so ``info["exec_cached"]`` is read
    from the results of that env's own jobs (:attr:`ExecResult.cached`), whatever other envs run meanwhile.

    :param inner: the sandbox that runs the jobs (cached or not)
    """

    def __init__(self, inner: Sandbox) -> None:
        self.inner = inner
        self.served_from_cache = False
        """True when a job run since the last :meth:`start` was answered from a cache."""
        self.jobs = 0
        """Metered jobs run since the last :meth:`start`, cached ones included."""
        self.metering = True
        """Whether jobs run now are counted in :attr:`jobs`."""

    def start(self) -> None:
        """Begin a new step: forget what earlier jobs returned."""
        self.served_from_cache = False
        self.jobs = 0

    def run(
        self,
        code: str,
        *,
        files: dict[str, str] | None = None,
        stdin: str = "",
        timeout_s: float = 5.0,
        memory_mb: int = 512,
    ) -> ExecResult:
        """Run ``code`` in the inner sandbox and note whether its result was cached."""
        result = self.inner.run(code, files=files, stdin=stdin, timeout_s=timeout_s, memory_mb=memory_mb)
        self.served_from_cache = self.served_from_cache or result.cached
        self.jobs += int(self.metering)
        return result

    def close(self) -> None:
        """Close the inner sandbox."""
        self.inner.close()
