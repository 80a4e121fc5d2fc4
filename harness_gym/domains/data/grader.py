"""SUBMIT for data-analysis programs: the answer compared with the reference answer within tolerance."""

from __future__ import annotations

import math
from typing import Any

from harness_gym.core.sandbox import ExecResult
from harness_gym.domains.data.answers import AnswerSpec, is_number, parse_output

REL_TOL = 1e-3
"""Relative tolerance of the grader on numbers (on top of one unit of the last requested decimal)."""


def close(spec: AnswerSpec, got: Any, want: float) -> bool:
    """Whether number ``got`` matches ``want`` within the grader's tolerance."""
    if not is_number(got) or math.isnan(got):
        return False
    if spec.kind == "integer":
        return float(got) == float(want)
    tol = max(10.0 ** -spec.decimals, REL_TOL * abs(want)) + 1e-9
    return abs(got - want) <= tol


def score(spec: AnswerSpec, value: Any, expected: Any) -> float:
    """The grader: 1/0 for numbers and labels; for mappings the fraction of groups answered within tolerance
    (extra keys count against it)."""
    if spec.kind == "mapping":
        if not isinstance(value, dict) or not isinstance(expected, dict):
            return 0.0
        good = sum(1 for k, v in expected.items() if k in value and close(spec, value[k], v))
        return good / max(len(expected), len(value))
    if spec.kind == "label":
        return float(value == expected)
    return float(close(spec, value, expected))


def grade_run(spec: AnswerSpec, expected: Any, result: ExecResult) -> float:
    """The grade of one run of a program: 0 unless it exited cleanly with a JSON answer, else :func:`score`.

    :param spec: the question's answer spec
    :param expected: the reference answer
    :param result: the sandbox run of the program
    """
    if not result.ok:
        return 0.0
    value, problem = parse_output(result.stdout)
    if problem:
        return 0.0
    return score(spec, value, expected)
