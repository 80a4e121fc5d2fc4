"""A seeded generator of fictional worlds, shared by the knowledge and research_qa task generators.

Every name is built from invented syllables, so no fact about these people, places, organisations and
events can come from a language model's prior knowledge: it must be read from the generated sources.
:func:`normalize_answer` is the answer normalisation both domains' graders use.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from harness_gym.domains.generation import pick

_ONSETS = ("b", "br", "c", "d", "dr", "f", "g", "gr", "h", "k", "kr", "l", "m", "n", "p", "qu", "r", "s",
           "sk", "st", "t", "th", "tr", "v", "vr", "z")
_NUCLEI = ("a", "e", "i", "o", "u", "ae", "ai", "ei", "ia", "ou")
_CODAS = ("", "", "", "l", "n", "r", "s", "th", "x", "nd", "rk", "st")
_PLACE_PREFIX = ("Port", "Upper", "Lower", "New", "Fort", "Saint")
_PLACE_SUFFIX = ("Falls", "Harbour", "Crossing", "Heights", "Vale", "Reach")
_REGION_SUFFIX = ("Province", "Marches", "Coast", "Highlands", "Territory")
_ORG_SECTORS = ("Shipping", "Labs", "Logistics", "Foundry", "Textiles", "Analytics", "Robotics", "Mining",
                "Optics", "Brewing", "Pharma", "Energy", "Aerospace", "Software", "Ceramics", "Holdings")
_ORG_SUFFIXES = ("Guild", "Company", "Group", "Works", "Consortium", "Collective")
_UNI_FORMS = ("University of {}", "{} Institute of Technology", "{} Academy", "{} College")
_EVENT_FORMS = ("{} Summit", "{} Expedition", "{} Accord", "{} Regatta", "{} Symposium", "{} Festival")
_PRODUCT_SUFFIX = ("X", "Pro", "Mini", "One", "Max", "Lite")


_PUNCTUATION_TO_SPACE = str.maketrans(dict.fromkeys(string.punctuation, " "))
_ARTICLE = re.compile(r"\b(a|an|the)\b")
NORMALIZED_MEMO_CHARS = 256
"""Answers up to this long are normalised once per process (graders and source lookups repeat them)."""


def normalize_answer(text: str) -> str:
    """Lower-case, drop punctuation, the articles a/an/the and extra whitespace (SQuAD-style)."""
    if len(text) <= NORMALIZED_MEMO_CHARS:
        return _normalized_short(text)
    return _normalized(text)


def _normalized(text: str) -> str:
    return " ".join(_ARTICLE.sub(" ", text.lower().translate(_PUNCTUATION_TO_SPACE)).split())


_normalized_short = lru_cache(maxsize=16384)(_normalized)


class NameForge:
    """Unique invented names of people, places, organisations, events and products.

    :param rng: the generator's random source (all randomness of a generator comes from one seed)
    """

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self._used: set[str] = set()

    def _pick(self, options: tuple[str, ...]) -> str:
        return pick(self.rng, options)

    def word(self, syllables: int) -> str:
        """A capitalised invented word of ``syllables`` syllables."""
        parts = [self._pick(_ONSETS) + self._pick(_NUCLEI) for _ in range(syllables)]
        return ("".join(parts) + self._pick(_CODAS)).capitalize()

    def _unique(self, make) -> str:
        for _ in range(1000):
            name = make()
            if name.lower() not in self._used:
                self._used.add(name.lower())
                return name
        raise RuntimeError("name space exhausted")

    def root(self) -> str:
        """A fresh root word (2-3 syllables) never used before, for building related names."""
        return self._unique(lambda: self.word(2 + int(self.rng.integers(2))))

    def person(self) -> str:
        return self._unique(lambda: f"{self.word(2)} {self.word(2 + int(self.rng.integers(2)))}")

    def place(self) -> str:
        """A city name; about a third of them have two tokens (``Port Veyla``, ``Drumor Falls``)."""
        def make() -> str:
            base = self.word(2 + int(self.rng.integers(2)))
            roll = self.rng.random()
            if roll < 0.17:
                return f"{self._pick(_PLACE_PREFIX)} {base}"
            if roll < 0.34:
                return f"{base} {self._pick(_PLACE_SUFFIX)}"
            return base
        return self._unique(make)

    def region(self) -> str:
        return self._unique(lambda: f"{self.word(2)} {self._pick(_REGION_SUFFIX)}")

    def organisation(self, root: str | None = None, sector: str | None = None) -> str:
        """``<Root> <Sector> [<Suffix>]``; pass the same ``root`` to make confusable sibling names."""
        def make() -> str:
            head = root or self.word(2 + int(self.rng.integers(2)))
            name = f"{head} {sector or self._pick(_ORG_SECTORS)}"
            return f"{name} {self._pick(_ORG_SUFFIXES)}" if self.rng.random() < 0.4 else name
        return self._unique(make)

    def university(self) -> str:
        return self._unique(lambda: self._pick(_UNI_FORMS).format(self.word(2 + int(self.rng.integers(2)))))

    def event(self) -> str:
        return self._unique(lambda: self._pick(_EVENT_FORMS).format(self.word(2 + int(self.rng.integers(2)))))

    def product(self, root: str | None = None) -> str:
        """``<Root> <Suffix>``; pass the same ``root`` to make confusable sibling names."""
        return self._unique(lambda: f"{root or self.word(2)} {self._pick(_PRODUCT_SUFFIX)}")


@dataclass
class Entity:
    """A node of the world graph: a name, a kind, scalar attributes and named relations to other entities."""

    name: str
    kind: str
    attrs: dict[str, int] = field(default_factory=dict)
    rels: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Relation:
    """A relation type: the kinds it links and how an encyclopedia sentence states it."""

    name: str
    subject_kind: str
    object_kind: str
    sentence: str
    """Format string with ``{s}`` (subject) and ``{o}`` (object)."""


RELATIONS: dict[str, Relation] = {r.name: r for r in (
    Relation("in_region", "city", "region", "{s} is a city in the region of {o}."),
    Relation("capital", "region", "city", "The capital of {s} is {o}."),
    Relation("born_in", "person", "city", "{s} was born in {o}."),
    Relation("works_for", "person", "organisation", "{s} works for {o}."),
    Relation("studied_at", "person", "university", "{s} studied at {o}."),
    Relation("mentor", "person", "person", "The mentor of {s} was {o}."),
    Relation("spouse", "person", "person", "{s} is married to {o}."),
    Relation("headquartered_in", "organisation", "city", "{s} has its headquarters in {o}."),
    Relation("founded_by", "organisation", "person", "{s} was founded by {o}."),
    Relation("led_by", "organisation", "person", "{s} is currently led by {o}."),
    Relation("parent_company", "organisation", "organisation", "{s} is a subsidiary of {o}."),
    Relation("located_in", "university", "city", "{s} is located in {o}."),
    Relation("rector", "university", "person", "The rector of {s} is {o}."),
    Relation("held_in", "event", "city", "{s} took place in {o}."),
    Relation("organised_by", "event", "organisation", "{s} was organised by {o}."),
    Relation("won_by", "event", "person", "The chief prize at {s} went to {o}."),
)}

ATTRIBUTES: dict[str, dict[str, str]] = {
    "person": {"birth_year": "{s} was born in the year {v}."},
    "city": {"population": "{s} has a population of {v}."},
    "region": {"population": "{s} is home to {v} people."},
    "organisation": {"founded_year": "{s} was established in {v}."},
    "university": {"founded_year": "{s} opened its doors in {v}."},
    "event": {"year": "{s} was held in the year {v}."},
}


class World:
    """A generated world: regions, cities, people, organisations, universities and events with relations.

    :param seed: seed of the world (same seed, same world)
    :param n_regions: number of regions; the other counts scale with it
    """

    def __init__(self, seed: int, n_regions: int = 8) -> None:
        self.rng = np.random.default_rng(seed)
        self.names = NameForge(self.rng)
        self.entities: dict[str, Entity] = {}
        self._build(n_regions)

    def _add(self, name: str, kind: str, **attrs: int) -> Entity:
        ent = Entity(name=name, kind=kind, attrs=dict(attrs))
        self.entities[name] = ent
        return ent

    def of_kind(self, kind: str) -> list[Entity]:
        return [e for e in self.entities.values() if e.kind == kind]

    def choice(self, items: list[Entity]) -> Entity:
        return pick(self.rng, items)

    def _build(self, n_regions: int) -> None:
        rng, names = self.rng, self.names
        regions = [self._add(names.region(), "region", population=int(rng.integers(200, 9000)) * 1000)
                   for _ in range(n_regions)]
        cities: list[Entity] = []
        for region in regions:
            local = [self._add(names.place(), "city", population=int(rng.integers(8, 900)) * 1000)
                     for _ in range(int(rng.integers(4, 7)))]
            for city in local:
                city.rels["in_region"] = region.name
            region.rels["capital"] = local[0].name
            cities.extend(local)
        people = [self._add(names.person(), "person", birth_year=int(rng.integers(1940, 2000)))
                  for _ in range(12 * n_regions)]
        unis = [self._add(names.university(), "university", founded_year=int(rng.integers(1700, 1990)))
                for _ in range(2 * n_regions)]
        orgs = [self._add(names.organisation(), "organisation", founded_year=int(rng.integers(1900, 2015)))
                for _ in range(5 * n_regions)]
        events = [self._add(names.event(), "event", year=int(rng.integers(1990, 2024)))
                  for _ in range(4 * n_regions)]
        for person in people:
            person.rels["born_in"] = self.choice(cities).name
            person.rels["works_for"] = self.choice(orgs).name
            person.rels["studied_at"] = self.choice(unis).name
            elders = [p for p in people if p.attrs["birth_year"] < person.attrs["birth_year"] - 10]
            if elders:
                person.rels["mentor"] = self.choice(elders).name
        singles = list(people)
        rng.shuffle(singles)
        for a, b in zip(singles[0:len(singles) // 3:2], singles[1:len(singles) // 3:2]):
            a.rels["spouse"], b.rels["spouse"] = b.name, a.name
        for org in orgs:
            org.rels["headquartered_in"] = self.choice(cities).name
            org.rels["founded_by"] = self.choice(people).name
            staff = [p for p in people if p.rels["works_for"] == org.name]
            org.rels["led_by"] = self.choice(staff or people).name
            if rng.random() < 0.3:
                parent = self.choice(orgs)
                if parent is not org and "parent_company" not in parent.rels:
                    org.rels["parent_company"] = parent.name
        for uni in unis:
            uni.rels["located_in"] = self.choice(cities).name
            uni.rels["rector"] = self.choice(people).name
        for event in events:
            event.rels["held_in"] = self.choice(cities).name
            event.rels["organised_by"] = self.choice(orgs).name
            event.rels["won_by"] = self.choice(people).name

    def incoming(self, name: str) -> list[tuple[str, str]]:
        """``(relation, subject)`` pairs of every relation pointing at ``name``."""
        return [(rel, ent.name) for ent in self.entities.values() for rel, obj in ent.rels.items() if obj == name]
