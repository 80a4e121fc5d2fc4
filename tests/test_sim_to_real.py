"""The sim-to-real comparison: the learned controller of the shipped recording, rankings, the table."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest
import torch

from harness_gym.core.paths import data_path
from harness_gym_baselines.common.options import recorded_env_kwargs
from harness_gym_baselines.experiments.sim_to_real import (
    FIXED,
    LEARNED,
    SimToRealRow,
    make_controller,
    markdown,
    rank,
    sim_to_real,
    train_learned,
)
from harness_gym_baselines.experiments.statistics import bootstrap_ci
from tests.recording import needs_registered_recording

MANIFEST = data_path("recordings", "smollm2.json")


def _row(controller: str, real: float, default: float, fitted: float) -> SimToRealRow:
    return SimToRealRow("HarnessCode-v2", controller, 3, real, default, fitted, 2.0)


def test_rank_orders_ties_and_counts_agreeing_pairs():
    rows = [_row("a", 0.5, 0.9, 0.1), _row("b", 0.5, 0.8, 0.2), _row("c", 0.1, 0.7, 0.3)]
    ranking = rank(rows)
    assert ranking.order["real"] == [["a", "b"], ["c"]]
    assert ranking.order["sim default"] == [["a"], ["b"], ["c"]]
    assert ranking.order["sim fitted"] == [["c"], ["b"], ["a"]]
    assert ranking.pairs == 3
    # default: a-b tie in real but ordered in sim (disagree); a>c, b>c agree
    assert ranking.agreeing_pairs == {"sim default": 2, "sim fitted": 0}


def test_bootstrap_ci_brackets_the_mean_and_collapses_on_constants():
    values = [0.0, 1.0, 0.0, 1.0, 1.0]
    lo, hi = bootstrap_ci(values)
    assert lo < np.mean(values) < hi and lo >= 0.0 and hi <= 1.0
    assert bootstrap_ci([0.25, 0.25, 0.25]) == (0.25, 0.25)


def test_unknown_controller_names_the_manifest_field():
    with pytest.raises(ValueError, match=r"models\.ppo\.HarnessCode-v2"):
        make_controller("ppo", "HarnessCode-v2", {"models": {}}, MANIFEST.parent)


def test_train_learned_is_deterministic_and_runs_on_the_env(tmp_path):
    first = train_learned("HarnessDBBench-v2", tmp_path / "a.pt", episodes=60, seed=3)
    train_learned("HarnessDBBench-v2", tmp_path / "b.pt", episodes=60, seed=3)
    assert first["file"] == "a.pt" and first["algo"] == LEARNED and "60 behaviour episodes" in first["trained_on"]
    a = torch.load(tmp_path / "a.pt", weights_only=True)["state_dict"]
    b = torch.load(tmp_path / "b.pt", weights_only=True)["state_dict"]
    assert all(torch.equal(a[k], b[k]) for k in a)
    manifest = {"models": {LEARNED: {"HarnessDBBench-v2": first}}}
    policy = make_controller(LEARNED, "HarnessDBBench-v2", manifest, tmp_path)
    env = gym.make("HarnessDBBench-v2", split="test")
    obs, _ = env.reset(seed=0)
    policy.reset(env, 0)
    assert 0 <= policy.act(obs, env) < 7
    env.close()


@needs_registered_recording
def test_shipped_learned_controller_reproduces_its_recorded_actions():
    """Each learned episode of the recording is what its shipped model does against the replayed model: the
    recording is of that controller, and the model file is the one shipped."""
    manifest = json.loads(MANIFEST.read_text())
    learned = [ep for ep in manifest["episodes"] if ep["policy"] not in FIXED]
    assert {ep["env_id"] for ep in learned} >= {"HarnessCode-v2", "HarnessMultiTool-v2", "HarnessDBBench-v2"}
    assert {ep["policy"] for ep in learned} == {LEARNED}
    cache = MANIFEST.parent / manifest["cache"]
    for ep in learned:
        policy = make_controller(ep["policy"], ep["env_id"], manifest, MANIFEST.parent)
        env = gym.make(ep["env_id"], worker="openai", cache=cache, cache_mode="replay", **manifest["worker"],
                       **recorded_env_kwargs(manifest, ep["env_id"], str(MANIFEST)))
        obs, info = env.reset(seed=ep["seed"], options={"task_id": ep["task_id"]})
        policy.reset(env, ep["seed"])
        actions, term, trunc = [], False, False
        while not (term or trunc):
            actions.append(int(policy.act(obs, env)))
            obs, _, term, trunc, info = env.step(actions[-1])
        env.close()
        assert actions == ep["actions"], ep["task_id"]
        assert info["quality"] == pytest.approx(ep["quality"])


@needs_registered_recording
def test_sim_to_real_table_has_every_controller_ranked():
    rows, fits, manifest = sim_to_real(sim_seeds=1)
    envs = {ep["env_id"] for ep in manifest["episodes"]}
    assert {(r.env_id, r.controller) for r in rows} == {(e, c) for e in envs for c in (*FIXED, LEARNED)}
    for r in rows:
        for mean, (lo, hi) in ((r.q_real, r.q_real_ci95), (r.q_sim_default, r.q_sim_default_ci95),
                               (r.q_sim_fitted, r.q_sim_fitted_ci95)):
            assert 0.0 <= lo <= mean + 1e-12 and mean <= hi + 1e-12 and hi <= 1.0
        assert r.tokens_real > 0 and r.tokens_sim_default > 0 and r.llm_calls_sim_fitted >= 1
    text = markdown(rows, fits)
    assert text.count(f"| {LEARNED} |") == len(envs)
    for env_id in envs:
        assert sum(line.startswith(f"| {env_id} | ") and "/6 |" in line for line in text.splitlines()) == 1
