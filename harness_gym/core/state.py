"""The harness state the controller observes, the FEATURES table and the encoder (DESIGN §3)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from harness_gym.core.actions import N_ACTIONS, Action


class Feature(NamedTuple):
    name: str
    low: float
    high: float
    meaning: str


def _count(n: str, cap: int, what: str) -> Feature:
    return Feature(n, 0.0, 1.0, f"{what}, min(n, {cap}) / {cap}")


FEATURES: tuple[Feature, ...] = (
    Feature("step_fraction", 0.0, 1.0, "steps taken / initial budget"),
    Feature("budget_left", 0.0, 1.0, "remaining budget / initial budget"),
    Feature("has_draft", 0.0, 1.0, "1 when a draft exists"),
    _count("draft_version", 10, "versions of the draft written (drafts + revisions)"),
    Feature("checked_since_change", 0.0, 1.0, "1 when the current draft version has been checked"),
    Feature("last_check_result", -1.0, 1.0, "result of the most recent check: +1 pass, -1 fail, 0 none yet"),
    _count("n_checks", 10, "CHECK actions that ran"),
    _count("n_revisions", 10, "REVISE actions that ran"),
    _count("n_observations", 10, "OBSERVE actions that revealed something"),
    Feature("observations_exhausted", 0.0, 1.0, "1 when OBSERVE has nothing left to reveal"),
    _count("n_retrieved", 10, "documents retrieved"),
    _count("n_relevant_looking", 10, "retrieved documents whose BM25 score looks relevant"),
    _count("n_tool_calls", 10, "tool calls made"),
    _count("n_tool_errors", 10, "tool calls that returned an error"),
    _count("consecutive_errors", 5, "tool errors in a row"),
    Feature("last_tool_result", -1.0, 1.0, "result of the most recent tool call: +1 ok, -1 error, 0 none yet"),
    Feature("worker_confidence", 0.0, 1.0, "the worker's stated confidence in the current draft (0 without one)"),
    _count("n_invalid_actions", 10, "inapplicable actions taken"),
    *(Feature(f"last_action_{a.name.lower()}", 0.0, 1.0, f"1 when the previous action was {a.name}") for a in Action),
    Feature("last_action_none", 0.0, 1.0, "1 at the first step (no previous action)"),
)
FEATURE_NAMES: tuple[str, ...] = tuple(f.name for f in FEATURES)
N_FEATURES: int = len(FEATURES)
LOW = np.array([f.low for f in FEATURES], dtype=np.float32)
HIGH = np.array([f.high for f in FEATURES], dtype=np.float32)
_LAST_ACTION0 = FEATURE_NAMES.index("last_action_observe")


def features_table() -> str:
    """The Markdown ``| Num | Observation | Min | Max |`` table used in every env's docstring."""
    rows = ["| Num | Observation | Min | Max | Meaning |", "|-----|-------------|-----|-----|---------|"]
    for i, f in enumerate(FEATURES):
        rows.append(f"| {i} | {f.name} | {f.low:g} | {f.high:g} | {f.meaning} |")
    return "\n".join(rows)


@dataclass
class HarnessState:
    """Counters of one episode; :meth:`encode` turns them into the observation vector."""

    budget: int
    budget_left: int
    steps: int = 0
    draft_version: int = 0
    checked_version: int = -1
    last_check: int = 0
    n_checks: int = 0
    n_revisions: int = 0
    n_observations: int = 0
    observations_exhausted: bool = False
    n_retrieved: int = 0
    n_relevant_looking: int = 0
    n_tool_calls: int = 0
    n_tool_errors: int = 0
    consecutive_errors: int = 0
    last_tool: int = 0
    confidence: float = 0.0
    n_invalid: int = 0
    last_action: int = -1
    _buf: np.ndarray = field(default_factory=lambda: np.zeros(N_FEATURES, dtype=np.float32), repr=False)

    def encode(self) -> np.ndarray:
        """A fresh float32 vector inside ``[LOW, HIGH]``."""
        b = self._buf
        budget = float(self.budget)
        b[0] = min(self.steps / budget, 1.0)
        b[1] = max(self.budget_left, 0) / budget
        b[2] = 1.0 if self.draft_version > 0 else 0.0
        b[3] = min(self.draft_version, 10) / 10.0
        b[4] = 1.0 if self.draft_version > 0 and self.checked_version == self.draft_version else 0.0
        b[5] = self.last_check
        b[6] = min(self.n_checks, 10) / 10.0
        b[7] = min(self.n_revisions, 10) / 10.0
        b[8] = min(self.n_observations, 10) / 10.0
        b[9] = 1.0 if self.observations_exhausted else 0.0
        b[10] = min(self.n_retrieved, 10) / 10.0
        b[11] = min(self.n_relevant_looking, 10) / 10.0
        b[12] = min(self.n_tool_calls, 10) / 10.0
        b[13] = min(self.n_tool_errors, 10) / 10.0
        b[14] = min(self.consecutive_errors, 5) / 5.0
        b[15] = self.last_tool
        b[16] = self.confidence
        b[17] = min(self.n_invalid, 10) / 10.0
        b[_LAST_ACTION0:] = 0.0
        b[_LAST_ACTION0 + (self.last_action if self.last_action >= 0 else N_ACTIONS)] = 1.0
        return b.copy()
