"""The multi-tool domain: tools and their bills, plan execution, checker (its counts and bills), grader, candidate
bank, the task mix, the harness signals, data loading and the env."""

from __future__ import annotations

import collections
import dataclasses
import json

import pytest

import harness_gym  # noqa: F401  (registers the env ids)
from harness_gym.core.paths import data_path
from harness_gym.core.types import SPLITS, Context, ToolCall, ToolResult
from harness_gym.domains.generation import mix_counts
from harness_gym.domains.multitool.checker import run_plan
from harness_gym.domains.multitool.domain import MultiToolDomain, load_multitool_domain
from harness_gym.domains.multitool.generate import LENGTH_WEIGHTS, generate
from harness_gym.domains.multitool.tools import TOOL_SPECS, ToolError, Value, calculate, convert, parse_unit
from tests.domain_cases import assert_env_runs_episodes, draft
from tests.shared_data import SHARED_DATA, shared_data_mark
from tests.taskfile_cases import assert_rejects_corrupt_line

FILES = ("world.json", "corpus.jsonl", "tasks.jsonl")


@pytest.fixture(scope="module")
def domain() -> MultiToolDomain:
    return load_multitool_domain()




def candidate(domain: MultiToolDomain, kind: str, family: str | None = None):
    for task in domain.all_tasks():
        if family is not None and task.family != family:
            continue
        for cand in task.candidates:
            if cand.kind == kind:
                return task, cand
    raise AssertionError(f"no candidate of kind {kind}")


def test_splits_counts_and_unseen_ood_templates(domain):
    counts = domain.counts()
    assert sum(counts.values()) >= 150 and all(counts[s] > 0 for s in SPLITS)
    in_dist = {t.family for s in ("train", "val", "test") for t in domain.tasks(s)}
    ood = {t.family for t in domain.tasks("ood")}
    assert ood and not ood & in_dist


def test_generator_reproduces_the_shipped_data(tmp_path):
    generate(tmp_path)
    for name in FILES:
        assert (tmp_path / name).read_bytes() == data_path("multitool", name).read_bytes(), name


def test_reference_passes_checker_and_grades_one(domain):
    for task in domain.all_tasks():
        ref = draft(task.reference.content)
        assert domain.grade(task, ref, None) == 1.0, task.task_id
        result = domain.check(task, ref, None)
        assert result.passed, (task.task_id, result.feedback)
        assert 1 <= len(json.loads(ref.content)["plan"]) <= 5


def test_correct_flags_agree_with_grader_and_support_ceiling_exists(domain):
    passes_but_wrong, fails = 0, 0
    for task in domain.all_tasks():
        for cand in task.candidates:
            quality = domain.grade(task, draft(cand.content), None)
            assert (quality >= domain.success_threshold) == cand.correct, (task.task_id, cand.kind)
            if not cand.correct:
                if domain.check(task, draft(cand.content), None).passed:
                    passes_but_wrong += 1
                else:
                    fails += 1
    assert passes_but_wrong > 0 and fails > passes_but_wrong


def test_checker_names_the_failing_step_or_unit(domain):
    for kind, needle in (("wrong_from_unit", "from_unit"), ("bad_unit_name", "unknown unit"),
                         ("answer_slip", "does not match"), ("wrong_unit", "asks for")):
        task, cand = candidate(domain, kind, "shipment_weight")
        result = domain.check(task, draft(cand.content), None)
        assert not result.passed and needle in result.feedback and result.specificity >= 0.8, (kind, result)
    task, cand = candidate(domain, "wrong_from_unit", "shipment_weight")
    assert "step" in domain.check(task, draft(cand.content), None).feedback
    task, cand = candidate(domain, "wrong_from_unit", "unit_conversion")  # a literal in a confusable unit
    assert domain.check(task, draft(cand.content), None).passed and domain.grade(task, draft(cand.content), None) == 0
    task, cand = candidate(domain, "wrong_rate_date")
    result = domain.check(task, draft(cand.content), None)
    assert result.passed and domain.grade(task, draft(cand.content), None) == 0.0
    assert domain.check(task, draft("not json"), None).specificity < 0.5
    assert domain.grade(task, draft("not json"), None) == 0.0


def test_calculator_unit_algebra_and_safety():
    gbp, rate = Value(250.0, parse_unit("GBP")), Value(1.17, parse_unit("EUR/GBP"))
    assert calculate("$1 * $2", [gbp, rate]) == Value(pytest.approx(292.5), parse_unit("EUR"))
    nights = Value(7.0, parse_unit("day"))
    assert calculate("($1 + 1[day]) * 3.5[EUR/day]", [nights]).unit == parse_unit("EUR")
    assert calculate("$2 / $1", [gbp, rate]).unit == parse_unit("EUR/GBP^2")
    for bad in ("__import__('os').system('true')", "(lambda: 1)()", "().__class__", "2 ** 99", "1 / 0",
                "$1 + 1", "$3", "open('x')", "x"):
        with pytest.raises(ToolError):
            calculate(bad, [nights])
    assert convert(100, "C", "F") == pytest.approx(212)
    with pytest.raises(ToolError, match="cannot convert mass"):
        convert(1, "kg", "km")


def test_tools_validate_arguments_and_report_real_errors(domain):
    task = domain.tasks("train")[0]
    ctx = Context(task=task)
    for other in domain.all_tasks():
        for call in other.tool_calls:
            assert domain.run_tool(other, call, ctx, None).ok, call
    bad = [
        ToolCall("convert_units", {"value": 3, "from_unit": "kg"}),
        ToolCall("convert_units", {"value": "3?", "from_unit": "kg", "to_unit": "lb"}),
        ToolCall("convert_units", {"value": 3, "from_unit": "kgs", "to_unit": "lb"}),
        ToolCall("convert_units", {"value": 3, "from_unit": "kg", "to_unit": "km"}),
        ToolCall("date_add", {"date": "2024-02-30", "days": 3}),
        ToolCall("date_add", {"date": ["2024-02-03"], "days": 3}),
        ToolCall("date_diff", {"start": "2024-13-01", "end": "2024-01-05"}),
        ToolCall("exchange_rate", {"base": "USD", "quote": "EUR", "date": "2023-12-31"}),
        ToolCall("exchange_rate", {"base": "USD", "quote": "XYZ", "date": "2024-03-01"}),
        ToolCall("exchange_rate", {"base": "usd", "quote": "EUR", "date": "2024-03-01"}),
        ToolCall("lookup", {"table": "orderz", "key": "O-1001", "field": "amount"}),
        ToolCall("lookup", {"table": "orders", "key": "O-9999", "field": "amount"}),
        ToolCall("lookup", {"table": "orders", "key": "O-1001", "field": "price"}),
        ToolCall("calculate", {"expression": "$1 * 2"}),
        ToolCall("calculates", {"expression": "1 + 1"}),
    ]
    for call in bad:
        res = domain.run_tool(task, call, ctx, None)
        assert not res.ok and res.error, call
        schema_error = "invalid" in res.error or "unknown tool" in res.error
        assert domain.knowledge_signal(task, ctx, call) == (-1.0 if schema_error else 1.0)
    rate = ToolCall("exchange_rate", {"base": "GBP", "quote": "EUR", "date": "2024-03-01"})
    ok = domain.run_tool(task, rate, ctx, None)
    assert ok.ok and ok.output.endswith("EUR/GBP")


def test_plan_execution_checks_referenced_units(domain):
    world = domain.world
    plan = [{"tool": "lookup", "args": {"table": "contracts", "key": "C-201", "field": "term"}},
            {"tool": "date_add", "args": {"date": "2024-01-01", "days": "$1"}}]
    term_unit = world.lookup("contracts", "C-201", "term").unit
    run = run_plan(world, TOOL_SPECS, plan)
    assert run.ok == (term_unit == parse_unit("day"))
    ahead = run_plan(world, TOOL_SPECS, [{"tool": "calculate", "args": {"expression": "$2 + 1"}}])
    assert ahead.failed_step == 1 and "earlier step" in ahead.error
    typed = run_plan(world, TOOL_SPECS, [{"tool": "lookup", "args": {"table": "orders", "key": "O-1001",
                                                                      "field": "order_date"}},
                                         {"tool": "date_add", "args": {"date": "2024-01-01", "days": "$1"}}])
    assert typed.failed_step == 2 and "invalid arguments" in typed.error


def test_knowledge_signal_on_drafts(domain):
    task, cand = candidate(domain, "bad_unit_name")
    ctx = Context(task=task, draft=draft(task.reference.content))
    assert domain.knowledge_signal(task, ctx) == 1.0
    ctx.draft = draft(cand.content)
    assert domain.knowledge_signal(task, ctx) == -1.0


@pytest.mark.parametrize("file,change,field", [
    ("tasks.jsonl", None, None),
    ("tasks.jsonl", lambda r: r.pop("prompt"), "prompt"),
    ("tasks.jsonl", lambda r: r.update(difficulty="hard"), "difficulty"),
    ("tasks.jsonl", lambda r: r["candidates"][1].pop("correct"), "candidates[1].correct"),
    ("tasks.jsonl", lambda r: r["payload"].update(answer_unit=3), "answer_unit"),
    ("tasks.jsonl", lambda r: r["payload"]["reference_plan"][0]["args"].update(table="nope"), "payload.reference_plan"),
    ("tasks.jsonl", lambda r: r["payload"].update(answer_unit="furlong"), "payload.answer_unit"),
    ("corpus.jsonl", lambda r: r.pop("text"), "text"),
])
def test_malformed_files_name_file_line_and_field(tmp_path, file, change, field):
    assert_rejects_corrupt_line(MultiToolDomain, "multitool", FILES, tmp_path, file, 3, change, field)


def test_registered_env_runs_episodes():
    infos = assert_env_runs_episodes("HarnessMultiTool-v1", "test", (0, 1, 1, 2, 2, 3, 4, 6))
    assert all(info["quality"] in (0.0, 1.0) for info in infos)


# ----- the task mix ----------------------------------------------------------------------------------
def _reference_plans() -> dict[str, list]:
    lines = data_path("multitool", "tasks.jsonl").read_text().splitlines()
    return {rec["task_id"]: rec["payload"]["reference_plan"] for rec in map(json.loads, lines)}


def test_mix_has_the_documented_chain_lengths_in_every_split(domain):
    """Every split holds chains of 1-5 calls in the proportions of LENGTH_WEIGHTS, and the length the prompt's
    request type shows is the length of the task's reference plan."""
    plans = _reference_plans()
    for split in SPLITS:
        tasks = domain.tasks(split)
        lengths = collections.Counter()
        for task in tasks:
            shown = domain.request(task).type.steps
            assert shown == len(plans[task.task_id]), task.task_id
            lengths[str(shown)] += 1
        assert dict(lengths) == mix_counts(len(tasks), LENGTH_WEIGHTS), split
    in_dist = {domain.request(t).type.family for s in ("train", "val", "test") for t in domain.tasks(s)}
    assert {domain.request(t).type.family for t in domain.tasks("ood")}.isdisjoint(in_dist)


@shared_data_mark("tau2-retail", "tasks.json")
def test_length_weights_are_tau2_retail_gold_action_counts():
    """The documented weights are the numbers of τ²-bench retail tasks whose gold action sequence has 1..5 calls."""
    tasks = json.loads((SHARED_DATA / "tau2-retail" / "tasks.json").read_text())
    counts = collections.Counter(len((t.get("evaluation_criteria") or {}).get("actions") or []) for t in tasks)
    assert {str(n): counts[n] for n in range(1, 6)} == LENGTH_WEIGHTS
    assert len(tasks) == 114 and counts[0] == 2 and sum(v for k, v in counts.items() if k > 5) == 42


def test_longer_chains_need_more_evidence_and_are_harder(domain):
    by_length: dict[int, list] = collections.defaultdict(list)
    for task in domain.tasks("train") + domain.tasks("val") + domain.tasks("test"):
        by_length[domain.request(task).type.steps].append(task)
    means = [sum(t.difficulty for t in by_length[n]) / len(by_length[n]) for n in range(1, 6)]
    assert means == sorted(means)
    assert all(len(t.tool_calls) == 1 for t in by_length[1])
    assert all(len(t.tool_calls) == 2 for n in (2, 3, 4, 5) for t in by_length[n])
    assert any(not t.required_observations for t in by_length[1])


# ----- checker counts and bills ------------------------------------------------------------------------
def test_n_visible_checks_is_what_the_checker_counts_on_a_plan_of_the_prompted_length(domain):
    for task in domain.all_tasks():
        result = domain.check(task, draft(task.reference.content), None)
        assert result.n_passed == result.n_total == domain.n_visible_checks(task), task.task_id
        for cand in task.candidates:
            plan = json.loads(cand.content)["plan"]
            assert domain.check(task, draft(cand.content), None).n_total == len(plan) + 1
    task = domain.tasks("test")[0]
    assert domain.check(task, draft("not json"), None).n_total == 1


def test_n_passed_counts_the_steps_before_the_failing_one(domain):
    task = next(t for t in domain.all_tasks() if domain.request(t).type.family == "shipment_weight")
    ref = json.loads(task.reference.content)
    for broken in range(1, 6):
        plan = json.loads(json.dumps(ref["plan"]))
        plan[broken - 1]["args"]["bogus"] = 1  # the schema rejects it: that step and every later one fail
        result = domain.check(task, draft(json.dumps({"plan": plan, "answer": ref["answer"]})), None)
        assert (result.passed, result.n_passed, result.n_total) == (False, broken - 1, 6)
    slip = domain.check(task, draft(json.dumps({"plan": ref["plan"], "answer": ref["answer"] + 1000})), None)
    assert (slip.passed, slip.n_passed, slip.n_total) == (False, 5, 6)


def test_the_checker_bills_the_calls_it_sends_again(domain):
    task = next(t for t in domain.all_tasks() if domain.request(t).type.family == "order_fx")
    ref = json.loads(task.reference.content)
    result = domain.check(task, draft(task.reference.content), None)
    assert result.billed == {"api_call:internal": 2, "api_call:fx_rates": 1, "api_call:free": 1}
    plan = json.loads(json.dumps(ref["plan"]))
    plan[2]["args"]["base"] = "usd"  # fails the schema: never sent, and the calculator step never runs
    cut = domain.check(task, draft(json.dumps({"plan": plan, "answer": ref["answer"]})), None)
    assert cut.billed == {"api_call:internal": 2} and cut.n_passed == 2
    assert domain.check(task, draft("not json"), None).billed is None


def test_every_tool_declares_what_a_call_costs(domain):
    bills = {name: dict(spec.bills) for name, spec in domain.tools.items()}
    assert bills == {"calculate": {"api_call:free": 1}, "convert_units": {"api_call:free": 1},
                     "date_add": {"api_call:free": 1}, "date_diff": {"api_call:free": 1},
                     "exchange_rate": {"api_call:fx_rates": 1}, "lookup": {"api_call:internal": 1}}
    task = domain.tasks("train")[0]
    result = domain.run_tool(task, task.tool_calls[0], Context(task=task), None)
    assert result.ok and result.billed is None  # the declared bill applies
    for task in domain.all_tasks():
        for i, text in enumerate(task.observations):
            assert domain.observe_bill(task, i) == ({"api_call:internal": 1} if text.startswith("Table ") else {})


# ----- harness signals ----------------------------------------------------------------------------------
def test_hooks_read_the_visible_prompt_only(domain):
    for task in domain.all_tasks():
        keys = domain.task_keys(task)
        assert keys and all(k in task.prompt.lower() for k in keys), task.task_id
        scrubbed = dataclasses.replace(task, task_id=task.task_id + "-scrubbed", candidates=(),
                                       relevant_docs=frozenset(), tool_calls=(), required_observations=frozenset(),
                                       difficulty=0.0, payload={})
        assert domain.task_keys(scrubbed) == keys
        assert domain.n_visible_checks(scrubbed) == domain.n_visible_checks(task)
        assert domain.input_size(task) == len(task.prompt)


def test_tool_answers_tells_the_asked_record_from_a_near_miss(domain):
    task = next(t for t in domain.tasks("test") if domain.request(t).type.family == "order_fx")
    ctx = Context(task=task)
    for call in task.tool_calls:
        assert domain.tool_answers(task, call, domain.run_tool(task, call, ctx, None)), call
    near = [c for c in domain.wrong_tool_calls(task) if c.name == "lookup" and c.args["key"] != task.tool_calls[0].args["key"]]
    assert near
    for call in near:
        result = domain.run_tool(task, call, ctx, None)
        assert result.ok and not domain.tool_answers(task, call, result), call
    assert not domain.tool_answers(task, task.tool_calls[0], ToolResult(ok=False, output="", error="down"))
