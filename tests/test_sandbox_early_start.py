"""The job server answers its start before its preloads (issue 28): ``start()`` (and so ``salt_in_force()``,
which a warm run calls to key its cache reads) returns at the server's first line, sent once its isolation is
set up; the first job waits for the ready line that follows the preloads. What a job sees is what it saw when
the start waited for the preloads:

- a job sees the preloaded modules; a preload that fails warns, at the first job;
- a server that dies before its ready line fails the job (``sandbox_error``) and the next job restarts it;
- the cache salt holds the preloads: a result under one preload list never answers a job under another;
- a warm run (every job a cache hit) never waits for the preloads, nor does closing its server.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
import warnings

import pytest

from harness_gym.sandbox import ProcessSandbox
from harness_gym.sandbox.cache import ResultCache
from harness_gym.sandbox.client import ServerProcess

SEES_DECIMAL = "import sys\nprint('decimal' in sys.modules)"


def _sandbox(**kwargs: object) -> ProcessSandbox:
    return ProcessSandbox(cache=False, **kwargs)  # type: ignore[arg-type]


def test_start_returns_before_the_ready_line_and_the_first_job_waits_for_it() -> None:
    with _sandbox(preload=("decimal",)) as sb:
        assert sb.start() in ("bwrap", "unshare", "none")
        server = sb._server
        assert server is not None and not server.ready and "preload_errors" not in server.info
        assert sb.run(SEES_DECIMAL).stdout == "True\n"
        assert server.ready and server.info["preload_errors"] == {}
        assert sb._server is server, "the first job ran on the started server"


def test_a_failed_preload_warns_at_the_first_job_not_at_start() -> None:
    with _sandbox(preload=("decimal", "no_such_module_xyz")) as sb:
        with warnings.catch_warnings(record=True) as at_start:
            warnings.simplefilter("always")
            sb.start()
        assert not [w for w in at_start if "no_such_module_xyz" in str(w.message)]
        with pytest.warns(RuntimeWarning, match="ProcessSandbox could not preload.*no_such_module_xyz"):
            result = sb.run(SEES_DECIMAL)
        assert result.stdout == "True\n", result
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # once per server
            assert sb.run("print(1)").stdout == "1\n"


def test_a_server_dead_before_its_ready_line_fails_the_job_and_restarts() -> None:
    with _sandbox(preload=("decimal",)) as sb:
        sb.start()
        pid = sb.server_pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        failed = sb.run(SEES_DECIMAL)
        assert failed.reason == "sandbox_error" and failed.exit_code == -1, failed
        again = sb.run(SEES_DECIMAL)
        assert again.stdout == "True\n" and sb.server_pid not in (None, pid), again


def test_the_salt_holds_the_preloads() -> None:
    cache = ResultCache(maxsize=16)
    with ProcessSandbox(cache=cache, preload=("decimal",)) as with_decimal, ProcessSandbox(cache=cache) as plain:
        first = with_decimal.run(SEES_DECIMAL)
        other = plain.run(SEES_DECIMAL)
        assert first.stdout == "True\n" and not first.cached
        assert other.stdout == "False\n" and not other.cached, "a result under another preload list answered"
        assert with_decimal.salt_in_force() != plain.salt_in_force()
        assert with_decimal.run(SEES_DECIMAL).cached
    assert ProcessSandbox(preload=("a", "b")).preload_salt != ProcessSandbox(preload=("a,b",)).preload_salt


def test_a_warm_run_never_waits_for_the_preloads() -> None:
    cache = ResultCache(maxsize=16)
    with ProcessSandbox(cache=cache, preload=("decimal",)) as cold:
        assert cold.run(SEES_DECIMAL).stdout == "True\n"
    with ProcessSandbox(cache=cache, preload=("decimal",)) as warm:
        hit = warm.run(SEES_DECIMAL)
        assert hit.cached and hit.stdout == "True\n"
        assert warm._server is not None and not warm._server.ready


def _fake_server(*lines: object) -> ServerProcess:
    script = "import sys\n" + "".join(f"print({json.dumps(json.dumps(line))}, flush=True)\n" for line in lines)
    return ServerProcess([sys.executable, "-I", "-c", script + "sys.stdin.read()"], None)


def test_the_protocol_of_the_two_lines() -> None:
    server = _fake_server({"started": True, "uid": 7}, {"ready": True, "preload_errors": {"x": "E"}})
    assert server.handshake() == "" and server.info == {"started": True, "uid": 7} and not server.ready
    assert server.wait_ready() == "" and server.ready
    assert server.info == {"started": True, "uid": 7, "ready": True, "preload_errors": {"x": "E"}}
    assert server.wait_ready() == ""
    server.stop()
    old = _fake_server({"ready": True})
    assert "unexpected server greeting" in old.handshake()
    dying = ServerProcess([sys.executable, "-I", "-c", "print('{\"started\": true}', flush=True)"], None)
    assert dying.handshake() == ""
    assert "exited" in dying.wait_ready() and not dying.ready


def test_a_server_not_yet_ready_is_killed_at_once_on_close() -> None:
    """A warm run closes a server still importing its preloads: it is killed, not waited for (a ready server, which
    may be cleaning up after a job, gets its second to exit)."""
    sleeper = "import sys, time\nprint('{\"started\": true}', flush=True)\nsys.stdin.close()\ntime.sleep(30)"
    server = ServerProcess([sys.executable, "-I", "-c", sleeper], None)
    assert server.handshake() == ""
    began = time.monotonic()
    server.stop()
    assert time.monotonic() - began < 0.9 and server.proc.returncode is not None


def test_a_server_left_idle_past_the_start_limit_still_runs_its_first_job() -> None:
    from harness_gym.sandbox.client import START_TIMEOUT_S

    with _sandbox(preload=("decimal",)) as sb:
        sb.start()
        server = sb._server
        assert server is not None
        time.sleep(1.0)  # the ready line has come by now; nobody has read it yet
        server.launched_at -= START_TIMEOUT_S + 1  # as if the caller had waited past the limit before its job
        assert sb.run(SEES_DECIMAL).stdout == "True\n"
        assert sb._server is server, "the waiting ready line was read, not the server dropped"


def _descendants(pid: int) -> set[int]:
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as fh:
                    parents[int(entry)] = int(fh.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def test_requests_the_server_refuses_leave_no_waiting_child_behind() -> None:
    with _sandbox() as sb:
        assert sb.run("print(1)").stdout == "1\n"
        server = sb._server
        assert server is not None
        time.sleep(0.3)  # the next job's child is forked after the response
        before = len(_descendants(server.proc.pid))
        for _ in range(4):  # stdin the server cannot encode: refused before any job starts
            assert sb.run("print(1)", stdin="\ud800").exit_code != 0
        time.sleep(0.3)
        assert len(_descendants(server.proc.pid)) == before
        assert sb.run("print(2)").stdout == "2\n" and sb._server is server
