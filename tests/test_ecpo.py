"""ECPO and the online PPO baselines: normalisation, calibration, the reward wrapper, and train -> eval."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from itertools import product

import gymnasium as gym
import numpy as np
import pytest
from stable_baselines3.common.vec_env import DummyVecEnv

import harness_gym  # noqa: F401
from harness_gym.core.state import FEATURE_NAMES
from harness_gym.running.rollout import play_episode
from harness_gym_baselines.algos.ecpo import (
    SOURCES,
    Calibrator,
    EvidenceReward,
    KnowledgeCorruption,
    RunningMeanStd,
    episode_evidence,
    roc_auc,
    task_evidence,
    trust_weight,
)
from harness_gym_baselines.algos.ecpo_preference import PreferenceModel, step_features
from harness_gym_baselines.algos.ppo import dense_step_reward
from harness_gym_baselines.cli import main
from harness_gym_baselines.policies.behaviour import BehaviourPolicy
from harness_gym_baselines.policies.registry import make_policy

ENV = "HarnessResearchQA-v1"
_F = {name: i for i, name in enumerate(FEATURE_NAMES)}


def test_running_mean_std_equals_numpy_over_uneven_batches() -> None:
    rng = np.random.default_rng(3)
    stats = RunningMeanStd(3)
    seen = []
    for size in (1, 7, 1, 250, 3, 40):
        batch = rng.normal(loc=[5.0, -2.0, 0.0], scale=[0.1, 3.0, 1e-3], size=(size, 3))
        stats.update(batch)
        seen.append(batch)
        everything = np.concatenate(seen)
        np.testing.assert_allclose(stats.mean, everything.mean(axis=0), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(stats.var, everything.var(axis=0), rtol=1e-9, atol=1e-15)
    assert stats.count == sum(len(b) for b in seen)
    stats.update(np.empty((0, 3)))
    assert stats.count == len(everything)


def test_roc_auc_equals_pair_counting_with_ties() -> None:
    rng = np.random.default_rng(0)
    scores = rng.integers(0, 4, size=60).astype(float)  # many ties
    labels = rng.random(60) < 0.4
    pos, neg = scores[labels], scores[~labels]
    brute = np.mean([1.0 if p > n else 0.5 if p == n else 0.0 for p, n in product(pos, neg)])
    assert roc_auc(scores, labels) == pytest.approx(brute)
    assert roc_auc(labels.astype(float), labels) == 1.0
    assert np.isnan(roc_auc(scores, np.ones(60, dtype=bool)))


def test_trust_weight_is_the_floor_at_chance_and_near_one_for_a_perfect_source() -> None:
    assert trust_weight(0.5, 0.1, 10.0) == pytest.approx(0.1)
    assert trust_weight(0.2, 0.1, 10.0) == pytest.approx(0.1)
    assert trust_weight(1.0, 0.1, 10.0) > 0.98
    assert trust_weight(0.6, 0.1, 10.0) < trust_weight(0.8, 0.1, 10.0)


def _validation_episodes(n: int) -> list:
    env = gym.make(ENV)
    try:
        return [play_episode(env, BehaviourPolicy(), seed=i, split="val") for i in range(n)]
    finally:
        env.close()


def _preference_model() -> PreferenceModel:
    return PreferenceModel(len(FEATURE_NAMES) + 7, 8)


def test_a_source_replaced_by_noise_falls_to_the_weight_floor() -> None:
    episodes = _validation_episodes(400)
    off = KnowledgeCorruption(0.3, seed=0)
    sums = np.array([episode_evidence(e, _preference_model(), off).sum(axis=0) for e in episodes])
    success = np.array([e.final_info["success"] for e in episodes])
    assert 0.1 < success.mean() < 0.9
    cal = Calibrator(floor=0.1, slope=10.0)
    assert cal.update(sums, success)
    informative = {s: w for s, w in zip(SOURCES, cal.weights)}
    assert informative["env"] > 0.95  # the env source carries the terminal quality
    k = SOURCES.index("self")
    assert informative["self"] > 0.5, informative
    rng = np.random.default_rng(1)
    noisy_weights = []
    for _ in range(5):
        sums[:, k] = rng.normal(size=len(sums))
        cal.update(sums, success)
        noisy_weights.append(cal.weights[k])
    assert np.mean(noisy_weights) < 0.1 + 0.15, noisy_weights
    assert cal.weights[SOURCES.index("env")] > 0.95  # the others keep their trust


def test_frozen_calibrator_keeps_its_weights() -> None:
    cal = Calibrator(floor=0.1, slope=10.0)
    success = np.array([True, False] * 20)
    sums = np.tile(success[:, None].astype(float), (1, len(SOURCES)))
    cal.update(sums, success)
    before = cal.weights.copy()
    cal.frozen = True
    cal.update(np.random.default_rng(0).normal(size=sums.shape), success)
    np.testing.assert_array_equal(cal.weights, before)
    assert not np.allclose(cal.aucs, 1.0)  # the AUCs are still measured


def test_knowledge_corruption_flips_only_correct_signals_at_the_rate() -> None:
    corr = KnowledgeCorruption(0.3, seed=0)
    values = np.array([1.0, -1.0, 0.0] * 20_000)
    np.testing.assert_array_equal(corr.apply(values), values)  # off
    corr.active = True
    out = corr.apply(values)
    np.testing.assert_array_equal(out[values <= 0], values[values <= 0])
    assert set(np.unique(out[values > 0])) == {-1.0, 1.0}
    assert np.mean(out[values > 0] < 0) == pytest.approx(0.3, abs=0.01)


def test_wrapper_leaves_observations_dones_and_infos_untouched() -> None:
    def venv() -> DummyVecEnv:
        v = DummyVecEnv([lambda: gym.make(ENV) for _ in range(2)])
        v.seed(11)
        return v

    plain = venv()
    cal = Calibrator(0.1, 10.0)
    cal.weights = np.array([1.0, 0.5, 0.25, 0.2, 0.1])
    wrapped = EvidenceReward(venv(), cal, _preference_model(), KnowledgeCorruption(0.3, 0), center=True,
                             norm_clip=5.0)
    returned = {}
    inner_step_wait = wrapped.venv.step_wait

    def spy() -> tuple:
        returned["out"] = inner_step_wait()
        return returned["out"]

    wrapped.venv.step_wait = spy
    obs_p, obs_w = plain.reset(), wrapped.reset()
    np.testing.assert_array_equal(obs_p, obs_w)
    rng = np.random.default_rng(0)
    n_done = 0
    for _ in range(120):
        masks = np.stack(plain.env_method("action_masks"))
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
        prev_obs = obs_w.copy()
        obs_p, rew_p, done_p, info_p = plain.step(actions)
        obs_w, rew_w, done_w, info_w = wrapped.step(actions)
        inner = returned["out"]
        assert obs_w is inner[0] and done_w is inner[2] and info_w is inner[3]
        np.testing.assert_array_equal(obs_p, obs_w)
        np.testing.assert_array_equal(done_p, done_w)
        np.testing.assert_equal(info_w, info_p)  # nested dicts, NaN patterns equal to NaN
        # the reward is the documented formula on the wrapper's own statistics after the update
        ev = np.array([task_evidence(info, float(r), bool(d)) + (0.0,) for info, r, d in zip(info_w, rew_p, done_p)])
        ev[:, 4] = wrapped.preference.step_scores(step_features(prev_obs, actions))
        z = (ev - wrapped.stats.mean) / (wrapped.stats.std + 1e-8)
        np.testing.assert_allclose(rew_w, np.clip(z, -5, 5) @ cal.weights, rtol=1e-5, atol=1e-5)
        n_done += int(done_p.sum())
    assert n_done > 5
    plain.close()
    wrapped.close()


def test_dense_step_rewards_follow_the_table() -> None:
    obs = np.zeros(len(FEATURE_NAMES), dtype=np.float32)
    after_pass = obs.copy()
    after_pass[_F["last_check_result"]] = 1.0

    def info(invalid: bool = False, env: float = 0.0, knowledge: float = 0.0) -> dict:
        return {"invalid_action": invalid, "evidence": {"env": env, "knowledge": knowledge}}

    assert dense_step_reward(0, info(), obs, obs, False) == 0.02
    assert dense_step_reward(2, info(env=-0.1), obs, obs, False) == -0.1
    assert dense_step_reward(2, info(env=0.05), obs, obs, False) == 0.05
    assert dense_step_reward(3, info(knowledge=1.0), obs, obs, False) == 0.1
    assert dense_step_reward(3, info(knowledge=-1.0), obs, obs, False) == 0.0
    assert dense_step_reward(4, info(), obs, after_pass, False) == 0.1
    checked = obs.copy()
    checked[_F["checked_since_change"]] = 1.0
    assert dense_step_reward(4, info(), checked, after_pass, False) == 0.0  # a repeated check earns nothing
    assert dense_step_reward(6, info(invalid=True), obs, obs, False) == -0.05


def test_preference_model_learns_the_ranking_of_buffer_trajectories() -> None:
    env = gym.make(ENV)
    feats, quality = [], []
    for i in range(300):
        ep = play_episode(env, BehaviourPolicy(), seed=i, split="train")
        feats.append(step_features(np.array(ep.observations[:-1]), np.array(ep.actions)))
        quality.append(ep.final_info["quality"])
    env.close()
    model = _preference_model().fit(feats, np.array(quality), steps=150, pairs=256, seed=0)
    assert model.heldout_accuracy > 0.55  # better than chance on pairs it never saw
    step_scores = model.step_scores(feats[0])
    assert step_scores.shape == (len(feats[0]),)


def _run_cli(argv: list[str]) -> str:
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(argv) == 0
    return out.getvalue()


@pytest.mark.parametrize("algo", ["ecpo", "ppo-sparse", "ppo-dense"])
def test_train_saves_a_model_that_eval_runs(tmp_path, algo: str) -> None:
    model = tmp_path / f"{algo}.zip"
    extra = ["--preference-episodes", "60", "--preference-steps", "20"] if algo == "ecpo" else []
    printed = _run_cli(["train", algo, "--env", ENV, "--steps", "512", "--seed", "0", "--out", str(model),
                        "--n-steps", "64", "--eval-every", "2", "--eval-episodes", "6",
                        "--log-dir", str(tmp_path / "runs"), *extra])
    assert f"wrote {model}" in printed and model.is_file()
    runs = list((tmp_path / "runs").iterdir())
    assert len(runs) == 1 and runs[0].name.startswith(f"{ENV}__{algo}__0__")
    result = json.loads(_run_cli(["eval", ENV, "--policy", str(model), "--episodes", "5", "--json"]))
    assert result["episodes"] == 5 and 0.0 <= result["quality_mean"] <= 1.0
    policy = make_policy(str(model))
    meta = policy.model.harness_gym
    assert meta["algo"] == algo and meta["env_id"] == ENV and len(meta["eval_history"]) >= 2
    if algo == "ecpo":
        assert set(meta["weights"]) == set(SOURCES)
        assert all(0.1 <= w <= 1.0 for w in meta["weights"].values())


@pytest.mark.parametrize("algo", ["ecpo", "ppo-sparse"])
def test_subprocess_envs_train_the_same_model(tmp_path, algo: str) -> None:
    """``--vec-env subproc`` steps each env in its own process; the envs, seeds and updates are the same as
    in one process, so the trained parameters are too."""
    import torch

    extra = ["--preference-episodes", "40", "--preference-steps", "10"] if algo == "ecpo" else []
    params = {}
    for mode in ("dummy", "subproc"):
        model = tmp_path / f"{mode}.zip"
        _run_cli(["train", algo, "--env", ENV, "--steps", "256", "--seed", "1", "--out", str(model), "--num-envs", "2",
                  "--vec-env", mode, "--n-steps", "64", "--eval-every", "0", "--log-dir", str(tmp_path / "runs"), *extra])
        params[mode] = make_policy(str(model)).model.policy.state_dict()
    assert params["dummy"].keys() == params["subproc"].keys()
    assert all(torch.equal(params["dummy"][k], params["subproc"][k]) for k in params["dummy"])


def test_env_kwargs_reach_the_training_envs(tmp_path) -> None:
    """``--env-kwarg`` configures the envs the trainer steps (here a budget of 5 units caps every episode)."""
    from harness_gym_baselines.algos.ppo import PPOConfig, train

    lengths = {}
    for kwargs in ((), ("budget=5",)):
        policy = train(PPOConfig(env_id="HarnessPlan-v1", steps=512, n_steps=64, n_envs=2, eval_every=0,
                                 out=str(tmp_path / "m.zip"), log_dir=str(tmp_path / "runs"), env_kwargs=kwargs))
        lengths[kwargs] = max(e["l"] for e in policy.model.ep_info_buffer)
    assert lengths[("budget=5",)] <= 5 < lengths[()]
    with pytest.raises(ValueError, match="has no keyword 'budgett'"):
        train(PPOConfig(env_id="HarnessPlan-v1", steps=64, env_kwargs=("budgett=5",), out=str(tmp_path / "x.zip")))


def test_plain_sb3_zips_load_as_policies(tmp_path) -> None:
    from stable_baselines3 import DQN, PPO

    env = gym.make(ENV)
    for algo in (PPO, DQN):
        kwargs = {"n_steps": 32, "batch_size": 32} if algo is PPO else {"learning_starts": 0}
        path = tmp_path / f"{algo.__name__}.zip"
        algo("MlpPolicy", env, seed=0, device="cpu", **kwargs).learn(64).save(path)
        policy = make_policy(str(path))
        assert policy.model.algorithm == algo.__name__  # rebuilt from the zip's plain data, never unpickled
        ep = play_episode(env, policy, seed=0, split="test")
        assert ep.final_info["quality"] >= 0.0
    env.close()
    not_a_model = tmp_path / "bad.zip"
    import zipfile

    with zipfile.ZipFile(not_a_model, "w") as z:
        z.writestr("data", "{not json")
    with pytest.raises(ValueError, match="bad.zip: not a Stable-Baselines3 model zip"):
        make_policy(str(not_a_model))
