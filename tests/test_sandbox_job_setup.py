"""The job setup of the process sandbox's server (``harness_gym/sandbox/server/``) after its fast path (issue 28):
what a job sees is what the per-job definition it replaced gave.

- The environment is built once in the server (``_set_job_env``) and only ``HOME``, ``TMPDIR`` and ``PWD`` are
  set per job: the job's ``os.environ`` and the C library's ``environ`` (what a subprocess inherits) must equal,
  in order, the old definition: the server's ``PATH``/``LANG``/``LC_ALL``/``TZ``, then ``JOB_ENV``, then the three.
- ``tempfile`` answers the job's own work dir.
- The seccomp filter, built once in the server, is in force in every job (not only in the first).
- ``threading`` is no longer imported by the server; a job that imports it still has its non-daemon threads
  joined before it exits.
- What a job leaves in its work dir never reaches the next job, even when the job made it hard to remove.
- The job's child is forked and set up before its request (``_Standby``): the job still holds only its
  standard descriptors, gets requests of any size, has its timeout counted from its request, and no process
  of the jobs' uid outlives the sandbox.
"""

from __future__ import annotations

import json
import os
import time
import uuid
import warnings
from collections.abc import Iterator

import pytest

from harness_gym.sandbox import ProcessSandbox
from harness_gym.sandbox import process as process_mod
from harness_gym.sandbox.client import JOB_ENV
from harness_gym.sandbox.server.main import _JOB_ENV_KEEP

MODES = ("bwrap", "unshare", "none")


def _available(mode: str) -> str:
    why = ProcessSandbox._unavailable(mode)
    if mode != "bwrap" and os.geteuid() != 0:
        why = why or "needs root"
    return why


@pytest.fixture(scope="module", params=MODES)
def sandbox(request: pytest.FixtureRequest) -> Iterator[ProcessSandbox]:
    why = _available(request.param)
    if why:
        pytest.skip(f"isolation {request.param!r} unavailable: {why}")
    sb = ProcessSandbox(isolation=request.param, cache=False, require_isolation=False)  # each mode on purpose
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        sb.start()
    if sb.active_isolation != request.param:
        sb.close()
        pytest.skip(f"isolation {request.param!r} did not start")
    yield sb
    sb.close()


ENV_JOB = r"""
import ctypes, json, os, tempfile
environ = ctypes.POINTER(ctypes.c_char_p).in_dll(ctypes.CDLL(None), "environ")
c_env, i = [], 0
while environ[i] is not None:
    c_env.append(environ[i].decode().split("=", 1))
    i += 1
print(json.dumps({"py": list(os.environ.items()), "c": c_env, "cwd": os.getcwd(), "tmp": tempfile.gettempdir()}))
"""


def expected_env(server_env: dict[str, str], workdir: str) -> list[list[str]]:
    """The job environment as the server built it per job before issue 28."""
    env = {k: v for k, v in server_env.items() if k in _JOB_ENV_KEEP}
    env.update(JOB_ENV)
    env.update(HOME=workdir, TMPDIR=workdir, PWD=workdir)
    return [[k, v] for k, v in env.items()]


def test_job_environment_equals_the_per_job_definition(sandbox: ProcessSandbox) -> None:
    seen_dirs = set()
    for _ in range(3):  # every job, not only the first of a server
        res = sandbox.run(ENV_JOB)
        assert res.exit_code == 0, res
        got = json.loads(res.stdout)
        want = expected_env(process_mod._server_env(), got["cwd"])
        assert got["py"] == want
        assert got["c"] == want
        assert got["tmp"] == got["cwd"]
        seen_dirs.add(got["cwd"])
    assert len(seen_dirs) == 3  # a fresh work dir per job


def test_seccomp_filter_in_every_job(sandbox: ProcessSandbox) -> None:
    if not sandbox.userns_blocked:
        pytest.skip("no seccomp filter known for this machine")
    code = "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
    code += "print(libc.unshare(0x10000000), ctypes.get_errno() == 1, libc.shmget(0, 4096, 0o600))"
    for _ in range(3):
        res = sandbox.run(code)
        assert res.stdout == "-1 True -1\n", res


def test_threading_joined_and_not_preimported(sandbox: ProcessSandbox) -> None:
    # without isolation the jobs may not read the Python installation: the server preloads threading for them
    res = sandbox.run("import sys\nprint('threading' in sys.modules)")
    assert res.stdout == ("True\n" if sandbox.active_isolation == "none" else "False\n"), res
    code = "import threading, time\ndef f():\n    time.sleep(0.05)\n    print('late', flush=True)\n"
    code += "threading.Thread(target=f).start()\nprint('early')"
    res = sandbox.run(code)
    assert res.stdout == "early\nlate\n", res


MARK = "hg-leftover-" + uuid.uuid4().hex

LEAVE_BEHIND = r"""
import os
if os.access("/dev/shm", os.W_OK):
    os.makedirs("/dev/shm/sticky/deeper")
    os.chmod("/dev/shm/sticky", 0o1777)
    with open("/dev/shm/sticky/deeper/MARK", "w") as fh:
        fh.write("left")
os.makedirs("sticky/deeper", exist_ok=True)
os.chmod("sticky", 0o1777)
for d in ("sticky", "sticky/deeper"):
    with open(os.path.join(d, "MARK"), "w") as fh:
        fh.write("left")
os.makedirs("closed/inner")
with open("closed/inner/MARK", "w") as fh:
    fh.write("left")
os.chmod("closed/inner", 0)
os.chmod("closed", 0)
""".replace("MARK", MARK)

FIND_LEFTOVERS = r"""
import os
found = []
for top in ("/tmp", "/dev/shm", os.path.dirname(os.getcwd())):
    try:
        names = os.listdir(top)
    except OSError:
        continue
    for name in names:
        path = os.path.join(top, name)
        try:
            mine = os.lstat(path).st_uid == os.getuid()
        except OSError:
            continue
        if path == os.getcwd() or not mine:
            continue
        for root, dirs, files in os.walk(path):
            found += [os.path.join(root, f) for f in files if f == "MARK"]
print(sorted(found))
""".replace("MARK", MARK)


def test_leftovers_hard_to_remove_never_reach_the_next_job(sandbox: ProcessSandbox) -> None:
    res = sandbox.run(LEAVE_BEHIND)
    assert res.exit_code == 0, res
    res = sandbox.run(FIND_LEFTOVERS)
    assert res.exit_code == 0, res
    assert res.stdout == "[]\n", res


# The job's child is forked and set up before its request comes (server/jobs.py, _Standby).


def test_job_holds_only_its_standard_descriptors(sandbox: ProcessSandbox) -> None:
    for _ in range(2):
        res = sandbox.run("import os\nprint(sorted(int(fd) for fd in os.listdir('/proc/self/fd')))")
        assert res.stdout == "[0, 1, 2, 3, 4]\n", res  # 4: the listing's own descriptor


def test_large_request_reaches_the_job(sandbox: ProcessSandbox) -> None:
    text = "x" * (1 << 20) + "\n"
    code = "import sys\nprint(len(open('big.txt').read()), len(sys.stdin.read()))"
    res = sandbox.run(code, files={"big.txt": text}, stdin=text * 2)
    assert res.stdout == f"{len(text)} {2 * len(text)}\n", res


def test_timeout_counts_from_the_request(sandbox: ProcessSandbox) -> None:
    res = sandbox.run("import time\ntime.sleep(30)", timeout_s=1.0)
    assert res.timed_out and res.reason == "timeout", res
    assert 1.0 <= res.duration_s < 2.5, res


def test_bad_request_answered_and_standby_kept(sandbox: ProcessSandbox) -> None:
    sandbox.start()
    server = sandbox._server
    assert server is not None
    assert "error" in server.request([1, 2], 5.0)  # type: ignore[arg-type]
    res = sandbox.run("print(6 * 7)")
    assert res.stdout == "42\n", res


def _processes_of(uid: int) -> list[int]:
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status") as fh:
                line = next(row for row in fh if row.startswith("Uid:"))
        except (OSError, StopIteration):
            continue
        if int(line.split()[1]) == uid:
            pids.append(int(name))
    return pids


def test_no_process_of_the_jobs_uid_outlives_the_sandbox() -> None:
    if os.geteuid() != 0:
        pytest.skip("jobs run as the caller's uid")
    sb = ProcessSandbox(cache=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert sb.run("print(1)").stdout == "1\n"
    assert _processes_of(sb.job_uid) == []  # the next job's child waits for its request as the server's uid
    sb.close()
    deadline = time.monotonic() + 5
    while _processes_of(sb.job_uid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _processes_of(sb.job_uid) == []


def test_standby_killed_while_waiting_is_replaced() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to find the jobs' processes")
    sb = ProcessSandbox(cache=False, isolation="none", require_isolation=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert sb.run("print(1)").stdout == "1\n"
    server = sb.server_pid  # without isolation, the server itself
    assert server is not None
    deadline = time.monotonic() + 5
    standby: list[int] = []
    while not standby and time.monotonic() < deadline:  # forked after the response
        with open(f"/proc/{server}/task/{server}/children") as fh:
            standby = [int(pid) for pid in fh.read().split()]
    assert len(standby) == 1
    os.kill(standby[0], 9)
    while time.monotonic() < deadline:  # dead (a zombie until the server reaps it) before the next request
        with open(f"/proc/{standby[0]}/stat") as fh:
            if fh.read().rsplit(")", 1)[1].split()[0] == "Z":
                break
    res = sb.run("print(2)")
    assert res.stdout == "2\n" and res.exit_code == 0, res
    sb.close()
