"""Public entry points validate their inputs with clear exceptions (never ``assert``), and bad task files
give errors naming the file, line, task and field."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import harness_gym  # noqa: F401
from harness_gym.core.paths import data_path
from harness_gym.core.taskfile import TaskFileError, read_json
from harness_gym.domains.code.domain import CodeDomain

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture()
def env():
    env = gym.make("HarnessPlan-v1").unwrapped
    env.reset(seed=0)
    yield env
    env.close()


@pytest.mark.parametrize("action", [3.5, "2", True, np.bool_(True), None, [1], np.float64(1.0)])
def test_step_rejects_non_integer_actions(env, action) -> None:
    with pytest.raises(TypeError, match="action must be an int"):
        env.step(action)


@pytest.mark.parametrize("action", [-1, 7, np.int64(99)])
def test_step_rejects_out_of_range_actions(env, action) -> None:
    with pytest.raises(ValueError, match=r"action must be in \[0, 7\)"):
        env.step(action)


def test_step_accepts_python_and_numpy_integers(env) -> None:
    for action in (0, np.int64(1), np.int32(0), np.array(1)):
        env.step(action)


def test_step_validation_survives_python_optimisations() -> None:
    code = ("import gymnasium as gym, harness_gym\nenv = gym.make('HarnessPlan-v1').unwrapped\nenv.reset(seed=0)\n"
            "for a in (3.5, '2', True):\n    try:\n        env.step(a)\n        print('accepted', repr(a))\n"
            "    except TypeError:\n        print('refused')\n")
    out = subprocess.run([sys.executable, "-O", "-c", code], capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert out.stdout.split() == ["refused"] * 3, out.stdout + out.stderr[-2000:]


@pytest.mark.parametrize("kwargs, error, match", [
    ({"budget": "5"}, TypeError, "budget must be an int"),
    ({"budget": 2.5}, TypeError, "budget must be an int"),
    ({"budget": True}, TypeError, "budget must be an int"),
    ({"budget": 0}, ValueError, "budget must be in"),
    ({"cost_weight": float("nan")}, ValueError, "cost_weight must be finite"),
    ({"cost_weight": float("inf")}, ValueError, "cost_weight must be finite"),
    ({"cost_weight": -0.1}, ValueError, "cost_weight must be finite and >= 0"),
    ({"cost_weight": "0.1"}, TypeError, "cost_weight must be a number"),
    ({"sandbox": "bogus"}, ValueError, "unknown sandbox 'bogus'"),
    ({"sandbox": 3}, TypeError, "sandbox must be a name or a Sandbox"),
    ({"action_costs": {0: 1.5}}, TypeError, "action_costs"),
])
def test_constructor_arguments_are_validated(kwargs, error, match) -> None:
    with pytest.raises(error, match=match):
        gym.make("HarnessCode-v1", **kwargs)


def test_numpy_integer_budget_is_accepted() -> None:
    gym.make("HarnessPlan-v1", budget=np.int64(5)).close()


def test_unknown_reset_options_raise(env) -> None:
    with pytest.raises(ValueError, match=r"unknown reset option\(s\) \['taskid'\]"):
        env.reset(options={"taskid": "x"})
    with pytest.raises(ValueError, match="options\\['split'\\] must be one of"):
        env.reset(options={"split": "training"})
    env.reset(options={"split": "val"})


@pytest.fixture()
def code_copy(tmp_path: Path) -> Path:
    shutil.copy(data_path("code", "corpus.jsonl"), tmp_path / "corpus.jsonl")
    return tmp_path


def test_random_bytes_name_the_file_and_line(code_copy: Path) -> None:
    (code_copy / "tasks.jsonl").write_bytes(b'\n' + bytes(range(128, 256)) * 4)
    with pytest.raises(TaskFileError, match=r"tasks.jsonl, line 2: not UTF-8 text"):
        CodeDomain(code_copy)
    (code_copy / "bad.json").write_bytes(b'[\n"ok",\n"\xff\xfe"]')
    with pytest.raises(TaskFileError, match=r"bad.json, line 3: not UTF-8 text"):
        read_json(code_copy / "bad.json")


def test_duplicate_task_id_names_file_and_lines(code_copy: Path) -> None:
    lines = data_path("code", "tasks.jsonl").read_text(encoding="utf-8").splitlines()
    (code_copy / "tasks.jsonl").write_text("\n".join(lines[:3] + [lines[1]]) + "\n", encoding="utf-8")
    task_id = json.loads(lines[1])["task_id"]
    with pytest.raises(TaskFileError, match=rf"tasks.jsonl, line 4, task '{task_id}', field 'task_id': duplicate "
                                            r"task id \(first on line 2 of"):
        CodeDomain(code_copy)


@pytest.mark.parametrize("expect", ["count_vowels('a')", "float('nan') or 3", "[x for x in 'ab']", "__import__('os')"])
def test_code_expect_that_is_not_a_literal_names_file_line_task_field(code_copy: Path, expect: str) -> None:
    lines = data_path("code", "tasks.jsonl").read_text(encoding="utf-8").splitlines()
    rec = json.loads(lines[0])
    rec["hidden_tests"][2]["expect"] = expect
    (code_copy / "tasks.jsonl").write_text(lines[1] + "\n" + json.dumps(rec) + "\n", encoding="utf-8")
    with pytest.raises(TaskFileError, match=rf"tasks.jsonl, line 2, task '{rec['task_id']}', field "
                                            r"'hidden_tests\[2\].expect': .* is not a plain Python literal"):
        CodeDomain(code_copy)


# ----- bounded caches -------------------------------------------------------------------------------------
def test_execution_cache_is_bounded_in_bytes_lru() -> None:
    from harness_gym.sandbox import ExecResult, ResultCache

    cache = ResultCache(max_bytes=10 * 1024 * 1024)
    big = "x" * (1024 * 1024)
    for i in range(50):
        cache.put(f"k{i}", ExecResult(stdout=big, stderr="", exit_code=0, timed_out=False, duration_s=0.0))
        cache.get("k0")  # kept in use: never the least recently used
    assert cache.nbytes <= 10 * 1024 * 1024 and 5 <= len(cache) <= 10
    assert cache.get("k0") is not None and cache.get("k1") is None and cache.get("k49") is not None


def test_data_knowledge_cache_is_bounded_in_bytes() -> None:
    from harness_gym.core.types import Context
    from harness_gym.domains.data.domain import CACHE_MAX_BYTES, load_data_domain
    from tests.domain_cases import draft

    domain = load_data_domain()
    task = domain.all_tasks()[0]
    filler = "# " + "y" * (256 * 1024) + "\n"
    for i in range(3 * CACHE_MAX_BYTES // len(filler)):
        domain.knowledge_signal(task, Context(task=task, draft=draft(f"{filler}print({i})\n")))
    assert domain._knowledge.bytes <= CACHE_MAX_BYTES
