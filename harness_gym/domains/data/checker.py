"""CHECK for data-analysis programs: run the program, then validate its answer's type, shape and plausibility
against the question's :class:`~harness_gym.domains.data.answers.AnswerSpec` (never the reference answer).

The validations, in order (:func:`validations`): the program ran (``runs``), its last line is JSON (``json``),
the answer has the asked type (``type``), a mapping has exactly the asked groups and a label is one of the
possible labels (``shape``), numbers are finite (``finite``) and, where the question states a plausible range,
inside it (``range``). A task's number of validations is its ``n_visible_checks``; a check reports how many
passed before the first that failed (``n_passed``), out of all of them (``n_total``). CHECK runs one sandbox
job and bills nothing else."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from harness_gym.core.sandbox import ExecResult
from harness_gym.core.types import CheckResult
from harness_gym.domains.data.answers import AnswerSpec, is_number, parse_output

TIMEOUT_S = 10.0
"""Wall-clock limit of one program run (the programs take well under a second)."""


@dataclass(frozen=True)
class Verdict:
    """Outcome of validating an output: ``ok``, a feedback message, how precisely it names the fault and, when
    it failed, the validation that failed (one of :func:`validations`)."""

    ok: bool
    feedback: str
    specificity: float
    failed: str = ""


def validations(spec: AnswerSpec) -> tuple[str, ...]:
    """The validations CHECK runs on an answer to ``spec``, in order (see the module docstring).

    :param spec: the question's answer spec
    """
    names = ["runs", "json", "type"]
    if spec.kind in ("mapping", "label"):
        names.append("shape")
    if spec.kind != "label":
        names.append("finite")
        if spec.range_stated:
            names.append("range")
    return tuple(names)


def _check_number(spec: AnswerSpec, value: Any, where: str) -> Verdict | None:
    if not is_number(value):
        return Verdict(False, f"{where} should be a number, got {type(value).__name__} {value!r:.60}", 0.6, "type")
    if spec.kind == "integer" and math.isfinite(value) and float(value) != int(value):
        return Verdict(False, f"{where} should be a whole number, got {value}", 0.6, "type")
    if math.isnan(value) or math.isinf(value):
        return Verdict(False, f"{where} is {value}: missing values reached the computation", 0.7, "finite")
    if not spec.low <= value <= spec.high:
        return Verdict(False, f"{where} = {value} is outside the plausible range [{spec.low:g}, {spec.high:g}] "
                              f"for {spec.what}", 0.6, "range")
    return None


def sanity(spec: AnswerSpec, value: Any) -> Verdict:
    """The checker's validation of a parsed answer: type, shape, no NaN, plausible range."""
    if spec.kind == "mapping":
        if not isinstance(value, dict):
            return Verdict(False, f"expected a JSON object mapping each group to {spec.what}, "
                                  f"got {type(value).__name__}", 0.6, "type")
        missing = [k for k in spec.keys if k not in value]
        extra = sorted(str(k) for k in value if k not in spec.keys)
        if missing or extra:
            return Verdict(False, f"expected keys {list(spec.keys)}; missing {missing}, unexpected {extra[:8]}", 0.7,
                           "shape")
        for key in spec.keys:
            bad = _check_number(spec, value[key], f"the value for {key!r}")
            if bad:
                return bad
        plausible = "plausible" if spec.range_stated else "finite"
        return Verdict(True, f"answer maps all {len(spec.keys)} groups to {plausible} values", 0.0)
    if spec.kind == "label":
        if not isinstance(value, str):
            return Verdict(False, f"expected a label string such as {spec.labels[0]!r}, "
                                  f"got {type(value).__name__} {value!r:.60}", 0.6, "type")
        if value not in spec.labels:
            return Verdict(False, f"{value!r:.60} is not one of the possible labels "
                                  f"({spec.labels[0]} ... {spec.labels[-1]})", 0.6, "shape")
        return Verdict(True, "answer is one of the possible labels", 0.0)
    bad = _check_number(spec, value, "the answer")
    if bad:
        return bad
    plausible = "plausible " if spec.range_stated else ""
    return Verdict(True, f"answer is a finite {plausible}{spec.kind}", 0.0)


def check_run(spec: AnswerSpec, result: ExecResult) -> CheckResult:
    """The checker's verdict on one run of a program: how it stopped, then :func:`sanity` of its answer.

    :param spec: the question's answer spec
    :param result: the sandbox run of the program
    """
    names = validations(spec)

    def failed(at: str, feedback: str, specificity: float) -> CheckResult:
        return CheckResult(False, feedback, specificity, names.index(at), len(names))

    if result.timed_out:
        return failed("runs", f"the program did not finish within {TIMEOUT_S:g} s", 0.3)
    if result.reason:
        return failed("runs", f"the sandbox stopped the program ({result.reason}): {result.stderr[-200:]}", 0.3)
    if result.exit_code != 0:
        return failed("runs", f"the program raised {error_summary(result.stderr)}", 0.8)
    value, problem = parse_output(result.stdout)
    if problem:
        return failed("json", problem, 0.6)
    verdict = sanity(spec, value)
    if not verdict.ok:
        return failed(verdict.failed, verdict.feedback, verdict.specificity)
    return CheckResult(True, verdict.feedback, verdict.specificity, len(names), len(names))


def error_summary(stderr: str) -> str:
    """The exception line of a traceback and the line of the program that raised it.

    :param stderr: the program's standard error
    """
    lines = [ln for ln in stderr.strip().splitlines() if ln.strip()]
    if not lines:
        return "an error without a message"
    where = [ln.strip() for ln in lines if ln.strip().startswith("File ") and ", line " in ln]
    at = f" ({where[-1].split(', in ')[0].split(', ')[-1]})" if where else ""
    return f"{lines[-1].strip()[:300]}{at}"
