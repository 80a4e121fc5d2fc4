"""CodeDomain: Python function tasks checked by visible tests and graded by hidden tests in the sandbox.

Data (``envs_data/code/``, written by :mod:`harness_gym.domains.code.generate`):

- ``tasks.jsonl``: one task per line with ``task_id``, ``family``, ``problem``, ``split``, ``difficulty``,
  ``function`` (the name the spec asks for), ``kind`` (``function`` or ``class``), ``prompt``,
  ``observations``, ``required_observations``, ``relevant_docs``, ``tool_calls``, ``visible_tests`` (what
  CHECK runs), ``hidden_tests`` (what SUBMIT runs: the visible cases first, then the hidden ones) and
  ``candidates`` (the reference and AST mutants, with the checker/grader outcome measured at generation time
  for reporting; grading always runs the code again);
- ``corpus.jsonl``: the documents RETRIEVE ranks.

Every test row is ``{"call": EXPR, "expect": REPR}`` or ``{"call": EXPR, "raises": EXCEPTION_NAME}``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from harness_gym.core.domain import Domain
from harness_gym.core.taskfile import TaskFileError, read_documents, read_jsonl, require
from harness_gym.core.tools import ToolSpec
from harness_gym.core.types import (
    SPLITS,
    Candidate,
    CheckResult,
    Context,
    Draft,
    Task,
    ToolCall,
    ToolResult,
)
from harness_gym.domains.code.execution import (
    CALL_FILE,
    CALL_SCRIPT,
    JOB_TIMEOUT_S,
    SOLUTION_FILE,
    TEST_CPU_LIMIT_S,
    RunReport,
    TestCase,
    parse_call,
    parse_tests,
    tests_script,
)
from harness_gym.paths import data_path
from harness_gym.sandbox.base import Sandbox

SPECIFICITY = {"returned": 0.9, "raised": 0.7, "load": 0.6, "slow": 0.4, "timeout": 0.2, "crash": 0.2}
"""How precisely CHECK feedback names the fault, by what went wrong: a wrong value names the case, the
expected and the actual value; an exception names the case and the exception; a load error gives the last
traceback line; a slow case names only the case; a timed-out or crashed job says nothing about the fault."""

RUN_EXAMPLE = ToolSpec(
    name="run_example",
    description="Run the current draft on one example call and return the repr of the result, or the "
                "exception it raised.",
    parameters={
        "type": "object",
        "properties": {"call": {"type": "string", "minLength": 1, "maxLength": 500,
                                "description": "a Python expression calling the draft, e.g. \"f([1, 2], 3)\""}},
        "required": ["call"],
        "additionalProperties": False,
    },
)


@dataclass(frozen=True)
class CodePayload:
    """What the checker, grader and tool of one task need, prepared at load time."""

    function: str
    kind: str
    visible: tuple[TestCase, ...]
    hidden: tuple[TestCase, ...]
    check_script: str
    grade_script: str


@lru_cache(maxsize=4096)
def defines(source: str, name: str) -> bool:
    """Whether ``source`` parses and binds ``name`` at module level (a def, a class or an assignment)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            return True
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return True
    return False


class _Where:
    """Where a record sits in its file, for error messages."""

    def __init__(self, path: Path, line: int, task_id: str | None = None) -> None:
        self.path, self.line, self.task_id = path, line, task_id

    def get(self, rec: Any, key: str, typ: type | tuple[type, ...], label: str | None = None) -> Any:
        """``rec[key]`` checked against ``typ``; errors name ``label`` (default ``key``) as the field."""
        label = label or key
        if not isinstance(rec, dict):
            parent = label.rsplit(".", 1)[0]
            raise self.error(f"expected an object, got {type(rec).__name__}", parent)
        view = {label: rec[key]} if key in rec else {}
        return require(view, label, typ, path=self.path, line=self.line, task_id=self.task_id)

    def error(self, message: str, field: str | None = None) -> TaskFileError:
        return TaskFileError(self.path, message, line=self.line, task_id=self.task_id, field=field)


def _strings(where: _Where, rec: dict[str, Any], key: str) -> tuple[str, ...]:
    items = where.get(rec, key, list)
    return tuple(where.get({"v": v}, "v", str, f"{key}[{i}]") for i, v in enumerate(items))


def _tests(where: _Where, rec: dict[str, Any], key: str) -> tuple[TestCase, ...]:
    rows = where.get(rec, key, list)
    if not rows:
        raise where.error("needs at least one test", key)
    out = []
    for i, row in enumerate(rows):
        label = f"{key}[{i}]"
        expr = where.get(row, "call", str, f"{label}.call")
        has_expect, has_raises = "expect" in row, "raises" in row
        if has_expect == has_raises:
            raise where.error("needs exactly one of 'expect' and 'raises'", label)
        if has_expect:
            out.append(TestCase(expr, expect=where.get(row, "expect", str, f"{label}.expect")))
        else:
            out.append(TestCase(expr, raises=where.get(row, "raises", str, f"{label}.raises")))
    return tuple(out)


def _candidates(where: _Where, rec: dict[str, Any]) -> tuple[Candidate, ...]:
    rows = where.get(rec, "candidates", list)
    out = tuple(
        Candidate(content=where.get(row, "content", str, f"candidates[{i}].content"),
                  kind=where.get(row, "kind", str, f"candidates[{i}].kind"),
                  correct=where.get(row, "correct", bool, f"candidates[{i}].correct"))
        for i, row in enumerate(rows))
    if not any(c.correct for c in out):
        raise where.error("no candidate is marked correct (the reference)", "candidates")
    return out


def _tool_calls(where: _Where, rec: dict[str, Any]) -> tuple[ToolCall, ...]:
    rows = where.get(rec, "tool_calls", list)
    return tuple(ToolCall(name=where.get(row, "name", str, f"tool_calls[{i}].name"),
                          args=where.get(row, "args", dict, f"tool_calls[{i}].args"))
                 for i, row in enumerate(rows))


def read_task(path: Path, line: int, rec: dict[str, Any], doc_ids: set[str]) -> Task:
    """One task of ``tasks.jsonl``, validated; errors name the file, line, task id and field."""
    where = _Where(path, line)
    where.task_id = where.get(rec, "task_id", str)
    split = where.get(rec, "split", str)
    if split not in SPLITS:
        raise where.error(f"unknown split {split!r}; expected one of {SPLITS}", "split")
    difficulty = where.get(rec, "difficulty", float)
    if not 0.0 <= difficulty <= 1.0:
        raise where.error(f"must lie in [0, 1], got {difficulty}", "difficulty")
    kind = where.get(rec, "kind", str)
    if kind not in ("function", "class"):
        raise where.error(f"expected 'function' or 'class', got {kind!r}", "kind")
    observations = _strings(where, rec, "observations")
    required = where.get(rec, "required_observations", list)
    for i, idx in enumerate(required):
        where.get({"v": idx}, "v", int, f"required_observations[{i}]")
        if not 0 <= idx < len(observations):
            raise where.error(f"index {idx} is outside the {len(observations)} observations",
                              f"required_observations[{i}]")
    docs = _strings(where, rec, "relevant_docs")
    unknown = sorted(set(docs) - doc_ids)
    if unknown:
        raise where.error(f"unknown document ids {unknown}", "relevant_docs")
    visible, hidden = _tests(where, rec, "visible_tests"), _tests(where, rec, "hidden_tests")
    payload = CodePayload(function=where.get(rec, "function", str), kind=kind, visible=visible, hidden=hidden,
                          check_script=tests_script(visible), grade_script=tests_script(hidden))
    return Task(
        task_id=where.task_id, split=split, family=where.get(rec, "family", str), difficulty=difficulty,
        prompt=where.get(rec, "prompt", str), candidates=_candidates(where, rec), observations=observations,
        required_observations=frozenset(required), relevant_docs=frozenset(docs),
        tool_calls=_tool_calls(where, rec), payload=payload,
    )


class CodeDomain(Domain):
    """Python function and class tasks (HarnessCode-v0).

    :param data_dir: folder holding ``tasks.jsonl`` and ``corpus.jsonl`` (default ``envs_data/code``)
    """

    name = "code"
    uses_sandbox = True
    tool_needs_draft = True

    def __init__(self, data_dir: str | Path | None = None) -> None:
        super().__init__()
        root = Path(data_dir) if data_dir is not None else data_path("code")
        self.corpus = read_documents(root / "corpus.jsonl")
        doc_ids = {d.doc_id for d in self.corpus}
        path = root / "tasks.jsonl"
        self.add_tasks([read_task(path, line, rec, doc_ids) for line, rec in read_jsonl(path)])
        self.tools = {RUN_EXAMPLE.name: RUN_EXAMPLE}

    @staticmethod
    def _box(sandbox: Sandbox | None) -> Sandbox:
        if sandbox is None:
            raise RuntimeError("the code domain runs drafts and needs a sandbox")
        return sandbox

    def _run_tests(self, script: str, tests: tuple[TestCase, ...], draft: Draft, sandbox: Sandbox | None) -> RunReport:
        result = self._box(sandbox).run(script, files={SOLUTION_FILE: draft.content}, timeout_s=JOB_TIMEOUT_S)
        return parse_tests(result, len(tests))

    def call_tool(self, task: Task, call: ToolCall, ctx: Context, sandbox: Sandbox | None) -> ToolResult:
        if ctx.draft is None:
            return ToolResult(ok=False, output="", error="run_example needs a draft to run")
        expr = call.args["call"]
        result = self._box(sandbox).run(CALL_SCRIPT, files={SOLUTION_FILE: ctx.draft.content, CALL_FILE: expr},
                                        timeout_s=JOB_TIMEOUT_S)
        ok, text = parse_call(result)
        if ok:
            return ToolResult(ok=True, output=f"{expr} -> {text}", ran_code=True)
        return ToolResult(ok=False, output="", error=f"{expr} -> {text}", ran_code=True)

    def check(self, task: Task, draft: Draft, sandbox: Sandbox | None) -> CheckResult:
        """Run the visible tests; the feedback names the first failing case."""
        payload: CodePayload = task.payload
        report = self._run_tests(payload.check_script, payload.visible, draft, sandbox)
        if report.error_kind == "load":
            return CheckResult(False, f"{SOLUTION_FILE} failed to load: {report.error}", SPECIFICITY["load"])
        if report.error_kind:
            return CheckResult(False, report.error, SPECIFICITY[report.error_kind])
        failed = [(t, o) for t, o in zip(payload.visible, report.outcomes) if not o.passed]
        n = len(payload.visible)
        if not failed:
            return CheckResult(True, f"all {n} visible tests passed", 1.0)
        test, outcome = failed[0]
        if outcome.kind == "returned":
            what = f"{test.expr} returned {outcome.detail}; expected {test.describe_expected()}"
        elif outcome.kind == "raised":
            what = f"{test.expr} raised {outcome.detail}; expected {test.describe_expected()}"
        else:
            what = f"{test.expr} did not finish within {TEST_CPU_LIMIT_S:g} s of CPU time"
        return CheckResult(False, f"{len(failed)} of {n} visible tests failed; first: {what}",
                           SPECIFICITY[outcome.kind])

    def grade(self, task: Task, draft: Draft, sandbox: Sandbox | None) -> float:
        """The fraction of hidden tests passed (0 when the draft does not load or the job fails)."""
        payload: CodePayload = task.payload
        report = self._run_tests(payload.grade_script, payload.hidden, draft, sandbox)
        if report.error_kind:
            return 0.0
        return report.n_passed / len(payload.hidden)

    def knowledge_signal(self, task: Task, ctx: Context, call: ToolCall | None = None) -> float:
        """Tool calls: schema-valid or not; drafts: +1 when the draft parses and defines the spec's name."""
        if call is not None or ctx.draft is None:
            return super().knowledge_signal(task, ctx, call)
        return 1.0 if defines(ctx.draft.content, task.payload.function) else -1.0


@lru_cache(maxsize=8)
def load_code_domain(data_dir: str | None = None) -> CodeDomain:
    """The code domain, loaded and indexed once per data folder (shared by vectorised envs)."""
    domain = CodeDomain(data_dir)
    for split in SPLITS:
        for task in domain.tasks(split):
            domain.index.ranking(domain.query(task))  # rank now, so that RETRIEVE is a cache hit
    return domain
