"""Wrong schedules for a planning task: plans that break exactly one kind of hard constraint (they fail the
checker, unless the rule they break is one the task's verifier does not check) and feasible plans costlier
than the optimum (they pass the checker and score below 1)."""

from __future__ import annotations

import json

import numpy as np

from harness_gym.domains.plan.instance import Assignment, Instance


def violating_plans(inst: Instance, ref: Assignment, rng: np.random.Generator) -> list[tuple[str, Assignment]]:
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
    unverified = {rule.split(":")[0] for rule in inst.unverified}
    kinds.sort(key=lambda k: k not in unverified)  # plans the verifier cannot see first: they pass CHECK
    return [(k, by_kind[k][int(rng.integers(len(by_kind[k])))]) for k in kinds[:4]]


def suboptimal_plans(inst: Instance, optimum: float, rng: np.random.Generator) -> list[Assignment]:
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
