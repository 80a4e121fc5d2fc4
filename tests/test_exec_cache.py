"""The on-disk execution-result cache (issue 28): shared by processes, keyed by isolation and package version,
bounded, robust to a corrupt file, and off or memory-only when asked (docs/harness_mdp.md, "Sandboxes")."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import multiprocessing
import os
import pickle
import sqlite3
import subprocess
import sys
import warnings
from pathlib import Path

import gymnasium as gym
import pytest

import harness_gym  # noqa: F401  (registers the envs)
from harness_gym.sandbox import ExecResult, ResultCache, cache_dir, make_sandbox
from harness_gym.sandbox.cache import cache_key, cached_run, disk_cache, package_version
from harness_gym.sandbox.disk_cache import FORMAT, DiskStore

REPO = Path(__file__).resolve().parents[1]
DB_NAME = f"exec-v{FORMAT}.sqlite3"

CHILD = """
import json, sys
from harness_gym.sandbox import make_sandbox
sb = make_sandbox("process", cache=True)
real_run = sb._run
runs = []
def counting_run(*args, **kwargs):
    runs.append(1)
    return real_run(*args, **kwargs)
sb._run = counting_run
res = sb.run("import sys; print(sum(range(int(sys.stdin.read()))))", stdin="1000")
print(json.dumps({"stdout": res.stdout, "cached": res.cached, "runs": len(runs),
                  "folder": str(sb.cache.disk.folder)}))
sb.close()
"""


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh cache folder named by HARNESS_GYM_CACHE_DIR for this test."""
    path = tmp_path / "exec-cache"
    monkeypatch.setenv("HARNESS_GYM_CACHE_DIR", str(path))
    return path


def _child(folder: Path) -> dict:
    env = {**os.environ, "HARNESS_GYM_CACHE_DIR": str(folder), "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=120,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _done(stdout: str, exit_code: int = 0) -> ExecResult:
    return ExecResult(stdout=stdout, stderr="", exit_code=exit_code, timed_out=False, duration_s=0.01)


class CountingRun:
    """A fake ``Sandbox.run`` that counts its calls and prints the code's length."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, code: str, **_: object) -> ExecResult:
        self.calls += 1
        return _done(f"{len(code)}\n")


def test_a_result_computed_in_one_process_is_served_from_disk_in_a_new_one(folder: Path) -> None:
    first = _child(folder)
    second = _child(folder)
    assert first == {"stdout": "499500\n", "cached": False, "runs": 1, "folder": str(folder)}
    assert second == {"stdout": "499500\n", "cached": True, "runs": 0, "folder": str(folder)}
    assert (folder / DB_NAME).is_file()


def test_the_location_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HARNESS_GYM_CACHE_DIR", str(tmp_path / "named"))
    assert cache_dir() == tmp_path / "named"
    monkeypatch.delenv("HARNESS_GYM_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "harness-gym" / "exec"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / ".cache" / "harness-gym" / "exec"


def test_a_disk_hit_is_promoted_to_memory_and_incomplete_jobs_are_not_stored(folder: Path) -> None:
    run = CountingRun()
    cached_run(ResultCache(disk=DiskStore(folder)), "salt", run, "print(1)", None, "", 5.0, 512)
    fresh = ResultCache(disk=DiskStore(folder))
    hit = cached_run(fresh, "salt", run, "print(1)", None, "", 5.0, 512)
    assert hit.cached and hit.stdout == "8\n" and run.calls == 1 and fresh.disk_hits == 1 and len(fresh) == 1
    cached_run(fresh, "salt", run, "print(1)", None, "", 5.0, 512)
    assert fresh.disk_hits == 1 and fresh.hits == 2  # the second hit came from memory

    def timing_out(code: str, **_: object) -> ExecResult:
        return ExecResult(stdout="", stderr="", exit_code=-9, timed_out=True, duration_s=5.0, reason="timeout")

    cached_run(fresh, "salt", timing_out, "while True: pass", None, "", 5.0, 512)
    assert len(DiskStore(folder)) == 1


def test_another_isolation_or_package_version_is_a_miss(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = CountingRun()
    cached_run(ResultCache(disk=DiskStore(folder)), "ProcessSandbox/unshare/65536/64", run, "x", None, "", 5, 512)
    assert run.calls == 1
    result = cached_run(ResultCache(disk=DiskStore(folder)), "ProcessSandbox/bwrap/65536/64", run, "x", None, "",
                        5, 512)
    assert run.calls == 2 and not result.cached
    monkeypatch.setattr(sys.modules["harness_gym"], "__version__", "999.0")
    result = cached_run(ResultCache(disk=DiskStore(folder)), "ProcessSandbox/bwrap/65536/64", run, "x", None, "",
                        5, 512)
    assert run.calls == 3 and not result.cached
    monkeypatch.undo()
    result = cached_run(ResultCache(disk=DiskStore(folder)), "ProcessSandbox/bwrap/65536/64", run, "x", None, "",
                        5, 512)
    assert run.calls == 3 and result.cached


def _writer(folder: str, worker: int, n: int) -> list[tuple[str, str]]:
    """Child of the concurrency test: shared keys and own keys, reading back each after writing it."""
    store = DiskStore(folder)
    wrong = []
    for i in range(n):
        for key, value in ((f"shared-{i}", f"shared {i}\n"), (f"own-{worker}-{i}", f"own {worker} {i}\n")):
            store.put(key, _done(value))
            got = store.get(key)
            if got is None or got.stdout != value:
                wrong.append((key, repr(got)))
    return wrong


def test_concurrent_processes_leave_a_readable_cache_with_the_right_results(folder: Path) -> None:
    workers, n = 4, 150
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a busy file would warn: WAL and busy_timeout must make writers wait
        with multiprocessing.get_context("spawn").Pool(workers) as pool:
            wrong = pool.starmap(_writer, [(str(folder), w, n) for w in range(workers)])
    assert wrong == [[]] * workers
    store = DiskStore(folder)
    assert len(store) == n + workers * n
    for i in range(n):
        assert store.get(f"shared-{i}").stdout == f"shared {i}\n"
        for w in range(workers):
            assert store.get(f"own-{w}-{i}").stdout == f"own {w} {i}\n"
    assert sqlite3.connect(folder / DB_NAME).execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_the_byte_bound_prunes_the_least_recently_used(folder: Path) -> None:
    store = DiskStore(folder, max_bytes=20_000)
    for i in range(10):
        store.put(f"key-{i}", _done("x" * 1000))
    store.get("key-0")  # used again: now the most recent
    for i in range(10, 20):
        store.put(f"key-{i}", _done("x" * 1000))
        assert store.nbytes <= 20_000
    assert store.get("key-0") is not None and store.get("key-1") is None and store.get("key-19") is not None
    assert 10 <= len(store) < 20


def test_reads_mark_their_results_used_before_the_next_write_or_at_close(folder: Path) -> None:
    store = DiskStore(folder)
    for i in range(3):
        store.put(f"key-{i}", _done("x"))
    db = sqlite3.connect(folder / DB_NAME)
    used = dict(db.execute("SELECT key, used FROM results").fetchall())
    store.get("key-0")
    store.put("key-3", _done("y"))  # a write writes the marks first
    after_put = dict(db.execute("SELECT key, used FROM results").fetchall())
    assert after_put["key-0"] > used["key-0"] and after_put["key-1"] == used["key-1"]
    assert after_put["key-0"] <= after_put["key-3"]
    store.get("key-1")
    store.close()
    after_close = dict(db.execute("SELECT key, used FROM results").fetchall())
    assert after_close["key-1"] > used["key-1"] and after_close["key-2"] == used["key-2"]
    db.close()


def _reference_key(code, files, stdin, timeout_s, memory_mb, salt) -> str:
    payload = json.dumps([FORMAT, package_version(), salt, code, sorted((files or {}).items()), stdin,
                          float(timeout_s), int(memory_mb)], ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()


def test_the_key_is_the_hash_of_the_json_payload_for_every_kind_of_text() -> None:
    texts = ["", "plain", 'quote " and \\ backslash', "line\nbreak\ttab\x00\x1f\x7f", "é 中 😀 \u2028",
             "a,b\n1,2\n" * 400, "é\"\n" * 1500]
    for i, text in enumerate(texts):
        for files in (None, {}, {"data.csv": text}, {"b.py": text, "a.json": texts[i - 1], "é/c.txt": "x"}):
            for timeout_s, memory_mb in ((4.0, 512), (10, 768.0), (0.1, 0), (float("inf"), 1)):
                for _ in range(2):  # the second time through the long texts' cache
                    args = (text, files, text[:50], timeout_s, memory_mb, "ProcessSandbox/bwrap")
                    assert cache_key(*args) == _reference_key(*args)


def _check_twice(env: gym.Env) -> tuple[list[dict], int]:
    """DRAFT, then the same CHECK twice: the infos and how many jobs the sandbox really ran."""
    env.reset(seed=3)
    env.step(3)
    sandbox = env.unwrapped.sandbox
    real_run, runs = sandbox._run, []

    def counting_run(*args: object, **kwargs: object) -> ExecResult:
        runs.append(1)
        return real_run(*args, **kwargs)

    sandbox._run = counting_run
    infos = [env.step(4)[-1] for _ in range(2)]
    return infos, len(runs)


def test_exec_cache_false_writes_nothing_and_runs_every_job(folder: Path) -> None:
    env = gym.make("HarnessCode-v1", exec_cache=False)
    try:
        infos, runs = _check_twice(env)
        assert env.unwrapped.sandbox.cache is None
        assert runs >= 2 and runs % 2 == 0 and not any(info["exec_cached"] for info in infos)
    finally:
        env.close()
    assert not folder.exists()


def test_exec_cache_memory_caches_in_the_process_only(folder: Path) -> None:
    env = gym.make("HarnessCode-v1", exec_cache="memory")
    try:
        infos, runs = _check_twice(env)
        assert env.unwrapped.sandbox.cache.disk is None
        assert infos[1]["exec_cached"] and runs * 2 <= _runs_without_cache()
    finally:
        env.close()
    assert not folder.exists()


def test_cache_false_is_the_exec_cache_keyword(folder: Path) -> None:
    env = gym.make("HarnessCode-v1", cache=False)
    try:
        infos, runs = _check_twice(env)
        assert env.unwrapped.sandbox.cache is None and runs >= 2 and not any(i["exec_cached"] for i in infos)
    finally:
        env.close()
    assert not folder.exists()


def _runs_without_cache() -> int:
    env = gym.make("HarnessCode-v1", exec_cache=False)
    try:
        return _check_twice(env)[1]
    finally:
        env.close()


def test_the_default_env_cache_is_on_disk(folder: Path) -> None:
    env = gym.make("HarnessCode-v1")
    try:
        env.reset(seed=4)
        env.step(3)
        env.step(4)
    finally:
        env.close()
    assert len(DiskStore(folder)) >= 1


def test_bad_cache_keywords_raise() -> None:
    with pytest.raises(ValueError, match="exec_cache must be"):
        gym.make("HarnessCode-v1", exec_cache="disc")
    with pytest.raises(TypeError, match="both cache=False and exec_cache='memory'"):
        gym.make("HarnessCode-v1", cache=False, exec_cache="memory")
    with pytest.raises(TypeError, match="exec_cahce"):
        gym.make("HarnessCode-v1", exec_cahce=False)
    with pytest.raises(ValueError, match="cache must be"):
        make_sandbox("process", cache="sometimes")


def test_a_corrupt_file_is_one_warning_and_the_results_stay_right(folder: Path) -> None:
    folder.mkdir(parents=True)
    (folder / DB_NAME).write_bytes(b"this is not a database" * 100)
    sb = make_sandbox("process", cache=disk_cache(folder))
    try:
        with pytest.warns(RuntimeWarning, match="unusable") as caught:
            first = sb.run("print(6 * 7)")
            second = sb.run("print(6 * 7)")
            third = sb.run("print(6 * 8)")
        assert [len([w for w in caught if "execution cache" in str(w.message)])] == [1]
        assert (first.stdout, first.cached) == ("42\n", False)
        assert (second.stdout, second.cached) == ("42\n", True)  # the memory layer still works
        assert (third.stdout, third.cached) == ("48\n", False)
    finally:
        sb.close()


def test_a_tampered_entry_is_a_miss_with_a_warning(folder: Path) -> None:
    run = CountingRun()
    cached_run(ResultCache(disk=DiskStore(folder)), "salt", run, "print(1)", None, "", 5, 512)
    with sqlite3.connect(folder / DB_NAME) as conn:
        conn.execute("UPDATE results SET stdout = 'wrong\n'")
    with pytest.warns(RuntimeWarning, match="digest"):
        result = cached_run(ResultCache(disk=DiskStore(folder)), "salt", run, "print(1)", None, "", 5, 512)
    assert (result.stdout, result.cached, run.calls) == ("8\n", False, 2)
    again = cached_run(ResultCache(disk=DiskStore(folder)), "salt", run, "print(1)", None, "", 5, 512)
    assert (again.stdout, again.cached, run.calls) == ("8\n", True, 2)


def test_an_unwritable_folder_falls_back_to_memory_with_one_warning(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    cache = ResultCache(disk=DiskStore(blocker / "exec"))
    run = CountingRun()
    with pytest.warns(RuntimeWarning, match="memory only") as caught:
        results = [cached_run(cache, "salt", run, code, None, "", 5, 512) for code in ("a", "bb", "a")]
    assert len(caught) == 1
    assert [(r.stdout, r.cached) for r in results] == [("1\n", False), ("2\n", False), ("1\n", True)]
    assert run.calls == 2 and not cache.disk.enabled


def test_a_pickled_sandbox_uses_the_same_folder(folder: Path) -> None:
    sb = make_sandbox("process", cache=True)
    clone = pickle.loads(pickle.dumps(sb))
    assert clone.cache is sb.cache and clone.cache.disk.folder == folder
    memory = pickle.loads(pickle.dumps(make_sandbox("process", cache="memory")))
    assert memory.cache.disk is None


def test_a_cached_mark_keeps_every_other_field() -> None:
    from harness_gym.sandbox.cache import _marked

    assert [f.name for f in dataclasses.fields(ExecResult)] == ["stdout", "stderr", "exit_code", "timed_out",
                                                               "duration_s", "reason", "cached"]
    result = ExecResult(stdout="out", stderr="err", exit_code=3, timed_out=True, duration_s=0.5, reason="timeout")
    for cached in (True, False):
        assert _marked(result, cached) == dataclasses.replace(result, cached=cached)
