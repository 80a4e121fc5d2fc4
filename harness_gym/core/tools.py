"""Tool specifications and JSON-schema argument validation shared by every domain."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import jsonschema

from harness_gym.core.types import ToolCall


@dataclass(frozen=True)
class ToolSpec:
    """A tool a worker may call: its name, a description and a JSON schema of its arguments."""

    name: str
    description: str
    parameters: Mapping[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})
    writes: bool = False
    """True for tools that change state (e.g. a retail order); those form a draft's plan, not evidence."""
    bills: Mapping[str, float] = field(default_factory=dict)
    """What one call costs in a deployed harness, as billable item -> quantity (e.g. ``{"api_call:fx_rates": 1}``;
    the items are the keys of the price tables, docs/cost.md). Billed for every call that passes schema
    validation; empty for a tool that is free or whose cost is its sandbox jobs."""


_validators: dict[int, jsonschema.protocols.Validator] = {}


def validate_call(tools: Mapping[str, ToolSpec], call: ToolCall) -> str:
    """Return an error message naming what is wrong with ``call``, or ``""`` when it is valid."""
    spec = tools.get(call.name)
    if spec is None:
        return f"unknown tool {call.name!r}; available: {', '.join(sorted(tools))}"
    validator = _validators.get(id(spec.parameters))
    if validator is None:
        cls = jsonschema.validators.validator_for(spec.parameters)
        validator = cls(spec.parameters)
        _validators[id(spec.parameters)] = validator
    error = jsonschema.exceptions.best_match(validator.iter_errors(dict(call.args)))
    if error is None:
        return ""
    where = "/".join(str(p) for p in error.absolute_path) or "arguments"
    return f"invalid arguments for {call.name}: {where}: {error.message}"
