"""The multi-tool domain: tools, plan execution, checker, grader, candidate bank, data loading and the env."""

from __future__ import annotations

import json

import pytest

import harness_gym  # noqa: F401  (registers the env ids)
from harness_gym.core.types import SPLITS, Context, ToolCall
from harness_gym.domains.multitool.checker import run_plan
from harness_gym.domains.multitool.domain import MultiToolDomain, load_multitool_domain
from harness_gym.domains.multitool.generate import generate
from harness_gym.domains.multitool.tools import TOOL_SPECS, ToolError, Value, calculate, convert, parse_unit
from harness_gym.paths import data_path
from tests.domain_cases import assert_env_runs_episodes, draft
from tests.taskfile_cases import assert_rejects_corrupt_line

FILES = ("world.json", "corpus.jsonl", "tasks.jsonl")


@pytest.fixture(scope="module")
def domain() -> MultiToolDomain:
    return load_multitool_domain()




def candidate(domain: MultiToolDomain, kind: str):
    for task in domain.all_tasks():
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
        assert 2 <= len(json.loads(ref.content)["plan"]) <= 5


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
        task, cand = candidate(domain, kind)
        result = domain.check(task, draft(cand.content), None)
        assert not result.passed and needle in result.feedback and result.specificity >= 0.8, (kind, result)
    task, cand = candidate(domain, "wrong_from_unit")
    assert "step" in domain.check(task, draft(cand.content), None).feedback
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
