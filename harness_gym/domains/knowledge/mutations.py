"""Wrong records for a knowledge task: the mistakes a model makes compiling a record from conflicting, dated
sources (a stale value, a rumour, a wrong type, a missing field, a missing or wrong citation, another
entity's value, a fabricated value)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import numpy as np

from harness_gym.domains.generation import pick
from harness_gym.domains.knowledge.datamodel import FieldSpec


def record_candidates(rng: np.random.Generator, entity: str, specs: dict[str, FieldSpec], gold: dict[str, Any],
                      support: dict[str, str], stale: dict[str, tuple[Any, str]],
                      rumour: tuple[str, Any, str] | None, sibling_values: dict[str, Any], sibling_docs: list[str],
                      changed: Callable[..., Any]) -> list[dict[str, Any]]:
    """The reference record and realistic wrong records, shuffled (``correct`` is filled in by the grader later).

    :param rng: the generator's random source
    :param entity: the task's entity
    :param specs: its record's fields
    :param gold: the right value of each field
    :param support: the source each right value is cited to
    :param stale: field -> (the older value, the source that stated it), for the fields that changed (empty for a
        record with one source: its miscited record then cites the sibling's source)
    :param rumour: (field, value, source) of an unofficial claim, if the task has one
    :param sibling_values: the confusable sibling entity's values
    :param sibling_docs: the sibling's sources
    :param changed: ``changed(spec, *old)`` gives a value of the field different from every ``old``
    """
    r = rng

    def record(values: dict[str, Any], cites: dict[str, str]) -> str:
        return json.dumps({"entity": entity, "values": values, "citations": cites}, ensure_ascii=False)

    def edit(field: str, value: Any, doc: str) -> str:
        return record({**gold, field: value}, {**support, field: doc})

    out = [("reference", record(gold, support))]
    for f, (old, doc) in stale.items():
        out.append(("stale_value", edit(f, old, doc)))
    if len(stale) > 1:
        out.append(("stale_all", record({**gold, **{f: v for f, (v, _) in stale.items()}},
                                        {**support, **{f: d for f, (_, d) in stale.items()}})))
    if rumour is not None:
        out.append(("rumour_value", edit(*rumour)))
    numeric = [f for f, s in specs.items() if s.type in ("integer", "number")]
    if numeric:
        f = pick(rng, numeric)
        unit = {"integer": "", "number": " approx."}[specs[f].type]
        out.append(("wrong_type", edit(f, f"{gold[f]}{unit}", support[f])))
    fields = list(specs)
    f = pick(rng, fields)
    out.append(("missing_field", record({g: v for g, v in gold.items() if g != f},
                                        {g: d for g, d in support.items() if g != f})))
    f = pick(rng, fields)
    out.append(("uncited_value", record(gold, {g: d for g, d in support.items() if g != f})))
    if stale:
        f = pick(rng, list(stale))
        out.append(("miscited", edit(f, gold[f], stale[f][1])))
    else:
        f = pick(rng, fields)
        out.append(("miscited", edit(f, gold[f], sibling_docs[-1])))
    f = pick(rng, fields)
    out.append(("other_entity", edit(f, sibling_values[f], sibling_docs[0])))
    f = pick(rng, [g for g in fields if not specs[g].enum])
    fabricated = changed(specs[f], gold[f], sibling_values[f], stale.get(f, (None,))[0],
                              rumour[1] if rumour else None)
    out.append(("hallucinated", edit(f, fabricated, support[f])))
    r.shuffle(out)
    return [{"content": c, "kind": k} for k, c in out]
