"""CHECK for tool plans: re-execute the plan with the real tools, validating every step's arguments (JSON schema)
and the units of referenced values against what the step claims (``from_unit``, the ``days`` of ``date_add``,
sums of unlike units), then the final unit and the stated answer; the feedback names the failing step.

The check counts what it verifies: one check per plan step and one for the final answer (its unit and value), so
``n_total = len(plan) + 1`` (1 for a draft whose plan cannot be read) and ``n_passed`` the steps that ran before the
first failure plus the final check if it passed. Re-executing a step calls its tool again, and in deployment the
tools are services: the steps sent (those whose arguments passed the schema) bill their tools' declared items
again, reported in ``CheckResult.billed`` (e.g. one ``api_call:fx_rates`` per ``exchange_rate`` step)."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness_gym.core.intake import InputLimitError, loads_json
from harness_gym.core.tool_calls import ToolSpec, validate_call
from harness_gym.core.types import CheckResult, ToolCall
from harness_gym.domains.multitool.tools import DATE, ToolError, Unit, Value, World, answer_close, execute, format_unit

PARSE_CACHE_MAX_CHARS = 4096
"""Drafts of at most this many characters are parsed once (a memo of 4096 of them); longer ones every time."""


def parse_draft(content: str) -> tuple[list[Any], Any] | str:
    """``(plan, answer)`` of a draft, or a message saying why it cannot be read (JSON read within the bounds of
    :func:`~harness_gym.core.intake.loads_json`)."""
    return _parse_cached(content) if len(content) <= PARSE_CACHE_MAX_CHARS else _parse(content)


def _parse(content: str) -> tuple[list[Any], Any] | str:
    try:
        obj = loads_json(content)
    except json.JSONDecodeError as exc:
        return f"the draft is not valid JSON: {exc.msg} (column {exc.colno})"
    except InputLimitError as exc:
        return f"the draft is not read: {exc}"
    if not isinstance(obj, dict) or "plan" not in obj or "answer" not in obj:
        return 'the draft must be a JSON object with "plan" and "answer"'
    return obj["plan"], obj["answer"]


_parse_cached = functools.lru_cache(maxsize=4096)(_parse)


@dataclass(frozen=True)
class PlanRun:
    """What re-executing a plan gave: every step's value, or the first failing step and why."""

    values: tuple[Value, ...]
    failed_step: int = 0
    """1-based index of the step that failed (0: none)."""
    error: str = ""
    billed: Mapping[str, float] = field(default_factory=dict)
    """What the calls sent cost (their tools' declared bills), billable item -> quantity."""

    @property
    def ok(self) -> bool:
        return not self.failed_step

    @property
    def result(self) -> Value:
        return self.values[-1]


MAX_PLAN_STEPS = 8
_STEP_REF = re.compile(r"\$(\d{1,3})")
"""A ``"$n"`` argument: n has at most three digits (a plan has at most :data:`MAX_PLAN_STEPS` steps)."""


def _resolve(arg: Any, values: Sequence[Value]) -> tuple[Any, Unit | None]:
    """Substitute a ``"$n"`` argument by step n's value; return the JSON form and its unit (``None``: literal)."""
    if isinstance(arg, str):
        m = _STEP_REF.fullmatch(arg.strip())
        if m:
            n = int(m.group(1))
            if not 1 <= n <= len(values):
                raise ToolError(f"{arg} does not name an earlier step")
            value = values[n - 1]
            return value.as_json(), value.unit
    return arg, None


def run_plan(world: World, tools: Mapping[str, ToolSpec], plan: Any, *, check_units: bool = True) -> PlanRun:
    """Execute a plan (list of ``{"tool": name, "args": {...}}``), stopping at the first failing step.

    :param check_units: refuse referenced values whose unit contradicts the step; ``False`` computes what a
        plan that ignores units would produce (the generator uses it for the answers of wrong plans)
    """
    if not isinstance(plan, list) or not plan:
        return PlanRun((), 1, "the plan must be a non-empty list of steps")
    if len(plan) > MAX_PLAN_STEPS:
        return PlanRun((), MAX_PLAN_STEPS + 1, f"the plan has {len(plan)} steps; at most {MAX_PLAN_STEPS}")
    values: list[Value] = []
    billed: dict[str, float] = {}
    for i, step in enumerate(plan, start=1):
        if not (isinstance(step, dict) and isinstance(step.get("tool"), str) and isinstance(step.get("args"), dict)):
            return PlanRun(tuple(values), i, "a step must be an object with a 'tool' name and an 'args' object",
                           billed)
        name, raw_args = step["tool"], step["args"]
        try:
            args: dict[str, Any] = {}
            units: dict[str, Unit] = {}
            for key, raw in raw_args.items():
                args[key], unit = _resolve(raw, values)
                if unit is not None and check_units:
                    units[key] = unit
            problem = validate_call(tools, ToolCall(name, args))
            if problem:
                raise ToolError(problem)
            for item, quantity in tools[name].bills.items():
                billed[item] = billed.get(item, 0.0) + quantity
            values.append(execute(world, name, args, values, units))
        except ToolError as exc:
            return PlanRun(tuple(values), i, f"{name}: {exc}", billed)
    return PlanRun(tuple(values), billed=billed)


def check_plan(world: World, tools: Mapping[str, ToolSpec], payload: Mapping[str, Any], content: str) -> CheckResult:
    """The checker's verdict on a draft: the plan runs, returns the unit the task asks for, and its result
    matches the stated answer.

    :param world: the rate and lookup tables
    :param tools: the tool specs the steps are validated against
    :param payload: the task's ``answer_unit`` (a unit) and ``unit_name`` (how the task spells it)
    :param content: the draft (JSON text)
    """
    parsed = parse_draft(content)
    if isinstance(parsed, str):
        return CheckResult(False, parsed, specificity=0.3, n_passed=0, n_total=1)
    plan, answer = parsed
    run = run_plan(world, tools, plan)
    readable = isinstance(plan, list) and 0 < len(plan) <= MAX_PLAN_STEPS
    counts = {"n_total": len(plan) + 1 if readable else 1, "billed": dict(run.billed) or None}
    if not run.ok:
        return CheckResult(False, f"step {run.failed_step} failed: {run.error}", specificity=0.9,
                           n_passed=run.failed_step - 1 if readable else 0, **counts)
    result = run.result
    want = payload["answer_unit"]
    n = len(run.values)
    if result.unit != want:
        got = "a date" if result.unit == DATE else (f"a value in {format_unit(result.unit)}"
                                                     if result.unit else "a plain number")
        return CheckResult(False, f"the last step ({n}) returns {got}, but the task asks for "
                                  f"{payload['unit_name']}", specificity=0.8, n_passed=n, **counts)
    if not answer_close(answer, result.as_json()):
        return CheckResult(False, f"the answer {answer!r} does not match the plan's result "
                                  f"{result.render()} (step {n})", specificity=0.9, n_passed=n, **counts)
    return CheckResult(True, f"the plan ran ({n} steps) and its result {result.render()} matches the answer",
                       specificity=1.0, n_passed=n + 1, **counts)
