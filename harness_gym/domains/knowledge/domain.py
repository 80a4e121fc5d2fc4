"""The knowledge-work domain: compile a cited, typed record about a fictional entity from dated sources.

Data: ``envs_data/knowledge/sources.jsonl`` (the corpus: dated source documents about task entities and
confusable sibling entities) and ``tasks.jsonl`` (one record task per line), written by
:mod:`harness_gym.domains.knowledge.generate`. The checker and grader are in :mod:`.checker` and :mod:`.grader`.

The task mix (records from one source beside records from several conflicting, dated sources) is documented in
:mod:`harness_gym.domains.knowledge.generate`. The harness signals read the prompt
(:func:`~harness_gym.domains.knowledge.datamodel.parse_record_prompt`): the entity and the period it names, the
fields it asks for. The tools and the disambiguation note stand for the operator's document store, an internal
service (``api_call:internal`` per request).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path

from harness_gym.core.domain import Domain
from harness_gym.core.paths import data_path
from harness_gym.core.sandbox import Sandbox
from harness_gym.core.taskfile import TaskFileError, parse_task, read_jsonl
from harness_gym.core.types import CheckResult, Context, Document, Draft, Task, ToolCall, ToolResult
from harness_gym.domains.knowledge.checker import RecordChecker
from harness_gym.domains.knowledge.datamodel import (
    RecordRequest,
    RecordSpec,
    Source,
    SourceIndex,
    parse_record,
    parse_record_prompt,
    read_gold,
)
from harness_gym.domains.knowledge.grader import grade_record
from harness_gym.domains.knowledge.tools import TOOLS, Library

_DOC_ID = re.compile(r"kn-s[0-9]{4}")


@lru_cache(maxsize=4096)
def _named_sources(output: str) -> tuple[str, ...]:
    """The source ids a tool output names (a draft's knowledge signal reads every earlier output again)."""
    return tuple(_DOC_ID.findall(output))


class KnowledgeDomain(Domain):
    """Structured records from conflicting, stale sources; checker = schema + citations, grader = field accuracy.

    :param data_dir: folder with ``sources.jsonl`` and ``tasks.jsonl`` (default ``envs_data/knowledge``)
    """

    name = "knowledge"
    uses_sandbox = False
    tool_needs_draft = False
    hidden_payload_keys = frozenset({"gold"})
    """The gold record the grader compares with (the payload's ``spec`` is what the prompt and schema show)."""
    DISAMBIGUATION_OBSERVATION = 2
    """The note naming the confusable sibling entity: a lookup in the document store's entity index."""

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
        self._requests: dict[str, RecordRequest | None] = {}
        task_path = root / "tasks.jsonl"
        tasks = []
        for line, rec in read_jsonl(task_path):
            spec = RecordSpec.from_json(rec, path=task_path, line=line)
            gold = read_gold(rec, spec, path=task_path, line=line)
            task = parse_task(rec, path=task_path, line=line, payload={"spec": spec, "gold": gold})
            request = parse_record_prompt(task.prompt)
            if request is None or request.entity != spec.entity or request.fields != tuple(f for f, _, _ in spec.fields):
                raise TaskFileError(task_path, "the prompt does not ask for the record's entity and fields (see "
                                    "datamodel.record_prompt)", line=line, task_id=task.task_id, field="prompt")
            unknown = sorted(task.relevant_docs - self.sources.sources.keys())
            if unknown:
                raise TaskFileError(task_path, f"unknown doc ids {unknown}", line=line, task_id=task.task_id,
                                    field="relevant_docs")
            tasks.append(task)
        self.add_tasks(tasks)

    # ----- signals the harness holds --------------------------------------------------------------------
    def request(self, task: Task) -> RecordRequest | None:
        """What the task's prompt asks for (memoised; ``None`` for a prompt in another format, e.g. a task built in
        code).

        :param task: the task
        """
        if task.task_id not in self._requests:
            self._requests[task.task_id] = parse_record_prompt(task.prompt)
        return self._requests[task.task_id]

    def task_keys(self, task: Task) -> tuple[str, ...]:
        """The entity the prompt names and the year of the period it names, if any (lower-cased)."""
        request = self.request(task)
        if request is None:
            return super().task_keys(task)
        return (request.entity.lower(),) + ((str(request.year),) if request.year is not None else ())

    def n_visible_checks(self, task: Task) -> int:
        """The checker's validations: the record's envelope and one per field the prompt asks for."""
        request = self.request(task)
        return 0 if request is None else 1 + len(request.fields)

    def tool_answers(self, task: Task, call: ToolCall, result: ToolResult) -> bool:
        """A successful ``get_field_history`` answers when it is about the prompt's entity and one of its fields;
        a search hit list or a source answers when it names the prompt's entity (a sibling's does not)."""
        request = self.request(task)
        if request is None:
            return super().tool_answers(task, call, result)
        if not result.ok:
            return False
        if call.name == "get_field_history":
            return call.args.get("entity") == request.entity and call.args.get("field") in request.fields
        return request.entity.lower() in result.output.lower()

    def observe_bill(self, task: Task, index: int) -> Mapping[str, float]:
        """The schema and the field rules come with the task (free); the disambiguation note is a lookup in the
        document store's entity index (``api_call:internal``)."""
        return {"api_call:internal": 1} if index == self.DISAMBIGUATION_OBSERVATION else {}

    # ----- tools -------------------------------------------------------------------------------------
    def call_tool(self, task: Task, call: ToolCall, ctx: Context, sandbox: Sandbox | None,
                  *, resource: None = None) -> ToolResult:
        return TOOLS.call(call.name, self.library, **call.args)

    # ----- checker / grader --------------------------------------------------------------------------
    def check(self, task: Task, draft: Draft, sandbox: Sandbox | None, *, resource: None = None) -> CheckResult:
        return self.checker.check(task.payload["spec"], draft.content)

    def grade(self, task: Task, draft: Draft, sandbox: Sandbox | None, *, resource: None = None) -> float:
        return grade_record(self.sources, task.payload["spec"], task.payload["gold"], draft.content)

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
                seen.update(_named_sources(result.output))
        for field, value in values.items():
            doc = cites.get(field)
            if doc not in seen or not self.sources.states(doc, value):
                return -1.0
        return 1.0


@lru_cache(maxsize=8)
def load_knowledge_domain(data_dir: str | None = None) -> KnowledgeDomain:
    """The knowledge domain, loaded and indexed once per data folder."""
    return KnowledgeDomain(data_dir)
