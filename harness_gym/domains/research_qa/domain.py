"""The research-QA domain: multi-hop questions over the encyclopedia of a generated fictional world.

Data: ``envs_data/research_qa/articles.jsonl`` (one encyclopedia article per entity, with its relations and
attributes: the world graph the tools query) and ``tasks.jsonl``, written by
:mod:`harness_gym.domains.research_qa.generate`. There is no structured verifier (and no ``checker.py``): the
domain keeps :meth:`~harness_gym.core.domain.Domain.check`, which returns ``None``, so CHECK is the worker's
own noisy self-check (no visible checks: :meth:`~harness_gym.core.domain.Domain.n_visible_checks` stays 0).

The task mix (reading-comprehension questions with their passage beside 1- to 3-hop questions) is documented in
:mod:`harness_gym.domains.research_qa.generate`; :class:`~harness_gym.domains.research_qa.questions.QuestionParser`
reads a prompt's visible structure back, and the harness signals (:meth:`ResearchQADomain.task_keys`,
:meth:`ResearchQADomain.tool_answers`) come from that parse. The two tools stand for a public knowledge-graph API
(Wikidata's REST API and query service charge nothing): each call bills ``api_call:free``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from harness_gym.core.domain import Domain, Retrieved
from harness_gym.core.paths import data_path
from harness_gym.core.retrieval import tokenize
from harness_gym.core.sandbox import Sandbox
from harness_gym.core.taskfile import TaskFileError, parse_task, read_jsonl, require
from harness_gym.core.types import Context, Document, Draft, Task, ToolCall, ToolResult
from harness_gym.domains.fictional_world import normalize_answer
from harness_gym.domains.research_qa.grader import answer_quality
from harness_gym.domains.research_qa.questions import ParsedQuestion, QuestionParser, read_templates
from harness_gym.domains.research_qa.tools import TOOLS, Encyclopedia

STOPWORDS = frozenset(["a", "an", "the", "of", "in", "on", "at", "to", "for", "by", "is", "was", "were", "who", "what", "which", "where", "when", "whose", "did", "does", "do", "that", "this", "with", "and", "or", "its", "it", "as", "from", "has", "have"])
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


@cache
def _content_tokens(text: str) -> frozenset[str]:
    return frozenset(tokenize(text)) - STOPWORDS


class ResearchQADomain(Domain):
    """Reading-comprehension and multi-hop QA over a fictional encyclopedia; CHECK is a self-check, the grader is
    max(EM, token F1).

    :param data_dir: folder with ``articles.jsonl`` and ``tasks.jsonl`` (default ``envs_data/research_qa``)
    """

    name = "research_qa"
    uses_sandbox = False
    tool_needs_draft = False
    hidden_payload_keys = frozenset({"answer"})
    """The gold answer the grader compares with."""
    VOCABULARY_OBSERVATION = 1
    """The observation listing the graph's relations: the knowledge graph's schema, read from its (free) API."""

    def __init__(self, data_dir: str | Path | None = None) -> None:
        super().__init__()
        root = Path(data_dir) if data_dir is not None else data_path("research_qa")
        art_path = root / "articles.jsonl"
        self.facts: dict[str, dict[str, Any]] = {}
        self.kinds: dict[str, str] = {}
        self._sentences: dict[str, tuple[tuple[frozenset[str], str], ...]] = {}
        self._normalized: dict[str, str] = {}
        self._title_tokens: dict[str, frozenset[str]] = {}
        for line, rec in read_jsonl(art_path):
            doc_id = require(rec, "doc_id", str, path=art_path, line=line)
            get = {"path": art_path, "line": line, "task_id": doc_id}
            title, text = require(rec, "title", str, **get), require(rec, "text", str, **get)
            self.corpus.append(Document(doc_id, title, text))
            self.kinds[title] = require(rec, "kind", str, **get)
            self.facts[title] = {**require(rec, "relations", dict, **get), **require(rec, "attributes", dict, **get)}
            self._title_tokens[doc_id] = own = _content_tokens(title)
            self._normalized[doc_id] = f" {normalize_answer(text)} "
            self._sentences[doc_id] = tuple((_content_tokens(s) - own, s) for s in _SENTENCE.split(text))
        self.tools = TOOLS.specs
        self.encyclopedia = Encyclopedia(self.facts, self.kinds)
        task_path = root / "tasks.jsonl"
        doc_ids = {d.doc_id for d in self.corpus}
        tasks = []
        for line, rec in read_jsonl(task_path):
            task_id = require(rec, "task_id", str, path=task_path, line=line)
            answer = require(rec, "answer", str, path=task_path, line=line, task_id=task_id)
            task = parse_task(rec, path=task_path, line=line, payload={"answer": answer})
            unknown = sorted(task.relevant_docs - doc_ids)
            if unknown:
                raise TaskFileError(task_path, f"unknown doc ids {unknown}", line=line, task_id=task_id,
                                    field="relevant_docs")
            tasks.append(task)
        self.add_tasks(tasks)
        in_dist, out_dist = read_templates()
        self.parser = QuestionParser(in_dist + out_dist, frozenset(self.facts))
        self._parsed: dict[str, ParsedQuestion] = {}
        for task in tasks:
            if self.parsed(task) is None:
                raise TaskFileError(task_path, "the prompt follows no question template of sources/questions.json "
                                    "about an entity of the encyclopedia", line=task.source[1] if task.source else None,
                                    task_id=task.task_id, field="prompt")

    # ----- the prompt's visible structure -------------------------------------------------------------
    def parsed(self, task: Task) -> ParsedQuestion | None:
        """The question the task's prompt asks, its passage and template (memoised; ``None`` for a prompt that
        follows no template, e.g. a task built in code).

        :param task: the task
        """
        if task.task_id not in self._parsed:
            got = self.parser.parse(task.prompt)
            if got is None:
                return None
            self._parsed[task.task_id] = got
        return self._parsed[task.task_id]

    def query(self, task: Task) -> str:
        """The retrieval query: the question, without the passage that came with it."""
        got = self.parsed(task)
        return got.question if got is not None else task.prompt

    def task_keys(self, task: Task) -> tuple[str, ...]:
        """The entity the question names (lower-cased), unless the passage handed over with it already holds it: what
        a harness still has to find in the text it gathers. A passage question therefore has none."""
        got = self.parsed(task)
        if got is None:
            return super().task_keys(task)
        return () if got.start in got.passage else (got.start.lower(),)

    def tool_answers(self, task: Task, call: ToolCall, result: ToolResult) -> bool:
        """Whether a successful call asks what the question asks: ``query_relation`` of a relation the question
        chains (of the start entity when it is the question's first relation), ``lookup_entity`` of the start
        entity or of an entity whose infobox records a relation the question chains. Other calls, failed calls and
        prompts that follow no template answer nothing."""
        got = self.parsed(task)
        if not result.ok or got is None:
            return False
        path = got.template.path
        if call.name == "query_relation":
            relation, entity = call.args.get("relation"), call.args.get("entity")
            return relation in path and (relation != path[0] or entity == got.start or relation in path[1:])
        if call.name == "lookup_entity":
            name = call.args.get("name")
            return name == got.start or any(rel in self.facts.get(str(name), {}) for rel in path[1:])
        return False

    def observe_bill(self, task: Task, index: int) -> Mapping[str, float]:
        """The answer format comes with the task (free); the relation vocabulary is the knowledge graph's schema,
        one request to its public API (``api_call:free``)."""
        return {"api_call:free": 1} if index == self.VOCABULARY_OBSERVATION else {}

    # ----- RETRIEVE: multi-hop query expansion -------------------------------------------------------
    def expanded_query(self, task: Task, retrieved: list[str]) -> str:
        """The retrieval query after the articles ``retrieved`` so far: the question's content words minus the
        names already followed, plus the bridge names: from each retrieved article, the new words of the
        sentence sharing most content words with the question (sentences pointing back at an article already
        retrieved are skipped)."""
        question = self.query(task)
        if not retrieved:
            return question
        followed = [self._title_tokens[d] for d in retrieved]
        words = _content_tokens(question).difference(*followed)
        terms = sorted(words)
        for doc_id in retrieved:
            best, bridge = 0, frozenset[str]()
            for toks, _ in self._sentences[doc_id]:
                overlap = len(toks & words)
                if overlap > best and not any(t <= toks for t in followed if t != self._title_tokens[doc_id]):
                    best, bridge = overlap, toks - words
            terms += sorted(bridge)
        return " ".join(terms)

    def retrieve(self, task: Task, ctx: Context) -> Retrieved | None:
        return self.best_unseen(self.expanded_query(task, ctx.retrieved), ctx)

    # ----- tools -------------------------------------------------------------------------------------
    def call_tool(self, task: Task, call: ToolCall, ctx: Context, sandbox: Sandbox | None,
                  *, resource: None = None) -> ToolResult:
        return TOOLS.call(call.name, self.encyclopedia, **call.args)

    # ----- CHECK / SUBMIT ----------------------------------------------------------------------------
    def grade(self, task: Task, draft: Draft, sandbox: Sandbox | None, *, resource: None = None) -> float:
        return answer_quality(draft.content, task.payload["answer"])

    def knowledge_signal(self, task: Task, ctx: Context, call: ToolCall | None = None) -> float:
        """Tool calls: schema validity. Drafts: +1 when the answer occurs in the passage the task came with, a
        retrieved article or a tool result, -1 when the harness holds such text and the answer occurs in none of it,
        0 otherwise."""
        if call is not None:
            return super().knowledge_signal(task, ctx, call)
        if ctx.draft is None:
            return 0.0
        got = self.parsed(task)
        texts = [f" {normalize_answer(got.passage)} "] if got is not None and got.passage else []
        texts += [self._normalized[d] for d in ctx.retrieved]
        texts += [f" {normalize_answer(res.output)} " for _, res in ctx.tool_history if res.ok]
        if not texts:
            return 0.0
        answer = normalize_answer(ctx.draft.content)
        return 1.0 if answer and any(f" {answer} " in t for t in texts) else -1.0


@lru_cache(maxsize=8)
def load_research_qa_domain(data_dir: str | None = None) -> ResearchQADomain:
    """The research-QA domain, loaded and indexed once per data folder."""
    return ResearchQADomain(data_dir)
