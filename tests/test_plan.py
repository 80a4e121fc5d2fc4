"""The planning domain: verifier, soft cost, exact solver, candidate bank, tools, data loading and the env."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

import harness_gym  # noqa: F401  (registers the env ids)
from harness_gym.core.paths import data_path
from harness_gym.core.types import SPLITS, Context, ToolCall
from harness_gym.domains.plan.domain import PlanDomain, load_plan_domain
from harness_gym.domains.plan.generate import generate
from harness_gym.domains.plan.instance import BUSINESS_RULE_KINDS, Instance
from harness_gym.domains.plan.prompt import prompt_has_attachment, prompt_people
from harness_gym.domains.plan.tools import TOOLS
from tests.domain_cases import assert_env_runs_episodes, draft
from tests.hook_cases import assert_hooks_read_no_hidden_field
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
    ceiling, violating, unseen_passing = 0, 0, 0
    for task in domain.all_tasks():
        for cand in task.candidates:
            quality = domain.grade(task, draft(cand.content), None)
            assert (quality >= domain.success_threshold) == cand.correct, (task.task_id, cand.kind, quality)
            result = domain.check(task, draft(cand.content), None)
            if cand.kind == "suboptimal":
                assert result.passed and 0.0 < quality < 1.0
                ceiling += 1
            elif not cand.correct:
                # a plan breaking a rule the verifier does not check passes CHECK and still scores 0
                unseen = cand.kind.removeprefix("violates_") in {r.split(":")[0] for r in domain.instance(task).unverified}
                assert result.passed == unseen and quality == 0.0, (task.task_id, cand.kind)
                violating += 1
                unseen_passing += unseen
    assert ceiling > 0 and violating > 0 and unseen_passing > 0


def test_checker_names_the_violated_constraint(domain):
    kinds = set()
    for task in domain.all_tasks():
        for cand in task.candidates:
            if cand.kind.startswith("violates_") and not domain.instance(task).unverified:
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
    assert dry.ok and "no verified hard rule violated" in dry.output
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


# ----- the task mix and the harness signals (issue 23) -------------------------------------------------------

def _kind(task) -> tuple[bool, bool]:
    """(facts attached, verifier partial), read from the prompt: the cue a harness sees."""
    return prompt_has_attachment(task.prompt), "(not verified)" in task.prompt


@pytest.mark.parametrize("split", SPLITS)
def test_the_documented_mix_holds_in_every_split_with_its_cue(domain, split):
    tasks = domain.tasks(split)
    kinds = [_kind(t) for t in tasks]
    attached = sum(a for a, _ in kinds) / len(tasks)
    partial = sum(p for _, p in kinds) / len(tasks)
    assert 0.3 <= attached <= 0.42 and 0.45 <= partial <= 0.55, (attached, partial)
    for task, (is_attached, is_partial) in zip(tasks, kinds):
        inst = domain.instance(task)
        # the cue says what the hidden fields hold: attached facts <=> no evidence needed
        assert is_attached == (not task.required_observations and not task.relevant_docs and not task.tool_calls)
        assert is_partial == bool(inst.unverified)
        assert inst.unverified == {r.rule_id for r in inst.rules() if r.kind in BUSINESS_RULE_KINDS} or not is_partial
        if not is_attached:
            people = prompt_people(task.prompt)
            asked = [c.args["person"] for c in task.tool_calls]
            assert all(c.name == "availability" for c in task.tool_calls) and set(asked) <= set(people)
            assert len(asked) == min(5, len(people)), task.task_id
    if split == "train":
        assert {len(t.tool_calls) for t in tasks} == {0, 1, 2, 3, 4, 5}


def _instance_from_prompt(prompt: str) -> Instance:
    """The instance an attached task's prompt describes, read back from its text alone."""
    meetings = {m: {"title": title, "attendees": [p.strip() for p in people.split(",")]}
                for m, title, people in re.findall(r"\b(M\d+) '([^']*)' \(([^)]*)\)", prompt)}
    free_part = prompt.split("free slots: ", 1)[1].split(". Room directory:", 1)[0]
    free = {name: [x.strip() for x in slots.split(",") if x.strip() != "no slot"]
            for name, slots in (entry.split(": ", 1) for entry in free_part.split("; "))}
    rooms = {r: {"capacity": int(c), "equipment": [e.strip() for e in eq.split(",")] if eq else []}
             for r, c, eq in re.findall(r"(\w+) seats (\d+)(?: \(([^)]*)\))?", prompt)}
    prefer = [{"meeting": m, "when": w, "weight": int(k)}
              for m, w, k in re.findall(r"(M\d+) prefers (?:the )?(morning|afternoon|Mon|Tue) \(weight (\d+)\)", prompt)]
    room_prefs = [{"meeting": m, "room": r, "weight": int(k)}
                  for m, r, k in re.findall(r"(M\d+) prefers room (\w+) \(weight (\d+)\)", prompt)]
    gap = int(re.search(r"idle slot between two meetings of one person on one day costs (\d+)", prompt).group(1))
    for m, needs in re.findall(r"\b(M\d+) '[^']*' \([^)]*\), needs ([\w, ]+?)[;.]", prompt):
        meetings[m]["needs"] = [n.strip() for n in needs.split(",")]
    limit = re.search(r"nobody has more than (\d+) meetings on one day", prompt)
    return Instance({"days": ["Mon", "Tue"], "hours": [9, 10, 11, 14, 15, 16], "people": free, "rooms": rooms,
                     "meetings": meetings, "precedence": re.findall(r"(M\d+) must happen before (M\d+)", prompt),
                     "deadlines": dict(re.findall(r"(M\d+) must take place by (\w+-\d+)", prompt)),
                     "max_per_day": int(limit.group(1)) if limit else None,
                     "soft": {"prefer": prefer, "room_prefs": room_prefs, "gap_weight": gap}})


def test_attached_tasks_are_answerable_from_the_prompt_alone(domain):
    attached = [t for t in domain.all_tasks() if prompt_has_attachment(t.prompt)]
    assert attached
    for task in attached[::3]:
        from_text = _instance_from_prompt(task.prompt)
        optimum, plan = from_text.solve()
        assert optimum == domain.optimum(task), task.task_id
        assert domain.grade(task, draft(json.dumps({"assignments": {m: {"slot": s, "room": r}
                                                                    for m, (s, r) in plan.items()}})), None) == 1.0
    lookup = next(t for t in domain.all_tasks() if not prompt_has_attachment(t.prompt))
    assert "free slots:" not in lookup.prompt and "Room directory" not in lookup.prompt


def test_n_visible_checks_is_what_the_checker_counts(domain):
    one_rule = {"violates_availability", "violates_person_conflict", "violates_capacity"}
    seen = 0
    for task in domain.all_tasks():
        n = domain.n_visible_checks(task)
        assert n == len(domain.instance(task).verified_rules())
        ref = domain.check(task, draft(task.reference.content), None)
        assert (ref.n_passed, ref.n_total) == (n, n)
        for cand in task.candidates:
            result = domain.check(task, draft(cand.content), None)
            assert result.n_total == n and result.passed == (result.n_passed == n), (task.task_id, cand.kind)
            if cand.kind in one_rule:
                assert result.n_passed == n - 1, (task.task_id, cand.kind, result)
                seen += 1
        garbage = domain.check(task, draft("not json"), None)
        assert (garbage.n_passed, garbage.n_total) == (0, n)
    assert seen > 50
    full = [domain.n_visible_checks(t) for t in domain.all_tasks() if "(not verified)" not in t.prompt]
    partial = [domain.n_visible_checks(t) for t in domain.all_tasks() if "(not verified)" in t.prompt]
    assert min(full) > 4 and set(partial) <= {4, 5}


def test_task_keys_are_the_people_and_rooms_to_look_up(domain):
    for task in domain.all_tasks():
        inst = domain.instance(task)
        keys = domain.task_keys(task)
        if prompt_has_attachment(task.prompt):
            assert keys == ()
            continue
        people = {p.lower() for m in inst.meetings.values() for p in m["attendees"]}
        assert set(keys) == people | {r.lower() for r in inst.rooms}, task.task_id
        assert len(keys) == len(set(keys))


def test_hooks_read_no_hidden_field(domain):
    assert_hooks_read_no_hidden_field(domain, domain.all_tasks()[::5], lambda payload: None)


def test_tools_and_checker_bill_what_their_service_charges(domain):
    assert {n: dict(spec.bills) for n, spec in TOOLS.specs.items()} == {
        "availability": {"api_call:free": 1}, "room_info": {"api_call:internal": 1},
        "dry_run": {"api_call:internal": 1}}
    assert {n: dict(spec.bills) for n, spec in domain.tools.items()} == {n: dict(s.bills) for n, s in TOOLS.specs.items()}
    task = next(t for t in domain.tasks("test") if t.tool_calls)
    ctx = Context(task=task)
    for call in (*task.tool_calls, ToolCall("room_info", {"room": next(iter(domain.instance(task).rooms))}),
                 ToolCall("dry_run", json.loads(task.reference.content))):
        result = domain.run_tool(task, call, ctx, None)
        assert result.ok and result.billed is None  # the declared bill applies
        assert domain.tool_answers(task, call, result), call
    miss = domain.run_tool(task, ToolCall("availability", {"person": "Nobody"}), ctx, None)
    assert not domain.tool_answers(task, ToolCall("availability", {"person": "Nobody"}), miss)
    assert dict(domain.check(task, draft(task.reference.content), None).billed) == {"api_call:internal": 1}
    assert [dict(domain.observe_bill(task, i)) for i in range(3)] == [{"api_call:internal": 1}] * 2 + [{}]
    attached = next(t for t in domain.tasks("test") if prompt_has_attachment(t.prompt))
    assert [dict(domain.observe_bill(attached, i)) for i in range(3)] == [{}, {}, {}]
    assert np.mean([domain.input_size(t) for t in domain.all_tasks() if prompt_has_attachment(t.prompt)]) > \
        1.5 * np.mean([domain.input_size(t) for t in domain.all_tasks() if not prompt_has_attachment(t.prompt)])
