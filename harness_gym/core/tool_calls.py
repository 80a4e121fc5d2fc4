"""Tool specifications and JSON-schema argument validation shared by every domain."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import jsonschema

from harness_gym.core.lru import ByteLRU
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
VERDICTS_MAX_BYTES = 4 * 2**20
"""Bound on the texts of the validation verdicts kept (arguments and messages)."""
_verdicts: ByteLRU[tuple[int, str, str], tuple[Mapping[str, Any], str]] = ByteLRU(
    VERDICTS_MAX_BYTES, lambda key, verdict: len(key[1]) + len(key[2]) + len(verdict[1]) + 100)
"""(id of the schema, tool name, repr of the arguments) -> (the schema, the message): the workers repeat calls,
and a verdict depends only on the schema and the arguments (their order included)"""
_JSON_SCALARS = (str, int, float, bool, type(None))


def _plain_json(value: Any) -> bool:
    """Whether ``value`` is made of dicts with str keys, lists and JSON scalars only, whose repr then tells
    apart every two values that validate differently (exact types: a tuple, an int subclass or any other object
    is not cached)."""
    kind = type(value)
    if kind in _JSON_SCALARS:
        return True
    if kind is list:
        return all(_plain_json(v) for v in value)
    if kind is dict:
        return all(type(k) is str and _plain_json(v) for k, v in value.items())
    return False


_SURE_KEYWORDS = frozenset({"type", "description", "properties", "required", "additionalProperties", "items",
                            "minItems", "minLength", "maxLength", "pattern", "minimum", "maximum", "enum"})
"""The JSON Schema keywords :func:`surely_valid` reads (the tools' schemas use these)."""
_SURE_TYPES: dict[str, tuple[type, ...]] = {"string": (str,), "integer": (int,), "number": (int, float),
                                            "object": (dict,), "array": (list,), "boolean": (bool,)}
"""A ``type`` -> the exact Python types :func:`surely_valid` accepts for it (no subclass, no bool for a number,
no float for an integer: those are left to jsonschema)."""


def _limit(schema: Mapping[str, Any], keyword: str) -> float | None:
    value = schema.get(keyword)
    if value is not None and type(value) not in (int, float):
        raise ValueError(keyword)
    return value


def compile_surely_valid(schema: Any) -> Callable[[Any], bool] | None:
    """:func:`surely_valid` of ``schema`` as a function of the value, or ``None`` (never sure) for a schema beyond
    :data:`_SURE_KEYWORDS` (an ``enum`` only of JSON scalars, sure of str values only).

    :param schema: a JSON schema
    """
    if type(schema) is not dict or not _SURE_KEYWORDS.issuperset(schema):
        return None
    expected = schema.get("type")
    if expected is not None and (type(expected) is not str or expected not in _SURE_TYPES):
        return None
    types = _SURE_TYPES[expected] if expected is not None else None
    try:
        min_length, max_length = _limit(schema, "minLength"), _limit(schema, "maxLength")
        minimum, maximum, min_items = _limit(schema, "minimum"), _limit(schema, "maximum"), _limit(schema, "minItems")
        pattern = schema.get("pattern")
        search = re.compile(pattern).search if type(pattern) is str else None
    except (ValueError, re.error):
        return None
    if pattern is not None and search is None:
        return None
    properties, required = schema.get("properties", {}), schema.get("required", [])
    extra = schema.get("additionalProperties", True)
    if type(properties) is not dict or type(required) is not list or type(extra) is not bool:
        return None
    checks = {key: compile_surely_valid(sub) for key, sub in properties.items()}
    items = schema.get("items")
    item_check = compile_surely_valid(items) if items is not None else None
    if None in checks.values() or (items is not None and item_check is None):
        return None
    required_keys = tuple(required)
    enum = schema.get("enum")
    if enum is not None and (type(enum) is not list or not all(type(e) in _JSON_SCALARS for e in enum)):
        return None
    enum_strs = frozenset(e for e in enum if type(e) is str) if enum is not None else None

    def check(value: Any) -> bool:
        kind = type(value)
        if types is not None and kind not in types:
            return False
        if enum_strs is not None and (kind is not str or value not in enum_strs):
            return False  # jsonschema's enum compares a str by ==; other values are left to it
        if kind is str:
            return ((min_length is None or len(value) >= min_length)
                    and (max_length is None or len(value) <= max_length)
                    and (search is None or search(value) is not None))
        if kind is int or kind is float:
            return (minimum is None or not value < minimum) and (maximum is None or not value > maximum)
        if kind is dict:
            for key in required_keys:
                if key not in value:
                    return False
            for key, item in value.items():
                sub = checks.get(key)
                if sub is None:
                    if not extra or type(key) is not str:
                        return False
                elif not sub(item):
                    return False
            return True
        if kind is list:
            return (min_items is None or len(value) >= min_items) and (
                item_check is None or all(item_check(v) for v in value))
        return kind is bool or value is None

    return check


_checkers: dict[int, tuple[Any, Callable[[Any], bool] | None]] = {}
"""id of a schema -> (the schema, kept so that its id stays its own; its compiled :func:`surely_valid`)"""


def surely_valid(schema: Any, value: Any) -> bool:
    """True only when ``value`` passes ``schema`` as jsonschema validates it (``tests/test_tool_verdicts.py``
    holds the two equal on generated cases); False when it fails or when the schema or the value uses anything
    beyond :data:`_SURE_KEYWORDS` with exact JSON types, which jsonschema then judges. A fast path for the calls
    that pass: those that fail go to jsonschema for their message. Each schema is compiled once.

    :param schema: a JSON schema (a dict)
    :param value: the instance
    """
    held = _checkers.get(id(schema))
    if held is None or held[0] is not schema:
        if len(_checkers) >= 4096:
            _checkers.clear()
        held = _checkers[id(schema)] = (schema, compile_surely_valid(schema))
    try:
        return held[1] is not None and held[1](value)
    except RecursionError:  # arguments nested too deep: jsonschema judges them
        return False


def validate_call(tools: Mapping[str, ToolSpec], call: ToolCall) -> str:
    """Return an error message naming what is wrong with ``call``, or ``""`` when it is valid."""
    spec = tools.get(call.name)
    if spec is None:
        return f"unknown tool {call.name!r}; available: {', '.join(sorted(tools))}"
    args = dict(call.args)
    if surely_valid(spec.parameters, args):
        return ""
    try:  # repr, not sorted JSON: a message may name the arguments in their order (extra properties)
        key = (id(spec.parameters), call.name, repr(args)) if _plain_json(args) else None
    except RecursionError:  # arguments nested too deep to key are validated as they come
        key = None
    if key is not None:
        kept = _verdicts.get(key)
        if kept is not None and kept[0] is spec.parameters:
            return kept[1]
    validator = _validators.get(id(spec.parameters))
    if validator is None:
        cls = jsonschema.validators.validator_for(spec.parameters)
        validator = cls(spec.parameters)
        _validators[id(spec.parameters)] = validator
    error = jsonschema.exceptions.best_match(validator.iter_errors(args))
    if error is None:
        message = ""
    else:
        where = "/".join(str(p) for p in error.absolute_path) or "arguments"
        message = f"invalid arguments for {call.name}: {where}: {error.message}"
    if key is not None:
        _verdicts.put(key, (spec.parameters, message))
    return message
