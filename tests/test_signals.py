"""The harness signals of the observation read only what a harness holds: recomputed on a task whose hidden fields
are blanked (:func:`~harness_gym.core.domain.visible_task`) every observation and action mask of a played episode
is unchanged; and each signal moves when its source does."""

from __future__ import annotations

import dataclasses
import math

import gymnasium as gym
import numpy as np
import pytest

import harness_gym
from examples.toy_domain.env import HarnessToyEnv
from harness_gym.core.actions import Action
from harness_gym.core.domain import HIDDEN_TASK_FIELDS, visible_task
from harness_gym.core.state import INPUT_SIZE_SCALE, HarnessState, KeyCoverage, TaskSignals
from harness_gym.core.types import CheckResult, Context, ToolCall, ToolResult

A = Action
EPISODE = (A.OBSERVE, A.RETRIEVE, A.RETRIEVE, A.TOOL, A.DRAFT, A.TOOL, A.CHECK, A.REVISE, A.CHECK, A.OBSERVE,
           A.RETRIEVE, A.SUBMIT)
"""Every action, the ones that reveal text several times; inapplicable ones are played as the no-ops they are."""


def recompute(henv, task) -> tuple[np.ndarray, np.ndarray]:
    """The observation and action mask of the env's current step, recomputed from scratch on ``task``: the
    task's signals from the domain's hooks, the key coverage over the gathered texts, whether the last tool
    result answers, then the encoder and the mask."""
    domain, st = henv.domain, henv._state
    ctx = dataclasses.replace(henv.context, task=task)
    signals = TaskSignals(tuple(domain.task_keys(task)), int(domain.n_visible_checks(task)),
                          int(domain.input_size(task)))
    coverage = KeyCoverage(signals.keys)
    for text in st.gathered:
        coverage.add(text)
    answers = st.last_tool_answers
    if ctx.tool_history:
        call, result = ctx.tool_history[-1]
        answers = 1 if domain.tool_answers(task, call, result) else -1
    again = dataclasses.replace(st, ctx=ctx, signals=signals, coverage=coverage, last_tool_answers=answers)
    return again.encode(), henv._applicable(ctx, again)


def test_visible_task_blanks_every_hidden_field_and_the_hidden_payload():
    env = gym.make("HarnessCode-v1")
    task = env.unwrapped.domain.tasks("test")[0]
    blank = visible_task(task, frozenset())
    assert blank.prompt == task.prompt and blank.observations == task.observations
    assert all(not getattr(blank, f) for f in HIDDEN_TASK_FIELDS if f != "difficulty") and math.isnan(blank.difficulty)
    with_payload = dataclasses.replace(task, payload={"hidden_tests": [1], "spec": "x"})
    assert visible_task(with_payload, frozenset({"hidden_tests"})).payload == {"spec": "x"}
    assert visible_task(with_payload, frozenset({"*"})).payload is None
    with pytest.raises(TypeError, match="hidden payload keys"):
        visible_task(dataclasses.replace(task, payload="gold"), frozenset({"answer"}))
    env.close()


@pytest.mark.parametrize("env_id", harness_gym.ENV_IDS)
def test_observations_and_masks_do_not_change_when_hidden_fields_are_blanked(env_id):
    env = gym.make(env_id, split="test")
    henv = env.unwrapped
    checked = 0
    for seed in range(3):
        obs, _ = env.reset(seed=seed)
        blank = visible_task(henv.task, henv.domain.hidden_payload_keys)
        again, mask = recompute(henv, blank)
        assert np.array_equal(obs, again) and np.array_equal(henv.action_masks(), mask)
        for action in EPISODE:
            obs, _, terminated, _, _ = env.step(int(action))
            again, mask = recompute(henv, blank)
            names = [n for n, a, b in zip(henv.feature_names, obs, again) if a != b]
            assert not names, f"{env_id} {henv.task.task_id} after {action.name}: {names} read a hidden field"
            if terminated:
                break
            assert np.array_equal(henv.action_masks(), mask), f"{env_id}: the mask read a hidden field"
            checked += 1
    assert checked >= 20
    env.close()


# ----- each signal moves with its source ------------------------------------------------------------------
def feature(env, obs: np.ndarray, name: str) -> float:
    return float(obs[env.unwrapped.feature_names.index(name)])


def test_key_coverage_rises_when_a_retrieved_document_names_a_key():
    env = gym.make("HarnessResearchQA-v1", split="test")
    henv = env.unwrapped
    for seed in range(20):
        obs, _ = env.reset(seed=seed)
        keys = henv.domain.task_keys(henv.task)
        before = feature(env, obs, "key_coverage")
        obs = env.step(int(A.RETRIEVE))[0]
        doc = henv.context.documents[-1]
        named = [k for k in keys if k in f"{doc.title}\n{doc.text}".lower()]
        if named:
            assert before == 0.0 and feature(env, obs, "key_coverage") == pytest.approx(len(named) / len(keys))
            break
    else:
        pytest.fail("no ResearchQA test task whose first document names some of its keys")
    env.close()


def test_key_coverage_counts_each_key_once_and_is_one_without_keys():
    coverage = KeyCoverage(("ada lovelace", "1843"))
    assert coverage.share == 0.0
    coverage.add("Notes by Ada Lovelace")
    coverage.add("ADA LOVELACE again")
    assert coverage.share == 0.5
    coverage.add("published in 1843")
    assert coverage.share == 1.0 and KeyCoverage(()).share == 1.0


def test_retrieval_scores_are_zero_before_and_the_ranking_after():
    env = gym.make("HarnessPlan-v1")
    obs, _ = env.reset(seed=0)
    assert feature(env, obs, "retrieval_top_score") == 0.0 and feature(env, obs, "retrieval_gap") == 0.0
    henv = env.unwrapped
    ranking = henv.domain.index.ranking(henv.domain.query(henv.task))
    best, second, third = (score for _, score in ranking[:3])
    obs = env.step(int(A.RETRIEVE))[0]
    assert feature(env, obs, "retrieval_top_score") == pytest.approx(1.0)
    assert feature(env, obs, "retrieval_gap") == pytest.approx((best - second) / best, abs=1e-6)
    obs = env.step(int(A.RETRIEVE))[0]
    assert feature(env, obs, "retrieval_top_score") == pytest.approx(second / best, abs=1e-6)
    assert feature(env, obs, "retrieval_gap") == pytest.approx((second - third) / best, abs=1e-6)
    env.close()


def test_last_tool_answers_follows_whether_the_output_names_what_was_asked():
    env = HarnessToyEnv(budget_units=None)
    obs, _ = env.reset(seed=0, options={"task_id": "toy-0"})
    assert feature(env, obs, "last_tool_answers") == 0.0
    obs = env.step(int(A.TOOL))[0]
    call, result = env.context.tool_history[-1]
    assert feature(env, obs, "last_tool_answers") == (1.0 if env.domain.tool_answers(env.task, call, result) else -1.0)
    task = env.task  # "add 3 and 1": its keys are the digits it names
    assert env.domain.tool_answers(task, ToolCall("add", {"a": 3, "b": 1}), ToolResult(True, "4 (3 + 1)"))
    assert not env.domain.tool_answers(task, ToolCall("add", {"a": 7, "b": 8}), ToolResult(True, "15"))
    assert not env.domain.tool_answers(task, ToolCall("add", {"a": 3}), ToolResult(False, "", "missing b"))
    env.close()


def state_with(check: CheckResult | None) -> HarnessState:
    env = HarnessToyEnv()
    ctx = Context(task=env.domain.task("toy-0"), last_check=check)
    return HarnessState(ctx=ctx, budget=30, budget_left=30)


def test_check_pass_share_is_the_share_passed_or_the_verdict():
    assert state_with(None).check_pass_share == 0.0
    assert state_with(CheckResult(False, "2 of 4 failed", n_passed=2, n_total=4)).check_pass_share == 0.5
    assert state_with(CheckResult(True, "ok")).check_pass_share == 1.0
    assert state_with(CheckResult(False, "no")).check_pass_share == 0.0
    assert state_with(CheckResult(True, "nothing to run", n_passed=0, n_total=0)).check_pass_share == 1.0


def test_task_level_signals_come_from_the_domain_hooks(monkeypatch):
    env = HarnessToyEnv()
    names = env.feature_names
    obs, _ = env.reset(seed=0, options={"task_id": "toy-0"})
    assert obs[names.index("n_visible_checks")] == 0.0
    assert obs[names.index("input_size")] == pytest.approx(math.log1p(len("add 3 and 1")) / math.log1p(INPUT_SIZE_SCALE))
    assert obs[names.index("n_task_keys")] == pytest.approx(0.2)  # "3" and "1"
    monkeypatch.setattr(env.domain, "n_visible_checks", lambda task: 3)
    monkeypatch.setattr(env.domain, "input_size", lambda task: 10 * INPUT_SIZE_SCALE)
    monkeypatch.setattr(env.domain, "task_keys", lambda task: tuple(f"k{i}" for i in range(14)))
    obs, _ = env.reset(seed=0, options={"task_id": "toy-1"})  # signals are read once per task, at its first reset
    assert obs[names.index("n_visible_checks")] == pytest.approx(0.3)
    assert obs[names.index("input_size")] == 1.0 and obs[names.index("n_task_keys")] == 1.0
    assert obs[names.index("key_coverage")] == 0.0
    env.close()


def test_cost_features_track_the_units_spent_against_the_budget():
    env = gym.make("HarnessPlan-v1", budget_units=20.0)
    obs, _ = env.reset(seed=0)
    assert feature(env, obs, "cost_spent") == 0.0 and feature(env, obs, "budget_units_left") == 1.0
    spent = 0.0
    for action in (A.RETRIEVE, A.DRAFT):
        obs, _, _, _, info = env.step(int(action))
        spent += info["cost"]["units"]
        assert feature(env, obs, "cost_spent") == pytest.approx(spent / 20.0, abs=1e-6)
        assert feature(env, obs, "budget_units_left") == pytest.approx(1 - spent / 20.0, abs=1e-6)
    unbounded = gym.make("HarnessPlan-v1", budget_units=None)
    obs, _ = unbounded.reset(seed=0)
    obs = unbounded.step(int(A.DRAFT))[0]
    reference = unbounded.unwrapped.reference_budget()
    assert feature(unbounded, obs, "budget_units_left") == 1.0
    assert feature(unbounded, obs, "cost_spent") == pytest.approx(unbounded.unwrapped._state.spent_units / reference,
                                                                  abs=1e-6)
    env.close()
    unbounded.close()
