"""The pre-forked job server of :class:`harness_gym.sandbox.process.ProcessSandbox`
(docs/harness_mdp.md, "Sandboxes").

This file is run as a program (``python -I -c <this source> <config json>``), usually inside bubblewrap,
so it imports only the standard library and nothing of ``harness_gym``. Once its mounts are set up it says so
(``{"started", "pid", "uid", "userns_blocked", "ipc_blocked"}``), preloads the configured modules once, says
``{"ready", "preload_errors"}``, then serves one JSON request per line on stdin and answers one JSON line on
stdout. Per job it forks a child that drops privileges and limits itself, then ``exec``s the job's code: no new
interpreter starts.
The child is forked and set up before its request comes (:class:`_Standby`), so a job waits only for what
depends on the request (its CPU and memory limits, files, code); its wall-clock time (its timeout and
``duration_s``) counts from the request.
What a forked child writes is copied page by page, which is most of a job's cost: the server does once what
every child would otherwise do (AST types, the seccomp program, the jobs' environment) and freezes its
objects (``gc.freeze``), so that no job's garbage collection walks them.

Request: ``{"code", "files", "stdin", "timeout_s", "memory_mb"}``.
Response: ``{"stdout", "stderr", "exit_code", "timed_out", "duration_s", "reason"}`` or ``{"error"}``, either with
``"unclean"`` when the server could not restore the clean slate after the job (it then exits).

Containment done here (namespaces and mounts are the launcher's job):

- the child installs a seccomp filter refusing new user namespaces (:func:`block_user_namespaces`; the
  handshake reports whether it works, ``userns_blocked``) and IPC (below);
- the child runs in its own session and process group, as uid/gid ``job_uid`` when the server is root
  (so that ``RLIMIT_NPROC`` is enforced: the kernel exempts uid 0 from it), with ``no_new_privs`` (setuid
  binaries give nothing); a server that is not root (in a container) makes itself non-dumpable, so that
  jobs of the same uid can neither ptrace it nor open its ``/proc`` files;
- rlimits: CPU (timeout + 1 s), address space (the server's own size + ``memory_mb``), open files,
  processes, file size, no core dumps;
- a private work dir (cwd, ``HOME``, ``TMPDIR``, first on ``sys.path``) removed after the job, the ``scrub``
  directories (a private ``/dev/shm`` and ``/tmp``; the container's ``/tmp``) emptied after it but for what they
  held before the first job, and in the ``scrub_owned`` directories (the host's ``/tmp``, ``/var/tmp`` and
  ``/dev/shm`` without isolation) every entry the job's uid owns removed after it (a root server only: its jobs'
  uid is theirs alone); the removal never recurses (:func:`_clear_dir`), so no depth defeats it. Then the work
  root and the ``scrub`` directories must be as before the first job (:class:`_Slate`: names, and on private
  mounts free blocks and inodes); where they are not, the response says why (``"unclean"``) and the server
  ends, so that the next job runs on a fresh one;
- the launcher's ``/tmp`` and ``/dev/shm`` get an inode limit (``remount_inodes``, with CAP_SYS_ADMIN that the
  server then drops: ``drop_sys_admin``; the handshake reports ``inode_limit``), as the ``cover`` mounts of the
  ``unshare`` launcher do;
- a job whose set-up fails before its code runs says so on the status pipe: ``reason="sandbox_error"``;
- the seccomp filter also refuses every System V IPC call (shared memory, message queues, semaphores) and
  every POSIX message-queue call (the handshake reports whether it works, ``ipc_blocked``): such objects would
  outlive the job in the namespace every job of the server shares, outside its memory limit; POSIX shared
  memory and semaphores are files of ``/dev/shm``, emptied as above;
- a scrubbed environment, stdin from a memfd, stdout/stderr to pipes, every other descriptor closed;
- a wall-clock deadline after which the job's process group (and, as PID 1 of a PID namespace, every
  other process in it) is SIGKILLed; output over ``max_output`` bytes on a stream kills the job too.
"""

from __future__ import annotations

import atexit
import builtins
import ctypes
import errno
import gc
import io
import json
import os
import resource
import select
import signal
import sys
import time
import types

_CHUNK = 65536
_DRAIN_S = 0.2
_REAP_S = 2.0
_STATUS_MEMORY = b"M"
_STATUS_SETUP_FAILED = b"S"
_GO = b"G"
_JOB_ENV_KEEP = ("PATH", "LANG", "LC_ALL", "TZ")
_PR_SET_DUMPABLE = 4
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
_LIBC = ctypes.CDLL(None, use_errno=True)
_PAGE_SIZE = resource.getpagesize()
_LIBC.prctl  # resolved here once (CDLL caches it), not in every job's child


class _Config:
    """Server settings, from the JSON given as the first argument."""

    def __init__(self, raw: dict) -> None:
        self.preload: list[str] = list(raw.get("preload", []))
        self.work_root: str = raw.get("work_root") or _job_module("tempfile").gettempdir()
        self.job_uid: int = int(raw.get("job_uid", 65534))
        self.job_gid: int = int(raw.get("job_gid", 65534))
        self.max_output: int = int(raw.get("max_output", 65536))
        self.nproc: int = int(raw.get("nproc", 64))
        self.nofile: int = int(raw.get("nofile", 256))
        self.fsize_mb: int = int(raw.get("fsize_mb", 64))
        self.lock_tmp: bool = bool(raw.get("lock_tmp", False))
        self.env: dict[str, str] = dict(raw.get("env", {}))
        self.expose: list[str] = list(raw.get("expose", []))
        self.cover: dict[str, int] = {str(k): int(v) for k, v in raw.get("cover", {}).items()}
        self.hide: list[str] = list(raw.get("hide", []))
        self.scrub: list[str] = list(raw.get("scrub", []))
        self.scrub_owned: list[str] = list(raw.get("scrub_owned", []))
        self.block_userns: bool = bool(raw.get("block_userns", True))
        self.inodes: int = int(raw.get("inodes", 16384))
        self.remount_inodes: dict[str, int] = {str(k): int(v) for k, v in raw.get("remount_inodes", {}).items()}
        self.drop_sys_admin: bool = bool(raw.get("drop_sys_admin", False))
        self.private_scratch: bool = bool(raw.get("private_scratch", True))


def _set_subreaper() -> None:
    """Make orphaned job processes children of the server (already so when it is PID 1)."""
    if os.getpid() == 1:
        return
    try:
        _LIBC.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except Exception:
        pass


def _libc_call(name: str, *args: object) -> None:
    """Call a libc function that returns -1 and sets errno on failure."""
    if getattr(_LIBC, name)(*args) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{name}{args!r}: {os.strerror(err)}")


def blocked_ancestor(path: str) -> str | None:
    """The top-most directory on the way to ``path`` that others cannot traverse (None if all can)."""
    parts = path.strip("/").split("/")
    for i in range(1, len(parts) + 1):
        cand = "/" + "/".join(parts[:i])
        if not os.stat(cand).st_mode & 0o001:
            return cand
    return None


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None) -> None:
    enc = (lambda v: None if v is None else v.encode())
    _libc_call("mount", enc(source), enc(target), enc(fstype), flags, enc(data))


_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = 1, 2, 4, 32, 4096, 16384, 1 << 18


def setup_mounts(expose: list[str], cover: dict[str, int], hide: list[str], inodes: int = 16384) -> None:
    """Shape the file system of a private mount namespace (root only; the ``unshare`` launcher).

    Every top-most directory on the way to an ``expose`` path that others cannot traverse (e.g. ``/root``,
    mode 700), and every ``cover`` directory, is covered with an empty tmpfs (a ``cover`` one limited to its
    size in bytes, sticky and writable by all); the ``expose`` paths are then bind-mounted back read-only
    (from descriptors opened before they were covered, so they may lie under a covered directory) and each
    existing ``hide`` path is covered with an empty read-only tmpfs. Only ``/dev/shm`` is writable by all
    (the server empties it after every job).

    :param expose: directories (the Python installation) the jobs must be able to read
    :param cover: directory -> tmpfs size in bytes (``/tmp``, ``/var/tmp``, ``/dev/shm``, ``/run``)
    :param hide: files or directories the jobs must not see (the package's data)
    :param inodes: the most inodes (files, folders, links) each ``cover`` tmpfs holds: a tmpfs counts neither
        against its size, and each costs the kernel about a kilobyte outside every job's memory limit
    """
    _mount(None, "/", None, _MS_REC | _MS_PRIVATE, None)
    blocked = {b for b in map(blocked_ancestor, expose) if b is not None}
    todo = [p for p in expose if blocked_ancestor(p) is not None
            or any(p == c or p.startswith(c.rstrip("/") + "/") for c in cover)]
    held = [os.open(p, os.O_PATH | os.O_DIRECTORY) for p in todo]
    try:
        for top in sorted(blocked, key=len):
            if not any(top.startswith(o + "/") for o in blocked if o != top):
                _mount("tmpfs", top, "tmpfs", _MS_NOSUID | _MS_NODEV, "mode=755")
        for top, size in sorted(cover.items()):
            if os.path.isdir(top):
                mode = "1777" if top == "/dev/shm" else "755"
                _mount("tmpfs", top, "tmpfs", _MS_NOSUID | _MS_NODEV, f"mode={mode},size={size},nr_inodes={inodes}")
        for path, fd in zip(todo, held):
            os.makedirs(path, mode=0o755, exist_ok=True)
            _mount(f"/proc/self/fd/{fd}", path, None, _MS_BIND | _MS_REC, None)
            _mount(None, path, None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY | _MS_NOSUID, None)
    finally:
        for fd in held:
            os.close(fd)
    for path in hide:
        if any(path.startswith(h.rstrip("/") + "/") for h in hide if h != path):
            continue  # inside another hidden directory, already covered
        if os.path.isdir(path):
            _mount("tmpfs", path, "tmpfs", _MS_NOSUID | _MS_NODEV | _MS_RDONLY, "mode=755,size=4096")
        elif os.path.exists(path):
            _mount("/dev/null", path, None, _MS_BIND, None)


def limit_inodes(limits: dict[str, int]) -> None:
    """Give each tmpfs mounted at a key of ``limits`` (the launcher's ``/tmp`` and ``/dev/shm``) that many inodes
    at most (a remount: its size and contents stay). Needs CAP_SYS_ADMIN over the mount: :func:`drop_sys_admin`
    follows before any job.

    :param limits: mount point -> the most inodes
    """
    for top, inodes in sorted(limits.items()):
        _mount(None, top, None, _MS_REMOUNT | _MS_NOSUID | _MS_NODEV, f"nr_inodes={int(inodes)}")


_CAP_SYS_ADMIN = 21
_LINUX_CAPABILITY_VERSION_3 = 0x20080522


class _CapHeader(ctypes.Structure):
    """struct __user_cap_header_struct of ``capget``/``capset``."""

    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    """struct __user_cap_data_struct (two of them for version 3: capabilities 0-31 and 32-63)."""

    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def drop_sys_admin() -> None:
    """Remove CAP_SYS_ADMIN (given to the server only to set its mounts' limits) from this process's effective,
    permitted and inheritable sets, and with them from its ambient set, for good.

    :raises OSError: when the kernel refuses, or the capability is still effective afterwards
    """
    header = _CapHeader(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    _libc_call("capget", ctypes.byref(header), data)
    word, bit = divmod(_CAP_SYS_ADMIN, 32)
    keep = ~(1 << bit) & 0xFFFFFFFF
    data[word].effective &= keep
    data[word].permitted &= keep
    data[word].inheritable &= keep
    _libc_call("capset", ctypes.byref(header), data)
    with open("/proc/self/status") as fh:
        effective = next(int(line.split()[1], 16) for line in fh if line.startswith("CapEff:"))
    if effective & (1 << _CAP_SYS_ADMIN):
        raise OSError(errno.EPERM, "CAP_SYS_ADMIN is still effective after capset")


# A seccomp filter for every job: it refuses new user namespaces (unshare or clone with CLONE_NEWUSER), clone3
# (whose flags a filter cannot read; the C library then falls back to clone), every System V IPC call (shared
# memory, message queues, semaphores) and every POSIX message queue call, and system calls of other ABIs. IPC
# objects would live in the namespace all jobs of a server share (and, without isolation, in the host's), past
# the job and outside its memory limit; POSIX shared memory and semaphores are files of /dev/shm, which the
# server empties after every job.
_AUDIT_ARCH = {
    # arch, unshare, clone, clone3, then the SysV IPC and POSIX mqueue calls
    "x86_64": (0xC000003E, 272, 56, 435, (29, 30, 31, 64, 65, 66, 68, 69, 70, 71, 220, 240, 241, 242, 243, 244, 245)),
    "aarch64": (0xC00000B7, 97, 220, 435, tuple(range(180, 197))),
}
_CLONE_NEWUSER = 0x10000000
_X32_BIT = 0x40000000


def _job_filter() -> bytes | None:
    """The BPF program (struct sock_filter[]) for this machine, None where it is not known."""
    import platform
    import struct

    spec = _AUDIT_ARCH.get(platform.machine())
    if spec is None:
        return None
    arch, nr_unshare, nr_clone, nr_clone3, nr_ipc = spec
    ld, jeq, jge, jset, ret = 0x20, 0x15, 0x35, 0x45, 0x06
    allow, eperm, enosys = 0x7FFF0000, 0x00050000 | errno.EPERM, 0x00050000 | errno.ENOSYS
    # (code, jump-if-true label, jump-if-false label, k): labels are resolved to forward offsets below
    prog: list[tuple[int, str | None, str | None, int]] = [
        (ld, None, None, 4),  # arch
        (jeq, None, "eperm", arch),
        (ld, None, None, 0),  # syscall number
        (jge, "eperm", None, _X32_BIT),
        *((jeq, "eperm", None, nr) for nr in nr_ipc),
        (jeq, "flags", None, nr_unshare),
        (jeq, "flags", None, nr_clone),
        (jeq, "enosys", None, nr_clone3),
        (ret, None, None, allow),
        (ld, None, None, 16),  # "flags": args[0] (low 32 bits), the flags of unshare and clone
        (jset, "eperm", None, _CLONE_NEWUSER),
        (ret, None, None, allow),
        (ret, None, None, eperm),  # "eperm"
        (ret, None, None, enosys),  # "enosys"
    ]
    n = len(prog)
    labels = {"flags": n - 5, "eperm": n - 2, "enosys": n - 1}

    def offset(at: int, label: str | None) -> int:
        return 0 if label is None else labels[label] - at - 1

    return b"".join(struct.pack("=HBBI", code, offset(i, jt), offset(i, jf), k)
                    for i, (code, jt, jf, k) in enumerate(prog))


_FILTER = _job_filter()


class _SockFprog(ctypes.Structure):
    """struct sock_fprog: the argument of ``prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ...)``."""

    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


# Built once in the server, so that a job's child only makes the system call (a class made per job cost ~0.4 ms).
_FILTER_BUF = None if _FILTER is None else ctypes.create_string_buffer(_FILTER, len(_FILTER))
_FILTER_PROG = None if _FILTER_BUF is None else _SockFprog(len(_FILTER) // 8, ctypes.cast(_FILTER_BUF, ctypes.c_void_p))


def block_user_namespaces() -> bool:
    """Install the job's seccomp filter in this process (needs ``no_new_privs``): no new user namespace, no
    System V or POSIX message-queue IPC; False where no filter is known for this machine."""
    if _FILTER_PROG is None:
        return False
    _libc_call("prctl", _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(_FILTER_PROG), 0, 0)
    return True


_IPC_PRIVATE, _IPC_RMID = 0, 0


def _refused_probe(attempt: str) -> bool:
    """Whether a job would be refused ``attempt`` (``"userns"``: a user namespace; ``"ipc"``: a System V shared
    memory segment): try it in a child with the filter installed."""
    if _FILTER is None:
        return False
    pid = os.fork()
    if pid == 0:
        refused = False
        try:
            _libc_call("prctl", _PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
            block_user_namespaces()
            if attempt == "userns":
                refused = _LIBC.unshare(_CLONE_NEWUSER) != 0
            else:
                shmid = _LIBC.shmget(_IPC_PRIVATE, 4096, 0o600)
                refused = shmid < 0
                if not refused:
                    _LIBC.shmctl(shmid, _IPC_RMID, None)
        finally:
            os._exit(0 if refused else 1)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


def _own_children() -> list[int]:
    """Pids of the server's direct children (orphans included when it is a subreaper)."""
    pids: list[int] = []
    me = os.getpid()
    try:
        tids = os.listdir(f"/proc/{me}/task")
    except OSError:
        return pids
    for tid in tids:
        try:
            with open(f"/proc/{me}/task/{tid}/children") as fh:
                pids.extend(int(p) for p in fh.read().split())
        except OSError:
            continue
    return pids


def _kill_everything(pgid: int) -> None:
    """SIGKILL the job's process group and every other descendant, then reap them all."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass
    deadline = time.monotonic() + _REAP_S
    while True:
        if os.getpid() == 1:
            # PID 1 of its own namespace: kill(-1) reaches every other process in it, never the caller.
            try:
                os.kill(-1, signal.SIGKILL)
            except OSError:
                pass
        else:
            for pid in _own_children():
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        try:
            while True:
                pid, _ = os.waitpid(-1, os.WNOHANG)
                if pid == 0:
                    break
        except ChildProcessError:
            return
        if time.monotonic() > deadline:
            return
        time.sleep(0.001)


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


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


_O_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FLAT_PATH = 1024
_FLAT_DEPTH = 32
"""A directory found deeper than this (path characters or levels below the top) is moved up into the top before
it is emptied (:func:`_clear_dir`)."""


def _remove_tree(path: str) -> bool:
    """Remove a directory a job wrote in (no process of the job is left); whether it is gone.

    :param path: the directory (a job's work dir)
    """
    try:
        _take_dir(None, path)
        fd = os.open(path, _O_DIR)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    try:
        _clear_dir(fd)
    finally:
        os.close(fd)
    try:
        os.rmdir(path)
    except OSError:
        return False
    return True


def _take_dir(dir_fd: int | None, name: str) -> None:
    """Make the directory ``name`` (in the folder open at ``dir_fd``) the server's (a root server has CAP_CHOWN),
    mode 700: a job can make entries its server may not remove as they stand (in a sticky directory of the job's
    an entry goes only to its owner or the directory's, and a bubblewrap server lacks CAP_FOWNER; a directory
    without permissions cannot be listed by its owner). Called only where no process of the job is left."""
    try:
        if os.geteuid() == 0:
            os.chown(name, 0, 0, dir_fd=dir_fd, follow_symlinks=False)
        os.chmod(name, 0o700, dir_fd=dir_fd)
    except OSError:
        pass  # the removal that follows says whether it mattered


def _entries(fd: int) -> list[tuple[str, bool]]:
    """The names in the directory open at ``fd``, each with whether it is a directory (links are not)."""
    with os.scandir(fd) as found:
        return [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in found]


def _clear_dir(top_fd: int, owner: int | None = None, keep: frozenset[str] = frozenset()) -> list[str]:
    """Remove everything inside the directory open at ``top_fd``, however deep, without recursion and with at
    most one more descriptor open: directories are walked by their paths below the top, and one found deeper
    than :data:`_FLAT_DEPTH` levels or :data:`_FLAT_PATH` characters is first moved up into the top (as
    ``.hg-rm-N``) and walked from there, so that a tree of any depth (a job can build one deeper than any
    recursion or path allows) is flattened as it is walked. Returns the top-level names it could not remove.

    :param top_fd: the directory to empty (it stays)
    :param owner: remove only the top-level entries this uid owns (a directory the host shares)
    :param keep: top-level names to leave as they are (what the directory held before any job)
    """
    pending: list[str] = []
    targets: list[str] = []
    for name, is_dir in _entries(top_fd):
        if name in keep:
            continue
        try:
            if owner is not None and os.stat(name, dir_fd=top_fd, follow_symlinks=False).st_uid != owner:
                continue
            targets.append(name)
            if is_dir:
                _take_dir(top_fd, name)
                pending.append(name)
            else:
                os.unlink(name, dir_fd=top_fd)
        except OSError:
            continue
    moved = 0
    stack = [(name, False) for name in pending]  # (path below the top, whether its entries are gone)
    while stack:
        rel, emptied = stack.pop()
        if emptied:
            try:
                os.rmdir(rel, dir_fd=top_fd)
            except OSError:
                pass
            continue
        try:
            fd = os.open(rel, _O_DIR, dir_fd=top_fd)
        except OSError:
            continue  # gone (a moved directory took its name), or left: the caller sees it
        stack.append((rel, True))
        try:
            for child, is_dir in _entries(fd):
                try:
                    if not is_dir:
                        os.unlink(child, dir_fd=fd)
                        continue
                    _take_dir(fd, child)
                    below = f"{rel}/{child}"
                    if len(below) < _FLAT_PATH and below.count("/") < _FLAT_DEPTH:
                        stack.append((below, False))
                        continue
                    while True:  # deep: moved up into the top, never onto an existing name
                        moved += 1
                        up = f".hg-rm-{moved}"
                        try:
                            os.stat(up, dir_fd=top_fd, follow_symlinks=False)
                        except FileNotFoundError:
                            break
                    os.rename(child, up, src_dir_fd=fd, dst_dir_fd=top_fd)
                    stack.append((up, False))
                except OSError:
                    continue
        except OSError:
            pass
        finally:
            os.close(fd)
    left: list[str] = []
    for name in targets:
        try:
            os.stat(name, dir_fd=top_fd, follow_symlinks=False)
            left.append(name)
        except FileNotFoundError:
            pass
        except OSError:
            left.append(name)
    return left


def _empty_dir(path: str, owner: int | None = None, keep: frozenset[str] = frozenset()) -> list[str]:
    """Remove everything inside ``path`` (a private ``/dev/shm``), so that no job leaves files for the next; with
    ``owner``, only the entries that uid owns (the jobs' own uid, in a directory the host shares). Returns the
    names it could not remove (see :func:`_clear_dir`).

    :param keep: names to leave (what ``path`` held before the first job)
    """
    try:
        fd = os.open(path, _O_DIR)
    except OSError:
        return []
    try:
        return _clear_dir(fd, owner, keep)
    finally:
        os.close(fd)


class _Slate:
    """What the jobs' scratch directories (their work root and the ``scrub`` directories) held, and how much room
    they had, before the first job: every job must find them so (:meth:`dirty` says how it does not).

    :param dirs: the directories
    :param private: whether they are the server's own file systems (their free space is then compared too; a
        work root on the host's disk, without isolation, shares its space with the host)
    """

    def __init__(self, dirs: list[str], private: bool) -> None:
        self.private = private
        self.fresh = {path: self._look(path) for path in sorted(set(dirs))}
        self.names = {path: frozenset(view[0]) for path, view in self.fresh.items() if not isinstance(view, str)}

    def _look(self, path: str) -> tuple[list[str], int, int] | str:
        """The sorted names in ``path``, its free blocks and free inodes (0 and 0 unless private), or why they
        cannot be read."""
        try:
            st = os.statvfs(path) if self.private else None
            return sorted(os.listdir(path)), st.f_bfree if st else 0, st.f_ffree if st else 0
        except OSError as exc:
            return f"{type(exc).__name__}: {exc}"

    def keep(self, path: str) -> frozenset[str]:
        """The names ``path`` held before the first job (kept when it is emptied)."""
        return self.names.get(path, frozenset())

    def dirty(self) -> str:
        """How the scratch directories differ from before the first job ("" when they do not)."""
        for path, fresh in self.fresh.items():
            now = self._look(path)
            if now == fresh:
                continue
            if isinstance(now, str) or isinstance(fresh, str):
                return f"{path}: {now}"
            extra = sorted(set(now[0]) - set(fresh[0]))
            return (f"{path} holds {len(extra)} entries more than before the first job ({extra[:3]}), "
                    f"{fresh[1] - now[1]} blocks and {fresh[2] - now[2]} inodes less free")
        return ""


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


_JOB_MODULES = ("linecache", "shutil", "tempfile", "traceback")
"""Modules only the jobs and their clean-up need: imported after the server's first line, before its preloads."""


def _job_module(name: str) -> types.ModuleType:
    """One of ``_JOB_MODULES``, imported (once the server is ready, a look-up in ``sys.modules``)."""
    return sys.modules.get(name) or __import__(name)


def _preload(names: list[str]) -> dict[str, str]:
    """Import the configured modules once; returns the errors by module name."""
    errors: dict[str, str] = {}
    for name in names:
        try:
            __import__(name)
        except BaseException as exc:  # a broken optional module must not stop the server
            errors[name] = f"{type(exc).__name__}: {exc}"
    return errors


def _set_job_env(cfg: _Config) -> None:
    """Give the server the environment its jobs get, less what differs per job (``HOME``, ``TMPDIR``, ``PWD``, set
    before each fork): the server's own ``_JOB_ENV_KEEP`` variables, then ``cfg.env``. Done once, after the
    preloads, so that a child does not rebuild it."""
    env = {k: v for k, v in os.environ.items() if k in _JOB_ENV_KEEP}
    env.update(cfg.env)
    os.environ.clear()
    os.environ.update(env)


def _warm_up() -> None:
    """Do once in the server what every job's first ``compile`` would do in its own child: the first call of
    ``compile`` builds the interpreter's AST types (~2 ms, the pages it writes copied per job)."""
    compile("def f(a, *b, **c):\n    return [x for x in a if x] or f'{b!r}'\n", "<warm-up>", "exec")


def main() -> None:
    """Serve jobs until stdin closes."""
    cfg = _Config(json.loads(sys.argv[1]) if len(sys.argv) > 1 else {})
    proto_in = os.fdopen(os.dup(0), "rb")
    proto_out = os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    # As PID 1 of a namespace the server only receives the signals it handles: handle none.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    as_root = os.geteuid() == 0
    if not as_root:
        # Jobs share the server's uid: keep them from ptracing it or opening its /proc files (its pipes).
        _libc_call("prctl", _PR_SET_DUMPABLE, 0, 0, 0, 0)
    _set_subreaper()
    if cfg.expose or cfg.cover or cfg.hide:
        setup_mounts(cfg.expose, cfg.cover, cfg.hide, cfg.inodes)
        os.makedirs(cfg.work_root, mode=0o755, exist_ok=True)
    inode_limit = bool(cfg.cover)
    if cfg.remount_inodes:
        try:
            limit_inodes(cfg.remount_inodes)
            inode_limit = True
        except OSError:
            inode_limit = False  # reported in the handshake
    if cfg.drop_sys_admin:
        drop_sys_admin()  # raises (the server does not start) rather than serve jobs with it
    if cfg.lock_tmp:
        os.chmod(cfg.work_root, 0o755)
    userns_blocked = cfg.block_userns and _refused_probe("userns")
    ipc_blocked = cfg.block_userns and _refused_probe("ipc")

    def send(obj: dict) -> None:
        _write_all(proto_out, (json.dumps(obj) + "\n").encode("utf-8"))

    # What the client keys cached results by is settled now: it need not wait for the preloads.
    send({"started": True, "pid": os.getpid(), "uid": os.geteuid(), "userns_blocked": userns_blocked,
          "ipc_blocked": ipc_blocked, "inode_limit": inode_limit})
    _preload(list(_JOB_MODULES))
    errors = _preload(cfg.preload)
    _set_job_env(cfg)
    _warm_up()
    # A job's garbage collections would otherwise walk the objects it inherits and copy every page they touch;
    # whether a short job collects then depends on where the server's counters stood when it forked (cold jobs
    # differed by a few ms with the server's code layout). Frozen objects are never collected or walked.
    gc.freeze()
    send({"ready": True, "preload_errors": errors})
    slate = _Slate([cfg.work_root, *cfg.scrub], cfg.private_scratch)
    standby = _new_standby(cfg, as_root, slate)
    try:
        for line in proto_in:
            if not line.strip():
                continue
            job = None
            try:
                req = json.loads(line)
                if not isinstance(req, dict):
                    raise TypeError(f"a request is a JSON object, not {type(req).__name__}")
                timeout = float(req.get("timeout_s", 5.0))
                stdin = str(req.get("stdin", "")).encode("utf-8")
                start = time.monotonic()
                if standby is not None and standby.gone():
                    standby.close(cfg, as_root)  # killed while it waited: a fresh one runs the job
                    standby = None
                job, standby = standby or _Standby(cfg, as_root, slate), None
                resp = job.run(cfg, line, stdin, timeout, start, as_root)
            except Exception as exc:
                resp = {"error": f"{type(exc).__name__}: {exc}"}
            unclean = job.unclean() if job is not None else ""
            if unclean:
                resp["unclean"] = unclean  # the client starts a fresh server for the next job; this one ends
            try:
                send(resp)
            except OSError as exc:
                if exc.errno == errno.EPIPE:
                    return
                raise
            if unclean:
                return
            if standby is None:  # after the response: its fork and setup overlap the caller's turn
                standby = _new_standby(cfg, as_root, slate)
    finally:
        if standby is not None:
            standby.close(cfg, as_root)


if __name__ == "__main__":
    main()
