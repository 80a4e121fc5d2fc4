"""Wrong answers to a research question: the mistakes a model makes on a multi-hop question (stopping at an
intermediate entity, following a confusable relation, naming a sibling of the answer, a partial answer)."""

from __future__ import annotations

from collections.abc import Callable

from harness_gym.domains.fictional_world import RELATIONS, World, normalize_answer


def wrong_answers(world: World, chain: list[str], path: tuple[str, ...],
                  follow: Callable[[str, tuple[str, ...]], list[str] | None], kind: str) -> list[tuple[str, str]]:
    """(kind, answer) pairs of realistic mistakes on a question, none equal to the answer once normalised.

    :param world: the world the question is about (its generator draws the siblings)
    :param chain: the entities from the start to the answer (the last may be a number)
    :param path: the relations of the question
    :param follow: the chain of values from an entity along a path, ``None`` where it breaks off
    :param kind: the answer's kind (an entity kind or ``"number"``)
    """
    answer = chain[-1]
    out = [("wrong_hop", name) for name in chain[1:-1]]
    start = world.entities[chain[0]]
    first = RELATIONS.get(path[0])
    for rel, obj in start.rels.items():
        if rel != path[0] and first is not None and RELATIONS[rel].object_kind == first.object_kind:
            alt = follow(obj, path[1:])
            if alt is not None:
                out.append(("wrong_relation", alt[-1]))
    if kind == "number":
        penult = world.entities[chain[-2]]
        others = [e for e in world.of_kind(penult.kind) if e.name != penult.name]
        out.append(("sibling", str(world.choice(others).attrs[path[-1]])))
        out.append(("partial", f"about {answer}"))
    else:
        ans = world.entities[answer]
        shared = [e for e in world.of_kind(kind) if e.name != answer
                  and any(ans.rels.get(r) == v for r, v in e.rels.items())]
        pool = shared or [e for e in world.of_kind(kind) if e.name != answer]
        out.append(("sibling", world.choice(pool).name))
        tokens = answer.split()
        if len(tokens) > 1:
            out.append(("partial", max(tokens, key=len)))
        elif "in_region" in ans.rels:
            out.append(("partial", f"{answer}, {ans.rels['in_region']}"))
    seen = {normalize_answer(answer)}
    unique = []
    for k, a in out:
        if normalize_answer(a) not in seen:
            seen.add(normalize_answer(a))
            unique.append((k, a))
    return unique
