"""Properties every registered env must have (docs/harness_mdp.md), parametrised over the registry."""

from __future__ import annotations

import math
import warnings

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import harness_gym
from harness_gym.core.maturity import PATTERNS

ENV_IDS = list(harness_gym.ENV_IDS)


def same(a, b) -> bool:
    """Structural equality where NaN equals NaN (Gymnasium's data_equivalence treats NaN as unequal)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=True))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return a == b


@pytest.fixture(scope="module", params=ENV_IDS)
def env(request):
    e = gym.make(request.param)
    yield e
    e.close()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_make_with_module_prefix(env_id):
    e = gym.make(f"harness_gym:{env_id}")
    obs, info = e.reset(seed=0)
    assert e.observation_space.contains(obs)
    assert e.unwrapped.feature_names == harness_gym.core.state.FEATURE_NAMES
    e.close()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_every_id_is_v2_v1_stays_and_the_retired_v0_names_v2(env_id):
    assert env_id.endswith("-v2")
    assert gym.spec(env_id).kwargs == {"profile": "v2"}
    v1 = env_id.replace("-v2", "-v1")
    assert v1 in harness_gym.ENV_IDS_V1 and gym.spec(v1).kwargs == {}
    old = env_id.replace("-v2", "-v0")
    assert old not in gym.registry
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with pytest.raises(gym.error.DeprecatedEnv, match=f"Please use `{env_id}` instead"):
            gym.make(old)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_gymnasium_check_env_without_warnings(env_id):
    from gymnasium.utils.env_checker import check_env

    e = gym.make(env_id).unwrapped
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(e, skip_render_check=False)
    assert [str(w.message) for w in caught] == []
    e.close()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_sb3_check_env_without_warnings(env_id):
    from stable_baselines3.common.env_checker import check_env

    e = gym.make(env_id)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(e, warn=True)
    assert [str(w.message) for w in caught] == []
    e.close()


def without_cache_flag(info: dict) -> dict:
    """``exec_cached`` says whether a job was a hit in the process-wide execution cache, which depends on what
    ran earlier in the process; it is the one info field outside the determinism contract."""
    return {k: v for k, v in info.items() if k != "exec_cached"}


def rollout(e: gym.Env, seed: int, task_id: str | None, actions: list[int]):
    obs, info = e.reset(seed=seed, options={"task_id": task_id} if task_id else None)
    traj = [(obs, without_cache_flag(info))]
    for a in actions:
        obs, r, term, trunc, info = e.step(a)
        traj.append((obs, r, term, trunc, without_cache_flag(info)))
        if term or trunc:
            break
    return traj


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_same_seed_same_task_same_trajectory(env_id):
    e1, e2 = gym.make(env_id), gym.make(env_id)
    actions = [int(a) for a in np.random.default_rng(7).integers(0, 7, size=60)]
    for seed in (0, 1):
        t1 = rollout(e1, seed, None, actions)
        t2 = rollout(e2, seed, None, actions)
        assert same(t1, t2)
        tid = t1[0][1]["task_id"]
        assert same(rollout(e1, seed + 10, tid, actions), rollout(e2, seed + 10, tid, actions))
    e1.close()
    e2.close()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**31 - 1), actions=st.lists(st.integers(0, 6), min_size=1, max_size=120))
def test_random_action_sequences_respect_the_contract(env, seed, actions):
    obs, info = env.reset(seed=seed)
    keys, pattern_keys = set(info), set(info["patterns"])
    budget = env.unwrapped.budget
    for t, a in enumerate(actions):
        obs, r, term, trunc, info = env.step(a)
        assert env.observation_space.contains(obs)
        assert set(info) == keys and set(info["patterns"]) == pattern_keys == set(PATTERNS)
        assert not trunc
        if term:
            assert 0.0 <= r <= 1.0 and r == info["quality"]
            break
        assert r == 0.0 and info["quality"] == -1.0
        assert t + 1 < budget
    else:
        return
    assert t + 1 <= budget


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_budget_always_ends_the_episode(env_id):
    e = gym.make(env_id, budget=12)
    e.reset(seed=3)
    for t in range(12):
        _, _, term, trunc, info = e.step(0)
        if term:
            break
    assert term and info["forced_submit"] and not trunc
    e.close()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_vector_envs_step(mode):
    envs = gym.make_vec(ENV_IDS[0], num_envs=4 if mode == "async" else 2, vectorization_mode=mode)
    obs, info = envs.reset(seed=0)
    assert obs.shape == (envs.num_envs, len(harness_gym.core.state.FEATURE_NAMES))
    for _ in range(40):
        obs, r, term, trunc, info = envs.step(envs.action_space.sample())
        assert np.all((r >= 0) & (r <= 1))
    envs.close()


def test_sb3_ppo_learns_a_few_thousand_steps():
    from stable_baselines3 import PPO

    e = gym.make("HarnessCode-v1")
    model = PPO("MlpPolicy", e, n_steps=256, batch_size=64, n_epochs=2, seed=0, verbose=0, device="cpu")
    model.learn(total_timesteps=2048)
    assert model.num_timesteps >= 2048
    obs, _ = e.reset(seed=0)
    action, _ = model.predict(obs, deterministic=True)
    assert e.action_space.contains(int(action))
    e.close()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_envs_share_the_loaded_domain_and_episodes_leave_it_unchanged(env_id):
    """Two envs on the same data hold one domain object; running episodes on both rebinds none of its
    attributes once its lazy tables are built (a domain keeps no per-episode state: docs/harness_mdp.md,
    "Domains")."""
    e1, e2 = gym.make(env_id), gym.make(env_id)
    domain = e1.unwrapped.domain
    assert e2.unwrapped.domain is domain

    def episode(env: gym.Env, seed: int) -> None:
        env.reset(seed=seed)
        for action in (0, 1, 2, 3, 4, 5, 4, 6):
            if env.step(action)[2]:
                break

    episode(e1, 0)  # builds what the domain builds on first use (the BM25 index)
    before = {name: id(value) for name, value in vars(domain).items()}
    for seed, env in ((1, e2), (2, e1), (3, e2)):
        episode(env, seed)
    assert {name: id(value) for name, value in vars(domain).items()} == before
    e1.close()
    e2.close()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_unusable_replies_leave_empty_drafts_that_are_graded(env_id):
    """A worker whose every DRAFT and REVISE reply is unusable leaves an empty draft after each, which CHECK and
    the grader take like any other (as the live worker's empty drafts are)."""
    from dataclasses import replace

    from harness_gym.core.actions import Action
    from harness_gym.workers import WorkerProfile

    domain = gym.make(env_id).unwrapped.domain.name
    shipped = WorkerProfile.for_domain(domain)
    e = gym.make(env_id, profile=replace(shipped, unusable_reply_prob=1.0))
    e.reset(seed=0)
    assert e.unwrapped.action_masks()[Action.DRAFT]
    for act in (Action.DRAFT, Action.CHECK, Action.REVISE, Action.REVISE):
        mask = e.unwrapped.action_masks()
        if mask[act]:
            e.step(int(act))
            if act in (Action.DRAFT, Action.REVISE):
                assert e.unwrapped.context.draft.content == "" and e.unwrapped.context.draft.candidate == -1
    _, reward, term, _, info = e.step(int(Action.SUBMIT))
    assert term and 0.0 <= reward <= 1.0 and info["quality"] == reward
    e.close()
