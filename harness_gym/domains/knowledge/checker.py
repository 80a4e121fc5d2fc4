"""CHECK for knowledge records: the task's JSON schema, then every citation (the cited source exists, is about
the entity and states the value). A stale value cited to the old source that stated it passes."""

from __future__ import annotations

import jsonschema

from harness_gym.core.types import CheckResult
from harness_gym.domains.knowledge.datamodel import RecordSpec, SourceIndex, parse_record


class RecordChecker:
    """The checker over one domain's sources; keeps one schema validator per task entity.

    :param index: the domain's sources
    """

    def __init__(self, index: SourceIndex) -> None:
        self.index = index
        self._validators: dict[str, jsonschema.protocols.Validator] = {}

    def _validator(self, spec: RecordSpec) -> jsonschema.protocols.Validator:
        got = self._validators.get(spec.entity)
        if got is None:
            schema = spec.json_schema()
            got = self._validators[spec.entity] = jsonschema.validators.validator_for(schema)(schema)
        return got

    def check(self, spec: RecordSpec, content: str) -> CheckResult:
        """Schema validation, then citation checks; the feedback names every offending field.

        :param spec: what the task asks for
        :param content: the draft record (JSON text)
        """
        rec = parse_record(content)
        if rec is None:
            return CheckResult(False, "the record is not a JSON object", specificity=0.3)
        problems = []
        for err in sorted(self._validator(spec).iter_errors(rec), key=lambda e: list(map(str, e.absolute_path))):
            where = ".".join(str(p) for p in err.absolute_path) or "record"
            problems.append(f"{where}: {err.message}")
        if problems:
            return CheckResult(False, "schema: " + "; ".join(problems), specificity=0.8)
        for field, value in rec["values"].items():
            doc_id = rec["citations"][field]
            src = self.index.sources.get(doc_id)
            if src is None:
                problems.append(f"{field}: cites unknown source {doc_id!r}")
            elif src.entity != spec.entity:
                problems.append(f"{field}: source {doc_id} is about {src.entity}, not {spec.entity}")
            elif not self.index.states(doc_id, value):
                problems.append(f"{field}: source {doc_id} does not state {value!r}")
        if problems:
            return CheckResult(False, "citations: " + "; ".join(problems), specificity=0.9)
        return CheckResult(True, f"record valid: {len(spec.fields)} fields, every citation states its value",
                           specificity=0.9)
