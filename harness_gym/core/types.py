"""Value types shared by the MDP, the domains and the workers (see docs/harness_mdp.md).

Everything here is a plain frozen dataclass so that it can be hashed, compared in tests and logged.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

SPLITS: tuple[str, ...] = ("train", "val", "test", "ood")


@dataclass(frozen=True)
class Document:
    """One entry of a domain's retrieval corpus."""

    doc_id: str
    title: str
    text: str


@dataclass(frozen=True)
class ToolCall:
    """A tool invocation proposed by the worker: a tool name and JSON-compatible arguments."""

    name: str
    args: Mapping[str, Any] = field(default_factory=dict)

    def args_json(self) -> str:
        """The arguments as canonical JSON (sorted keys, non-JSON values as ``str``), computed once per call:
        a call's arguments are never changed after it is made."""
        known = self.__dict__.get("_args_json")
        if known is None:
            known = _ARGS_ENCODER.encode(dict(self.args))
            object.__setattr__(self, "_args_json", known)
        return known

    def key(self) -> str:
        """A canonical string used to compare calls (identical-repeat detection, caching), computed once per
        call."""
        known = self.__dict__.get("_key")
        if known is None:
            known = self.name + self.args_json()
            object.__setattr__(self, "_key", known)
        return known


_ARGS_ENCODER = json.JSONEncoder(sort_keys=True, default=str)
"""What ``json.dumps(args, sort_keys=True, default=str)`` writes, without making an encoder per call."""


@dataclass(frozen=True)
class ToolResult:
    """What a tool returned. Tool errors are observations, never exceptions."""

    ok: bool
    output: str
    error: str = ""
    ran_code: bool = False
    """True when the tool executed code (the ``env`` evidence signal rewards code that runs)."""
    billed: Mapping[str, float] | None = None
    """What this call cost, as billable item -> quantity (docs/cost.md); ``None``: the tool's declared
    :attr:`~harness_gym.core.tool_calls.ToolSpec.bills`. Sandbox jobs are metered separately, never listed here."""


@dataclass(frozen=True)
class Candidate:
    """One output the simulated worker can produce for a task: the reference or a realistic wrong one.

    ``correct`` is the label the simulation needs to decide what the worker writes; graders never read it,
    they grade ``content`` for real. ``kind`` names how it was made (``"reference"``, a mutation operator,
    a perturbation kind).
    """

    content: str
    kind: str
    correct: bool


@dataclass(frozen=True)
class Draft:
    """The current answer. ``candidate`` is the index in the task's candidate bank (-1 for live workers)."""

    content: str
    candidate: int
    version: int


@dataclass(frozen=True)
class CheckResult:
    """What CHECK returns. ``specificity`` in [0, 1] says how precisely the feedback names the fault
    (1: names the failing case and the expected value; 0: a bare fail)."""

    passed: bool
    feedback: str
    specificity: float = 0.5
    n_passed: int | None = None
    """How many of the visible tests, constraints or validations the check evaluated passed (``None``: the
    checker does not count them, e.g. a self-check)."""
    n_total: int | None = None
    """How many it evaluated (``None`` as for :attr:`n_passed`)."""
    billed: Mapping[str, float] | None = None
    """What running the check cost beyond its sandbox jobs and model calls (which are metered on their own), as
    billable item -> quantity, e.g. the API calls of a re-executed plan (docs/cost.md)."""


@dataclass(frozen=True)
class Task:
    """A task of a domain.

    The ``required_*`` fields and ``tool_calls`` are hidden state: they say what evidence makes the worker
    more likely to write a correct draft and are never put in the observation. ``payload`` holds whatever
    the domain's tools, checker and grader need (tests, a database, constraints).
    """

    task_id: str
    split: str
    family: str
    difficulty: float
    prompt: str
    candidates: tuple[Candidate, ...]
    observations: tuple[str, ...] = ()
    required_observations: frozenset[int] = frozenset()
    relevant_docs: frozenset[str] = frozenset()
    tool_calls: tuple[ToolCall, ...] = ()
    payload: Any = None
    source: tuple[str, int | None] | None = field(default=None, compare=False)
    """Where the task was read from (file, line), for errors; None for tasks built in code."""

    @property
    def reference(self) -> Candidate:
        for cand in self.candidates:
            if cand.correct:
                return cand
        raise ValueError(f"task {self.task_id!r} has no correct candidate")


@dataclass
class Context:
    """What the worker sees when the env asks it to act: the task and the evidence gathered so far."""

    task: Task
    observed: list[int] = field(default_factory=list)
    retrieved: list[str] = field(default_factory=list)
    documents: list[Document] = field(default_factory=list)
    """The retrieved documents themselves, in retrieval order (``retrieved`` holds their ids)."""
    tool_history: list[tuple[ToolCall, ToolResult]] = field(default_factory=list)
    draft: Draft | None = None
    last_check: CheckResult | None = None
    checked_version: int = -1
    """The draft version the last check ran on (-1: none)."""

    @property
    def good_tool_results(self) -> int:
        """How many of the task's evidence tool calls have returned successfully."""
        wanted = {c.key() for c in self.task.tool_calls}
        done = {call.key() for call, res in self.tool_history if res.ok}
        return len(wanted & done)

    def evidence_coverage(self) -> float:
        """Fraction in [0, 1] of the task's required evidence gathered (observations, documents, tool results)."""
        parts: list[float] = []
        if self.task.required_observations:
            got = len(self.task.required_observations.intersection(self.observed))
            parts.append(got / len(self.task.required_observations))
        if self.task.relevant_docs:
            got = len(self.task.relevant_docs.intersection(self.retrieved))
            parts.append(got / len(self.task.relevant_docs))
        if self.task.tool_calls:
            parts.append(self.good_tool_results / len(self.task.tool_calls))
        return sum(parts) / len(parts) if parts else 1.0
