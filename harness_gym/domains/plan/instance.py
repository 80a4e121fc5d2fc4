"""Scheduling instances, the hard-constraint verifier, the soft-constraint cost and an exact solver.

An instance places meetings into (slot, room) pairs. Hard constraints: every meeting scheduled once in a
known slot and room, every attendee free in that slot, the room large enough (and, where asked, equipped),
no person or room in two meetings at once, precedence (``A`` strictly before ``B``), deadlines (at or before a
slot) and, where set, at most ``k`` meetings per person per day. Soft constraints give a cost to minimise:
the weight of every unmet time or room preference plus ``gap_weight`` per idle slot between two meetings of
one person on one day. :func:`solve` finds the optimum by depth-first branch and bound.

The hard constraints are stated as numbered **rules** (:meth:`Instance.rules`), the list a task's prompt shows.
Each violation names the rule it breaks. The booking system's verifier (what CHECK and ``dry_run`` run) checks
the rules of :meth:`Instance.verified_rules`: every rule, or, where the instance lists ``unverified`` rules,
only the others (a calendar and room-booking system knows its calendars and rooms, not the requester's
business rules such as precedence, deadlines or a daily limit: :data:`BUSINESS_RULE_KINDS`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

Assignment = dict[str, tuple[str, str]]
"""meeting -> (slot, room)."""

BUSINESS_RULE_KINDS: frozenset[str] = frozenset({"precedence", "deadline", "max_per_day"})
"""Rule kinds a booking system does not know about: the ones an instance may leave unverified."""


@dataclass(frozen=True)
class Rule:
    """One hard rule as the prompt states it: its id (``"availability"``, ``"precedence:M1:M4"``,
    ``"deadline:M3"``, ...), its kind (the id before any ``:``) and its text."""

    rule_id: str
    text: str

    @property
    def kind(self) -> str:
        return self.rule_id.split(":")[0]


@dataclass(frozen=True)
class Violation:
    """A violated hard constraint: its kind, a message naming the culprits and the rule it breaks.

    The kinds: ``unknown_meeting``, ``unscheduled``, ``unknown_slot``, ``unknown_room``,
    ``availability``, ``capacity``, ``equipment``, ``person_conflict``, ``room_conflict``, ``precedence``,
    ``deadline``, ``max_per_day``. The rule is a :attr:`Rule.rule_id` (see :data:`RULE_OF_KIND`).
    """

    kind: str
    message: str
    rule: str = ""


RULE_OF_KIND: dict[str, str] = {
    "unknown_meeting": "schedule", "unscheduled": "schedule", "unknown_slot": "schedule", "unknown_room": "schedule",
    "availability": "availability", "capacity": "rooms", "room_conflict": "rooms", "person_conflict": "people",
    "equipment": "equipment", "max_per_day": "max_per_day",
}
"""The rule each violation kind breaks (precedence and deadline violations name their own rule instance)."""
VIOLATION_MEMO_SIZE = 512
"""Plans whose violations an instance keeps (all of them are forgotten when it is full)."""


class InstanceError(ValueError):
    """An instance definition is inconsistent (unknown person, slot or room in its constraints)."""


class Instance:
    """A scheduling instance compiled for fast verification and search.

    :param spec: ``{"days", "hours", "people": {name: [free slots]}, "rooms": {name: {"capacity", "equipment"}},
        "meetings": {id: {"title", "attendees", "needs"}}, "precedence": [[a, b]], "deadlines": {id: slot},
        "max_per_day": int | null, "soft": {"prefer": [{"meeting", "when", "weight"}],
        "room_prefs": [{"meeting", "room", "weight"}], "gap_weight"}}``
    """

    CACHE_ATTRIBUTES = ("_violations_of",)
    """kept results, not data: :func:`harness_gym.budget.fingerprint.fingerprint` leaves them out"""

    def __init__(self, spec: Mapping[str, Any]) -> None:
        self.days: list[str] = list(spec["days"])
        self.hours: list[int] = [int(h) for h in spec["hours"]]
        self.slots: list[str] = [slot_name(d, h) for d in self.days for h in self.hours]
        self.slot_index = {s: i for i, s in enumerate(self.slots)}
        self._day_pos = {slot_name(d, h): (d, i) for d in self.days for i, h in enumerate(self.hours)}
        self.free: dict[str, frozenset[str]] = {p: frozenset(v) for p, v in spec["people"].items()}
        self.rooms: dict[str, dict[str, Any]] = {r: dict(v) for r, v in spec["rooms"].items()}
        self.meetings: dict[str, dict[str, Any]] = {m: dict(v) for m, v in spec["meetings"].items()}
        self.precedence: list[tuple[str, str]] = [(a, b) for a, b in spec.get("precedence", [])]
        self.deadlines: dict[str, str] = dict(spec.get("deadlines", {}))
        self.max_per_day: int | None = spec.get("max_per_day")
        self.unverified: frozenset[str] = frozenset(spec.get("unverified", ()))
        soft = spec.get("soft", {})
        self.prefer: list[dict[str, Any]] = list(soft.get("prefer", []))
        self.room_prefs: list[dict[str, Any]] = list(soft.get("room_prefs", []))
        self.gap_weight: float = float(soft.get("gap_weight", 0.0))
        self._violations_of: dict[tuple[tuple[str, tuple[str, str]], ...], tuple[Violation, ...]] = {}
        self._validate()

    def _validate(self) -> None:
        for m, meet in self.meetings.items():
            for p in meet["attendees"]:
                if p not in self.free:
                    raise InstanceError(f"meeting {m}: unknown attendee {p!r}")
        named = [m for pair in self.precedence for m in pair] + list(self.deadlines)
        named += [p["meeting"] for p in self.prefer + self.room_prefs]
        for m in named:
            if m not in self.meetings:
                raise InstanceError(f"constraint names unknown meeting {m!r}")
        for m, s in self.deadlines.items():
            if s not in self.slot_index:
                raise InstanceError(f"deadline of {m}: unknown slot {s!r}")
        for p in self.prefer:
            if p["when"] not in ("morning", "afternoon", *self.days):
                raise InstanceError(f"preference of {p['meeting']}: unknown time {p['when']!r}")
        for p in self.room_prefs:
            if p["room"] not in self.rooms:
                raise InstanceError(f"room preference of {p['meeting']}: unknown room {p['room']!r}")
        rules = {r.rule_id: r for r in self.rules()}
        for rule_id in sorted(self.unverified):
            if rule_id not in rules:
                raise InstanceError(f"unverified rule {rule_id!r} is not a rule of the instance ({', '.join(rules)})")
            if rules[rule_id].kind not in BUSINESS_RULE_KINDS:
                raise InstanceError(f"unverified rule {rule_id!r}: only business rules "
                                    f"({', '.join(sorted(BUSINESS_RULE_KINDS))}) can be left unverified")

    # ----- rules -------------------------------------------------------------------------------------
    def rules(self) -> list[Rule]:
        """The hard rules in the order a prompt lists them."""
        out = [Rule("schedule", "every meeting is scheduled once, in a bookable slot and one of the rooms"),
               Rule("availability", "every attendee must be available"),
               Rule("rooms", "a room holds one meeting per slot and seats at most its capacity"),
               Rule("people", "nobody attends two meetings in the same slot")]
        if any(m.get("needs") for m in self.meetings.values()):
            out.append(Rule("equipment", "a meeting that needs equipment must be in a room that has it"))
        out += [Rule(f"precedence:{a}:{b}", f"{a} must happen before {b}") for a, b in self.precedence]
        out += [Rule(f"deadline:{m}", f"{m} must take place by {s}") for m, s in self.deadlines.items()]
        if self.max_per_day is not None:
            out.append(Rule("max_per_day", f"nobody has more than {self.max_per_day} meetings on one day"))
        return out

    def verified_rules(self) -> list[Rule]:
        """The rules the booking system's verifier checks (CHECK and ``dry_run``), in prompt order."""
        return [r for r in self.rules() if r.rule_id not in self.unverified]

    def day(self, slot: str) -> str:
        return slot.split("-")[0]

    def hour(self, slot: str) -> int:
        return int(slot.split("-")[1])

    def size(self, meeting: str) -> int:
        return len(self.meetings[meeting]["attendees"])

    # ----- hard constraints --------------------------------------------------------------------------
    def options(self, meeting: str) -> list[tuple[str, str]]:
        """(slot, room) pairs allowed by the unary constraints: availability, capacity, equipment, deadline."""
        meet = self.meetings[meeting]
        needs = set(meet.get("needs", ()))
        last = self.slot_index[self.deadlines[meeting]] if meeting in self.deadlines else len(self.slots) - 1
        rooms = [r for r, info in self.rooms.items()
                 if info["capacity"] >= len(meet["attendees"]) and needs <= set(info.get("equipment", ()))]
        return [(s, r) for i, s in enumerate(self.slots) if i <= last
                and all(s in self.free[p] for p in meet["attendees"]) for r in rooms]

    def violations(self, plan: Assignment) -> list[Violation]:
        """Every violated hard constraint of a plan whose entries are (slot, room) strings, each with its rule.

        Kept per plan (its entries in order, which orders the messages): CHECK, ``dry_run``, the knowledge
        signal and the grader judge the few drafts of a task again and again, and the instance never changes.
        """
        entries = tuple(plan.items())
        try:
            known = self._violations_of.get(entries)
        except TypeError:  # an entry that is not (str, str): judged afresh every time
            return [replace(v, rule=RULE_OF_KIND.get(v.kind, v.rule)) for v in self._violations(plan)]
        if known is None:
            if len(self._violations_of) >= VIOLATION_MEMO_SIZE:
                self._violations_of.clear()
            known = self._violations_of[entries] = tuple(
                replace(v, rule=RULE_OF_KIND.get(v.kind, v.rule)) for v in self._violations(plan))
        return list(known)

    def _violations(self, plan: Assignment) -> list[Violation]:
        out: list[Violation] = []
        valid: Assignment = {}
        for m, (slot, room) in plan.items():
            if m not in self.meetings:
                out.append(Violation("unknown_meeting", f"{m} is not one of the meetings ({', '.join(self.meetings)})"))
            elif slot not in self.slot_index:
                out.append(Violation("unknown_slot", f"{m}: {slot!r} is not a bookable slot"))
            elif room not in self.rooms:
                out.append(Violation("unknown_room", f"{m}: {room!r} is not a room ({', '.join(self.rooms)})"))
            else:
                valid[m] = (slot, room)
        for m in self.meetings:
            if m not in plan:
                out.append(Violation("unscheduled", f"{m} ({self.meetings[m]['title']}) is not scheduled"))
        by_person: dict[tuple[str, str], list[str]] = {}
        by_room: dict[tuple[str, str], list[str]] = {}
        per_day: Counter[tuple[str, str]] = Counter()
        for m, (slot, room) in valid.items():
            meet = self.meetings[m]
            busy = [p for p in meet["attendees"] if slot not in self.free[p]]
            if busy:
                out.append(Violation("availability", f"{m} at {slot}: {', '.join(busy)} not available"))
            cap = self.rooms[room]["capacity"]
            if cap < len(meet["attendees"]):
                out.append(Violation("capacity", f"{m} has {len(meet['attendees'])} attendees but {room} seats {cap}"))
            missing = sorted(set(meet.get("needs", ())) - set(self.rooms[room].get("equipment", ())))
            if missing:
                out.append(Violation("equipment", f"{m} needs {', '.join(missing)}, which {room} lacks"))
            if m in self.deadlines and self.slot_index[slot] > self.slot_index[self.deadlines[m]]:
                out.append(Violation("deadline", f"{m} at {slot} is after its deadline {self.deadlines[m]}",
                                     f"deadline:{m}"))
            for p in meet["attendees"]:
                by_person.setdefault((p, slot), []).append(m)
                per_day[(p, self.day(slot))] += 1
            by_room.setdefault((room, slot), []).append(m)
        for (p, slot), ms in by_person.items():
            if len(ms) > 1:
                out.append(Violation("person_conflict", f"{p} is in {' and '.join(ms)} at {slot}"))
        for (room, slot), ms in by_room.items():
            if len(ms) > 1:
                out.append(Violation("room_conflict", f"{room} holds {' and '.join(ms)} at {slot}"))
        for a, b in self.precedence:
            if a in valid and b in valid and self.slot_index[valid[a][0]] >= self.slot_index[valid[b][0]]:
                out.append(Violation("precedence", f"{a} ({valid[a][0]}) must come before {b} ({valid[b][0]})",
                                     f"precedence:{a}:{b}"))
        if self.max_per_day is not None:
            for (p, d), n in per_day.items():
                if n > self.max_per_day:
                    out.append(Violation("max_per_day", f"{p} has {n} meetings on {d}; at most {self.max_per_day}"))
        return out

    # ----- soft constraints --------------------------------------------------------------------------
    def _pref_met(self, pref: Mapping[str, Any], slot: str) -> bool:
        when = pref["when"]
        if when == "morning":
            return self.hour(slot) < 12
        if when == "afternoon":
            return self.hour(slot) >= 12
        return self.day(slot) == when

    def preference_cost(self, plan: Assignment) -> float:
        """Weights of the unmet time and room preferences of the meetings in ``plan`` (monotone in ``plan``)."""
        cost = 0.0
        for pref in self.prefer:
            got = plan.get(pref["meeting"])
            if got is not None and not self._pref_met(pref, got[0]):
                cost += pref["weight"]
        for pref in self.room_prefs:
            got = plan.get(pref["meeting"])
            if got is not None and got[1] != pref["room"]:
                cost += pref["weight"]
        return cost

    def gaps(self, plan: Assignment) -> int:
        """Idle slots between two meetings of the same person on the same day, summed over people and days."""
        positions: dict[tuple[str, str], list[int]] = {}
        for m, (slot, _) in plan.items():
            day, pos = self._day_pos[slot]
            for p in self.meetings[m]["attendees"]:
                positions.setdefault((p, day), []).append(pos)
        return sum(max(v) - min(v) + 1 - len(v) for v in positions.values() if len(v) > 1)

    def cost(self, plan: Assignment) -> float:
        """The soft-constraint cost of a plan (lower is better)."""
        return self.preference_cost(plan) + self.gap_weight * self.gaps(plan)

    def quality(self, plan: Assignment, optimum: float) -> float:
        """Grade of a plan that meets every hard constraint: ``(1 + optimum) / (1 + cost)``, 1 at the optimum."""
        return min(1.0, (1.0 + optimum) / (1.0 + self.cost(plan)))

    # ----- search ------------------------------------------------------------------------------------
    def _search(self, order: list[tuple[str, list[tuple[str, str]]]],
                prune: Callable[[float], bool]) -> Iterator[Assignment]:
        """Depth-first over ``order`` (meeting, options); yields every complete feasible plan not pruned.

        ``prune(lower_bound)`` cuts a branch; the preference cost of a partial plan is a lower bound of the
        cost of every completion, since gaps are never negative.
        """
        plan: Assignment = {}
        people_busy: set[tuple[str, str]] = set()
        rooms_busy: set[tuple[str, str]] = set()
        per_day: Counter[tuple[str, str]] = Counter()
        preds = {m: [a for a, b in self.precedence if b == m] for m in self.meetings}
        succs = {m: [b for a, b in self.precedence if a == m] for m in self.meetings}

        def fits(m: str, slot: str, room: str) -> bool:
            if (room, slot) in rooms_busy:
                return False
            attendees = self.meetings[m]["attendees"]
            if any((p, slot) in people_busy for p in attendees):
                return False
            i = self.slot_index[slot]
            if any(a in plan and self.slot_index[plan[a][0]] >= i for a in preds[m]):
                return False
            if any(b in plan and self.slot_index[plan[b][0]] <= i for b in succs[m]):
                return False
            if self.max_per_day is not None:
                d = self.day(slot)
                return all(per_day[(p, d)] < self.max_per_day for p in attendees)
            return True

        def rec(k: int) -> Iterator[Assignment]:
            if prune(self.preference_cost(plan)):
                return
            if k == len(order):
                yield dict(plan)
                return
            m, opts = order[k]
            attendees = self.meetings[m]["attendees"]
            for slot, room in opts:
                if not fits(m, slot, room):
                    continue
                plan[m] = (slot, room)
                rooms_busy.add((room, slot))
                d = self.day(slot)
                for p in attendees:
                    people_busy.add((p, slot))
                    per_day[(p, d)] += 1
                yield from rec(k + 1)
                del plan[m]
                rooms_busy.discard((room, slot))
                for p in attendees:
                    people_busy.discard((p, slot))
                    per_day[(p, d)] -= 1

        yield from rec(0)

    def _order(self) -> list[tuple[str, list[tuple[str, str]]]]:
        """Most constrained meeting first (fewest options); each meeting's options cheapest first, so that
        branch and bound finds a good incumbent early."""
        opts = {m: sorted(self.options(m), key=lambda o, m=m: self.preference_cost({m: o})) for m in self.meetings}
        return sorted(opts.items(), key=lambda kv: (len(kv[1]), kv[0]))

    def solve(self) -> tuple[float, Assignment | None]:
        """The minimum soft cost over all feasible plans and a plan reaching it (``inf, None``: infeasible)."""
        best: list[Any] = [math.inf, None]
        for plan in self._search(self._order(), lambda lb: lb >= best[0]):
            c = self.cost(plan)
            if c < best[0]:
                best[0], best[1] = c, plan
        return best[0], best[1]

    def sample_feasible(self, rng: np.random.Generator, limit: int, max_nodes: int = 20000) -> list[Assignment]:
        """Up to ``limit`` feasible plans found by depth-first search over shuffled options."""
        order = []
        for m, opts in self._order():
            opts = list(opts)
            rng.shuffle(opts)
            order.append((m, opts))
        visits = [0]

        def prune(_: float) -> bool:
            visits[0] += 1
            return visits[0] > max_nodes

        out: list[Assignment] = []
        for plan in self._search(order, prune):
            out.append(plan)
            if len(out) >= limit:
                break
        return out


def slot_name(day: str, hour: int) -> str:
    return f"{day}-{hour:02d}"
