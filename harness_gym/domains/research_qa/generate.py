"""Generate the research-QA task bank: multi-hop questions over an encyclopedia of a fictional world.

The world (:class:`~harness_gym.domains.fictional_world.World`) becomes one encyclopedia article per entity
(its relations, an attribute, and a few mentions of entities pointing at it). Each question follows a
2- or 3-hop relation path from a named start entity; the ``ood`` split uses templates whose relations
(``parent_company``, ``held_in``, ``located_in``, ``population``) never occur in the other splits.
Wrong candidates are the answers models give on such questions (:mod:`~harness_gym.domains.research_qa.mutations`):
an intermediate entity of the chain, an entity reached through a confusable relation, a sibling of the answer,
and a partially right answer. The question templates and the article and answer phrasing are hand-written
inputs in ``sources/`` (``questions.json``, ``phrasing.json``).

Run ``python -m harness_gym.domains.research_qa.generate [--out DIR] [--seed N]``; the output is deterministic.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from harness_gym.core.taskfile import TaskFileError, read_json, require, write_jsonl
from harness_gym.domains.fictional_world import ATTRIBUTES, RELATIONS, Entity, World
from harness_gym.domains.generation import generator_main
from harness_gym.domains.research_qa.grader import answer_quality
from harness_gym.domains.research_qa.mutations import wrong_answers
from harness_gym.domains.sources import source_path

QUESTIONS_FILE = source_path("research_qa", "questions.json")
PHRASING_FILE = source_path("research_qa", "phrasing.json")
SEED = 7130
SPLIT_SIZES = {"train": 100, "val": 30, "test": 44}
N_OOD = 40
MAX_MENTIONS = 4

@dataclass(frozen=True)
class Template:
    """A question template: the relation path from the start entity and the question text."""

    name: str
    start_kind: str
    path: tuple[str, ...]
    """Relation names; the last may be an attribute name (the answer is then a number)."""
    text: str
    """Format string with ``{s}``, the start entity's name."""


def read_templates(path: Path = QUESTIONS_FILE) -> tuple[tuple[Template, ...], tuple[Template, ...]]:
    """The in-distribution and the out-of-distribution question templates of ``sources/questions.json``.

    :param path: the templates file
    """
    raw = read_json(path)
    if not isinstance(raw, dict):
        raise TaskFileError(path, "expected an object with 'in_distribution' and 'out_of_distribution'")
    known = set(RELATIONS) | {attr for kind in ATTRIBUTES.values() for attr in kind}
    groups = []
    for group in ("in_distribution", "out_of_distribution"):
        templates = []
        for i, rec in enumerate(require(raw, group, list, path=path)):
            where = f"{group}[{i}]"
            if not isinstance(rec, dict):
                raise TaskFileError(path, "expected an object", field=where)
            hops = require(rec, "path", list, path=path, task_id=where)
            if not hops or not all(h in known for h in hops):
                raise TaskFileError(path, f"every hop must be one of {sorted(known)}, got {hops!r}", task_id=where,
                                    field="path")
            templates.append(Template(require(rec, "name", str, path=path, task_id=where),
                                      require(rec, "start_kind", str, path=path, task_id=where), tuple(hops),
                                      require(rec, "text", str, path=path, task_id=where)))
        groups.append(tuple(templates))
    return groups[0], groups[1]


def read_phrasing(path: Path = PHRASING_FILE) -> tuple[dict[str, str], dict[str, str]]:
    """The article intro per entity kind and the answer format per answer kind, from ``sources/phrasing.json``.

    :param path: the phrasing file
    """
    raw = read_json(path)
    tables = []
    for name in ("intros", "answer_formats"):
        table = require(raw, name, dict, path=path) if isinstance(raw, dict) else None
        if table is None or not all(isinstance(v, str) for v in table.values()):
            raise TaskFileError(path, "expected an object of strings", field=name)
        tables.append(table)
    return tables[0], tables[1]


IN_DISTRIBUTION, OUT_OF_DISTRIBUTION = read_templates()
INTROS, ANSWER_FORMATS = read_phrasing()


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

    def task(self, index: int, tmpl: Template, start: str, split: str) -> dict[str, Any]:
        r = self.rng
        chain = self.follow(start, tmpl.path)
        assert chain is not None
        answer, kind = chain[-1], self.answer_kind(chain, tmpl.path)
        hops = len(tmpl.path)
        cands = [{"content": answer, "kind": "reference"}]
        cands += [{"content": a, "kind": k}
                  for k, a in wrong_answers(self.world, chain, tmpl.path, self.follow, kind)]
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
