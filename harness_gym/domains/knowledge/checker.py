"""CHECK for knowledge records: one validation of the record's envelope and one per field (a value of the field's
type and enum, cited to a source that exists, is about the entity and states the value). A stale value cited to
the old source that stated it passes.

The check counts what it runs: ``n_total = 1 + len(fields)`` validations (what the prompt's field list lets a
harness count beforehand), ``n_passed`` of them passed. Each citation it follows is one read of the source from
the document store (an internal service), reported in ``CheckResult.billed`` as ``api_call:internal``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jsonschema

from harness_gym.core.tool_calls import compile_surely_valid
from harness_gym.core.types import CheckResult
from harness_gym.domains.knowledge.datamodel import RecordSpec, SourceIndex, parse_record

ENVELOPE_KEYS = ("entity", "values", "citations")


class RecordChecker:
    """The checker over one domain's sources; keeps one validator per field schema.

    :param index: the domain's sources
    """

    def __init__(self, index: SourceIndex) -> None:
        self.index = index
        self._validators: dict[str, tuple[jsonschema.protocols.Validator, Callable[[Any], bool] | None]] = {}

    def _field_problem(self, spec: RecordSpec, name: str, value: Any) -> str:
        schema = spec.field_schema(name)
        key = repr(sorted(schema.items()))
        held = self._validators.get(key)
        if held is None:
            held = self._validators[key] = (jsonschema.validators.validator_for(schema)(schema),
                                            compile_surely_valid(schema))
        validator, surely_valid = held
        if surely_valid is not None and surely_valid(value):  # a value jsonschema passes (the fast path)
            return ""
        error = jsonschema.exceptions.best_match(validator.iter_errors(value))
        return "" if error is None else error.message

    @staticmethod
    def envelope_problems(spec: RecordSpec, rec: dict[str, Any]) -> list[str]:
        """What is wrong with the record outside its fields: the keys, the entity, the two objects, fields the task
        does not ask for."""
        problems = [f"record: unknown key {k!r}" for k in rec if k not in ENVELOPE_KEYS]
        problems += [f"record: missing {k!r}" for k in ENVELOPE_KEYS if k not in rec]
        if "entity" in rec and rec["entity"] != spec.entity:
            problems.append(f"entity: {rec['entity']!r} is not {spec.entity!r}")
        names = {name for name, _, _ in spec.fields}
        for part in ("values", "citations"):
            got = rec.get(part, {})
            if not isinstance(got, dict):
                problems.append(f"{part}: not an object")
                continue
            problems += [f"{part}.{k}: the record has no field {k!r}" for k in got if k not in names]
        return problems

    def check(self, spec: RecordSpec, content: str) -> CheckResult:
        """Validate the envelope, then every field (its value's type, its citation); the feedback names every
        offending field.

        :param spec: what the task asks for
        :param content: the draft record (JSON text)
        """
        n_total = 1 + len(spec.fields)
        rec = parse_record(content)
        if rec is None:
            return CheckResult(False, "the record is not a JSON object", specificity=0.3, n_passed=0, n_total=n_total)
        schema = self.envelope_problems(spec, rec)
        n_passed = 0 if schema else 1
        values = rec.get("values") if isinstance(rec.get("values"), dict) else {}
        cites = rec.get("citations") if isinstance(rec.get("citations"), dict) else {}
        citations: list[str] = []
        looked_up: set[str] = set()
        for name, _, _ in spec.fields:
            before = len(schema) + len(citations)
            if name not in values:
                schema.append(f"values.{name}: missing")
            else:
                wrong = self._field_problem(spec, name, values[name])
                if wrong:
                    schema.append(f"values.{name}: {wrong}")
            doc_id = cites.get(name)
            if not isinstance(doc_id, str):
                schema.append(f"citations.{name}: missing" if doc_id is None else f"citations.{name}: not a doc id")
            elif name in values:
                looked_up.add(doc_id)
                src = self.index.sources.get(doc_id)
                if src is None:
                    citations.append(f"{name}: cites unknown source {doc_id!r}")
                elif src.entity != spec.entity:
                    citations.append(f"{name}: source {doc_id} is about {src.entity}, not {spec.entity}")
                elif not self.index.states(doc_id, values[name]):
                    citations.append(f"{name}: source {doc_id} does not state {values[name]!r}")
            n_passed += len(schema) + len(citations) == before
        billed = {"api_call:internal": float(len(looked_up))} if looked_up else None
        if schema or citations:
            parts = ([f"schema: {'; '.join(schema)}"] if schema else []) + (
                [f"citations: {'; '.join(citations)}"] if citations else [])
            return CheckResult(False, " | ".join(parts), specificity=0.8 if schema else 0.9, n_passed=n_passed,
                               n_total=n_total, billed=billed)
        return CheckResult(True, f"record valid: {len(spec.fields)} fields, every citation states its value",
                           specificity=0.9, n_passed=n_passed, n_total=n_total, billed=billed)
