"""The coverage behaviour policy (harness_gym_baselines/policies/coverage.py) and the offline comparison's IQL and
CQL rows at a cost weight, on the toy domain registered as ``HarnessToy-v1``."""

from __future__ import annotations

import json

import gymnasium as gym
import minari
import numpy as np
import pytest
import torch

from harness_gym import datasets
from harness_gym.core.actions import Action
from harness_gym.running.rollout import episode_seed, play_episode
from harness_gym_baselines.experiments import offline_comparison
from harness_gym_baselines.policies.coverage import (
    NAMED,
    CoverageMix,
    CoveragePolicy,
    component_kind,
    component_shares,
    record_components,
    searched_scripts,
)

TOY_ID = "HarnessToy-v1"
if TOY_ID not in gym.registry:
    gym.register(id=TOY_ID, entry_point="examples.toy_domain.env:HarnessToyEnv", max_episode_steps=100)

SCRIPTS = ("O1-R1-T0-D-T0-C2", "O0-R2-T0-D-T0-C0")


@pytest.fixture
def minari_path(tmp_path, monkeypatch):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    return tmp_path / "minari"


def test_the_components_come_in_the_mixture_s_proportions():
    mix = CoverageMix()
    policy = CoveragePolicy(SCRIPTS)
    components = [policy.component_of(episode_seed(3, i)) for i in range(4000)]
    shares = component_shares(components)
    assert shares["searched"] == pytest.approx(mix.searched, abs=0.03)
    assert shares["named"] == pytest.approx(mix.named, abs=0.03)
    assert shares["random"] == pytest.approx(mix.random, abs=0.015)
    for script in SCRIPTS:  # the searched and named components are drawn uniformly within their entry
        assert components.count(f"searched:{script}") / len(components) == pytest.approx(mix.searched / 2, abs=0.03)
    for name in NAMED:
        assert components.count(name) / len(components) == pytest.approx(mix.named / 3, abs=0.03)
    # without searched scripts their share goes to the named scripts
    bare = component_shares([CoveragePolicy().component_of(s) for s in range(4000)])
    assert bare["searched"] == 0 and bare["named"] == pytest.approx(mix.searched + mix.named, abs=0.03)


def test_deviations_happen_at_the_documented_rate():
    env = gym.make(TOY_ID)
    scripted = CoveragePolicy(SCRIPTS, CoverageMix(deviate=0.0))
    deviating = CoveragePolicy(SCRIPTS)
    differ = steps = 0
    for i in range(200):
        seed = episode_seed(0, i)
        if deviating.component_of(seed) == "random":
            continue
        plain = play_episode(env, scripted, seed=seed, split="train").actions
        noisy = play_episode(env, deviating, seed=seed, split="train").actions
        # the first step where they part is a deviation (a random applicable action may equal the script's)
        first = next((t for t, (a, b) in enumerate(zip(plain, noisy)) if a != b), None)
        differ += first is not None
        steps += len(plain) if first is None else first + 1
    env.close()
    assert 0.02 < differ / steps < 0.1  # 0.1 per step, minus the draws that equal the script's action


def test_a_small_coverage_buffer_takes_every_action_somewhere_and_records_its_components(minari_path):
    policy = CoveragePolicy(SCRIPTS)
    ds = datasets.collect(TOY_ID, policy, "harness/toy-coverage-v0", episodes=60, seed=2, progress=False)
    record = record_components(ds, policy)
    episodes = datasets.read_columns(ds, ("actions", "infos/invalid_action"))
    valid = {int(a) for ep in episodes for a, invalid in zip(ep["actions"], ep["infos/invalid_action"][1:])
             if not invalid}
    assert valid == {int(a) for a in Action}
    stored = minari.load_dataset("harness/toy-coverage-v0").storage.metadata["coverage"]
    assert stored == record and stored["scripts"] == list(SCRIPTS) and len(stored["components"]) == 60
    assert {component_kind(c) for c in stored["components"]} == {"searched", "named", "random"}
    # the recorded component is the one the policy drew when the episode was reset
    env = gym.make(TOY_ID)
    for i, component in enumerate(stored["components"][:20]):
        policy.reset(env, episode_seed(2, i))
        assert policy.component == component
    env.close()


def test_same_seed_same_episodes_other_seed_other_episodes():
    env = gym.make(TOY_ID)

    def actions(seed: int) -> list[int]:
        return [a for i in range(8) for a in play_episode(env, CoveragePolicy(SCRIPTS), seed=episode_seed(seed, i),
                                                          split="train").actions]

    assert actions(5) == actions(5)
    assert actions(5) != actions(6)
    env.close()


def test_searched_scripts_are_the_winners_then_the_finalists():
    result = {"winners": {"0": {"script": "O1-R1-T0-D-T0-C2"}, "0.1": {"script": "O0-R0-T0-D-T0-C0"}},
              "finalists": ["O0-R0-T0-D-T0-C0", "O1-R2-T0-D-T0-C1", "O1-R1-T0-D-T0-C2", "O2-R0-T0-D-T0-C1"]}
    assert searched_scripts(result) == ["O1-R1-T0-D-T0-C2", "O0-R0-T0-D-T0-C0", "O1-R2-T0-D-T0-C1",
                                        "O2-R0-T0-D-T0-C1"]
    assert searched_scripts(result, k=1) == ["O1-R1-T0-D-T0-C2"]
    with pytest.raises(ValueError, match="CoverageMix: searched \\+ named \\+ random must be 1"):
        CoverageMix(random=0.2)


def test_without_search_results_a_small_search_runs_once_and_is_cached(tmp_path, monkeypatch):
    monkeypatch.setattr(offline_comparison, "SMALL_SEARCH", {
        "rounds": ((2, 2),), "val_episodes": 2, "test_episodes": 2, "max_observe": 1, "max_retrieve": 1,
        "max_tool": 1, "max_post_tool": 1, "checks": (0, 1)})
    args = offline_comparison.argparse.Namespace(out=str(tmp_path), scripts=str(tmp_path / "none"), cost_weight=0.05,
                                                 quiet=True)
    scripts = offline_comparison.coverage_scripts(TOY_ID, args)
    cached = tmp_path / "scripts" / f"{TOY_ID}.json"
    result = json.loads(cached.read_text())
    assert scripts and scripts == searched_scripts(result) and set(result["winners"]) == {"0", "0.05"}
    stamp = cached.stat().st_mtime_ns
    assert offline_comparison.coverage_scripts(TOY_ID, args) == scripts and cached.stat().st_mtime_ns == stamp


def test_a_tiny_comparison_at_a_cost_weight_has_iql_and_cql_rows_trained_on_that_return(tmp_path, minari_path):
    scripts_dir = tmp_path / "scripts"
    scripts_dir.mkdir()
    (scripts_dir / f"{TOY_ID}.json").write_text(json.dumps({"winners": {"0": {"script": SCRIPTS[0]}},
                                                            "finalists": list(SCRIPTS)}))
    out = tmp_path / "out"
    w = 0.05
    assert offline_comparison.main([TOY_ID, "--out", str(out), "--seeds", "1", "--episodes", "30", "--eval-episodes",
                                    "4", "--epochs", "2", "--value-steps", "40", "--ref-episodes", "2",
                                    "--cost-weight", str(w), "--scripts", str(scripts_dir),
                                    "--datasets-path", str(minari_path), "--quiet"]) == 0
    rows = {r["policy"]: r for r in json.loads((out / "summary.json").read_text())}
    assert {"iql", "cql", "bc", "awr", "awr-q"} <= set(rows)
    assert all(rows[n]["cost_weight"] == w and rows[n]["episodes"] == 4 for n in ("iql", "cql"))
    cell = json.loads((out / "cells" / TOY_ID / "iql-seed0.json").read_text())
    assert cell["value_steps"] == 40 and cell["behaviour"] == f"coverage[{','.join(SCRIPTS)}]"
    for name in ("iql", "cql"):  # the model records the cost weight of the rewards it learned from
        blob = torch.load(out / "models" / TOY_ID / f"{name}-seed0.pt", weights_only=True)
        assert blob["env_kwargs"]["cost_weight"] == w and blob["config"]["value_steps"] == 40
    dsid = offline_comparison.dataset_id(TOY_ID, 0)
    data = datasets.load_transitions(dsid)
    outcomes = datasets.episode_outcomes(dsid)
    starts = np.flatnonzero(np.r_[True, data.episode[1:] != data.episode[:-1]])
    returns = data.returns[starts]
    assert np.allclose(returns, [o["quality"] - w * o["cost"] for o in outcomes], atol=1e-4)
    assert np.any(returns < np.array([o["quality"] for o in outcomes]) - 1e-6)  # the cost term is in the rewards
    assert len(minari.load_dataset(dsid).storage.metadata["coverage"]["components"]) == 30
