"""CodeDomain: Python function tasks checked by visible tests and graded by hidden tests in the sandbox.

Data (``envs_data/code/``, written by :mod:`harness_gym.domains.code.generate`):

- ``tasks.jsonl``: one task per line with ``task_id``, ``family``, ``problem``, ``split``, ``difficulty``,
  ``function`` (the name the spec asks for), ``kind`` (``function`` or ``class``), ``prompt``,
  ``observations``, ``required_observations``, ``relevant_docs``, ``tool_calls``, ``visible_tests`` (what
  CHECK runs), ``hidden_tests`` (what SUBMIT runs: the visible cases first, then the hidden ones) and
  ``candidates`` (the reference and AST mutants, with the checker/grader outcome measured at generation time
  for reporting; grading always runs the code again);
- ``corpus.jsonl``: the documents RETRIEVE ranks.

Every test row is ``{"call": EXPR, "expect": REPR}`` or ``{"call": EXPR, "raises": EXCEPTION_NAME}``; ``REPR``
must be a plain literal (:func:`~harness_gym.domains.code.sandbox_jobs.decode_literal`). The checker and
the grader send only the calls into the sandbox and compare the returned values on the host.
"""

from __future__ import annotations

import ast
import dataclasses
from functools import lru_cache
from pathlib import Path
from typing import Any

from harness_gym.core.bounds import InputLimitError, parse_source
from harness_gym.core.domain import Domain
from harness_gym.core.taskfile import TaskFileError, parse_task, read_documents, read_jsonl, require
from harness_gym.core.types import SPLITS, CheckResult, Context, Draft, Task, ToolCall, ToolResult
from harness_gym.domains.code.checker import check_draft
from harness_gym.domains.code.grader import grade_draft
from harness_gym.domains.code.sandbox_jobs import CodePayload, TestCase, decode_literal
from harness_gym.domains.code.tools import TOOLS
from harness_gym.paths import data_path
from harness_gym.sandbox.base import Sandbox


def defines(source: str, name: str) -> bool:
    """Whether ``source`` parses (within :func:`~harness_gym.core.bounds.parse_source`'s bounds) and binds ``name``
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


def _tests(rec: dict[str, Any], key: str, where: dict[str, Any]) -> tuple[TestCase, ...]:
    """The test rows of ``rec[key]``; errors name the row (``hidden_tests[2].call``)."""
    rows = require(rec, key, list, **where)
    if not rows:
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
    visible, hidden = _tests(rec, "visible_tests", where), _tests(rec, "hidden_tests", where)
    payload = CodePayload(function=require(rec, "function", str, **where), kind=kind, visible=visible,
                          hidden=hidden)
    return dataclasses.replace(task, payload=payload)


class CodeDomain(Domain):
    """Python function and class tasks (HarnessCode-v0).

    :param data_dir: folder holding ``tasks.jsonl`` and ``corpus.jsonl`` (default ``envs_data/code``)
    """

    name = "code"
    uses_sandbox = True
    tool_needs_draft = True
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

    @staticmethod
    def _box(sandbox: Sandbox | None) -> Sandbox:
        if sandbox is None:
            raise RuntimeError("the code domain runs drafts and needs a sandbox")
        return sandbox

    def call_tool(self, task: Task, call: ToolCall, ctx: Context, sandbox: Sandbox | None) -> ToolResult:
        if ctx.draft is None:
            return ToolResult(ok=False, output="", error=f"{call.name} needs a draft to run")
        return TOOLS.implementation(call.name)(self._box(sandbox), ctx.draft.content, **call.args)

    def check(self, task: Task, draft: Draft, sandbox: Sandbox | None) -> CheckResult:
        """Run the visible tests; the feedback names the first failing case."""
        return check_draft(task.payload, draft, self._box(sandbox))

    def grade(self, task: Task, draft: Draft, sandbox: Sandbox | None) -> float:
        """The fraction of hidden tests passed (0 when the draft does not load or the job fails)."""
        return grade_draft(task.payload, draft, self._box(sandbox))

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
