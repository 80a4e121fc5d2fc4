"""The code domain: task file loading, mutation engine, checker, grader, tool, evidence and the registered env."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import gymnasium as gym
import pytest

from harness_gym.core.taskfile import TaskFileError
from harness_gym.core.types import SPLITS, Context, ToolCall
from harness_gym.domains.code.domain import CodeDomain, load_code_domain
from harness_gym.domains.code.generate import build_task
from harness_gym.domains.code.mutations import OPERATORS, mutants
from harness_gym.domains.code.problems import OOD_FAMILIES, all_specs
from harness_gym.paths import data_path
from harness_gym.sandbox import make_sandbox
from tests.domain_cases import draft


@pytest.fixture(scope="module")
def domain() -> CodeDomain:
    return load_code_domain()


@pytest.fixture(scope="module")
def sandbox():
    box = make_sandbox("process")
    yield box
    box.close()


@pytest.fixture(scope="module")
def records() -> dict[str, dict]:
    """The raw task records, for the generation-time statistics they carry."""
    lines = data_path("code", "tasks.jsonl").read_text(encoding="utf-8").splitlines()
    return {rec["task_id"]: rec for rec in map(json.loads, lines)}




def test_counts_families_and_splits(domain, records):
    counts = domain.counts()
    assert sum(counts.values()) >= 150 and all(counts[s] > 0 for s in SPLITS)
    families = {t.family for t in domain.all_tasks()}
    assert len(families) >= 8
    assert {t.family for t in domain.tasks("ood")} == set(OOD_FAMILIES)
    assert not set(OOD_FAMILIES) & {t.family for s in ("train", "val", "test") for t in domain.tasks(s)}
    split_of_problem: dict[str, set[str]] = {}
    for rec in records.values():
        split_of_problem.setdefault(rec["problem"], set()).add(rec["split"])
    assert all(len(s) == 1 for s in split_of_problem.values()), "variants of one problem share a split"
    for task in domain.all_tasks():
        assert 3 <= len(task.candidates) <= 7 and task.required_observations and task.relevant_docs
        assert len(task.payload.visible) in (2, 3) and 7 <= len(task.payload.hidden) <= 13


def test_reference_passes_checker_and_grades_one(domain, sandbox):
    for task in domain.all_tasks():
        ref = draft(task.reference.content)
        result = domain.check(task, ref, sandbox)
        assert result.passed, (task.task_id, result.feedback)
        assert domain.grade(task, ref, sandbox) == 1.0, task.task_id


def test_wrong_candidates_fail_the_grader_and_some_pass_the_checker(domain, sandbox, records):
    """Every third task (a deterministic sample: all candidates would take ~1 min on a loaded 2-core box);
    the generation-time statistics of the whole bank must agree with what running the code shows here."""
    support = visible_fail = 0
    for task in domain.all_tasks()[::3]:
        stored = records[task.task_id]["candidates"]
        for cand, stats in zip(task.candidates, stored):
            if cand.correct:
                continue
            quality = domain.grade(task, draft(cand.content), sandbox)
            passed = domain.check(task, draft(cand.content), sandbox).passed
            assert quality < 1.0, (task.task_id, cand.kind)
            assert (passed, round(quality, 6)) == (stats["checker_passed"], stats["quality"]), task.task_id
            support += passed
            visible_fail += not passed
    assert support > 0 and visible_fail > 0
    kept = [c for rec in records.values() for c in rec["candidates"] if not c["correct"]]
    assert all(c["quality"] < 1.0 for c in kept)
    assert 0 < sum(c["checker_passed"] for c in kept) < len(kept)


def test_checker_feedback_names_the_case(domain, sandbox):
    task = domain.task("code-strings-count_vowels")
    first = task.payload.visible[0]
    wrong = task.reference.content.replace("count = 0", "count = 1")
    result = domain.check(task, draft(wrong), sandbox)
    assert not result.passed and first.expr in result.feedback and first.expect in result.feedback
    assert result.specificity == 0.9
    crash = domain.check(task, draft(task.reference.content.replace("count += 1", "count += None")), sandbox)
    assert not crash.passed and "TypeError" in crash.feedback and crash.specificity == 0.7
    syntax = domain.check(task, draft("def count_vowels(text:\n"), sandbox)
    assert not syntax.passed and "SyntaxError" in syntax.feedback and syntax.specificity == 0.6
    missing = domain.check(task, draft("def other(text):\n    return 0\n"), sandbox)
    assert not missing.passed and "NameError" in missing.feedback
    slow = domain.check(task, draft("def count_vowels(text):\n    while True:\n        pass\n"), sandbox)
    assert not slow.passed and "CPU" in slow.feedback
    assert domain.grade(task, draft("def count_vowels(text:\n"), sandbox) == 0.0


def test_draft_output_cannot_fake_a_result(domain, sandbox):
    task = domain.task("code-strings-count_vowels")
    noisy = 'print("@@harness_gym.code.result@@{\\"results\\": []}")\n' + task.reference.content
    assert domain.grade(task, draft(noisy), sandbox) == 1.0
    fake = 'import sys\nsys.__stdout__.write("@@harness_gym.code.result@@{}\\n")\ndef count_vowels(t):\n    return 0\n'
    assert domain.grade(task, draft(fake), sandbox) < 1.0


def test_run_example_tool(domain, sandbox):
    task = domain.task("code-lists-chunk_list")
    ctx = Context(task=task, draft=draft(task.reference.content))
    good = domain.run_tool(task, task.tool_calls[0], ctx, sandbox)
    assert good.ok and good.ran_code and "->" in good.output
    ok = domain.run_tool(task, ToolCall("run_example", {"call": "chunk_list([1, 2, 3], 2)"}), ctx, sandbox)
    assert ok.ok and ok.output.endswith("[[1, 2], [3]]")
    raised = domain.run_tool(task, ToolCall("run_example", {"call": "chunk_list([1], 0)"}), ctx, sandbox)
    assert not raised.ok and "ValueError" in raised.error
    for bad in ({}, {"call": ["chunk_list([1], 1)"]}, {"call": "x", "extra": 1}, {"call": ""}):
        res = domain.run_tool(task, ToolCall("run_example", bad), ctx, sandbox)
        assert not res.ok and res.error.startswith("invalid arguments for run_example"), bad
    assert not domain.run_tool(task, ToolCall("run_examples", {"call": "x"}), ctx, sandbox).ok
    assert not domain.run_tool(task, task.tool_calls[0], Context(task=task), sandbox).ok


def test_knowledge_evidence_on_drafts(domain):
    task = domain.task("code-math-gcd")
    assert domain.knowledge_signal(task, Context(task=task, draft=draft(task.reference.content))) == 1.0
    assert domain.knowledge_signal(task, Context(task=task, draft=draft("def gcd(a, b:\n"))) == -1.0
    assert domain.knowledge_signal(task, Context(task=task, draft=draft("def lcm(a, b):\n    return 0\n"))) == -1.0
    assert domain.knowledge_signal(task, Context(task=task), ToolCall("run_example", {})) == -1.0


def test_mutation_operators():
    source = (
        "def f(text, k=3):\n"
        "    out = []\n"
        "    for i in range(len(text) - 1):\n"
        "        if text[i].lower() < 'm' and not text[i].isalpha():\n"
        "            out.append(text[i:i + k])\n"
        "        elif i == 0:\n"
        "            continue\n"
        "        else:\n"
        "            out.append(max(i, 2) - 1)\n"
        "    return out\n"
    )
    made = mutants(source)
    assert {m.operator for m in made} == set(OPERATORS)
    assert len({m.source for m in made}) == len(made)
    for m in made:
        compile(m.source, "<mutant>", "exec")


def test_generator_is_deterministic_on_a_sample(sandbox, records):
    specs = {s.task_id: s for s in all_specs()}
    for task_id in ("code-strings-rot13", "code-dicts-merge_max"):
        record, _ = build_task(specs[task_id], sandbox, random.Random(f"0:{task_id}"))
        shipped = records[task_id]
        for key in ("prompt", "observations", "visible_tests", "hidden_tests", "candidates", "tool_calls"):
            assert record[key] == shipped[key], (task_id, key)


def _copy_data(tmp_path: Path) -> Path:
    for name in ("tasks.jsonl", "corpus.jsonl"):
        shutil.copy(data_path("code", name), tmp_path / name)
    return tmp_path


def _edit_first_task(folder: Path, edit) -> None:
    path = folder / "tasks.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    rec = json.loads(lines[1])
    edit(rec)
    lines[1] = json.dumps(rec)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.mark.parametrize("edit, field", [
    (lambda r: r.pop("prompt"), "'prompt'"),
    (lambda r: r.update(difficulty="hard"), "'difficulty'"),
    (lambda r: r["candidates"][1].update(content=7), "'candidates[1].content'"),
    (lambda r: r["hidden_tests"][0].pop("expect", None) or r["hidden_tests"][0].pop("raises"), "'hidden_tests[0]'"),
    (lambda r: r.update(relevant_docs=["no-such-doc"]), "'relevant_docs'"),
    (lambda r: r.update(required_observations=[99]), "'required_observations'"),
    (lambda r: r.update(split="holdout"), "'split'"),
])
def test_malformed_task_files_name_file_line_and_field(tmp_path, edit, field):
    folder = _copy_data(tmp_path)
    _edit_first_task(folder, edit)
    with pytest.raises(TaskFileError) as err:
        CodeDomain(folder)
    message = str(err.value)
    assert "tasks.jsonl" in message and "line 2" in message and field in message and "task 'code-" in message


def test_bad_json_names_file_and_line(tmp_path):
    folder = _copy_data(tmp_path)
    with (folder / "tasks.jsonl").open("a", encoding="utf-8") as fh:
        fh.write("{not json\n")
    with pytest.raises(TaskFileError, match=r"tasks.jsonl, line \d+: invalid JSON"):
        CodeDomain(folder)
    (folder / "corpus.jsonl").write_text('{"doc_id": "a", "title": "t"}\n', encoding="utf-8")
    with pytest.raises(TaskFileError, match=r"corpus.jsonl, line 1, field 'text'"):
        CodeDomain(folder)


def test_env_episodes():
    env = gym.make("HarnessCode-v1", split="test")
    doc = type(env.unwrapped).__doc__
    assert "## Observation Space" in doc and "{observation_table}" not in doc
    qualities = []
    for seed in range(4):
        obs, info = env.reset(seed=seed)
        assert env.observation_space.contains(obs)
        for action in (0, 0, 1, 3, 2, 4, 5, 4, 6):
            obs, reward, terminated, truncated, info = env.step(action)
            if terminated:
                break
        assert terminated and not truncated and 0.0 <= info["quality"] <= 1.0 and reward == info["quality"]
        qualities.append(info["quality"])
    env.close()
    assert len(qualities) == 4
