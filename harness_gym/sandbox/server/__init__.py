"""The pre-forked job server of :class:`harness_gym.sandbox.process.ProcessSandbox` and
:class:`harness_gym.sandbox.docker.DockerSandbox` (docs/harness_mdp.md, "Sandboxes").

The files of this folder are one program, run as ``python -I -c <source> <config json>`` (usually inside
bubblewrap), where ``harness_gym`` is hidden from the jobs and cannot be imported: :func:`program_source` joins
:data:`PARTS` in order into that source, so it imports only the standard library. Each file is also a module of
this package (the client and the tests import from it), which is why a part imports the names it uses from the
parts before it; :func:`program_source` drops those imports, and every ``from __future__ import annotations``
but the first. A part uses only names the parts before it define and redefines none of them
(tests/test_sandbox_server_program.py), so the joined program means what the modules mean.

Once its mounts are set up the server says so (``{"started", "pid", "uid", "userns_blocked", "ipc_blocked"}``),
preloads the configured modules once, says ``{"ready", "preload_errors"}``, then serves one JSON request per line
on stdin and answers one JSON line on stdout. Per job it forks a child that drops privileges and limits itself,
then ``exec``s the job's code: no new interpreter starts.
The child is forked and set up before its request comes (:class:`jobs._Standby`), so a job waits only for what
depends on the request (its CPU and memory limits, files, code); its wall-clock time (its timeout and
``duration_s``) counts from the request.
What a forked child writes is copied page by page, which is most of a job's cost: the server does once what
every child would otherwise do (AST types, the seccomp program, the jobs' environment) and freezes its
objects (``gc.freeze``), so that no job's garbage collection walks them.

Request: ``{"code", "files", "stdin", "timeout_s", "memory_mb"}``.
Response: ``{"stdout", "stderr", "exit_code", "timed_out", "duration_s", "reason"}`` or ``{"error"}``, either with
``"unclean"`` when the server could not restore the clean slate after the job (it then exits).

Containment done here (namespaces and mounts are the launcher's job):

- the child installs a seccomp filter refusing new user namespaces (:func:`kernel.block_user_namespaces`; the
  handshake reports whether it works, ``userns_blocked``) and IPC (below);
- the child runs in its own session and process group, as uid/gid ``job_uid`` when the server is root
  (so that ``RLIMIT_NPROC`` is enforced: the kernel exempts uid 0 from it), with ``no_new_privs`` (setuid
  binaries give nothing); a server that is not root (in a container) makes itself non-dumpable, so that
  jobs of the same uid can neither ptrace it nor open its ``/proc`` files;
- rlimits: CPU (soft: the timeout + 2 s, hard 1 s later), address space (the server's own size + ``memory_mb``), open files,
  processes, file size, no core dumps;
- a private work dir (cwd, ``HOME``, ``TMPDIR``, first on ``sys.path``) removed after the job, the ``scrub``
  directories (a private ``/dev/shm`` and ``/tmp``; the container's ``/tmp``) emptied after it but for what they
  held before the first job, and in the ``scrub_owned`` directories (the host's ``/tmp``, ``/var/tmp`` and
  ``/dev/shm`` without isolation) every entry the job's uid owns removed after it (a root server only: its jobs'
  uid is theirs alone); the removal never recurses (:func:`cleanup._clear_dir`), so no depth defeats it. Then the work
  root and the ``scrub`` directories must be as before the first job (:class:`cleanup._Slate`: names, and on private
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

import ast
from functools import cache
from pathlib import Path

PARTS = ("config.py", "kernel.py", "cleanup.py", "jobs.py", "main.py")
"""The program's files in the order they are joined (the order their top-level statements run in)."""
FOLDER = Path(__file__).parent
"""Where :data:`PARTS` lie."""


@cache
def program_source(folder: Path = FOLDER) -> str:
    """The server program: the :data:`PARTS` in ``folder``, in order, each headed by a comment naming it, without
    their imports of this package and with only the first part's ``from __future__ import annotations``. The same
    files give the same text, byte for byte.

    :param folder: the folder holding the parts (another checkout's, to run its server: benchmarks/seal_cost.py)
    :raises ValueError: when a part imports anything else of ``harness_gym`` (it would fail where the server runs),
        or an import of this package shares a line with another statement
    """
    return "\n\n".join(f"# ---- {name} ----\n" + _program_part(folder / name, first=i == 0)
                       for i, name in enumerate(PARTS))


def _program_part(path: Path, first: bool) -> str:
    """The text of the part at ``path`` as the program holds it (see :func:`program_source`)."""
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text, filename=str(path))
    dropped: set[int] = set()
    kept: set[int] = set()
    for node in tree.body:
        lines = range(node.lineno, (node.end_lineno or node.lineno) + 1)
        (dropped if _dropped_import(node, first) else kept).update(lines)
    if dropped & kept:
        raise ValueError(f"{path}:{min(dropped & kept)}: an import of {__name__} shares its line with a statement")
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)) and node.lineno not in dropped:
            if isinstance(node, ast.ImportFrom):
                names = ["." * node.level + (node.module or "")]
            else:
                names = [alias.name for alias in node.names]
            for name in names:
                if name.startswith(".") or name.split(".")[0] == "harness_gym":
                    raise ValueError(f"{path}:{node.lineno}: the server program cannot import {name!r} (where it "
                                     f"runs harness_gym is hidden; take another part's names from {__name__}.<part>)")
    return "".join(line for number, line in enumerate(text.splitlines(keepends=True), 1) if number not in dropped)


def _dropped_import(node: ast.stmt, first: bool) -> bool:
    """Whether the program leaves out the top-level statement ``node``: an import from a part of this package, or
    a ``from __future__`` import of any part but the first (allowed only at the top of a program)."""
    if not isinstance(node, ast.ImportFrom) or node.level:
        return False
    module = node.module or ""
    return module == __name__ or module.startswith(__name__ + ".") or (module == "__future__" and not first)
