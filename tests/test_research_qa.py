"""The research-QA domain: encyclopedia loading, the task mix, multi-hop retrieval, grader, self-check, tools, bills,
the harness signals and the env."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

import harness_gym  # noqa: F401  (registers the env ids)
from harness_gym.core.paths import data_path
from harness_gym.core.types import SPLITS, Context, ToolCall
from harness_gym.domains.fictional_world import normalize_answer
from harness_gym.domains.generation import mix_counts
from harness_gym.domains.research_qa.domain import ResearchQADomain, load_research_qa_domain
from harness_gym.domains.research_qa.generate import (
    IN_DISTRIBUTION,
    KIND_HOPS,
    KIND_WEIGHTS,
    OUT_OF_DISTRIBUTION,
    generate,
)
from harness_gym.domains.research_qa.grader import answer_quality, token_f1
from harness_gym.workers import SimulatedWorker, WorkerProfile
from tests.domain_cases import assert_env_runs_episodes, draft
from tests.taskfile_cases import RawEdit, assert_rejects_corrupt_line

FILES = ("articles.jsonl", "tasks.jsonl")


@pytest.fixture(scope="module")
def domain() -> ResearchQADomain:
    return load_research_qa_domain()




def test_splits_counts_and_ood_relations(domain):
    counts = domain.counts()
    assert sum(counts.values()) >= 150 and all(counts[s] > 0 for s in SPLITS)
    seen = {rel for t in IN_DISTRIBUTION for rel in t.path}
    ood_only = {rel for t in OUT_OF_DISTRIBUTION for rel in t.path} - seen
    assert ood_only == {"parent_company", "held_in", "located_in", "population"}
    ood_names = {t.name for t in OUT_OF_DISTRIBUTION}
    assert {t.family for t in domain.tasks("ood")} <= ood_names
    assert not ood_names & {t.family for s in ("train", "val", "test") for t in domain.tasks(s)}
    assert {len(t.relevant_docs) for t in domain.all_tasks()} == {0, 1, 2, 3}


def test_generator_reproduces_the_shipped_data(tmp_path):
    generate(tmp_path)
    for name in FILES:
        assert (tmp_path / name).read_bytes() == data_path("research_qa", name).read_bytes(), name


def test_grader_scores_em_and_f1():
    assert answer_quality("the Port Veyla.", "Port Veyla") == 1.0
    assert answer_quality("Veyla", "Port Veyla") == pytest.approx(2 / 3, abs=1e-5)
    assert answer_quality("Drumor", "Port Veyla") == 0.0
    assert token_f1("Port Veyla, Drumor Coast", "Port Veyla") == pytest.approx(2 * 0.5 / 1.5)


def test_correct_flags_agree_with_grader(domain):
    kinds = set()
    for task in domain.all_tasks():
        assert domain.grade(task, draft(task.reference.content), None) == 1.0
        for cand in task.candidates:
            quality = domain.grade(task, draft(cand.content), None)
            assert (quality >= domain.success_threshold) == cand.correct, (task.task_id, cand.kind, quality)
            kinds.add(cand.kind)
        assert sum(c.correct for c in task.candidates) == 1
    assert {"wrong_hop", "sibling", "partial", "wrong_relation"} <= kinds
    partial = [domain.grade(t, draft(c.content), None) for t in domain.all_tasks() for c in t.candidates
               if c.kind == "partial"]
    assert all(0.0 < q < 1.0 for q in partial)


def test_no_structured_checker_and_self_check_has_low_specificity(domain):
    """CHECK falls back to the worker's self-check: some wrong answers pass it, and it names nothing."""
    profile = WorkerProfile.for_domain("research_qa")
    worker = SimulatedWorker(profile)
    worker.reset(np.random.default_rng(0))
    wrong_passed = 0
    for task in domain.tasks("test"):
        assert domain.check(task, draft(task.reference.content), None) is None
        for i, cand in enumerate(task.candidates):
            if not cand.correct:
                result = worker.self_check(Context(task=task), draft(cand.content, i))
                wrong_passed += result.passed
                assert result.specificity <= 0.2
    assert wrong_passed > 0
    assert profile.selfcheck_fpr >= 0.5


def test_multi_hop_retrieval_reaches_the_chain(domain):
    """The hop-expanded BM25 query finds every article of the chain within a few retrievals for most tasks."""
    reached = 0
    tasks = [t for t in domain.all_tasks() if t.relevant_docs]
    for task in tasks:
        ctx = Context(task=task)
        for _ in range(len(task.relevant_docs) + 3):
            ctx.retrieved.append(domain.retrieve(task, ctx).document.doc_id)
        reached += task.relevant_docs <= set(ctx.retrieved)
        assert ctx.retrieved[0] in task.relevant_docs, task.task_id
    assert reached >= 0.85 * len(tasks)


def test_tools_validate_arguments_and_report_real_errors(domain):
    task = next(t for t in domain.tasks("train") if len(t.tool_calls) >= 2)
    ctx = Context(task=task)
    for call in task.tool_calls:
        res = domain.run_tool(task, call, ctx, None)
        assert res.ok, res.error
    last = domain.run_tool(task, task.tool_calls[-1], ctx, None)
    assert last.output.endswith(task.payload["answer"])
    call = task.tool_calls[0]
    for bad in (ToolCall("query_relation", {"entity": call.args["entity"]}),
                ToolCall("query_relation", {"entity": [call.args["entity"]], "relation": call.args["relation"]}),
                ToolCall("query_relation", {"entity": call.args["entity"], "relation": "Founded By?"}),
                ToolCall("lookup_entity", {}), ToolCall("query_relations", dict(call.args))):
        res = domain.run_tool(task, bad, ctx, None)
        assert not res.ok and res.error, bad
    typo = domain.run_tool(task, ToolCall("lookup_entity", {"name": call.args["entity"][:-1]}), ctx, None)
    assert not typo.ok and "did you mean" in typo.error
    missing = domain.run_tool(task, ToolCall("query_relation", {"entity": call.args["entity"],
                                                                "relation": "shoe_size"}), ctx, None)
    assert not missing.ok and "recorded:" in missing.error
    info = domain.run_tool(task, ToolCall("lookup_entity", {"name": call.args["entity"]}), ctx, None)
    assert info.ok and call.args["relation"] in info.output


def test_knowledge_signal_on_drafts(domain):
    task = next(t for t in domain.tasks("train") if t.relevant_docs)
    ctx = Context(task=task, draft=draft(task.reference.content))
    assert domain.knowledge_signal(task, ctx) == 0.0
    ctx.retrieved.extend(sorted(task.relevant_docs))
    assert domain.knowledge_signal(task, ctx) == 1.0
    ctx.draft = draft("Nowhere Atall")
    assert domain.knowledge_signal(task, ctx) == -1.0
    passage = next(t for t in domain.tasks("train") if not t.relevant_docs)
    ctx = Context(task=passage, draft=draft(passage.reference.content))
    assert domain.knowledge_signal(passage, ctx) == 1.0
    ctx.draft = draft("Nowhere Atall")
    assert domain.knowledge_signal(passage, ctx) == -1.0


# ----- the task mix ----------------------------------------------------------------------------------
def _records() -> list[dict]:
    return [json.loads(line) for line in data_path("research_qa", "tasks.jsonl").read_text().splitlines()]


def test_mix_has_the_documented_proportions_in_every_split(domain):
    """Each split holds the kinds in the proportions of KIND_WEIGHTS, and the kind the prompt shows (a passage or
    not, how many relations the question chains) is the kind the task really is (the evidence it needs)."""
    assert KIND_WEIGHTS["passage"] == KIND_WEIGHTS["1-hop"] == 0.25
    assert KIND_WEIGHTS["2-hop"] == pytest.approx(0.5 * 1252 / 2417)
    assert KIND_WEIGHTS["3-hop"] == pytest.approx(0.5 * 1165 / 2417)
    kinds = {rec["task_id"]: rec["kind"] for rec in _records()}
    for split in SPLITS:
        tasks = domain.tasks(split)
        shown = {}
        for task in tasks:
            parsed = domain.parsed(task)
            kind = "passage" if parsed.passage else f"{parsed.hops}-hop"
            assert kind == kinds[task.task_id], task.task_id
            assert parsed.hops == KIND_HOPS[kind]
            shown[kind] = shown.get(kind, 0) + 1
        assert shown == mix_counts(len(tasks), KIND_WEIGHTS), split
        for kind, n in shown.items():
            assert abs(n / len(tasks) - KIND_WEIGHTS[kind]) <= 1 / len(tasks) + 1e-9, (split, kind)


def test_each_kind_needs_the_evidence_its_prompt_shows(domain):
    """Passage questions need no evidence (the reference answer is in the prompt's passage); an n-hop question
    needs the answer format, the n articles on its chain and n relation lookups, and is harder the more hops."""
    difficulty: dict[str, list[float]] = {}
    for task in domain.all_tasks():
        parsed = domain.parsed(task)
        kind = "passage" if parsed.passage else f"{parsed.hops}-hop"
        difficulty.setdefault(kind, []).append(task.difficulty)
        if parsed.passage:
            assert not task.required_observations and not task.relevant_docs and not task.tool_calls
            assert Context(task=task).evidence_coverage() == 1.0
            assert f" {normalize_answer(task.reference.content)} " in f" {normalize_answer(parsed.passage)} "
            assert parsed.start in parsed.passage and parsed.question in task.prompt
        else:
            assert task.required_observations == frozenset({0})
            assert len(task.relevant_docs) == len(task.tool_calls) == parsed.hops
            assert task.tool_calls[0].args["entity"] == parsed.start
            assert [c.args["relation"] for c in task.tool_calls] == list(parsed.template.path)
    means = [np.mean(difficulty[k]) for k in ("passage", "1-hop", "2-hop", "3-hop")]
    assert means == sorted(means) and means[0] < means[-1] - 0.3


def test_every_prompt_parses_to_its_template_and_start(domain):
    by_name = {t.name: t for t in IN_DISTRIBUTION + OUT_OF_DISTRIBUTION}
    for task in domain.all_tasks():
        parsed = domain.parsed(task)
        assert parsed.template == by_name[task.family]
        assert parsed.template.text.format(s=parsed.start) == parsed.question
    assert domain.parser.parse("In which city was Nobody Atall born?") is None


# ----- harness signals and bills -----------------------------------------------------------------------
def test_hooks_read_the_visible_prompt_only(domain):
    """task_keys names the question's start entity (none when the passage already holds it), from the prompt
    alone: scrubbing every hidden field changes nothing. No visible checks (CHECK is a self-check); the input is
    the prompt, passage included."""
    for task in domain.all_tasks():
        parsed = domain.parsed(task)
        keys = domain.task_keys(task)
        assert keys == (() if parsed.passage else (parsed.start.lower(),))
        assert all(k in task.prompt.lower() for k in keys)
        scrubbed = dataclasses.replace(task, task_id=task.task_id + "-scrubbed", candidates=(), relevant_docs=frozenset(),
                                       required_observations=frozenset(), tool_calls=(), difficulty=0.0,
                                       payload={})
        assert domain.task_keys(scrubbed) == keys
        assert domain.n_visible_checks(task) == 0
        assert domain.input_size(task) == len(task.prompt)
    sizes = {bool(domain.parsed(t).passage): [] for t in domain.all_tasks()}
    for t in domain.all_tasks():
        sizes[bool(domain.parsed(t).passage)].append(domain.input_size(t))
    assert min(sizes[True]) > 2 * max(sizes[False])


def test_tool_answers_tells_the_asked_relation_from_a_wrong_call(domain):
    task = next(t for t in domain.tasks("test") if len(t.tool_calls) == 3)
    ctx = Context(task=task)
    for call in task.tool_calls:
        assert domain.tool_answers(task, call, domain.run_tool(task, call, ctx, None)), call
    first = task.tool_calls[0]
    other = next(r for r in domain.facts[first.args["entity"]] if r not in domain.parsed(task).template.path)
    wrong = ToolCall("query_relation", {"entity": first.args["entity"], "relation": other})
    assert not domain.tool_answers(task, wrong, domain.run_tool(task, wrong, ctx, None))
    stranger = next(name for name, facts in domain.facts.items() if first.args["relation"] in facts
                    and name != first.args["entity"])
    elsewhere = ToolCall("query_relation", {"entity": stranger, "relation": first.args["relation"]})
    assert not domain.tool_answers(task, elsewhere, domain.run_tool(task, elsewhere, ctx, None))
    failed = ToolCall("query_relation", {"entity": "Nobody Atall", "relation": first.args["relation"]})
    assert not domain.tool_answers(task, failed, domain.run_tool(task, failed, ctx, None))


def test_every_tool_bills_a_free_knowledge_graph_call(domain):
    assert set(domain.tools) == {"lookup_entity", "query_relation"}
    assert all(dict(spec.bills) == {"api_call:free": 1} for spec in domain.tools.values())
    task = next(t for t in domain.tasks("train") if t.tool_calls)
    result = domain.run_tool(task, task.tool_calls[0], Context(task=task), None)
    assert result.ok and result.billed is None  # the declared bill applies
    assert domain.observe_bill(task, 0) == {} and domain.observe_bill(task, 1) == {"api_call:free": 1}
    assert "relations" in task.observations[domain.VOCABULARY_OBSERVATION]


@pytest.mark.parametrize("file,change,field", [
    ("tasks.jsonl", RawEdit(lambda line: "{" + line), None),
    ("tasks.jsonl", lambda r: r.pop("answer"), "answer"),
    ("tasks.jsonl", lambda r: r.update(prompt=7), "prompt"),
    ("tasks.jsonl", lambda r: r["tool_calls"][0].update(args="x"), "tool_calls[0].args"),
    ("tasks.jsonl", lambda r: r.update(required_observations=[5]), "required_observations"),
    ("articles.jsonl", lambda r: r.pop("relations"), "relations"),
])
def test_malformed_files_name_file_line_and_field(tmp_path, file, change, field):
    assert_rejects_corrupt_line(ResearchQADomain, "research_qa", FILES, tmp_path, file, 2, change, field)


def test_registered_env_runs_episodes():
    infos = assert_env_runs_episodes("HarnessResearchQA-v1", "ood", (0, 1, 1, 2, 2, 3, 4, 6))
    assert all(info["split"] == "ood" for info in infos)
