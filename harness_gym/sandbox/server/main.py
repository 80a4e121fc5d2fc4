"""The job server's entry point (:func:`main`): set up its isolation, say so, preload, then serve one job per request
line until stdin closes; the last part of the server program (``harness_gym/sandbox/server/__init__.py``).
"""

from __future__ import annotations

import errno
import gc
import json
import os
import signal
import sys
import time

from harness_gym.sandbox.server.cleanup import _Slate
from harness_gym.sandbox.server.config import _JOB_MODULES, _Config
from harness_gym.sandbox.server.jobs import _new_standby, _Standby, _write_all
from harness_gym.sandbox.server.kernel import (
    _PR_SET_DUMPABLE,
    _libc_call,
    _refused_probe,
    _set_subreaper,
    drop_sys_admin,
    limit_inodes,
    setup_mounts,
)

_JOB_ENV_KEEP = ("PATH", "LANG", "LC_ALL", "TZ")


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
