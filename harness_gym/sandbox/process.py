"""ProcessSandbox: the embedded default sandbox (docs/harness_mdp.md, "Sandboxes").

One long-lived server process (``server/``) is started lazily per sandbox and forks a child per job,
so a job costs a fork rather than an interpreter start. The server is launched, best first:

``"bwrap"``
    bubblewrap with new PID, network, IPC, UTS and cgroup namespaces and a minimal read-only root: a fresh
    ``/proc``, ``/dev``, size-limited private ``/tmp`` and ``/dev/shm`` (mounted first, so that a Python
    installation under ``/tmp`` stays visible), then ``/usr``, the Python installation (``sys.prefix``,
    ``sys.base_prefix``, site-packages) and a few files of ``/etc``, with the package and its data
    (:func:`hidden_paths`) covered by empty read-only mounts. Nothing of ``/root``, ``/home`` or ``/work``
    is visible. As root no user namespace is made (the kernel never enforces ``RLIMIT_NPROC``
    for uid 0, which a user namespace would map the job to); the server keeps only CAP_SETUID,
    CAP_SETGID, CAP_KILL, CAP_CHOWN and CAP_DAC_OVERRIDE, runs as PID 1 of its namespace (jobs cannot
    signal it) and every job runs as an unprivileged uid (one per sandbox) with no capabilities and ``no_new_privs``.
``"unshare"``
    util-linux ``unshare`` (root only): new PID, network, IPC, UTS and mount namespaces with a fresh
    ``/proc``. The host file system stays visible (to the jobs' uid, as its permissions say), except that
    ``/tmp``, ``/dev/shm`` and ``/run`` are private size-limited tmpfs mounts, the package and its data are
    masked, and a directory on the way to the Python installation that others cannot enter (e.g. ``/root``)
    is covered with an empty tmpfs and the installation bind-mounted back read-only. Weaker than
    ``"bwrap"``: it warns.
``"none"``
    a plain process, still dropping jobs to an unprivileged uid when root, which then removes after every job
    whatever that uid left in ``/tmp``, ``/var/tmp`` and ``/dev/shm``; as another user the jobs run as that
    user, and files they write outside their work dir outlive them. It warns.

``isolation="auto"`` takes the first that starts; a mode weaker than ``"bwrap"`` warns with the reason
bubblewrap did not start (once per process and reason), and with ``require_isolation`` (or
``HG_REQUIRE_ISOLATION=1``) is an :class:`IsolationError` instead. Every mode refuses jobs new user
namespaces, System V IPC and POSIX message queues (the server's seccomp filter), so no IPC object of a job
outlives it or reaches the next job. Per-job limits are set by the server (see its
docstring): wall-clock timeout, CPU time, address space (``memory_mb`` on top of the server's own
size, which includes the ``preload`` modules), processes, open files, file size, output size.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import site
import sys
import tempfile
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness_gym.sandbox.cache import ResultCache
from harness_gym.sandbox.client import (
    JOB_ENV,
    SCRATCH_INODES,
    ServerProcess,
    ServerSandbox,
    server_source,
)
from harness_gym.sandbox.server.kernel import blocked_ancestor

ISOLATIONS: tuple[str, ...] = ("bwrap", "unshare", "none")
_TMP_SIZE = 256 * 1024 * 1024
_SHM_SIZE = 64 * 1024 * 1024
_RUN_SIZE = 1024 * 1024
_VAR_TMP_SIZE = 16 * 1024 * 1024
_ETC_FILES = (
    "/etc/alternatives", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime",
    "/etc/nsswitch.conf", "/etc/passwd", "/etc/group", "/etc/hosts", "/etc/mime.types", "/etc/ssl/certs",
)  # fmt: skip

_SHARED_WRITABLE = ("/tmp", "/var/tmp", "/dev/shm")
"""Host directories every uid may write; without isolation a root server removes what its jobs' uid left there."""

def interpreter_path(executable: str = sys.executable, cwd: str | None = None) -> str:
    """The interpreter the server runs as, spelled so that it names the same file inside the sandbox: absolute
    (a relative ``sys.executable`` is taken against ``cwd``, default the folder this module was imported in), its
    folder without ``..`` or symbolic links (the sandbox binds the real folders of the installation), its own
    name as given (a virtualenv's ``bin/python`` is a link whose folder says which environment it is).

    :param executable: the interpreter's path as the process was started with it
    :param cwd: the folder a relative path is taken against
    """
    full = os.path.join(cwd or _IMPORT_CWD, executable)
    return os.path.join(os.path.realpath(os.path.dirname(full)), os.path.basename(full))


_IMPORT_CWD = os.getcwd()
_failed_isolations: dict[str, str] = {}
"""Modes that failed to start in this process under ``isolation="auto"``, with why (not tried again)."""
_warned: set[str] = set()
_warn_lock = threading.Lock()


def _python_paths() -> list[str]:
    """Directories the job's interpreter must read: the installation and its site-packages."""
    exe_dir = os.path.dirname(os.path.realpath(interpreter_path()))
    cands = [sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix, exe_dir,
             os.path.dirname(interpreter_path())]
    cands += site.getsitepackages()
    out: list[str] = []
    for path in sorted({os.path.realpath(p) for p in cands if p and os.path.isdir(p)}, key=len):
        if path.startswith("/usr/") or path == "/usr":
            continue
        if any(path == o or path.startswith(o + "/") for o in out):
            continue
        out.append(path)
    return out


def hidden_paths() -> list[str]:
    """What jobs must never see wherever the package lives: the package itself and its data (hidden tests,
    reference solutions, expected answers), in a checkout or in site-packages."""
    here = Path(__file__).resolve().parents[1]
    out = {str(here)}
    for data in (here / "envs_data", here.parent / "envs_data"):
        if data.is_dir():
            out.add(str(data))
    return sorted(out)


def _inside(path: str, roots: Sequence[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def _bwrap_command(server_argv: list[str], as_root: bool, hide: Sequence[str]) -> list[str]:
    """The bubblewrap command line that runs ``server_argv`` in the sandbox.

    The private ``/tmp`` and ``/dev`` are mounted first, so that a Python installation under ``/tmp`` (a
    virtualenv) bind-mounted after them stays visible; ``hide`` paths inside what is bound are covered
    with empty read-only tmpfs mounts afterwards.
    """
    # the bubblewrap found on the caller's PATH (the one checked), not one on the server's
    cmd = [shutil.which("bwrap") or "bwrap", "--die-with-parent", "--new-session", "--as-pid-1", "--unshare-pid", "--unshare-net",
           "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--hostname", "sandbox"]  # fmt: skip
    if as_root:
        cmd += ["--cap-drop", "ALL"]
        # CAP_SYS_ADMIN only to give /tmp and /dev/shm an inode limit; the server drops it before any job.
        for cap in ("CAP_SETUID", "CAP_SETGID", "CAP_KILL", "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_SYS_ADMIN"):
            cmd += ["--cap-add", cap]
    else:
        cmd += ["--unshare-user"]
    cmd += ["--proc", "/proc", "--dev", "/dev", "--size", str(_SHM_SIZE), "--perms", "1777", "--tmpfs", "/dev/shm"]
    cmd += ["--size", str(_TMP_SIZE), "--perms", "0755", "--tmpfs", "/tmp"]
    cmd += ["--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32"):
        if os.path.islink(top):
            cmd += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            cmd += ["--ro-bind", top, top]
    made: set[str] = {"/", "/usr", "/tmp", "/proc", "/dev"}
    bound = ["/usr"]
    for path in [p for p in _ETC_FILES if os.path.exists(p)] + _python_paths():
        parents = Path(path).parents
        for parent in reversed(parents):
            par = str(parent)
            if par not in made:
                made.add(par)
                cmd += ["--perms", "0755", "--dir", par]
        cmd += ["--ro-bind", path, path]
        made.add(path)
        bound.append(path)
    for path in hide:
        covered = _inside(path, [h for h in hide if h != path])
        if _inside(path, bound) and not covered and os.path.exists(path):
            if os.path.isdir(path):
                cmd += ["--size", "4096", "--perms", "0755", "--tmpfs", path, "--remount-ro", path]
            else:
                cmd += ["--ro-bind", "/dev/null", path]
    cmd += ["--chdir", "/tmp", "--clearenv"]
    for key, value in _server_env().items():
        cmd += ["--setenv", key, value]
    return cmd + ["--"] + server_argv


def _server_env() -> dict[str, str]:
    """The server's whole environment: nothing of the caller's (no secrets) but a PATH."""
    exe_dir = os.path.dirname(interpreter_path())
    return {"PATH": f"{exe_dir}:/usr/local/bin:/usr/bin:/bin", **JOB_ENV}


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


class IsolationError(RuntimeError):
    """The sandbox would run jobs with weaker isolation than required (``require_isolation``)."""


def isolation_required(require: bool | None) -> bool:
    """``require``, or when None the environment variable ``HG_REQUIRE_ISOLATION`` (``1``, ``true``, ``yes``).

    :param require: the caller's explicit choice, if any
    """
    if require is not None:
        return bool(require)
    return os.environ.get("HG_REQUIRE_ISOLATION", "").strip().lower() in ("1", "true", "yes")


_DEGRADED = {
    "unshare": "jobs see the host file system (except the package, its data, /tmp, /var/tmp, /dev/shm and /run, "
               "which are masked)",
    "none": "jobs run as plain processes: they see the host file system, the package's data and the network, "
            "and (unless the server is root) files they write outside their work dir outlive them",
}  # fmt: skip


def _warn_degraded(mode: str, why: str) -> None:
    key = f"{mode}: {why}"
    with _warn_lock:
        if key in _warned:
            return
        _warned.add(key)
    if shutil.which("bwrap") is None:
        remedy = "Install bubblewrap (apt-get install bubblewrap) for full isolation"
    else:
        remedy = ("bubblewrap is installed but could not start the server for the reason above (`harness-gym "
                  "doctor` shows the isolation in force)")
    warnings.warn(
        f"ProcessSandbox runs with isolation {mode!r}, weaker than bubblewrap ({why}); {_DEGRADED[mode]}. "
        f"{remedy}; set require_isolation=True or HG_REQUIRE_ISOLATION=1 to make this an error.",
        RuntimeWarning,
        stacklevel=6,
    )


class ProcessSandbox(ServerSandbox):
    """Runs Python jobs in forked children of a pre-forked, namespaced server process.

    :param preload: modules the server imports once so that jobs importing them start fast
        (e.g. ``("pandas",)``); a module that fails to import is skipped
    :param isolation: ``"auto"`` (best available), ``"bwrap"``, ``"unshare"`` or ``"none"``; any mode
        weaker than ``"bwrap"`` warns, naming why bubblewrap was not used
    :param max_output_bytes: cap of each of stdout and stderr; a job writing more is killed
        (``reason="output_limit"``) and its output truncated
    :param max_processes: RLIMIT_NPROC of a job (processes and threads)
    :param cache: reuse results of identical completed jobs: ``True`` or ``"disk"`` for the process-wide
        memory + disk cache, ``"memory"`` for the process-wide memory-only one, a :class:`ResultCache`, or
        ``False`` (see :func:`~harness_gym.sandbox.cache.resolve_cache`)
    :param job_uid: uid and gid the jobs run as when the caller is root (default: one unused uid per
        sandbox, so that the per-uid process limit of one sandbox's jobs never starves another's)
    :param recycle_after: restart the server after this many jobs (None: never)
    :param require_isolation: refuse to run jobs with less than bubblewrap: :class:`IsolationError` at
        construction for ``isolation="unshare"`` or ``"none"``, and from :meth:`start` or :meth:`run` when
        bubblewrap cannot start (default: the ``HG_REQUIRE_ISOLATION`` environment variable)
    :param hide: more paths jobs must not see, besides :func:`hidden_paths`
    :raises ValueError: for an unknown isolation mode
    :raises IsolationError: for a weaker mode than required
    """

    def __init__(
        self,
        preload: Sequence[str] = (),
        isolation: str = "auto",
        max_output_bytes: int = 64 * 1024,
        max_processes: int = 64,
        cache: bool | str | ResultCache = False,
        job_uid: int | None = None,
        recycle_after: int | None = None,
        require_isolation: bool | None = None,
        hide: Sequence[str] = (),
    ) -> None:
        if isolation not in ("auto",) + ISOLATIONS:
            raise ValueError(f"isolation must be 'auto' or one of {ISOLATIONS}, not {isolation!r}")
        self.require_isolation = isolation_required(require_isolation)
        if self.require_isolation and isolation in ("unshare", "none"):
            raise IsolationError(f"isolation={isolation!r} is weaker than required (bubblewrap): "
                                 "require_isolation / HG_REQUIRE_ISOLATION is set")
        super().__init__(tuple(preload), max_output_bytes, max_processes, cache, job_uid, recycle_after)
        self.isolation = isolation
        self.hide = tuple(sorted(set(hidden_paths()) | {os.path.realpath(p) for p in hide}))
        self.active_isolation = ""
        """The isolation the running (or last) server got: one of ``ISOLATIONS``, "" before the first job."""
        self.degraded_reason = ""
        """Why the running server has less than bubblewrap ("" under bubblewrap or before the first job)."""
        self.userns_blocked = False
        """Whether the running server's jobs are refused new user namespaces (a seccomp filter)."""
        self.ipc_blocked = False
        """Whether the running server's jobs are refused System V and POSIX message-queue IPC (a seccomp filter)."""
        self.inode_limit = False
        """Whether the running server's private tmpfs mounts hold at most :data:`SCRATCH_INODES` inodes each."""

    @property
    def isolation_in_force(self) -> str:
        """The isolation of the running (or last) server: ``"bwrap"``, ``"unshare"``, ``"none"``; "" before."""
        return self.active_isolation

    def isolation_report(self) -> dict[str, Any]:
        """What isolates this sandbox's jobs (starts the server if needed): backend, requested and actual mode,
        why it is weaker than bubblewrap, whether user namespaces are refused, what is hidden."""
        self.start()
        return {"backend": "process", "requested": self.isolation, "in_force": self.active_isolation,
                "degraded": self.active_isolation != "bwrap", "reason": self.degraded_reason,
                "require_isolation": self.require_isolation, "userns_blocked": self.userns_blocked,
                "ipc_blocked": self.ipc_blocked, "inode_limit": self.inode_limit,
                "private_tmp": self.active_isolation != "none", "hidden": list(self.hide)}

    @property
    def cache_salt(self) -> str:
        """What, besides the job, a result depends on (see :func:`harness_gym.sandbox.cache.cache_key`): the
        isolation in force (not the one requested), the output and process limits and the preloaded modules (a
        job sees which are loaded)."""
        limits = f"{self.max_output_bytes}/{self.max_processes}"
        return f"ProcessSandbox/{self.active_isolation}/{limits}/{self.preload_salt}"

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state.update(active_isolation="", degraded_reason="", userns_blocked=False, ipc_blocked=False, inode_limit=False)
        return state

    def start(self) -> str:
        """Start the server now (it otherwise starts on the first job); returns the isolation used.

        :raises RuntimeError: when no isolation mode starts
        :raises IsolationError: when only a weaker mode than required would start
        """
        super().start()
        return self.active_isolation

    def _start_server(self) -> ServerProcess | str:
        """Launch the server in the best isolation mode that starts; an error text when none does."""
        modes = ISOLATIONS if self.isolation == "auto" else (self.isolation,)
        errors: list[str] = []
        for mode in modes:
            if self.isolation == "auto" and mode in _failed_isolations:
                errors.append(f"{mode}: {_failed_isolations[mode]}")
                continue
            why = self._unavailable(mode)
            if why:
                errors.append(f"{mode}: {why}")
                continue
            if mode != "bwrap" and self.require_isolation:
                raise IsolationError("bubblewrap isolation is required (require_isolation / HG_REQUIRE_ISOLATION) "
                                     f"but cannot start: {'; '.join(errors)}")
            server = self._launch(mode)
            err = server.handshake()
            if err:
                errors.append(f"{mode}: {err}")
                if self.isolation == "auto":
                    _failed_isolations[mode] = err
                continue
            self.degraded_reason = ""
            if mode != "bwrap":
                why = "; ".join(errors) or f"isolation={mode!r} was asked for"
                if mode == "none" and server.info.get("uid") == 0 and any(map(blocked_ancestor, _python_paths())):
                    why += "; the Python installation is not readable by the jobs' uid, so jobs can only import "
                    why += "modules the server preloaded"
                self.degraded_reason = why
                _warn_degraded(mode, why)
            self.active_isolation = mode
            self.userns_blocked = bool(server.info.get("userns_blocked"))
            self.ipc_blocked = bool(server.info.get("ipc_blocked"))
            self.inode_limit = bool(server.info.get("inode_limit"))
            return server
        if self.require_isolation:
            raise IsolationError(f"bubblewrap isolation is required but cannot start: {'; '.join(errors)}")
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

    def _launch(self, mode: str) -> ServerProcess:
        as_root = os.geteuid() == 0
        nproc = self.max_processes if as_root else self.max_processes + _user_process_count()
        config: dict[str, Any] = {
            "preload": list(self.preload),
            "max_output": self.max_output_bytes,
            "nproc": nproc,
            "job_uid": self.job_uid,
            "job_gid": self.job_uid,
            "env": JOB_ENV,
        }
        work_root: str | None = None
        if mode == "bwrap":
            config.update(work_root="/tmp", lock_tmp=True, scrub=["/dev/shm", "/tmp"])
            if as_root:
                config.update(remount_inodes={"/tmp": SCRATCH_INODES, "/dev/shm": SCRATCH_INODES}, drop_sys_admin=True)
        elif mode == "unshare":
            config.update(work_root="/tmp/hg-jobs", lock_tmp=True, scrub=["/dev/shm", "/var/tmp"],
                          expose=_python_paths(), inodes=SCRATCH_INODES, hide=list(self.hide),
                          cover={"/tmp": _TMP_SIZE, "/var/tmp": _VAR_TMP_SIZE, "/dev/shm": _SHM_SIZE, "/run": _RUN_SIZE})
        else:
            work_root = tempfile.mkdtemp(prefix="hg-sandbox-")
            os.chmod(work_root, 0o711)
            config.update(work_root=work_root, scrub_owned=list(_SHARED_WRITABLE), private_scratch=False)
            # Its jobs may be unable to read the Python installation (under /root): they get the modules the
            # server holds, which left to itself no longer imports threading (its fork handler costs every job).
            config["preload"] = list(dict.fromkeys([*self.preload, "threading"]))
        argv = [interpreter_path(), "-I", "-c", server_source(), json.dumps(config)]
        if mode == "bwrap":
            return ServerProcess(_bwrap_command(argv, as_root, self.hide), _server_env())
        if mode == "unshare":
            argv = [shutil.which("unshare") or "unshare", "--pid", "--net", "--ipc", "--uts", "--mount", "--fork", "--kill-child",
                    "--mount-proc", "--"] + argv  # fmt: skip
        if work_root is None:
            return ServerProcess(argv, _server_env(), "/")
        cleanup = functools.partial(shutil.rmtree, work_root, ignore_errors=True)
        return ServerProcess(argv, _server_env(), work_root, cleanup)
