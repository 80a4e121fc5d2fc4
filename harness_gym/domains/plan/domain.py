"""The planning domain: schedule meetings into slots and rooms under hard and soft constraints (DESIGN §4).

The draft is a schedule ``{"assignments": {meeting: {"slot": "Mon-09", "room": name}}}``. The checker is the
hard-constraint verifier (:meth:`~harness_gym.domains.plan.model.Instance.violations`) and names every
violated constraint; it does not look at preferences. The hidden grader scores 0 when any hard constraint
is violated and otherwise ``(1 + optimum) / (1 + cost)``, the soft cost relative to the exact optimum stored
with the task (found by the project's branch-and-bound solver, re-verified by the tests).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from harness_gym.core.domain import Domain
from harness_gym.core.taskfile import TaskFileError, parse_task, read_documents, read_jsonl, require
from harness_gym.core.tools import ToolSpec
from harness_gym.core.types import CheckResult, Context, Draft, Task, ToolCall, ToolResult
from harness_gym.domains.plan.model import Assignment, Instance, InstanceError, Violation
from harness_gym.paths import data_path
from harness_gym.sandbox.base import Sandbox

_NAME = {"type": "string", "minLength": 1, "maxLength": 40}


def _schema(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


TOOL_SPECS: dict[str, ToolSpec] = {spec.name: spec for spec in (
    ToolSpec("availability", "The slots in which a person is free.", _schema({"person": _NAME})),
    ToolSpec("room_info", "Capacity and equipment of a room.", _schema({"room": _NAME})),
    ToolSpec("dry_run", "Check a schedule against the hard rules; lists every violated rule (no scoring).",
             _schema({"assignments": {"type": "object"}})),
)}


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


@functools.lru_cache(maxsize=4096)
def parse_draft(content: str) -> Assignment | str:
    """The schedule of a draft, or a message saying why it cannot be read."""
    try:
        obj = json.loads(content)
    except json.JSONDecodeError as exc:
        return f"the draft is not valid JSON: {exc.msg} (column {exc.colno})"
    if not isinstance(obj, dict) or "assignments" not in obj:
        return 'the draft must be a JSON object with "assignments"'
    return read_assignments(obj["assignments"])


def describe(violations: list[Violation]) -> str:
    """Checker feedback: each violated hard constraint by kind, with its culprits."""
    if not violations:
        return "no hard constraint violated"
    shown = "; ".join(f"{v.kind}: {v.message}" for v in violations[:4])
    more = f" (+{len(violations) - 4} more)" if len(violations) > 4 else ""
    return f"{len(violations)} hard constraint violation(s): {shown}{more}"


class PlanDomain(Domain):
    """Meeting scheduling with availability, capacity, conflicts, precedence, deadlines (and, out of
    distribution, equipment and a daily limit), graded against the exact optimum of the soft cost.

    :param data_dir: folder holding ``corpus.jsonl`` and ``tasks.jsonl``
    """

    name = "plan"
    uses_sandbox = False
    tool_needs_draft = False
    success_threshold = 0.999

    def __init__(self, data_dir: str | Path) -> None:
        super().__init__()
        root = Path(data_dir)
        self.tools = dict(TOOL_SPECS)
        self.corpus = read_documents(root / "corpus.jsonl")
        self._instances: dict[str, Instance] = {}
        self._optimum: dict[str, float] = {}
        path = root / "tasks.jsonl"
        tasks = []
        for line, rec in read_jsonl(path):
            tid = require(rec, "task_id", str, path=path, line=line)
            payload = require(rec, "payload", dict, path=path, line=line, task_id=tid)
            spec = require(payload, "instance", dict, path=path, line=line, task_id=tid)
            optimum = require(payload, "optimum", float, path=path, line=line, task_id=tid)
            try:
                inst = Instance(spec)
            except (InstanceError, KeyError, TypeError, ValueError) as exc:
                raise TaskFileError(path, f"bad instance: {exc!r}", line=line, task_id=tid,
                                    field="payload.instance") from None
            tasks.append(parse_task(rec, path=path, line=line, payload=inst))
            self._instances[tid] = inst
            self._optimum[tid] = optimum
        self.add_tasks(tasks)

    def instance(self, task: Task) -> Instance:
        return self._instances[task.task_id]

    def optimum(self, task: Task) -> float:
        """The minimum soft cost over feasible schedules, as stored with the task."""
        return self._optimum[task.task_id]

    # ----- TOOL --------------------------------------------------------------------------------------
    def call_tool(self, task: Task, call: ToolCall, ctx: Context, sandbox: Sandbox | None) -> ToolResult:
        inst = self.instance(task)
        if call.name == "availability":
            person = call.args["person"]
            if person not in inst.free:
                return ToolResult(False, "", f"availability: unknown person {person!r}; people: {', '.join(inst.free)}")
            free = [s for s in inst.slots if s in inst.free[person]]
            return ToolResult(True, f"{person} is free at: {', '.join(free) or 'no slot'}")
        if call.name == "room_info":
            room = call.args["room"]
            if room not in inst.rooms:
                return ToolResult(False, "", f"room_info: unknown room {room!r}; rooms: {', '.join(inst.rooms)}")
            info = inst.rooms[room]
            return ToolResult(True, f"{room}: seats {info['capacity']}; equipment: "
                                    f"{', '.join(info.get('equipment', ())) or 'none'}")
        plan = read_assignments(call.args["assignments"])
        if isinstance(plan, str):
            return ToolResult(False, "", f"dry_run: {plan}")
        return ToolResult(True, describe(inst.violations(plan)))

    # ----- CHECK / SUBMIT ----------------------------------------------------------------------------
    def check(self, task: Task, draft: Draft, sandbox: Sandbox | None) -> CheckResult:
        plan = parse_draft(draft.content)
        if isinstance(plan, str):
            return CheckResult(False, plan, specificity=0.3)
        violations = self.instance(task).violations(plan)
        if not violations:
            return CheckResult(True, "every hard constraint holds (preferences are not checked)", specificity=1.0)
        specificity = 0.9 if len({v.kind for v in violations}) == 1 else 0.75
        return CheckResult(False, describe(violations), specificity=specificity)

    def grade(self, task: Task, draft: Draft, sandbox: Sandbox | None) -> float:
        plan = parse_draft(draft.content)
        if isinstance(plan, str):
            return 0.0
        inst = self.instance(task)
        if inst.violations(plan):
            return 0.0
        return inst.quality(plan, self._optimum[task.task_id])

    # ----- evidence ----------------------------------------------------------------------------------
    def knowledge_signal(self, task: Task, ctx: Context, call: ToolCall | None = None) -> float:
        """Tool calls: schema validity. Drafts: +1 when every meeting, slot and room it names exists and
        every attendee is free in the chosen slot (the calendars are the knowledge base), -1 otherwise."""
        if call is not None or ctx.draft is None:
            return super().knowledge_signal(task, ctx, call)
        plan = parse_draft(ctx.draft.content)
        if isinstance(plan, str):
            return -1.0
        bad = {"unknown_meeting", "unknown_slot", "unknown_room", "availability"}
        return -1.0 if any(v.kind in bad for v in self.instance(task).violations(plan)) else 1.0


@functools.lru_cache(maxsize=8)
def load_plan_domain(data_dir: str | None = None) -> PlanDomain:
    """The domain loaded from ``data_dir`` (default ``envs_data/plan``), cached per folder."""
    return PlanDomain(data_dir if data_dir is not None else data_path("plan"))
