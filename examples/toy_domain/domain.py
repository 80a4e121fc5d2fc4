"""The toy Domain: reads its data files and hands TOOL, CHECK and SUBMIT to ``tools``, ``checker`` and
``grader``. OBSERVE and RETRIEVE need nothing here: the base class reveals ``observations`` in order and ranks
``corpus.jsonl`` with BM25."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from examples.toy_domain import checker, grader, tools
from harness_gym.core.domain import Domain
from harness_gym.core.sandbox import Sandbox
from harness_gym.core.taskfile import TaskFileError, parse_task, read_documents, read_jsonl, require
from harness_gym.core.types import CheckResult, Context, Draft, Task, ToolCall, ToolResult

HERE = Path(__file__).resolve().parent


class ToyDomain(Domain):
    """Tasks "add a and b" from ``tasks.jsonl``; each record's ``operands`` field is the task's payload.

    :param root: the folder holding ``tasks.jsonl`` and ``corpus.jsonl``
    """

    name = "toy"
    assets_dir = HERE
    """``profiles/toy.json`` and ``prompts/toy.json`` are in this folder (its tasks, written by hand, too)."""

    def __init__(self, root: Path = HERE) -> None:
        super().__init__()
        self.tools = tools.TOOLS.specs
        self.corpus = read_documents(root / "corpus.jsonl")
        path = root / "tasks.jsonl"
        tasks = []
        for line, rec in read_jsonl(path):
            operands = require(rec, "operands", list, path=path, line=line, task_id=rec.get("task_id"))
            if len(operands) != 2 or not all(type(x) is int for x in operands):
                raise TaskFileError(path, f"expected two integers, got {operands!r}", line=line,
                                    task_id=rec.get("task_id"), field="operands")
            tasks.append(parse_task(rec, path=path, line=line, payload=tuple(operands)))
        self.add_tasks(tasks)

    def call_tool(self, task: Task, call: ToolCall, ctx: Context, sandbox: Sandbox | None,
                  *, resource: None = None) -> ToolResult:
        return tools.TOOLS.call(call.name, **call.args)

    def check(self, task: Task, draft: Draft, sandbox: Sandbox | None, *, resource: None = None) -> CheckResult:
        return checker.check(task.payload, draft.content)

    def grade(self, task: Task, draft: Draft, sandbox: Sandbox | None, *, resource: None = None) -> float:
        return grader.grade(task.payload, draft.content)


@lru_cache(maxsize=8)
def load_toy_domain(root: str | None = None) -> ToyDomain:
    """The toy domain over ``root`` (default: this folder), loaded once per folder and shared by every env.

    :param root: a folder with ``tasks.jsonl`` and ``corpus.jsonl``
    """
    return ToyDomain(Path(root) if root is not None else HERE)
