"""One containment suite for both sandboxes (process and Docker).

Every test that takes the ``sandbox`` or ``backend`` fixture runs on the process and the docker backend.
Every containment test checks that the job was contained, reported with a clear reason, and that the same
sandbox then serves a normal job. Docker tests run against a real dockerd; they are skipped, with the
reason, only when dockerd is unreachable and ``HG_REQUIRE_DOCKER`` is unset (CI sets it, so a missing
docker fails there). Assertions that need namespaces are skipped, with the reason, when the process
sandbox had to run without them. ``tests/conftest.py`` checks that no container outlives the session.
"""

from __future__ import annotations

import os
import pickle
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness_gym.core.actions import Action
from harness_gym.core.types import Draft
from harness_gym.sandbox import (
    CachedSandbox,
    DockerSandbox,
    DockerUnavailableError,
    ExecRecorder,
    ExecResult,
    IsolationError,
    ProcessSandbox,
    ResultCache,
    Sandbox,
    make_sandbox,
)
from harness_gym.sandbox import docker as docker_mod
from harness_gym.sandbox import process as process_mod
from harness_gym.sandbox.client import ServerSandbox

SECRET = "hg-secret-" + uuid.uuid4().hex
IS_ROOT = os.geteuid() == 0
BACKENDS = ("process", "docker")


def docker_missing() -> str:
    """Why the docker backend cannot run here ("" when it can)."""
    try:
        DockerSandbox().close()  # checks the SDK, the CLI, dockerd and the image; starts no container
    except DockerUnavailableError as exc:
        return str(exc)
    return ""


def require_backend(name: str) -> str:
    """Skip (or, with HG_REQUIRE_DOCKER set, fail) a docker test when docker is not usable."""
    if name == "docker":
        why = docker_missing()
        if why and os.environ.get("HG_REQUIRE_DOCKER"):
            pytest.fail(f"HG_REQUIRE_DOCKER is set but the docker backend cannot run: {why}")
        if why:
            pytest.skip(f"docker backend unavailable: {why}")
    return name


@pytest.fixture(scope="module", params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """The name of a sandbox backend: "process" and "docker"."""
    return require_backend(request.param)


@pytest.fixture(scope="module")
def docker_backend() -> str:
    """For docker-only tests."""
    return require_backend("docker")


@pytest.fixture(scope="module")
def sandbox(backend: str) -> Iterator[ServerSandbox]:
    """One sandbox per backend for the module, made after a secret was put into the test process's environment."""
    os.environ["HG_SECRET"] = SECRET
    try:
        sb = make_sandbox(backend)
        assert isinstance(sb, ServerSandbox)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            sb.start()
        yield sb
        sb.close()
    finally:
        os.environ.pop("HG_SECRET", None)


def namespaced(sb: Sandbox) -> bool:
    return isinstance(sb, DockerSandbox) or getattr(sb, "active_isolation", "") in ("bwrap", "unshare")


def assert_serves(sb: Sandbox) -> None:
    """The sandbox still runs a normal job correctly."""
    res = sb.run("print(1+1)")
    assert res.stdout == "2\n", res
    assert res.exit_code == 0 and res.ok, res


def job_uid_processes(sb: ServerSandbox) -> list[int]:
    """Host pids owned by the sandbox's job uid, except a container's server (its PID 1)."""
    server = sb.init_pid if isinstance(sb, DockerSandbox) else None
    pids = []
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != server:
            try:
                if os.stat(f"/proc/{name}").st_uid == sb.job_uid:
                    pids.append(int(name))
            except OSError:
                pass
    return pids


def test_normal_job(sandbox: ServerSandbox) -> None:
    res = sandbox.run("import sys\nprint('out')\nprint('err', file=sys.stderr)")
    assert isinstance(res, ExecResult)
    assert (res.stdout, res.stderr, res.exit_code, res.timed_out, res.reason) == ("out\n", "err\n", 0, False, "")
    assert res.duration_s >= 0 and not res.cached
    assert isinstance(sandbox, Sandbox)


def test_infinite_loop(sandbox: ServerSandbox) -> None:
    res = sandbox.run("while True:\n    pass", timeout_s=0.5)
    assert res.timed_out and res.reason == "timeout" and res.exit_code != 0
    assert_serves(sandbox)


def test_sleep_past_timeout(sandbox: ServerSandbox) -> None:
    res = sandbox.run("import time\nprint('before', flush=True)\ntime.sleep(60)\nprint('after')", timeout_s=0.3)
    assert res.timed_out and res.reason == "timeout"
    assert res.stdout == "before\n"
    assert_serves(sandbox)


def test_cpu_burning_threads_time_out(sandbox: ServerSandbox) -> None:
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
def test_memory_bomb(sandbox: ServerSandbox, code: str) -> None:
    res = sandbox.run(code, memory_mb=128, timeout_s=10)
    assert res.reason == "memory" and not res.timed_out
    assert res.exit_code != 0 and "MemoryError" in res.stderr
    assert_serves(sandbox)


def test_fork_bomb(sandbox: ServerSandbox) -> None:
    code = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass"
    res = sandbox.run(code, timeout_s=1.0)
    assert res.timed_out and res.reason == "timeout"
    assert_serves(sandbox)
    if IS_ROOT or isinstance(sandbox, DockerSandbox):
        assert job_uid_processes(sandbox) == []


def test_process_limit_enforced(sandbox: ServerSandbox) -> None:
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
    if IS_ROOT or isinstance(sandbox, DockerSandbox):
        assert job_uid_processes(sandbox) == []


def test_background_process_does_not_survive(sandbox: ServerSandbox) -> None:
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


def test_network_blocked(sandbox: ServerSandbox) -> None:
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


def test_write_outside_workdir(sandbox: ServerSandbox, tmp_path: Path) -> None:
    name = "hg-escape-" + uuid.uuid4().hex
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)  # writable by anyone: only the mount namespace keeps the job out
    targets = [f"/tmp/../etc/{name}", f"/work/main/{name}", f"/root/{name}", f"/{name}", f"/usr/{name}",
               f"/proc/1/root/{name}"]  # fmt: skip
    if hides_host_fs(sandbox):
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
    if hides_host_fs(sandbox):
        assert res.stdout.count("refused") == len(targets), res
    assert_serves(sandbox)


def hides_host_fs(sb: Sandbox) -> bool:
    """Whether jobs see none of the host's files (docker, or the process sandbox under bubblewrap)."""
    return isinstance(sb, DockerSandbox) or getattr(sb, "active_isolation", "") == "bwrap"


def test_host_files_not_visible(sandbox: ServerSandbox) -> None:
    if not hides_host_fs(sandbox):
        pytest.skip(f"the host file system is only hidden under bubblewrap (isolation={sandbox.active_isolation!r})")
    here = str(Path(__file__).resolve())
    code = (
        "import os\n"
        f"print(os.path.exists({here!r}))\n"
        f"for path in ['/etc/shadow', '/proc/1/root' + {here!r}, '/proc/1/root/etc/shadow']:\n"
        "    try:\n"
        "        open(path).read()\n"
        "        print('read', path)\n"
        "    except OSError:\n"
        "        print('refused')\n"
    )
    res = sandbox.run(code)
    assert res.stdout == "False\nrefused\nrefused\nrefused\n", res
    assert_serves(sandbox)


def test_no_escalation(sandbox: ServerSandbox) -> None:
    """No capabilities, no_new_privs (setuid binaries give nothing), and no way at the server or the kernel."""
    code = r"""
import ctypes, os, shutil, signal, subprocess
status = dict(line.split(':', 1) for line in open('/proc/self/status').read().splitlines())
print('privs', status['NoNewPrivs'].strip(), status['CapEff'].strip(), status['CapPrm'].strip(), os.geteuid() != 0)
libc = ctypes.CDLL(None, use_errno=True)

def ptrace_pid1():
    if libc.ptrace(16, 1, 0, 0) != 0:  # PTRACE_ATTACH
        raise OSError(ctypes.get_errno(), 'ptrace')

def attempt(name, fn):
    try:
        fn()
        print(name, 'ALLOWED')
    except OSError:
        print(name, 'refused')

attempt('setuid', lambda: os.setuid(0))
attempt('sysrq', lambda: open('/proc/sysrq-trigger', 'w').write('h'))
attempt('pid1-mem', lambda: open('/proc/1/mem', 'rb').read(1))
attempt('pid1-fd', lambda: os.listdir('/proc/1/fd'))
attempt('ptrace', ptrace_pid1)
attempt('kernel-param', lambda: open('/proc/sys/kernel/hostname', 'w').write('x'))
su = shutil.which('su')
if su and os.stat(su).st_mode & 0o4000:
    out = subprocess.run([su, '-c', 'id -u', 'root'], stdin=subprocess.DEVNULL, capture_output=True, text=True)
    print('su', 'ALLOWED' if out.stdout.strip() == '0' else 'refused')
"""
    res = sandbox.run(code)
    assert res.exit_code == 0, res
    assert res.stdout.startswith("privs 1 0000000000000000 0000000000000000 True\n"), res
    assert "ALLOWED" not in res.stdout and res.stdout.count("refused") >= 6, res
    assert_serves(sandbox)


def test_parent_environment_secret_hidden(sandbox: ServerSandbox) -> None:
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


def test_output_flood(sandbox: ServerSandbox) -> None:
    res = sandbox.run("import sys\nsys.stdout.write('x' * (100 * 1024 * 1024))", timeout_s=20)
    assert res.reason == "output_limit" and not res.timed_out
    assert len(res.stdout) == sandbox.max_output_bytes
    assert_serves(sandbox)


def test_output_flood_in_small_writes(sandbox: ServerSandbox) -> None:
    res = sandbox.run("import sys\nwhile True:\n    print('y' * 1000, file=sys.stderr)", timeout_s=20)
    assert res.reason == "output_limit" and not res.timed_out
    assert len(res.stderr) <= sandbox.max_output_bytes
    assert_serves(sandbox)


def test_kill_parent_and_everything(sandbox: ServerSandbox) -> None:
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


def test_server_death_is_a_result_and_recovers(backend: str) -> None:
    with make_sandbox(backend) as sb:
        sb.start()
        launcher = sb.server_pid
        assert launcher is not None
        threading.Timer(0.5, os.kill, (launcher, signal.SIGKILL)).start()
        res = sb.run("import time\ntime.sleep(20)", timeout_s=10)
        assert res.reason in ("sandbox_error", "killed") and res.exit_code != 0
        assert_serves(sb)
        assert sb.server_pid not in (None, launcher)


def test_recycled_every_n_jobs(backend: str) -> None:
    with make_sandbox(backend, recycle_after=2) as sb:
        assert_serves(sb)
        first = sb.server_pid
        assert first is not None
        assert_serves(sb)
        assert sb.server_pid is None, "the server must be stopped after recycle_after jobs"
        assert_serves(sb)
        assert sb.server_pid not in (None, first)


def test_syntax_error_is_a_result(sandbox: ServerSandbox) -> None:
    res = sandbox.run("def f(:\n    pass")
    assert res.exit_code == 1 and res.reason == "" and not res.timed_out
    assert "SyntaxError" in res.stderr and 'File "main.py", line 1' in res.stderr
    assert_serves(sandbox)


def test_import_error_is_a_result(sandbox: ServerSandbox) -> None:
    res = sandbox.run("import numpy_does_not_exist_xyz")
    assert res.exit_code == 1 and res.reason == ""
    assert "ModuleNotFoundError" in res.stderr and "Traceback (most recent call last)" in res.stderr
    assert "server" not in res.stderr  # the traceback starts at the job's own code
    assert_serves(sandbox)


def test_exception_and_exit_codes(sandbox: ServerSandbox) -> None:
    res = sandbox.run("x = 1\nraise ValueError('boom')")
    assert res.exit_code == 1 and "ValueError: boom" in res.stderr and "line 2" in res.stderr
    assert sandbox.run("import sys\nsys.exit(3)").exit_code == 3
    res = sandbox.run("raise SystemExit('bye')")
    assert res.exit_code == 1 and res.stderr == "bye\n"
    assert sandbox.run("import os\nos._exit(0)").exit_code == 0


def test_killed_by_signal(sandbox: ServerSandbox) -> None:
    res = sandbox.run("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)")
    assert res.reason == "killed" and res.exit_code == -signal.SIGSEGV
    assert_serves(sandbox)


def test_files_and_stdin(sandbox: ServerSandbox) -> None:
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


def test_bad_file_names_rejected(sandbox: ServerSandbox) -> None:
    for name in ("../escape.txt", "/etc/escape.txt", ""):
        with pytest.raises(ValueError):
            sandbox.run("pass", files={name: "x"})
    assert_serves(sandbox)


def test_work_dir_is_private_and_fresh(sandbox: ServerSandbox) -> None:
    first = sandbox.run("import os\nopen('left.txt', 'w').write('x')\nprint(os.getcwd())")
    second = sandbox.run("import os\nprint(os.getcwd(), os.listdir('.'))")
    assert first.exit_code == 0 and second.exit_code == 0
    assert "left.txt" not in second.stdout


def test_stdlib_and_site_packages_importable(sandbox: ServerSandbox) -> None:
    res = sandbox.run("import decimal, sqlite3, csv, fractions\nimport numpy\nprint(int(numpy.arange(4).sum()))")
    assert res.stdout == "6\n", res


def test_non_daemon_thread_output_kept(sandbox: ServerSandbox) -> None:
    code = "import threading, time\ndef f():\n    time.sleep(0.05)\n    print('late')\n"
    code += "threading.Thread(target=f).start()"
    assert sandbox.run(code).stdout == "late\n"


def test_preload_and_missing_preload(backend: str) -> None:
    with make_sandbox(backend, preload=("decimal", "no_such_module_xyz")) as sb:
        with pytest.warns(RuntimeWarning, match="no_such_module_xyz"):
            res = sb.run("import sys\nprint('decimal' in sys.modules)")
        assert res.stdout == "True\n", res
        assert_serves(sb)


def test_cache(backend: str) -> None:
    cache = ResultCache(maxsize=2)
    with make_sandbox(backend, cache=cache) as sb:
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
    inner = make_sandbox(backend)
    wrapped = CachedSandbox(inner, cache=ResultCache())
    try:
        assert not wrapped.run("print(7)").cached
        hit = wrapped.run("print(7)")
        assert hit.cached and hit.stdout == "7\n"
    finally:
        wrapped.close()
    assert inner.server_pid is None


def test_make_sandbox(backend: str) -> None:
    sb = make_sandbox(backend, max_output_bytes=1024)
    try:
        assert isinstance(sb, {"process": ProcessSandbox, "docker": DockerSandbox}[backend])
        assert sb.max_output_bytes == 1024
        assert make_sandbox(sb) is sb
        res = sb.run("print('z' * 5000)")
        assert res.reason == "output_limit" and len(res.stdout) == 1024
    finally:
        sb.close()
    with pytest.raises(ValueError):
        make_sandbox("nope")


def test_pickle_and_close(backend: str) -> None:
    sb = make_sandbox(backend)
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
    with ProcessSandbox(isolation="unshare", require_isolation=False) as sb:
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
    monkeypatch.setattr(process_mod, "_warned", set())
    with pytest.warns(RuntimeWarning, match="weaker than bubblewrap"):
        sb = ProcessSandbox(isolation="none", require_isolation=False)
        assert_serves(sb)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            other = ProcessSandbox(isolation="none", require_isolation=False)
            assert_serves(other)
            other.close()
        assert sb.run("while True:\n    pass", timeout_s=0.3).timed_out
        assert_serves(sb)
    finally:
        sb.close()


# ----- isolation in force, degradation, hidden data --------------------------------------------------------
USERNS_PROBE = (
    "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
    "print('created' if libc.unshare(0x10000000) == 0 else 'refused', ctypes.get_errno())\n"
)


def test_user_namespaces_refused(sandbox: ServerSandbox) -> None:
    res = sandbox.run(USERNS_PROBE)
    assert res.stdout.split()[0] == "refused", res
    assert sandbox.isolation_report()["userns_blocked"] is True
    assert_serves(sandbox)


IPC_PROBE = """
import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
calls = {"shmget": lambda: libc.shmget(0, 4096, 0o1600), "msgget": lambda: libc.msgget(0, 0o1600),
         "semget": lambda: libc.semget(0, 1, 0o1600)}
print(" ".join(name + ("=refused" if fn() < 0 and ctypes.get_errno() == errno.EPERM else "=made")
               for name, fn in calls.items()))
"""


def test_sysv_ipc_refused(sandbox: ServerSandbox) -> None:
    """Shared memory, message queues and semaphores would outlive the job in the IPC namespace every job of the
    server shares (tests/test_hostile.py shows none crosses from job to job through the env API)."""
    res = sandbox.run(IPC_PROBE)
    assert res.stdout.split() == ["shmget=refused", "msgget=refused", "semget=refused"], res
    assert sandbox.isolation_report()["ipc_blocked"] is True
    assert_serves(sandbox)


def test_shared_memory_and_tmp_are_private_per_job(sandbox: ServerSandbox) -> None:
    marker = uuid.uuid4().hex
    first = sandbox.run(
        "import os\nfor d in ('/dev/shm', '/tmp'):\n"
        "    try:\n"
        f"        open(os.path.join(d, {marker!r}), 'w').write('x')\n"
        "        print('wrote', d)\n"
        "    except OSError:\n"
        "        print('refused', d)\n"
    )
    assert first.ok, first
    assert not any(Path(d, marker).exists() for d in ("/dev/shm", "/tmp")), "a job wrote into the host's directories"
    later = sandbox.run(f"import os\nprint([d for d in ('/dev/shm', '/tmp') if os.path.exists(os.path.join(d, {marker!r}))])")
    assert later.stdout == "[]\n", (first, later)
    assert_serves(sandbox)


def test_isolation_in_force_is_reported(sandbox: ServerSandbox) -> None:
    report = sandbox.isolation_report()
    assert report["in_force"] == sandbox.isolation_in_force
    if isinstance(sandbox, DockerSandbox):
        assert report["in_force"] == "docker" and not report["degraded"]
    else:
        assert report["in_force"] == sandbox.active_isolation and report["degraded"] == (report["in_force"] != "bwrap")


def _no_bwrap(monkeypatch: pytest.MonkeyPatch) -> None:
    real_which = process_mod.shutil.which
    monkeypatch.setattr(process_mod.shutil, "which", lambda name: None if name == "bwrap" else real_which(name))
    monkeypatch.setattr(process_mod, "_warned", set())


@pytest.mark.skipif(not IS_ROOT, reason="the unshare fallback needs root")
def test_degraded_isolation_warns_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    _no_bwrap(monkeypatch)
    with pytest.warns(RuntimeWarning, match=r"isolation 'unshare', weaker than bubblewrap \(bwrap: bwrap not found"):
        sb = ProcessSandbox(require_isolation=False)
        assert_serves(sb)
    try:
        report = sb.isolation_report()
        assert report["degraded"] and report["in_force"] == "unshare" and "bwrap not found" in report["reason"]
    finally:
        sb.close()


@pytest.mark.parametrize("via", ["argument", "environment"])
def test_required_isolation_turns_degradation_into_an_error(monkeypatch: pytest.MonkeyPatch, via: str) -> None:
    _no_bwrap(monkeypatch)
    kwargs: dict = {}
    if via == "argument":
        kwargs["require_isolation"] = True
        monkeypatch.delenv("HG_REQUIRE_ISOLATION", raising=False)
    else:
        monkeypatch.setenv("HG_REQUIRE_ISOLATION", "1")
    sb = ProcessSandbox(**kwargs)
    with pytest.raises(IsolationError, match="bwrap not found"):
        sb.run("print(1)")
    with pytest.raises(IsolationError, match="weaker than required"):
        ProcessSandbox(isolation="unshare", **kwargs)
    import gymnasium as gym

    env = gym.make("HarnessCode-v1", **kwargs).unwrapped
    env.reset(seed=0)
    env.context.draft = Draft(content="x = 1\n", candidate=-1, version=1)
    with pytest.raises(IsolationError):
        env.step(int(Action.CHECK))
    env.close()


@pytest.fixture(scope="module")
def installed_copy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A virtualenv under /tmp holding a copy of the package laid out as a wheel installs it (its data in
    site-packages/harness_gym/envs_data), as a user's ``pip install`` in a /tmp virtualenv gives."""
    import shutil
    import tempfile
    from site import getsitepackages

    import harness_gym
    from harness_gym.core.paths import data_root

    venv = Path(tempfile.mkdtemp(prefix="hg-test-venv-", dir="/tmp"))
    venv.chmod(0o755)  # as a virtualenv made by hand is
    try:
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
        site = next(venv.glob("lib/python*/site-packages"))
        # the dependencies come from this interpreter's site-packages, a virtualenv's included (which
        # --system-site-packages would miss: it gives the base interpreter's); the copy below comes first on sys.path
        (site / "hg_test_dependencies.pth").write_text("".join(f"{path}\n" for path in getsitepackages()))
        package = site / "harness_gym"
        shutil.copytree(Path(harness_gym.__file__).parent, package, ignore=shutil.ignore_patterns("__pycache__"))
        if not (package / "envs_data").exists():
            shutil.copytree(data_root(), package / "envs_data")
        yield venv
    finally:
        shutil.rmtree(venv, ignore_errors=True)


def _in_venv(venv: Path, code: str, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "HG_REQUIRE_ISOLATION")}
    return subprocess.run([str(venv / "bin" / "python"), "-c", code], cwd="/tmp", env={**clean, **env},
                          capture_output=True, text=True, timeout=120)


_PROBE_INSTALLED = """
import json, os, warnings
import harness_gym
from harness_gym.core.paths import data_path
from harness_gym.sandbox import ProcessSandbox
warnings.simplefilter("ignore")
tasks = str(data_path("code", "tasks.jsonl"))
assert os.path.dirname(harness_gym.__file__).startswith(os.environ["VENV"]), harness_gym.__file__
sb = ProcessSandbox(isolation=os.environ["ISOLATION"])
res = sb.run("import os\\nprint(os.path.exists(%r), os.listdir(%r))" % (tasks, os.path.dirname(harness_gym.__file__)))
print(json.dumps({"in_force": sb.active_isolation, "stdout": res.stdout, "stderr": res.stderr}))
"""


def test_bubblewrap_starts_from_a_virtualenv_under_tmp(installed_copy: Path) -> None:
    got = _in_venv(installed_copy, _PROBE_INSTALLED, VENV=str(installed_copy), ISOLATION="bwrap",
                   HG_REQUIRE_ISOLATION="1")
    assert got.returncode == 0, got.stderr[-2000:]
    import json

    report = json.loads(got.stdout.strip().splitlines()[-1])
    assert report["in_force"] == "bwrap" and report["stdout"] == "False []\n", report


@pytest.mark.skipif(not IS_ROOT, reason="the unshare mode needs root")
def test_unshare_mode_masks_the_installed_package_data(installed_copy: Path) -> None:
    got = _in_venv(installed_copy, _PROBE_INSTALLED, VENV=str(installed_copy), ISOLATION="unshare")
    assert got.returncode == 0, got.stderr[-2000:]
    import json

    report = json.loads(got.stdout.strip().splitlines()[-1])
    assert report["in_force"] == "unshare" and report["stdout"] == "False []\n", report


@pytest.mark.skipif(not IS_ROOT, reason="the unshare mode needs root")
def test_writable_space_is_bounded_without_bubblewrap() -> None:
    with ProcessSandbox(isolation="unshare", require_isolation=False) as sb, warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        res = sb.run(
            "import os\nblock = b'x' * (1 << 20)\nwritten = 0\n"
            "try:\n    for i in range(12):\n        with open(f'f{i}', 'wb') as fh:\n"
            "            for _ in range(40):\n                fh.write(block)\n                written += 1\n"
            "except OSError as exc:\n    print('stopped', exc.errno)\nprint(written)\n",
            timeout_s=20,
        )
        assert "stopped" in res.stdout and int(res.stdout.split()[-1]) <= 260, res
        assert_serves(sb)


# ----- docker only ----------------------------------------------------------------------------------------


def test_docker_container_is_locked_down(docker_backend: str) -> None:
    with DockerSandbox(container_memory_mb=1024, cpus=0.5, max_processes=32) as sb:
        assert_serves(sb)
        attrs = docker_mod.docker_client().api.inspect_container(sb.container_id)
        host, config = attrs["HostConfig"], attrs["Config"]
        assert config["User"] == f"{sb.job_uid}:{sb.job_uid}" and sb.job_uid != 0
        assert host["ReadonlyRootfs"] and host["NetworkMode"] == "none" and host["IpcMode"] == "none"
        assert host["CapDrop"] == ["ALL"] and not host["CapAdd"] and not host["Privileged"]
        assert host["SecurityOpt"] == ["no-new-privileges"]
        assert host["Memory"] == host["MemorySwap"] == 1024 * 1024 * 1024
        assert host["NanoCpus"] == 500_000_000 and 32 < host["PidsLimit"] <= 64
        assert set(host["Tmpfs"]) == {"/tmp"} and not host["Binds"]
        assert config["Labels"][docker_mod.LABEL] == "1"
        assert config["Labels"][docker_mod.OWNER_LABEL] == str(os.getpid())
        res = sb.run("import os\nprint(os.getuid(), os.getpid(), os.getcwd().startswith('/tmp/'))")
        assert res.stdout.split()[0] == str(sb.job_uid) and res.stdout.split()[2] == "True", res
        assert sb.init_pid is not None and Path(f"/proc/{sb.init_pid}").exists()
        container = sb.container_id
    assert container not in docker_mod.list_containers()


def test_docker_missing_image_is_a_clear_error(docker_backend: str) -> None:
    with pytest.raises(DockerUnavailableError, match="build_image.sh"):
        DockerSandbox(image="harness-gym-sandbox:no-such-tag")


def test_docker_unreachable_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("docker")
    if process_mod.shutil.which("docker") is None:
        pytest.skip("the docker CLI is not installed")
    monkeypatch.setattr(docker_mod, "_client_cache", [])
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    with pytest.raises(DockerUnavailableError, match="start_docker.sh"):
        make_sandbox("docker")


_OWNER_SCRIPT = (
    "import os, sys, time\n"
    "from harness_gym.sandbox import DockerSandbox\n"
    "sb = DockerSandbox()\n"
    "print(sb.run('print(1)').stdout.strip(), os.getpid(), flush=True)\n"
    "if sys.argv[1] == 'hang':\n"
    "    time.sleep(120)\n"
)


def owner_process(mode: str) -> tuple[subprocess.Popen, int]:
    """A Python process that makes a DockerSandbox, runs a job, then exits or hangs; and its pid."""
    proc = subprocess.Popen([sys.executable, "-c", _OWNER_SCRIPT, mode], stdout=subprocess.PIPE, text=True,
                            cwd=Path(__file__).resolve().parents[1])  # fmt: skip
    assert proc.stdout is not None
    first, pid = proc.stdout.readline().split()
    assert first == "1"
    assert docker_mod.list_containers(int(pid)), "the owner's container should be running"
    return proc, int(pid)


def test_docker_container_removed_at_interpreter_exit(docker_backend: str) -> None:
    proc, pid = owner_process("exit")
    assert proc.wait(timeout=60) == 0
    assert docker_mod.list_containers(pid) == []


def test_docker_container_removed_when_owner_is_killed(docker_backend: str) -> None:
    proc, pid = owner_process("hang")
    proc.kill()
    proc.wait(timeout=10)
    deadline = time.monotonic() + 30
    while docker_mod.list_containers(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert docker_mod.list_containers(pid) == []


def test_code_env_same_qualities_under_both_backends(docker_backend: str) -> None:
    gym = pytest.importorskip("gymnasium")
    import harness_gym  # noqa: F401  (registers the envs)
    from harness_gym_baselines.evaluate import run_episodes
    from harness_gym_baselines.policies.registry import make_policy

    outcomes = {}
    for name in BACKENDS:
        env = gym.make("HarnessCode-v1", sandbox=name)
        try:
            records = run_episodes(env, make_policy("forced-check"), 6, split="test", seed=0)
            assert type(env.unwrapped.sandbox).__name__ == {"process": "ProcessSandbox", "docker": "DockerSandbox"}[name]
        finally:
            env.close()
        outcomes[name] = [(r["task_id"], r["quality"], r["success"]) for r in records]
    assert outcomes["process"] == outcomes["docker"]
    assert len({q for _, q, _ in outcomes["docker"]}) > 1, "a handful of episodes should not all grade alike"


class _ScriptedSandbox:
    """Answers every job with the next of a fixed list of results."""

    def __init__(self, results: list[ExecResult]) -> None:
        self.results = list(results)
        self.closed = False

    def run(self, code: str, **kwargs: object) -> ExecResult:
        return self.results.pop(0)

    def close(self) -> None:
        self.closed = True


def test_exec_recorder_notes_cached_results_per_step() -> None:
    fresh = ExecResult("", "", 0, False, 0.01)
    hit = ExecResult("", "", 0, False, 0.0, cached=True)
    recorder = ExecRecorder(_ScriptedSandbox([fresh, hit, fresh, fresh]))
    recorder.start()
    assert recorder.run("a") is not None and not recorder.served_from_cache
    recorder.run("b")
    recorder.run("c")
    assert recorder.served_from_cache, "one cached job makes the step cached"
    recorder.start()
    recorder.run("d")
    assert not recorder.served_from_cache
    recorder.close()
    assert recorder.inner.closed


def test_exec_cached_comes_from_the_env_s_own_jobs() -> None:
    """A repeated CHECK of the same draft is served from the cache; a step of another env that runs no job
    meanwhile reports no cached job, and neither does the first env's next job-free step."""
    gym = pytest.importorskip("gymnasium")
    import harness_gym  # noqa: F401  (registers the envs)

    env, other = gym.make("HarnessCode-v1"), gym.make("HarnessCode-v1")
    try:
        env.reset(seed=0)
        other.reset(seed=0)
        env.step(3)  # DRAFT
        env.step(4)  # CHECK: runs the visible tests (possibly a hit already)
        assert env.step(4)[4]["exec_cached"]  # the same job again
        assert not other.step(0)[4]["exec_cached"]  # OBSERVE runs nothing
        assert not env.step(1)[4]["exec_cached"]  # RETRIEVE runs nothing
    finally:
        env.close()
        other.close()
