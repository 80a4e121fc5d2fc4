"""Generate the knowledge-work task bank: records about fictional entities from conflicting, dated sources.

For every task entity the generator writes a set of dated source documents (an old authoritative profile,
newer authoritative updates that change some fields, sometimes a newer rumour that contradicts them) and two
documents about a confusable sibling entity. The reference record takes each field from the newest
authoritative source and cites it; the wrong candidates are the mistakes a model makes on such a task
(stale values, rumours, wrong types, missing fields, missing or wrong citations, another entity's values).

Run ``python -m harness_gym.domains.knowledge.generate [--out DIR] [--seed N]``; the output is deterministic.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from harness_gym.core.taskfile import write_jsonl
from harness_gym.domains.fictional_world import NameForge, World
from harness_gym.domains.generation import generator_main
from harness_gym.domains.knowledge.datamodel import RecordSpec, Source, SourceIndex
from harness_gym.domains.knowledge.grader import grade_record

SEED = 20240611
N_OOD = 40
SPLIT_SIZES = {"train": 100, "val": 32, "test": 44}
"""In-distribution tasks per split (company and person records, alternating)."""


@dataclass(frozen=True)
class FieldSpec:
    """A record field: JSON type, optional enum, whether it changes over time, how sources phrase it."""

    name: str
    type: str
    phrasings: tuple[str, ...]
    enum: tuple[str, ...] = ()
    changes: bool = True


KIND_FIELDS: dict[str, tuple[FieldSpec, ...]] = {
    "company": (
        FieldSpec("ceo", "string", ("{e} is led by chief executive {v}.", "{v} serves as chief executive of {e}.")),
        FieldSpec("headquarters", "string", ("{e} is headquartered in {v}.", "The head office of {e} is in {v}.")),
        FieldSpec("founded_year", "integer", ("{e} was founded in {v}.", "{e} dates back to {v}."), changes=False),
        FieldSpec("employees", "integer", ("{e} employs {v} people.", "Headcount at {e} stands at {v}.")),
        FieldSpec("revenue_musd", "number", ("{e} reported revenue of {v} million US dollars.",
                                              "Annual revenue at {e} came to {v} million US dollars.")),
        FieldSpec("ownership", "string", ("{e} is a {v} company.", "Ownership structure of {e}: {v}."),
                  enum=("public", "private", "cooperative")),
    ),
    "person": (
        FieldSpec("employer", "string", ("{e} works at {v}.", "{e} is employed by {v}.")),
        FieldSpec("job_title", "string", ("{e} holds the position of {v}.", "{e} currently serves as {v}."),
                  enum=("chief engineer", "head of research", "operations director", "finance director",
                        "product lead")),
        FieldSpec("home_city", "string", ("{e} lives in {v}.", "{e} is resident in {v}.")),
        FieldSpec("birth_year", "integer", ("{e} was born in {v}.", "{e}, born {v}, grew up abroad."),
                  changes=False),
        FieldSpec("board_seats", "integer", ("{e} sits on {v} company boards.", "{e} holds {v} board seats.")),
        FieldSpec("salary_kusd", "number", ("{e} earns {v} thousand US dollars a year.",
                                             "The annual pay of {e} is {v} thousand US dollars.")),
    ),
    "product": (
        FieldSpec("maker", "string", ("{e} is made by {v}.", "{e} is manufactured by {v}.")),
        FieldSpec("launch_year", "integer", ("{e} was launched in {v}.", "{e} first went on sale in {v}."),
                  changes=False),
        FieldSpec("price_eur", "number", ("{e} retails at {v} euros.", "The list price of {e} is {v} euros.")),
        FieldSpec("category", "string", ("{e} is sold as a {v}.", "Product category of {e}: {v}."),
                  enum=("drone", "sensor", "kettle", "bicycle", "headset", "printer"), changes=False),
        FieldSpec("status", "string", ("{e} is currently {v}.", "Market status of {e}: {v}."),
                  enum=("active", "discontinued", "recalled")),
        FieldSpec("units_sold", "integer", ("{e} has sold {v} units.", "Cumulative sales of {e} reached {v} units.")),
    ),
}

AUTHORITATIVE: dict[str, tuple[str, ...]] = {
    "company": ("registry filing", "annual report", "press release"),
    "person": ("staff directory", "press release", "registry filing"),
    "product": ("manufacturer catalogue", "press release", "recall notice"),
}
UNOFFICIAL: dict[str, tuple[str, ...]] = {
    "company": ("forum post", "rumour column"),
    "person": ("forum post", "gossip blog"),
    "product": ("review blog", "forum post"),
}
RUMOUR_LEADS = ("Word on the street is that", "An anonymous poster claims that", "Unconfirmed reports say that")


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
        return items[int(self.rng.integers(len(items)))]

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
    def task(self, index: int, kind: str, split: str) -> dict[str, Any]:
        r = self.rng
        all_specs = KIND_FIELDS[kind]
        n_fields = 5 + int(r.random() < 0.5)
        keep = sorted(r.choice(len(all_specs), size=n_fields, replace=False).tolist())
        specs = {all_specs[i].name: all_specs[i] for i in keep}
        entity, sibling = self.entity_names(kind)
        official = AUTHORITATIVE[kind]

        gold = {f: self.value(s) for f, s in specs.items()}
        changeable = [f for f, s in specs.items() if s.changes]
        n_conflicts = 1 + int(r.random() < 0.5)
        conflicted = [changeable[i] for i in sorted(r.choice(len(changeable), size=n_conflicts, replace=False))]
        year = int(r.integers(2012, 2017))
        base_doc = self.add_source(entity, kind, official[0], True, year, dict(gold), specs)
        support = dict.fromkeys(specs, base_doc)
        stale: dict[str, tuple[Any, str]] = {}
        split_updates = n_conflicts == 2 and r.random() < 0.5
        for group in ([[f] for f in conflicted] if split_updates else [conflicted]):
            year += 1 + int(r.integers(3))
            for f in group:
                stale[f] = (gold[f], support[f])
                gold[f] = self.changed(specs[f], gold[f])
            restated = [g for g in specs if g not in conflicted and r.random() < 0.3]
            statements = {g: gold[g] for g in specs if g in group or g in restated}
            doc = self.add_source(entity, kind, self._pick(official[1:]), True, year, statements, specs)
            support.update(dict.fromkeys(statements, doc))
        rumour: tuple[str, Any, str] | None = None
        if r.random() < 0.5:
            f = self._pick(changeable)
            value = self.changed(specs[f], gold[f])
            doc = self.add_source(entity, kind, self._pick(UNOFFICIAL[kind]), False, year + 1, {f: value}, specs)
            rumour = (f, value, doc)
        sibling_values = {f: self.changed(s, gold[f]) for f, s in specs.items()}
        sibling_docs = [self.add_source(sibling, kind, official[0], True, int(r.integers(2012, 2023)),
                                        sibling_values, specs)]
        part = dict(list(sibling_values.items())[:3])
        sibling_docs.append(self.add_source(sibling, kind, self._pick(official[1:]), True,
                                            int(r.integers(2012, 2023)), part, specs))

        difficulty = 0.1 + 0.25 * (n_conflicts - 1) + 0.2 * (rumour is not None) + 0.1 * (n_fields == 6) \
            + 0.15 * split_updates + float(r.uniform(0, 0.15))
        schema_text = ", ".join(
            f"{f} ({s.type}{'; one of ' + '/'.join(s.enum) if s.enum else ''})" for f, s in specs.items())
        rules = (f"Field rules: sources about {entity} disagree. For each field the value stated by the most "
                 f"recently dated authoritative source wins; authoritative sources are {', '.join(official)}. "
                 f"{' and '.join(s + 's' for s in UNOFFICIAL[kind]).capitalize()} never count. Cite for every "
                 f"field the doc id of a source about {entity} that states the value you report.")
        observations = [
            f"Record schema for the {kind} {entity}: a JSON object {{\"entity\": \"{entity}\", \"values\": "
            f"{{field: value}}, \"citations\": {{field: doc_id}}}} with every one of these fields: {schema_text}.",
            rules,
            f"Disambiguation: {entity} is a different {kind} from {sibling}; do not mix their sources.",
        ]
        cands = self.candidates(entity, specs, gold, support, stale, rumour, sibling_values, sibling_docs)
        return {
            "task_id": f"kn-{index:04d}", "split": split, "family": kind, "difficulty": round(min(difficulty, 1.0), 3),
            "prompt": f"Compile the structured {kind} record for {entity} from the source documents, "
                      f"citing a source for every field.",
            "entity": entity,
            "fields": [{"name": f, "type": s.type, **({"enum": list(s.enum)} if s.enum else {})}
                       for f, s in specs.items()],
            "gold": gold,
            "observations": observations, "required_observations": [0, 1],
            "relevant_docs": sorted(set(support.values())),
            "tool_calls": [{"name": "get_field_history", "args": {"entity": entity, "field": f}} for f in conflicted],
            "candidates": cands,
        }

    # ----- candidates --------------------------------------------------------------------------------
    def candidates(self, entity: str, specs: dict[str, FieldSpec], gold: dict[str, Any], support: dict[str, str],
                   stale: dict[str, tuple[Any, str]], rumour: tuple[str, Any, str] | None,
                   sibling_values: dict[str, Any], sibling_docs: list[str]) -> list[dict[str, Any]]:
        """The reference record and realistic wrong records (``correct`` is filled in by the grader later)."""
        r = self.rng

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
            f = self._pick(numeric)
            unit = {"integer": "", "number": " approx."}[specs[f].type]
            out.append(("wrong_type", edit(f, f"{gold[f]}{unit}", support[f])))
        fields = list(specs)
        f = self._pick(fields)
        out.append(("missing_field", record({g: v for g, v in gold.items() if g != f},
                                            {g: d for g, d in support.items() if g != f})))
        f = self._pick(fields)
        out.append(("uncited_value", record(gold, {g: d for g, d in support.items() if g != f})))
        f = self._pick(list(stale))
        out.append(("miscited", edit(f, gold[f], stale[f][1])))
        f = self._pick(fields)
        out.append(("other_entity", edit(f, sibling_values[f], sibling_docs[0])))
        f = self._pick([g for g in fields if not specs[g].enum])
        fabricated = self.changed(specs[f], gold[f], sibling_values[f], stale.get(f, (None,))[0],
                                  rumour[1] if rumour else None)
        out.append(("hallucinated", edit(f, fabricated, support[f])))
        r.shuffle(out)
        return [{"content": c, "kind": k} for k, c in out]

    # ----- the bank ----------------------------------------------------------------------------------
    def build(self) -> list[dict[str, Any]]:
        splits = [s for s, n in SPLIT_SIZES.items() for _ in range(n)]
        self.rng.shuffle(splits)
        tasks = [self.task(i, ("company", "person")[i % 2], split) for i, split in enumerate(splits)]
        tasks += [self.task(len(tasks) + i, "product", "ood") for i in range(N_OOD)]
        return tasks


def label_candidates(tasks: list[dict[str, Any]], sources: list[dict[str, Any]]) -> None:
    """Set every candidate's ``correct`` flag by running the real grader on its content."""
    index = SourceIndex([Source.from_json(s, path="<generated>") for s in sources])
    for t in tasks:
        spec = RecordSpec.from_json(t, path="<generated>")
        for cand in t["candidates"]:
            cand["correct"] = grade_record(index, spec, cand["content"]) >= 1.0


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
