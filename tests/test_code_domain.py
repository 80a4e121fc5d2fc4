"""The code domain: task file loading, the task mix, mutation engine, checker, grader, tool, the harness
signals (hooks), evidence and the registered env."""

from __future__ import annotations

import dataclasses
import json
import random
import shutil
from collections import Counter
from pathlib import Path

import gymnasium as gym
import pytest

from harness_gym.core.paths import data_path
from harness_gym.core.taskfile import TaskFileError
from harness_gym.core.types import SPLITS, Context, ToolCall, ToolResult
from harness_gym.domains.code.domain import CodeDomain, load_code_domain
from harness_gym.domains.code.generate import (
    STATED_SPEC_MIX,
    VISIBLE_TESTS_MIX,
    assign_splits,
    build_task,
    draw_mix,
    example_outcome,
)
from harness_gym.domains.code.mutations import OPERATORS, mutants
from harness_gym.domains.code.problems import OOD_FAMILIES, all_specs
from harness_gym.domains.code.sandbox_jobs import expected_value, same
from harness_gym.domains.code.tools import TOOLS
from harness_gym.domains.generation import quota
from harness_gym.sandbox import make_sandbox
from harness_gym.workers.profile import WorkerProfile
from harness_gym.workers.simulated import SimulatedWorker
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
        stated = records[task.task_id]["mix"]["spec_stated"]
        assert 3 <= len(task.candidates) <= 7 and bool(task.required_observations) is not stated
        assert bool(task.relevant_docs) is not stated and bool(task.tool_calls) is not stated
        assert 0 <= len(task.payload.visible) <= 4 and 7 <= len(task.payload.hidden) <= 13
        assert task.payload.hidden[:len(task.payload.visible)] == task.payload.visible


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
    example = ToolCall("run_example", {"call": "chunk_list([], 3)"})
    good = domain.run_tool(task, example, ctx, sandbox)
    assert good.ok and good.ran_code and good.output == "chunk_list([], 3) -> []"
    ok = domain.run_tool(task, ToolCall("run_example", {"call": "chunk_list([1, 2, 3], 2)"}), ctx, sandbox)
    assert ok.ok and ok.output.endswith("[[1, 2], [3]]")
    raised = domain.run_tool(task, ToolCall("run_example", {"call": "chunk_list([1], 0)"}), ctx, sandbox)
    assert not raised.ok and "ValueError" in raised.error
    for bad in ({}, {"call": ["chunk_list([1], 1)"]}, {"call": "x", "extra": 1}, {"call": ""}):
        res = domain.run_tool(task, ToolCall("run_example", bad), ctx, sandbox)
        assert not res.ok and res.error.startswith("invalid arguments for run_example"), bad
    assert not domain.run_tool(task, ToolCall("run_examples", {"call": "x"}), ctx, sandbox).ok
    assert not domain.run_tool(task, example, Context(task=task), sandbox).ok


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
    ordered = all_specs()
    specs = {s.task_id: s for s in ordered}
    mixes = draw_mix(ordered, assign_splits(ordered, random.Random("0:splits")), 0)
    for task_id in ("code-strings-rot13", "code-dicts-merge_max"):
        record, _ = build_task(specs[task_id], sandbox, random.Random(f"0:{task_id}"), mixes[task_id])
        shipped = records[task_id]
        for key in ("prompt", "observations", "visible_tests", "hidden_tests", "candidates", "tool_calls", "mix",
                    "required_observations", "relevant_docs"):
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


# ----- the task mix (issue 23) ---------------------------------------------------------------------------
def _examples(prompt: str) -> list[str]:
    """The example lines the prompt shows (after ``Examples:``)."""
    return prompt.split("\n\nExamples:\n", 1)[1].splitlines() if "\n\nExamples:\n" in prompt else []


def test_mix_proportions_per_split_and_their_cue(domain, records):
    for split in SPLITS:
        tasks = domain.tasks(split)
        shown = Counter(len(t.payload.visible) for t in tasks)
        assert shown == Counter(quota(len(tasks), VISIBLE_TESTS_MIX)), split
        stated = Counter(records[t.task_id]["mix"]["spec_stated"] for t in tasks)
        assert stated == Counter(quota(len(tasks), STATED_SPEC_MIX)), split
    for task in domain.all_tasks():
        rec = records[task.task_id]
        lines = _examples(task.prompt)
        assert lines == [f"{t.expr} {example_outcome(t)}" for t in task.payload.visible]
        assert rec["mix"]["visible_tests"] == len(task.payload.visible) == domain.n_visible_checks(task)
        assert ("\n\nDetails:\n" in task.prompt) is rec["mix"]["spec_stated"]


def test_stated_spec_tasks_need_no_evidence(domain, records):
    """A stated spec's clauses are all in the prompt, the task has no required evidence, and the simulated
    worker drafts it as well from the prompt alone as with every piece of evidence."""
    worker = SimulatedWorker(WorkerProfile.for_domain("code"))
    stated = [t for t in domain.all_tasks() if records[t.task_id]["mix"]["spec_stated"]]
    partial = [t for t in domain.all_tasks() if not records[t.task_id]["mix"]["spec_stated"]]
    assert stated and partial
    specs = {s.task_id: s for s in all_specs()}
    for task in stated:
        details = task.prompt.split("\n\nDetails:\n", 1)[1].split("\n\nExamples:\n", 1)[0]
        assert details.splitlines() == [f"- {d}" for d in specs[task.task_id].details]
        assert len(task.observations) == 1 and task.observations[0].startswith("Example: ")
        assert not (task.required_observations or task.relevant_docs or task.tool_calls)
        assert Context(task=task).evidence_coverage() == 1.0
        assert worker.p_correct_draft(Context(task=task)) == pytest.approx(
            worker.p_correct_draft(Context(task=task, observed=list(range(len(task.observations))))))
    for task in partial:
        assert "Details:" not in task.prompt and task.required_observations
        for i in task.required_observations:
            assert task.observations[i] not in task.prompt  # the clause the hidden tests need is not stated
        assert Context(task=task).evidence_coverage() == 0.0


def test_few_visible_tests_leave_wrong_drafts_that_pass_the_check(domain, sandbox, records):
    """With no visible test every viable mutant passes CHECK; the share of tasks whose bank holds a mutant
    passing CHECK falls as the prompt shows more examples; and running the checker agrees."""
    with_support: dict[int, list[bool]] = {}
    for task in domain.all_tasks():
        kept = [c for c in records[task.task_id]["candidates"] if not c["correct"]]
        with_support.setdefault(len(task.payload.visible), []).append(any(c["checker_passed"] for c in kept))
        if not task.payload.visible:
            assert all(c["checker_passed"] for c in kept), task.task_id
    share = {n: sum(v) / len(v) for n, v in with_support.items()}
    assert share[0] == 1.0 and share[1] >= share[4] and share[1] > 0.5
    blind = next(t for t in domain.all_tasks() if not t.payload.visible)
    for cand in blind.candidates:
        result = domain.check(blind, draft(cand.content), sandbox)
        assert result.passed and result.n_passed is None and result.n_total is None


# ----- hooks: the signals a harness holds ----------------------------------------------------------------
def test_task_keys_name_what_the_prompt_names(domain):
    for task in domain.all_tasks():
        keys = domain.task_keys(task)
        assert keys[0] == task.payload.function.lower() or task.payload.function.lower() in keys
        statement = task.prompt.split("\n\nExamples:\n", 1)[0].lower()
        assert all(k in statement for k in keys), task.task_id
    count = domain.task("code-strings-count_vowels")
    assert domain.task_keys(count) == ("count_vowels", "text")
    lru = next(t for t in domain.all_tasks() if t.payload.kind == "class")
    assert "self" not in domain.task_keys(lru) and lru.payload.function.lower() in domain.task_keys(lru)


def test_hooks_read_no_hidden_field(domain):
    """Scrubbing the hidden tests, candidates, evidence labels and difficulty changes no hook's value."""
    for task in domain.all_tasks()[::5]:
        scrubbed = dataclasses.replace(
            task, candidates=task.candidates[:1], relevant_docs=frozenset(), required_observations=frozenset(),
            tool_calls=(), difficulty=0.5, task_id=task.task_id + "#scrubbed",
            payload=dataclasses.replace(task.payload, **dict.fromkeys(domain.hidden_payload_keys, ())))
        for hook in (domain.task_keys, domain.n_visible_checks, domain.input_size):
            assert hook(scrubbed) == hook(task), (task.task_id, hook.__name__)
        assert [domain.observe_bill(scrubbed, i) for i in range(len(task.observations))] == \
               [domain.observe_bill(task, i) for i in range(len(task.observations))]
        assert domain.input_size(task) == len(task.prompt)


def test_check_counts_visible_tests_passed(domain, sandbox):
    """A draft that always returns the first example's value passes exactly the examples expecting that
    value: n_passed / n_total say so, and n_total is n_visible_checks."""
    tasks = [t for t in domain.all_tasks() if t.payload.kind == "function" and len(t.payload.visible) >= 3
             and all(v.expect is not None for v in t.payload.visible)]
    assert len(tasks) >= 10
    mixed = 0
    for task in tasks[:12]:
        first = task.payload.visible[0].expect
        constant = f"def {task.payload.function}(*args, **kwargs):\n    return {first}\n"
        want = sum(same(expected_value(v.expect), expected_value(first)) for v in task.payload.visible)
        result = domain.check(task, draft(constant), sandbox)
        assert (result.n_passed, result.n_total) == (want, domain.n_visible_checks(task)), task.task_id
        assert result.passed is (want == len(task.payload.visible))
        mixed += 0 < want < len(task.payload.visible)
        broken = domain.check(task, draft(f"def {task.payload.function}(:\n"), sandbox)
        assert (broken.passed, broken.n_passed, broken.n_total) == (False, 0, len(task.payload.visible))
    assert mixed > 0


def test_tool_answers_compares_with_the_prompts_example(domain, sandbox):
    task = next(t for t in domain.all_tasks() if t.payload.kind == "function" and t.payload.visible
                and t.payload.visible[0].expect is not None)
    example = task.payload.visible[0]
    ref = Context(task=task, draft=draft(task.reference.content))
    call = ToolCall("run_example", {"call": example.expr})
    good = domain.run_tool(task, call, ref, sandbox)
    assert good.ok and domain.tool_answers(task, call, good)
    wrong = next(c for c in task.candidates if not c.correct)
    for cand in task.candidates[1:]:
        res = domain.run_tool(task, call, Context(task=task, draft=draft(cand.content)), sandbox)
        agrees = res.ok and same(expected_value(res.output.split(" -> ", 1)[1]), expected_value(example.expect))
        assert domain.tool_answers(task, call, res) is agrees, cand.kind
    assert wrong is not None
    other = ToolCall("run_example", {"call": task.payload.hidden[-1].expr})
    assert domain.tool_answers(task, other, domain.run_tool(task, other, ref, sandbox))
    assert not domain.tool_answers(task, call, ToolResult(ok=False, output="", error="boom"))
    assert not domain.tool_answers(task, ToolCall("run_example", {"call": "len([1])"}),
                                   ToolResult(ok=True, output="len([1]) -> 1"))


def test_bills(domain):
    """OBSERVE reads a spec detail from an internal service; run_example bills only its sandbox job."""
    assert TOOLS.specs["run_example"].bills == {}
    task = domain.tasks("train")[0]
    assert all(domain.observe_bill(task, i) == {"api_call:internal": 1} for i in range(len(task.observations)))
    assert domain.hidden_payload_keys == frozenset({"hidden"})
