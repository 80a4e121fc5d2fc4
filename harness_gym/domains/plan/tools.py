"""The planning tools: a person's free slots, a room's capacity and equipment, and a dry run of a schedule
against the verified hard rules. Each declares what one call costs in a deployment (``bills=``)."""

from __future__ import annotations

from typing import Any

from harness_gym.core.types import ToolResult
from harness_gym.domains.plan.checker import VERIFIER_BILL, describe, read_assignments, verified_violations
from harness_gym.domains.plan.instance import Instance
from harness_gym.domains.tool_table import ToolTable, object_schema

TOOLS = ToolTable()
"""The planning tools; each takes the task's :class:`~harness_gym.domains.plan.instance.Instance` first."""

_NAME = {"type": "string", "minLength": 1, "maxLength": 40}


@TOOLS.tool("The slots in which a person is free.", object_schema({"person": _NAME}), bills={"api_call:free": 1})
def availability(instance: Instance, person: str) -> ToolResult:
    """The slots in which ``person`` is free, in slot order.

    Stands for a calendar free/busy query (e.g. Google Calendar's freebusy endpoint): free of charge within the
    provider's quota, so billed as ``api_call:free``.

    :param instance: the task's scheduling instance
    :param person: an attendee's name
    """
    if person not in instance.free:
        return ToolResult(False, "", f"availability: unknown person {person!r}; people: {', '.join(instance.free)}")
    free = [s for s in instance.slots if s in instance.free[person]]
    return ToolResult(True, f"{person} is free at: {', '.join(free) or 'no slot'}")


@TOOLS.tool("Capacity and equipment of a room.", object_schema({"room": _NAME}), bills={"api_call:internal": 1})
def room_info(instance: Instance, room: str) -> ToolResult:
    """The seats and equipment of ``room``.

    Stands for a lookup in the operator's own room directory behind its API gateway: ``api_call:internal``.

    :param instance: the task's scheduling instance
    :param room: a room's name
    """
    if room not in instance.rooms:
        return ToolResult(False, "", f"room_info: unknown room {room!r}; rooms: {', '.join(instance.rooms)}")
    info = instance.rooms[room]
    return ToolResult(True, f"{room}: seats {info['capacity']}; equipment: "
                            f"{', '.join(info.get('equipment', ())) or 'none'}")


@TOOLS.tool("Check a schedule against the booking system's verified hard rules; lists every violated rule "
            "(no scoring).", object_schema({"assignments": {"type": "object"}}), bills=VERIFIER_BILL)
def dry_run(instance: Instance, assignments: Any) -> ToolResult:
    """Every verified hard rule the schedule ``assignments`` violates: the verifier CHECK runs.

    Stands for a request to the booking system's validation endpoint (:data:`~.checker.VERIFIER_BILL`): one
    ``api_call:internal``.

    :param instance: the task's scheduling instance
    :param assignments: ``{meeting: {"slot", "room"}}``
    """
    plan = read_assignments(assignments)
    if isinstance(plan, str):
        return ToolResult(False, "", f"dry_run: {plan}")
    return ToolResult(True, describe(verified_violations(instance, plan), len(instance.verified_rules())))
