"""The planning domain: schedule meetings into slots and rooms under hard and soft constraints.

The draft is a schedule ``{"assignments": {meeting: {"slot": "Mon-09", "room": name}}}``. The checker
(:mod:`.checker`) is the booking system's verifier: it checks the task's verified hard rules (every rule, or all
but those the prompt marks "not verified"), counts how many hold and names every violated one; it does not
look at preferences. The hidden grader (:mod:`.grader`) scores 0 when any hard constraint is violated and
otherwise ``(1 + optimum) / (1 + cost)``, the soft cost relative to the exact optimum stored with the task
(found by the project's branch-and-bound solver, re-verified by the tests).

What the harness holds (the hooks read the prompt only, :mod:`.prompt`): the people and rooms the prompt
names are the task's keys, unless the task hands their calendars and the room directory over with it; the
visible checks are the rules the verifier checks; the room directory and the preferences come from the
operator's scheduling system (``api_call:internal`` each), the slot grid is fixed text (free).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness_gym.core.domain import WHOLE_PAYLOAD, Domain
from harness_gym.core.paths import data_path
from harness_gym.core.sandbox import Sandbox
from harness_gym.core.taskfile import TaskFileError, parse_task, read_documents, read_jsonl, require
from harness_gym.core.types import CheckResult, Context, Draft, Task, ToolCall, ToolResult
from harness_gym.domains.plan.checker import check_schedule, parse_draft
from harness_gym.domains.plan.grader import grade_schedule
from harness_gym.domains.plan.instance import Instance, InstanceError
from harness_gym.domains.plan.prompt import prompt_has_attachment, prompt_people, prompt_rooms, prompt_verified_rules
from harness_gym.domains.plan.tools import TOOLS


class PlanDomain(Domain):
    """Meeting scheduling with availability, capacity, conflicts, precedence, deadlines (and, out of
    distribution, equipment and a daily limit), graded against the exact optimum of the soft cost.

    :param data_dir: folder holding ``corpus.jsonl`` and ``tasks.jsonl``
    """

    name = "plan"
    uses_sandbox = False
    tool_needs_draft = False
    success_threshold = 0.999
    hidden_payload_keys = frozenset({WHOLE_PAYLOAD})
    """The whole payload: the compiled :class:`~harness_gym.domains.plan.instance.Instance` (calendars, rooms,
    preferences: what the tools and OBSERVE reveal) with the optimum the grader scores against; no hook reads it."""
    OBSERVATION_BILLS: tuple[Mapping[str, float], ...] = ({"api_call:internal": 1}, {"api_call:internal": 1}, {})
    """What revealing each observation costs when it is looked up: the room directory and the attendees' stored
    preferences come from the operator's scheduling system; the bookable slot grid is fixed text."""

    def __init__(self, data_dir: str | Path) -> None:
        super().__init__()
        root = Path(data_dir)
        self.tools = TOOLS.specs
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
    def call_tool(self, task: Task, call: ToolCall, ctx: Context, sandbox: Sandbox | None,
                  *, resource: None = None) -> ToolResult:
        return TOOLS.call(call.name, self.instance(task), **call.args)

    def argument_values(self, task: Task, tool: str, arg: str) -> list[Any]:
        """A person is one of the task's team (their calendar exists), a room one of its rooms."""
        inst = self.instance(task)
        if (tool, arg) == ("availability", "person"):
            return sorted(inst.free)
        if (tool, arg) == ("room_info", "room"):
            return sorted(inst.rooms)
        return super().argument_values(task, tool, arg)

    def wrong_tool_calls(self, task: Task) -> tuple[ToolCall, ...]:
        """Besides the calendars of team members the task does not need, the directory entry of each of its
        rooms: real answers that are not the evidence (the calendars of its attendees)."""
        got = self._wrong_calls.get(task.task_id)
        if got is None:
            calls = {c.key(): c for c in super().wrong_tool_calls(task)}
            if task.tool_calls:
                calls.update((c.key(), c) for c in (ToolCall("room_info", {"room": r})
                                                    for r in sorted(self.instance(task).rooms)))
            got = self._wrong_calls[task.task_id] = tuple(calls.values())
        return got

    # ----- CHECK / SUBMIT ----------------------------------------------------------------------------
    def check(self, task: Task, draft: Draft, sandbox: Sandbox | None, *, resource: None = None) -> CheckResult:
        return check_schedule(self.instance(task), draft.content)

    def grade(self, task: Task, draft: Draft, sandbox: Sandbox | None, *, resource: None = None) -> float:
        return grade_schedule(self.instance(task), self._optimum[task.task_id], draft.content)

    # ----- signals the harness holds ------------------------------------------------------------------
    def task_keys(self, task: Task) -> tuple[str, ...]:
        """The people and rooms the prompt names (lower-cased), whose calendars and details a harness looks up;
        none when the prompt hands them over (its ``Attached:`` block)."""
        if prompt_has_attachment(task.prompt):
            return ()
        return tuple(dict.fromkeys(k.lower() for k in prompt_people(task.prompt) + prompt_rooms(task.prompt)))

    def n_visible_checks(self, task: Task) -> int:
        """The hard rules the prompt lists that the verifier checks (those not marked "not verified"): the
        ``n_total`` of every CHECK on the task."""
        return prompt_verified_rules(task.prompt)

    def tool_answers(self, task: Task, call: ToolCall, result: ToolResult) -> bool:
        """``availability`` and ``room_info`` answer when their output names the person or room asked for;
        ``dry_run`` answers whenever it ran (its verdict is the answer, also when it names nobody)."""
        if not result.ok:
            return False
        if call.name == "dry_run":
            return True
        return any(isinstance(v, str) and v and v in result.output for v in call.args.values())

    def observe_bill(self, task: Task, index: int) -> Mapping[str, float]:
        """The room directory and the preferences cost an ``api_call:internal`` each when they are looked up,
        nothing when the prompt hands them over; the slot grid is free."""
        if prompt_has_attachment(task.prompt) or not 0 <= index < len(self.OBSERVATION_BILLS):
            return {}
        return self.OBSERVATION_BILLS[index]

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
