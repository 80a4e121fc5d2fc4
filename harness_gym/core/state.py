"""The harness state the controller observes, the FEATURES table and the encoder (docs/harness_mdp.md,
"Observation")."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from harness_gym.core.actions import Action
from harness_gym.core.types import Context


class Feature(NamedTuple):
    """One entry of the observation vector: its name, bounds, meaning and how its value is computed."""

    name: str
    low: float
    high: float
    meaning: str
    value: Callable[[HarnessState], float]
    """The feature's value in ``[low, high]``, a function of the episode's state (and, through it, the context)."""


def _count(name: str, cap: int, what: str, count: Callable[[HarnessState], int]) -> Feature:
    """A counter feature: ``min(n, cap) / cap``."""
    return Feature(name, 0.0, 1.0, f"{what}, min(n, {cap}) / {cap}", lambda s: min(count(s), cap) / cap)


def _flag(name: str, meaning: str, holds: Callable[[HarnessState], bool]) -> Feature:
    """A 0/1 feature."""
    return Feature(name, 0.0, 1.0, meaning, lambda s: 1.0 if holds(s) else 0.0)


def _last_action(action: int, meaning: str) -> Feature:
    name = f"last_action_{Action(action).name.lower()}" if action >= 0 else "last_action_none"
    return _flag(name, meaning, lambda s: s.last_action == action if action >= 0 else s.last_action < 0)


FEATURES: tuple[Feature, ...] = (
    Feature("step_fraction", 0.0, 1.0, "steps taken / initial budget", lambda s: min(s.steps / s.budget, 1.0)),
    Feature("budget_left", 0.0, 1.0, "remaining budget / initial budget", lambda s: max(s.budget_left, 0) / s.budget),
    _flag("has_draft", "1 when a draft exists", lambda s: s.draft_version > 0),
    _count("draft_version", 10, "versions of the draft written (drafts + revisions)", lambda s: s.draft_version),
    _flag("checked_since_change", "1 when the current draft version has been checked",
          lambda s: s.draft_version > 0 and s.checked_version == s.draft_version),
    Feature("last_check_result", -1.0, 1.0, "result of the most recent check: +1 pass, -1 fail, 0 none yet",
            lambda s: s.last_check),
    _count("n_checks", 10, "CHECK actions that ran", lambda s: s.n_checks),
    _count("n_revisions", 10, "REVISE actions that ran", lambda s: s.n_revisions),
    _count("n_observations", 10, "OBSERVE actions that revealed something", lambda s: s.n_observations),
    _flag("observations_exhausted", "1 when OBSERVE has nothing left to reveal", lambda s: s.observations_exhausted),
    _count("n_retrieved", 10, "documents retrieved", lambda s: s.n_retrieved),
    _count("n_relevant_looking", 10, "retrieved documents whose BM25 score looks relevant",
           lambda s: s.n_relevant_looking),
    _count("n_tool_calls", 10, "tool calls made", lambda s: s.n_tool_calls),
    _count("n_tool_errors", 10, "tool calls that returned an error", lambda s: s.n_tool_errors),
    _count("consecutive_errors", 5, "tool errors in a row", lambda s: s.consecutive_errors),
    Feature("last_tool_result", -1.0, 1.0, "result of the most recent tool call: +1 ok, -1 error, 0 none yet",
            lambda s: s.last_tool),
    Feature("worker_confidence", 0.0, 1.0, "the worker's stated confidence in the current draft (0 without one)",
            lambda s: s.confidence),
    _count("n_invalid_actions", 10, "inapplicable actions taken", lambda s: s.n_invalid),
    *(_last_action(int(a), f"1 when the previous action was {a.name}") for a in Action),
    _last_action(-1, "1 at the first step (no previous action)"),
)
"""The observation vector, in order: adding a feature is one entry here (its value function included)."""
FEATURE_NAMES: tuple[str, ...] = tuple(f.name for f in FEATURES)
LOW = np.array([f.low for f in FEATURES], dtype=np.float32)
HIGH = np.array([f.high for f in FEATURES], dtype=np.float32)


def features_table() -> str:
    """The Markdown ``| Num | Observation | Min | Max |`` table used in every env's docstring."""
    rows = ["| Num | Observation | Min | Max | Meaning |", "|-----|-------------|-----|-----|---------|"]
    for i, f in enumerate(FEATURES):
        rows.append(f"| {i} | {f.name} | {f.low:g} | {f.high:g} | {f.meaning} |")
    return "\n".join(rows)


@dataclass
class HarnessState:
    """What the controller's observation is computed from: the episode's context plus the counters that only
    the env knows (steps, budget, checks, revisions, invalid actions, the last action, the worker's confidence).

    Whatever the context already records (the draft and the version checked, the observations revealed, the
    documents retrieved, the tool history) is read from it, not counted a second time.

    :param ctx: the episode's context (the env's single record of the evidence, the draft and the checks)
    :param budget: the initial budget
    :param budget_left: the budget still to spend
    """

    ctx: Context
    budget: int
    budget_left: int
    steps: int = 0
    n_checks: int = 0
    n_revisions: int = 0
    n_relevant_looking: int = 0
    confidence: float = 0.0
    n_invalid: int = 0
    last_action: int = -1

    @property
    def draft_version(self) -> int:
        """The current draft's version (0 without a draft)."""
        return self.ctx.draft.version if self.ctx.draft is not None else 0

    @property
    def checked_version(self) -> int:
        """The draft version the last CHECK ran on (-1: none)."""
        return self.ctx.checked_version

    @property
    def last_check(self) -> int:
        """+1 when the last CHECK passed, -1 when it failed, 0 before any."""
        last = self.ctx.last_check
        return 0 if last is None else (1 if last.passed else -1)

    @property
    def n_observations(self) -> int:
        return len(self.ctx.observed)

    @property
    def observations_exhausted(self) -> bool:
        return len(self.ctx.observed) >= len(self.ctx.task.observations)

    @property
    def n_retrieved(self) -> int:
        return len(self.ctx.retrieved)

    @property
    def n_tool_calls(self) -> int:
        return len(self.ctx.tool_history)

    @property
    def n_tool_errors(self) -> int:
        return sum(not res.ok for _, res in self.ctx.tool_history)

    @property
    def consecutive_errors(self) -> int:
        """Tool errors since the last successful tool call."""
        run = 0
        for _, res in reversed(self.ctx.tool_history):
            if res.ok:
                break
            run += 1
        return run

    @property
    def last_tool(self) -> int:
        """+1 when the last tool call succeeded, -1 when it failed, 0 before any."""
        if not self.ctx.tool_history:
            return 0
        return 1 if self.ctx.tool_history[-1][1].ok else -1

    def encode(self) -> np.ndarray:
        """A fresh float32 vector inside ``[LOW, HIGH]``, one entry per :data:`FEATURES` row."""
        return np.array([f.value(self) for f in FEATURES], dtype=np.float32)
