"""Mechanics of the Harness MDP on a tiny arithmetic domain: budget, no-ops, masks, grading, patterns."""

from __future__ import annotations

import math

import numpy as np
import pytest

from examples.toy_domain.env import HarnessToyEnv as make_toy_env
from harness_gym.core.actions import DEFAULT_ACTION_COST, Action
from harness_gym.core.maturity import PATTERNS, StepRecord, episode_patterns, hms
from harness_gym.core.retrieval import BM25Index
from harness_gym.core.state import FEATURE_NAMES, HIGH, LOW
from harness_gym.core.types import Document

F = {n: i for i, n in enumerate(FEATURE_NAMES)}


def play(env, actions, task_id="toy-0", seed=0):
    obs, info = env.reset(seed=seed, options={"task_id": task_id})
    out = []
    for a in actions:
        obs, r, term, trunc, info = env.step(int(a))
        out.append((obs, r, term, trunc, info))
        if term or trunc:
            break
    return out


def test_inapplicable_actions_are_counted_noops_that_cost_budget():
    env = make_toy_env(budget=10)
    steps = play(env, [Action.CHECK, Action.REVISE])
    for obs, r, term, trunc, info in steps:
        assert info["invalid_action"] and not term and r == 0.0
    assert steps[-1][4]["budget_left"] == 10 - DEFAULT_ACTION_COST[Action.CHECK] - DEFAULT_ACTION_COST[Action.REVISE]
    assert steps[-1][0][F["n_invalid_actions"]] == pytest.approx(0.2)


def test_submit_without_draft_is_a_noop_and_budget_forces_submission_with_q0():
    env = make_toy_env(budget=3)
    steps = play(env, [Action.SUBMIT, Action.SUBMIT, Action.SUBMIT])
    assert [s[4]["invalid_action"] for s in steps] == [True, True, True]
    obs, r, term, trunc, info = steps[-1]
    assert term and info["forced_submit"] and info["quality"] == 0.0 and r == 0.0


def test_forced_submit_grades_the_current_draft():
    env = make_toy_env(budget=4)
    env.reset(seed=0, options={"task_id": "toy-0"})
    env.step(Action.OBSERVE)
    obs, r, term, trunc, info = env.step(Action.DRAFT)
    assert term and info["forced_submit"]
    assert info["quality"] in (0.0, 1.0) and r == info["quality"]
    assert not math.isnan(info["hms"])


def test_action_mask_matches_applicability():
    env = make_toy_env()
    env.reset(seed=0, options={"task_id": "toy-0"})
    mask = env.action_masks()
    assert mask.tolist() == [True, True, True, True, False, False, False]
    env.step(Action.DRAFT)
    mask = env.action_masks()
    assert mask[Action.CHECK] and mask[Action.SUBMIT] and not mask[Action.REVISE]
    env.step(Action.CHECK)
    assert env.action_masks()[Action.REVISE]
    env.step(Action.OBSERVE)
    env.step(Action.OBSERVE)
    assert not env.action_masks()[Action.OBSERVE]


def test_reward_is_terminal_quality_and_check_before_submit_is_recorded():
    env = make_toy_env(budget=30)
    steps = play(env, [Action.OBSERVE, Action.OBSERVE, Action.RETRIEVE, Action.TOOL, Action.DRAFT, Action.CHECK,
                       Action.SUBMIT])
    for obs, r, term, trunc, info in steps[:-1]:
        assert r == 0.0 and not term and info["quality"] == -1.0 and info["hms"] == -1.0
        assert all(v == -1.0 for v in info["patterns"].values())
    obs, r, term, trunc, info = steps[-1]
    assert term and r == info["quality"]
    assert info["patterns"]["check_before_submit"] == 1.0
    assert info["patterns"]["evidence_before_draft"] == 1.0
    assert info["patterns"]["no_redundant_check"] == 1.0


def test_cost_weight_charges_each_step_its_metered_units():
    env = make_toy_env(budget=30, cost_weight=0.5)
    steps = play(env, [Action.OBSERVE, Action.DRAFT])
    assert steps[0][1] == 0.0 and steps[0][4]["cost"]["units"] == 0.0  # OBSERVE calls no model
    assert steps[1][4]["cost"]["llm_calls"] == 2  # the draft and the stated confidence
    assert steps[1][1] == pytest.approx(-0.5 * steps[1][4]["cost"]["units"]) and steps[1][1] < 0


def test_support_ceiling_candidate_passes_check_and_fails_grade():
    env = make_toy_env()
    dom = env.domain
    task = dom.task("toy-0")
    from harness_gym.core.types import Draft

    ceiling = Draft(task.candidates[2].content, 2, 1)
    assert dom.check(task, ceiling, None).passed and dom.grade(task, ceiling, None) == 0.0


def test_observation_stays_in_bounds_and_info_keys_constant():
    env = make_toy_env(budget=20)
    rng = np.random.default_rng(1)
    obs, info = env.reset(seed=3)
    keys = set(info)
    for _ in range(40):
        obs, r, term, trunc, info = env.step(int(rng.integers(7)))
        assert np.all(obs >= LOW) and np.all(obs <= HIGH) and obs.dtype == np.float32
        assert set(info) == keys and set(info["patterns"]) == set(PATTERNS)
        if term:
            obs, info = env.reset()


def test_evidence_signals_follow_the_rules():
    env = make_toy_env()
    env.reset(seed=0, options={"task_id": "toy-0"})
    *_, info = env.step(Action.SUBMIT)
    assert info["evidence"]["consistency"] == 0.0
    *_, info = env.step(Action.TOOL)
    assert info["evidence"]["knowledge"] in (1.0, -1.0)
    env.step(Action.DRAFT)
    *_, info = env.step(Action.CHECK)
    assert info["evidence"]["consistency"] == 1.0
    *_, info = env.step(Action.CHECK)
    assert info["evidence"]["consistency"] == pytest.approx(0.2)


def test_patterns_detect_bad_process():
    trace = [StepRecord(Action.DRAFT, True, 1), StepRecord(Action.CHECK, True, 1, check_passed=False),
             StepRecord(Action.CHECK, True, 1, check_passed=False, redundant_check=True),
             StepRecord(Action.TOOL, True, 1, tool_key="x", tool_ok=False),
             StepRecord(Action.TOOL, True, 1, tool_key="x", tool_ok=False),
             StepRecord(Action.SUBMIT, True, 1)]
    p = episode_patterns(trace, submitted_version=1, submitted_checked=True)
    assert p == {"check_before_submit": 1.0, "evidence_before_draft": 0.0, "revise_after_failure": 0.0,
                 "early_submit": 1.0, "recover_after_tool_error": 0.0, "no_redundant_check": 0.0}
    assert hms(p) == pytest.approx(1 / 6)


def test_bm25_ranks_the_matching_document_first():
    idx = BM25Index([Document("a", "Cats", "cats purr"), Document("b", "Sorting lists", "sorted returns a new list")])
    assert idx.ranking("how to sort a list with sorted")[0][0] == 1


def test_next_values_equals_its_definition():
    import random

    from harness_gym.core.domain import _next_values

    rng = random.Random(0)
    for _ in range(3000):
        values = [rng.choice(["a", "b", "c", 1, 2, 2.0, True, None, "d"]) for _ in range(rng.randint(0, 8))]
        value = rng.choice(["a", "b", 1, 2, True, "z", None])
        count = rng.randint(0, 4)
        at = values.index(value) if value in values else -1
        assert _next_values(values, value, count) == [v for v in values[at + 1:] + values[:max(at, 0)] if v != value][:count]
