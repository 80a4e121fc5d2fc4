"""SUBMIT for knowledge records: field-level accuracy against the gold record. A field counts when its value
equals the gold value (the newest authoritative statement) and it cites an authoritative source about the
entity that states that value."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness_gym.domains.knowledge.datamodel import RecordSpec, SourceIndex, parse_record, same_value


def supports(index: SourceIndex, spec: RecordSpec, gold: Mapping[str, Any], field: str, doc_id: str) -> bool:
    """True when ``doc_id`` is an authoritative source about the entity stating the gold value of ``field``.

    :param index: the domain's sources
    :param spec: what the task asks for
    :param gold: the gold record
    :param field: the field
    :param doc_id: the cited source
    """
    src = index.sources.get(doc_id)
    return (src is not None and src.authoritative and src.entity == spec.entity
            and field in src.statements and same_value(src.statements[field], gold[field]))


def grade_record(index: SourceIndex, spec: RecordSpec, gold: Mapping[str, Any], content: str) -> float:
    """Field-level accuracy in [0, 1] against the gold record (value and a supporting citation).

    :param index: the domain's sources
    :param spec: what the task asks for
    :param gold: the gold record (field -> value)
    :param content: the draft record (JSON text)
    """
    rec = parse_record(content)
    if rec is None or rec.get("entity") != spec.entity:
        return 0.0
    values = rec.get("values") if isinstance(rec.get("values"), dict) else {}
    cites = rec.get("citations") if isinstance(rec.get("citations"), dict) else {}
    good = 0
    for field, _, _ in spec.fields:
        cite = cites.get(field)
        if (field in values and same_value(values[field], gold[field]) and isinstance(cite, str)
                and supports(index, spec, gold, field, cite)):
            good += 1
    return good / len(spec.fields)
