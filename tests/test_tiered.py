"""The tiered envs (harness_gym/tiered.py, docs/cascade.md): their own ids with a cheap and a frontier worker, the
base ids unchanged, each call billed at its tier's price, one per domain with its frontier profile and card (the
frontier cards' pinned rows are held in range by tests/test_fidelity.py)."""

from __future__ import annotations

import json
import warnings

import gymnasium as gym
import numpy as np
import pytest

import harness_gym
from harness_gym.core.actions import N_ACTIONS, Action
from harness_gym.core.paths import data_path
from harness_gym.core.prices import price_table
from harness_gym.core.state import FEATURE_NAMES
from harness_gym.core.types import Task
from harness_gym.tiered import (
    CHECK_FRONTIER,
    DRAFT_FRONTIER,
    REVISE_FRONTIER,
    TIER_FEATURE_NAMES,
    TIERED_DOMAINS,
    TIERED_ENV_IDS,
    FrontierWorker,
    frontier_profile_path,
    load_frontier,
    uses_self_check,
)
from harness_gym.workers.simulated import task_draws

_SMALL = {"budget": 12}


@pytest.mark.parametrize("env_id", harness_gym.ALL_ENV_IDS)
def test_base_ids_keep_their_action_space_and_features(env_id):
    e = gym.make(env_id)
    assert e.action_space == gym.spaces.Discrete(N_ACTIONS) and N_ACTIONS == 7
    assert e.unwrapped.feature_names == FEATURE_NAMES
    assert e.observation_space.shape == (len(FEATURE_NAMES),)
    assert not set(TIERED_ENV_IDS) & set(harness_gym.ALL_ENV_IDS)
    e.close()


@pytest.mark.parametrize("env_id", TIERED_ENV_IDS)
def test_tiered_ids_pass_gymnasium_and_sb3_check_env(env_id):
    from gymnasium.utils.env_checker import check_env
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    e = gym.make(env_id, **_SMALL)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(e.unwrapped, skip_render_check=False)
        sb3_check_env(e, warn=True)
    assert [str(w.message) for w in caught] == []
    self_check = "ResearchQA" in env_id
    assert e.action_space.n == N_ACTIONS + (3 if self_check else 2)
    assert e.unwrapped.feature_names == FEATURE_NAMES + TIER_FEATURE_NAMES
    e.close()


@pytest.mark.parametrize("env_id", TIERED_ENV_IDS)
def test_frontier_actions_share_their_base_actions_masks(env_id):
    e = gym.make(env_id, **_SMALL)
    rng = np.random.default_rng(0)
    obs, info = e.reset(seed=3)
    for _ in range(12):
        mask = info["action_mask"]
        assert list(mask[:N_ACTIONS]) == list(e.unwrapped.base.action_masks())
        assert mask[DRAFT_FRONTIER] == mask[Action.DRAFT] and mask[REVISE_FRONTIER] == mask[Action.REVISE]
        if len(mask) > CHECK_FRONTIER:
            assert mask[CHECK_FRONTIER] == mask[Action.CHECK]
        obs, _, done, _, info = e.step(int(rng.choice(np.flatnonzero(mask))))
        assert e.observation_space.contains(obs)
        if done:
            obs, info = e.reset(seed=int(rng.integers(100)))
    e.close()


def test_tiered_id_runs_under_make_vec_and_maskable_masks():
    from harness_gym.running.sb3 import make_sb3_vec_env

    vec = make_sb3_vec_env("HarnessTauRetailTiered-v2", 2, seed=0, env_kwargs=_SMALL)
    obs = vec.reset()
    assert obs.shape == (2, len(FEATURE_NAMES) + 3)
    masks = np.array(vec.env_method("action_masks"))
    assert masks.shape == (2, N_ACTIONS + 2)
    obs, rewards, dones, infos = vec.step(np.array([DRAFT_FRONTIER, Action.DRAFT]))
    assert [info["tier"] for info in infos] == ["frontier", "cheap"]
    vec.close()


def test_each_call_is_billed_at_its_tiers_list_price():
    cheap, frontier = price_table("cheap-hosted"), price_table("frontier-hosted")
    e = gym.make("HarnessResearchQATiered-v2", cost_weight=0.01)
    names = e.unwrapped.feature_names
    by_tier = {}
    for action in (Action.DRAFT, DRAFT_FRONTIER):
        obs, _ = e.reset(seed=5)
        obs, reward, _, _, info = e.step(int(action))
        cost = info["cost"]
        bill = {"prompt_token": cost["prompt_tokens"], "completion_token": cost["completion_tokens"]}
        table = frontier if action == DRAFT_FRONTIER else cheap
        assert cost["units"] == pytest.approx(table.units(bill))
        assert reward == pytest.approx(-0.01 * cost["units"])
        by_tier[info["tier"]] = (cost["units"], dict(info["tier_units"]), obs)
    units_c, tiers_c, obs_c = by_tier["cheap"]
    units_f, tiers_f, obs_f = by_tier["frontier"]
    assert tiers_c == {"cheap": units_c, "frontier": 0.0} and tiers_f == {"cheap": 0.0, "frontier": units_f}
    assert units_f > 10 * units_c  # Sonnet-class list prices are 20-25x gpt-4o-mini's per token
    assert obs_c[names.index("draft_by_frontier")] == 0.0 and obs_f[names.index("draft_by_frontier")] == 1.0
    assert obs_f[names.index("frontier_cost_spent")] > 0.0 == obs_f[names.index("cheap_cost_spent")]
    # the frontier self-check is billed at the frontier price too
    obs, _, _, _, info = e.step(CHECK_FRONTIER)
    assert info["action_name"] == "CHECK_FRONTIER" and info["tier"] == "frontier"
    assert info["cost"]["units"] == pytest.approx(frontier.units(
        {"prompt_token": info["cost"]["prompt_tokens"], "completion_token": info["cost"]["completion_tokens"]}))
    e.close()


def test_frontier_tier_reads_the_cheap_tiers_task_draw():
    profile, rho = load_frontier("tau_retail")
    worker = FrontierWorker(profile, None, shared_seed=0, correlation=rho)
    ids = [f"t{i}" for i in range(3000)]
    tasks = [Task(task_id=i, split="test", family="f", difficulty=0.0, prompt="", candidates=()) for i in ids]
    frontier = np.array([worker.task_ability(t) for t in tasks])
    cheap = np.array([task_draws(0, i)[0] for i in ids])
    assert np.corrcoef(frontier, cheap)[0, 1] == pytest.approx(rho, abs=0.04)
    assert np.std(frontier) == pytest.approx(profile.task_ability_sd, rel=0.06)
    same = FrontierWorker(profile, None, shared_seed=0, correlation=1.0)
    assert same.task_ability(tasks[0]) == pytest.approx(profile.task_ability_sd * cheap[0])
    with pytest.raises(ValueError, match="correlation"):
        FrontierWorker(profile, None, shared_seed=0, correlation=1.5)


def test_ability_correlation_keyword_sets_the_frontier_tiers_rho_and_is_recorded():
    default = gym.make("HarnessCodeTiered-v2").unwrapped
    assert default.frontier_worker.correlation == 0.7 and default.settings["ability_correlation"] == 0.7
    tasks = list(default.domain.tasks("test"))
    for rho in (0.0, 1.0):
        env = gym.make("HarnessCodeTiered-v2", ability_correlation=rho).unwrapped
        assert env.settings["ability_correlation"] == rho
        frontier = np.array([env.frontier_worker.task_ability(t) for t in tasks])
        cheap = np.array([env.cheap_worker.task_ability(t) for t in tasks])
        if rho == 1.0:  # the same draw, scaled by the two profiles' spreads
            assert np.corrcoef(frontier, cheap)[0, 1] == pytest.approx(1.0)
        else:
            assert abs(np.corrcoef(frontier, cheap)[0, 1]) < 0.5
    with pytest.raises(ValueError, match="correlation must lie in"):
        gym.make("HarnessCodeTiered-v2", ability_correlation=1.5)
    with pytest.raises(ValueError, match="a live frontier worker has none"):
        gym.make("HarnessCodeTiered-v2", worker="openai", model="fake", base_url="http://127.0.0.1:9/v1",
                 frontier_model="fake", ability_correlation=0.5)


def test_the_rho_sweep_measures_coupling_and_the_routing_oracle_per_rho():
    from harness_gym_baselines.experiments.cascade import FIXED, rho_sweep

    found = rho_sweep("HarnessResearchQATiered-v2", [0.0, 1.0], episodes=20, cost_weight=0.01, coupling_seeds=4)
    assert [res["rho"] for res in found] == [0.0, 1.0]
    for res in found:
        returns = [res["rows"][name]["return"]["mean"] for name in FIXED]
        assert res["routing_oracle_return"]["mean"] >= max(returns[:2]) - 1e-12  # the better tier per episode
        c = res["coupling"]
        assert 0.0 <= c["frontier_success_where_cheap_failed"] <= 1.0
    low, high = (res["coupling"]["per_task_correlation"] for res in found)
    assert high > low  # a shared draw makes the tiers' per-task success rates go together


def test_tiered_env_refuses_a_profile_and_an_unknown_base():
    from harness_gym.tiered import make_tiered

    with pytest.raises(ValueError, match="fixes the worker profiles"):
        gym.make("HarnessCodeTiered-v2", profile="v1")
    with pytest.raises(ValueError, match="no tiered env for 'HarnessToy'"):
        make_tiered("HarnessToy", "harness_gym.domains.plan.env:HarnessPlanEnv")


def test_every_domain_has_a_tiered_id_a_frontier_profile_and_card():
    profiles = {p.stem for p in frontier_profile_path("code").parent.glob("*.json")}
    cards = {p.stem for p in data_path("fidelity", "frontier").glob("*.json")}
    assert set(TIERED_DOMAINS) == {env_id.removesuffix("-v2") for env_id in harness_gym.ENV_IDS}
    assert set(TIERED_DOMAINS.values()) == profiles == cards
    for domain in TIERED_DOMAINS.values():
        profile, rho = load_frontier(domain)
        cheap = json.loads(data_path("profiles", "v2", f"{domain}.json").read_text())["params"]
        assert rho == 0.7 and profile.task_ability_seed != cheap["task_ability_seed"], domain  # its own draw z_f


@pytest.mark.parametrize("env_id", TIERED_ENV_IDS)
def test_only_a_self_check_domain_gets_check_frontier(env_id):
    e = gym.make(env_id, **_SMALL)
    self_check = uses_self_check(e.unwrapped.domain)
    assert self_check == (e.unwrapped.domain.name == "research_qa")  # the one domain without a structured verifier
    assert e.action_space.n == N_ACTIONS + (3 if self_check else 2)
    e.close()


# ----- the fixed cascades (harness_gym_baselines/policies/cascade.py) -------------------------------------------
def _episodes(env_id: str, policy_name: str, n: int):
    from harness_gym.running.rollout import play_episode
    from harness_gym_baselines.policies.registry import make_policy

    env = gym.make(env_id, cost_weight=0.01)
    policy = make_policy(policy_name)
    played = [play_episode(env, policy, seed=seed, split="val") for seed in range(n)]
    env.close()
    return played


_CONF = FEATURE_NAMES.index("worker_confidence")
_LAST_CHECK = FEATURE_NAMES.index("last_check_result")


@pytest.mark.parametrize("env_id", ["HarnessCodeTiered-v2", "HarnessResearchQATiered-v2"])
def test_always_cheap_and_always_frontier_keep_to_their_tier(env_id):
    cheap = _episodes(env_id, "always-cheap", 15)
    frontier = _episodes(env_id, "always-frontier", 15)
    assert all(a < N_ACTIONS for ep in cheap for a in ep.actions)
    assert all(ep.final_info["tier_units"]["frontier"] == 0.0 for ep in cheap)
    assert not {int(Action.DRAFT), int(Action.REVISE)} & {a for ep in frontier for a in ep.actions}
    assert all(DRAFT_FRONTIER in ep.actions for ep in frontier)
    assert np.mean([sum(i["cost"]["units"] for i in ep.infos[1:]) for ep in frontier]) > 5 * np.mean(
        [sum(i["cost"]["units"] for i in ep.infos[1:]) for ep in cheap])


def test_cheap_then_frontier_escalates_exactly_on_a_failed_check_of_the_cheap_draft():
    escalated = kept = 0
    for ep in _episodes("HarnessCodeTiered-v2", "cheap-then-frontier", 30):
        first_check = next(t for t, a in enumerate(ep.actions) if a in (Action.CHECK, CHECK_FRONTIER))
        assert int(Action.DRAFT) in ep.actions[:first_check]
        failed = ep.observations[first_check + 1][_LAST_CHECK] < 0
        assert (ep.actions[first_check + 1] == DRAFT_FRONTIER) == failed
        assert ep.actions.count(DRAFT_FRONTIER) <= 1
        escalated += failed
        kept += not failed
    assert escalated and kept


def test_confidence_cascade_escalates_below_its_threshold():
    from harness_gym.running.rollout import play_episode
    from harness_gym_baselines.policies.cascade import CascadePolicy

    env = gym.make("HarnessResearchQATiered-v2", cost_weight=0.01)
    seen = set()
    for seed in range(20):
        ep = play_episode(env, CascadePolicy("O1-R2-T1-Dc-Eq80-Vc-C1"), seed=seed, split="val")
        t = ep.actions.index(int(Action.DRAFT))
        low = ep.observations[t + 1][_CONF] < 0.8
        assert (ep.actions[t + 1] == DRAFT_FRONTIER) == low
        seen.add(bool(low))
    assert seen == {True, False}
    never = play_episode(env, CascadePolicy("O0-R0-T0-Dc-Eq0-Vc-C0"), seed=0, split="val")
    assert never.actions == [int(Action.DRAFT), int(Action.SUBMIT)]
    env.close()


def test_cascade_names_are_checked():
    from harness_gym_baselines.policies.cascade import CascadeScript

    assert CascadeScript.parse("O1-R2-T1-Dc-Eq80-Vf-C2").threshold == 0.8
    assert CascadeScript.parse("O0-R0-T0-Df-En-Vf-C0").name == "O0-R0-T0-Df-En-Vf-C0"
    with pytest.raises(ValueError, match="not a cascade script name"):
        CascadeScript.parse("O1-R2-T1-Dx-En-Vf-C2")
    with pytest.raises(ValueError, match="0-100 percent"):
        CascadeScript.parse("O1-R2-T1-Dc-Eq150-Vf-C2")


# ----- the real-model path: a second endpoint for the frontier tier ---------------------------------------------
def _live_episode(cheap_url: str, frontier_url: str, tmp_path, mode: str) -> list:
    env = gym.make("HarnessResearchQATiered-v2", worker="openai", base_url=cheap_url, model="fake",
                   cache=str(tmp_path / "cheap.sqlite"), cache_mode=mode, frontier_base_url=frontier_url,
                   frontier_model="fake-frontier", frontier_cache=str(tmp_path / "frontier.sqlite"),
                   frontier_cache_mode=mode, max_retries=0, timeout_s=5.0, cost_weight=0.01)
    obs, _ = env.reset(seed=0)
    trace = [obs]
    for action in (Action.OBSERVE, Action.DRAFT, DRAFT_FRONTIER, CHECK_FRONTIER, Action.SUBMIT):
        obs, reward, _, _, info = env.step(int(action))
        trace.append((obs.tolist(), reward, info["tier"], info["cost"]["units"]))
    env.close()
    return trace


def test_frontier_tier_calls_its_own_endpoint_and_replays(tmp_path):
    from harness_gym.workers.fake_server import FakeOpenAIServer

    with FakeOpenAIServer() as cheap, FakeOpenAIServer() as frontier:
        recorded = _live_episode(cheap.base_url, frontier.base_url, tmp_path, "record")
        cheap_calls, frontier_calls = len(cheap.requests), len(frontier.requests)
    # DRAFT (+ its confidence) went to the first server; DRAFT_FRONTIER (+ confidence) and CHECK_FRONTIER to the second
    assert cheap_calls == 2 and frontier_calls == 3
    assert [step[2] for step in recorded[1:]] == ["cheap", "cheap", "frontier", "frontier", "cheap"]
    assert recorded[3][3] > 5 * recorded[2][3]  # the frontier draft billed at frontier-hosted prices
    # both servers are gone: the replay answers every call from the two recordings
    replayed = _live_episode("http://127.0.0.1:9/v1", "http://127.0.0.1:9/v1", tmp_path, "replay")
    assert [np.asarray(s[0] if isinstance(s, tuple) else s).tolist() for s in replayed] == [
        np.asarray(s[0] if isinstance(s, tuple) else s).tolist() for s in recorded]
    assert [s[1:] for s in replayed[1:]] == [s[1:] for s in recorded[1:]]


def test_frontier_options_need_the_live_worker():
    with pytest.raises(ValueError, match="need worker='openai'"):
        gym.make("HarnessCodeTiered-v2", frontier_model="gpt-4o")
    with pytest.raises(ValueError, match="needs frontier_model"):
        gym.make("HarnessCodeTiered-v2", worker="openai", model="fake", base_url="http://127.0.0.1:9/v1")


def test_the_cascade_search_grid_is_the_documented_one():
    from harness_gym_baselines.experiments.cascade import search_grid

    grid = search_grid(75)
    names = [s.name for s in grid]
    assert len(names) == len(set(names)) == 44  # docs/cascade.md, "Fixed cascades"
    assert "O2-R4-T3-Dc-Eq75-Vf-C2" in names and "O1-R2-T1-Df-En-Vc-C0" in names
    assert not any(s.escalate == "k" and s.checks == 0 for s in grid)
    assert not any(s.draft == "f" and s.escalate != "n" for s in grid)


def test_the_weight_sweep_picks_each_weights_best_train_return():
    from harness_gym_baselines.experiments import cascade

    found = cascade.weight_sweep("HarnessCodeTiered-v2", [0.0, 0.001, 1.0], train_episodes=3, test_episodes=4)
    grid = cascade.search_grid(50)
    train = {s.name: cascade.play("HarnessCodeTiered-v2", cascade.CascadePolicy(s), split="train", episodes=3,
                                  cost_weight=0.0) for s in grid}
    for res in found:
        w = res["cost_weight"]
        best = max(float((t["quality"] - w * t["units"]).mean()) for t in train.values())
        chosen = train[res["best_fixed"]]
        assert float((chosen["quality"] - w * chosen["units"]).mean()) == pytest.approx(best)
        assert res["return"]["mean"] == pytest.approx(res["quality"]["mean"] - w * res["units"]["mean"])
    assert found[-1]["frontier_share"]["mean"] == 0.0  # at w = 1 a frontier call never pays


def test_action_names_and_base_actions_cover_the_frontier_ids():
    from harness_gym.tiered import action_name, base_action

    assert [action_name(a) for a in range(N_ACTIONS)] == [a.name for a in Action]
    assert (action_name(DRAFT_FRONTIER), action_name(REVISE_FRONTIER), action_name(CHECK_FRONTIER)) == (
        "DRAFT_FRONTIER", "REVISE_FRONTIER", "CHECK_FRONTIER")
    assert base_action(DRAFT_FRONTIER) is Action.DRAFT and base_action(int(Action.SUBMIT)) is Action.SUBMIT
    with pytest.raises(ValueError):
        action_name(N_ACTIONS + 3)
