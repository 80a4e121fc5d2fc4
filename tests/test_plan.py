"""The planning domain: verifier, soft cost, exact solver, candidate bank, tools, data loading and the env."""

from __future__ import annotations

import json

import numpy as np
import pytest

import harness_gym  # noqa: F401  (registers the env ids)
from harness_gym.core.types import SPLITS, Context, ToolCall
from harness_gym.domains.plan.domain import PlanDomain, load_plan_domain
from harness_gym.domains.plan.generate import generate
from harness_gym.paths import data_path
from tests.domain_cases import assert_env_runs_episodes, draft
from tests.taskfile_cases import assert_rejects_corrupt_line

FILES = ("corpus.jsonl", "tasks.jsonl")


@pytest.fixture(scope="module")
def domain() -> PlanDomain:
    return load_plan_domain()




def test_splits_counts_and_unseen_ood_constraints(domain):
    counts = domain.counts()
    assert sum(counts.values()) >= 150 and all(counts[s] > 0 for s in SPLITS)
    in_dist = [domain.instance(t) for s in ("train", "val", "test") for t in domain.tasks(s)]
    ood = [domain.instance(t) for t in domain.tasks("ood")]
    assert all(i.max_per_day is None and not i.room_prefs for i in in_dist)
    assert not any(m.get("needs") for i in in_dist for m in i.meetings.values())
    assert all(i.max_per_day is not None and any(m.get("needs") for m in i.meetings.values()) for i in ood)


def test_generator_reproduces_the_shipped_data(tmp_path):
    # The whole bank takes ~10 s to solve; the first tasks pin down generator, solver and labelling.
    generate(tmp_path, limit=6)
    assert (tmp_path / "corpus.jsonl").read_bytes() == data_path("plan", "corpus.jsonl").read_bytes()
    shipped = data_path("plan", "tasks.jsonl").read_text(encoding="utf-8").splitlines()[:6]
    assert (tmp_path / "tasks.jsonl").read_text(encoding="utf-8").splitlines() == shipped


def test_stored_optimum_matches_the_solver_and_exhaustive_search(domain):
    tasks = domain.all_tasks()
    for task in tasks[::12]:  # a deterministic sample across templates: solving all takes ~10 s
        inst = domain.instance(task)
        cost, plan = inst.solve()
        assert cost == domain.optimum(task) and not inst.violations(plan), task.task_id
    def tree_size(task) -> float:
        inst = domain.instance(task)
        return float(np.prod([len(inst.options(m)) for m in inst.meetings]))

    for task in sorted(tasks, key=tree_size)[:4]:  # the smallest search trees, enumerated exhaustively
        inst = domain.instance(task)
        every = inst.sample_feasible(np.random.default_rng(0), limit=10**9, max_nodes=10**9)
        assert min(inst.cost(p) for p in every) == domain.optimum(task)


def test_reference_passes_checker_and_grades_one(domain):
    for task in domain.all_tasks():
        ref = draft(task.reference.content)
        assert domain.grade(task, ref, None) == 1.0, task.task_id
        assert domain.check(task, ref, None).passed, task.task_id


def test_correct_flags_agree_with_grader_and_support_ceiling_exists(domain):
    ceiling, violating = 0, 0
    for task in domain.all_tasks():
        for cand in task.candidates:
            quality = domain.grade(task, draft(cand.content), None)
            assert (quality >= domain.success_threshold) == cand.correct, (task.task_id, cand.kind, quality)
            result = domain.check(task, draft(cand.content), None)
            if cand.kind == "suboptimal":
                assert result.passed and 0.0 < quality < 1.0
                ceiling += 1
            elif not cand.correct:
                assert not result.passed and quality == 0.0
                violating += 1
    assert ceiling > 0 and violating > 0


def test_checker_names_the_violated_constraint(domain):
    kinds = set()
    for task in domain.all_tasks():
        for cand in task.candidates:
            if cand.kind.startswith("violates_"):
                kind = cand.kind.removeprefix("violates_")
                result = domain.check(task, draft(cand.content), None)
                assert f"{kind}:" in result.feedback and result.specificity >= 0.9, (task.task_id, result)
                kinds.add(kind)
    assert {"availability", "capacity", "person_conflict", "precedence", "deadline", "equipment",
            "max_per_day"} <= kinds
    task = domain.tasks("test")[0]
    bad = domain.check(task, draft('{"assignments": {"M1": "Mon-09"}}'), None)
    assert not bad.passed and bad.specificity < 0.5
    ghost = json.loads(task.reference.content)
    ghost["assignments"]["M9"] = {"slot": "Wed-09", "room": "Attic"}
    assert "unknown_meeting" in domain.check(task, draft(json.dumps(ghost)), None).feedback
    assert domain.grade(task, draft("not json"), None) == 0.0


def test_soft_cost_counts_preferences_and_gaps(domain):
    task = domain.tasks("train")[0]
    inst = domain.instance(task)
    m = next(iter(inst.meetings))
    person = inst.meetings[m]["attendees"][0]
    one = {m: ("Mon-09", "x")}
    assert inst.gaps(one) == 0
    others = [k for k, v in inst.meetings.items() if person in v["attendees"] and k != m]
    if others:
        assert inst.gaps({**one, others[0]: ("Mon-11", "y")}) >= 1
        assert inst.gaps({**one, others[0]: ("Tue-11", "y")}) == 0


def test_tools_validate_arguments_and_report_real_errors(domain):
    task = domain.tasks("train")[0]
    ctx = Context(task=task)
    inst = domain.instance(task)
    for call in task.tool_calls:
        res = domain.run_tool(task, call, ctx, None)
        assert res.ok and "free at" in res.output
    room = next(iter(inst.rooms))
    info = domain.run_tool(task, ToolCall("room_info", {"room": room}), ctx, None)
    assert info.ok and f"seats {inst.rooms[room]['capacity']}" in info.output
    dry = domain.run_tool(task, ToolCall("dry_run", json.loads(task.reference.content)), ctx, None)
    assert dry.ok and "no hard constraint violated" in dry.output
    for bad in (ToolCall("availability", {}), ToolCall("availability", {"person": ["Ana"]}),
                ToolCall("availability", {"person": "Nobody"}), ToolCall("room_info", {"room": "Attic"}),
                ToolCall("dry_run", {"assignments": {"M1": 3}}), ToolCall("room_infos", {"room": room})):
        res = domain.run_tool(task, bad, ctx, None)
        assert not res.ok and res.error, bad


def test_knowledge_signal_on_drafts(domain):
    task = next(t for t in domain.all_tasks() if any(c.kind == "violates_availability" for c in t.candidates))
    ctx = Context(task=task, draft=draft(task.reference.content))
    assert domain.knowledge_signal(task, ctx) == 1.0
    ctx.draft = draft(next(c.content for c in task.candidates if c.kind == "violates_availability"))
    assert domain.knowledge_signal(task, ctx) == -1.0


@pytest.mark.parametrize("file,change,field", [
    ("tasks.jsonl", None, None),
    ("tasks.jsonl", lambda r: r.pop("split"), "split"),
    ("tasks.jsonl", lambda r: r.update(required_observations="0"), "required_observations"),
    ("tasks.jsonl", lambda r: r["candidates"][0].update(content=7), "candidates[0].content"),
    ("tasks.jsonl", lambda r: r["payload"].update(optimum="low"), "optimum"),
    ("tasks.jsonl", lambda r: r["payload"]["instance"].pop("rooms"), "payload.instance"),
    ("tasks.jsonl", lambda r: r["payload"]["instance"].update(precedence=[["M1", "M99"]]), "payload.instance"),
    ("corpus.jsonl", lambda r: r.update(title=None), "title"),
])
def test_malformed_files_name_file_line_and_field(tmp_path, file, change, field):
    assert_rejects_corrupt_line(PlanDomain, "plan", FILES, tmp_path, file, 3, change, field)


def test_registered_env_runs_episodes():
    assert_env_runs_episodes("HarnessPlan-v1", "ood", (0, 0, 1, 2, 2, 3, 4, 6))
