"""A planning task's text: how the generator writes the prompt from an instance, and how the domain's hooks read
back what the prompt names (people, rooms, the rules the verifier checks, whether the facts are attached).

The prompt lists the meetings with their attendees, the rooms, then the hard rules as ``R1: ...; R2: ...``,
a rule the booking system's verifier does not check written ``R5 (not verified): ...``. A task whose facts come
with it adds an ``Attached:`` block holding every attendee's free slots, the room directory and the soft
preferences; the other tasks name the people and rooms only, and their calendars are looked up with the
``availability`` tool.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from harness_gym.domains.plan.instance import Instance

ATTACHED = "Attached:"
"""Opens the block of a task whose calendars, rooms and preferences are handed over with it."""
NOT_VERIFIED = "(not verified)"
"""Marks a rule the verifier does not check."""
FORMAT = '{"assignments": {meeting: {"slot": "Mon-09", "room": name}}}'

_MEETING = re.compile(r"\b(M\d+) '[^']*' \(([^)]*)\)")
_ROOMS = re.compile(r" in rooms ([^.]*)\. Meetings:")
_RULE = re.compile(r"\bR\d+( \(not verified\))?: ")


def rules_text(instance: Instance) -> str:
    """The numbered hard rules, unverified ones marked, and what the verifier checks."""
    parts = [f"R{i}{' ' + NOT_VERIFIED if r.rule_id in instance.unverified else ''}: {r.text}"
             for i, r in enumerate(instance.rules(), start=1)]
    scope = ("every rule not marked 'not verified'" if instance.unverified else "every rule")
    return f"Hard rules: {'; '.join(parts)}. The booking system's verifier (CHECK and dry_run) checks {scope}."


def free_slots_text(instance: Instance, people: Sequence[str]) -> str:
    """Each person's free slots, in slot order."""
    return "; ".join(f"{p}: {', '.join(s for s in instance.slots if s in instance.free[p]) or 'no slot'}"
                     for p in people)


def write_prompt(spec: dict[str, Any], what: str, attached: Sequence[str] = ()) -> str:
    """The prompt of a task.

    :param spec: the instance specification
    :param what: what the template schedules ("the team's meetings this week")
    :param attached: the texts handed over with the task (room directory, soft preferences); empty for a task
        whose facts are looked up
    """
    inst = Instance(spec)
    meets = "; ".join(f"{m} '{v['title']}' ({', '.join(v['attendees'])})"
                      + (f", needs {', '.join(v['needs'])}" if v.get("needs") else "")
                      for m, v in spec["meetings"].items())
    facts = ""
    if attached:
        people = sorted({p for v in spec["meetings"].values() for p in v["attendees"]})
        facts = f" {ATTACHED} free slots: {free_slots_text(inst, people)}. " + " ".join(attached)
    return (f"Schedule {what} into one-hour slots on {' and '.join(spec['days'])} in rooms "
            f"{', '.join(spec['rooms'])}. Meetings: {meets}.{facts} {rules_text(inst)} Among valid schedules, "
            f"minimise the soft-preference cost. Reply with JSON {FORMAT}.")


def prompt_people(prompt: str) -> list[str]:
    """The attendees the prompt's meeting list names, in order of first mention."""
    seen: dict[str, None] = {}
    for match in _MEETING.finditer(prompt):
        for name in match.group(2).split(","):
            if name.strip():
                seen.setdefault(name.strip(), None)
    return list(seen)


def prompt_rooms(prompt: str) -> list[str]:
    """The rooms the prompt names."""
    match = _ROOMS.search(prompt)
    return [r.strip() for r in match.group(1).split(",") if r.strip()] if match else []


def prompt_verified_rules(prompt: str) -> int:
    """How many of the prompt's hard rules the verifier checks (those not marked 'not verified')."""
    return sum(1 for match in _RULE.finditer(prompt) if not match.group(1))


def prompt_has_attachment(prompt: str) -> bool:
    """Whether the task hands over the calendars, rooms and preferences with its text."""
    return f" {ATTACHED} " in prompt
