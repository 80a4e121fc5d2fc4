"""Answer specifications of data-analysis questions and the parsing of a program's answer.

A program answers by printing JSON on its last line of output. The checker
(:func:`~harness_gym.domains.data.checker.sanity`) only knows the question's :class:`AnswerSpec` (type,
expected keys or labels, plausible range); the grader (:func:`~harness_gym.domains.data.grader.score`) also
knows the reference answer.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from harness_gym.core.intake import InputLimitError, loads_json

ANSWER_KINDS: tuple[str, ...] = ("number", "integer", "mapping", "label")


@dataclass(frozen=True)
class AnswerSpec:
    """What shape a question's answer has; the checker validates against it.

    :param kind: ``"number"``, ``"integer"``, ``"mapping"`` (JSON object of group -> number) or ``"label"``
    :param what: human description of the quantity, used in feedback (e.g. ``"mean unit price (USD)"``)
    :param low: lowest plausible value (numbers, integers, mapping values); ``-inf`` when the question states
        no range, and the checker then validates none
    :param high: highest plausible value (``inf`` when the question states no range)
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

    @property
    def range_stated(self) -> bool:
        """Whether the question states a plausible range (and the checker validates it)."""
        return self.kind != "label" and (math.isfinite(self.low) or math.isfinite(self.high))

    def to_json(self) -> dict[str, Any]:
        """The spec as a JSON object; an unstated bound is ``null``."""
        return {"kind": self.kind, "what": self.what, "low": self.low if math.isfinite(self.low) else None,
                "high": self.high if math.isfinite(self.high) else None,
                "decimals": self.decimals, "keys": list(self.keys), "labels": list(self.labels)}


def parse_output(stdout: str) -> tuple[Any, str]:
    """The JSON value on the last non-blank line of ``stdout`` and ``""``, or ``None`` and why it failed (the
    line is read within the bounds of :func:`~harness_gym.core.intake.loads_json`: nesting, integer digits)."""
    lines = [ln for ln in stdout.splitlines() if ln.strip()]
    if not lines:
        return None, "the program printed nothing"
    last = lines[-1].strip()
    try:
        return loads_json(last), ""
    except json.JSONDecodeError:
        return None, f"the last line of output is not JSON: {last[:120]!r}"
    except InputLimitError as exc:
        return None, f"the last line of output is not read: {exc}"


def is_number(value: Any) -> bool:
    """Whether ``value`` is a JSON number (``bool`` is not)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)
