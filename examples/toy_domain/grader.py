"""The toy domain's hidden grader: 1 for the exact sum, 0 otherwise."""

from __future__ import annotations


def grade(operands: tuple[int, int], answer: str) -> float:
    """The quality of ``answer`` in [0, 1].

    :param operands: the task's ``(a, b)``
    :param answer: the draft's content
    """
    a, b = operands
    try:
        return 1.0 if int(answer) == a + b else 0.0
    except ValueError:
        return 0.0
