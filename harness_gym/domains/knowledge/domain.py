"""The knowledge-work domain: compile a cited, typed record about a fictional entity from dated sources.

Data: ``envs_data/knowledge/sources.jsonl`` (the corpus: dated source documents about task entities and
confusable sibling entities) and ``tasks.jsonl`` (one record task per line), written by
:mod:`harness_gym.domains.knowledge.generate`. The checker and grader are in :mod:`.checker` and :mod:`.grader`.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from harness_gym.core.domain import Domain
from harness_gym.core.sandbox import Sandbox
from harness_gym.core.taskfile import TaskFileError, parse_task, read_jsonl
from harness_gym.core.types import CheckResult, Context, Document, Draft, Task, ToolCall, ToolResult
from harness_gym.domains.knowledge.checker import RecordChecker
from harness_gym.domains.knowledge.datamodel import RecordSpec, Source, SourceIndex, parse_record
from harness_gym.domains.knowledge.grader import grade_record
from harness_gym.domains.knowledge.tools import TOOLS, Library
from harness_gym.paths import data_path

_DOC_ID = re.compile(r"kn-s[0-9]{4}")

class KnowledgeDomain(Domain):
    """Structured records from conflicting, stale sources; checker = schema + citations, grader = field accuracy.

    :param data_dir: folder with ``sources.jsonl`` and ``tasks.jsonl`` (default ``envs_data/knowledge``)
    """

    name = "knowledge"
    uses_sandbox = False
    tool_needs_draft = False

    def __init__(self, data_dir: str | Path | None = None) -> None:
        super().__init__()
        root = Path(data_dir) if data_dir is not None else data_path("knowledge")
        src_path = root / "sources.jsonl"
        sources = [Source.from_json(rec, path=src_path, line=line) for line, rec in read_jsonl(src_path)]
        self.sources = SourceIndex(sources)
        self.checker = RecordChecker(self.sources)
        self.corpus = [Document(s.doc_id, s.title, s.text) for s in sources]
        self.library = Library(self.sources, self.corpus, self.index)
        self.tools = TOOLS.specs
        task_path = root / "tasks.jsonl"
        tasks = []
        for line, rec in read_jsonl(task_path):
            spec = RecordSpec.from_json(rec, path=task_path, line=line)
            task = parse_task(rec, path=task_path, line=line, payload=spec)
            unknown = sorted(task.relevant_docs - self.sources.sources.keys())
            if unknown:
                raise TaskFileError(task_path, f"unknown doc ids {unknown}", line=line, task_id=task.task_id,
                                    field="relevant_docs")
            tasks.append(task)
        self.add_tasks(tasks)

    # ----- tools -------------------------------------------------------------------------------------
    def call_tool(self, task: Task, call: ToolCall, ctx: Context, sandbox: Sandbox | None,
                  *, resource: None = None) -> ToolResult:
        return TOOLS.implementation(call.name)(self.library, **call.args)

    # ----- checker / grader --------------------------------------------------------------------------
    def check(self, task: Task, draft: Draft, sandbox: Sandbox | None, *, resource: None = None) -> CheckResult:
        return self.checker.check(task.payload, draft.content)

    def grade(self, task: Task, draft: Draft, sandbox: Sandbox | None, *, resource: None = None) -> float:
        return grade_record(self.sources, task.payload, draft.content)

    def knowledge_signal(self, task: Task, ctx: Context, call: ToolCall | None = None) -> float:
        """Tool calls: schema validity. Drafts: +1 when every field cites a source the harness has actually
        seen (retrieved, looked up or listed in a field history) that states the value, -1 otherwise."""
        if call is not None:
            return super().knowledge_signal(task, ctx, call)
        if ctx.draft is None:
            return 0.0
        rec = parse_record(ctx.draft.content)
        values, cites = (rec or {}).get("values"), (rec or {}).get("citations")
        if not isinstance(values, dict) or not isinstance(cites, dict):
            return -1.0
        seen = set(ctx.retrieved)
        for _, result in ctx.tool_history:
            if result.ok:
                seen.update(_DOC_ID.findall(result.output))
        for field, value in values.items():
            doc = cites.get(field)
            if doc not in seen or not self.sources.states(doc, value):
                return -1.0
        return 1.0


@lru_cache(maxsize=8)
def load_knowledge_domain(data_dir: str | None = None) -> KnowledgeDomain:
    """The knowledge domain, loaded and indexed once per data folder."""
    return KnowledgeDomain(data_dir)
