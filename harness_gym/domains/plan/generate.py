"""Generate the planning domain's corpus and scheduling tasks.

Deterministic for a seed; run ``python -m harness_gym.domains.plan.generate [--out DIR] [--seed N]``. Writes
``corpus.jsonl`` and ``tasks.jsonl`` to ``envs_data/plan/``.

Three templates make up train/val/test: a team's week (precedence), an interview loop (a candidate free on
one day, interviews before the debrief, a debrief deadline) and project reviews (deadlines, large meetings).
The ``ood`` split is a fourth template with constraint types never seen in training: equipment requirements,
a per-person daily meeting limit and room preferences. Every instance is solved exactly
(:meth:`~harness_gym.domains.plan.instance.Instance.solve`); the candidates are an optimal plan, feasible but
sub-optimal plans (they pass the checker and score below 1) and plans that break exactly one named hard
constraint, each labelled by the real verifier and cost.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from harness_gym.core.taskfile import write_jsonl
from harness_gym.domains.generation import family_splits, generator_main
from harness_gym.domains.plan.instance import Assignment, Instance, slot_name

NAMES = ("Ana", "Ben", "Chen", "Dara", "Eli", "Fay", "Gus", "Hana", "Ivo", "Jun", "Kai", "Lea", "Milo", "Nia",
         "Omar", "Pia", "Rosa", "Sami", "Tao", "Uma")
ROOMS = ("Oak", "Birch", "Cedar", "Elm", "Maple", "Pine", "Willow")
TITLES = ("design review", "budget sync", "roadmap", "retro", "hiring sync", "customer call prep", "security review",
          "launch plan", "ops review", "data review", "vendor call", "offsite planning")
EQUIPMENT = ("projector", "video")
DAYS = ("Mon", "Tue")
HOURS = (9, 10, 11, 14, 15, 16)
OOD_PER_FAMILY = 36
SPLIT_SHARES = (("train", 32), ("val", 10), ("test", 12))  # tasks per in-distribution family, by split

Spec = dict[str, Any]


def _slots() -> list[str]:
    return [slot_name(d, h) for d in DAYS for h in HOURS]


def _free(rng: np.random.Generator, p_free: float) -> list[str]:
    return [s for s in _slots() if rng.random() < p_free]


def _rooms(rng: np.random.Generator, caps: tuple[int, ...], equip: bool) -> dict[str, dict[str, Any]]:
    names = rng.choice(ROOMS, size=len(caps), replace=False)
    return {str(n): {"capacity": int(c),
                     "equipment": sorted(str(e) for e in EQUIPMENT if equip and rng.random() < 0.5)}
            for n, c in zip(names, caps, strict=True)}


def _meetings(rng: np.random.Generator, people: list[str], sizes: list[int]) -> dict[str, dict[str, Any]]:
    titles = rng.choice(TITLES, size=len(sizes), replace=False)
    return {f"M{i + 1}": {"title": str(t), "attendees": _pick(rng, people, k)}
            for i, (t, k) in enumerate(zip(titles, sizes, strict=True))}


def _pick(rng: np.random.Generator, people: list[str], k: int) -> list[str]:
    return sorted(str(p) for p in rng.choice(people, size=k, replace=False))


def _prefs(rng: np.random.Generator, meetings: list[str], n: int) -> list[dict[str, Any]]:
    picked = rng.choice(meetings, size=n, replace=False)
    return [{"meeting": str(m), "when": str(rng.choice(["morning", "afternoon", *DAYS])),
             "weight": int(rng.integers(1, 4))} for m in picked]


def team_week(rng: np.random.Generator) -> Spec:
    people = [str(p) for p in rng.choice(NAMES, size=6, replace=False)]
    n = int(rng.integers(4, 6))
    meetings = _meetings(rng, people, [int(rng.integers(2, 5)) for _ in range(n)])
    a, b = rng.choice(list(meetings), size=2, replace=False)
    return {"days": list(DAYS), "hours": list(HOURS), "people": {p: _free(rng, 0.65) for p in people},
            "rooms": _rooms(rng, (3, 4, 6), False), "meetings": meetings, "precedence": [[str(a), str(b)]],
            "soft": {"prefer": _prefs(rng, list(meetings), 2), "gap_weight": 1}}


def interview_loop(rng: np.random.Generator) -> Spec:
    cand, *panel = [str(p) for p in rng.choice(NAMES, size=5, replace=False)]
    day = str(rng.choice(DAYS))
    people = {cand: [s for s in _slots() if s.startswith(day) and rng.random() < 0.9]}
    people.update({p: _free(rng, 0.75) for p in panel})
    meetings = {f"M{i + 1}": {"title": f"interview {i + 1} with {cand}",
                              "attendees": sorted([cand, *_pick(rng, panel, int(rng.integers(1, 3)))])}
                for i in range(3)}
    meetings["M4"] = {"title": "debrief", "attendees": sorted(panel)}
    deadline = slot_name("Tue", int(rng.choice([11, 14, 15])))
    return {"days": list(DAYS), "hours": list(HOURS), "people": people, "rooms": _rooms(rng, (2, 3, 4), False),
            "meetings": meetings, "precedence": [[m, "M4"] for m in ("M1", "M2", "M3")],
            "deadlines": {"M4": deadline},
            "soft": {"prefer": [{"meeting": "M4", "when": day, "weight": 2}], "gap_weight": 1}}


def project_reviews(rng: np.random.Generator) -> Spec:
    people = [str(p) for p in rng.choice(NAMES, size=7, replace=False)]
    n = int(rng.integers(4, 6))
    meetings = _meetings(rng, people, [int(rng.choice([2, 3, 5, 6])) for _ in range(n)])
    deadlines = {str(m): str(rng.choice(_slots()[4:])) for m in rng.choice(list(meetings), size=2, replace=False)}
    return {"days": list(DAYS), "hours": list(HOURS), "people": {p: _free(rng, 0.7) for p in people},
            "rooms": _rooms(rng, (3, 4, 7), False), "meetings": meetings, "deadlines": deadlines,
            "soft": {"prefer": _prefs(rng, list(meetings), 3), "gap_weight": 1}}


def workshop_series(rng: np.random.Generator) -> Spec:
    people = [str(p) for p in rng.choice(NAMES, size=6, replace=False)]
    n = int(rng.integers(4, 6))
    meetings = _meetings(rng, people, [int(rng.integers(2, 5)) for _ in range(n)])
    for m in rng.choice(list(meetings), size=2, replace=False):
        meetings[str(m)]["needs"] = [str(rng.choice(EQUIPMENT))]
    rooms = _rooms(rng, (3, 5, 6), True)
    prefs_room = [{"meeting": str(m), "room": str(rng.choice(list(rooms))), "weight": int(rng.integers(1, 4))}
                  for m in rng.choice(list(meetings), size=2, replace=False)]
    return {"days": list(DAYS), "hours": list(HOURS), "people": {p: _free(rng, 0.7) for p in people},
            "rooms": rooms, "meetings": meetings, "max_per_day": 2,
            "soft": {"prefer": _prefs(rng, list(meetings), 1), "room_prefs": prefs_room, "gap_weight": 1}}


IN_DIST: tuple[Callable[[np.random.Generator], Spec], ...] = (team_week, interview_loop, project_reviews)
OOD: tuple[Callable[[np.random.Generator], Spec], ...] = (workshop_series,)

RELEVANT_DOCS = {
    "team_week": ["rule-precedence", "soft-gaps"],
    "interview_loop": ["rule-precedence", "rule-deadline"],
    "project_reviews": ["rule-deadline", "rule-capacity"],
    "workshop_series": ["rule-equipment", "rule-max_per_day"],
}


# ----- text ------------------------------------------------------------------------------------------
def plan_json(plan: Assignment, order: list[str]) -> str:
    """The draft form of a plan: ``{"assignments": {meeting: {"slot": s, "room": r}}}``."""
    return json.dumps({"assignments": {m: {"slot": plan[m][0], "room": plan[m][1]} for m in order if m in plan}})


def _prompt(spec: Spec, family: str) -> str:
    meets = "; ".join(f"{m} '{v['title']}' ({', '.join(v['attendees'])})"
                      + (f", needs {', '.join(v['needs'])}" if v.get("needs") else "")
                      for m, v in spec["meetings"].items())
    rules = ["every attendee must be available", "a room holds one meeting per slot and seats at most its capacity",
             "nobody attends two meetings in the same slot"]
    rules += [f"{a} must happen before {b}" for a, b in spec.get("precedence", [])]
    rules += [f"{m} must take place by {s}" for m, s in spec.get("deadlines", {}).items()]
    if any(v.get("needs") for v in spec["meetings"].values()):
        rules.append("a meeting that needs equipment must be in a room that has it")
    if spec.get("max_per_day") is not None:
        rules.append(f"nobody has more than {spec['max_per_day']} meetings on one day")
    what = {"team_week": "the team's meetings this week", "interview_loop": "an interview loop and its debrief",
            "project_reviews": "the project reviews", "workshop_series": "a workshop series"}[family]
    return (f"Schedule {what} into one-hour slots on {' and '.join(spec['days'])} in rooms "
            f"{', '.join(spec['rooms'])}. Meetings: {meets}. Hard rules: {'; '.join(rules)}. Among valid "
            "schedules, minimise the soft-preference cost. Reply with JSON "
            '{"assignments": {meeting: {"slot": "Mon-09", "room": name}}}.')


def _observations(spec: Spec) -> list[str]:
    slots = ", ".join(_slots())
    rooms = "; ".join(f"{r} seats {v['capacity']}" + (f" ({', '.join(v['equipment'])})" if v["equipment"] else "")
                      for r, v in spec["rooms"].items())
    soft = spec["soft"]
    prefs = [f"{p['meeting']} prefers {'the ' + p['when'] if p['when'] in ('morning', 'afternoon') else p['when']} "
             f"(weight {p['weight']})" for p in soft.get("prefer", [])]
    prefs += [f"{p['meeting']} prefers room {p['room']} (weight {p['weight']})" for p in soft.get("room_prefs", [])]
    prefs.append(f"each idle slot between two meetings of one person on one day costs {soft['gap_weight']}")
    return [f"Room directory: {rooms}.",
            f"Soft preferences (cost of each unmet one): {'; '.join(prefs)}.",
            f"Calendar: bookable slots {slots}; 12:00-14:00 is not bookable."]


def make_corpus() -> list[dict[str, str]]:
    """Scheduling policy pages, one per constraint type, the tools and the plan format."""
    docs = [
        ("guide-format", "Plan format", "A schedule is JSON {\"assignments\": {meeting id: {\"slot\": \"Mon-09\", "
         "\"room\": room name}}}. Every meeting gets exactly one slot and one room; slots are day-hour names."),
        ("rule-availability", "Rule: attendee availability", "Every attendee of a meeting must be free in its slot. "
         "availability(person) lists the free slots of one person; calendars differ from person to person."),
        ("rule-capacity", "Rule: room capacity", "A room seats at most its capacity: large meetings (five or more "
         "attendees) only fit the big rooms, so place them first. room_info(room) gives the capacity."),
        ("rule-conflicts", "Rule: no double booking", "Nobody attends two meetings in the same slot and a room holds "
         "one meeting per slot. Meetings that share an attendee need different slots."),
        ("rule-precedence", "Rule: precedence", "'A must happen before B' means A must happen in a slot strictly "
         "earlier than B's slot; both may happen on the same day. Monday slots come before Tuesday slots. A "
         "debrief must happen after every interview of the loop."),
        ("rule-deadline", "Rule: deadlines", "'M must take place by S' means M's slot is S or earlier. Schedule "
         "deadline meetings early in the week, before the slots fill up."),
        ("rule-equipment", "Rule: equipment", "A meeting that needs a projector or video equipment must be in a room "
         "that has it; room_info(room) and the room directory list the equipment of each room."),
        ("rule-max_per_day", "Rule: daily meeting limit", "Nobody has more than the allowed number of meetings on "
         "one day: count each person's meetings per day and spread the series over both days."),
        ("soft-preferences", "Soft preferences", "A preference (morning, afternoon, a day, a room) that is not met "
         "costs its weight. Hard rules come first: a schedule that breaks one scores 0."),
        ("soft-gaps", "Soft: minimise gaps", "Each idle slot between two meetings of one person on one day costs 1: "
         "back-to-back meetings on the same day are cheaper than meetings with holes between them. The lunch "
         "break is not a gap."),
        ("tool-availability", "Tool availability", "availability(person) returns the slots in which that person is "
         "free. Unknown names are errors."),
        ("tool-room_info", "Tool room_info", "room_info(room) returns the capacity and equipment of a room."),
        ("tool-dry_run", "Tool dry_run", "dry_run(assignments) checks a schedule against the hard rules and lists "
         "every violated rule; it does not score preferences."),
        ("guide-strategy", "Scheduling strategy", "Schedule the most constrained meeting first (fewest free common "
         "slots, largest attendance), check rooms, then improve preferences and close gaps without breaking a rule."),
    ]
    return [{"doc_id": i, "title": t, "text": x} for i, t, x in docs]


# ----- candidates ------------------------------------------------------------------------------------
def _violating(inst: Instance, ref: Assignment, rng: np.random.Generator) -> list[tuple[str, Assignment]]:
    """Plans that break exactly one kind of hard constraint, one per kind, from single moves of ``ref``."""
    by_kind: dict[str, list[Assignment]] = {}
    moves: list[Assignment] = []
    for m in ref:
        for slot in inst.slots:
            for room in inst.rooms:
                if (slot, room) != ref[m]:
                    moves.append({**ref, m: (slot, room)})
    for a, b in inst.precedence:
        moves.append({**ref, a: (ref[b][0], ref[a][1]), b: (ref[a][0], ref[b][1])})
    moves.append({k: v for k, v in ref.items() if k != sorted(ref)[int(rng.integers(len(ref)))]})
    for plan in moves:
        kinds = {v.kind for v in inst.violations(plan)}
        if len(kinds) == 1:
            by_kind.setdefault(kinds.pop(), []).append(plan)
    kinds = sorted(by_kind)
    rng.shuffle(kinds)
    return [(k, by_kind[k][int(rng.integers(len(by_kind[k])))]) for k in kinds[:4]]


def _suboptimal(inst: Instance, optimum: float, rng: np.random.Generator) -> list[Assignment]:
    """Up to two feasible plans costlier than the optimum: the cheapest such plan found and another one."""
    found: dict[str, tuple[float, Assignment]] = {}
    for _ in range(8):
        for plan in inst.sample_feasible(rng, 3):
            found[json.dumps(sorted(plan.items()))] = (inst.cost(plan), plan)
    worse = sorted((c, k) for k, (c, _) in found.items() if c > optimum + 1e-9)
    if not worse:
        return []
    picks = [worse[0][1]]
    rest = [k for _, k in worse[1:]]
    rng.shuffle(rest)
    picks += rest[:1]
    return [found[k][1] for k in picks]


def build_task(spec: Spec, family: str, task_id: str, split: str, rng: np.random.Generator) -> dict[str, Any] | None:
    """Solve the instance and assemble the task record; ``None`` when it is infeasible or too easy."""
    inst = Instance(spec)
    optimum, ref = inst.solve()
    if ref is None:
        return None
    worse = _suboptimal(inst, optimum, rng)
    broken = _violating(inst, ref, rng)
    if not worse or len(broken) < 2:
        return None
    order = list(spec["meetings"])
    candidates = [{"content": plan_json(ref, order), "kind": "reference", "correct": True}]
    candidates += [{"content": plan_json(p, order), "kind": "suboptimal", "correct": False} for p in worse]
    candidates += [{"content": plan_json(p, order), "kind": f"violates_{k}", "correct": False} for k, p in broken]
    attendees = sorted({p for v in spec["meetings"].values() for p in v["attendees"]},
                       key=lambda p: (len(inst.free[p]), p))
    calls = [{"name": "availability", "args": {"person": p}} for p in attendees[:2]]
    extras = len(inst.precedence) + len(inst.deadlines) + (inst.max_per_day is not None)
    extras += sum(bool(v.get("needs")) for v in spec["meetings"].values())
    mean_options = float(np.mean([len(inst.options(m)) for m in inst.meetings]))
    difficulty = 0.1 * (len(inst.meetings) - 2) + 0.05 * extras + 0.2 * max(0.0, 1 - mean_options / 20)
    difficulty += 0.15 * (split == "ood") + float(rng.uniform(-0.05, 0.05))
    return {"task_id": task_id, "split": split, "family": family,
            "difficulty": round(min(1.0, max(0.0, difficulty)), 3), "prompt": _prompt(spec, family),
            "candidates": candidates, "observations": _observations(spec), "required_observations": [0, 1],
            "relevant_docs": RELEVANT_DOCS[family], "tool_calls": calls,
            "payload": {"instance": spec, "optimum": optimum}}


def generate(out: Path, seed: int = 0, limit: int | None = None) -> dict[str, int]:
    """Write corpus.jsonl and tasks.jsonl under ``out``; return the task count per split.

    :param limit: stop after this many tasks (the shipped file's first ``limit`` lines; used by the tests)
    """
    rng = np.random.default_rng(seed)
    records: list[dict[str, Any]] = []
    for make, splits in family_splits(rng, IN_DIST, SPLIT_SHARES, OOD, OOD_PER_FAMILY):
        made = 0
        while made < len(splits) and (limit is None or len(records) < limit):
            rec = build_task(make(rng), make.__name__, f"plan-{make.__name__}-{made:03d}", splits[made], rng)
            if rec is not None:
                records.append(rec)
                made += 1
    write_jsonl(out / "corpus.jsonl", make_corpus())
    write_jsonl(out / "tasks.jsonl", records)
    return dict(Counter(rec["split"] for rec in records))


def main() -> None:
    generator_main(__doc__, "plan", generate)


if __name__ == "__main__":
    main()
