"""Containment tests of the process sandbox (DESIGN §6, issue 2).

Every containment test checks that the job was contained and that the same sandbox then serves a normal
job. Assertions that need namespaces are skipped, with the reason, when the sandbox had to run without them.
"""

from __future__ import annotations

import os
import pickle
import signal
import socket
import threading
import time
import uuid
import warnings
from pathlib import Path
from typing import Iterator

import pytest

from harness_gym.core.types import ExecResult
from harness_gym.sandbox import (
    CachedSandbox,
    ProcessSandbox,
    ResultCache,
    Sandbox,
    make_sandbox,
)
from harness_gym.sandbox import process as process_mod

SECRET = "hg-secret-" + uuid.uuid4().hex
IS_ROOT = os.geteuid() == 0


@pytest.fixture(scope="module")
def sandbox() -> Iterator[ProcessSandbox]:
    """One sandbox for the module, created after a secret was put into the test process's environment."""
    os.environ["HG_SECRET"] = SECRET
    try:
        sb = ProcessSandbox()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            sb.start()
        yield sb
        sb.close()
    finally:
        os.environ.pop("HG_SECRET", None)


def namespaced(sb: ProcessSandbox) -> bool:
    return sb.active_isolation in ("bwrap", "unshare")


def assert_serves(sb: Sandbox) -> None:
    """The sandbox still runs a normal job correctly."""
    res = sb.run("print(1+1)")
    assert res.stdout == "2\n", res
    assert res.exit_code == 0 and res.ok, res


def job_uid_processes(sb: ProcessSandbox) -> list[int]:
    """Host pids owned by the sandbox's job uid (what jobs run as when the tests run as root)."""
    pids = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if os.stat(f"/proc/{name}").st_uid == sb.job_uid:
                    pids.append(int(name))
            except OSError:
                pass
    return pids


def test_normal_job(sandbox: ProcessSandbox) -> None:
    res = sandbox.run("import sys\nprint('out')\nprint('err', file=sys.stderr)")
    assert isinstance(res, ExecResult)
    assert (res.stdout, res.stderr, res.exit_code, res.timed_out, res.reason) == ("out\n", "err\n", 0, False, "")
    assert res.duration_s >= 0 and not res.cached
    assert isinstance(sandbox, Sandbox)


def test_infinite_loop(sandbox: ProcessSandbox) -> None:
    res = sandbox.run("while True:\n    pass", timeout_s=0.5)
    assert res.timed_out and res.reason == "timeout" and res.exit_code != 0
    assert_serves(sandbox)


def test_sleep_past_timeout(sandbox: ProcessSandbox) -> None:
    res = sandbox.run("import time\nprint('before', flush=True)\ntime.sleep(60)\nprint('after')", timeout_s=0.3)
    assert res.timed_out and res.reason == "timeout"
    assert res.stdout == "before\n"
    assert_serves(sandbox)


def test_cpu_burning_threads_time_out(sandbox: ProcessSandbox) -> None:
    code = (
        "import threading, time\n"
        "def spin():\n    while True:\n        pass\n"
        "for _ in range(3):\n    threading.Thread(target=spin, daemon=True).start()\n"
        "time.sleep(60)"
    )
    res = sandbox.run(code, timeout_s=0.5)
    assert res.timed_out and res.reason == "timeout"
    assert_serves(sandbox)


@pytest.mark.parametrize(
    "code",
    ["blocks = []\nwhile True:\n    blocks.append(bytearray(10**7))", "x = bytearray(10**12)"],
    ids=["grow", "huge"],
)
def test_memory_bomb(sandbox: ProcessSandbox, code: str) -> None:
    res = sandbox.run(code, memory_mb=128, timeout_s=10)
    assert res.reason == "memory" and not res.timed_out
    assert res.exit_code != 0 and "MemoryError" in res.stderr
    assert_serves(sandbox)


def test_fork_bomb(sandbox: ProcessSandbox) -> None:
    code = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass"
    res = sandbox.run(code, timeout_s=1.0)
    assert res.timed_out and res.reason == "timeout"
    assert_serves(sandbox)
    if IS_ROOT:
        assert job_uid_processes(sandbox) == []


def test_process_limit_enforced(sandbox: ProcessSandbox) -> None:
    code = (
        "import os, time\n"
        "n = 0\n"
        "try:\n"
        "    for _ in range(10000):\n"
        "        if os.fork() == 0:\n"
        "            time.sleep(60)\n"
        "            os._exit(0)\n"
        "        n += 1\n"
        "except OSError:\n"
        "    print('limited', n)\n"
    )
    res = sandbox.run(code, timeout_s=10)
    assert res.stdout.startswith("limited"), res
    assert int(res.stdout.split()[1]) <= sandbox.max_processes
    assert not res.timed_out
    assert_serves(sandbox)
    if IS_ROOT:
        assert job_uid_processes(sandbox) == []


def test_background_process_does_not_survive(sandbox: ProcessSandbox) -> None:
    tag = uuid.uuid4().hex[:8]
    code = (
        "import subprocess, sys\n"
        f"subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)', '{tag}'], start_new_session=True)\n"
        "print('started')"
    )
    res = sandbox.run(code)
    assert res.stdout == "started\n", res
    time.sleep(0.1)
    leftovers = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if tag in Path(f"/proc/{name}/cmdline").read_bytes().decode(errors="replace"):
                    leftovers.append(name)
            except OSError:
                pass
    assert leftovers == []
    assert_serves(sandbox)


def test_network_blocked(sandbox: ProcessSandbox) -> None:
    if not namespaced(sandbox):
        pytest.skip(f"no network namespace (isolation={sandbox.active_isolation!r})")
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.setblocking(False)
    port = listener.getsockname()[1]
    code = (
        "import socket\n"
        f"for addr in [('127.0.0.1', {port}), ('8.8.8.8', 53)]:\n"
        "    s = socket.socket()\n"
        "    s.settimeout(2)\n"
        "    try:\n"
        "        s.connect(addr)\n"
        "        print('connected', addr[0])\n"
        "    except OSError as exc:\n"
        "        print('blocked', addr[0], type(exc).__name__)\n"
    )
    try:
        res = sandbox.run(code)
        with pytest.raises(BlockingIOError):
            listener.accept()
    finally:
        listener.close()
    assert "connected" not in res.stdout, res
    assert res.stdout.count("blocked") == 2, res
    assert_serves(sandbox)


def test_write_outside_workdir(sandbox: ProcessSandbox, tmp_path: Path) -> None:
    name = "hg-escape-" + uuid.uuid4().hex
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)  # writable by anyone: only the mount namespace keeps the job out
    targets = [f"/tmp/../etc/{name}", f"/work/main/{name}", f"/root/{name}", f"/{name}", f"/usr/{name}"]
    if namespaced(sandbox):
        targets.append(str(shared / name))
    code = (
        f"for path in {targets!r}:\n"
        "    try:\n"
        "        with open(path, 'w') as fh:\n"
        "            fh.write('x')\n"
        "        print('wrote', path)\n"
        "    except OSError:\n"
        "        print('refused', path)\n"
    )
    res = sandbox.run(code)
    assert res.exit_code == 0, res
    for path in targets:
        assert not os.path.exists(path), f"the job created {path} on the host"
    assert_serves(sandbox)


def test_host_files_not_visible(sandbox: ProcessSandbox) -> None:
    if sandbox.active_isolation != "bwrap":
        pytest.skip(f"the host file system is only hidden under bubblewrap (isolation={sandbox.active_isolation!r})")
    here = str(Path(__file__).resolve())
    res = sandbox.run(f"import os\nprint(os.path.exists({here!r}), os.path.exists('/etc/shadow'))")
    assert res.stdout == "False False\n", res
    assert_serves(sandbox)


def test_parent_environment_secret_hidden(sandbox: ProcessSandbox) -> None:
    assert os.environ.get("HG_SECRET") == SECRET
    code = (
        "import glob, os\n"
        "print('env', 'HG_SECRET' in os.environ)\n"
        f"secret = {SECRET!r}\n"
        "for path in glob.glob('/proc/*/environ'):\n"
        "    try:\n"
        "        data = open(path, 'rb').read().decode(errors='replace')\n"
        "    except OSError:\n"
        "        continue\n"
        "    print('seen' if secret in data else 'clean', path)\n"
    )
    res = sandbox.run(code)
    assert res.stdout.startswith("env False\n"), res
    assert SECRET not in res.stdout and "seen" not in res.stdout
    assert_serves(sandbox)


def test_output_flood(sandbox: ProcessSandbox) -> None:
    res = sandbox.run("import sys\nsys.stdout.write('x' * (100 * 1024 * 1024))", timeout_s=20)
    assert res.reason == "output_limit" and not res.timed_out
    assert len(res.stdout) == sandbox.max_output_bytes
    assert_serves(sandbox)


def test_output_flood_in_small_writes(sandbox: ProcessSandbox) -> None:
    res = sandbox.run("import sys\nwhile True:\n    print('y' * 1000, file=sys.stderr)", timeout_s=20)
    assert res.reason == "output_limit" and not res.timed_out
    assert len(res.stderr) <= sandbox.max_output_bytes
    assert_serves(sandbox)


def test_kill_parent_and_everything(sandbox: ProcessSandbox) -> None:
    launcher = sandbox.server_pid
    code = (
        "import os, signal\n"
        "targets = [os.getppid(), 1, -1] + [int(p) for p in os.listdir('/proc') if p.isdigit()]\n"
        "for pid in targets:\n"
        "    if pid != os.getpid():\n"
        "        try:\n"
        "            os.kill(pid, signal.SIGKILL)\n"
        "        except OSError:\n"
        "            pass\n"
        "print('done')"
    )
    res = sandbox.run(code)
    assert res.stdout == "done\n", res
    assert sandbox.server_pid == launcher, "the server was killed and restarted"
    assert_serves(sandbox)


def test_server_death_is_a_result_and_recovers() -> None:
    with ProcessSandbox() as sb:
        sb.start()
        launcher = sb.server_pid
        assert launcher is not None
        threading.Timer(0.3, os.kill, (launcher, signal.SIGKILL)).start()
        res = sb.run("import time\ntime.sleep(20)", timeout_s=10)
        assert res.reason in ("sandbox_error", "killed") and res.exit_code != 0
        assert_serves(sb)
        assert sb.server_pid not in (None, launcher)


def test_syntax_error_is_a_result(sandbox: ProcessSandbox) -> None:
    res = sandbox.run("def f(:\n    pass")
    assert res.exit_code == 1 and res.reason == "" and not res.timed_out
    assert "SyntaxError" in res.stderr and 'File "main.py", line 1' in res.stderr
    assert_serves(sandbox)


def test_import_error_is_a_result(sandbox: ProcessSandbox) -> None:
    res = sandbox.run("import numpy_does_not_exist_xyz")
    assert res.exit_code == 1 and res.reason == ""
    assert "ModuleNotFoundError" in res.stderr and "Traceback (most recent call last)" in res.stderr
    assert "server" not in res.stderr  # the traceback starts at the job's own code
    assert_serves(sandbox)


def test_exception_and_exit_codes(sandbox: ProcessSandbox) -> None:
    res = sandbox.run("x = 1\nraise ValueError('boom')")
    assert res.exit_code == 1 and "ValueError: boom" in res.stderr and "line 2" in res.stderr
    assert sandbox.run("import sys\nsys.exit(3)").exit_code == 3
    res = sandbox.run("raise SystemExit('bye')")
    assert res.exit_code == 1 and res.stderr == "bye\n"
    assert sandbox.run("import os\nos._exit(0)").exit_code == 0


def test_killed_by_signal(sandbox: ProcessSandbox) -> None:
    res = sandbox.run("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)")
    assert res.reason == "killed" and res.exit_code == -signal.SIGSEGV
    assert_serves(sandbox)


def test_files_and_stdin(sandbox: ProcessSandbox) -> None:
    code = (
        "import os, sys\n"
        "import helper\n"
        "print(open('data/in.txt').read(), helper.VALUE, sys.stdin.read())\n"
        "print(os.getcwd() == os.environ['HOME'], sorted(os.listdir('.')))\n"
    )
    res = sandbox.run(code, files={"data/in.txt": "hello", "helper.py": "VALUE = 42\n"}, stdin="from stdin")
    assert res.stdout == "hello 42 from stdin\nTrue ['data', 'helper.py']\n", res
    res = sandbox.run("print(input() + '!')\nprint(input())", stdin="a\nb\n")
    assert res.stdout == "a!\nb\n"


def test_bad_file_names_rejected(sandbox: ProcessSandbox) -> None:
    for name in ("../escape.txt", "/etc/escape.txt", ""):
        with pytest.raises(ValueError):
            sandbox.run("pass", files={name: "x"})
    assert_serves(sandbox)


def test_work_dir_is_private_and_fresh(sandbox: ProcessSandbox) -> None:
    first = sandbox.run("import os\nopen('left.txt', 'w').write('x')\nprint(os.getcwd())")
    second = sandbox.run("import os\nprint(os.getcwd(), os.listdir('.'))")
    assert first.exit_code == 0 and second.exit_code == 0
    assert "left.txt" not in second.stdout


def test_stdlib_and_site_packages_importable(sandbox: ProcessSandbox) -> None:
    res = sandbox.run("import decimal, sqlite3, csv, fractions\nimport numpy\nprint(int(numpy.arange(4).sum()))")
    assert res.stdout == "6\n", res


def test_non_daemon_thread_output_kept(sandbox: ProcessSandbox) -> None:
    code = "import threading, time\ndef f():\n    time.sleep(0.05)\n    print('late')\n"
    code += "threading.Thread(target=f).start()"
    assert sandbox.run(code).stdout == "late\n"


def test_preload_and_missing_preload() -> None:
    with ProcessSandbox(preload=("decimal", "no_such_module_xyz")) as sb:
        with pytest.warns(RuntimeWarning, match="no_such_module_xyz"):
            res = sb.run("import sys\nprint('decimal' in sys.modules)")
        assert res.stdout == "True\n", res
        assert_serves(sb)


def test_cache() -> None:
    cache = ResultCache(maxsize=2)
    with ProcessSandbox(cache=cache) as sb:
        first = sb.run("import random\nprint(random.random())")
        second = sb.run("import random\nprint(random.random())")
        assert not first.cached and second.cached and first.stdout == second.stdout
        assert sb.run("import random\nprint(random.random())", stdin="x").cached is False
        slow = sb.run("import time\ntime.sleep(5)", timeout_s=0.2)
        again = sb.run("import time\ntime.sleep(5)", timeout_s=0.2)
        assert slow.timed_out and not again.cached, "a timed-out job must not be cached"
        for i in range(3):
            sb.run(f"print({i})")
        assert len(cache) <= 2
    inner = ProcessSandbox()
    wrapped = CachedSandbox(inner, cache=ResultCache())
    try:
        assert not wrapped.run("print(7)").cached
        hit = wrapped.run("print(7)")
        assert hit.cached and hit.stdout == "7\n"
    finally:
        wrapped.close()
    assert inner.server_pid is None


def test_make_sandbox() -> None:
    sb = make_sandbox("process", max_output_bytes=1024)
    try:
        assert isinstance(sb, ProcessSandbox) and sb.max_output_bytes == 1024
        assert make_sandbox(sb) is sb
    finally:
        sb.close()
    with pytest.raises(NotImplementedError):
        make_sandbox("docker")
    with pytest.raises(ValueError):
        make_sandbox("nope")


def test_pickle_and_close() -> None:
    sb = ProcessSandbox()
    assert_serves(sb)
    clone = pickle.loads(pickle.dumps(sb))
    try:
        assert_serves(clone)
        assert clone.server_pid != sb.server_pid and clone.job_uid != sb.job_uid
    finally:
        clone.close()
    launcher = sb.server_pid
    assert launcher is not None
    sb.close()
    sb.close()
    assert sb.server_pid is None
    assert not Path(f"/proc/{launcher}").exists() or "Z" in Path(f"/proc/{launcher}/stat").read_text().split()[2]


@pytest.mark.skipif(
    not (IS_ROOT and process_mod.shutil.which("unshare")), reason="unshare mode needs root and util-linux unshare"
)
def test_unshare_mode() -> None:
    with ProcessSandbox(isolation="unshare") as sb:
        assert_serves(sb)
        assert sb.active_isolation == "unshare"
        res = sb.run("import os, decimal, socket\nprint(os.getuid(), os.getpid() > 1, os.path.exists('/proc/1'))")
        assert res.stdout == f"{sb.job_uid} True True\n", res
        net = sb.run(
            "import socket\ntry:\n    socket.create_connection(('8.8.8.8', 53), timeout=2)\n"
            "except OSError:\n    print('blocked')"
        )
        assert net.stdout == "blocked\n", net
        assert sb.run("while True:\n    pass", timeout_s=0.3).timed_out
        assert_serves(sb)


def test_no_isolation_mode_warns_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(process_mod, "_warned_reduced", False)
    with pytest.warns(RuntimeWarning, match="without namespace isolation"):
        sb = ProcessSandbox(isolation="none")
        assert_serves(sb)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            other = ProcessSandbox(isolation="none")
            assert_serves(other)
            other.close()
        assert sb.run("while True:\n    pass", timeout_s=0.3).timed_out
        assert_serves(sb)
    finally:
        sb.close()
