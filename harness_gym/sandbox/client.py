"""The client side of the job server (``server/``), shared by :class:`ProcessSandbox` and :class:`DockerSandbox`.

A sandbox backend only says how to start the server (a bubblewrap or ``unshare`` command line, or a
container attached with ``docker start -ai``); everything else lives here once: the line-based JSON
protocol over the launcher's pipes, one job at a time, argument checks, the result cache, the decoding
of responses into :class:`ExecResult`, restarting a server that died and recycling one every N jobs.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import threading
import time
import warnings
import weakref
from collections.abc import Callable
from typing import Any

from harness_gym.core.sandbox import ExecResult
from harness_gym.sandbox.cache import ResultCache, cached_run, resolve_cache
from harness_gym.sandbox.server import program_source
from harness_gym.sandbox.server.jobs import safe_join

START_TIMEOUT_S = 60.0
REPLY_GRACE_S = 10.0
JOB_ENV = {
    "LANG": "C.UTF-8",
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "NUMEXPR_NUM_THREADS": "1",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONIOENCODING": "utf-8",
}
"""The environment of every job (besides ``PATH``, ``HOME``, ``TMPDIR`` and ``PWD``)."""
SCRATCH_INODES = 16384
"""The most inodes (files, folders, links) each private tmpfs of the jobs holds, on both backends: a tmpfs counts
neither against its size, and each costs the kernel about a kilobyte outside every job's memory limit (bubblewrap
without root cannot limit them: ``isolation_report()["inode_limit"]`` says so)."""

_JOB_UID_BASE = 300000
_JOB_UID_SPAN = 100000
_uid_lock = threading.Lock()
_uid_counter = 0


def next_job_uid() -> int:
    """A uid for a new sandbox's jobs, distinct per sandbox and per client process (no passwd entry)."""
    global _uid_counter
    with _uid_lock:
        _uid_counter += 1
        return _JOB_UID_BASE + (os.getpid() * 97 + _uid_counter) % _JOB_UID_SPAN


def server_source() -> str:
    """The job server's program (the files of ``harness_gym/sandbox/server/`` joined:
    :func:`~harness_gym.sandbox.server.program_source`), which launchers run with
    ``python -I -c <source> <config json>``."""
    return program_source()


class ServerProcess:
    """A running server (behind its launcher process) and its protocol pipes.

    :param argv: the launcher's command line; its stdin/stdout carry the protocol
    :param env: the launcher's environment
    :param cwd: the launcher's working directory
    :param cleanup: called once the launcher has exited (remove a work root, a container)
    """

    def __init__(
        self,
        argv: list[str],
        env: dict[str, str] | None,
        cwd: str | None = None,
        cleanup: Callable[[], None] | None = None,
    ) -> None:
        self.owner_pid = os.getpid()
        self.cleanup = cleanup
        self.launched_at = time.monotonic()
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=cwd,
            close_fds=True,
            start_new_session=True,
        )
        self._buf = bytearray()
        self.stderr_tail = b""
        """The end of what the server wrote to its stderr (its own errors, never a job's output)."""
        self.info: dict[str, Any] = {}
        """What the server's first line (and, once :attr:`ready`, its ready line) said."""
        self.ready = False
        """Whether the ready line came: the server has imported its preloads and serves jobs."""

    def handshake(self) -> str:
        """Wait for the server's first line, sent once its namespaces and mounts are set up and before it imports
        its preloads (what it runs as, in which isolation: :attr:`info`); returns an error text ("" when
        started). The ready line follows: :meth:`wait_ready`."""
        msg = self._start_line("started")
        if isinstance(msg, str):
            return msg
        self.info = msg
        return ""

    def wait_ready(self) -> str:
        """Wait (once) for the ready line, sent after the preloads; adds it to :attr:`info` (``preload_errors``)
        and returns an error text ("" when ready). Its deadline is the start's, counted from the launch."""
        if self.ready:
            return ""
        msg = self._start_line("ready")
        if isinstance(msg, str):
            return msg
        self.info.update(msg)
        self.ready = True
        # The server's own stderr is only needed for start-up errors; keep it from filling up.
        threading.Thread(target=self._drain_stderr, daemon=True).start()
        return ""

    def _start_line(self, flag: str) -> dict[str, Any] | str:
        """The next start-up line, which must hold ``flag``; else the server is stopped and an error text returned."""
        try:
            msg = self.read_line(max(0.0, self.launched_at + START_TIMEOUT_S - time.monotonic()))
        except (EOFError, TimeoutError, ValueError) as exc:
            err, status = "", self.proc.poll()
            if isinstance(exc, EOFError) and status is None:  # its output closed: it is exiting
                try:
                    status = self.proc.wait(timeout=REPLY_GRACE_S)
                except subprocess.TimeoutExpired:
                    pass
            if status is not None and self.proc.stderr is not None:
                err = self.proc.stderr.read().decode("utf-8", "replace").strip()
            self.stop()
            if not err:
                err = (f"it exited with status {status} and wrote nothing to stderr" if status is not None
                       else "it wrote nothing to stderr")
            return f"{exc or type(exc).__name__}: {err}"
        if not msg.get(flag):
            self.stop()
            what = "greeting" if flag == "started" else f"line (expected the {flag} line)"
            return f"unexpected server {what} {msg!r}"
        return msg

    def _drain_stderr(self) -> None:
        stream = self.proc.stderr
        try:
            while stream is not None:
                chunk = stream.read1(65536)
                if not chunk:
                    break
                self.stderr_tail = (self.stderr_tail + chunk)[-4096:]
        except (OSError, ValueError):
            pass

    def alive(self) -> bool:
        return self.proc.poll() is None and os.getpid() == self.owner_pid

    def request(self, req: dict[str, Any], wait_s: float) -> dict[str, Any]:
        """Send one request and wait for its response (EOFError / TimeoutError / OSError on failure)."""
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(req) + "\n").encode("utf-8"))
        self.proc.stdin.flush()
        return self.read_line(wait_s)

    def read_line(self, wait_s: float) -> dict[str, Any]:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + wait_s
        while b"\n" not in self._buf:
            left = max(deadline - time.monotonic(), 0.0)
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                if left == 0.0:  # a line that came before the deadline was read, however late this looks
                    raise TimeoutError("sandbox server did not answer in time")
                continue
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                raise EOFError("sandbox server exited")
            self._buf += chunk
        line, _, rest = bytes(self._buf).partition(b"\n")
        self._buf = bytearray(rest)
        return json.loads(line)

    def stop(self) -> None:
        """Stop the server (see :func:`stop_server`); one not yet ready is killed at once: it ran no job, and would
        otherwise finish its preloads first."""
        stop_server(self.proc, self.owner_pid, self.cleanup, linger_s=1.0 if self.ready else 0.0)


def stop_server(
    proc: subprocess.Popen, owner_pid: int, cleanup: Callable[[], None] | None, linger_s: float = 1.0
) -> None:
    """Stop a server (only from the process that started it): close its stdin, kill it if it lingers (more than
    ``linger_s`` seconds), clean up."""
    if os.getpid() != owner_pid:
        return
    for stream in (proc.stdin, proc.stdout):
        try:
            if stream is not None:
                stream.close()
        except OSError:
            pass
    try:
        proc.wait(timeout=linger_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        try:
            proc.wait(timeout=5.0)
        except subprocess.TimeoutExpired:
            pass
    if proc.stderr is not None:
        try:
            proc.stderr.close()
        except OSError:
            pass
    if cleanup is not None:
        cleanup()


def failure(reason: str, message: str, duration: float = 0.0) -> ExecResult:
    """A result for a job the sandbox could not run to completion for a reason of its own."""
    return ExecResult(stdout="", stderr=message, exit_code=-1, timed_out=False, duration_s=duration, reason=reason)


class ServerSandbox:
    """Base of the sandboxes that run jobs in forked children of a long-lived job server (``server/``).

    Subclasses implement :meth:`_start_server` (launch and handshake) and :attr:`cache_salt`.

    :param preload: modules the server imports once so that jobs importing them start fast
        (e.g. ``("pandas",)``); a module that fails to import is skipped with a warning
    :param max_output_bytes: cap of each of stdout and stderr; a job writing more is killed
        (``reason="output_limit"``) and its output truncated
    :param max_processes: RLIMIT_NPROC of a job (processes and threads)
    :param cache: reuse results of identical completed jobs: ``True`` or ``"disk"`` for the process-wide
        memory + disk cache, ``"memory"`` for the process-wide memory-only one, a :class:`ResultCache`, or
        ``False`` (see :func:`~harness_gym.sandbox.cache.resolve_cache`)
    :param job_uid: uid and gid the jobs run as (default: one unused uid per sandbox, so that the per-uid
        process limit of one sandbox's jobs never starves another's)
    :param recycle_after: restart the server after this many jobs (None: never)
    """

    def __init__(
        self,
        preload: tuple[str, ...] | list[str] = (),
        max_output_bytes: int = 64 * 1024,
        max_processes: int = 64,
        cache: bool | str | ResultCache = False,
        job_uid: int | None = None,
        recycle_after: int | None = None,
    ) -> None:
        self.preload = tuple(preload)
        self.max_output_bytes = int(max_output_bytes)
        self.max_processes = int(max_processes)
        self.cache: ResultCache | None = resolve_cache(cache)
        self.recycle_after = recycle_after
        self._auto_uid = job_uid is None
        self.job_uid = next_job_uid() if job_uid is None else int(job_uid)
        self._server: ServerProcess | None = None
        self._finalizer: weakref.finalize | None = None
        self._lock = threading.Lock()
        self._jobs_on_server = 0
        self.unclean_restarts = 0
        """Servers replaced because a job left what their clean-up could not remove (each next job got a fresh
        server: no job runs after another's leftovers)."""

    @property
    def cache_salt(self) -> str:
        """What, besides the job, a result depends on (see :func:`harness_gym.sandbox.cache.cache_key`): the
        backend, the isolation in force, the output and process limits and the preloads; read it through
        :meth:`salt_in_force`, which starts the server first."""
        raise NotImplementedError

    @property
    def preload_salt(self) -> str:
        """The preloaded modules as a part of :attr:`cache_salt` (a job can see which modules are loaded)."""
        return "preload=" + json.dumps(list(self.preload), separators=(",", ":"))

    def _start_server(self) -> ServerProcess | str:
        """Launch a server and wait for its first line (:meth:`ServerProcess.handshake`), not for its preloads;
        an error text when it cannot start."""
        raise NotImplementedError

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.update(_server=None, _finalizer=None, _lock=None, _jobs_on_server=0)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()
        if self._auto_uid:
            self.job_uid = next_job_uid()

    def __enter__(self) -> ServerSandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def run(
        self,
        code: str,
        *,
        files: dict[str, str] | None = None,
        stdin: str = "",
        timeout_s: float = 5.0,
        memory_mb: int = 512,
    ) -> ExecResult:
        """Run ``code`` as ``__main__`` in a fresh private work dir holding ``files``.

        :param code: Python source
        :param files: relative path -> text, written into the work dir before the code runs
        :param stdin: the job's standard input
        :param timeout_s: wall-clock limit; the job and everything it started are killed after it
        :param memory_mb: address-space limit on top of the server's own size
        :return: the result; failures of the code or of the sandbox are results, never exceptions
        :raises TypeError, ValueError: for arguments of the wrong type or file names outside the work dir
        """
        if not isinstance(code, str):
            raise TypeError(f"code must be str, not {type(code).__name__}")
        if files is not None and not all(isinstance(k, str) and isinstance(v, str) for k, v in files.items()):
            raise TypeError("files must map str paths to str contents")
        for name in files or ():
            safe_join("/", name)
        salt = self.salt_in_force() if self.cache is not None else None
        if self.cache is not None and salt is not None:
            return cached_run(self.cache, salt, self._run, code, files, stdin, timeout_s, memory_mb,
                              salt_after=lambda: self.cache_salt)
        return self._run(code, files=files, stdin=stdin, timeout_s=timeout_s, memory_mb=memory_mb)

    def salt_in_force(self) -> str | None:
        """:attr:`cache_salt` of the server that runs the next job, started now if needed, so that a cached
        result is keyed by the isolation in force, never the one requested; ``None`` when no server starts.

        :raises IsolationError: (:class:`~harness_gym.sandbox.process.IsolationError`) when only a weaker
            isolation than required would start: checked before any cache read
        """
        server = self._server
        if server is not None and server.proc.returncode is None and server.owner_pid == os.getpid():
            return self.cache_salt  # started (a death is noticed by the run; cached_run then keys nothing)
        with self._lock:
            server = self._ensure_server()
        return None if isinstance(server, str) else self.cache_salt

    def _run(
        self, code: str, *, files: dict[str, str] | None, stdin: str, timeout_s: float, memory_mb: int
    ) -> ExecResult:
        req = {"code": code, "files": files or {}, "stdin": stdin, "timeout_s": float(timeout_s),
               "memory_mb": int(memory_mb)}  # fmt: skip
        start = time.monotonic()
        with self._lock:
            server = self._ensure_server()
            if isinstance(server, str):
                return failure("sandbox_error", f"sandbox server could not start: {server}")
            err = self._await_ready(server)
            if err:
                self._drop_server()
                return failure("sandbox_error", f"sandbox server failed while preloading: {err}",
                               time.monotonic() - start)
            try:
                resp = server.request(req, float(timeout_s) + REPLY_GRACE_S)
            except (EOFError, OSError, TimeoutError, ValueError) as exc:
                self._drop_server()
                detail = server.stderr_tail.decode("utf-8", "replace").strip()
                message = f"sandbox server failed: {exc}" + (f"\n{detail}" if detail else "")
                return failure("sandbox_error", message, time.monotonic() - start)
            self._jobs_on_server += 1
            if resp.get("unclean"):
                # The job left what the server could not remove (it has ended): the next job gets a fresh one.
                self.unclean_restarts += 1
                self._drop_server()
            elif self.recycle_after is not None and self._jobs_on_server >= self.recycle_after:
                self._drop_server()
        if "error" in resp:
            return failure("sandbox_error", str(resp["error"]), time.monotonic() - start)
        return ExecResult(
            stdout=resp["stdout"],
            stderr=resp["stderr"],
            exit_code=int(resp["exit_code"]),
            timed_out=bool(resp["timed_out"]),
            duration_s=float(resp["duration_s"]),
            reason=str(resp["reason"]),
        )

    def start(self) -> None:
        """Start the server now (it otherwise starts on the first job); returns once it runs in its isolation,
        without waiting for its preloads (the first job does).

        :raises RuntimeError: when it cannot start
        """
        with self._lock:
            server = self._ensure_server()
        if isinstance(server, str):
            raise RuntimeError(f"sandbox server could not start: {server}")

    def _await_ready(self, server: ServerProcess) -> str:
        """Wait for ``server``'s ready line (it was started without waiting for its preloads); warn once about
        modules it could not preload. An error text when it died or timed out meanwhile."""
        if server.ready:
            return ""
        err = server.wait_ready()
        if not err and server.info.get("preload_errors"):
            failed = server.info["preload_errors"]
            warnings.warn(f"{type(self).__name__} could not preload {failed}", RuntimeWarning, stacklevel=4)
        return err

    @property
    def server_pid(self) -> int | None:
        """The host pid of the launcher process (bwrap, unshare, docker or the server itself), if running."""
        return self._server.proc.pid if self._server is not None and self._server.alive() else None

    def _ensure_server(self) -> ServerProcess | str:
        """The live server, started if needed; an error text when it cannot start."""
        if self._server is not None and self._server.alive():
            return self._server
        self._drop_server()
        server = self._start_server()
        if isinstance(server, str):
            return server
        self._server = server
        self._jobs_on_server = 0
        self._finalizer = weakref.finalize(self, server.stop)
        return server

    def _drop_server(self) -> None:
        if self._finalizer is not None:
            self._finalizer()
        elif self._server is not None:
            self._server.stop()
        self._server = None
        self._finalizer = None

    def close(self) -> None:
        """Stop the server. Idempotent; the next job would start a new one."""
        lock = self._lock
        if lock is None:
            return
        with lock:
            self._drop_server()
