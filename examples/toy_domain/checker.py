"""CHECK in the toy domain: the answer's parity only, so an answer off by an even number passes."""

from __future__ import annotations

from harness_gym.core.types import CheckResult


def check(operands: tuple[int, int], answer: str) -> CheckResult:
    """Whether ``answer`` has the parity of the sum; the feedback says which way it is wrong.

    :param operands: the task's ``(a, b)``
    :param answer: the draft's content
    """
    a, b = operands
    try:
        value = int(answer)
    except ValueError:
        return CheckResult(False, f"{answer!r} is not an integer", specificity=0.8)
    ok = value % 2 == (a + b) % 2
    return CheckResult(ok, "parity ok" if ok else f"parity of {answer} is wrong", specificity=0.8)
