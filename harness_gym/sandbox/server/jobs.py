"""One job of the server: its child, forked and set up before its request comes (:class:`_Standby`,
:func:`_job_child`), and its supervision (:func:`_supervise`): output, deadline, the response; a part of the
server program (``harness_gym/sandbox/server/__init__.py``).
"""

from __future__ import annotations

import atexit
import builtins
import io
import json
import os
import resource
import select
import signal
import sys
import time

from harness_gym.sandbox.server.cleanup import _empty_dir, _kill_everything, _remove_tree, _Slate
from harness_gym.sandbox.server.config import _Config, _job_module
from harness_gym.sandbox.server.kernel import _PR_SET_NO_NEW_PRIVS, _libc_call, block_user_namespaces

_CHUNK = 65536
_DRAIN_S = 0.2
_STATUS_MEMORY = b"M"
_STATUS_SETUP_FAILED = b"S"
_GO = b"G"
_PAGE_SIZE = resource.getpagesize()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def safe_join(root: str, name: str) -> str:
    """The path of ``name`` inside ``root``; refuses absolute names and ``..``."""
    norm = os.path.normpath(name)
    if os.path.isabs(norm) or norm == ".." or norm.startswith(".." + os.sep) or norm in ("", "."):
        raise ValueError(f"file name {name!r} is not a relative path inside the work dir")
    return os.path.join(root, norm)


def _job_child(cfg: _Config, workdir: str, fds: dict[str, int], as_root: bool) -> None:
    """Runs in the forked child: limit and isolate itself, wait for its request (:class:`_Standby`; it waits
    filtered and limited, the two descriptors of the request closed before the job's code runs), then take the
    jobs' uid, limit what depends on the request and execute the code. Never returns."""
    code = 1
    linecache, tempfile, traceback = map(_job_module, ("linecache", "tempfile", "traceback"))
    try:
        os.setsid()
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.dup2(fds["stdin"], 0)
        os.dup2(fds["out"], 1)
        os.dup2(fds["err"], 2)
        os.dup2(fds["status"], 3, inheritable=False)
        request_fd, go_fd = fds["request"], fds["go"]
        low, high = sorted((request_fd, go_fd))
        os.closerange(4, low)
        os.closerange(low + 1, high)
        os.closerange(high + 1, 1 << 20)
        resource.setrlimit(resource.RLIMIT_NOFILE, (cfg.nofile, cfg.nofile))
        resource.setrlimit(resource.RLIMIT_NPROC, (cfg.nproc, cfg.nproc))
        fsize = cfg.fsize_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        _libc_call("prctl", _PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        if cfg.block_userns:
            block_user_namespaces()
        os.chdir(workdir)
        tempfile.tempdir = None
        sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
        sys.stdout = io.TextIOWrapper(
            io.FileIO(1, "w", closefd=False), encoding="utf-8", errors="backslashreplace"
        )
        sys.stderr = io.TextIOWrapper(
            io.FileIO(2, "w", closefd=False), encoding="utf-8", errors="backslashreplace", line_buffering=True
        )
        sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr
        sys.argv = ["main.py"]
        sys.dont_write_bytecode = True
        sys.path.insert(0, workdir)
        if os.read(go_fd, 1) != _GO:
            os._exit(0)  # the server went away, or dropped this child unused
        req = json.loads(os.pread(request_fd, os.fstat(request_fd).st_size, 0))
        os.close(request_fd)
        os.close(go_fd)
        if as_root:  # only now: no process of the jobs' uid exists between jobs
            os.setgroups([])
            os.setgid(cfg.job_gid)
            os.setuid(cfg.job_uid)
        cpu = int(float(req.get("timeout_s", 5.0))) + 2
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        statm = os.open("/proc/self/statm", os.O_RDONLY | os.O_CLOEXEC)
        try:
            vm_now = int(os.read(statm, 256).split()[0]) * _PAGE_SIZE
        finally:
            os.close(statm)
        mem = vm_now + int(req.get("memory_mb", 512)) * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        for name, text in (req.get("files") or {}).items():
            path = safe_join(workdir, name)
            try:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w", encoding="utf-8") as fh:
                    fh.write(text)
            except OSError as exc:
                raise OSError(exc.errno, f"cannot write the job's file {name!r}: {exc.strerror}") from None
        source = req.get("code", "")
        linecache.cache["main.py"] = (len(source), None, source.splitlines(True), "main.py")
        glb = {"__name__": "__main__", "__file__": os.path.join(workdir, "main.py"), "__builtins__": builtins}
    except BaseException:
        try:
            os.write(3, _STATUS_SETUP_FAILED)  # the job's code never ran: a sandbox error, never a result
            os.write(2, ("sandbox setup failed:\n" + traceback.format_exc()).encode("utf-8", "replace"))
        finally:
            os._exit(70)
    try:
        try:
            exec(compile(source, "main.py", "exec"), glb)
            code = 0
        finally:
            threading = sys.modules.get("threading")  # as at interpreter exit: only if the job imported it
            try:
                if threading is not None:
                    threading._shutdown()
            except BaseException:
                pass
            atexit._run_exitfuncs()
    except SystemExit as exc:
        code = _exit_code(exc)
    except BaseException as exc:
        if isinstance(exc, MemoryError):
            try:
                os.write(3, _STATUS_MEMORY)
            except OSError:
                pass
        tb = exc.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename != "main.py":
            tb = tb.tb_next
        try:
            traceback.print_exception(type(exc), exc, tb)
        except BaseException:
            pass
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass
    os._exit(code)


def _exit_code(exc: SystemExit) -> int:
    """The process exit code Python gives a ``SystemExit`` (printing a non-int argument to stderr)."""
    arg = exc.code
    if arg is None:
        return 0
    if isinstance(arg, int):
        return arg & 0xFF
    try:
        print(arg, file=sys.stderr)
    except BaseException:
        pass
    return 1


def _supervise(
    cfg: _Config, pid: int, pidfd: int, start: float, timeout: float, out_r: int, err_r: int, st_r: int
) -> dict:
    """Collect output until the job exits (``pidfd`` readable), times out or floods; kill its leftovers; build the
    response."""
    bufs = {out_r: bytearray(), err_r: bytearray(), st_r: bytearray()}
    open_fds = {out_r, err_r, st_r}
    poller = select.poll()
    for fd in open_fds:
        poller.register(fd, select.POLLIN)
    poller.register(pidfd, select.POLLIN)
    reason = ""
    deadline = start + timeout

    def read_ready(wait_ms: int) -> bool:
        """Poll once; returns True when the job process has exited."""
        nonlocal reason
        exited = False
        for fd, _ in poller.poll(wait_ms):
            if fd == pidfd:
                exited = True
                continue
            chunk = os.read(fd, _CHUNK)
            if not chunk:
                poller.unregister(fd)
                open_fds.discard(fd)
                continue
            buf = bufs[fd]
            room = cfg.max_output - len(buf)
            buf += chunk[: max(room, 0)]
            if len(chunk) > room and fd != st_r and not reason:
                reason = "output_limit"
        return exited

    while True:
        now = time.monotonic()
        if now >= deadline:
            reason = reason or "timeout"
            break
        exited = read_ready(max(1, int((deadline - now) * 1000) + 1))
        if reason or exited:
            break
    if reason:
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
    _, status, usage = os.wait4(pid, 0)
    duration = time.monotonic() - start
    _kill_everything(pid)
    drain_end = time.monotonic() + _DRAIN_S
    while open_fds and time.monotonic() < drain_end:
        read_ready(int(_DRAIN_S * 1000))
    exit_code = os.waitstatus_to_exitcode(status)
    if not reason or bytes(bufs[st_r][:1]) == _STATUS_SETUP_FAILED:
        if bytes(bufs[st_r][:1]) == _STATUS_SETUP_FAILED:
            reason = "sandbox_error"
        elif bytes(bufs[st_r][:1]) == _STATUS_MEMORY:
            reason = "memory"
        elif exit_code == -signal.SIGXCPU or (exit_code == -signal.SIGKILL and _cpu_exhausted(usage, timeout)):
            reason = "timeout"
        elif exit_code < 0:
            reason = "killed"
    return {
        "stdout": bufs[out_r].decode("utf-8", "replace"),
        "stderr": bufs[err_r].decode("utf-8", "replace"),
        "exit_code": exit_code,
        "timed_out": reason == "timeout",
        "duration_s": duration,
        "reason": reason,
    }


def _cpu_exhausted(usage: resource.struct_rusage | None, timeout: float) -> bool:
    """Whether the job used its whole CPU rlimit (past the soft limit the kernel sends SIGKILL).

    :param usage: the job's rusage from ``wait4``
    :param timeout: the job's wall-clock timeout, from which its CPU limit was set
    """
    if usage is None:
        return False
    return usage.ru_utime + usage.ru_stime >= int(timeout) + 1


class _Standby:
    """The next job's child, forked and set up (:func:`_job_child`) in a fresh work dir before its request comes,
    which reaches it as a line in a memfd and one byte on a pipe it waits on (closed unused: it exits). Made only
    once the previous job's processes are killed and its files removed: it sees nothing of that job."""

    def __init__(self, cfg: _Config, as_root: bool, slate: _Slate) -> None:
        self.slate = slate
        self.left: list[str] = []
        """What :meth:`close` could not remove (the job's work dir, entries of the scrubbed directories)."""
        self.workdir = _job_module("tempfile").mkdtemp(prefix="job-", dir=cfg.work_root)
        opened: list[int] = []  # closed, and the work dir removed, if the set-up fails: nothing is left behind
        self.pid = 0
        try:
            if as_root:
                os.chown(self.workdir, cfg.job_uid, cfg.job_gid)
            self.stdin_fd = os.memfd_create("stdin", os.MFD_CLOEXEC)
            opened.append(self.stdin_fd)
            self.request_fd = os.memfd_create("request", os.MFD_CLOEXEC)
            opened.append(self.request_fd)
            go_r, self.go_w = os.pipe()
            opened += (go_r, self.go_w)
            self.out_r, out_w = os.pipe()
            opened += (self.out_r, out_w)
            self.err_r, err_w = os.pipe()
            opened += (self.err_r, err_w)
            self.st_r, st_w = os.pipe()
            opened += (self.st_r, st_w)
            fds = {"stdin": self.stdin_fd, "out": out_w, "err": err_w, "status": st_w, "request": self.request_fd,
                   "go": go_r}  # fmt: skip
            # Set here, where the server's pages are its own, not in the child, where each written page is copied.
            os.environ.update(HOME=self.workdir, TMPDIR=self.workdir, PWD=self.workdir)
            self.pid = os.fork()
            if self.pid == 0:
                _job_child(cfg, self.workdir, fds, as_root)
            for fd in (out_w, err_w, st_w, go_r):
                os.close(fd)
                opened.remove(fd)
            self.pidfd = os.pidfd_open(self.pid)
        except BaseException:
            if self.pid:
                _kill_everything(self.pid)
            for fd in opened:
                os.close(fd)
            _remove_tree(self.workdir)
            raise
        self.reaped = False

    def run(self, cfg: _Config, line: bytes, stdin: bytes, timeout: float, start: float, as_root: bool) -> dict:
        """Hand the child its request (``line``, whose ``stdin`` and ``timeout`` the caller read and which came at
        ``start``, the start of its wall-clock time), supervise it, kill what it leaves running and remove what
        it leaves behind; returns the response dict."""
        try:
            _write_all(self.stdin_fd, stdin)
            os.lseek(self.stdin_fd, 0, os.SEEK_SET)
            _write_all(self.request_fd, line)
            try:
                os.write(self.go_w, _GO)
            except OSError:
                pass  # the child is gone already (its setup failed): the supervision reports it
            resp = _supervise(cfg, self.pid, self.pidfd, start, timeout, self.out_r, self.err_r, self.st_r)
            self.reaped = True
            return resp
        finally:
            self.close(cfg, as_root)

    def gone(self) -> bool:
        """Whether the child has exited before its request (killed, or its setup failed)."""
        poller = select.poll()
        poller.register(self.pidfd, select.POLLIN)
        return bool(poller.poll(0))

    def close(self, cfg: _Config, as_root: bool) -> None:
        """Kill the child unless its job was supervised to the end, close the server's descriptors and remove
        what the job left in its work dir and the scrubbed directories (:attr:`left` says what stayed)."""
        if not self.reaped:
            _kill_everything(self.pid)
        for fd in (self.pidfd, self.go_w, self.request_fd, self.stdin_fd, self.out_r, self.err_r, self.st_r):
            os.close(fd)
        left = [] if _remove_tree(self.workdir) else [self.workdir]
        for shared in cfg.scrub:
            left += [os.path.join(shared, name) for name in _empty_dir(shared, keep=self.slate.keep(shared))]
        if as_root:
            for shared in cfg.scrub_owned:
                left += [os.path.join(shared, name) for name in _empty_dir(shared, owner=cfg.job_uid)]
        self.left = left

    def unclean(self) -> str:
        """Why the next job would not find a clean slate after this one ("" when it would)."""
        if self.left:
            return f"could not remove {len(self.left)} entries the job left ({self.left[:3]})"
        return self.slate.dirty()


def _new_standby(cfg: _Config, as_root: bool, slate: _Slate) -> _Standby | None:
    """The next job's child, or None when it cannot be made now (the next request tries again and answers why)
    or the server is not root: its jobs share its uid, so a child waiting between jobs would be a process of the
    jobs' uid outliving the job (a non-root server forks when the request comes)."""
    if not as_root:
        return None
    try:
        return _Standby(cfg, as_root, slate)
    except Exception:
        return None
