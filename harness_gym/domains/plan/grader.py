"""SUBMIT for schedules: 0 when a hard constraint is violated, else the soft cost relative to the optimum."""

from __future__ import annotations

from harness_gym.domains.plan.checker import parse_draft
from harness_gym.domains.plan.instance import Instance


def grade_schedule(instance: Instance, optimum: float, content: str) -> float:
    """``(1 + optimum) / (1 + cost)`` of a feasible draft schedule, 0 for an infeasible or unreadable one.

    :param instance: the task's scheduling instance
    :param optimum: the minimum soft cost over feasible schedules
    :param content: the draft (JSON text)
    """
    plan = parse_draft(content)
    if isinstance(plan, str):
        return 0.0
    if instance.violations(plan):
        return 0.0
    return instance.quality(plan, optimum)
