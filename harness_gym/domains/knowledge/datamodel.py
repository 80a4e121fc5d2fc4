"""The knowledge domain's data: dated sources, the record a task asks for, and the index of which source
states what. The checker (:mod:`.checker`) and the grader (:mod:`.grader`) work on them.

A record draft is JSON: ``{"entity": ..., "values": {field: value}, "citations": {field: doc_id}}``.

- The **checker** runs one validation of the record's envelope (the entity, a ``values`` and a ``citations``
  object, no field the task does not ask for) and one per field (a value of the field's type and enum, cited to a
  source that exists, is about the entity and states the value): ``1 + len(fields)`` validations, the count the
  harness sees. A stale value cited to the old source that stated it passes: the checker cannot know which
  source is newest *and* authoritative without doing the task.
- The **grader** scores field-level accuracy: a field counts when its value equals the gold value (the newest
  authoritative statement) and it cites an authoritative source about the entity that states that value.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness_gym.core.intake import InputLimitError, loads_json
from harness_gym.core.taskfile import TaskFileError, require
from harness_gym.domains.fictional_world import normalize_answer

JSON_TYPES = ("string", "integer", "number")


@dataclass(frozen=True)
class FieldSpec:
    """A record field as the generator writes it: JSON type, optional enum, whether it changes over time, how
    sources phrase it (``{e}`` the entity, ``{v}`` the value)."""

    name: str
    type: str
    phrasings: tuple[str, ...]
    enum: tuple[str, ...] = ()
    changes: bool = True


@dataclass(frozen=True)
class Source:
    """A dated source document about one entity, with the field statements its text makes."""

    doc_id: str
    entity: str
    entity_kind: str
    title: str
    date: str
    source_kind: str
    authoritative: bool
    text: str
    statements: Mapping[str, Any]

    @classmethod
    def from_json(cls, rec: dict[str, Any], *, path: str | Path, line: int | None = None) -> Source:
        doc_id = require(rec, "doc_id", str, path=path, line=line)
        get = {"path": path, "line": line, "task_id": doc_id}
        return cls(doc_id=doc_id, entity=require(rec, "entity", str, **get),
                   entity_kind=require(rec, "entity_kind", str, **get), title=require(rec, "title", str, **get),
                   date=require(rec, "date", str, **get), source_kind=require(rec, "source_kind", str, **get),
                   authoritative=require(rec, "authoritative", bool, **get), text=require(rec, "text", str, **get),
                   statements=require(rec, "statements", dict, **get))

    @property
    def tokens(self) -> tuple[str, ...]:
        return tuple(normalize_answer(self.text).split())


@dataclass(frozen=True)
class RecordSpec:
    """What a task asks for: the entity and its typed fields (the gold record is kept apart, in the task's hidden
    payload, see :func:`read_gold`)."""

    entity: str
    kind: str
    fields: tuple[tuple[str, str, tuple[str, ...]], ...]
    """(name, JSON type, enum) per field."""

    @classmethod
    def from_json(cls, rec: dict[str, Any], *, path: str | Path, line: int | None = None) -> RecordSpec:
        task_id = require(rec, "task_id", str, path=path, line=line)
        get = {"path": path, "line": line, "task_id": task_id}
        fields = []
        for i, raw in enumerate(require(rec, "fields", list, **get)):
            label = f"fields[{i}]"
            if not isinstance(raw, dict):
                raise TaskFileError(path, "expected an object", line=line, task_id=task_id, field=label)
            name = require({f"{label}.name": raw.get("name")}, f"{label}.name", str, **get)
            typ = require({f"{label}.type": raw.get("type")}, f"{label}.type", str, **get)
            if typ not in JSON_TYPES:
                raise TaskFileError(path, f"type must be one of {JSON_TYPES}", line=line, task_id=task_id,
                                    field=f"{label}.type")
            enum = require({f"{label}.enum": raw.get("enum", [])}, f"{label}.enum", list, **get)
            fields.append((name, typ, tuple(enum)))
        return cls(entity=require(rec, "entity", str, **get), kind=require(rec, "family", str, **get),
                   fields=tuple(fields))

    def field_schema(self, name: str) -> dict[str, Any]:
        """The JSON schema of one field's value (its type and enum)."""
        _, typ, enum = next(f for f in self.fields if f[0] == name)
        return {"type": typ, **({"enum": list(enum)} if enum else {})}


def record_prompt(kind: str, entity: str, fields: Sequence[str], year: int | None) -> str:
    """The prompt of a record task: the entity, the period the record must describe (``None``: none named) and the
    fields it asks for. :func:`parse_record_prompt` reads it back.

    :param kind: the entity's kind (company, person, product)
    :param entity: the entity's name
    :param fields: the field names, in the record's order
    :param year: the year the record is to be current for, or ``None``
    """
    period = f" as of {year}" if year is not None else ""
    return (f"Compile the structured {kind} record for {entity}{period} from the source documents. "
            f"Fields: {', '.join(fields)}. Cite for every field a source that states its value.")


_PROMPT = re.compile(r"^Compile the structured (?P<kind>\w+) record for (?P<entity>.+?)(?: as of (?P<year>\d{4}))? "
                     r"from the source documents\. Fields: (?P<fields>[a-z0-9_]+(?:, [a-z0-9_]+)*)\. ")


@dataclass(frozen=True)
class RecordRequest:
    """What a record task's prompt asks: the entity, the period named (``None``: none) and the fields."""

    kind: str
    entity: str
    year: int | None
    fields: tuple[str, ...]


def parse_record_prompt(prompt: str) -> RecordRequest | None:
    """The request a prompt written by :func:`record_prompt` makes, or ``None`` for another prompt.

    :param prompt: the task's prompt
    """
    match = _PROMPT.match(prompt)
    if match is None:
        return None
    year = match.group("year")
    return RecordRequest(match.group("kind"), match.group("entity"), int(year) if year else None,
                         tuple(match.group("fields").split(", ")))


def read_gold(rec: dict[str, Any], spec: RecordSpec, *, path: str | Path, line: int | None = None) -> dict[str, Any]:
    """The gold record of a task record (field -> value), with a value for every field the spec asks for.

    :param rec: the task record
    :param spec: what the task asks for
    :param path: the task file (for errors)
    :param line: the record's line (for errors)
    """
    task_id = require(rec, "task_id", str, path=path, line=line)
    gold = require(rec, "gold", dict, path=path, line=line, task_id=task_id)
    missing = [name for name, _, _ in spec.fields if name not in gold]
    if missing:
        raise TaskFileError(path, f"no gold value for {missing}", line=line, task_id=task_id, field="gold")
    return gold


def same_value(value: Any, gold: Any) -> bool:
    """Typed equality: strings up to case/punctuation, integers exactly, numbers to 1e-6 relative."""
    if isinstance(gold, str):
        return isinstance(value, str) and normalize_answer(value) == normalize_answer(gold)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if isinstance(gold, int) and not isinstance(value, int):
        return False
    return abs(value - gold) <= 1e-6 * max(1.0, abs(gold))


def parse_record(content: str) -> dict[str, Any] | None:
    """The draft as a JSON object, or ``None`` when it is not one (or is past the bounds of
    :func:`~harness_gym.core.intake.loads_json`)."""
    try:
        rec = loads_json(content)
    except (json.JSONDecodeError, InputLimitError):
        return None
    return rec if isinstance(rec, dict) else None


STATES_MEMO_SIZE = 65536
"""(source, value) verdicts a :class:`SourceIndex` keeps (all are forgotten when it is full)."""


class SourceIndex:
    """The domain's sources by id, the field history of every entity, and which source states which value.

    :param sources: every source document of the domain
    """

    CACHE_ATTRIBUTES = ("_states",)
    """kept results, not data: :func:`harness_gym.budget.fingerprint.fingerprint` leaves them out"""

    def __init__(self, sources: Sequence[Source]) -> None:
        self.sources = {s.doc_id: s for s in sources}
        self._tokens = {s.doc_id: s.tokens for s in sources}
        self._states: dict[tuple[str, str], bool] = {}
        self._history: dict[tuple[str, str], list[Source]] = {}
        for src in sorted(sources, key=lambda s: (s.date, s.doc_id)):
            for field in src.statements:
                self._history.setdefault((src.entity, field), []).append(src)
        self.entity_fields: dict[str, list[str]] = {}
        for entity, field in self._history:
            self.entity_fields.setdefault(entity, []).append(field)

    def history(self, entity: str, field: str) -> list[Source]:
        """Sources stating ``field`` of ``entity``, oldest first."""
        return self._history.get((entity, field), [])

    def states(self, doc_id: str, value: Any) -> bool:
        """True when the source's text contains the value (as a contiguous run of normalised tokens); kept per
        (source, value text), as the sources never change."""
        key = (doc_id, str(value))
        known = self._states.get(key)
        if known is None:
            if len(self._states) >= STATES_MEMO_SIZE:
                self._states.clear()
            want = normalize_answer(key[1]).split()
            toks = self._tokens.get(doc_id, ())
            n = len(want)
            known = self._states[key] = n > 0 and any(toks[i:i + n] == tuple(want) for i in range(len(toks) - n + 1))
        return known
