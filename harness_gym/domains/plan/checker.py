"""CHECK for schedules: the hard-constraint verifier; the feedback names every violated constraint with its
culprits (preferences are not looked at)."""

from __future__ import annotations

import functools
import json
from typing import Any

from harness_gym.core.bounds import InputLimitError, loads_json
from harness_gym.core.types import CheckResult
from harness_gym.domains.plan.instance import Assignment, Instance, Violation


def read_assignments(obj: Any) -> Assignment | str:
    """The ``{meeting: {"slot", "room"}}`` object as an :data:`Assignment`, or why it is malformed."""
    if not isinstance(obj, dict):
        return '"assignments" must be an object mapping meeting ids to {"slot", "room"}'
    plan: Assignment = {}
    for m, entry in obj.items():
        if not (isinstance(entry, dict) and isinstance(entry.get("slot"), str) and isinstance(entry.get("room"), str)):
            return f'{m}: expected {{"slot": "Mon-09", "room": name}}'
        plan[m] = (entry["slot"], entry["room"])
    return plan


PARSE_CACHE_MAX_CHARS = 4096
"""Drafts of at most this many characters are parsed once (a memo of 4096 of them); longer ones every time."""


def parse_draft(content: str) -> Assignment | str:
    """The schedule of a draft, or a message saying why it cannot be read (JSON read within the bounds of
    :func:`~harness_gym.core.bounds.loads_json`)."""
    return _parse_cached(content) if len(content) <= PARSE_CACHE_MAX_CHARS else _parse(content)


def _parse(content: str) -> Assignment | str:
    try:
        obj = loads_json(content)
    except json.JSONDecodeError as exc:
        return f"the draft is not valid JSON: {exc.msg} (column {exc.colno})"
    except InputLimitError as exc:
        return f"the draft is not read: {exc}"
    if not isinstance(obj, dict) or "assignments" not in obj:
        return 'the draft must be a JSON object with "assignments"'
    return read_assignments(obj["assignments"])


_parse_cached = functools.lru_cache(maxsize=4096)(_parse)


def describe(violations: list[Violation]) -> str:
    """Checker feedback: each violated hard constraint by kind, with its culprits."""
    if not violations:
        return "no hard constraint violated"
    shown = "; ".join(f"{v.kind}: {v.message}" for v in violations[:4])
    more = f" (+{len(violations) - 4} more)" if len(violations) > 4 else ""
    return f"{len(violations)} hard constraint violation(s): {shown}{more}"


def check_schedule(instance: Instance, content: str) -> CheckResult:
    """The checker's verdict on a draft schedule.

    :param instance: the task's scheduling instance
    :param content: the draft (JSON text)
    """
    plan = parse_draft(content)
    if isinstance(plan, str):
        return CheckResult(False, plan, specificity=0.3)
    violations = instance.violations(plan)
    if not violations:
        return CheckResult(True, "every hard constraint holds (preferences are not checked)", specificity=1.0)
    specificity = 0.9 if len({v.kind for v in violations}) == 1 else 0.75
    return CheckResult(False, describe(violations), specificity=specificity)
