"""The knowledge-work domain: data loading, checker, grader, candidate bank, tools and the registered env."""

from __future__ import annotations

import json

import pytest

import harness_gym  # noqa: F401  (registers the env ids)
from harness_gym.core.types import SPLITS, Context, ToolCall
from harness_gym.domains.knowledge.domain import KnowledgeDomain, load_knowledge_domain
from harness_gym.domains.knowledge.generate import generate
from harness_gym.paths import data_path
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
    ("tasks.jsonl", lambda r: r.update(difficulty="hard"), "difficulty"),
    ("tasks.jsonl", lambda r: r["candidates"][1].pop("correct"), "candidates[1].correct"),
    ("tasks.jsonl", lambda r: r["fields"][0].update(type="date"), "fields[0].type"),
    ("sources.jsonl", lambda r: r.update(authoritative="yes"), "authoritative"),
])
def test_malformed_files_name_file_line_and_field(tmp_path, file, change, field):
    assert_rejects_corrupt_line(KnowledgeDomain, "knowledge", FILES, tmp_path, file, 3, change, field)


def test_registered_env_runs_episodes():
    assert_env_runs_episodes("HarnessKnowledge-v1", "test", (0, 0, 1, 1, 2, 3, 4, 6))
