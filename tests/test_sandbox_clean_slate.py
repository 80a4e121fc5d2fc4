"""Every sandbox job starts from a clean slate (issue 41, part B), on both backends.

A job may leave behind what the server's clean-up cannot walk (a directory tree 1,500 levels deep, levels made
unreadable or sticky), fill the scratch file systems, create inodes until the kernel's memory, not the tmpfs
size, runs out, or write a task's hidden inputs into the names of what it leaves. The next job must find the
scratch directories (``/dev/shm``, ``/tmp``, ``/var/tmp`` where a job can write them, and its work dir's
folder) as a fresh server shows them, with their full size free; a job that failed before its code ran is a
sandbox error, never a cached result. Also (issue 42): the process sandbox's isolation does not depend on how
the interpreter's path is spelled, and a weaker mode's warning names the real reason and remedy.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness_gym.sandbox import ProcessSandbox, ResultCache, make_sandbox
from harness_gym.sandbox.client import ServerSandbox
from tests.test_sandbox import docker_backend, require_backend  # noqa: F401  (docker_backend: a fixture)

ROOT = Path(__file__).resolve().parents[1]
SCRATCH = ("/dev/shm", "/tmp", "/var/tmp")

SLATE = r"""
import json, os
here = os.getcwd()
out = {}
for top in sorted({"/dev/shm", "/tmp", "/var/tmp", os.path.dirname(here)}):
    try:
        names = sorted(n for n in os.listdir(top) if os.path.join(top, n) != here)
        st = os.statvfs(top)
    except OSError as exc:
        out[top] = {"error": type(exc).__name__}
        continue
    out[top] = {"names": names, "free": st.f_bfree, "blocks": st.f_blocks, "inodes_free": st.f_ffree,
                "writable": os.access(top, os.W_OK) or top == os.path.dirname(here)}
print(json.dumps(out))
"""
"""What the job sees of the scratch directories: the names in each (but its own work dir), their free space and
whether the job may write there (its work dir's folder counts: the job writes inside it)."""

DEEP_TREE = r"""
import os
here = os.getcwd()
made = []
for top in ("/dev/shm", "/tmp", "/var/tmp", here):
    try:
        os.chdir(top)
        os.mkdir("leak-TOKEN")
    except OSError:
        continue
    made.append(top)
    os.chdir("leak-TOKEN")
    for level in range(1500):
        name = ("d%d-TOKEN-" % level).ljust(200, "x")
        os.mkdir(name)
        os.chdir(name)
        if level % 100 == 7:
            os.chmod("..", 0o1777 if level % 200 == 7 else 0)
    written = 0
    try:
        while written < FILL:  # files of at most 32 MiB (the jobs' file size limit is 64 MiB)
            with open("bottom-TOKEN-%d" % written, "wb") as fh:
                while fh.tell() < (32 << 20) and written < FILL:
                    written += fh.write(b"x" * (1 << 20))
    except OSError:
        pass
    os.chdir(top)
print(made)
"""
"""A job that leaves, in every scratch directory it can write, a tree 1,500 levels deep whose names hold a token,
some levels sticky or without permissions, with a file at the bottom as large as the space allows (up to FILL)."""

MANY_INODES = r"""
import os
os.chdir("TOP")
made = 0
try:
    for i in range(200000):
        os.mkdir("i%d" % i)
        made += 1
except OSError as exc:
    print(made, exc.errno)
else:
    print(made, 0)
"""


def _backend_sandbox(backend: str, **kwargs: object) -> ServerSandbox:
    if backend == "process":
        sb = ProcessSandbox(isolation="bwrap", cache=False, **kwargs)
    else:
        sb = make_sandbox("docker", cache=False, **kwargs)
    assert isinstance(sb, ServerSandbox)
    return sb


@pytest.fixture(params=["process", "docker"])
def backend(request: pytest.FixtureRequest) -> str:
    name = require_backend(request.param)
    if name == "process" and ProcessSandbox._unavailable("bwrap"):
        pytest.skip("bubblewrap is not installed")
    return name


def _slate(sb: ServerSandbox) -> dict:
    res = sb.run(SLATE, timeout_s=10)
    assert res.exit_code == 0 and not res.reason, res
    return json.loads(res.stdout)


def _assert_fresh(seen: dict, fresh: dict, token: str) -> None:
    """``seen`` (a later job's view) equals ``fresh`` (the first job's): the same names, all space free, no name
    holding ``token``."""
    for top, view in fresh.items():
        now = seen[top]
        assert not any(token in name for name in now.get("names", [])), (top, now)
        if view.get("writable"):  # a private tmpfs: as it was, all of it free
            assert now == view, f"{top}: {now} after the hostile job, {view} before it"
            assert view["free"] == view["blocks"], (top, view)
        else:  # e.g. the image's read-only /var/tmp, on a disk others write
            assert now.get("names") == view.get("names"), f"{top}: {now} after the hostile job, {view} before it"


def test_deep_tree_then_honest_job_sees_a_fresh_slate(backend: str) -> None:
    token = uuid.uuid4().hex
    with _backend_sandbox(backend) as sb:
        fresh = _slate(sb)
        res = sb.run(DEEP_TREE.replace("TOKEN", token).replace("FILL", str(8 << 20)), timeout_s=30)
        assert res.exit_code == 0, res
        assert len(eval(res.stdout)) >= 1, res
        _assert_fresh(_slate(sb), fresh, token)
        honest = sb.run("import os\nprint(len(open('data.txt').read()))", files={"data.txt": "y" * (4 << 20)})
        assert honest.ok and honest.stdout == f"{4 << 20}\n", honest
        assert sb.unclean_restarts == 0  # removed by the clean-up itself, not by a fresh server


def test_what_the_clean_up_cannot_remove_ends_the_server(docker_backend: str) -> None:
    """A container's jobs share its server's uid, so a job can take the server's write permission on the work
    root; its clean-up then fails, and the next job runs on a fresh server, never after the leftovers."""
    with _backend_sandbox(docker_backend) as sb:
        fresh = _slate(sb)
        res = sb.run("import os\nopen('/tmp/left', 'w').write('x')\nos.chmod('/tmp', 0o500)")
        assert res.ok, res
        assert sb.unclean_restarts == 1
        _assert_fresh(_slate(sb), fresh, "left")


def test_filled_tmpfs_then_honest_job_has_its_full_size(backend: str) -> None:
    token = uuid.uuid4().hex
    with _backend_sandbox(backend) as sb:
        fresh = _slate(sb)
        res = sb.run(DEEP_TREE.replace("TOKEN", token).replace("FILL", str(1 << 40)), timeout_s=60)
        assert res.exit_code == 0, res
        _assert_fresh(_slate(sb), fresh, token)
        honest = sb.run("import os\nprint(os.path.getsize('big'))", files={"big": "z" * (32 << 20)})
        assert honest.ok and honest.stdout == f"{32 << 20}\n", honest


def test_names_written_by_a_job_reach_no_later_job(backend: str) -> None:
    token = uuid.uuid4().hex
    with _backend_sandbox(backend) as sb:
        res = sb.run(DEEP_TREE.replace("TOKEN", token).replace("FILL", "0"), timeout_s=30)
        assert res.exit_code == 0, res
        finder = sb.run(textwrap.dedent(f"""
            import os
            hits = []
            for top in ("/dev/shm", "/tmp", "/var/tmp", os.path.dirname(os.getcwd())):
                for root, dirs, files in os.walk(top):
                    hits += [n for n in dirs + files if {token!r} in n]
            print(hits)
        """), timeout_s=30)
        assert finder.ok and finder.stdout == "[]\n", finder


def test_scratch_file_systems_have_an_inode_limit(backend: str) -> None:
    with _backend_sandbox(backend) as sb:
        tops = [top for top, view in _slate(sb).items() if view.get("writable")]
        for top in tops + ["."]:
            res = sb.run(MANY_INODES.replace("TOP", top), timeout_s=60)
            if res.stdout.split()[:2] == ["0", str(13)]:
                continue  # not writable by the jobs
            made, err = map(int, res.stdout.split())
            assert err == 28 and made < 100_000, (top, res)  # ENOSPC long before the kernel's memory runs out


def test_setup_failure_is_a_sandbox_error_never_cached(backend: str) -> None:
    cache = ResultCache()
    sb = _backend_sandbox(backend)
    sb.cache = cache
    with sb:
        files = {"a": "x", "a/b": "y"}  # "a" cannot be a file and a folder: the job's set-up fails
        first = sb.run("print('ran')", files=files)
        assert first.reason == "sandbox_error" and "ran" not in first.stdout, first
        assert "cannot write the job's file 'a/b'" in first.stderr, first
        second = sb.run("print('ran')", files=files)
        assert not second.cached and second.reason == "sandbox_error", second
        assert len(cache) == 0
        assert sb.run("print('ran')").stdout == "ran\n"


def test_unshare_masks_and_cleans_var_tmp() -> None:
    if os.geteuid() != 0 or ProcessSandbox._unavailable("unshare"):
        pytest.skip("the unshare mode needs root and util-linux unshare")
    token = uuid.uuid4().hex
    sb = ProcessSandbox(isolation="unshare", cache=False, require_isolation=False)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            with sb:
                res = sb.run(f"try:\n    open('/var/tmp/{token}', 'w').write('x')\nexcept OSError:\n    pass")
                assert res.ok, res
                assert not os.path.exists(f"/var/tmp/{token}"), "a job wrote the host's /var/tmp"
                after = sb.run("import os\nprint(os.listdir('/var/tmp'))")
                assert after.ok and after.stdout == "[]\n", after
    finally:
        Path(f"/var/tmp/{token}").unlink(missing_ok=True)


# Issue 42: isolation that does not depend on how python is spelled.

PROBE = """
import json, warnings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    from harness_gym.sandbox import ProcessSandbox
    sb = ProcessSandbox(cache=False)
    res = sb.run("print(6 * 7)")
    report = sb.isolation_report()
    sb.close()
print(json.dumps({"stdout": res.stdout, "in_force": report["in_force"], "reason": report["reason"],
                  "warnings": [str(w.message) for w in caught]}))
"""


def _probe(python: str, cwd: str, path_prefix: str = "") -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("HG_REQUIRE_ISOLATION", "PYTHONHOME")}
    env["PYTHONPATH"] = str(ROOT)
    if path_prefix:
        env["PATH"] = f"{path_prefix}:{env.get('PATH', '')}"
    Path(cwd, "probe.py").write_text(PROBE)
    out = subprocess.run([python, "probe.py"], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def relative_venv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A virtualenv under /tmp (made from this interpreter's base, with this interpreter's packages on a .pth)."""
    folder = Path(f"/tmp/hgvenv-rel-{uuid.uuid4().hex[:8]}")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(folder)], check=True,
                   timeout=120)
    import site

    site_dir = next(folder.glob("lib/python*/site-packages"))
    (site_dir / "hg_parent.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_relative_interpreter_path_keeps_bubblewrap(tmp_path: Path, relative_venv: Path) -> None:
    if ProcessSandbox._unavailable("bwrap"):
        pytest.skip("bubblewrap is not installed")
    for python in (sys.executable, str(relative_venv / "bin" / "python")):
        cwd = tmp_path / uuid.uuid4().hex[:6]
        cwd.mkdir()
        relative = os.path.relpath(python, cwd)
        assert not os.path.isabs(relative) and relative.startswith("..")
        seen = _probe(relative, str(cwd))
        assert seen["stdout"] == "42\n", seen
        assert seen["in_force"] == "bwrap", seen
        assert seen["warnings"] == [] and seen["reason"] == "", seen


def test_weaker_mode_warning_names_the_real_reason_and_remedy(tmp_path: Path) -> None:
    if os.geteuid() != 0 or ProcessSandbox._unavailable("unshare"):
        pytest.skip("the fallback to unshare needs root and util-linux unshare")
    fake = tmp_path / "bin"
    fake.mkdir()
    for quiet in (False, True):
        bwrap = fake / "bwrap"
        bwrap.write_text("#!/bin/sh\n" + ("" if quiet else "echo 'bwrap: Creating new namespace failed' >&2\n")
                         + "exit 1\n")
        bwrap.chmod(0o755)
        seen = _probe(sys.executable, str(tmp_path), path_prefix=str(fake))
        assert seen["in_force"] == "unshare" and seen["stdout"] == "42\n", seen
        (warning,) = [w for w in seen["warnings"] if "weaker than bubblewrap" in w]
        assert "Install bubblewrap" not in warning, warning
        assert "bubblewrap is installed" in warning, warning
        if quiet:
            assert "exited with status 1" in warning, warning
        else:
            assert "Creating new namespace failed" in warning, warning


def test_the_server_holds_no_cap_sys_admin_once_its_mounts_are_limited() -> None:
    """As root, bubblewrap gives the server CAP_SYS_ADMIN only to remount /tmp and /dev/shm with an inode limit;
    it must be gone (effective, permitted, inheritable, ambient) before any job runs."""
    if os.geteuid() != 0 or ProcessSandbox._unavailable("bwrap"):
        pytest.skip("the bubblewrap server gets CAP_SYS_ADMIN only when started as root")
    with ProcessSandbox(isolation="bwrap", cache=False) as sb:
        assert sb.isolation_report()["inode_limit"] is True
        res = sb.run("print(''.join(l for l in open('/proc/1/status') if l.startswith('Cap')))")
        assert res.ok, res
        caps = {line.split(":")[0]: int(line.split()[1], 16) for line in res.stdout.splitlines() if line}
        for kind in ("CapEff", "CapPrm", "CapInh", "CapAmb"):
            assert not caps[kind] & (1 << 21), (kind, caps)
        assert caps["CapEff"] & (1 << 7)  # CAP_SETUID kept: the server still drops each job to its uid
