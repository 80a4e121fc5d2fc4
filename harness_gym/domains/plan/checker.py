"""CHECK for schedules: the booking system's verifier. It checks the task's verified hard rules (every rule, or
all but the business rules the prompt marks "not verified"), counts how many hold, and names every violated
one with its culprits (preferences are not looked at)."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import Any

from harness_gym.core.intake import InputLimitError, loads_json
from harness_gym.core.types import CheckResult
from harness_gym.domains.plan.instance import Assignment, Instance, Violation

VERIFIER_BILL: Mapping[str, float] = {"api_call:internal": 1}
"""What one run of the verifier costs (CHECK and the ``dry_run`` tool): a request to the booking system's
validation endpoint, behind the operator's API gateway. It is not local compute: the verifier needs the live
calendars and room bookings, which only that system holds; its own compute is the service's, not counted."""


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
    :func:`~harness_gym.core.intake.loads_json`)."""
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


def verified_violations(instance: Instance, plan: Assignment) -> list[Violation]:
    """The violations of the rules the verifier checks (those of unverified rules are not seen)."""
    return [v for v in instance.violations(plan) if v.rule not in instance.unverified]


def describe(violations: list[Violation], n_rules: int) -> str:
    """Verifier feedback: each violated rule by kind, with its culprits, and how many rules hold."""
    broken = len({v.rule for v in violations})
    if not violations:
        return f"no verified hard rule violated ({n_rules} of {n_rules} hold)"
    shown = "; ".join(f"{v.kind}: {v.message}" for v in violations[:4])
    more = f" (+{len(violations) - 4} more)" if len(violations) > 4 else ""
    return (f"{len(violations)} hard constraint violation(s), {n_rules - broken} of {n_rules} verified rules hold: "
            f"{shown}{more}")


def check_schedule(instance: Instance, content: str) -> CheckResult:
    """The verifier's verdict on a draft schedule: ``n_total`` is the number of verified rules, ``n_passed``
    those no violation breaks (0 for a draft that cannot be read).

    :param instance: the task's scheduling instance
    :param content: the draft (JSON text)
    """
    n_rules = len(instance.verified_rules())
    plan = parse_draft(content)
    if isinstance(plan, str):
        return CheckResult(False, plan, specificity=0.3, n_passed=0, n_total=n_rules, billed=VERIFIER_BILL)
    violations = verified_violations(instance, plan)
    n_passed = n_rules - len({v.rule for v in violations})
    if not violations:
        unverified = " and the rules marked 'not verified'" if instance.unverified else ""
        return CheckResult(True, f"every verified hard rule holds ({n_rules} of {n_rules}; preferences{unverified} "
                                 "are not checked)", specificity=1.0, n_passed=n_passed, n_total=n_rules,
                           billed=VERIFIER_BILL)
    specificity = 0.9 if len({v.kind for v in violations}) == 1 else 0.75
    return CheckResult(False, describe(violations, n_rules), specificity=specificity, n_passed=n_passed,
                       n_total=n_rules, billed=VERIFIER_BILL)
