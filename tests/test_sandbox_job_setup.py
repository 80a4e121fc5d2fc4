"""The job setup of the process sandbox's server (``harness_gym/sandbox/server.py``) after its fast path (issue 28):
what a job sees is what the per-job definition it replaced gave.

- The environment is built once in the server (``_set_job_env``) and only ``HOME``, ``TMPDIR`` and ``PWD`` are
  set per job: the job's ``os.environ`` and the C library's ``environ`` (what a subprocess inherits) must equal,
  in order, the old definition: the server's ``PATH``/``LANG``/``LC_ALL``/``TZ``, then ``JOB_ENV``, then the three.
- ``tempfile`` answers the job's own work dir.
- The seccomp filter, built once in the server, is in force in every job (not only in the first).
- ``threading`` is no longer imported by the server; a job that imports it still has its non-daemon threads
  joined before it exits.
- What a job leaves in its work dir never reaches the next job, even when the job made it hard to remove.
"""

from __future__ import annotations

import json
import os
import uuid
import warnings
from collections.abc import Iterator

import pytest

from harness_gym.sandbox import ProcessSandbox
from harness_gym.sandbox import process as process_mod
from harness_gym.sandbox.client import JOB_ENV
from harness_gym.sandbox.server import _JOB_ENV_KEEP

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
    sb = ProcessSandbox(isolation=request.param, cache=False)
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
