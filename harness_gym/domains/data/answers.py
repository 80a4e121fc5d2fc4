"""Answer specifications of data-analysis questions: parsing a program's output, the checker's sanity
validation and the grader's tolerance comparison.

A program answers by printing JSON on its last line of output. The checker (:func:`sanity`) only knows
the question's :class:`AnswerSpec` (type, expected keys or labels, plausible range); the grader
(:func:`score`) also knows the reference answer.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

ANSWER_KINDS: tuple[str, ...] = ("number", "integer", "mapping", "label")
REL_TOL = 1e-3
"""Relative tolerance of the grader on numbers (on top of one unit of the last requested decimal)."""


@dataclass(frozen=True)
class AnswerSpec:
    """What shape a question's answer has; the checker validates against it.

    :param kind: ``"number"``, ``"integer"``, ``"mapping"`` (JSON object of group -> number) or ``"label"``
    :param what: human description of the quantity, used in feedback (e.g. ``"mean unit price (USD)"``)
    :param low: lowest plausible value (numbers, integers, mapping values)
    :param high: highest plausible value
    :param decimals: decimals the question asks for; the grader tolerates one unit of the last one
    :param keys: the groups a mapping must have, in order
    :param labels: the labels a label answer may take
    """

    kind: str
    what: str
    low: float = -math.inf
    high: float = math.inf
    decimals: int = 2
    keys: tuple[str, ...] = ()
    labels: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "what": self.what, "low": self.low, "high": self.high,
                "decimals": self.decimals, "keys": list(self.keys), "labels": list(self.labels)}


@dataclass(frozen=True)
class Verdict:
    """Outcome of validating an output: ``ok``, a feedback message and how precisely it names the fault."""

    ok: bool
    feedback: str
    specificity: float


def parse_output(stdout: str) -> tuple[Any, str]:
    """The JSON value on the last non-blank line of ``stdout`` and ``""``, or ``None`` and why it failed."""
    lines = [ln for ln in stdout.splitlines() if ln.strip()]
    if not lines:
        return None, "the program printed nothing"
    last = lines[-1].strip()
    try:
        return json.loads(last), ""
    except json.JSONDecodeError:
        return None, f"the last line of output is not JSON: {last[:120]!r}"


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_number(spec: AnswerSpec, value: Any, where: str) -> Verdict | None:
    if not _is_number(value):
        return Verdict(False, f"{where} should be a number, got {type(value).__name__} {value!r:.60}", 0.6)
    if math.isnan(value) or math.isinf(value):
        return Verdict(False, f"{where} is {value}: missing values reached the computation", 0.7)
    if spec.kind == "integer" and float(value) != int(value):
        return Verdict(False, f"{where} should be a whole number, got {value}", 0.6)
    if not spec.low <= value <= spec.high:
        return Verdict(False, f"{where} = {value} is outside the plausible range [{spec.low:g}, {spec.high:g}] "
                              f"for {spec.what}", 0.6)
    return None


def sanity(spec: AnswerSpec, value: Any) -> Verdict:
    """The checker's validation of a parsed answer: type, shape, no NaN, plausible range."""
    if spec.kind == "mapping":
        if not isinstance(value, dict):
            return Verdict(False, f"expected a JSON object mapping each group to {spec.what}, "
                                  f"got {type(value).__name__}", 0.6)
        missing = [k for k in spec.keys if k not in value]
        extra = sorted(str(k) for k in value if k not in spec.keys)
        if missing or extra:
            return Verdict(False, f"expected keys {list(spec.keys)}; missing {missing}, unexpected {extra[:8]}", 0.7)
        for key in spec.keys:
            bad = _check_number(spec, value[key], f"the value for {key!r}")
            if bad:
                return bad
        return Verdict(True, f"answer maps all {len(spec.keys)} groups to plausible values", 0.0)
    if spec.kind == "label":
        if not isinstance(value, str):
            return Verdict(False, f"expected a label string such as {spec.labels[0]!r}, "
                                  f"got {type(value).__name__} {value!r:.60}", 0.6)
        if value not in spec.labels:
            return Verdict(False, f"{value!r:.60} is not one of the possible labels "
                                  f"({spec.labels[0]} ... {spec.labels[-1]})", 0.6)
        return Verdict(True, "answer is one of the possible labels", 0.0)
    bad = _check_number(spec, value, "the answer")
    if bad:
        return bad
    return Verdict(True, f"answer is a plausible {spec.kind}", 0.0)


def close(spec: AnswerSpec, got: Any, want: float) -> bool:
    """Whether number ``got`` matches ``want`` within the grader's tolerance."""
    if not _is_number(got) or math.isnan(got):
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


def spec_from_json(raw: dict[str, Any]) -> AnswerSpec:
    """Inverse of :meth:`AnswerSpec.to_json` (fields are validated by the task loader)."""
    return AnswerSpec(kind=raw["kind"], what=raw["what"], low=float(raw["low"]), high=float(raw["high"]),
                      decimals=int(raw["decimals"]), keys=tuple(raw["keys"]), labels=tuple(raw["labels"]))
