"""CodeDomain: Python function tasks checked by visible tests and graded by hidden tests in the sandbox.

Data (``envs_data/code/``, written by :mod:`harness_gym.domains.code.generate`):

- ``tasks.jsonl``: one task per line with ``task_id``, ``family``, ``problem``, ``split``, ``difficulty``,
  ``function`` (the name the spec asks for), ``kind`` (``function`` or ``class``), ``prompt`` (the statement,
  the edge-case clauses where the task states them, and the visible tests as examples), ``observations``,
  ``required_observations``, ``relevant_docs``, ``tool_calls``, ``visible_tests`` (what CHECK runs; possibly
  none), ``hidden_tests`` (what SUBMIT runs: the visible cases first, then the hidden ones), ``mix`` (the
  task's place in the task mix, for reporting) and ``candidates`` (the reference and AST mutants, with the
  checker/grader outcome measured at generation time for reporting; grading always runs the code again);
- ``corpus.jsonl``: the documents RETRIEVE ranks.

Every test row is ``{"call": EXPR, "expect": REPR}`` or ``{"call": EXPR, "raises": EXCEPTION_NAME}``; ``REPR``
must be a plain literal (:func:`~harness_gym.domains.code.sandbox_jobs.decode_literal`). The checker and
the grader send only the calls into the sandbox and compare the returned values on the host.

What the actions cost in a deployed harness (docs/cost.md): OBSERVE reads one spec detail (an edge-case
clause or a worked example) from the team's requirements or ticket service, one ``api_call:internal`` (an
internal service behind an API gateway); ``run_example`` and CHECK run the draft in the sandbox and are billed
through their sandbox jobs only; SUBMIT's hidden tests are evaluation and cost nothing.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from harness_gym.core.domain import Domain
from harness_gym.core.intake import InputLimitError, parse_source
from harness_gym.core.paths import data_path
from harness_gym.core.sandbox import Sandbox
from harness_gym.core.taskfile import TaskFileError, parse_task, read_documents, read_jsonl, require
from harness_gym.core.types import SPLITS, CheckResult, Context, Draft, Task, ToolCall, ToolResult
from harness_gym.domains.code.checker import check_draft
from harness_gym.domains.code.grader import grade_draft
from harness_gym.domains.code.sandbox_jobs import (
    HARNESS_PRELOAD,
    CodePayload,
    TestCase,
    decode_literal,
    expected_value,
    same,
)
from harness_gym.domains.code.tools import TOOLS


def defines(source: str, name: str) -> bool:
    """Whether ``source`` parses (within :func:`~harness_gym.core.intake.parse_source`'s bounds) and binds ``name``
    at module level (a def, a class or an assignment)."""
    return _defines_cached(source, name) if len(source) <= 16384 else _defines(source, name)


def _defines(source: str, name: str) -> bool:
    try:
        tree = parse_source(source)
    except (SyntaxError, InputLimitError):
        return False
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            return True
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return True
    return False


_defines_cached = lru_cache(maxsize=4096)(_defines)
"""Answers for drafts of at most 16 KiB are cached (at most 4096 of them, so at most 64 MiB of keys)."""


def _tests(rec: dict[str, Any], key: str, where: dict[str, Any], *, allow_none: bool = False) -> tuple[TestCase, ...]:
    """The test rows of ``rec[key]``; errors name the row (``hidden_tests[2].call``).

    :param allow_none: whether the list may be empty (a task without visible tests)
    """
    rows = require(rec, key, list, **where)
    if not rows and not allow_none:
        raise TaskFileError(message="needs at least one test", field=key, **where)
    out = []
    for i, row in enumerate(rows):
        label = f"{key}[{i}]"
        row = require({label: row}, label, dict, **where)
        fields = {f"{label}.{k}": v for k, v in row.items()}
        expr = require(fields, f"{label}.call", str, **where)
        if ("expect" in row) == ("raises" in row):
            raise TaskFileError(message="needs exactly one of 'expect' and 'raises'", field=label, **where)
        if "expect" in row:
            expect = require(fields, f"{label}.expect", str, **where)
            try:
                decode_literal(expect)
            except ValueError as exc:
                raise TaskFileError(message=f"{expect[:60]!r} is not a plain Python literal ({exc})",
                                    field=f"{label}.expect", **where) from None
            out.append(TestCase(expr, expect=expect))
        else:
            out.append(TestCase(expr, raises=require(fields, f"{label}.raises", str, **where)))
    return tuple(out)


def read_task(path: Path, line: int, rec: dict[str, Any], doc_ids: set[str]) -> Task:
    """One task of ``tasks.jsonl``, validated; errors name the file, line, task id and field.

    :param path: the task file
    :param line: the record's line number
    :param rec: the record
    :param doc_ids: the corpus's document ids (``relevant_docs`` must name some of them)
    """
    task = parse_task(rec, path=path, line=line)
    where = {"path": path, "line": line, "task_id": task.task_id}
    kind = require(rec, "kind", str, **where)
    if kind not in ("function", "class"):
        raise TaskFileError(message=f"expected 'function' or 'class', got {kind!r}", field="kind", **where)
    unknown = sorted(task.relevant_docs - doc_ids)
    if unknown:
        raise TaskFileError(message=f"unknown document ids {unknown}", field="relevant_docs", **where)
    visible, hidden = _tests(rec, "visible_tests", where, allow_none=True), _tests(rec, "hidden_tests", where)
    payload = CodePayload(function=require(rec, "function", str, **where), kind=kind, visible=visible,
                          hidden=hidden)
    return dataclasses.replace(task, payload=payload)


_NAMED = re.compile(r"`([A-Za-z_][\w.]*)`")
_SIGNATURE = re.compile(r"\b(?:def|class)\s+([A-Za-z_]\w*)\s*(?:\(([^)]*)\))?")


def prompt_keys(prompt: str) -> tuple[str, ...]:
    """The names a code prompt's statement gives (before its examples), lower-cased in order: the names in
    backticks, and every ``def``/``class`` name of the signature with its parameters (``self`` left out).

    :param prompt: the task's prompt
    """
    statement = prompt.split("\n\nExamples:\n", 1)[0]
    keys: dict[str, None] = {}
    for match in _NAMED.finditer(statement):
        keys.setdefault(match.group(1).lower(), None)
    for match in _SIGNATURE.finditer(statement):
        keys.setdefault(match.group(1).lower(), None)
        for param in (match.group(2) or "").split(","):
            name = param.split(":")[0].split("=")[0].strip().lstrip("*")
            if name and name != "self" and name.isidentifier():
                keys.setdefault(name.lower(), None)
    return tuple(keys)


class CodeDomain(Domain):
    """Python function and class tasks (HarnessCode-v1).

    :param data_dir: folder holding ``tasks.jsonl`` and ``corpus.jsonl`` (default ``envs_data/code``)
    """

    name = "code"
    uses_sandbox = True
    tool_needs_draft = True
    hidden_payload_keys = frozenset({"hidden"})
    """``CodePayload.hidden``: the grader's tests (the visible tests are the prompt's examples)."""
    sandbox_options = {"preload": HARNESS_PRELOAD}
    """The job server imports the modules the job harness needs (``ast``) once, not every job."""
    wrong_calls_per_call = 0
    """run_example runs the draft on the example the task states: another problem's example call names
    another function, so the worker has no well-formed wrong call to make here (only malformed ones)."""

    def __init__(self, data_dir: str | Path | None = None) -> None:
        super().__init__()
        root = Path(data_dir) if data_dir is not None else data_path("code")
        self.corpus = read_documents(root / "corpus.jsonl")
        doc_ids = {d.doc_id for d in self.corpus}
        path = root / "tasks.jsonl"
        self.add_tasks([read_task(path, line, rec, doc_ids) for line, rec in read_jsonl(path)])
        self.tools = TOOLS.specs
        self._keys: dict[str, tuple[str, ...]] = {}

    @staticmethod
    def _box(sandbox: Sandbox | None) -> Sandbox:
        if sandbox is None:
            raise RuntimeError("the code domain runs drafts and needs a sandbox")
        return sandbox

    def call_tool(self, task: Task, call: ToolCall, ctx: Context, sandbox: Sandbox | None,
                  *, resource: None = None) -> ToolResult:
        if ctx.draft is None:
            return ToolResult(ok=False, output="", error=f"{call.name} needs a draft to run")
        return TOOLS.call(call.name, self._box(sandbox), ctx.draft.content, **call.args)

    def check(self, task: Task, draft: Draft, sandbox: Sandbox | None, *, resource: None = None) -> CheckResult:
        """Run the visible tests; the feedback names the first failing case."""
        return check_draft(task.payload, draft, self._box(sandbox))

    def grade(self, task: Task, draft: Draft, sandbox: Sandbox | None, *, resource: None = None) -> float:
        """The fraction of hidden tests passed (0 when the draft does not load or the job fails)."""
        return grade_draft(task.payload, draft, self._box(sandbox))

    # ----- signals the harness holds ----------------------------------------------------------------
    def task_keys(self, task: Task) -> tuple[str, ...]:
        """The names the prompt's statement gives: the function or class, its parameters and methods, the
        names in backticks (:func:`prompt_keys`; memoised per task)."""
        got = self._keys.get(task.task_id)
        if got is None:
            got = self._keys[task.task_id] = prompt_keys(task.prompt)
        return got

    def n_visible_checks(self, task: Task) -> int:
        """The visible tests CHECK runs: the prompt's examples (0 when it shows none; CHECK then only loads
        the draft)."""
        return len(task.payload.visible)

    def tool_answers(self, task: Task, call: ToolCall, result: ToolResult) -> bool:
        """Whether ``run_example`` answered: the call ran the spec's function and returned a value, and where
        the call is one of the prompt's examples, the value the example states (a result that contradicts the
        prompt does not answer it)."""
        expr = call.args.get("call")
        if not result.ok or not isinstance(expr, str) or not re.search(rf"\b{re.escape(task.payload.function)}\b", expr):
            return False
        example = next((t for t in task.payload.visible if t.expr == expr.strip()), None)
        if example is None:
            return True
        if example.raises is not None:
            return False
        text = result.output.split(" -> ", 1)[-1].split("\n(printed: ", 1)[0]
        try:
            return same(decode_literal(text), expected_value(example.expect or ""))
        except ValueError:
            return False

    def observe_bill(self, task: Task, index: int) -> Mapping[str, float]:
        """One request to the team's requirements or ticket service per spec detail revealed."""
        return {"api_call:internal": 1}

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
            domain.index.ranked(domain.query(task))  # rank now, so that RETRIEVE is a cache hit
    return domain
