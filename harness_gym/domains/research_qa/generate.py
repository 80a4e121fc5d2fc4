"""Generate the research-QA task bank: reading-comprehension and 1- to 3-hop questions over an encyclopedia of a
fictional world.

The world (:class:`~harness_gym.domains.fictional_world.World`) becomes one encyclopedia article per entity
(its relations, an attribute, and a few mentions of entities pointing at it). Each question follows a relation
path from a named start entity; the ``ood`` split uses templates whose relations (``parent_company``,
``held_in``, ``located_in``, ``population``) never occur in the other splits. Wrong candidates are the answers
models give on such questions (:mod:`~harness_gym.domains.research_qa.mutations`): an intermediate entity of the
chain, an entity reached through a confusable relation, a sibling of the answer, and a partially right answer.
The question templates and the article and answer phrasing are hand-written inputs in ``sources/``
(``questions.json``, ``phrasing.json``).

**Task mix** (every split, ``ood`` included, by :func:`~harness_gym.domains.generation.mix_counts` of
:data:`KIND_WEIGHTS`). Real question streams mix questions a model answers from what it was handed with ones that
need one lookup and ones that need several; the kinds here differ in the evidence they need, and the cue is
visible in the prompt (whether a passage comes with it, how many relations the question chains):

| kind | share | what the prompt holds | evidence needed |
|---|---|---|---|
| ``passage`` | 25% | the start entity's article, a 1-hop question and the answer format (SQuAD-style reading comprehension) | none |
| ``1-hop`` | 25% | a 1-hop question (Natural Questions-style single lookup) | the answer format, the start's article, one relation lookup |
| ``2-hop`` | 25.9% | a 2-hop bridge question (HotpotQA-style) | the format, 2 articles, 2 lookups |
| ``3-hop`` | 24.1% | a 3-hop question (MuSiQue-style composition) | the format, 3 articles, 3 lookups |

Sources of the proportions: single-hop and multi-hop questions are half each, as in the Adaptive-RAG benchmark
(Jeong et al., NAACL 2024), which mixes 500 questions from each of three single-hop sets (SQuAD, Natural Questions,
TriviaQA) and three multi-hop sets (MuSiQue, HotpotQA, 2WikiMultiHopQA) to evaluate retrieval that adapts to
question complexity. The single-hop half is split evenly between passage-given and lookup questions (our choice:
the published mixes do not separate them). The multi-hop half follows the hop counts of MuSiQue-Ans v1.0's dev set
(Trivedi et al., TACL 2022): of its 2,417 questions 1,252 are 2-hop and 1,165 have 3 or 4 hops (the dataset
cards of dgslibisey/MuSiQue and of its 2-hop subset bdsaglam/musique-2hop give the two counts); the 4-hop
questions are counted as 3-hop because the world's templates stop at three hops. So 2-hop =
0.5 * 1252 / 2417 = 25.9% and 3-hop = 0.5 * 1165 / 2417 = 24.1%.

Difficulty (what the simulated worker's accuracy falls with) is 0.05 for a passage question, 0.1 for a 1-hop one
and 0.2 + 0.3 per hop beyond two for the multi-hop ones, +0.1 for a multi-token answer, plus U(0, 0.15).

Run ``python -m harness_gym.domains.research_qa.generate [--out DIR] [--seed N]``; the output is deterministic.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from harness_gym.core.taskfile import TaskFileError, read_json, require, write_jsonl
from harness_gym.domains.fictional_world import ATTRIBUTES, RELATIONS, Entity, World
from harness_gym.domains.generation import generator_main, mix_counts
from harness_gym.domains.research_qa.grader import answer_quality
from harness_gym.domains.research_qa.mutations import wrong_answers
from harness_gym.domains.research_qa.questions import (
    QUESTIONS_FILE,
    Template,
    passage_prompt,
    question_prompt,
    read_templates,
)
from harness_gym.domains.source_files import source_path

__all__ = ["QUESTIONS_FILE", "generate", "read_templates"]

PHRASING_FILE = source_path("research_qa", "phrasing.json")
SEED = 7130
SPLIT_SIZES = {"train": 100, "val": 30, "test": 44}
N_OOD = 40
MAX_MENTIONS = 4
MUSIQUE_DEV_HOPS = {"2-hop": 1252, "3-hop": 2417 - 1252}
"""MuSiQue-Ans v1.0 dev questions by hop count (3- and 4-hop counted as 3-hop)."""
KIND_WEIGHTS = {"passage": 0.25, "1-hop": 0.25,
                **{k: 0.5 * n / sum(MUSIQUE_DEV_HOPS.values()) for k, n in MUSIQUE_DEV_HOPS.items()}}
"""The task mix: kind -> share of every split (module docstring)."""
KIND_HOPS = {"passage": 1, "1-hop": 1, "2-hop": 2, "3-hop": 3}
BASE_DIFFICULTY = {"passage": 0.05, "1-hop": 0.1, "2-hop": 0.2, "3-hop": 0.5}


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

    def task(self, index: int, kind: str, tmpl: Template, start: str, split: str) -> dict[str, Any]:
        """One task of ``kind`` (a key of :data:`KIND_WEIGHTS`): the question ``tmpl`` asks of ``start``."""
        r = self.rng
        chain = self.follow(start, tmpl.path)
        assert chain is not None and tmpl.hops == KIND_HOPS[kind], (tmpl.name, kind)
        answer, answer_kind = chain[-1], self.answer_kind(chain, tmpl.path)
        cands = [{"content": answer, "kind": "reference"}]
        cands += [{"content": a, "kind": k}
                  for k, a in wrong_answers(self.world, chain, tmpl.path, self.follow, answer_kind)]
        for cand in cands:
            cand["correct"] = answer_quality(cand["content"], answer) >= 1.0
        order = r.permutation(len(cands))
        difficulty = BASE_DIFFICULTY[kind] + 0.1 * (len(answer.split()) > 1) + float(r.uniform(0, 0.15))
        relations = sorted({rel for t in IN_DISTRIBUTION + OUT_OF_DISTRIBUTION for rel in t.path if rel in RELATIONS})
        question = tmpl.text.format(s=start)
        given = kind == "passage"
        return {
            "task_id": f"rq-q{index:04d}", "split": split, "family": tmpl.name,
            "difficulty": round(min(difficulty, 1.0), 3),
            "prompt": (passage_prompt(article_text(self.world, self.world.entities[start]), question,
                                      ANSWER_FORMATS[answer_kind]) if given else question_prompt(question)),
            "answer": answer, "kind": kind,
            "observations": [
                f"Answer format: reply with {ANSWER_FORMATS[answer_kind]} only, no explanation or extra words.",
                "The encyclopedia's graph records these relations: " + ", ".join(relations)
                + "; and the attributes birth_year, founded_year, population, year.",
            ],
            "required_observations": [] if given else [0],
            "relevant_docs": [] if given else [self.doc_ids[name] for name in chain[:-1]],
            "tool_calls": [] if given else [{"name": "query_relation", "args": {"entity": subj, "relation": rel}}
                                            for subj, rel in zip(chain[:-1], tmpl.path)],
            "candidates": [cands[i] for i in order],
        }

    def questions(self, templates: Sequence[Template], n: int) -> list[tuple[Template, str]]:
        """``n`` distinct (template, start entity) questions, taking the templates in turn."""
        pools = {t.name: [e.name for e in self.world.of_kind(t.start_kind) if self.follow(e.name, t.path)]
                 for t in templates}
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

    def slots(self, templates: Sequence[Template], sizes: dict[str, int]) -> list[tuple[str, Template, str, str]]:
        """(kind, template, start, split) of every task of the splits in ``sizes``, the kinds of each split in the
        proportions of :data:`KIND_WEIGHTS`, in a shuffled order. Passage and 1-hop questions come from one pool of
        distinct 1-hop questions."""
        plan = [(kind, split) for split, n in sizes.items() for kind, k in mix_counts(n, KIND_WEIGHTS).items()
                for _ in range(k)]
        self.rng.shuffle(plan)
        wanted: dict[int, int] = {}
        for kind, _ in plan:
            wanted[KIND_HOPS[kind]] = wanted.get(KIND_HOPS[kind], 0) + 1
        pools = {hops: self.questions([t for t in templates if t.hops == hops], n) for hops, n in sorted(wanted.items())}
        return [(kind, *pools[KIND_HOPS[kind]].pop(), split) for kind, split in plan]

    def build(self) -> list[dict[str, Any]]:
        """The in-distribution tasks (spread over train/val/test) and the out-of-distribution ones."""
        items = self.slots(IN_DISTRIBUTION, SPLIT_SIZES) + self.slots(OUT_OF_DISTRIBUTION, {"ood": N_OOD})
        return [self.task(i, kind, t, s, split) for i, (kind, t, s, split) in enumerate(items)]


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
