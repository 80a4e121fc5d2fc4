"""Process patterns and the Harness Maturity Score (docs/harness_mdp.md, "Process patterns and HMS").

HMS is a diagnostic reported beside task quality. It is computed from the episode's trace at the end and is
never used as a training reward.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from harness_gym.core.actions import Action

PATTERNS: tuple[str, ...] = (
    "check_before_submit",
    "evidence_before_draft",
    "revise_after_failure",
    "early_submit",
    "recover_after_tool_error",
    "no_redundant_check",
)
BAD_PATTERNS: frozenset[str] = frozenset({"early_submit"})
"""Patterns where 1 is bad; HMS counts them inverted."""

NAN = float("nan")


@dataclass(frozen=True)
class StepRecord:
    """What the pattern detectors need to know about one step."""

    action: Action
    valid: bool
    draft_version: int
    """The draft version after the step (0: no draft)."""
    check_passed: bool | None = None
    """For a CHECK that ran: its result."""
    redundant_check: bool = False
    tool_key: str = ""
    tool_ok: bool | None = None


_EVIDENCE = {Action.OBSERVE, Action.RETRIEVE, Action.TOOL}


def episode_patterns(trace: list[StepRecord], submitted_version: int, submitted_checked: bool) -> dict[str, float]:
    """Each pattern as 1.0 / 0.0 where it applies to the episode and NaN where it does not.

    :param trace: every step of the episode, the final (possibly forced) submit included
    :param submitted_version: the draft version that was graded (0: none)
    :param submitted_checked: whether that version had been checked
    """
    valid = [r for r in trace if r.valid]
    out = dict.fromkeys(PATTERNS, NAN)

    if submitted_version > 0:
        out["check_before_submit"] = 1.0 if submitted_checked else 0.0

    drafts = [i for i, r in enumerate(valid) if r.action == Action.DRAFT]
    if drafts:
        out["evidence_before_draft"] = 1.0 if any(r.action in _EVIDENCE for r in valid[: drafts[0]]) else 0.0

    failures = [i for i, r in enumerate(valid) if r.action == Action.CHECK and r.check_passed is False]
    if failures:
        followed = all(any(r.action in (Action.REVISE, Action.DRAFT) for r in valid[i + 1:]) for i in failures)
        out["revise_after_failure"] = 1.0 if followed else 0.0

    if submitted_version > 0 or any(r.action == Action.SUBMIT for r in valid):
        any_evidence = any(r.action in _EVIDENCE for r in valid)
        last_check = next((r for r in reversed(valid) if r.action == Action.CHECK), None)
        failed_current = (
            last_check is not None and last_check.check_passed is False and last_check.draft_version == submitted_version
        )
        out["early_submit"] = 1.0 if (failed_current or not any_evidence) else 0.0

    errors = [i for i, r in enumerate(trace) if r.action == Action.TOOL and r.tool_ok is False]
    if errors:
        repeated = any(
            i + 1 < len(trace) and trace[i + 1].action == Action.TOOL and trace[i + 1].tool_key == trace[i].tool_key
            for i in errors
        )
        out["recover_after_tool_error"] = 0.0 if repeated else 1.0

    checks = [r for r in valid if r.action == Action.CHECK]
    if checks:
        out["no_redundant_check"] = 0.0 if any(r.redundant_check for r in checks) else 1.0
    return out


def hms(patterns: dict[str, float]) -> float:
    """Mean of the applicable patterns, bad ones inverted; NaN when none applies."""
    vals = [(1.0 - v if name in BAD_PATTERNS else v) for name, v in patterns.items() if not math.isnan(v)]
    return sum(vals) / len(vals) if vals else NAN
