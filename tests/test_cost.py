"""The cost ledger, the cost-aware return, the thorough script, the frontier command and the worker's signals."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

import harness_gym
from examples.toy_domain.env import HarnessToyEnv as make_toy_env
from harness_gym.core.actions import Action
from harness_gym.core.cost import COST_KEYS, estimate_tokens
from harness_gym.core.prices import PriceProfileError
from harness_gym.core.tool_calls import validate_call
from harness_gym.running.rollout import play_episode
from harness_gym.workers.prompting import PromptSet, render_context
from harness_gym_baselines.cli import main
from harness_gym_baselines.policies.registry import make_policy


@pytest.fixture(scope="module")
def thorough_episodes():
    """One thorough and one forced-check episode per env (cost weight 0.05, no cost budget), each with the
    env's bill of the whole episode and its price table."""
    out = {}
    for env_id in harness_gym.ENV_IDS:
        env = gym.make(env_id, cost_weight=0.05, budget_units=None)
        out[env_id] = []
        for name in ("thorough", "forced-check"):
            ep = play_episode(env, make_policy(name), seed=3, split="test")
            out[env_id].append((ep, dict(env.unwrapped.episode_bill), env.unwrapped.prices))
        env.close()
    return out


@pytest.mark.parametrize("env_id", harness_gym.ENV_IDS)
def test_every_step_reports_cost_and_the_return_is_q_minus_weighted_cost(thorough_episodes, env_id):
    for ep, bill, prices in thorough_episodes[env_id]:
        assert all(tuple(info["cost"]) == COST_KEYS for info in ep.infos)
        assert ep.infos[0]["cost"]["units"] == 0.0  # the reset spends nothing
        steps = [info["cost"] for info in ep.infos[1:]]
        total = sum(c["units"] for c in steps)
        # the step costs add up to the episode's bill at the same prices, and the counts to its quantities
        assert total == pytest.approx(prices.units(bill))
        assert bill["prompt_token"] == sum(c["prompt_tokens"] for c in steps)
        assert bill.get("sandbox_request", 0) == sum(c["sandbox_jobs"] for c in steps)
        assert bill.get("index_query", 0) == sum(c["index_queries"] for c in steps) == ep.actions.count(
            Action.RETRIEVE) - sum(i["invalid_action"] for a, i in zip(ep.actions, ep.infos[1:])
                                  if a == Action.RETRIEVE)
        assert total > 0 and sum(c["llm_calls"] for c in steps) >= 2
        assert sum(ep.rewards) == pytest.approx(ep.final_info["quality"] - 0.05 * total)
        for action, cost in zip(ep.actions, steps):
            if action in (Action.OBSERVE, Action.RETRIEVE, Action.SUBMIT):
                assert cost["llm_calls"] == 0 and cost["prompt_tokens"] == 0
            if action == Action.RETRIEVE:  # an embedded query and an index query at the default profile
                assert cost["units"] > 0 and cost["embedding_tokens"] > 0


def test_prompt_tokens_at_a_draft_grow_with_the_context_gathered_before_it():
    env = gym.make("HarnessResearchQA-v1")
    tokens = []
    for prefix in ([], [Action.OBSERVE], [Action.OBSERVE, Action.RETRIEVE, Action.RETRIEVE],
                   [Action.OBSERVE, Action.RETRIEVE, Action.RETRIEVE, Action.TOOL, Action.TOOL]):
        env.reset(seed=0, options={"task_id": "rq-q0000"})
        for a in prefix:
            env.step(int(a))
        ctx = env.unwrapped.context
        before = render_context(ctx)
        info = env.step(int(Action.DRAFT))[4]
        draft_call = info["cost"]["prompt_tokens"]
        tokens.append(draft_call)
        # the draft call reads the rendered context inside the domain's draft prompt (the confidence call
        # then reads it again with the draft): at least the context's own estimate
        assert draft_call >= estimate_tokens(before)
    assert tokens == sorted(tokens) and len(set(tokens)) == len(tokens), tokens
    env.close()


def test_simulated_prompt_count_matches_the_live_prompt_text():
    """The simulated worker meters exactly the messages a live worker would send (estimated tokens)."""
    env = gym.make("HarnessMultiTool-v1")
    env.reset(seed=1)
    env.step(int(Action.OBSERVE))
    env.step(int(Action.RETRIEVE))
    henv = env.unwrapped
    ctx = henv.context
    worker = henv.worker
    worker.pop_usage()
    worker.propose_tool_call(ctx)
    usage = worker.pop_usage()
    from harness_gym.workers.prompting import render_tools

    messages = PromptSet.for_domain("multitool").messages("tool", context=render_context(ctx),
                                                         tools=render_tools(henv.domain.tools), draft="", feedback="")
    assert usage.llm_calls == 1
    assert usage.prompt_tokens == estimate_tokens("".join(m["content"] for m in messages))
    env.close()


def test_grader_jobs_are_not_metered_but_check_jobs_are():
    env = gym.make("HarnessCode-v1")
    env.reset(seed=0)
    env.step(int(Action.DRAFT))
    check = env.step(int(Action.CHECK))[4]["cost"]
    submit = env.step(int(Action.SUBMIT))[4]["cost"]
    assert check["sandbox_jobs"] >= 1 and check["tool_seconds"] == pytest.approx(check["sandbox_jobs"] * 0.1)
    assert submit["sandbox_jobs"] == 0 and submit["units"] == 0.0
    env.close()


def test_prices_are_validated_and_overridable():
    with pytest.raises(PriceProfileError, match="unknown item 'prompt_tokens'.*did you mean 'prompt_token'"):
        make_toy_env(prices={"prompt_tokens": 1e-6})
    with pytest.raises(PriceProfileError, match="completion_token.*finite number >= 0"):
        make_toy_env(prices={"completion_token": -1.0})
    with pytest.raises(ValueError, match="cost_weight"):
        make_toy_env(cost_weight=-0.1)
    free_input = make_toy_env(prices={"prompt_token": 0.0}, budget_units=None)
    free_input.reset(seed=0, options={"task_id": "toy-0"})
    cost = free_input.step(int(Action.DRAFT))[4]["cost"]
    assert cost["prompt_tokens"] > 0
    assert cost["units"] == pytest.approx(cost["completion_tokens"] * 0.60 / 1e6 / 1e-4)


def test_thorough_gathers_then_checks_every_submitted_draft():
    env = gym.make("HarnessPlan-v1", budget_units=None)  # the script's shape, not where a cost budget cuts it
    policy = make_policy("thorough")
    for i in range(6):
        ep = play_episode(env, policy, seed=i, split="test")
        first_draft = ep.actions.index(Action.DRAFT)
        gathered = ep.actions[:first_draft]
        assert gathered.count(Action.OBSERVE) >= 1 and gathered.count(Action.RETRIEVE) == 4
        assert ep.actions[-1] == Action.SUBMIT and ep.actions[-2] == Action.CHECK
        assert ep.final_info["patterns"]["check_before_submit"] == 1.0
        assert not ep.final_info["forced_submit"]
    env.close()


def test_frontier_command_writes_a_png_and_consistent_returns(tmp_path, capsys):
    out = tmp_path / "frontier"
    assert main(["frontier", "HarnessPlan-v1", "--episodes", "4", "--cost-weights", "0,0.1", "--out", str(out),
                 "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["policy"] for r in rows] == ["static", "forced-check", "thorough", "random", "oracle"]
    for r in rows:
        assert r["return_at"]["0.0"] == pytest.approx(r["quality_mean"])
        assert r["return_at"]["0.1"] == pytest.approx(r["quality_mean"] - 0.1 * r["cost_mean"])
    png = (out / "frontier.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    assert main(["frontier", "HarnessPlan-v1", "--cost-weights", "0,x", "--out", str(out)]) == 2


def test_eval_json_reports_cost_and_return(capsys):
    assert main(["eval", "HarnessPlan-v1", "--policy", "static", "--episodes", "3", "--json",
                 "--env-kwarg", "cost_weight=0.1"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["cost_mean"] > 0 and result["cost_ci95"][0] <= result["cost_mean"] <= result["cost_ci95"][1]
    assert result["return_mean"] == pytest.approx(result["quality_mean"] - 0.1 * result["cost_mean"])


# ----- the worker's signals -------------------------------------------------------------------------------
def test_repeated_self_checks_of_one_draft_mostly_agree():
    env = gym.make("HarnessResearchQA-v1")
    agree = []
    for i in range(40):
        env.reset(seed=i)
        env.step(int(Action.DRAFT))
        verdicts = [env.step(int(Action.CHECK))[0][env.unwrapped.feature_names.index("last_check_result")]
                    for _ in range(5)]
        agree += [v == verdicts[0] for v in verdicts[1:]]
    assert np.mean(agree) > 0.8
    env.close()


def test_tool_mask_is_the_same_for_tasks_with_and_without_evidence_calls():
    for env_id in ("HarnessData-v1", "HarnessTauRetail-v1"):
        env = gym.make(env_id)
        tasks = env.unwrapped.domain.all_tasks()
        with_calls = next(t for t in tasks if t.tool_calls)
        without = next(t for t in tasks if not t.tool_calls)
        masks = []
        for task in (with_calls, without):
            env.reset(seed=0, options={"task_id": task.task_id})
            masks.append(env.unwrapped.action_masks().copy())
        assert np.array_equal(masks[0], masks[1]) and masks[0][Action.TOOL]
        # TOOL on the task that needs no tool runs a well-formed call whose result is useless evidence
        env.reset(seed=0, options={"task_id": without.task_id})
        env.step(int(Action.TOOL))
        call, _ = env.unwrapped.context.tool_history[-1]
        assert call.name and not validate_call(env.unwrapped.domain.tools, call)
        assert env.unwrapped.context.evidence_coverage() <= 1.0
        env.close()


@pytest.mark.parametrize("env_id", ["HarnessResearchQA-v1", "HarnessMultiTool-v1", "HarnessTauRetail-v1",
                                    "HarnessData-v1", "HarnessPlan-v1"])
def test_wrong_tool_calls_are_well_formed_real_and_not_evidence(env_id):
    env = gym.make(env_id)
    domain = env.unwrapped.domain
    task = next(t for t in domain.tasks("test") if t.tool_calls)
    wrong = domain.wrong_tool_calls(task)
    gold = {c.key() for c in task.tool_calls}
    assert wrong and all(not validate_call(domain.tools, c) and c.key() not in gold for c in wrong)
    env.reset(seed=0, options={"task_id": task.task_id})
    henv = env.unwrapped
    ctx = henv.context
    ran_ok = 0
    for call in wrong:
        result = domain.run_tool(task, call, ctx, henv._recorder, resource=henv._resource)
        ctx.tool_history.append((call, result))
        ran_ok += result.ok
    assert ran_ok >= 1  # real results (another id, unit, column or entity), not errors
    assert ctx.good_tool_results == 0
    env.close()


def test_a_flaky_checker_rejects_a_passing_draft_at_its_rate(monkeypatch):
    env = make_toy_env(budget=30)
    monkeypatch.setattr(env.domain, "check_false_alarm_rate", 1.0)
    for seed in range(50):
        env.reset(seed=seed, options={"task_id": "toy-0"})
        env.step(int(Action.DRAFT))
        if env.domain.check(env.task, env.context.draft, None).passed:
            break
    else:
        pytest.fail("no draft passed the toy checker in 50 seeds")
    env.step(int(Action.CHECK))
    assert not env.context.last_check.passed and env.context.last_check.specificity == 0.0
