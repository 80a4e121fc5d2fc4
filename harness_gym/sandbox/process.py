"""ProcessSandbox: the embedded default sandbox (DESIGN §6).

One long-lived server process (``server.py``) is started lazily per sandbox and forks a child per job,
so a job costs a fork rather than an interpreter start. The server is launched, best first:

``"bwrap"``
    bubblewrap with new PID, network, IPC, UTS and cgroup namespaces and a minimal read-only root: ``/usr``,
    the Python installation (``sys.prefix``, ``sys.base_prefix``, site-packages), a few files of ``/etc``,
    a fresh ``/proc``, ``/dev`` and a size-limited private ``/tmp``. Nothing of ``/root``, ``/home`` or
    ``/work`` is visible. As root no user namespace is made (the kernel never enforces ``RLIMIT_NPROC``
    for uid 0, which a user namespace would map the job to); the server keeps only CAP_SETUID,
    CAP_SETGID, CAP_KILL, CAP_CHOWN and CAP_DAC_OVERRIDE, runs as PID 1 of its namespace (jobs cannot
    signal it) and every job runs as an unprivileged uid (one per sandbox) with no capabilities and ``no_new_privs``.
``"unshare"``
    util-linux ``unshare`` (root only): new PID, network, IPC, UTS and mount namespaces with a fresh
    ``/proc``. The host file system stays visible (to the jobs' uid, as its permissions say), except that a
    directory on the way to the Python installation that others cannot enter (e.g. ``/root``) is covered
    with an empty tmpfs and the installation bind-mounted back read-only.
``"none"``
    a plain process, still dropping jobs to an unprivileged uid when root. A warning is issued once per process.

``isolation="auto"`` takes the first that starts. Per-job limits are set by the server (see its
docstring): wall-clock timeout, CPU time, address space (``memory_mb`` on top of the server's own
size, which includes the ``preload`` modules), processes, open files, file size, output size.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import site
import subprocess
import sys
import tempfile
import threading
import time
import warnings
import weakref
from pathlib import Path
from typing import Any, Sequence

from harness_gym.core.types import ExecResult
from harness_gym.sandbox.cache import ResultCache, cached_run, default_cache
from harness_gym.sandbox.server import blocked_ancestor, safe_join

ISOLATIONS: tuple[str, ...] = ("bwrap", "unshare", "none")
_SERVER_SOURCE = Path(__file__).with_name("server.py")
_START_TIMEOUT_S = 60.0
_REPLY_GRACE_S = 10.0
_TMP_SIZE = 256 * 1024 * 1024
_ETC_FILES = (
    "/etc/alternatives", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime",
    "/etc/nsswitch.conf", "/etc/passwd", "/etc/group", "/etc/hosts", "/etc/mime.types", "/etc/ssl/certs",
)  # fmt: skip
_JOB_ENV = {
    "LANG": "C.UTF-8",
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "NUMEXPR_NUM_THREADS": "1",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONIOENCODING": "utf-8",
}

_failed_isolations: set[str] = set()
_warned_reduced = False
_warn_lock = threading.Lock()


_JOB_UID_BASE = 300000
_JOB_UID_SPAN = 100000
_uid_counter = 0


def _next_job_uid() -> int:
    """A uid for a new sandbox's jobs, distinct per sandbox and per client process (no passwd entry)."""
    global _uid_counter
    with _warn_lock:
        _uid_counter += 1
        return _JOB_UID_BASE + (os.getpid() * 97 + _uid_counter) % _JOB_UID_SPAN


def _server_source() -> str:
    return _SERVER_SOURCE.read_text(encoding="utf-8")


def _python_paths() -> list[str]:
    """Directories the job's interpreter must read: the installation and its site-packages."""
    exe_dir = os.path.dirname(os.path.realpath(sys.executable))
    cands = [sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix, exe_dir]
    cands += site.getsitepackages()
    out: list[str] = []
    for path in sorted({os.path.realpath(p) for p in cands if p and os.path.isdir(p)}, key=len):
        if path.startswith("/usr/") or path == "/usr":
            continue
        if any(path == o or path.startswith(o + "/") for o in out):
            continue
        out.append(path)
    return out


def _bwrap_command(server_argv: list[str], as_root: bool) -> list[str]:
    """The bubblewrap command line that runs ``server_argv`` in the sandbox."""
    cmd = ["bwrap", "--die-with-parent", "--new-session", "--as-pid-1", "--unshare-pid", "--unshare-net",
           "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--hostname", "sandbox"]  # fmt: skip
    if as_root:
        cmd += ["--cap-drop", "ALL"]
        for cap in ("CAP_SETUID", "CAP_SETGID", "CAP_KILL", "CAP_CHOWN", "CAP_DAC_OVERRIDE"):
            cmd += ["--cap-add", cap]
    else:
        cmd += ["--unshare-user"]
    cmd += ["--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32"):
        if os.path.islink(top):
            cmd += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            cmd += ["--ro-bind", top, top]
    made: set[str] = {"/", "/usr", "/tmp", "/proc", "/dev"}
    for path in [p for p in _ETC_FILES if os.path.exists(p)] + _python_paths():
        parents = Path(path).parents
        for parent in reversed(parents):
            par = str(parent)
            if par not in made:
                made.add(par)
                cmd += ["--perms", "0755", "--dir", par]
        cmd += ["--ro-bind", path, path]
        made.add(path)
    cmd += ["--proc", "/proc", "--dev", "/dev", "--size", str(_TMP_SIZE), "--perms", "0755", "--tmpfs", "/tmp"]
    cmd += ["--chdir", "/tmp", "--clearenv"]
    for key, value in _server_env().items():
        cmd += ["--setenv", key, value]
    return cmd + ["--"] + server_argv


def _server_env() -> dict[str, str]:
    """The server's whole environment: nothing of the caller's (no secrets) but a PATH."""
    exe_dir = os.path.dirname(sys.executable)
    return {"PATH": f"{exe_dir}:/usr/local/bin:/usr/bin:/bin", **_JOB_ENV}


def _user_process_count() -> int:
    """How many processes the current uid runs (RLIMIT_NPROC counts them all)."""
    uid = os.getuid()
    count = 0
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if os.stat(f"/proc/{name}").st_uid == uid:
                    count += 1
            except OSError:
                continue
    return count


def _warn_reduced(why: str) -> None:
    global _warned_reduced
    with _warn_lock:
        if _warned_reduced:
            return
        _warned_reduced = True
    warnings.warn(
        f"ProcessSandbox runs without namespace isolation ({why}); jobs can see the host file system and "
        "network. Install bubblewrap (apt-get install bubblewrap) for full isolation.",
        RuntimeWarning,
        stacklevel=5,
    )


class _Server:
    """A running server process and its protocol pipes."""

    def __init__(self, argv: list[str], env: dict[str, str] | None, cwd: str | None, work_root: str | None) -> None:
        self.owner_pid = os.getpid()
        self.work_root = work_root
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

    def handshake(self) -> str:
        """Wait for the ready line; returns an error text ("" when ready)."""
        try:
            msg = self.read_line(_START_TIMEOUT_S)
        except (EOFError, TimeoutError) as exc:
            err = b""
            if self.proc.poll() is not None and self.proc.stderr is not None:
                err = self.proc.stderr.read()
            self.stop()
            return f"{exc or type(exc).__name__}: {err.decode('utf-8', 'replace').strip()}"
        if not msg.get("ready"):
            self.stop()
            return f"unexpected server greeting {msg!r}"
        self.info = msg
        # The server's own stderr is only needed for start-up errors; keep it from filling up.
        threading.Thread(target=self._drain_stderr, daemon=True).start()
        return ""

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
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("sandbox server did not answer in time")
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                raise EOFError("sandbox server exited")
            self._buf += chunk
        line, _, rest = bytes(self._buf).partition(b"\n")
        self._buf = bytearray(rest)
        return json.loads(line)

    def stop(self) -> None:
        _stop_server(self.proc, self.owner_pid, self.work_root)


def _stop_server(proc: subprocess.Popen, owner_pid: int, work_root: str | None) -> None:
    """Stop a server (only from the process that started it) and remove its host work root."""
    if os.getpid() != owner_pid:
        return
    for stream in (proc.stdin, proc.stdout):
        try:
            if stream is not None:
                stream.close()
        except OSError:
            pass
    try:
        proc.wait(timeout=1.0)
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
    if work_root:
        shutil.rmtree(work_root, ignore_errors=True)


def _failure(reason: str, message: str, duration: float = 0.0) -> ExecResult:
    return ExecResult(stdout="", stderr=message, exit_code=-1, timed_out=False, duration_s=duration, reason=reason)


class ProcessSandbox:
    """Runs Python jobs in forked children of a pre-forked, namespaced server process.

    :param preload: modules the server imports once so that jobs importing them start fast
        (e.g. ``("pandas",)``); a module that fails to import is skipped
    :param isolation: ``"auto"`` (best available), ``"bwrap"``, ``"unshare"`` or ``"none"``
    :param max_output_bytes: cap of each of stdout and stderr; a job writing more is killed
        (``reason="output_limit"``) and its output truncated
    :param max_processes: RLIMIT_NPROC of a job (processes and threads)
    :param cache: reuse results of identical completed jobs: True for the process-wide cache, or a
        :class:`ResultCache`
    :param job_uid: uid and gid the jobs run as when the caller is root (default: one unused uid per
        sandbox, so that the per-uid process limit of one sandbox's jobs never starves another's)
    """

    def __init__(
        self,
        preload: Sequence[str] = (),
        isolation: str = "auto",
        max_output_bytes: int = 64 * 1024,
        max_processes: int = 64,
        cache: bool | ResultCache = False,
        job_uid: int | None = None,
    ) -> None:
        if isolation not in ("auto",) + ISOLATIONS:
            raise ValueError(f"isolation must be 'auto' or one of {ISOLATIONS}, not {isolation!r}")
        self.preload = tuple(preload)
        self.isolation = isolation
        self.max_output_bytes = int(max_output_bytes)
        self.max_processes = int(max_processes)
        self.cache: ResultCache | None = (
            cache if isinstance(cache, ResultCache) else (default_cache() if cache else None)
        )
        self._server: _Server | None = None
        self._finalizer: weakref.finalize | None = None
        self._lock = threading.Lock()
        self._auto_uid = job_uid is None
        self.job_uid = _next_job_uid() if job_uid is None else int(job_uid)
        self.active_isolation = ""
        """The isolation the running (or last) server got: one of ``ISOLATIONS``, "" before the first job."""

    @property
    def cache_salt(self) -> str:
        """What, besides the job, a result depends on (see :func:`harness_gym.sandbox.cache.cache_key`)."""
        return f"ProcessSandbox/{self.isolation}/{self.max_output_bytes}/{self.max_processes}"

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.update(_server=None, _finalizer=None, _lock=None, active_isolation="")
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()
        if self._auto_uid:
            self.job_uid = _next_job_uid()

    def __enter__(self) -> ProcessSandbox:
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
        if self.cache is not None:
            return cached_run(self.cache, self.cache_salt, self._run, code, files, stdin, timeout_s, memory_mb)
        return self._run(code, files=files, stdin=stdin, timeout_s=timeout_s, memory_mb=memory_mb)

    def _run(
        self, code: str, *, files: dict[str, str] | None, stdin: str, timeout_s: float, memory_mb: int
    ) -> ExecResult:
        req = {"code": code, "files": files or {}, "stdin": stdin, "timeout_s": float(timeout_s),
               "memory_mb": int(memory_mb)}  # fmt: skip
        start = time.monotonic()
        with self._lock:
            server = self._ensure_server()
            if isinstance(server, str):
                return _failure("sandbox_error", f"sandbox server could not start: {server}")
            try:
                resp = server.request(req, float(timeout_s) + _REPLY_GRACE_S)
            except (EOFError, OSError, TimeoutError, ValueError) as exc:
                self._drop_server()
                detail = server.stderr_tail.decode("utf-8", "replace").strip()
                message = f"sandbox server failed: {exc}" + (f"\n{detail}" if detail else "")
                return _failure("sandbox_error", message, time.monotonic() - start)
        if "error" in resp:
            return _failure("sandbox_error", str(resp["error"]), time.monotonic() - start)
        return ExecResult(
            stdout=resp["stdout"],
            stderr=resp["stderr"],
            exit_code=int(resp["exit_code"]),
            timed_out=bool(resp["timed_out"]),
            duration_s=float(resp["duration_s"]),
            reason=str(resp["reason"]),
        )

    def start(self) -> str:
        """Start the server now (it otherwise starts on the first job); returns the isolation used."""
        with self._lock:
            server = self._ensure_server()
        if isinstance(server, str):
            raise RuntimeError(f"sandbox server could not start: {server}")
        return self.active_isolation

    @property
    def server_pid(self) -> int | None:
        """The host pid of the launcher process (bwrap, unshare or the server itself), if running."""
        return self._server.proc.pid if self._server is not None and self._server.alive() else None

    def _ensure_server(self) -> _Server | str:
        """The live server, started if needed; an error text when no isolation mode starts."""
        if self._server is not None and self._server.alive():
            return self._server
        self._drop_server()
        modes = ISOLATIONS if self.isolation == "auto" else (self.isolation,)
        errors: list[str] = []
        for mode in modes:
            if self.isolation == "auto" and mode in _failed_isolations:
                continue
            why = self._unavailable(mode)
            if why:
                errors.append(f"{mode}: {why}")
                continue
            server = self._launch(mode)
            err = server.handshake()
            if err:
                errors.append(f"{mode}: {err}")
                if self.isolation == "auto":
                    _failed_isolations.add(mode)
                continue
            if mode == "none":
                why = "; ".join(errors) or "isolation='none'"
                if server.info.get("uid") == 0 and any(map(blocked_ancestor, _python_paths())):
                    why += "; the Python installation is not readable by the jobs' uid, so jobs can only import "
                    why += "modules the server preloaded"
                _warn_reduced(why)
            if server.info.get("preload_errors"):
                failed = server.info["preload_errors"]
                warnings.warn(f"ProcessSandbox could not preload {failed}", RuntimeWarning, stacklevel=3)
            self._server = server
            self.active_isolation = mode
            self._finalizer = weakref.finalize(self, _stop_server, server.proc, server.owner_pid, server.work_root)
            return server
        return "; ".join(errors) or "no isolation mode available"

    @staticmethod
    def _unavailable(mode: str) -> str:
        """Why ``mode`` cannot be used here ("" if it may)."""
        if mode == "bwrap" and shutil.which("bwrap") is None:
            return "bwrap not found"
        if mode == "unshare":
            if shutil.which("unshare") is None:
                return "unshare not found"
            if os.geteuid() != 0:
                return "needs root"
        return ""

    def _launch(self, mode: str) -> _Server:
        as_root = os.geteuid() == 0
        nproc = self.max_processes if as_root else self.max_processes + _user_process_count()
        config: dict[str, Any] = {
            "preload": list(self.preload),
            "max_output": self.max_output_bytes,
            "nproc": nproc,
            "job_uid": self.job_uid,
            "job_gid": self.job_uid,
            "env": _JOB_ENV,
        }
        work_root: str | None = None
        if mode == "bwrap":
            config.update(work_root="/tmp", lock_tmp=True)
        else:
            work_root = tempfile.mkdtemp(prefix="hg-sandbox-")
            os.chmod(work_root, 0o711)
            config["work_root"] = work_root
        if mode == "unshare":
            config["expose"] = _python_paths()
        argv = [sys.executable, "-I", "-c", _server_source(), json.dumps(config)]
        if mode == "bwrap":
            return _Server(_bwrap_command(argv, as_root), _server_env(), None, None)
        if mode == "unshare":
            argv = ["unshare", "--pid", "--net", "--ipc", "--uts", "--mount", "--fork", "--kill-child",
                    "--mount-proc", "--"] + argv  # fmt: skip
        return _Server(argv, _server_env(), work_root, work_root)

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
