"""The job server's clean-up after a job: kill every process it left (:func:`_kill_everything`), remove its files
however deep (:func:`_remove_tree`, :func:`_empty_dir`) and check that the next job finds the scratch directories
as the first one did (:class:`_Slate`); a part of the server program (``harness_gym/sandbox/server/__init__.py``).
"""

from __future__ import annotations

import os
import signal
import time

_REAP_S = 2.0


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
