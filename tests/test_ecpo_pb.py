"""The potential-based ECPO (ecpo-pb) and the farming share: potentials that telescope, repeats that earn
nothing, the wrapper's shaped reward on real episodes, the farming share of hand-made episodes, and the
ecpo-pb trainer on the command line."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout

import gymnasium as gym
import numpy as np
import pytest
from stable_baselines3.common.vec_env import DummyVecEnv

import harness_gym  # noqa: F401
from harness_gym.core.actions import Action
from harness_gym.core.state import FEATURE_NAMES
from harness_gym_baselines.algos.ecpo import (
    SOURCES,
    Calibrator,
    EvidencePotential,
    EvidenceReward,
    KnowledgeCorruption,
    potential_shaping,
    task_evidence,
)
from harness_gym_baselines.algos.ecpo_analysis import BlogEvidenceTerm, farming_share, farming_steps
from harness_gym_baselines.algos.ecpo_preference import PreferenceModel, step_features
from harness_gym_baselines.cli import main
from harness_gym_baselines.common.trainer_registry import load_trainer
from harness_gym_baselines.policies.registry import make_policy

ENV = "HarnessResearchQA-v1"
TOOL, DRAFT, SUBMIT = int(Action.TOOL), int(Action.DRAFT), int(Action.SUBMIT)
# one valid tool call's raw evidence: env feedback, consistency, knowledge, self, preference
VALID_TOOL = np.array([0.05, 1.0, 1.0, 0.0, 0.3])


def _random_episode(rng: np.random.Generator, length: int) -> tuple[np.ndarray, np.ndarray]:
    """Actions with many repeats and raw evidence with repeated verdicts."""
    actions = rng.choice([TOOL, TOOL, TOOL, DRAFT, int(Action.RETRIEVE), int(Action.CHECK)], size=length)
    evidence = np.column_stack([rng.choice([0.0, 0.05, -0.1], length), rng.choice([0.0, 0.3, 1.0], length),
                                rng.choice([-1.0, 0.0, 1.0], length), rng.normal(0, 0.2, length),
                                rng.normal(0, 1, length)])
    return actions, evidence


@pytest.mark.parametrize("length", [1, 7, 40])
def test_the_shaping_of_an_episode_telescopes_however_many_steps_repeat(length: int) -> None:
    rng = np.random.default_rng(length)
    actions, evidence = _random_episode(rng, length)
    terms, phis = potential_shaping(actions, evidence, gamma=1.0)
    np.testing.assert_allclose(phis[0], 0.0)
    np.testing.assert_allclose(terms.sum(axis=0), phis[-1] - phis[0], atol=1e-12)
    gamma = 0.9
    terms, phis = potential_shaping(actions, evidence, gamma=gamma)
    discounts = gamma ** np.arange(length)
    np.testing.assert_allclose(discounts @ terms, gamma ** length * phis[-1] - phis[0], atol=1e-12)
    # the potentials are bounded by seven actions' worth of each source's range, whatever the episode's length
    assert np.all(np.abs(phis[:, :3]) <= 7 * np.abs(evidence[:, :3]).max(axis=0) + 1e-12)


def test_a_step_repeated_with_the_same_verdict_earns_nothing_and_self_is_the_confidence() -> None:
    actions = [TOOL] * 6
    terms, phis = potential_shaping(actions, np.tile(VALID_TOOL, (6, 1)) * [1, 1, 1, 0, 1], gamma=1.0)
    np.testing.assert_allclose(terms[0], VALID_TOOL * [1, 1, 1, 0, 1])  # the first valid call earns its evidence
    np.testing.assert_allclose(terms[1:], 0.0)  # each repeat earns nothing
    # discounted: a repeat costs (1 - gamma) * phi, never a bonus
    discounted, _ = potential_shaping(actions, np.tile(VALID_TOOL, (6, 1)), gamma=0.99)
    assert np.all(discounted[1:, [0, 1, 2, 4]] <= 0.0)
    # a new verdict moves the potential by the difference: a failing call after a valid one
    terms, _ = potential_shaping([TOOL, TOOL], np.array([VALID_TOOL, [-0.1, 0.0, -1.0, 0.0, 0.3]]), gamma=1.0)
    np.testing.assert_allclose(terms[1, :3], [-0.15, -1.0, -2.0])
    # self is already a difference: its potential is the running confidence, so its terms are the signal itself
    self_changes = np.array([0.4, -0.1, 0.3])
    ev = np.zeros((3, len(SOURCES)))
    ev[:, SOURCES.index("self")] = self_changes
    terms, phis = potential_shaping([DRAFT, int(Action.REVISE), DRAFT], ev, gamma=1.0)
    np.testing.assert_allclose(terms[:, SOURCES.index("self")], self_changes)
    assert phis[-1, SOURCES.index("self")] == pytest.approx(0.6)
    with pytest.raises(ValueError, match="gamma"):
        EvidencePotential(0.0)


def _calibration() -> BlogEvidenceTerm:
    """A blog calibration like a trained run's: knowledge mean 0.4, std 0.6; consistency mean 0.8."""
    return BlogEvidenceTerm(weights=np.array([1.0, 0.5, 0.6, 0.4]), mean=np.array([0.07, 0.8, 0.4, 0.1]),
                            std=np.array([0.25, 0.3, 0.6, 0.2]))


def test_a_repeating_policy_farms_under_the_blog_shaping_and_earns_nothing_under_the_potential() -> None:
    cal = _calibration()
    repeat_tool = np.tile(VALID_TOOL[:4], (5, 1))
    terms = cal.of_steps(repeat_tool)
    assert np.all(terms > 0)  # blog ECPO pays every valid tool call again
    np.testing.assert_array_equal(farming_steps([TOOL] * 5, terms), [False, True, True, True, True])
    assert farming_share([[TOOL] * 5], [terms]) == pytest.approx(4 / 5)
    shaped, _ = potential_shaping([TOOL] * 5, np.column_stack([repeat_tool, np.zeros(5)]), gamma=1.0)
    np.testing.assert_allclose(shaped[1:], 0.0)
    # a policy that never repeats an earning action does not farm; an earning step after a non-earning step of
    # the same action is not farming either, nor is a repeat that earns nothing
    assert farming_share([[TOOL, DRAFT, SUBMIT]], [[1.0, 1.0, 1.0]]) == 0.0
    np.testing.assert_array_equal(farming_steps([TOOL, TOOL, TOOL, TOOL], [-1.0, 0.5, -0.2, 0.5]),
                                  [False, False, False, True])
    # pooled over episodes: farming steps over all steps
    assert farming_share([[TOOL] * 5, [DRAFT, SUBMIT]], [terms, [1.0, 1.0]]) == pytest.approx(4 / 7)
    assert np.isnan(farming_share([], []))
    with pytest.raises(ValueError, match="3 actions but 2 evidence terms"):
        farming_steps([TOOL] * 3, [1.0, 1.0])


def test_the_blog_calibration_comes_from_an_ecpo_model_record() -> None:
    names = ("env", "consistency", "knowledge", "self", "preference")
    meta = {"algo": "ecpo", "weights": dict(zip(names, [0.9, 0.5, 0.6, 0.4, 0.2])),
            "normaliser": {"mean": dict(zip(names, [0.07, 0.8, 0.4, 0.1, 0.0])),
                           "std": dict(zip(names, [0.25, 0.3, 0.6, 0.2, 1.0]))},
            "config": {"center": False, "norm_clip": 2.0}}
    cal = BlogEvidenceTerm.from_model(meta)
    np.testing.assert_allclose(cal.weights, [0.9, 0.5, 0.6, 0.4])
    assert not cal.center and cal.norm_clip == 2.0
    # without centering and with the clip: the knowledge +1 is 1/0.6 std, consistency 1/0.3 std clipped to 2
    assert cal.of_steps(np.array([[0.0, 1.0, 1.0, 0.0]]))[0] == pytest.approx(0.5 * 2.0 + 0.6 / 0.6)
    with pytest.raises(ValueError, match="algo 'ecpo-pb'"):
        BlogEvidenceTerm.from_model({**meta, "algo": "ecpo-pb"})


def test_the_potential_wrapper_pays_the_potential_differences_and_resets_with_each_episode() -> None:
    def venv() -> DummyVecEnv:
        v = DummyVecEnv([lambda: gym.make(ENV, cost_weight=0.01) for _ in range(2)])
        v.seed(5)
        return v

    cal = Calibrator(0.1, 10.0)
    cal.weights = np.array([1.0, 0.5, 0.25, 0.2, 0.1])
    preference = PreferenceModel(len(FEATURE_NAMES) + 7, 8)
    wrapped = EvidenceReward(venv(), cal, preference, KnowledgeCorruption(0.3, 0), shaping="potential", gamma=1.0)
    env_rewards: list[np.ndarray] = []  # what the wrapped env itself returned, step by step
    inner_step_wait = wrapped.venv.step_wait

    def recording_step_wait() -> tuple:
        out = inner_step_wait()
        env_rewards.append(out[1])
        return out

    wrapped.venv.step_wait = recording_step_wait
    obs = wrapped.reset()
    rng = np.random.default_rng(1)
    # an independent record of each env's episode so far: its actions and raw evidence
    history: list[tuple[list[int], list[np.ndarray]]] = [([], []), ([], [])]
    episodes = 0
    for _ in range(150):
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in wrapped.env_method("action_masks")])
        scores = preference.step_scores(step_features(obs, actions))
        obs, shaped, dones, infos = wrapped.step(actions)
        expected = np.empty((2, len(SOURCES)))
        for i, (done, info) in enumerate(zip(dones, infos)):
            acts, evidence = history[i]
            before = potential_shaping(acts, np.array(evidence).reshape(-1, 5), 1.0)[1][-1]
            acts.append(int(actions[i]))
            evidence.append(np.array([*task_evidence(info, 0.0, bool(done)), scores[i]]))
            terms, phis = potential_shaping(acts, np.array(evidence), 1.0)
            expected[i] = phis[-1] - before
            expected[i, 0] += env_rewards[-1][i]  # the task reward (Q, minus the cost term) enters unshaped
            if done:
                np.testing.assert_allclose(terms.sum(axis=0), phis[-1], atol=1e-9)  # telescoped from phi(s_0) = 0
                np.testing.assert_array_equal(wrapped.potentials[i].phi, 0.0)
                history[i] = ([], [])
                episodes += 1
        np.testing.assert_allclose(shaped, (expected / (wrapped.stats.std + 1e-8)) @ cal.weights, rtol=1e-4,
                                   atol=1e-5)
    assert episodes > 5
    wrapped.close()
    with pytest.raises(ValueError, match="shaping must be one of"):
        EvidenceReward(venv(), cal, preference, KnowledgeCorruption(0.3, 0), shaping="dense")


def _run_cli(argv: list[str]) -> str:
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(argv) == 0
    return out.getvalue()


def test_train_ecpo_pb_writes_a_model_that_eval_loads(tmp_path) -> None:
    trainer = load_trainer("ecpo-pb")
    assert trainer.config().shaping == "potential"
    model = tmp_path / "pb.zip"
    printed = _run_cli(["train", "ecpo-pb", "--env", ENV, "--steps", "384", "--seed", "0", "--out", str(model),
                        "--n-steps", "64", "--eval-every", "2", "--eval-episodes", "6", "--cost-weight", "0.01",
                        "--num-envs", "2", "--preference-episodes", "60", "--preference-steps", "20",
                        "--final-eval-episodes", "0", "--log-dir", str(tmp_path / "runs")])
    assert f"wrote {model}" in printed and model.is_file()
    assert [r.name.split("__")[1] for r in (tmp_path / "runs").iterdir()] == ["ecpo-pb"]
    result = json.loads(_run_cli(["eval", ENV, "--policy", str(model), "--episodes", "4", "--json"]))
    assert result["episodes"] == 4 and 0.0 <= result["quality_mean"] <= 1.0
    meta = make_policy(str(model)).model.harness_gym
    assert meta["algo"] == "ecpo-pb" and meta["config"]["shaping"] == "potential"
    assert meta["config"]["cost_weight"] == 0.01 and meta["config"]["n_envs"] == 2
    assert set(meta["weights"]) == set(SOURCES)


class _ToolThenSubmit:
    """Calls a tool until the step budget is nearly gone, then drafts and submits (a farming policy)."""

    name = "tool-farmer"

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        self.t = 0

    def act(self, obs: np.ndarray, env: gym.Env) -> int:
        self.t += 1
        return TOOL if self.t < 8 else DRAFT if self.t == 8 else SUBMIT


def test_the_comparison_table_reports_the_farming_share_of_the_ecpo_rows() -> None:
    from harness_gym_baselines.experiments.ecpo_comparison import evaluate_split, summarise, table_lines

    records = evaluate_split(ENV, _ToolThenSubmit(), split="test", episodes=3, seed=0, farming=_calibration())
    # every valid tool call after the first is paid again by the blog shaping
    assert all(r["farming_steps"] > 0 for r in records)
    assert "farming_steps" not in evaluate_split(ENV, _ToolThenSubmit(), split="test", episodes=1, seed=0)[0]
    cells = {f"{ENV}|{m}|0": {"env_id": ENV, "method": m, "seed": 0, "train_seconds": 1.0, "training": {},
                              "test": records if m == "ecpo" else [{k: v for k, v in r.items() if k != "farming_steps"}
                                                                   for r in records], "ood": records}
             for m in ("ecpo", "static")}
    rows = summarise(cells, [ENV], ("ecpo", "static"))
    steps = sum(r["steps"] for r in records)
    assert rows[0]["farming_share"] == pytest.approx(sum(r["farming_steps"] for r in records) / steps)
    assert np.isnan(rows[1]["farming_share"])
    lines = table_lines(rows)
    assert "farming share" in lines[0]
    assert f"{100 * rows[0]['farming_share']:.1f}%" in lines[2] and lines[3].count("n/a") >= 1


def test_corruption_runs_adaptive_and_frozen_for_both_ecpos_and_tabulates_them(tmp_path, monkeypatch) -> None:
    import argparse
    from dataclasses import replace
    from types import SimpleNamespace

    import harness_gym_baselines.common.trainer_registry as registry
    from harness_gym_baselines.experiments import ecpo_comparison

    trained = []

    def fake_trainer(name):  # the real config (its fields and fixed shaping), a training that only records it
        def train(cfg):
            trained.append(cfg)
            policy = make_policy("static")
            weight = 0.5 if cfg.freeze_weights_at_corruption else 0.2
            history = [{"timesteps": t, "weight_knowledge": w, "success_rate": 0.5}
                       for t, w in ((0, 0.5), (cfg.corrupt_from, 0.5), (cfg.steps, weight))]
            policy.model = SimpleNamespace(harness_gym={"eval_history": history})
            return policy

        return replace(load_trainer(name), train=train)

    monkeypatch.setattr(registry, "load_trainer", fake_trainer)
    monkeypatch.setattr(ecpo_comparison, "behaviour_dataset", lambda env_id, seed, episodes: f"buffer-s{seed}")
    args = argparse.Namespace(out=tmp_path, env=[ENV], seeds=1, steps=3000, corrupt_from=1000, episodes=3,
                              buffer_episodes=10, cost_weight=0.01, quiet=True)
    runs = ecpo_comparison.corruption(args)
    assert sorted((c.shaping, c.freeze_weights_at_corruption) for c in trained) == [
        ("blog", False), ("blog", True), ("potential", False), ("potential", True)]
    assert {(c.corrupt_from, c.steps, c.cost_weight, c.preference_dataset) for c in trained} == {
        (1000, 3000, 0.01, "buffer-s0")}
    assert sorted((r["method"], r["arm"]) for r in runs.values()) == [
        ("ecpo", "adaptive"), ("ecpo", "frozen"), ("ecpo-pb", "adaptive"), ("ecpo-pb", "frozen")]
    table = (tmp_path / "corruption.md").read_text()
    for method in ("ecpo", "ecpo-pb"):
        assert f"| {method} | adaptive | 1 | 3000 (2000) |" in table and f"| {method} | frozen | 1 | 3000 (2000) |" in table
    assert table.count("| 0.200 |") == 2 and table.count("| 0.500 |") == 2  # adaptive moved, frozen kept
    assert (tmp_path / "corruption.png").read_bytes()[:4] == b"\x89PNG"
    before = json.loads((tmp_path / "corruption.json").read_text())
    ecpo_comparison.corruption(args)  # resumed: nothing trained again
    assert len(trained) == 4 and json.loads((tmp_path / "corruption.json").read_text()) == before


def test_the_corruption_table_says_whether_adaptive_and_frozen_are_separated() -> None:
    from harness_gym_baselines.experiments.ecpo_comparison import corruption_lines, separation

    def runs(pairs: list[tuple[float, float]], episodes: int = 50) -> dict:
        out = {}
        for seed, (adaptive, frozen) in enumerate(pairs):
            for arm, success in (("adaptive", adaptive), ("frozen", frozen)):
                out[f"E|ecpo|{arm}|{seed}"] = {"method": "ecpo", "arm": arm, "seed": seed, "steps": 100,
                                               "steps_after_switch": 50, "episodes": episodes, "history": [],
                                               "test_success": success}
        return out

    close = separation(runs([(0.74, 0.66)]), "ecpo")  # one seed x 50 episodes: 8 points is inside the noise
    assert close["seeds"] == 1 and close["episodes"] == 50 and not close["separated"]
    assert close["low"] < 0 < close["high"] and abs(close["difference"] - 0.08) < 1e-9
    far = separation(runs([(0.80, 0.40), (0.82, 0.41), (0.78, 0.42)]), "ecpo")
    assert far["separated"] and far["low"] > 0 and far["seeds"] == 3
    # seeds that disagree widen the interval beyond the episodes' binomial one
    spread = separation(runs([(0.90, 0.40), (0.40, 0.90), (0.95, 0.40)], episodes=2000), "ecpo")
    assert not spread["separated"]
    table = "\n".join(corruption_lines(runs([(0.74, 0.66)]), "E", 50))
    assert "- ecpo: adaptive - frozen test success +8.0 points [95% CI " in table and "**not separated**" in table
    legacy = runs([(0.74, 0.66)])
    for r in legacy.values():
        del r["episodes"]
    assert separation(legacy, "ecpo") is None and "no verdict" in "\n".join(corruption_lines(legacy, "E", 50))
