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
    with pytest.raises(SystemExit):  # the kept models were trained at w = 0.01: another weight is refused
        cascade.main(["--out", str(tmp_path), "--envs", ENV, "--cost-weight", "0.1", "--ppo-steps", "0", "--offline"])


def test_post_draft_tools_extend_the_cascade_grammar_and_old_names_stay():
    from harness_gym_baselines.policies.cascade import CascadeScript

    for name in ("O1-R2-T1-Dc-Eq80-Vf-C2", "O0-R0-T0-Df-En-Vc-C0", "O2-R4-T3-Dc-T2-Ek-Vf-C3"):
        assert CascadeScript.parse(name).name == name
    assert CascadeScript.parse("O1-R2-T1-Dc-T2-Eq80-Vf-C2").post_tool == 2
    assert CascadeScript.parse("O1-R2-T1-Dc-T0-En-Vc-C1").name == "O1-R2-T1-Dc-En-Vc-C1"
    with pytest.raises(ValueError, match="not a cascade script name"):
        CascadeScript.parse("O1-R2-T1-Dc-Tx-En-Vc-C1")


@pytest.mark.parametrize("shape", ["O0-R0-T0-D-T1-C1", "O1-R2-T0-D-T2-C3", "O0-R1-T0-D-T0-C0"])
def test_the_cheap_tier_variant_plays_its_open_loop_script_step_for_step(shape):
    from harness_gym_baselines.policies.open_loop import Script, ScriptPolicy

    variants = cascade.tier_variants(Script.parse(shape), 70)
    assert len(variants) == (6 if shape.endswith("C0") else 8) and len({v.name for v in variants}) == len(variants)
    cheap = [v for v in variants if (v.draft, v.escalate, v.repair) == ("c", "n", "c")]
    assert len(cheap) == 1
    for seed in range(6):
        assert _actions(cascade.CascadePolicy(cheap[0]), seed) == _actions(ScriptPolicy(shape), seed)
    frontier = [v for v in variants if v.draft == "f" and v.repair == "f"][0]
    post = Script.parse(shape).post_tool
    if post:  # the frontier variant runs the same post-draft tools after its frontier draft
        played = _actions(cascade.CascadePolicy(frontier), 0)
        i = played.index(DRAFT_FRONTIER)
        assert played[i + 1:i + 1 + post] == [2] * post  # 2: TOOL


def test_the_wide_reference_takes_the_best_val_return_of_every_tier_variant_and_named_harness():
    from harness_gym.budget.references import NAMED_SCRIPTS
    from harness_gym_baselines.experiments.script_search import SearchConfig

    narrow = cascade.CascadeScript.parse("O1-R2-T1-Dc-Ek-Vf-C2")
    search = SearchConfig(env_id=ENV, cost_weights=(0.01,), rounds=((2, 2),), max_observe=1, max_retrieve=1,
                          max_tool=0, max_post_tool=1, checks=(0, 1), val_episodes=2)
    wide = cascade.wide_reference(ENV, threshold=70, narrow_best=narrow, cost_weight=0.01, val_episodes=4,
                                  search=search)
    finalists = [n for n in wide["finalists"] if n not in NAMED_SCRIPTS]
    assert wide["candidates"] == 2 * 2 * 2 * 2 and len(finalists) == 2
    expected = {v.name for f in finalists for v in cascade.tier_variants(cascade.Script.parse(f), 70)}
    assert set(wide["val_returns"]) == expected | {narrow.name, *NAMED_SCRIPTS}
    assert wide["val_returns"][wide["best"]] == max(wide["val_returns"].values())
    check = cascade.play(ENV, wide["policy"], split="val", episodes=4, cost_weight=0.01)["return"].mean()
    assert check == pytest.approx(wide["val_returns"][wide["best"]])
    with pytest.raises(ValueError, match="at cost weight 0.1 only"):
        cascade.wide_reference(ENV, threshold=70, narrow_best=narrow, cost_weight=0.1, val_episodes=4, search=search)


def test_merge_joins_runs_of_the_same_settings_and_names_a_difference(tmp_path):
    args = {"out": "x", "envs": ["A"], "cost_weight": 0.01, "ppo_steps": 0, "num_workers": 1}
    for name, env, w in (("a", "A", 0.01), ("b", "B", 0.01), ("c", "C", 0.001)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "cascade.json").write_text(json.dumps(
            {"args": {**args, "out": name, "envs": [env], "cost_weight": w}, "results": [{"env_id": env}]}))
    merged, results = cascade.merge_runs([tmp_path / "a", tmp_path / "b"])
    assert merged["envs"] == ["A", "B"] and [r["env_id"] for r in results] == ["A", "B"]
    with pytest.raises(SystemExit, match=r"c/cascade.json was run with other settings .*cost_weight 0.01 vs 0.001"):
        cascade.merge_runs([tmp_path / "a", tmp_path / "c"])
    with pytest.raises(SystemExit, match="does not exist"):
        cascade.merge_runs([tmp_path / "a", tmp_path / "missing"])
