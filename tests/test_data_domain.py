"""Tests of the data-analysis domain (HarnessData-v1): loader errors, tools, checker, grader, candidates, env.

Programs run in a real ProcessSandbox with pandas preloaded. Every reference goes through the checker and the
grader; the wrong candidates of a fixed sample of tasks (one task per dataset schema and question template)
are checked against their labels here, and all 1900-odd of them in ``test_every_candidate_label`` when
``HARNESS_GYM_SLOW=1`` (about two minutes).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
from collections import Counter
from pathlib import Path

import gymnasium as gym
import pytest

import harness_gym  # noqa: F401  (registers the env ids)
from harness_gym.core.paths import data_path
from harness_gym.core.taskfile import TaskFileError
from harness_gym.core.types import SPLITS, Context, Draft, Task, ToolCall
from harness_gym.domains.data import domain as data_domain
from harness_gym.domains.data.checker import validations
from harness_gym.domains.data.domain import DataDomain, load_data_domain
from harness_gym.domains.data.generate import (
    DIRT_KINDS_MIX,
    IN_TEMPLATES,
    OOD_TEMPLATES,
    RANGE_STATED_MIX,
    SCHEMAS,
    datasets,
)
from harness_gym.domains.data.programs import analysis_only
from harness_gym.domains.generation import quota
from harness_gym.sandbox import make_sandbox

SLOW = os.environ.get("HARNESS_GYM_SLOW") == "1"


@pytest.fixture(scope="module")
def domain() -> DataDomain:
    return load_data_domain()


@pytest.fixture(scope="module")
def sandbox():
    sb = make_sandbox("process", cache=True, **DataDomain.sandbox_options)
    yield sb
    sb.close()



def sample(domain: DataDomain) -> list[Task]:
    """The first task of every (schema, template) pair, in file order."""
    seen: dict[tuple[str, str], Task] = {}
    for task in domain.all_tasks():
        seen.setdefault((task.payload.dataset.rsplit("_", 1)[0], task.family), task)
    return list(seen.values())


def draft(task: Task, index: int) -> Draft:
    return Draft(content=task.candidates[index].content, candidate=index, version=1)


# ----- the bank ------------------------------------------------------------------------------------------
def test_counts_and_splits(domain: DataDomain) -> None:
    counts = domain.counts()
    assert sum(counts.values()) >= 150
    assert all(counts[s] > 0 for s in SPLITS)
    ood_families = {t.family for t in domain.tasks("ood")}
    train_families = {t.family for t in domain.tasks("train")}
    assert not ood_families & train_families, "ood question templates must be unseen in train"
    ood_sets = {t.payload.dataset.rsplit("_", 1)[0] for t in domain.tasks("ood")}
    train_sets = {t.payload.dataset.rsplit("_", 1)[0] for t in domain.tasks("train")}
    assert not ood_sets & train_sets, "ood schemas must be unseen in train"
    for task in domain.all_tasks():
        assert task.relevant_docs <= {d.doc_id for d in domain.corpus}
        assert sum(c.correct for c in task.candidates) == 1 and len(task.candidates) >= 3


def test_generator_is_deterministic(domain: DataDomain) -> None:
    first = datasets()[0]
    shipped = (data_path("data", "datasets") / first.file).read_text(encoding="utf-8")
    assert first.csv == shipped
    assert datasets()[0].csv == first.csv


def test_relevant_documents_rank_near_the_top(domain: DataDomain) -> None:
    for task in domain.all_tasks():
        if not task.relevant_docs:
            continue  # a task no cleaning matters for needs no document
        order = [domain.corpus[i].doc_id for i, _ in domain.index.ranking(domain.query(task))]
        assert max(order.index(d) for d in task.relevant_docs) < 5, task.task_id


# ----- checker and grader --------------------------------------------------------------------------------
def test_every_reference_passes_checker_and_grader(domain: DataDomain, sandbox) -> None:
    for task in domain.all_tasks():
        ref = draft(task, 0)
        assert task.candidates[0].correct
        check = domain.check(task, ref, sandbox)
        assert check.passed, (task.task_id, check.feedback)
        assert domain.grade(task, ref, sandbox) >= domain.success_threshold, task.task_id


def _labels_agree(domain: DataDomain, sandbox, tasks: list[Task]) -> tuple[int, int]:
    """Assert every candidate's label equals the grader's verdict; count wrong ones by checker outcome."""
    passed_wrong = failed_wrong = 0
    for task in tasks:
        for i, cand in enumerate(task.candidates):
            quality = domain.grade(task, draft(task, i), sandbox)
            assert (quality >= domain.success_threshold) == cand.correct, (task.task_id, cand.kind, quality)
            if not cand.correct:
                if domain.check(task, draft(task, i), sandbox).passed:
                    passed_wrong += 1
                else:
                    failed_wrong += 1
    return passed_wrong, failed_wrong


def test_candidate_labels_agree_with_grader_on_sample(domain: DataDomain, sandbox) -> None:
    passed_wrong, failed_wrong = _labels_agree(domain, sandbox, sample(domain))
    assert passed_wrong > 0, "some wrong programs must pass the checker and fail the grader (support ceiling)"
    assert failed_wrong > 0, "the checker must catch some wrong programs"


@pytest.mark.skipif(not SLOW, reason="runs ~1900 programs; set HARNESS_GYM_SLOW=1")
def test_every_candidate_label(domain: DataDomain, sandbox) -> None:
    _labels_agree(domain, sandbox, domain.all_tasks())


def test_checker_feedback_names_the_fault(domain: DataDomain, sandbox, monkeypatch) -> None:
    task = next(t for t in domain.tasks("train") if t.family == "group_mean")
    kinds = {c.kind: i for i, c in enumerate(task.candidates)}
    crash = domain.check(task, draft(task, kinds["hallucinated_column"]), sandbox)
    assert not crash.passed and "KeyError" in crash.feedback and crash.specificity >= 0.8
    shape = domain.check(task, draft(task, kinds["wrong_group_key"]), sandbox)
    assert not shape.passed and "expected keys" in shape.feedback
    not_json = domain.check(task, draft(task, kinds["print_repr"]), sandbox)
    assert not not_json.passed and "not JSON" in not_json.feedback
    monkeypatch.setattr(data_domain, "TIMEOUT_S", 1.0)
    loop = Draft(content="while True:\n    pass\n", candidate=-1, version=1)
    timeout = domain.check(task, loop, sandbox)
    assert not timeout.passed and "did not finish" in timeout.feedback
    assert domain.grade(task, loop, sandbox) == 0.0


def test_grader_gives_partial_credit_per_group(domain: DataDomain, sandbox) -> None:
    task = next(t for t in domain.tasks("train") if t.family == "group_mean")
    expected = dict(task.payload.expected)
    first = next(iter(expected))
    expected[first] += 1.0
    code = f"import json\nprint(json.dumps({json.dumps(expected)}))\n"
    quality = domain.grade(task, Draft(content=code, candidate=-1, version=1), sandbox)
    assert quality == pytest.approx((len(expected) - 1) / len(expected))


# ----- tools and knowledge -------------------------------------------------------------------------------
def test_tools_compute_real_statistics_and_reject_bad_arguments(domain: DataDomain) -> None:
    task = domain.tasks("test")[0]
    ctx = Context(task=task)
    schema = next(s for s in SCHEMAS if task.payload.dataset.startswith(s.file_stem + "_"))
    frame = domain.table(task).frame
    prof = domain.run_tool(task, ToolCall("profile_column", {"column": schema.measure}), ctx, None)
    assert prof.ok and f"{int(frame[schema.measure].isna().sum())} missing" in prof.output
    dups = domain.run_tool(task, ToolCall("count_duplicates", {}), ctx, None)
    assert dups.ok and dups.output.startswith(f"{int(frame.duplicated().sum())} of {len(frame)}")
    counts = domain.run_tool(task, ToolCall("value_counts", {"column": schema.group, "top": 2}), ctx, None)
    assert counts.ok and counts.output.count(":") == 2
    bad = {
        "missing argument": ToolCall("profile_column", {}),
        "wrong type": ToolCall("profile_column", {"column": [schema.measure]}),
        "bad top": ToolCall("value_counts", {"column": schema.group, "top": "3?"}),
        "unknown column": ToolCall("profile_column", {"column": schema.measure_alias}),
        "unknown tool": ToolCall("profile_columns", {"column": schema.measure}),
        "extra argument": ToolCall("count_duplicates", {"column": schema.measure}),
    }
    for why, call in bad.items():
        res = domain.run_tool(task, call, ctx, None)
        assert not res.ok and res.error, why
        assert domain.knowledge_signal(task, ctx, call) == -1.0, why
    assert "no column" in domain.run_tool(task, bad["unknown column"], ctx, None).error
    for call in task.tool_calls:
        assert domain.run_tool(task, call, ctx, None).ok
        assert domain.knowledge_signal(task, ctx, call) == 1.0


def test_knowledge_flags_hallucinated_columns(domain: DataDomain) -> None:
    task = domain.tasks("train")[0]
    kinds = {c.kind: i for i, c in enumerate(task.candidates)}
    ctx = Context(task=task, draft=draft(task, 0))
    assert domain.knowledge_signal(task, ctx) == 1.0
    ctx.draft = draft(task, kinds["hallucinated_column"])
    assert domain.knowledge_signal(task, ctx) == -1.0


# ----- loader errors -------------------------------------------------------------------------------------
@pytest.fixture()
def data_copy(tmp_path: Path) -> Path:
    """A copy of the shipped bank reduced to its first dataset's tasks."""
    src = data_path("data")
    first = json.loads((src / "datasets.jsonl").read_text().splitlines()[0])
    (tmp_path / "datasets").mkdir()
    shutil.copy(src / first["file"], tmp_path / first["file"])
    (tmp_path / "datasets.jsonl").write_text(json.dumps(first) + "\n")
    shutil.copy(src / "corpus.jsonl", tmp_path / "corpus.jsonl")
    lines = [ln for ln in (src / "tasks.jsonl").read_text().splitlines() if json.loads(ln)["dataset"] == first["name"]]
    (tmp_path / "tasks.jsonl").write_text("\n".join(lines) + "\n")
    return tmp_path


def _rewrite_task(root: Path, line: int, change) -> None:
    path = root / "tasks.jsonl"
    lines = path.read_text().splitlines()
    lines[line - 1] = change(lines[line - 1])
    path.write_text("\n".join(lines) + "\n")


def _edit(field: str, value=None, delete: bool = False):
    def change(raw: str) -> str:
        rec = json.loads(raw)
        if delete:
            del rec[field]
        else:
            rec[field] = value
        return json.dumps(rec)
    return change


def test_loader_accepts_the_copy(data_copy: Path) -> None:
    assert sum(DataDomain(data_copy).counts().values()) == len((data_copy / "tasks.jsonl").read_text().splitlines())


@pytest.mark.parametrize("change, field, message", [
    (lambda raw: raw[:-5], None, "invalid JSON"),
    (_edit("expected", delete=True), "expected", "missing required field"),
    (_edit("difficulty", "hard"), "difficulty", "expected number"),
    (_edit("dataset", "orders_nowhere"), "dataset", "unknown dataset"),
    (_edit("answer_spec", {"kind": "table"}), "answer_spec.kind", "unknown answer kind"),
    (_edit("candidates", [{"kind": "reference", "content": 3, "correct": True}]), "content", "expected string"),
])
def test_malformed_task_file_names_file_line_and_field(data_copy: Path, change, field, message) -> None:
    _rewrite_task(data_copy, 2, change)
    with pytest.raises(TaskFileError) as err:
        DataDomain(data_copy)
    text = str(err.value)
    assert "tasks.jsonl" in text and "line 2" in text and message in text
    if field is not None:
        assert field in text


def test_missing_csv_is_reported(data_copy: Path) -> None:
    shutil.rmtree(data_copy / "datasets")
    with pytest.raises(TaskFileError, match="datasets.jsonl, line 1.*not found"):
        DataDomain(data_copy)


# ----- env -----------------------------------------------------------------------------------------------
def test_env_episodes(sandbox) -> None:
    env = gym.make("HarnessData-v1", split="test", sandbox=sandbox)
    try:
        obs, info = env.reset(seed=0)
        for action in (0, 0, 0, 1, 1, 2, 3, 4, 6):
            obs, reward, terminated, truncated, info = env.step(action)
        assert terminated and 0.0 <= info["quality"] <= 1.0 and reward == info["quality"]
        for seed in range(3):
            env.reset(seed=seed, options={"split": "ood"})
            terminated = truncated = False
            while not (terminated or truncated):
                mask = env.unwrapped.action_masks()
                action = next(a for a in (3, 4, 6) if mask[a])
                _, _, terminated, truncated, info = env.step(action)
            assert terminated and info["split"] == "ood"
    finally:
        env.close()


# ----- the task mix (issue 23) ---------------------------------------------------------------------------
def _records() -> dict[str, dict]:
    lines = data_path("data", "tasks.jsonl").read_text(encoding="utf-8").splitlines()
    return {rec["task_id"]: rec for rec in map(json.loads, lines)}


def test_mix_proportions_per_split_and_their_cue(domain: DataDomain) -> None:
    records = _records()
    sets = [json.loads(ln) for ln in data_path("data", "datasets.jsonl").read_text().splitlines()]
    for split in SPLITS:
        mine = [d for d in sets if d["split"] == split]
        assert Counter(len(d["faults"]) for d in mine) == Counter(quota(len(mine), DIRT_KINDS_MIX)), split
        numeric = [t for t in domain.tasks(split) if t.payload.spec.kind != "label"]
        stated = Counter(t.payload.spec.range_stated for t in numeric)
        assert stated == Counter(quota(len(numeric), RANGE_STATED_MIX)), split
    faults = {d["name"]: d["faults"] for d in sets}
    for task in domain.all_tasks():
        frame = domain.table(task).frame
        clean = not faults[task.payload.dataset]
        assert ("validated extract" in task.prompt) is clean and ("raw export" in task.prompt) is not clean
        assert f"({len(frame)} rows; columns {', '.join(frame.columns)})" in task.prompt
        assert bool(re.search(r", (each )?between -?[\d.]+ and [\d.]+\.$", task.prompt)) is task.payload.spec.range_stated
        assert records[task.task_id]["mix"]["range_stated"] is task.payload.spec.range_stated
        if clean:
            assert not (task.required_observations or task.relevant_docs or task.tool_calls), task.task_id


def test_clean_extracts_are_answerable_from_the_prompt(domain: DataDomain, sandbox) -> None:
    """On a validated extract the analysis alone, without any cleaning, gets the full grade: the prompt (the
    question and the columns) is all a program needs."""
    by_template: dict[str, Task] = {}
    for task in domain.all_tasks():
        if "validated extract" in task.prompt:
            by_template.setdefault(task.family, task)
    assert set(by_template) == set(IN_TEMPLATES) | set(OOD_TEMPLATES)
    for task in by_template.values():
        schema = next(s for s in SCHEMAS if task.payload.dataset.startswith(s.file_stem + "_"))
        threshold = re.search(r"above (\S+) ", task.payload.question)
        names = {"file": domain.table(task).file, "m": schema.measure, "c": schema.count, "g": schema.group,
                 "d": schema.date, "e": schema.entity, "x": threshold.group(1) if threshold else ""}
        bare = Draft(content=analysis_only(names, task.family), candidate=-1, version=1)
        assert domain.grade(task, bare, sandbox) >= domain.success_threshold, task.task_id


def test_unstated_ranges_let_more_wrong_programs_pass(domain: DataDomain, sandbox) -> None:
    """On the same datasets and templates, a wrong program passes the checker at least as often when the
    question states no range, and a unit mix-up left in is caught only by a stated range."""
    passed = {True: [0, 0], False: [0, 0]}
    caught_units = {True: 0, False: 0}
    for task in domain.all_tasks()[::3]:
        if task.payload.spec.kind == "label":
            continue
        stated = task.payload.spec.range_stated
        for i, cand in enumerate(task.candidates):
            if cand.correct:
                continue
            check = domain.check(task, draft(task, i), sandbox)
            passed[stated][0] += check.passed
            passed[stated][1] += 1
            if cand.kind == "no_unit_fix" and not check.passed and "plausible range" in check.feedback:
                caught_units[stated] += 1
    assert passed[False][0] / passed[False][1] > passed[True][0] / passed[True][1]
    assert caught_units[False] == 0 and caught_units[True] > 0


# ----- hooks: the signals a harness holds ----------------------------------------------------------------
def test_checker_counts_its_validations(domain: DataDomain, sandbox) -> None:
    task = next(t for t in domain.tasks("train") if t.family == "group_mean")
    kinds = {c.kind: i for i, c in enumerate(task.candidates)}
    n = domain.n_visible_checks(task)
    assert n == len(validations(task.payload.spec)) == (6 if task.payload.spec.range_stated else 5)
    ref = domain.check(task, draft(task, 0), sandbox)
    assert (ref.passed, ref.n_passed, ref.n_total) == (True, n, n)
    crash = domain.check(task, draft(task, kinds["hallucinated_column"]), sandbox)
    assert (crash.n_passed, crash.n_total) == (0, n)
    not_json = domain.check(task, draft(task, kinds["print_repr"]), sandbox)
    assert (not_json.n_passed, not_json.n_total) == (1, n)
    shape = domain.check(task, draft(task, kinds["wrong_group_key"]), sandbox)
    assert (shape.n_passed, shape.n_total) == (3, n)
    for task in sample(domain):
        assert domain.n_visible_checks(task) == len(validations(task.payload.spec))
        assert domain.check(task, draft(task, 0), sandbox).n_total == domain.n_visible_checks(task)
    counts = {domain.n_visible_checks(t) for t in domain.all_tasks()}
    assert counts == {4, 5, 6}


def test_task_keys_and_input_size(domain: DataDomain) -> None:
    for task in domain.all_tasks():
        keys = domain.task_keys(task)
        table = domain.table(task)
        assert keys[0] == table.file.lower()
        assert set(keys[1:]) <= {c.lower() for c in table.frame.columns} | set(re.findall(r"\d+(?:\.\d+)?",
                                                                                           task.payload.question))
        assert domain.input_size(task) == len(task.prompt) + len(table.csv)
    task = next(t for t in domain.all_tasks() if t.family == "share_above")
    schema = next(s for s in SCHEMAS if task.payload.dataset.startswith(s.file_stem + "_"))
    threshold = re.search(r"above (\S+) ", task.payload.question).group(1)
    assert domain.task_keys(task) == (domain.table(task).file.lower(), schema.measure, schema.count, threshold)


def test_hooks_read_no_hidden_field(domain: DataDomain) -> None:
    for task in domain.all_tasks()[::7]:
        scrubbed = dataclasses.replace(
            task, candidates=task.candidates[:1], relevant_docs=frozenset(), required_observations=frozenset(),
            tool_calls=(), difficulty=0.5, task_id=task.task_id + "#scrubbed",
            payload=dataclasses.replace(task.payload, **dict.fromkeys(domain.hidden_payload_keys, None)))
        for hook in (domain.task_keys, domain.n_visible_checks, domain.input_size):
            assert hook(scrubbed) == hook(task), (task.task_id, hook.__name__)
        assert all(domain.observe_bill(scrubbed, i) == {} for i in range(len(task.observations)))


def test_tool_answers_and_bills(domain: DataDomain) -> None:
    assert all(spec.bills == {"api_call:free": 1} for spec in domain.tools.values())
    task = next(t for t in domain.all_tasks() if t.family == "corr")
    schema = next(s for s in SCHEMAS if task.payload.dataset.startswith(s.file_stem + "_"))
    ctx = Context(task=task)
    asked = ToolCall("profile_column", {"column": schema.measure})
    other = ToolCall("profile_column", {"column": schema.group})
    dups = ToolCall("count_duplicates", {})
    assert domain.tool_answers(task, asked, domain.run_tool(task, asked, ctx, None))
    assert not domain.tool_answers(task, other, domain.run_tool(task, other, ctx, None))
    assert domain.tool_answers(task, dups, domain.run_tool(task, dups, ctx, None))
    bad = ToolCall("profile_column", {"column": schema.measure_alias})
    assert not domain.tool_answers(task, bad, domain.run_tool(task, bad, ctx, None))
