"""benchmarks/profile_ppo.py (where a PPO step goes) and benchmarks/warm_passes.py (first use against every step)."""

from __future__ import annotations

import json
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest

import harness_gym  # noqa: F401  (registers the envs)
from tests.benchmark_scripts import BENCHMARKS, load_benchmark


@pytest.fixture(scope="module")
def profile_ppo():
    return load_benchmark("profile_ppo")


def test_the_null_env_has_the_harness_spaces_and_info_and_ends_an_episode_every_eight_steps(profile_ppo):
    info = profile_ppo.harness_info()
    assert {"action_mask", "cost", "evidence", "patterns"} <= set(info)
    env = profile_ppo.NullHarnessEnv(info)
    plan = gym.make("HarnessPlan-v1")
    assert env.observation_space == plan.observation_space and env.action_space == plan.action_space
    obs, got = env.reset(seed=0)
    assert got is info and env.observation_space.contains(obs)
    for _ in range(2):
        assert [env.step(0)[2] for _ in range(8)] == [False] * 7 + [True]
        env.reset()


def _rewards_sum(actions: list[int]) -> float:
    env = gym.make("HarnessPlan-v1").unwrapped
    env.reset(seed=3)
    total = 0.0
    for action in actions:
        _, reward, terminated, truncated, _ = env.step(action)
        total += float(reward)
        if terminated or truncated:
            env.reset()
    return total


def test_the_bare_replay_plays_the_runs_episodes_and_notices_other_ones(profile_ppo, tmp_path):
    actions = [int(a) for a in np.random.default_rng(0).integers(7, size=60)]
    total = _rewards_sum(actions)
    same = profile_ppo.replay_bare("HarnessPlan-v1", 3, actions, total, str(tmp_path))
    assert same["same_episodes"] and same["env_bare"] > 0
    assert not profile_ppo.replay_bare("HarnessPlan-v1", 3, actions, total + 1e-9, str(tmp_path))["same_episodes"]
    assert not profile_ppo.replay_bare("HarnessPlan-v1", 4, actions, total, str(tmp_path))["same_episodes"]


def test_the_table_gives_each_part_against_cartpoles(profile_ppo):
    def run(rate: float, env: float) -> dict:
        return {"steps_per_s": rate, "total": 1e6 / rate, "train": 150.0, "policy_buffer": 500.0, "vec_copies": 40.0,
                "wrappers": 8.0, "env": env, "gc": 1.0}
    base = run(1000.0, 30.0)
    base.update(env_bare=10.0, slowdown=3.0)
    harness = run(800.0, 180.0)
    harness.update(env_bare=120.0, slowdown=1.5)
    results = {"repeats": 2, "envs": {"CartPole-v1": {"ppo": base}, "HarnessX-v1": {"ppo": harness}}}
    table = profile_ppo.markdown_table(results)
    row = next(line for line in table.splitlines() if line.startswith("| HarnessX-v1"))
    assert "0.800x" in row and "1250 (+250)" in row and "180 (+150)" in row and "| 120 | 1.50x |" in row
    assert "Medians of 2 repeat(s)" in table


def test_a_figure_is_the_median_of_its_repeats(profile_ppo):
    merged = profile_ppo.median_fields([{"steps_per_s": 3.0, "env": 10.0}, {"steps_per_s": 1.0, "env": 30.0},
                                        {"steps_per_s": 2.0, "env": 20.0}])
    assert merged["steps_per_s"] == 2.0 and merged["env"] == 20.0 and merged["repeats_steps_per_s"] == [3.0, 1.0, 2.0]


def test_the_profile_script_splits_a_warm_ppo_run_and_replays_it(tmp_path):
    out = tmp_path / "profile.json"
    proc = subprocess.run([sys.executable, str(BENCHMARKS / "profile_ppo.py"), "--env", "HarnessPlan-v1",
                           "--ppo-steps", "512", "--json", str(out)], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(out.read_text())
    assert list(results["envs"]) == ["CartPole-v1", "NullHarness", "HarnessPlan-v1"]
    plan = results["envs"]["HarnessPlan-v1"]["ppo"]
    null = results["envs"]["NullHarness"]["ppo"]
    assert plan["steps"] == 512 and plan["env"] > 0 and plan["env_bare"] > 0
    assert plan["slowdown"] == pytest.approx(plan["env"] / plan["env_bare"])
    assert plan["env"] > null["env"]  # the null env does no work
    assert "env_bare" not in null
    # every timer was installed and fired: each part of the step took time, and none took the whole step
    for part in ("train", "policy_buffer", "vec_copies", "wrappers", "env"):
        assert 0 < plan[part] < plan["total"], part
    assert "| HarnessPlan-v1 |" in proc.stdout
    bad = subprocess.run([sys.executable, str(BENCHMARKS / "profile_ppo.py"), "--ppo-steps", "0"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "--ppo-steps" in bad.stderr


def test_warm_passes_gives_one_figure_per_pass_against_cartpoles(tmp_path):
    out = tmp_path / "passes.json"
    proc = subprocess.run([sys.executable, str(BENCHMARKS / "warm_passes.py"), "--env", "HarnessPlan-v1", "--steps",
                           "60", "--baseline-steps", "600", "--passes", "2", "--json", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(out.read_text())
    for env_id in ("CartPole-v1", "HarnessPlan-v1"):
        per_pass = results["envs"][env_id]["cpu_us_per_step"]
        assert len(per_pass) == 2 and all(us > 0 for us in per_pass)
    assert "| HarnessPlan-v1 |" in proc.stdout
    bad = subprocess.run([sys.executable, str(BENCHMARKS / "warm_passes.py"), "--passes", "0"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "--passes" in bad.stderr


def test_warm_passes_table_divides_each_pass_by_cartpoles_same_pass():
    wp = load_benchmark("warm_passes")
    table = wp.markdown_table({"envs": {"CartPole-v1": {"make_cpu_s": 0.0, "cpu_us_per_step": [20.0, 10.0]},
                                        "HarnessX-v1": {"make_cpu_s": 0.5, "cpu_us_per_step": [200.0, 60.0]}}})
    assert "| HarnessX-v1 | 0.50 | 200.0 (10.0x) | 60.0 (6.0x) |" in table
