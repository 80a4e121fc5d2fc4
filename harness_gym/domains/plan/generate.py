"""Generate the planning domain's corpus and scheduling tasks.

Deterministic for a seed; run ``python -m harness_gym.domains.plan.generate [--out DIR] [--seed N]``. Writes
``corpus.jsonl`` and ``tasks.jsonl`` to ``envs_data/plan/``.

Three templates make up train/val/test: a team's week (precedence), an interview loop (a candidate free on
one day, interviews before the debrief, a debrief deadline) and project reviews (deadlines, large meetings).
The ``ood`` split is a fourth template with constraint types never seen in training: equipment requirements,
a per-person daily meeting limit and room preferences. Every instance is solved exactly
(:meth:`~harness_gym.domains.plan.instance.Instance.solve`); the candidates are an optimal plan, feasible but
sub-optimal plans (they pass the checker and score below 1) and plans that break exactly one named hard
constraint (:mod:`~harness_gym.domains.plan.mutations`), each labelled by the real verifier and cost.

**The task mix** (docs/domains.md, "Task mixes"). Two properties vary from task to task, each with a cue in
the prompt, crossed and assigned in fixed proportions within every template family and split (a cycle of six
kinds, :data:`KINDS`, dealt out and shuffled), so every split holds about the same mix:

- *Evidence*: a third of the tasks hand over every attendee's free slots, the room directory and the
  preferences with the prompt (cue: its ``Attached:`` block); they need no evidence (no required observation,
  document or tool call). The others name people and rooms only: their evidence is the room directory, the
  preferences and the calendar of each distinct attendee, tightest first, up to :data:`MAX_CALENDARS` calls
  (cue: the attendees the meeting list names). Team sizes are drawn per task (a week of 1 to 6 people, a loop
  of 1 to 4 interviewers, reviews among 3 to 7 people, meetings of 1 up to 6 attendees), so these tasks need
  1 to 5 availability calls.
- *Verifier coverage*: half the tasks have a verifier that checks every hard rule; in the other half the
  booking system's verifier (CHECK and ``dry_run``) checks only the rules it can know (schedule, availability,
  rooms, double booking, equipment) and the prompt marks the business rules (precedence, deadlines, a daily
  limit) ``(not verified)``. There a plan breaking a business rule passes CHECK and scores 0 (the bank keeps
  such plans first among its rule-breaking candidates).

No benchmark mixes attached and looked-up facts or full and partial verifiers, so the proportions are chosen:
NATURAL PLAN's calendar scheduling (Zheng et al., 2024) hands every participant's schedule over in the prompt,
TravelPlanner (Xie et al., 2024) makes the agent fetch everything through tools; a third vs two thirds keeps
the looked-up kind, where harness decisions matter, the majority. Half-and-half coverage gives the controller
as many tasks where CHECK certifies the whole spec as tasks where it does not.

The hand-written inputs are in ``sources/``: ``vocabulary.json`` (people, rooms, meeting titles, equipment),
``families.json`` (what each template schedules and the policy pages it needs) and ``corpus.jsonl`` (the
scheduling policy pages RETRIEVE ranks).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from harness_gym.core.taskfile import TaskFileError, read_documents, read_json, require, write_jsonl
from harness_gym.domains.generation import deal, family_splits, generator_main
from harness_gym.domains.plan.instance import BUSINESS_RULE_KINDS, Assignment, Instance, slot_name
from harness_gym.domains.plan.mutations import suboptimal_plans, violating_plans
from harness_gym.domains.plan.prompt import write_prompt
from harness_gym.domains.source_files import read_vocabulary, source_path

VOCABULARY = read_vocabulary(source_path("plan", "vocabulary.json"), ("people", "rooms", "meeting_titles", "equipment"))
NAMES, ROOMS, TITLES, EQUIPMENT = (VOCABULARY[k] for k in ("people", "rooms", "meeting_titles", "equipment"))
CORPUS_FILE = source_path("plan", "corpus.jsonl")
FAMILIES_FILE = source_path("plan", "families.json")
DAYS = ("Mon", "Tue")
HOURS = (9, 10, 11, 14, 15, 16)
OOD_PER_FAMILY = 36
SPLIT_SHARES = (("train", 32), ("val", 10), ("test", 12))  # tasks per in-distribution family, by split
MAX_CALENDARS = 5
"""A looked-up task's evidence calls: the calendars of its distinct attendees, tightest first, at most this many."""
KINDS: tuple[tuple[bool, bool], ...] = ((True, False), (True, True), (False, False), (False, True), (False, False),
                                       (False, True))
"""The mix, as (facts attached, verifier partial): a third attached, half partial, crossed (module doc)."""

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
    people = [str(p) for p in rng.choice(NAMES, size=int(rng.integers(1, 7)), replace=False)]
    n = int(rng.integers(4, 6))
    meetings = _meetings(rng, people, [int(rng.integers(1, min(4, len(people)) + 1)) for _ in range(n)])
    a, b = rng.choice(list(meetings), size=2, replace=False)
    return {"days": list(DAYS), "hours": list(HOURS), "people": {p: _free(rng, 0.65) for p in people},
            "rooms": _rooms(rng, (3, 4, 6), False), "meetings": meetings, "precedence": [[str(a), str(b)]],
            "soft": {"prefer": _prefs(rng, list(meetings), 2), "gap_weight": 1}}


def interview_loop(rng: np.random.Generator) -> Spec:
    cand, *panel = [str(p) for p in rng.choice(NAMES, size=int(rng.integers(2, 6)), replace=False)]
    day = str(rng.choice(DAYS))
    people = {cand: [s for s in _slots() if s.startswith(day) and rng.random() < 0.9]}
    people.update({p: _free(rng, 0.75) for p in panel})
    meetings = {f"M{i + 1}": {"title": f"interview {i + 1} with {cand}",
                              "attendees": sorted([cand, *_pick(rng, panel, int(rng.integers(1, min(2, len(panel)) + 1)))])}
                for i in range(3)}
    meetings["M4"] = {"title": "debrief", "attendees": sorted(panel)}
    deadline = slot_name("Tue", int(rng.choice([11, 14, 15])))
    return {"days": list(DAYS), "hours": list(HOURS), "people": people, "rooms": _rooms(rng, (2, 3, 4), False),
            "meetings": meetings, "precedence": [[m, "M4"] for m in ("M1", "M2", "M3")],
            "deadlines": {"M4": deadline},
            "soft": {"prefer": [{"meeting": "M4", "when": day, "weight": 2}], "gap_weight": 1}}


def project_reviews(rng: np.random.Generator) -> Spec:
    people = [str(p) for p in rng.choice(NAMES, size=int(rng.integers(3, 8)), replace=False)]
    n = int(rng.integers(4, 6))
    sizes = [k for k in (1, 2, 3, 5, 6) if k <= len(people)]
    meetings = _meetings(rng, people, [int(rng.choice(sizes)) for _ in range(n)])
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



def read_families(path: Path = FAMILIES_FILE) -> dict[str, tuple[str, list[str]]]:
    """Template family -> (what its prompt says it schedules, the policy pages its tasks need).

    :param path: the families file
    """
    raw = read_json(path)
    names = {make.__name__ for make in IN_DIST + OOD}
    if not isinstance(raw, dict) or set(raw) != names:
        raise TaskFileError(path, f"expected an object with one entry per template family {sorted(names)}")
    out = {}
    for family, rec in raw.items():
        if not isinstance(rec, dict):
            raise TaskFileError(path, "expected an object", field=family)
        out[family] = (require(rec, "schedules", str, path=path, task_id=family),
                       require(rec, "relevant_docs", list, path=path, task_id=family))
    return out


FAMILIES = read_families()


# ----- text ------------------------------------------------------------------------------------------
def plan_json(plan: Assignment, order: list[str]) -> str:
    """The draft form of a plan: ``{"assignments": {meeting: {"slot": s, "room": r}}}``."""
    return json.dumps({"assignments": {m: {"slot": plan[m][0], "room": plan[m][1]} for m in order if m in plan}})


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
    """Scheduling policy pages, one per constraint type, the tools and the plan format (``sources/corpus.jsonl``)."""
    return [{"doc_id": d.doc_id, "title": d.title, "text": d.text} for d in read_documents(CORPUS_FILE)]


# ----- tasks ---------------------------------------------------------------------------------------
def build_task(spec: Spec, family: str, task_id: str, split: str, rng: np.random.Generator,
               kind: tuple[bool, bool] = (False, False)) -> dict[str, Any] | None:
    """Solve the instance and assemble the task record; ``None`` when it is infeasible or too easy.

    :param kind: (facts attached to the prompt, verifier leaves the business rules unchecked), see :data:`KINDS`
    """
    attached, partial = kind
    if partial:
        spec = {**spec, "unverified": [r.rule_id for r in Instance(spec).rules() if r.kind in BUSINESS_RULE_KINDS]}
    inst = Instance(spec)
    optimum, ref = inst.solve()
    if ref is None:
        return None
    worse = suboptimal_plans(inst, optimum, rng)
    broken = violating_plans(inst, ref, rng)
    if not worse or len(broken) < 2:
        return None
    order = list(spec["meetings"])
    candidates = [{"content": plan_json(ref, order), "kind": "reference", "correct": True}]
    candidates += [{"content": plan_json(p, order), "kind": "suboptimal", "correct": False} for p in worse]
    candidates += [{"content": plan_json(p, order), "kind": f"violates_{k}", "correct": False} for k, p in broken]
    attendees = sorted({p for v in spec["meetings"].values() for p in v["attendees"]},
                       key=lambda p: (len(inst.free[p]), p))
    observations = _observations(spec)
    calls = [] if attached else [{"name": "availability", "args": {"person": p}} for p in attendees[:MAX_CALENDARS]]
    extras = len(inst.precedence) + len(inst.deadlines) + (inst.max_per_day is not None)
    extras += sum(bool(v.get("needs")) for v in spec["meetings"].values())
    mean_options = float(np.mean([len(inst.options(m)) for m in inst.meetings]))
    difficulty = 0.1 * (len(inst.meetings) - 2) + 0.05 * extras + 0.2 * max(0.0, 1 - mean_options / 20)
    difficulty += 0.15 * (split == "ood") + float(rng.uniform(-0.05, 0.05))
    return {"task_id": task_id, "split": split, "family": family,
            "difficulty": round(min(1.0, max(0.0, difficulty)), 3),
            "prompt": write_prompt(spec, FAMILIES[family][0], observations[:2] if attached else ()),
            "candidates": candidates, "observations": observations, "required_observations": [] if attached else [0, 1],
            "relevant_docs": [] if attached else FAMILIES[family][1], "tool_calls": calls,
            "payload": {"instance": spec, "optimum": optimum}}


def deal_kinds(splits: list[str], rng: np.random.Generator) -> list[tuple[bool, bool]]:
    """The kind of each task of one family: within each split, :data:`KINDS` dealt in its proportions.

    :param splits: the split of each of the family's tasks, in order
    :param rng: the generator's random source
    """
    by_split = {split: iter(deal(splits.count(split), KINDS, rng)) for split in dict.fromkeys(splits)}
    return [next(by_split[split]) for split in splits]


def generate(out: Path, seed: int = 0, limit: int | None = None) -> dict[str, int]:
    """Write corpus.jsonl and tasks.jsonl under ``out``; return the task count per split.

    :param limit: stop after this many tasks (the shipped file's first ``limit`` lines; used by the tests)
    """
    rng = np.random.default_rng(seed)
    records: list[dict[str, Any]] = []
    for make, splits in family_splits(rng, IN_DIST, SPLIT_SHARES, OOD, OOD_PER_FAMILY):
        kinds = deal_kinds(splits, rng)
        made = 0
        while made < len(splits) and (limit is None or len(records) < limit):
            rec = build_task(make(rng), make.__name__, f"plan-{make.__name__}-{made:03d}", splits[made], rng,
                             kinds[made])
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
