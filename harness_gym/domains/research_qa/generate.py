"""Generate the research-QA task bank: multi-hop questions over an encyclopedia of a fictional world.

The world (:class:`~harness_gym.domains.fictional_world.World`) becomes one encyclopedia article per entity
(its relations, an attribute, and a few mentions of entities pointing at it). Each question follows a
2- or 3-hop relation path from a named start entity; the ``ood`` split uses templates whose relations
(``parent_company``, ``held_in``, ``located_in``, ``population``) never occur in the other splits.
Wrong candidates are the answers models give on such questions: an intermediate entity of the chain, an
entity reached through a confusable relation, a sibling of the answer, and a partially right answer.

Run ``python -m harness_gym.domains.research_qa.generate [--out DIR] [--seed N]``; the output is deterministic.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from harness_gym.core.taskfile import write_jsonl
from harness_gym.domains.fictional_world import ATTRIBUTES, RELATIONS, Entity, World, normalize_answer
from harness_gym.domains.generation import generator_main
from harness_gym.domains.research_qa.grader import answer_quality

SEED = 7130
SPLIT_SIZES = {"train": 100, "val": 30, "test": 44}
N_OOD = 40
MAX_MENTIONS = 4

INTROS = {
    "person": "{n} is a figure of public life.",
    "city": "{n} is a settlement with a long history.",
    "region": "{n} is one of the administrative divisions of the world.",
    "organisation": "{n} is a registered body.",
    "university": "{n} is an institution of higher learning.",
    "event": "The {n} is a recurring public gathering.",
}
ANSWER_FORMATS = {
    "person": "the person's full name",
    "city": "the city's full name",
    "region": "the region's full name",
    "organisation": "the organisation's full name",
    "university": "the university's full name",
    "number": "a number in digits",
}


@dataclass(frozen=True)
class Template:
    """A question template: the relation path from the start entity and the question text."""

    name: str
    start_kind: str
    path: tuple[str, ...]
    """Relation names; the last may be an attribute name (the answer is then a number)."""
    text: str
    """Format string with ``{s}``, the start entity's name."""


IN_DISTRIBUTION: tuple[Template, ...] = (
    Template("founder_birthplace", "organisation", ("founded_by", "born_in"),
             "In which city was the person who founded {s} born?"),
    Template("employer_headquarters", "person", ("works_for", "headquartered_in"),
             "Where does the organisation that {s} works for have its headquarters?"),
    Template("mentor_university", "person", ("mentor", "studied_at"),
             "At which university has the mentor of {s} studied?"),
    Template("organiser_leader", "event", ("organised_by", "led_by"),
             "Who currently leads the organisation that organised the {s}?"),
    Template("birth_region", "person", ("born_in", "in_region"),
             "In which region is the city where {s} was born?"),
    Template("headquarters_region_capital", "organisation", ("headquartered_in", "in_region", "capital"),
             "What is the capital of the region containing the city where {s} has its headquarters?"),
    Template("winner_employer_headquarters", "event", ("won_by", "works_for", "headquartered_in"),
             "Where are the headquarters of the organisation that the winner of the chief prize at the {s} "
             "works for?"),
    Template("rector_birthplace", "university", ("rector", "born_in"), "Where was the rector of {s} born?"),
    Template("spouse_employer", "person", ("spouse", "works_for"),
             "Which organisation does the person married to {s} work for?"),
    Template("founder_mentor_birthplace", "organisation", ("founded_by", "mentor", "born_in"),
             "Where was the mentor of the person who founded {s} born?"),
    Template("employer_founding_year", "person", ("works_for", "founded_year"),
             "In what year was the organisation that {s} works for established?"),
    Template("mentor_employer_founding_year", "person", ("mentor", "works_for", "founded_year"),
             "In what year was the organisation that the mentor of {s} works for established?"),
)
OUT_OF_DISTRIBUTION: tuple[Template, ...] = (
    Template("parent_founder", "organisation", ("parent_company", "founded_by"),
             "Who founded the company of which {s} is a subsidiary?"),
    Template("event_region", "event", ("held_in", "in_region"), "In which region did the {s} take place?"),
    Template("alma_mater_region", "person", ("studied_at", "located_in", "in_region"),
             "In which region is the university located where {s} studied?"),
    Template("event_city_population", "event", ("held_in", "population"),
             "What is the population of the city where the {s} took place?"),
    Template("parent_headquarters", "organisation", ("parent_company", "headquartered_in"),
             "Where are the headquarters of the company of which {s} is a subsidiary?"),
)


def article_text(world: World, ent: Entity) -> str:
    """The encyclopedia article of an entity: intro, relations, attribute, a few incoming mentions."""
    parts = [INTROS[ent.kind].format(n=ent.name)]
    parts += [RELATIONS[rel].sentence.format(s=ent.name, o=obj) for rel, obj in ent.rels.items()]
    parts += [ATTRIBUTES[ent.kind][attr].format(s=ent.name, v=v) for attr, v in ent.attrs.items()]
    parts += [RELATIONS[rel].sentence.format(s=subj, o=ent.name)
              for rel, subj in world.incoming(ent.name)[:MAX_MENTIONS]]
    return " ".join(parts)


class ResearchQAGenerator:
    """Builds the encyclopedia and the questions from one seed.

    :param seed: the single source of randomness
    """

    def __init__(self, seed: int = SEED) -> None:
        self.rng = np.random.default_rng(seed)
        self.world = World(seed, n_regions=8)
        self.doc_ids = {name: f"rq-{i:04d}" for i, name in enumerate(self.world.entities)}

    def articles(self) -> list[dict[str, Any]]:
        return [{"doc_id": self.doc_ids[e.name], "title": e.name, "kind": e.kind, "text": article_text(self.world, e),
                 "relations": e.rels, "attributes": e.attrs} for e in self.world.entities.values()]

    def follow(self, start: str, path: tuple[str, ...]) -> list[str] | None:
        """The chain of values from ``start`` along ``path`` (entity names, the last maybe a number)."""
        chain = [start]
        for rel in path:
            ent = self.world.entities[chain[-1]]
            value = ent.rels.get(rel, ent.attrs.get(rel))
            if value is None:
                return None
            chain.append(str(value))
        return chain

    def answer_kind(self, chain: list[str], path: tuple[str, ...]) -> str:
        last = self.world.entities.get(chain[-1])
        return last.kind if last is not None and path[-1] in RELATIONS else "number"

    def wrong_answers(self, chain: list[str], path: tuple[str, ...]) -> list[tuple[str, str]]:
        """(kind, answer) pairs of realistic mistakes on this question."""
        world, answer = self.world, chain[-1]
        out = [("wrong_hop", name) for name in chain[1:-1]]
        start = world.entities[chain[0]]
        first = RELATIONS.get(path[0])
        for rel, obj in start.rels.items():
            if rel != path[0] and first is not None and RELATIONS[rel].object_kind == first.object_kind:
                alt = self.follow(obj, path[1:])
                if alt is not None:
                    out.append(("wrong_relation", alt[-1]))
        kind = self.answer_kind(chain, path)
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

    def task(self, index: int, tmpl: Template, start: str, split: str) -> dict[str, Any]:
        r = self.rng
        chain = self.follow(start, tmpl.path)
        assert chain is not None
        answer, kind = chain[-1], self.answer_kind(chain, tmpl.path)
        hops = len(tmpl.path)
        cands = [{"content": answer, "kind": "reference"}]
        cands += [{"content": a, "kind": k} for k, a in self.wrong_answers(chain, tmpl.path)]
        for cand in cands:
            cand["correct"] = answer_quality(cand["content"], answer) >= 1.0
        order = r.permutation(len(cands))
        difficulty = 0.2 + 0.3 * (hops - 2) + 0.1 * (len(answer.split()) > 1) + float(r.uniform(0, 0.15))
        relations = sorted({rel for t in IN_DISTRIBUTION + OUT_OF_DISTRIBUTION for rel in t.path if rel in RELATIONS})
        return {
            "task_id": f"rq-q{index:04d}", "split": split, "family": tmpl.name,
            "difficulty": round(min(difficulty, 1.0), 3),
            "prompt": tmpl.text.format(s=start),
            "answer": answer, "hops": hops,
            "observations": [
                f"Answer format: reply with {ANSWER_FORMATS[kind]} only, no explanation or extra words.",
                "The encyclopedia's graph records these relations: " + ", ".join(relations)
                + "; and the attributes birth_year, founded_year, population, year.",
            ],
            "required_observations": [0],
            "relevant_docs": [self.doc_ids[name] for name in chain[:-1]],
            "tool_calls": [{"name": "query_relation", "args": {"entity": subj, "relation": rel}}
                           for subj, rel in zip(chain[:-1], tmpl.path)],
            "candidates": [cands[i] for i in order],
        }

    def build(self) -> list[dict[str, Any]]:
        """The in-distribution tasks (spread over train/val/test) and the out-of-distribution ones."""
        def starts(tmpl: Template) -> list[str]:
            return [e.name for e in self.world.of_kind(tmpl.start_kind) if self.follow(e.name, tmpl.path)]

        def sample(templates: tuple[Template, ...], n: int) -> list[tuple[Template, str]]:
            pools = {t.name: starts(t) for t in templates}
            for pool in pools.values():
                self.rng.shuffle(pool)
            picked: list[tuple[Template, str]] = []
            while len(picked) < n:
                if not any(pools.values()):
                    raise RuntimeError(f"only {len(picked)} distinct questions for {n} tasks; grow the world")
                for t in templates:
                    if pools[t.name] and len(picked) < n:
                        picked.append((t, pools[t.name].pop()))
            return picked

        splits = [s for s, n in SPLIT_SIZES.items() for _ in range(n)]
        self.rng.shuffle(splits)
        items = [(t, s, split) for (t, s), split in zip(sample(IN_DISTRIBUTION, len(splits)), splits)]
        items += [(t, s, "ood") for t, s in sample(OUT_OF_DISTRIBUTION, N_OOD)]
        return [self.task(i, t, s, split) for i, (t, s, split) in enumerate(items)]


def generate(out_dir: Path, seed: int = SEED) -> tuple[int, int]:
    """Generate and write ``articles.jsonl`` and ``tasks.jsonl``; returns (n_articles, n_tasks)."""
    gen = ResearchQAGenerator(seed)
    articles, tasks = gen.articles(), gen.build()
    return write_jsonl(out_dir / "articles.jsonl", articles), write_jsonl(out_dir / "tasks.jsonl", tasks)


def main() -> None:
    generator_main(__doc__, "research_qa", generate, SEED,
                   lambda counts, out: f"wrote {counts[1]} tasks and {counts[0]} articles to {out}")


if __name__ == "__main__":
    main()
