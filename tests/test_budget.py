"""The cost budget: the auto rule and its precomputed file, the forced submit at exhaustion and its rate, and the
rule's promise: the default budget never cuts the upper reference, a named script or a public benchmark's gold plan."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

import harness_gym
import harness_gym.budget.resolve as budget_resolve
from examples.toy_domain.env import HarnessToyEnv
from harness_gym.budget import rule
from harness_gym.budget.references import BUDGET_REFERENCES, play_reference_bills, reference_policy
from harness_gym.budget.rule import budgets_file
from harness_gym.core.actions import Action
from harness_gym.core.prices import price_profiles, price_table
from harness_gym.running.rollout import episode_seed, play_episode
from harness_gym_baselines.evaluate import evaluate
from tests.shared_data import SHARED_DATA, shared_data_mark

A = Action


@pytest.fixture(scope="module")
def stored() -> dict:
    return json.loads(budgets_file().read_text())


@pytest.mark.parametrize("env_id", harness_gym.ALL_ENV_IDS)
def test_budgets_json_holds_every_shipped_profile_for_the_current_data(stored, env_id):
    env = gym.make(env_id)
    henv = env.unwrapped
    entry = stored["envs"][env_id]
    assert entry["env_id"] == env_id and entry["domain"] == henv.domain.name and set(entry["profiles"]) == set(price_profiles())
    assert entry["fingerprint"] == henv.reference_fingerprint(), (
        f"envs_data/budgets.json is stale for {env_id} (tasks, corpus, tools, worker profile or prompts changed): "
        "run python -m harness_gym.budget")
    for name, profile in entry["profiles"].items():
        assert profile["prices"] == price_table(name).digest(), f"{name}: prices changed; rerun harness_gym.budget"
        assert profile["budget_units"] == pytest.approx(rule.FACTOR * profile["max_units"])
        assert profile["max_units"] >= profile["median_units"] > 0
    env.reset(seed=0)  # the env reads its budget from the file
    assert entry["follows_published_limits"] == henv.domain.follows_published_limits
    if henv.domain.follows_published_limits:  # the adapters follow the published step limits: no cost budget
        assert henv.budget_units is None and "none, the published step limits" in henv.budget_rule
    else:
        assert henv.budget_units == entry["profiles"]["cheap-hosted"]["budget_units"]
        assert henv.budget_rule.startswith(f"auto (rule {rule.RULE_VERSION}): ")
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
    monkeypatch.setattr(budget_resolve, "_DOMAIN_FINGERPRINTS", {})  # computed again from the domain's objects
    assert henv.reference_fingerprint() == before
    env.close()


def test_a_stored_budget_is_what_the_rule_recomputes(stored, monkeypatch):
    monkeypatch.setattr(budget_resolve, "_REFERENCE_BILLS", {})  # recompute, whatever this process has seen
    for prices in ("cheap-hosted", "frontier-hosted+web-search"):
        env = gym.make("HarnessPlan-v2", prices=prices)
        henv = env.unwrapped
        costs = [henv.prices.units(bill) for bill in henv.reference_bills()]
        assert len(costs) == len(BUDGET_REFERENCES) * len(henv.domain.all_tasks())
        expected = stored["envs"]["HarnessPlan-v2"]["profiles"][prices]
        assert max(costs) == pytest.approx(expected["max_units"], rel=1e-12)
        assert rule.budget_from_costs(costs) == pytest.approx(expected["budget_units"], rel=1e-12)
        env.close()


def test_the_reference_episodes_are_every_reference_controller_on_every_task():
    env = HarnessToyEnv(budget_units=None)
    played = []
    original = env.reset

    def record(*, seed=None, options=None):
        played.append((options["split"], options["task_id"], seed))
        return original(seed=seed, options=options)

    env.reset = record
    bills = play_reference_bills(env, seed=rule.SEED)
    tasks = [(t.split, t.task_id) for t in env.domain.all_tasks()]
    assert sorted(played) == sorted((s, t, rule.SEED) for s, t in tasks for _ in BUDGET_REFERENCES)
    assert len(bills) == len(played) and all(b["prompt_token"] > 0 for b in bills)
    env.close()


def test_auto_is_computed_on_first_use_for_a_configuration_the_file_does_not_hold(monkeypatch):
    monkeypatch.setattr(budget_resolve, "_BUDGETS", {})
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


def _forced_rate(env_id: str, controller: str, episodes: int, split: str = "test", **kwargs) -> tuple[float, float]:
    env = gym.make(env_id, **kwargs)
    forced, quality = [], []
    try:
        for i in range(episodes):
            ep = play_episode(env, reference_policy(controller), seed=episode_seed(0, i), split=split)
            forced.append(ep.final_info["forced_submit"])
            quality.append(ep.final_info["quality"])
    finally:
        env.close()
    return float(np.mean(forced)), float(np.mean(quality))


@pytest.mark.parametrize("env_id", harness_gym.ALL_ENV_IDS)
def test_the_default_budget_never_cuts_a_reference_controller(env_id):
    """The rule's promise (docs/cost.md, "Budget"): at the defaults, the upper reference and every named script
    end in their own SUBMIT on the test split, and the upper reference scores at least every named script."""
    episodes = 40
    results = {name: _forced_rate(env_id, name, episodes) for name in BUDGET_REFERENCES}
    assert {name: forced for name, (forced, _) in results.items()} == dict.fromkeys(BUDGET_REFERENCES, 0.0)
    upper = results["oracle"][1]
    for name in BUDGET_REFERENCES:
        assert upper >= results[name][1], f"{env_id}: the upper reference ({upper:.3f}) below {name}"


@pytest.mark.parametrize("layout, marker, split", [
    pytest.param("tau2-retail", "db.json", "test", marks=shared_data_mark("tau2-retail", "db.json")),
    pytest.param("tau-v1-retail", "tasks_train.py", "val", marks=shared_data_mark("tau-v1-retail", "tasks_train.py")),
])
def test_the_public_gold_plans_are_never_cut_at_the_defaults(layout, marker, split):
    root = SHARED_DATA / layout
    env = gym.make("HarnessTauRetail-v2", data_dir=str(root))
    assert env.unwrapped.budget_units is None
    env.close()
    forced, quality = _forced_rate("HarnessTauRetail-v2", "oracle", 30, split=split, data_dir=str(root))
    _, checked = _forced_rate("HarnessTauRetail-v2", "forced-check", 30, split=split, data_dir=str(root))
    assert forced == 0.0 and quality > checked  # never cut; its Q is the v2 worker's (per-task ability), not 1
