"""Generate the knowledge-work task bank: records about fictional entities from one source or from conflicting,
dated sources.

For every task entity the generator writes its dated source documents and two documents about a confusable
sibling entity. The reference record takes each field from the newest authoritative source and cites it; the
wrong candidates are the mistakes a model makes on such a task (stale values, rumours, wrong types, missing
fields, missing or wrong citations, another entity's values; :mod:`~harness_gym.domains.knowledge.mutations`). The
record fields with their phrasings and the source kinds are hand-written inputs in ``sources/`` (``fields.json``,
``source_kinds.json``).

**Task mix** (every split, ``ood`` included, by :func:`~harness_gym.domains.generation.mix_counts` of
:data:`MIX_WEIGHTS`):

| kind | share | sources about the entity | the prompt | evidence needed | the checker |
|---|---|---|---|---|---|
| ``single_source`` | 1/3 | one authoritative profile stating every field | 3-4 fields, no period | the schema, the one source | complete: every wrong record fails it |
| ``conflicting`` | 2/3 | an old profile, 1-2 newer authoritative updates changing 1-2 fields, a newer rumour half the time | 5-6 fields, "as of YEAR" (the year of the newest source) | the schema, the rules, the sources giving the current values, the histories of the changed fields | partial: a stale value cited to the old source that stated it passes |

The cue is in the prompt (how many fields it asks for, whether it names a period) and, later, in what retrieval
returns (one source naming the entity, or several). The proportions follow FreshQA (Vu et al. 2023, "FreshLLMs"),
whose 500 test questions are 125 never-changing, 125 slow-changing, 125 fast-changing and 125 false-premise ones:
a record field that never changes has one source; one that changes has several dated ones. Leaving the
false-premise questions aside, 125 of 375 never change (1/3) and 250 change (2/3); within ``conflicting``, one
update (slow) or two (fast) are drawn half and half.

Difficulty is 0.05 per field beyond three for a single-source record and 0.1 + 0.25 per conflicting field beyond
one + 0.2 for a rumour + 0.1 for a sixth field + 0.15 for updates spread over two sources for a conflicting one,
each plus U(0, 0.15).

Run ``python -m harness_gym.domains.knowledge.generate [--out DIR] [--seed N]``; the output is deterministic.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from harness_gym.core.taskfile import TaskFileError, read_json, require, write_jsonl
from harness_gym.domains.fictional_world import NameForge, World
from harness_gym.domains.generation import generator_main, mix_counts, pick
from harness_gym.domains.knowledge.datamodel import (
    JSON_TYPES,
    FieldSpec,
    RecordSpec,
    Source,
    SourceIndex,
    record_prompt,
)
from harness_gym.domains.knowledge.grader import grade_record
from harness_gym.domains.knowledge.mutations import record_candidates
from harness_gym.domains.source_files import source_path

FIELDS_FILE = source_path("knowledge", "fields.json")
SOURCE_KINDS_FILE = source_path("knowledge", "source_kinds.json")
SEED = 20240611
N_OOD = 40
SPLIT_SIZES = {"train": 100, "val": 32, "test": 44}
"""In-distribution tasks per split (company and person records, alternating)."""
FRESHQA_TEST = {"never-changing": 125, "slow-changing": 125, "fast-changing": 125}
"""FreshQA's test questions per category whose answer is stable or changes (its 125 false-premise ones left out)."""
MIX_WEIGHTS = {"single_source": FRESHQA_TEST["never-changing"],
               "conflicting": FRESHQA_TEST["slow-changing"] + FRESHQA_TEST["fast-changing"]}
"""The task mix: kind -> weight in every split (module docstring)."""


def read_fields(path: Path = FIELDS_FILE) -> dict[str, tuple[FieldSpec, ...]]:
    """The record fields of each entity kind, from ``sources/fields.json``.

    :param path: the fields file
    """
    raw = read_json(path)
    if not isinstance(raw, dict):
        raise TaskFileError(path, "expected an object: entity kind -> list of fields")
    kinds: dict[str, tuple[FieldSpec, ...]] = {}
    for kind, fields in raw.items():
        if not isinstance(fields, list) or not all(isinstance(f, dict) for f in fields):
            raise TaskFileError(path, "expected a list of field objects", field=kind)
        specs = []
        for i, rec in enumerate(fields):
            where = f"{kind}[{i}]"
            typ = require(rec, "type", str, path=path, task_id=where)
            if typ not in JSON_TYPES:
                raise TaskFileError(path, f"type must be one of {JSON_TYPES}, got {typ!r}", task_id=where,
                                    field="type")
            specs.append(FieldSpec(require(rec, "name", str, path=path, task_id=where), typ,
                                   tuple(require(rec, "phrasings", list, path=path, task_id=where)),
                                   tuple(require(rec, "enum", list, path=path, task_id=where, default=[])),
                                   require(rec, "changes", bool, path=path, task_id=where, default=True)))
        kinds[kind] = tuple(specs)
    return kinds


def read_source_kinds(path: Path = SOURCE_KINDS_FILE) -> tuple[dict[str, tuple[str, ...]],
                                                                  dict[str, tuple[str, ...]], tuple[str, ...]]:
    """The authoritative and the unofficial source kinds per entity kind, and the openings of a rumour, from
    ``sources/source_kinds.json``.

    :param path: the source-kinds file
    """
    raw = read_json(path)
    if not isinstance(raw, dict):
        raise TaskFileError(path, "expected an object with 'authoritative', 'unofficial' and 'rumour_leads'")
    tables = []
    for name in ("authoritative", "unofficial"):
        table = require(raw, name, dict, path=path)
        if set(table) != set(KIND_FIELDS) or not all(isinstance(v, list) and v for v in table.values()):
            raise TaskFileError(path, f"expected a non-empty list per entity kind {sorted(KIND_FIELDS)}", field=name)
        tables.append({kind: tuple(kinds) for kind, kinds in table.items()})
    return tables[0], tables[1], tuple(require(raw, "rumour_leads", list, path=path))


KIND_FIELDS = read_fields()
AUTHORITATIVE, UNOFFICIAL, RUMOUR_LEADS = read_source_kinds()


class KnowledgeGenerator:
    """Builds the sources and tasks from one seed.

    :param seed: the single source of randomness
    """

    def __init__(self, seed: int = SEED) -> None:
        self.rng = np.random.default_rng(seed)
        self.world = World(seed + 1, n_regions=6)
        self.names: NameForge = self.world.names
        self.sources: list[dict[str, Any]] = []
        self.cities = [e.name for e in self.world.of_kind("city")]
        self.people = [e.name for e in self.world.of_kind("person")]
        self.orgs = [e.name for e in self.world.of_kind("organisation")]

    # ----- values ------------------------------------------------------------------------------------
    def _pick(self, items: tuple[str, ...] | list[str]) -> str:
        return pick(self.rng, items)

    def value(self, spec: FieldSpec) -> Any:
        """A fresh value of the field, of the field's JSON type."""
        r = self.rng
        samplers: dict[str, Callable[[], Any]] = {
            "ceo": lambda: self._pick(self.people),
            "headquarters": lambda: self._pick(self.cities),
            "founded_year": lambda: int(r.integers(1950, 2012)),
            "employees": lambda: int(r.integers(12, 9000)),
            "revenue_musd": lambda: round(float(r.uniform(1, 900)), 1),
            "employer": lambda: self._pick(self.orgs),
            "home_city": lambda: self._pick(self.cities),
            "birth_year": lambda: int(r.integers(1950, 1998)),
            "board_seats": lambda: int(r.integers(0, 7)),
            "salary_kusd": lambda: round(float(r.uniform(40, 600)), 1),
            "maker": lambda: self._pick(self.orgs),
            "launch_year": lambda: int(r.integers(2005, 2021)),
            "price_eur": lambda: round(float(r.uniform(15, 2500)), 2),
            "units_sold": lambda: int(r.integers(300, 500000)),
        }
        if spec.enum:
            return self._pick(spec.enum)
        if spec.name not in samplers:
            raise TaskFileError(FIELDS_FILE, f"field {spec.name!r} has neither an enum nor a sampler; samplers: "
                                f"{sorted(samplers)}", field=spec.name)
        return samplers[spec.name]()

    def changed(self, spec: FieldSpec, *old: Any) -> Any:
        """A value of the field different from every value in ``old``."""
        for _ in range(100):
            new = self.value(spec)
            if new not in old:
                return new
        raise RuntimeError(f"cannot change {spec.name}")

    # ----- sources -----------------------------------------------------------------------------------
    def add_source(self, entity: str, kind: str, source_kind: str, authoritative: bool, year: int,
                   statements: dict[str, Any], specs: dict[str, FieldSpec]) -> str:
        doc_id = f"kn-s{len(self.sources):04d}"
        date = f"{year}-{int(self.rng.integers(1, 13)):02d}-{int(self.rng.integers(1, 29)):02d}"
        sentences = [self._pick(specs[f].phrasings).format(e=entity, v=v) for f, v in statements.items()]
        if authoritative:
            body = " ".join(sentences)
        else:
            body = f"{self._pick(RUMOUR_LEADS)} " + " ".join(s[0].lower() + s[1:] for s in sentences)
        text = f"{source_kind.capitalize()} about {entity}, dated {date}. {body}"
        self.sources.append({"doc_id": doc_id, "entity": entity, "entity_kind": kind, "title":
                             f"{entity}: {source_kind} ({date})", "date": date, "source_kind": source_kind,
                             "authoritative": authoritative, "text": text, "statements": statements})
        return doc_id

    def entity_names(self, kind: str) -> tuple[str, str]:
        """The task entity and a confusable sibling sharing its first word."""
        if kind == "company":
            root = self.names.root()
            return self.names.organisation(root), self.names.organisation(root)
        if kind == "person":
            surname = self.names.root()
            return f"{self.names.word(2)} {surname}", f"{self.names.word(2)} {surname}"
        root = self.names.root()
        return self.names.product(root), self.names.product(root)

    # ----- one task ----------------------------------------------------------------------------------
    def task(self, index: int, kind: str, split: str, mix: str) -> dict[str, Any]:
        """One record task about a new entity of ``kind`` (company, person, product), of the mix kind ``mix``
        (``single_source`` or ``conflicting``, :data:`MIX_WEIGHTS`)."""
        r = self.rng
        all_specs = KIND_FIELDS[kind]
        single = mix == "single_source"
        n_fields = (3 if single else 5) + int(r.random() < 0.5)
        keep = sorted(r.choice(len(all_specs), size=n_fields, replace=False).tolist())
        specs = {all_specs[i].name: all_specs[i] for i in keep}
        entity, sibling = self.entity_names(kind)
        official = AUTHORITATIVE[kind]

        gold = {f: self.value(s) for f, s in specs.items()}
        changeable = [f for f, s in specs.items() if s.changes]
        n_conflicts = 0 if single else 1 + int(r.random() < 0.5)
        conflicted = [changeable[i] for i in sorted(r.choice(len(changeable), size=n_conflicts, replace=False))]
        year = int(r.integers(2012, 2017))
        base_doc = self.add_source(entity, kind, official[0], True, year, dict(gold), specs)
        support = dict.fromkeys(specs, base_doc)
        stale: dict[str, tuple[Any, str]] = {}
        split_updates = n_conflicts == 2 and r.random() < 0.5
        for group in ([[f] for f in conflicted] if split_updates else [conflicted] if conflicted else []):
            year += 1 + int(r.integers(3))
            for f in group:
                stale[f] = (gold[f], support[f])
                gold[f] = self.changed(specs[f], gold[f])
            restated = [g for g in specs if g not in conflicted and r.random() < 0.3]
            statements = {g: gold[g] for g in specs if g in group or g in restated}
            doc = self.add_source(entity, kind, self._pick(official[1:]), True, year, statements, specs)
            support.update(dict.fromkeys(statements, doc))
        rumour: tuple[str, Any, str] | None = None
        if not single and r.random() < 0.5:
            f = self._pick(changeable)
            value = self.changed(specs[f], gold[f])
            year += 1
            doc = self.add_source(entity, kind, self._pick(UNOFFICIAL[kind]), False, year, {f: value}, specs)
            rumour = (f, value, doc)
        sibling_values = {f: self.changed(s, gold[f]) for f, s in specs.items()}
        sibling_docs = [self.add_source(sibling, kind, official[0], True, int(r.integers(2012, 2023)),
                                        sibling_values, specs)]
        part = dict(list(sibling_values.items())[:3])
        sibling_docs.append(self.add_source(sibling, kind, self._pick(official[1:]), True,
                                            int(r.integers(2012, 2023)), part, specs))

        if single:
            difficulty = 0.05 * (n_fields - 3) + float(r.uniform(0, 0.15))
        else:
            difficulty = 0.1 + 0.25 * (n_conflicts - 1) + 0.2 * (rumour is not None) + 0.1 * (n_fields == 6) \
                + 0.15 * split_updates + float(r.uniform(0, 0.15))
        schema_text = ", ".join(
            f"{f} ({s.type}{'; one of ' + '/'.join(s.enum) if s.enum else ''})" for f, s in specs.items())
        never = f"{' and '.join(s + 's' for s in UNOFFICIAL[kind]).capitalize()} never count."
        cite = f"Cite for every field the doc id of a source about {entity} that states the value you report."
        if single:
            rules = (f"Field rules: report each field as an authoritative source about {entity} states it; "
                     f"authoritative sources are {', '.join(official)}. {never} {cite}")
        else:
            rules = (f"Field rules: sources about {entity} disagree. For each field the value stated by the most "
                     f"recently dated authoritative source wins; authoritative sources are {', '.join(official)}. "
                     f"{never} {cite}")
        observations = [
            f"Record schema for the {kind} {entity}: a JSON object {{\"entity\": \"{entity}\", \"values\": "
            f"{{field: value}}, \"citations\": {{field: doc_id}}}} with every one of these fields: {schema_text}.",
            rules,
            f"Disambiguation: {entity} is a different {kind} from {sibling}; do not mix their sources.",
        ]
        cands = record_candidates(self.rng, entity, specs, gold, support, stale, rumour, sibling_values, sibling_docs,
                                  self.changed)
        return {
            "task_id": f"kn-{index:04d}", "split": split, "family": kind, "difficulty": round(min(difficulty, 1.0), 3),
            "prompt": record_prompt(kind, entity, list(specs), None if single else year),
            "entity": entity, "mix": mix,
            "fields": [{"name": f, "type": s.type, **({"enum": list(s.enum)} if s.enum else {})}
                       for f, s in specs.items()],
            "gold": gold,
            "observations": observations, "required_observations": [0] if single else [0, 1],
            "relevant_docs": sorted(set(support.values())),
            "tool_calls": [{"name": "get_field_history", "args": {"entity": entity, "field": f}} for f in conflicted],
            "candidates": cands,
        }

    # ----- the bank ----------------------------------------------------------------------------------
    def build(self) -> list[dict[str, Any]]:
        def plan(sizes: dict[str, int]) -> list[tuple[str, str]]:
            slots = [(split, mix) for split, n in sizes.items() for mix, k in mix_counts(n, MIX_WEIGHTS).items()
                     for _ in range(k)]
            self.rng.shuffle(slots)
            return slots

        tasks = [self.task(i, ("company", "person")[i % 2], split, mix)
                 for i, (split, mix) in enumerate(plan(SPLIT_SIZES))]
        tasks += [self.task(len(tasks) + i, "product", split, mix) for i, (split, mix) in enumerate(plan({"ood": N_OOD}))]
        return tasks


def label_candidates(tasks: list[dict[str, Any]], sources: list[dict[str, Any]]) -> None:
    """Set every candidate's ``correct`` flag by running the real grader on its content."""
    index = SourceIndex([Source.from_json(s, path="<generated>") for s in sources])
    for t in tasks:
        spec = RecordSpec.from_json(t, path="<generated>")
        for cand in t["candidates"]:
            cand["correct"] = grade_record(index, spec, t["gold"], cand["content"]) >= 1.0


def generate(out_dir: Path, seed: int = SEED) -> tuple[int, int]:
    """Generate and write ``sources.jsonl`` and ``tasks.jsonl``; returns (n_sources, n_tasks)."""
    gen = KnowledgeGenerator(seed)
    tasks = gen.build()
    label_candidates(tasks, gen.sources)
    return write_jsonl(out_dir / "sources.jsonl", gen.sources), write_jsonl(out_dir / "tasks.jsonl", tasks)


def main() -> None:
    generator_main(__doc__, "knowledge", generate, SEED,
                   lambda counts, out: f"wrote {counts[1]} tasks and {counts[0]} sources to {out}")


if __name__ == "__main__":
    main()
