"""What the job server asks of the kernel: its mounts and their inode limits, dropping CAP_SYS_ADMIN, the jobs'
seccomp filter (no new user namespace, no System V or POSIX message-queue IPC) and the probes that say whether it
works (a part of the server program: ``harness_gym/sandbox/server/__init__.py``)."""

from __future__ import annotations

import ctypes
import errno
import os

_PR_SET_DUMPABLE = 4
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
_LIBC = ctypes.CDLL(None, use_errno=True)
_LIBC.prctl  # resolved here once (CDLL caches it), not in every job's child  # noqa: B018


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
