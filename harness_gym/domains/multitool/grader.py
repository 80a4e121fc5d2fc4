"""SUBMIT for tool plans: the draft's answer against the gold value the task's reference plan computes."""

from __future__ import annotations

from harness_gym.domains.multitool.checker import parse_draft
from harness_gym.domains.multitool.tools import Value, answer_close


def grade_answer(gold: Value, content: str) -> float:
    """1 when the draft's answer matches ``gold`` (:func:`~harness_gym.domains.multitool.tools.answer_close`),
    else 0 (also for an unreadable draft).

    :param gold: the reference plan's result
    :param content: the draft (JSON text)
    """
    parsed = parse_draft(content)
    if isinstance(parsed, str):
        return 0.0
    return 1.0 if answer_close(parsed[1], gold.as_json()) else 0.0
