"""The harness state the controller observes, the FEATURES table and the encoder (docs/harness_mdp.md,
"Observation").

Every feature is computed from what the harness itself holds: the task's visible text (through the domain's
hooks :meth:`~harness_gym.core.domain.Domain.task_keys`, ``n_visible_checks``, ``input_size``), the text it
gathered (revealed observations, retrieved documents, tool outputs), the ranking's scores, the check results,
the worker's stated confidence and the env's counters and ledger; never a hidden task field
(``tests/test_signals.py``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import NamedTuple

import numpy as np

from harness_gym.core.actions import Action
from harness_gym.core.types import Context

INPUT_SIZE_SCALE = 20_000
"""Characters of visible input at which the ``input_size`` feature reaches 1 (log scale below it)."""


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
    Feature("cost_spent", 0.0, 1.0, "cost units spent / the cost budget (without one: / the budget the auto rule "
            "gives), capped at 1", lambda s: s.cost_spent),
    Feature("budget_units_left", 0.0, 1.0, "1 - cost units spent / the cost budget, at least 0 (1 without a cost "
            "budget)", lambda s: s.budget_units_left),
    Feature("retrieval_top_score", 0.0, 1.0, "the last retrieved document's BM25 score / the query's best score "
            "(0 before any retrieval)", lambda s: s.last_retrieval[0]),
    Feature("retrieval_gap", 0.0, 1.0, "that score minus the next unseen document's, / the query's best score "
            "(0 before any retrieval)", lambda s: s.last_retrieval[1]),
    Feature("key_coverage", 0.0, 1.0, "share of the task's keys (entities, ids, quantities its text names) found "
            "in gathered text: observations, retrieved documents, tool outputs (1 when it names none)",
            lambda s: s.coverage.share),
    _count("n_task_keys", 10, "keys the task's text names", lambda s: len(s.signals.keys)),
    Feature("last_tool_answers", -1.0, 1.0, "the last tool result mentions what was asked: +1 yes, -1 no "
            "(an error included), 0 no tool call yet", lambda s: s.last_tool_answers),
    Feature("check_pass_share", 0.0, 1.0, "share of the visible tests or constraints the last CHECK passed (its "
            "pass/fail value when the checker does not count; 0 before any check)", lambda s: s.check_pass_share),
    _count("n_visible_checks", 10, "visible tests, constraints or validations CHECK runs on the task",
           lambda s: s.signals.n_visible_checks),
    Feature("input_size", 0.0, 1.0, f"log1p(characters of the task's visible input) / log1p({INPUT_SIZE_SCALE}), "
            "capped at 1", lambda s: min(math.log1p(s.signals.input_chars) / math.log1p(INPUT_SIZE_SCALE), 1.0)),
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


class TaskSignals(NamedTuple):
    """What the harness reads off a task's visible text once, at reset (the domain's hooks)."""

    keys: tuple[str, ...]
    """:meth:`~harness_gym.core.domain.Domain.task_keys`: lower-cased entities, ids and quantities"""
    n_visible_checks: int
    """:meth:`~harness_gym.core.domain.Domain.n_visible_checks`"""
    input_chars: int
    """:meth:`~harness_gym.core.domain.Domain.input_size`"""


_EMPTY_KEY = re.compile(r"(?<!\w)(?!\w)")
"""Where the empty key is named as a whole: a place with no word character on either side."""


def mentions(text: str, key: str) -> bool:
    """Whether lower-cased ``text`` names ``key`` as a whole: not inside a longer word or number (``"1"`` is not
    named by ``"15"``, ``"ada"`` not by ``"canada"``).

    :param text: lower-cased text
    :param key: a lower-cased key
    """
    at = text.find(key)
    if at < 0:
        return False
    if not key:
        return _EMPTY_KEY.search(text) is not None
    # the regex (?<!\w)KEY(?!\w) without compiling one per key: a start whose neighbours are not word characters
    # (\w of a str pattern is str.isalnum() or "_"; tests/test_state_encoding.py holds the two equal)
    size, end = len(key), len(text)
    while at >= 0:
        before = text[at - 1] if at else ""
        after = text[at + size] if at + size < end else ""
        if not (before and (before.isalnum() or before == "_")) and not (after and (after.isalnum() or after == "_")):
            return True
        at = text.find(key, at + 1)
    return False


class KeyCoverage:
    """Which of a task's keys the gathered text names, updated one gathered text at a time (each text is
    searched once, for the keys still missing).

    :param keys: the task's keys, lower-cased
    """

    def __init__(self, keys: tuple[str, ...]) -> None:
        self.keys = keys
        self.missing = list(keys)

    def add(self, text: str) -> None:
        """Mark the missing keys that ``text`` names (case-insensitive, :func:`mentions`).

        :param text: a gathered text (an observation, a document, a tool output)
        """
        if self.missing and text:
            lowered = text.lower()
            self.missing = [k for k in self.missing if not mentions(lowered, k)]

    @property
    def share(self) -> float:
        """Share of the keys found (1 when there are none)."""
        return 1.0 - len(self.missing) / len(self.keys) if self.keys else 1.0


@dataclass
class HarnessState:
    """What the controller's observation is computed from: the episode's context plus the counters that only
    the env knows (steps, budget, checks, revisions, invalid actions, the last action, the worker's confidence).

    Whatever the context already records (the draft and the version checked, the observations revealed, the
    documents retrieved, the tool history) is read from it, not counted a second time.

    :param ctx: the episode's context (the env's single record of the evidence, the draft and the checks)
    :param budget: the initial step budget
    :param budget_left: the step budget still to spend
    :param signals: the task's visible signals, read at reset
    :param budget_units: the cost budget in units (``None``: none)
    :param cost_scale: what ``cost_spent`` divides by: the cost budget, or without one the budget the auto rule
        gives (0: nothing to divide by, the feature stays 0)
    """

    ctx: Context
    budget: int
    budget_left: int
    signals: TaskSignals = TaskSignals((), 0, 0)
    budget_units: float | None = None
    cost_scale: float = 0.0
    spent_units: float = 0.0
    coverage: KeyCoverage = field(default_factory=lambda: KeyCoverage(()))
    last_retrieval: tuple[float, float] = (0.0, 0.0)
    """(score share, gap share) of the last retrieved document"""
    last_tool_answers: int = 0
    tool_version: int = -1
    """the draft version the last tool call ran on (-1: none, or no draft then)"""
    gathered: list[str] = field(default_factory=list)
    """the texts the harness gathered, in order: revealed observations, retrieved documents, tool outputs"""
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

    def gather(self, text: str) -> None:
        """Record a gathered text and update the key coverage with it.

        :param text: an observation revealed, a document retrieved (title and text) or a tool's output
        """
        self.gathered.append(text)
        self.coverage.add(text)

    @property
    def cost_spent(self) -> float:
        return min(self.spent_units / self.cost_scale, 1.0) if self.cost_scale > 0 else 0.0

    @property
    def budget_units_left(self) -> float:
        if self.budget_units is None:
            return 1.0
        return max(1.0 - self.spent_units / self.budget_units, 0.0) if self.budget_units > 0 else 0.0

    @property
    def cost_exhausted(self) -> bool:
        """Whether the cost budget is spent (never without one)."""
        return self.budget_units is not None and self.spent_units >= self.budget_units

    @property
    def check_pass_share(self) -> float:
        last = self.ctx.last_check
        if last is None:
            return 0.0
        if last.n_total:
            return min(max((last.n_passed or 0) / last.n_total, 0.0), 1.0)
        return 1.0 if last.passed else 0.0

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
        if _ENCODE_INLINE:
            return np.array(_inline_values(self), dtype=np.float32)
        return np.array([f.value(self) for f in FEATURES], dtype=np.float32)


_INLINE_NAMES: tuple[str, ...] = (
    "step_fraction", "budget_left", "has_draft", "draft_version", "checked_since_change", "last_check_result",
    "n_checks", "n_revisions", "n_observations", "observations_exhausted", "n_retrieved", "n_relevant_looking",
    "n_tool_calls", "n_tool_errors", "consecutive_errors", "last_tool_result", "worker_confidence",
    "n_invalid_actions", "cost_spent", "budget_units_left", "retrieval_top_score", "retrieval_gap", "key_coverage",
    "n_task_keys", "last_tool_answers", "check_pass_share", "n_visible_checks", "input_size",
    *(f"last_action_{a.name.lower()}" for a in Action), "last_action_none")
_ENCODE_INLINE = FEATURE_NAMES == _INLINE_NAMES
"""Whether :func:`_inline_values` computes :data:`FEATURES` (else, after an edit of the table, the encoder
calls each feature's value function)."""
_LOG_INPUT_SCALE = math.log1p(INPUT_SIZE_SCALE)


@lru_cache(maxsize=4096)
def _signal_values(signals: TaskSignals) -> tuple[float, float, float]:
    """The ``n_task_keys``, ``n_visible_checks`` and ``input_size`` features: fixed for an episode's task."""
    return (min(len(signals.keys), 10) / 10, min(signals.n_visible_checks, 10) / 10,
            min(math.log1p(signals.input_chars) / _LOG_INPUT_SCALE, 1.0))


def _inline_values(s: HarnessState) -> list[float]:
    """The values of :data:`FEATURES`, in order, as their value functions compute them, in one pass over the
    state (the encoder runs at every step; ``tests/test_state_encoding.py`` holds the two equal)."""
    ctx = s.ctx
    draft = ctx.draft
    draft_version = draft.version if draft is not None else 0
    history = ctx.tool_history
    n_errors = consecutive = 0
    for _, res in history:
        if res.ok:
            consecutive = 0
        else:
            n_errors += 1
            consecutive += 1
    last = ctx.last_check
    if last is None:
        check_pass_share = 0.0
    elif last.n_total:
        check_pass_share = min(max((last.n_passed or 0) / last.n_total, 0.0), 1.0)
    else:
        check_pass_share = 1.0 if last.passed else 0.0
    budget, spent, scale, budget_units = s.budget, s.spent_units, s.cost_scale, s.budget_units
    if budget_units is None:
        budget_units_left = 1.0
    else:
        budget_units_left = max(1.0 - spent / budget_units, 0.0) if budget_units > 0 else 0.0
    coverage = s.coverage
    n_observed = len(ctx.observed)
    n_keys_value, n_visible_checks_value, input_size_value = _signal_values(s.signals)
    values = [
        min(s.steps / budget, 1.0),
        max(s.budget_left, 0) / budget,
        1.0 if draft_version > 0 else 0.0,
        min(draft_version, 10) / 10,
        1.0 if draft_version > 0 and ctx.checked_version == draft_version else 0.0,
        0 if last is None else (1 if last.passed else -1),
        min(s.n_checks, 10) / 10,
        min(s.n_revisions, 10) / 10,
        min(n_observed, 10) / 10,
        1.0 if n_observed >= len(ctx.task.observations) else 0.0,
        min(len(ctx.retrieved), 10) / 10,
        min(s.n_relevant_looking, 10) / 10,
        min(len(history), 10) / 10,
        min(n_errors, 10) / 10,
        min(consecutive, 5) / 5,
        0 if not history else (1 if history[-1][1].ok else -1),
        s.confidence,
        min(s.n_invalid, 10) / 10,
        min(spent / scale, 1.0) if scale > 0 else 0.0,
        budget_units_left,
        s.last_retrieval[0],
        s.last_retrieval[1],
        1.0 - len(coverage.missing) / len(coverage.keys) if coverage.keys else 1.0,
        n_keys_value,
        s.last_tool_answers,
        check_pass_share,
        n_visible_checks_value,
        input_size_value,
        0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
    ]
    last_action = s.last_action
    if 0 <= last_action < _N_ACTIONS:
        values[_FIRST_LAST_ACTION + last_action] = 1.0
    elif last_action < 0:
        values[_FIRST_LAST_ACTION + _N_ACTIONS] = 1.0
    return values


_N_ACTIONS = len(Action)
_FIRST_LAST_ACTION = _INLINE_NAMES.index("last_action_observe")
