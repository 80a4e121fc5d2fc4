"""Execution-result cache for sandboxes (docs/harness_mdp.md, "Sandboxes").

A job whose code, files, stdin and limits are identical gives the same result when the code is
deterministic, so its result can be reused. The cache is an in-process LRU shared by every sandbox of
the process (thread-safe), bounded by the total size of the results it holds (their stdout, stderr and key,
:data:`DEFAULT_MAX_BYTES` by default) and by their count. Only results of jobs that ran to completion (``reason == ""``, no
timeout, no kill) are stored; code that reads the clock or a random source is cached too, which is why
caching is opt-in. Cached results come back with ``cached=True``; the env reports it in ``info["exec_cached"]``.

A key holds the isolation in force when the result was computed (a sandbox's ``salt_in_force()``, which starts
its server first), never the isolation requested: a result computed under a weaker mode is never served to a
sandbox running in a stronger one, and a sandbox that requires isolation raises
:class:`~harness_gym.sandbox.process.IsolationError` before it reads the cache.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
from collections.abc import Callable

from harness_gym.core.lru import ByteLRU
from harness_gym.core.sandbox import ExecResult, Sandbox

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
"""Default bound on the bytes a :class:`ResultCache` holds (a result's stdout and stderr are at most 64 KiB each)."""


def _result_bytes(key: str, result: ExecResult) -> int:
    return len(key) + len(result.stdout) + len(result.stderr) + 200


class ResultCache:
    """A thread-safe LRU of :class:`ExecResult` by job key, bounded in bytes and entries.

    :param maxsize: the most results kept
    :param max_bytes: the most bytes kept (a result counts its stdout, stderr and key); the least recently
        used results go first
    """

    def __init__(self, maxsize: int = 8192, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.maxsize = maxsize
        self.max_bytes = max_bytes
        self.hits = 0
        self.misses = 0
        self._data: ByteLRU[str, ExecResult] = ByteLRU(max_bytes, _result_bytes, max_entries=maxsize)
        self._lock = threading.Lock()

    @property
    def nbytes(self) -> int:
        """The bytes the cached results hold now."""
        return self._data.bytes

    def get(self, key: str) -> ExecResult | None:
        """The stored result for ``key`` (marked ``cached=True``), or None."""
        res = self._data.get(key)
        with self._lock:
            if res is None:
                self.misses += 1
                return None
            self.hits += 1
        return dataclasses.replace(res, cached=True)

    def put(self, key: str, result: ExecResult) -> None:
        """Store ``result`` if it is cacheable (a completed job)."""
        if not cacheable(result):
            return
        self._data.put(key, dataclasses.replace(result, cached=False))

    def clear(self) -> None:
        """Forget every result and reset the counters."""
        self._data.clear()
        with self._lock:
            self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._data)


_DEFAULT_CACHE = ResultCache()


def default_cache() -> ResultCache:
    """The process-wide cache shared by all sandboxes."""
    return _DEFAULT_CACHE


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
    """The sha256 of everything that determines a job's result.

    :param salt: what else the result depends on (the sandbox kind and settings)
    """
    payload = json.dumps(
        [salt, code, sorted((files or {}).items()), stdin, float(timeout_s), int(memory_mb)],
        ensure_ascii=False,
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


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
