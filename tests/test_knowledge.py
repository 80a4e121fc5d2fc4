"""The knowledge-work domain: data loading, the task mix, checker (and its counts and bills), grader, candidate
bank, tools and their bills, the harness signals and the registered env."""

from __future__ import annotations

import dataclasses
import json

import pytest

import harness_gym  # noqa: F401  (registers the env ids)
from harness_gym.core.paths import data_path
from harness_gym.core.types import SPLITS, Context, ToolCall
from harness_gym.domains.generation import mix_counts
from harness_gym.domains.knowledge.datamodel import parse_record_prompt
from harness_gym.domains.knowledge.domain import KnowledgeDomain, load_knowledge_domain
from harness_gym.domains.knowledge.generate import MIX_WEIGHTS, generate
from tests.domain_cases import assert_env_runs_episodes, draft
from tests.taskfile_cases import RawEdit, assert_rejects_corrupt_line

FILES = ("sources.jsonl", "tasks.jsonl")


@pytest.fixture(scope="module")
def domain() -> KnowledgeDomain:
    return load_knowledge_domain()




def test_splits_and_counts(domain):
    counts = domain.counts()
    assert sum(counts.values()) >= 150 and all(counts[s] > 0 for s in SPLITS)
    assert {t.family for t in domain.tasks("ood")} == {"product"}
    assert "product" not in {t.family for s in ("train", "val", "test") for t in domain.tasks(s)}


def test_generator_reproduces_the_shipped_data(tmp_path):
    generate(tmp_path)
    for name in FILES:
        assert (tmp_path / name).read_bytes() == data_path("knowledge", name).read_bytes(), name


def test_reference_passes_checker_and_grades_one(domain):
    for task in domain.all_tasks():
        ref = draft(task.reference.content)
        assert domain.grade(task, ref, None) == 1.0, task.task_id
        result = domain.check(task, ref, None)
        assert result.passed, (task.task_id, result.feedback)


def test_correct_flags_agree_with_grader_and_support_ceiling_exists(domain):
    passes_but_wrong, fails = 0, 0
    for task in domain.all_tasks():
        for cand in task.candidates:
            quality = domain.grade(task, draft(cand.content), None)
            assert (quality >= domain.success_threshold) == cand.correct, (task.task_id, cand.kind, quality)
            if not cand.correct:
                if domain.check(task, draft(cand.content), None).passed:
                    passes_but_wrong += 1
                else:
                    fails += 1
    assert passes_but_wrong > 0 and fails > passes_but_wrong


def test_checker_feedback_names_the_offending_field(domain):
    task = domain.tasks("test")[0]
    by_kind = {c.kind: c.content for c in task.candidates}
    for kind in ("wrong_type", "missing_field", "uncited_value", "miscited", "other_entity", "hallucinated"):
        record = json.loads(by_kind[kind])
        ref = json.loads(task.reference.content)
        field = next(f for f in ref["values"] if record["values"].get(f) != ref["values"][f]
                     or record["citations"].get(f) != ref["citations"][f])
        result = domain.check(task, draft(by_kind[kind]), None)
        assert not result.passed and field in result.feedback and result.specificity >= 0.8, (kind, result)
    stale = domain.check(task, draft(by_kind["stale_value"]), None)
    assert stale.passed and domain.grade(task, draft(by_kind["stale_value"]), None) < 1.0
    assert not domain.check(task, draft("not json"), None).passed
    assert domain.grade(task, draft("not json"), None) == 0.0


def test_tools_validate_arguments_and_report_real_errors(domain):
    task = domain.tasks("train")[0]
    ctx = Context(task=task)
    call = task.tool_calls[0]
    ok = domain.run_tool(task, call, ctx, None)
    assert ok.ok and "authoritative" in ok.output
    bad_args = [
        ToolCall("get_field_history", {"entity": call.args["entity"]}),
        ToolCall("get_field_history", {"entity": [call.args["entity"]], "field": call.args["field"]}),
        ToolCall("lookup_source", {"doc_id": 7}),
        ToolCall("search", {"query": "x", "k": "5?"}),
        ToolCall("get_field_historys", dict(call.args)),
    ]
    for bad in bad_args:
        res = domain.run_tool(task, bad, ctx, None)
        assert not res.ok and res.error, bad
    unknown = domain.run_tool(task, ToolCall("get_field_history", {"entity": call.args["entity"] + "x",
                                                                   "field": call.args["field"]}), ctx, None)
    assert not unknown.ok and "did you mean" in unknown.error
    no_field = domain.run_tool(task, ToolCall("get_field_history", {"entity": call.args["entity"],
                                                                    "field": "shoe_size"}), ctx, None)
    assert not no_field.ok and "fields:" in no_field.error
    assert not domain.run_tool(task, ToolCall("lookup_source", {"doc_id": "kn-s9999"}), ctx, None).ok
    hits = domain.run_tool(task, ToolCall("search", {"query": call.args["entity"], "k": 3}), ctx, None)
    assert hits.ok and len(hits.output.splitlines()) == 3


def test_knowledge_signal_on_drafts(domain):
    task = domain.tasks("train")[1]
    ctx = Context(task=task, draft=draft(task.reference.content))
    assert domain.knowledge_signal(task, ctx) == -1.0
    ctx.retrieved.extend(sorted(task.relevant_docs))
    assert domain.knowledge_signal(task, ctx) == 1.0


@pytest.mark.parametrize("file,change,field", [
    ("tasks.jsonl", RawEdit(lambda line: line[:-5]), None),
    ("tasks.jsonl", lambda r: r.pop("gold"), "gold"),
    ("tasks.jsonl", lambda r: r.update(prompt="Compile a record."), "prompt"),
    ("tasks.jsonl", lambda r: r.update(difficulty="hard"), "difficulty"),
    ("tasks.jsonl", lambda r: r["candidates"][1].pop("correct"), "candidates[1].correct"),
    ("tasks.jsonl", lambda r: r["fields"][0].update(type="date"), "fields[0].type"),
    ("sources.jsonl", lambda r: r.update(authoritative="yes"), "authoritative"),
])
def test_malformed_files_name_file_line_and_field(tmp_path, file, change, field):
    assert_rejects_corrupt_line(KnowledgeDomain, "knowledge", FILES, tmp_path, file, 3, change, field)


def test_registered_env_runs_episodes():
    assert_env_runs_episodes("HarnessKnowledge-v1", "test", (0, 0, 1, 1, 2, 3, 4, 6))


# ----- the task mix ----------------------------------------------------------------------------------
def _mixes() -> dict[str, str]:
    lines = data_path("knowledge", "tasks.jsonl").read_text().splitlines()
    return {rec["task_id"]: rec["mix"] for rec in map(json.loads, lines)}


def test_mix_has_the_documented_proportions_and_a_visible_cue(domain):
    """Every split holds a third of single-source records and two thirds of conflicting ones; the prompt shows
    which (a conflicting record names its period and asks 5-6 fields, a single-source one neither and 3-4), and so
    does retrieval (the sources about the entity)."""
    assert MIX_WEIGHTS == {"single_source": 125, "conflicting": 250}
    mixes = _mixes()
    for split in SPLITS:
        tasks = domain.tasks(split)
        got = {}
        for task in tasks:
            got[mixes[task.task_id]] = got.get(mixes[task.task_id], 0) + 1
        assert got == mix_counts(len(tasks), MIX_WEIGHTS), split
    for task in domain.all_tasks():
        request = domain.request(task)
        own = [s for s in domain.sources.sources.values() if s.entity == request.entity]
        if mixes[task.task_id] == "single_source":
            assert request.year is None and len(request.fields) in (3, 4)
            assert len(own) == 1 and not task.tool_calls and task.required_observations == frozenset({0})
        else:
            assert request.year == max(int(s.date[:4]) for s in own)
            assert len(request.fields) in (5, 6) and len(own) >= 2 and task.tool_calls
            assert task.required_observations == frozenset({0, 1})
        assert {f for f, _, _ in task.payload["spec"].fields} == set(request.fields)
        assert task.relevant_docs <= {s.doc_id for s in own}


def test_the_checker_is_complete_on_single_source_records_and_partial_on_conflicting_ones(domain):
    """No wrong single-source record passes the check; stale conflicting ones do (the support ceiling), and the
    single-source records are the easier ones."""
    mixes = _mixes()
    passed_wrong = {"single_source": 0, "conflicting": 0}
    difficulty = {"single_source": [], "conflicting": []}
    for task in domain.all_tasks():
        mix = mixes[task.task_id]
        difficulty[mix].append(task.difficulty)
        for cand in task.candidates:
            if not cand.correct:
                passed_wrong[mix] += domain.check(task, draft(cand.content), None).passed
    assert passed_wrong["single_source"] == 0 and passed_wrong["conflicting"] > 0
    assert max(difficulty["single_source"]) < sum(difficulty["conflicting"]) / len(difficulty["conflicting"])


# ----- checker counts and bills ------------------------------------------------------------------------
def test_n_visible_checks_is_what_the_checker_counts(domain):
    for task in domain.all_tasks():
        result = domain.check(task, draft(task.reference.content), None)
        assert result.passed and result.n_passed == result.n_total == domain.n_visible_checks(task)
        assert domain.n_visible_checks(task) == 1 + len(task.payload["spec"].fields)
        for cand in task.candidates:
            assert domain.check(task, draft(cand.content), None).n_total == domain.n_visible_checks(task)
        assert domain.check(task, draft("not json"), None).n_total == domain.n_visible_checks(task)


@pytest.mark.parametrize("broken", [0, 1, 2, 3])
def test_n_passed_counts_the_failing_validations(domain, broken):
    """A draft with ``broken`` fields cited to a source that does not exist fails exactly those validations; one
    with a wrong entity fails the envelope too."""
    task = domain.tasks("test")[1]
    ref = json.loads(task.reference.content)
    fields = list(ref["citations"])
    for name in fields[:broken]:
        ref["citations"][name] = "kn-s9999"
    result = domain.check(task, draft(json.dumps(ref)), None)
    assert result.n_total == 1 + len(fields)
    assert result.n_passed == result.n_total - broken and result.passed == (broken == 0)
    ref["entity"] = "Someone Else"
    assert domain.check(task, draft(json.dumps(ref)), None).n_passed == result.n_total - broken - 1
    assert domain.check(task, draft("[1, 2]"), None).n_passed == 0


def test_the_checker_bills_one_document_read_per_cited_source(domain):
    task = domain.tasks("test")[0]
    ref = json.loads(task.reference.content)
    result = domain.check(task, draft(task.reference.content), None)
    assert result.billed == {"api_call:internal": len(set(ref["citations"].values()))}
    assert domain.check(task, draft("not json"), None).billed is None


def test_every_tool_bills_one_internal_call(domain):
    assert set(domain.tools) == {"search", "lookup_source", "get_field_history"}
    assert all(dict(spec.bills) == {"api_call:internal": 1} for spec in domain.tools.values())
    task = next(t for t in domain.tasks("train") if t.tool_calls)
    result = domain.run_tool(task, task.tool_calls[0], Context(task=task), None)
    assert result.ok and result.billed is None  # the declared bill applies
    assert [domain.observe_bill(task, i) for i in range(3)] == [{}, {}, {"api_call:internal": 1}]
    assert task.observations[domain.DISAMBIGUATION_OBSERVATION].startswith("Disambiguation")


# ----- harness signals ----------------------------------------------------------------------------------
def test_hooks_read_the_visible_prompt_only(domain):
    for task in domain.all_tasks():
        request = parse_record_prompt(task.prompt)
        keys = domain.task_keys(task)
        assert keys[0] == task.payload["spec"].entity.lower() and all(k in task.prompt.lower() for k in keys)
        assert len(keys) == 1 + (request.year is not None)
        scrubbed = dataclasses.replace(task, candidates=(), relevant_docs=frozenset(), tool_calls=(),
                                       required_observations=frozenset(), difficulty=0.0, payload={})
        assert domain.task_keys(scrubbed) == keys
        assert domain.n_visible_checks(scrubbed) == domain.n_visible_checks(task)
        assert domain.input_size(task) == len(task.prompt)


def test_tool_answers_tells_the_entity_from_its_sibling(domain):
    task = next(t for t in domain.tasks("test") if t.tool_calls)
    ctx = Context(task=task)
    call = task.tool_calls[0]
    assert domain.tool_answers(task, call, domain.run_tool(task, call, ctx, None))
    for doc in sorted(task.relevant_docs):
        looked = ToolCall("lookup_source", {"doc_id": doc})
        assert domain.tool_answers(task, looked, domain.run_tool(task, looked, ctx, None))
    note = task.observations[domain.DISAMBIGUATION_OBSERVATION]
    other_name = note.split(" from ", 1)[1].split("; do not mix")[0]
    sibling = next(s for s in domain.sources.sources.values() if s.entity == other_name)
    other = ToolCall("lookup_source", {"doc_id": sibling.doc_id})
    assert not domain.tool_answers(task, other, domain.run_tool(task, other, ctx, None))
    elsewhere = ToolCall("get_field_history", {"entity": sibling.entity, "field": call.args["field"]})
    assert not domain.tool_answers(task, elsewhere, domain.run_tool(task, elsewhere, ctx, None))
