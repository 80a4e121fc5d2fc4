"""The cost budget: the auto rule and its precomputed file, the forced submit at exhaustion and its rate."""

from __future__ import annotations

import json
import statistics

import gymnasium as gym
import numpy as np
import pytest

import harness_gym
import harness_gym.env as env_module
from examples.toy_domain.env import HarnessToyEnv
from harness_gym.core import budgets as rule
from harness_gym.core.actions import Action
from harness_gym.env import REFERENCE_PREFIX, budgets_file, play_reference_episode, price_profiles, price_table
from harness_gym_baselines.evaluate import evaluate

A = Action


@pytest.fixture(scope="module")
def stored() -> dict:
    return json.loads(budgets_file().read_text())


@pytest.mark.parametrize("env_id", harness_gym.ENV_IDS)
def test_budgets_json_holds_every_shipped_profile_for_the_current_data(stored, env_id):
    env = gym.make(env_id)
    henv = env.unwrapped
    entry = stored["domains"][henv.domain.name]
    assert entry["env_id"] == env_id and set(entry["profiles"]) == set(price_profiles())
    assert entry["fingerprint"] == henv.reference_fingerprint(), (
        f"envs_data/budgets.json is stale for {env_id} (tasks, corpus, tools, worker profile or prompts changed): "
        "run python -m harness_gym.budgets")
    for name, profile in entry["profiles"].items():
        assert profile["prices"] == price_table(name).digest(), f"{name}: prices changed; rerun harness_gym.budgets"
        assert profile["budget_units"] == pytest.approx(rule.FACTOR * profile["median_units"])
    env.reset(seed=0)  # the env reads its budget from the file
    assert henv.budget_units == entry["profiles"]["cheap-hosted"]["budget_units"]
    env.close()


@pytest.mark.parametrize("env_id", harness_gym.ENV_IDS)
def test_the_fingerprint_does_not_move_as_episodes_fill_the_domains_caches(env_id, monkeypatch):
    env = gym.make(env_id)
    henv = env.unwrapped
    before = henv.reference_fingerprint()
    rng = np.random.default_rng(0)
    for seed in range(6):  # every action, so that every kept result of the domain is filled
        _, info = env.reset(seed=seed)
        done = False
        while not done:
            action = int(rng.choice(np.flatnonzero(info["action_mask"])))
            _, _, terminated, truncated, info = env.step(action)
            done = terminated or truncated
    monkeypatch.setattr(env_module, "_DOMAIN_FINGERPRINTS", {})  # computed again from the domain's objects
    assert henv.reference_fingerprint() == before
    env.close()


def test_a_stored_budget_is_what_the_rule_recomputes(stored, monkeypatch):
    monkeypatch.setattr(env_module, "_REFERENCE_BILLS", {})  # recompute, whatever this process has seen
    for prices in ("cheap-hosted", "frontier-hosted+web-search"):
        env = gym.make("HarnessPlan-v1", prices=prices)
        henv = env.unwrapped
        costs = [henv.prices.units(bill) for bill in henv.reference_bills()]
        assert len(costs) == rule.EPISODES
        expected = stored["domains"]["plan"]["profiles"][prices]
        assert statistics.median(costs) == pytest.approx(expected["median_units"], rel=1e-12)
        assert rule.budget_from_costs(costs) == pytest.approx(expected["budget_units"], rel=1e-12)
        env.close()


def test_the_reference_sequence_is_the_forced_check_loop():
    env = HarnessToyEnv(budget_units=None)
    actions = []
    original = env.step

    def record(action):
        actions.append(Action(action))
        return original(action)

    env.step = record
    bill = play_reference_episode(env, seed=0, split="train")
    assert tuple(a for a in actions[:len(REFERENCE_PREFIX)] if a != A.REVISE) == REFERENCE_PREFIX
    assert actions[-1] == A.SUBMIT and actions[-2] == A.CHECK
    for i, action in enumerate(actions[len(REFERENCE_PREFIX):-1], start=len(REFERENCE_PREFIX)):
        assert action in (A.CHECK, A.REVISE) and (action == A.CHECK) != (actions[i - 1] == A.CHECK)
    assert bill == dict(env.episode_bill) and bill["prompt_token"] > 0
    env.close()


def test_auto_is_computed_on_first_use_for_a_configuration_the_file_does_not_hold(monkeypatch):
    monkeypatch.setattr(env_module, "_BUDGETS", {})
    env = HarnessToyEnv()  # the toy domain is not in budgets.json
    env.reset(seed=0)
    costs = [env.prices.units(bill) for bill in env.reference_bills()]
    assert env.budget_units == pytest.approx(rule.budget_from_costs(costs)) and env.budget_units > 0
    again = HarnessToyEnv(budget=12)  # another step budget is another configuration
    assert again.reference_fingerprint() != env.reference_fingerprint()
    assert HarnessToyEnv(budget_units=5.0).budget_units == 5.0 and HarnessToyEnv(budget_units=None).budget_units is None
    env.close()


@pytest.mark.parametrize("bad", [0, -1.0, float("inf"), "lots", True])
def test_a_bad_budget_is_refused(bad):
    with pytest.raises((TypeError, ValueError), match="budget_units"):
        HarnessToyEnv(budget_units=bad)


def test_spending_the_budget_forces_a_submit_of_the_current_draft():
    env = gym.make("HarnessPlan-v1", budget_units=2.5)
    env.reset(seed=0)
    obs, reward, terminated, _, info = env.step(int(A.DRAFT))  # about 1.7 units: under the budget
    assert not terminated and not info["forced_submit"] and info["cost"]["units"] < 2.5
    obs, reward, terminated, _, info = env.step(int(A.REVISE if env.unwrapped.action_masks()[A.REVISE] else A.DRAFT))
    assert terminated and info["forced_submit"] and info["quality"] >= 0.0
    assert "cost budget exhausted: forced SUBMIT" in env.unwrapped._last_text
    none = gym.make("HarnessPlan-v1", budget_units=None)
    none.reset(seed=0)
    for _ in range(4):
        assert not none.step(int(A.DRAFT))[2]
    env.close()
    none.close()


def test_forced_submit_rate_is_in_the_eval_summary():
    tight = evaluate("HarnessPlan-v1", "thorough", episodes=6, env_kwargs={"budget_units": 3.0})
    free = evaluate("HarnessPlan-v1", "thorough", episodes=6, env_kwargs={"budget_units": None})
    assert tight["forced_submit_rate"] == 1.0 and free["forced_submit_rate"] == 0.0
    assert tight["cost_mean"] < free["cost_mean"]
