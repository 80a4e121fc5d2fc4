"""The Domain contract: what a task family supplies to the Harness MDP (docs/harness_mdp.md, "Domains").

A domain is data + tools + checker + grader. It knows nothing about the controller or the worker model:
the env asks it to serve OBSERVE, RETRIEVE, TOOL, CHECK and SUBMIT on the current context. A new domain:
docs/extending.md.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from harness_gym.core.retrieval import BM25Index
from harness_gym.core.taskfile import TaskFileError
from harness_gym.core.tools import ToolSpec, validate_call
from harness_gym.core.types import SPLITS, CheckResult, Context, Document, Draft, Task, ToolCall, ToolResult
from harness_gym.sandbox.base import Sandbox


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
    returns, passes it as the keyword argument ``resource=`` to :meth:`call_tool` (through :meth:`run_tool`),
    :meth:`check` and :meth:`grade` during that episode, and hands it to :meth:`end_episode` when the next
    episode starts or the env closes. A domain whose :meth:`begin_episode` returns ``None`` (the default)
    never receives the keyword; one that returns a resource accepts ``resource`` in those three hooks and
    works without it too (opening a short-lived one), so the hooks can be called outside an env.
    """

    name: str = ""
    uses_sandbox: bool = False
    """True when tools, checker or grader execute code (the env then opens a sandbox)."""
    sandbox_options: dict = {}
    """Extra keyword arguments for the sandbox the env opens (e.g. ``{"preload": ("pandas",)}``)."""
    tool_needs_draft: bool = False
    """True when TOOL operates on the current draft (e.g. runs it), so TOOL without a draft is a no-op."""
    success_threshold: float = 1.0 - 1e-9
    """An episode counts as a success when its quality reaches this value."""
    relevant_looking_ratio: float = 0.5
    """A retrieved document 'looks relevant' when its BM25 score is at least this fraction of the best
    score for the task's query (an observable proxy; true relevance stays hidden)."""

    def __init__(self) -> None:
        self._tasks: dict[str, list[Task]] = {s: [] for s in SPLITS}
        self.corpus: list[Document] = []
        self.tools: dict[str, ToolSpec] = {}
        self._index: BM25Index | None = None
        self._by_id: dict[str, Task] = {}

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

    def retrieve(self, task: Task, ctx: Context) -> tuple[Document, bool] | None:
        """The best-ranked unseen document for the task and whether it looks relevant."""
        return self.best_unseen(self.query(task), ctx)

    def best_unseen(self, query: str, ctx: Context) -> tuple[Document, bool] | None:
        """The best-ranked document for ``query`` not yet retrieved in ``ctx``, and whether it looks relevant
        (for domains whose query depends on what was retrieved, e.g. multi-hop expansion)."""
        ranking = self.index.ranking(query)
        if not ranking:
            return None
        best = ranking[0][1]
        seen = set(ctx.retrieved)
        for doc_idx, score in ranking:
            doc = self.corpus[doc_idx]
            if doc.doc_id not in seen:
                return doc, best > 0 and score >= self.relevant_looking_ratio * best
        return None

    # ----- TOOL --------------------------------------------------------------------------------------
    def run_tool(self, task: Task, call: ToolCall, ctx: Context, sandbox: Sandbox | None, *,
                 resource: Any = None) -> ToolResult:
        """Validate the call against the tool's JSON schema, then run it. Errors come back as results.

        :param task: the episode's task
        :param call: the worker's proposed call
        :param ctx: the episode's context
        :param sandbox: where code runs (``None`` for domains that run none)
        :param resource: the episode resource from :meth:`begin_episode`; passed on to :meth:`call_tool`
            only when it is not ``None``
        """
        problem = validate_call(self.tools, call)
        if problem:
            return ToolResult(ok=False, output="", error=problem)
        if resource is None:
            return self.call_tool(task, call, ctx, sandbox)
        return self.call_tool(task, call, ctx, sandbox, resource=resource)

    @abstractmethod
    def call_tool(self, task: Task, call: ToolCall, ctx: Context, sandbox: Sandbox | None) -> ToolResult:
        """Execute a validated tool call."""

    # ----- CHECK / SUBMIT ----------------------------------------------------------------------------
    def check(self, task: Task, draft: Draft, sandbox: Sandbox | None) -> CheckResult | None:
        """Run the domain checker on the draft. ``None`` means the domain has no structured verifier and
        CHECK falls back to the worker's self-check."""
        return None

    @abstractmethod
    def grade(self, task: Task, draft: Draft, sandbox: Sandbox | None) -> float:
        """The hidden grader: task quality in [0, 1] of the draft's content."""

    # ----- evidence ----------------------------------------------------------------------------------
    def knowledge_signal(self, task: Task, ctx: Context, call: ToolCall | None = None) -> float:
        """The ``knowledge`` evidence signal (docs/harness_mdp.md, "Info"): +1 when the step's content is consistent with the
        domain's knowledge base, -1 when it contradicts it, 0 when there is nothing to verify.

        The default verifies tool calls (known tool, schema-valid arguments); domains extend it to drafts.
        """
        if call is not None:
            return -1.0 if validate_call(self.tools, call) else 1.0
        return 0.0
