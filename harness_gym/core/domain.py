"""The Domain contract: what a task family supplies to the Harness MDP (docs/harness_mdp.md, "Domains").

A domain is data + tools + checker + grader. It knows nothing about the controller or the worker model:
the env asks it to serve OBSERVE, RETRIEVE, TOOL, CHECK and SUBMIT on the current context. A new domain:
docs/extending.md.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from itertools import chain
from pathlib import Path
from typing import Any, NamedTuple

from harness_gym.core.retrieval import BM25Index
from harness_gym.core.sandbox import Sandbox
from harness_gym.core.state import mentions
from harness_gym.core.taskfile import TaskFileError
from harness_gym.core.tool_calls import ToolSpec, validate_call
from harness_gym.core.types import SPLITS, CheckResult, Context, Document, Draft, Task, ToolCall, ToolResult


class Retrieved(NamedTuple):
    """What one RETRIEVE returns: the document and what the retriever's ranking says about it (scores a real
    retriever returns with its hits; true relevance stays hidden)."""

    document: Document
    looks_relevant: bool
    """the document's score is at least :attr:`Domain.relevant_looking_ratio` of the query's best score"""
    score_share: float
    """its score over the query's best score, in [0, 1] (1 for the best-ranked document)"""
    gap_share: float
    """its score minus the next unseen document's, over the query's best score, in [0, 1]"""
    query: str = ""
    """the query text the ranking answered (the env bills its tokens in the ``index`` retrieval mode)"""


HIDDEN_TASK_FIELDS: tuple[str, ...] = ("candidates", "relevant_docs", "required_observations", "tool_calls",
                                       "difficulty")
"""The :class:`~harness_gym.core.types.Task` fields the harness never sees (besides the domain's hidden payload
keys, :attr:`Domain.hidden_payload_keys`): what the simulated worker and the grader use."""
WHOLE_PAYLOAD = "*"
"""In :attr:`Domain.hidden_payload_keys`: the whole payload is hidden (e.g. a payload that is the gold answer)."""


def visible_task(task: Task, hidden_payload_keys: frozenset[str]) -> Task:
    """``task`` with every hidden field blanked: no candidates, relevant documents, required observations or
    evidence calls, a NaN difficulty, and the hidden payload keys removed (a mapping payload) or set to ``None``
    (a dataclass or named-tuple payload; :data:`WHOLE_PAYLOAD`: the payload itself). What a harness could know of
    the task; ``tests/test_signals.py`` recomputes every observation on it.

    :param task: the task
    :param hidden_payload_keys: the domain's :attr:`Domain.hidden_payload_keys`
    :raises TypeError: when keys are hidden in a payload of another kind
    """
    payload = task.payload
    keys = set(hidden_payload_keys)
    if WHOLE_PAYLOAD in keys:
        payload = None
    elif keys and isinstance(payload, Mapping):
        payload = {k: v for k, v in payload.items() if k not in keys}
    elif keys and dataclasses.is_dataclass(payload) and not isinstance(payload, type):
        payload = dataclasses.replace(payload, **dict.fromkeys(keys & {f.name for f in dataclasses.fields(payload)}))
    elif keys and hasattr(payload, "_replace"):
        payload = payload._replace(**dict.fromkeys(keys & set(payload._fields)))
    elif keys and payload is not None:
        raise TypeError(f"task {task.task_id}: hidden payload keys {sorted(keys)} given for a "
                        f"{type(payload).__name__} payload (a mapping, dataclass or named tuple, or '{WHOLE_PAYLOAD}')")
    return dataclasses.replace(task, candidates=(), relevant_docs=frozenset(), required_observations=frozenset(),
                               tool_calls=(), difficulty=math.nan, payload=payload)


_KEY_PATTERN = re.compile(r"\"([^\"]{2,60})\"|'([^']{2,60})'|\b((?:[A-Z][\w-]*)(?:\s+[A-Z][\w-]*)+)\b|\b(\w*\d[\w.:/-]*)\b")


def _next_values(values: list[Any], value: Any, count: int) -> list[Any]:
    """``[v for v in values[at + 1:] + values[:max(at, 0)] if v != value][:count]``, where ``at`` is the position of
    ``value`` in ``values`` (-1 when it is not there), without copying ``values``."""
    try:
        at = values.index(value)
    except ValueError:
        at = -1
    out: list[Any] = []
    if count <= 0:
        return out
    for i in chain(range(at + 1, len(values)), range(max(at, 0))):
        if values[i] != value:
            out.append(values[i])
            if len(out) == count:
                break
    return out


class Domain(ABC):
    """Base class of every domain.

    Subclasses set ``name`` and fill ``self._tasks`` (split -> tasks), ``self.corpus`` and ``self.tools`` in
    ``__init__``, then implement :meth:`call_tool`, :meth:`check` (or leave it returning ``None`` to make
    CHECK the worker's self-check) and :meth:`grade`.

    **Sharing.** A loaded domain is shared by every env built on the same data: the loaders
    (``load_*_domain``) are cached per data folder, so the envs of a vector env, or two ``gym.make`` calls,
    hold the same object. A domain therefore keeps no per-episode state: everything about an episode lives
    with the env (the :class:`~harness_gym.core.types.Context`, the state counters, the sandbox and the
    episode resource below). Read-only data and memo tables of pure functions of a task are fine.

    **Episode resource.** A domain that needs something live for one episode (e.g. a database loaded with the
    task's table) returns it from :meth:`begin_episode`; the env calls it at every ``reset``, keeps what it
    returns, and hands it to :meth:`end_episode` when the next episode starts or the env closes. The three
    hooks that act on the episode, :meth:`call_tool` (through :meth:`run_tool`), :meth:`check` and
    :meth:`grade`, always receive it as the keyword argument ``resource=``: ``None`` for a domain whose
    :meth:`begin_episode` returns ``None`` (the default), which then ignores it. A domain that has a resource
    works without it too (opening a short-lived one when ``resource`` is ``None``), so its hooks can be called
    outside an env.
    """

    name: str = ""
    """The domain's name: the file name of its worker profile and prompts in :attr:`assets_dir`."""
    assets_dir: str | Path | None = None
    """The folder of the domain's assets, laid out as harness_gym's ``envs_data``: the simulated worker's profiles
    (``profiles/<name>.json``, the ``-v1`` worker; ``profiles/v2/<name>.json`` for ``profile="v2"``), the prompts
    (``prompts/<name>.json``; ``prompts/defaults.json`` optional) and what the generator writes (``<name>/``).
    ``None``, the shipped domains' value, is ``envs_data`` itself; a domain outside the package names its own
    folder, so nothing is injected and nothing is written into the installed package."""
    uses_sandbox: bool = False
    """True when tools, checker or grader execute code (the env then opens a sandbox)."""
    sandbox_options: dict = {}
    """Extra keyword arguments for the sandbox the env opens (e.g. ``{"preload": ("pandas",)}``)."""
    tool_needs_draft: bool = False
    """True when TOOL operates on the current draft (e.g. runs it), so TOOL without a draft is a no-op."""
    follows_published_limits: bool = False
    """True for an adapter of a public benchmark (τ-bench retail, AgentBench DB-Bench): the published benchmark
    bounds an episode by its steps, not its cost, so ``budget_units="auto"`` sets no cost budget there
    (:mod:`harness_gym.budget.rule`)."""
    success_threshold: float = 1.0 - 1e-9
    """An episode counts as a success when its quality reaches this value."""
    check_false_alarm_rate: float = 0.0
    """Probability that CHECK reports a failure for a draft the checker passed: a flaky check (an external
    service that times out, a test that fails intermittently). The env draws it per CHECK from the episode's
    generator, whatever the draft's correctness. 0 where the check cannot have false alarms (exact
    deterministic tests); each domain's value and its source: docs/domains.md, "Checker false alarms"."""
    wrong_calls_per_call: int = 3
    """How many well-formed wrong variants :meth:`wrong_tool_calls` makes per argument of an evidence call."""
    hidden_payload_keys: frozenset[str] = frozenset()
    """Keys (or field names) of ``Task.payload`` that the harness must not see: hidden tests, gold answers,
    gold database states; :data:`WHOLE_PAYLOAD` hides the payload as a whole. Features and the action mask never
    read them; ``tests/test_signals.py`` blanks them (and the other hidden task fields, :func:`visible_task`)
    and checks that no observation changes."""
    relevant_looking_ratio: float = 0.5
    """A retrieved document 'looks relevant' when its BM25 score is at least this fraction of the best
    score for the task's query (an observable proxy; true relevance stays hidden)."""

    def __init__(self) -> None:
        self._tasks: dict[str, list[Task]] = {s: [] for s in SPLITS}
        self.corpus: list[Document] = []
        self.tools: dict[str, ToolSpec] = {}
        self._index: BM25Index | None = None
        self._by_id: dict[str, Task] = {}
        self._wrong_calls: dict[str, tuple[ToolCall, ...]] = {}
        self._arg_values: dict[tuple[str, str], list[Any]] | None = None

    # ----- tasks -------------------------------------------------------------------------------------
    def add_tasks(self, tasks: Sequence[Task]) -> None:
        for task in tasks:
            if task.split not in self._tasks:
                raise ValueError(f"{self.name}: task {task.task_id!r} has unknown split {task.split!r}")
            if task.task_id in self._by_id:
                first = self._by_id[task.task_id].source
                also = f" (first on line {first[1]} of {first[0]})" if first else ""
                if task.source is not None:
                    raise TaskFileError(task.source[0], f"duplicate task id{also}", line=task.source[1],
                                        task_id=task.task_id, field="task_id")
                raise ValueError(f"{self.name}: duplicate task id {task.task_id!r}{also}")
            self._tasks[task.split].append(task)
            self._by_id[task.task_id] = task

    def tasks(self, split: str) -> list[Task]:
        if split not in self._tasks:
            raise ValueError(f"{self.name}: unknown split {split!r}; expected one of {SPLITS}")
        return self._tasks[split]

    def all_tasks(self) -> list[Task]:
        """Every task, split by split in the order of :data:`SPLITS`."""
        return [t for s in SPLITS for t in self._tasks[s]]

    def task(self, task_id: str) -> Task:
        try:
            return self._by_id[task_id]
        except KeyError:
            raise KeyError(f"{self.name}: no task with id {task_id!r}") from None

    def counts(self) -> dict[str, int]:
        return {s: len(t) for s, t in self._tasks.items()}

    # ----- episode lifecycle -------------------------------------------------------------------------
    def begin_episode(self, task: Task) -> Any:
        """Open what the episode on ``task`` needs live (the default: nothing, ``None``). Called by the env at
        every ``reset``, after the task is drawn; the result belongs to that env's episode only.

        :param task: the episode's task
        """
        return None

    def end_episode(self, task: Task, resource: Any) -> None:
        """Release the resource :meth:`begin_episode` returned (the default: nothing to do). Called by the env
        when the next episode starts or the env closes, exactly once per :meth:`begin_episode`.

        :param task: the task the episode was on
        :param resource: what :meth:`begin_episode` returned for it (possibly ``None``)
        """
        return None

    # ----- OBSERVE -----------------------------------------------------------------------------------
    def observe(self, task: Task, ctx: Context) -> tuple[int, str] | None:
        """Reveal the next unseen piece of the task's environment state, or ``None`` when all are seen."""
        for i, text in enumerate(task.observations):
            if i not in ctx.observed:
                return i, text
        return None

    # ----- RETRIEVE ----------------------------------------------------------------------------------
    @property
    def index(self) -> BM25Index:
        if self._index is None:
            self._index = BM25Index(self.corpus)
        return self._index

    def query(self, task: Task) -> str:
        """The retrieval query for a task (override to add more than the prompt)."""
        return task.prompt

    def retrieve(self, task: Task, ctx: Context) -> Retrieved | None:
        """The best-ranked unseen document for the task, with what the ranking says about it."""
        return self.best_unseen(self.query(task), ctx)

    def best_unseen(self, query: str, ctx: Context) -> Retrieved | None:
        """The best-ranked document for ``query`` not yet retrieved in ``ctx`` and its scores against the
        ranking (for domains whose query depends on what was retrieved, e.g. multi-hop expansion); ``None`` when
        every ranked document has been retrieved."""
        order, scores = self.index.ranked(query)  # the ranking's entries, read up to the second unseen one
        if not len(order):
            return None
        best = float(scores[0])
        seen = set(ctx.retrieved)
        unseen: list[tuple[int, float]] = []  # the best two
        corpus = self.corpus
        for pos in range(len(order)):
            doc_idx = int(order[pos])
            if corpus[doc_idx].doc_id not in seen:
                unseen.append((doc_idx, float(scores[pos])))
                if len(unseen) == 2:
                    break
        if not unseen:
            return None
        (doc_idx, score), after = unseen[0], (unseen[1][1] if len(unseen) > 1 else 0.0)
        share = score / best if best > 0 else 0.0
        return Retrieved(document=self.corpus[doc_idx], looks_relevant=best > 0 and share >= self.relevant_looking_ratio,
                         score_share=share, gap_share=(score - after) / best if best > 0 else 0.0, query=query)

    # ----- TOOL --------------------------------------------------------------------------------------
    def run_tool(self, task: Task, call: ToolCall, ctx: Context, sandbox: Sandbox | None, *,
                 resource: Any = None) -> ToolResult:
        """Validate the call against the tool's JSON schema, then run it. Errors come back as results.

        :param task: the episode's task
        :param call: the worker's proposed call
        :param ctx: the episode's context
        :param sandbox: where code runs (``None`` for domains that run none)
        :param resource: the episode resource from :meth:`begin_episode` (``None`` when there is none); passed
            on to :meth:`call_tool`
        """
        problem = validate_call(self.tools, call)
        if problem:
            return ToolResult(ok=False, output="", error=problem)
        return self.call_tool(task, call, ctx, sandbox, resource=resource)

    @abstractmethod
    def call_tool(self, task: Task, call: ToolCall, ctx: Context, sandbox: Sandbox | None, *,
                  resource: Any = None) -> ToolResult:
        """Execute a validated tool call.

        :param resource: the episode resource (``None`` when the domain has none, or outside an env)
        """

    def argument_values(self, task: Task, tool: str, arg: str) -> list[Any]:
        """Values argument ``arg`` of ``tool`` can plausibly take on ``task``, from the domain's data. The
        default: every value it takes in some task's evidence calls (ids, units, entities, relations of the
        whole domain), in a fixed order. Domains whose valid values depend on the task (e.g. the columns of
        the task's table) override it.

        :param task: the task the call is for
        :param tool: the tool's name
        :param arg: the argument's name
        """
        if self._arg_values is None:
            pool: dict[tuple[str, str], dict[str, Any]] = {}
            for other in self.all_tasks():
                for call in other.tool_calls:
                    for name, value in call.args.items():
                        pool.setdefault((call.name, name), {})[json.dumps(value, sort_keys=True, default=str)] = value
            self._arg_values = {k: [v[key] for key in sorted(v)] for k, v in pool.items()}
        return self._arg_values.get((tool, arg), [])

    def wrong_tool_calls(self, task: Task) -> tuple[ToolCall, ...]:
        """Well-formed wrong tool calls a worker can make on ``task``: each evidence call with one argument
        replaced by another value from :meth:`argument_values` (a wrong id, unit, entity, relation or
        column), at most :attr:`wrong_calls_per_call` per argument, kept when they pass the tool's schema.
        Their results are real (they run like any call) and are not the evidence the task needs. A task
        without evidence calls gets the evidence calls of the domain's first tasks (useless here). Memoised
        per task (a pure function of the task and the domain's data).

        :param task: the task
        """
        got = self._wrong_calls.get(task.task_id)
        if got is not None:
            return got
        gold = {c.key() for c in task.tool_calls}
        out: dict[str, ToolCall] = {}
        if task.tool_calls:
            for call in task.tool_calls:
                for name, value in sorted(call.args.items()):
                    full = self.argument_values(task, call.name, name)
                    # the values next after the gold one in the fixed order (a near-miss id, the next unit)
                    for v in _next_values(full, value, self.wrong_calls_per_call):
                        alt = ToolCall(name=call.name, args={**call.args, name: v})
                        if alt.key() not in gold and not validate_call(self.tools, alt):
                            out.setdefault(alt.key(), alt)
        else:
            for other in self.all_tasks():
                for call in other.tool_calls:
                    if not validate_call(self.tools, call):
                        out.setdefault(call.key(), call)
                if len(out) >= self.wrong_calls_per_call:
                    break
        got = self._wrong_calls[task.task_id] = tuple(out.values())
        return got

    # ----- CHECK / SUBMIT ----------------------------------------------------------------------------
    def check(self, task: Task, draft: Draft, sandbox: Sandbox | None, *, resource: Any = None) -> CheckResult | None:
        """Run the domain checker on the draft. ``None`` means the domain has no structured verifier and
        CHECK falls back to the worker's self-check.

        :param resource: the episode resource (``None`` when the domain has none, or outside an env)
        """
        return None

    @abstractmethod
    def grade(self, task: Task, draft: Draft, sandbox: Sandbox | None, *, resource: Any = None) -> float:
        """The hidden grader: task quality in [0, 1] of the draft's content.

        :param resource: the episode resource (``None`` when the domain has none, or outside an env)
        """

    # ----- evidence ----------------------------------------------------------------------------------
    def knowledge_signal(self, task: Task, ctx: Context, call: ToolCall | None = None) -> float:
        """The ``knowledge`` evidence signal (docs/harness_mdp.md, "Info"): +1 when the step's content is consistent with the
        domain's knowledge base, -1 when it contradicts it, 0 when there is nothing to verify.

        The default verifies tool calls (known tool, schema-valid arguments); domains extend it to drafts.
        """
        if call is not None:
            return -1.0 if validate_call(self.tools, call) else 1.0
        return 0.0

    # ----- signals the harness holds (observation features; never hidden task fields) -----------------
    def task_keys(self, task: Task) -> tuple[str, ...]:
        """The entities, ids and quantities the visible task text names, lower-cased, in order of first
        appearance: what a harness looks for in the text it gathers (the ``key_coverage`` feature). The default
        reads ``task.prompt`` only: quoted strings, capitalised multi-word names and tokens holding a digit.
        Domains with a structured prompt override it with their own parser of the visible text.

        :param task: the task
        """
        keys: dict[str, None] = {}
        for match in _KEY_PATTERN.finditer(task.prompt):
            text = next(g for g in match.groups() if g)
            keys.setdefault(text.strip().lower(), None)
        return tuple(keys)

    def n_visible_checks(self, task: Task) -> int:
        """How many visible tests, constraints or validations CHECK runs on this task (0 for a self-check or a
        domain that does not count them). Reads only what the harness holds, never hidden tests.

        :param task: the task
        """
        return 0

    def input_size(self, task: Task) -> int:
        """Characters of the task's visible input at reset: the prompt and any attachment handed over with it
        (not what OBSERVE reveals later). The default: the prompt's length.

        :param task: the task
        """
        return len(task.prompt)

    def tool_answers(self, task: Task, call: ToolCall, result: ToolResult) -> bool:
        """Whether a successful tool result mentions what was asked: the default looks in the output for one
        of the call's string argument values or one of :meth:`task_keys`, each as a whole word or number
        (:func:`~harness_gym.core.state.mentions`).

        :param task: the episode's task
        :param call: the call that ran
        :param result: its result
        """
        if not result.ok:
            return False
        text = result.output.lower()
        asked = [v.lower() for v in call.args.values() if isinstance(v, str) and len(v) >= 2]
        if any(mentions(text, a) for a in asked):
            return True
        memo = self.__dict__.setdefault("_task_keys_memo", {})  # task_keys is a pure function of the task
        held = memo.get(task.task_id)
        if held is None or held[0] is not task:
            held = memo[task.task_id] = (task, tuple(self.task_keys(task)))
        return any(mentions(text, k) for k in held[1])

    def observe_bill(self, task: Task, index: int) -> Mapping[str, float]:
        """What revealing observation ``index`` of ``task`` costs in a deployed harness, billable item ->
        quantity (docs/cost.md): nothing for text the task came with (the default), a ``db_query`` for a schema
        read from a live database, an ``api_call:internal`` for a record fetched from a service.

        :param task: the task
        :param index: the observation's position in ``task.observations``
        """
        return {}
