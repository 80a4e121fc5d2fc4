"""The cascade experiment's offline learners (harness_gym_baselines/experiments/cascade.py, docs/cascade.md): a
behaviour mixture over every tier choice, trained learners that act in the tiered action space, and their rows."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("minari")

from harness_gym.running.rollout import play_episode  # noqa: E402
from harness_gym.tiered import DRAFT_FRONTIER, REVISE_FRONTIER  # noqa: E402
from harness_gym_baselines.experiments import cascade  # noqa: E402
from harness_gym_baselines.policies.cascade import CascadeMixture  # noqa: E402

ENV = "HarnessCodeTiered-v2"


def _actions(policy, seed: int, cost_weight: float = 0.0) -> list[int]:
    env = gym.make(ENV, split="train", cost_weight=cost_weight)
    try:
        return list(play_episode(env, policy, seed=seed, split="train").actions)
    finally:
        env.close()


def test_the_mixture_draws_its_script_from_the_reset_seed_and_covers_both_tiers():
    grid = cascade.search_grid(80)
    mixture = CascadeMixture(grid)
    assert _actions(mixture, 3) == _actions(CascadeMixture(grid), 3)  # the same seed, the same episode
    played = [a for seed in range(30) for a in _actions(mixture, seed)]
    assert DRAFT_FRONTIER in played and 3 in played and REVISE_FRONTIER in played  # 3: the cheap DRAFT
    no_deviation = CascadeMixture(grid[:1], deviate=0.0)
    assert _actions(no_deviation, 5) == _actions(cascade.CascadePolicy(grid[0]), 5)
    with pytest.raises(ValueError, match="at least one script"):
        CascadeMixture([])
    with pytest.raises(ValueError, match="deviate must lie in"):
        CascadeMixture(grid, deviate=1.5)


def test_a_tiny_cascade_run_trains_offline_learners_that_act_in_the_tiered_space(tmp_path, monkeypatch):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    cascade.main(["--out", str(tmp_path), "--envs", ENV, "--val-episodes", "2", "--train-episodes", "1",
                  "--test-episodes", "6", "--ppo-steps", "0", "--offline", "awr-q", "bc",
                  "--offline-episodes", "30", "--offline-seeds", "0", "1"])
    result = json.loads((tmp_path / "cascade.json").read_text())["results"][0]
    assert {"awr-q", "bc", "best-fixed", "always-frontier"} <= result["rows"].keys()
    for name in ("awr-q", "bc"):
        row = result["rows"][name]
        assert 0.0 <= row["quality"]["mean"] <= 1.0 and row["units"]["mean"] > 0
        assert row["return"]["mean"] == pytest.approx(row["quality"]["mean"] - 0.01 * row["units"]["mean"])
    assert sorted(p.name for p in (tmp_path / "models").glob("*.pt")) == [
        f"{ENV}-{n}-s{s}.pt" for n in ("awr-q", "bc") for s in (0, 1)]
    policy = cascade.train_offline(ENV, "awr-q", seed=0, episodes=30, grid=cascade.search_grid(80),
                                   cost_weight=0.01, out=tmp_path)  # the kept model, not retrained
    actions = [a for seed in range(5) for a in _actions(policy, seed, cost_weight=0.01)]
    assert max(actions) <= REVISE_FRONTIER and np.all(np.array(actions) >= 0)
    assert "offline awr-q, bc on 30 mixture episodes x seeds [0, 1]" in (tmp_path / "cascade.md").read_text()
