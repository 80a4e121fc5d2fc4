"""validate_call keeps verdicts per (schema, tool, arguments): a kept verdict equals a fresh validation."""

from __future__ import annotations

import pytest

from harness_gym.core import tool_calls
from harness_gym.core.tool_calls import ToolSpec, validate_call
from harness_gym.core.types import ToolCall

SPEC = ToolSpec("lookup", "look up", {"type": "object", "properties": {"id": {"type": "integer"}},
                                      "required": ["id"], "additionalProperties": False})
TOOLS = {"lookup": SPEC}
CALLS = [{"id": 3}, {"id": 3.0}, {"id": True}, {"id": "3"}, {}, {"id": 3, "b": 1, "a": 2}, {"a": 2, "id": 3, "b": 1},
         {"id": [1]}, {"id": None}, {"id": 3, "x": {"y": [1, 2.5, "z"]}}]


def fresh(args):
    tool_calls._verdicts.clear()
    return validate_call(TOOLS, ToolCall("lookup", args))


@pytest.mark.parametrize("args", CALLS)
def test_a_kept_verdict_equals_a_fresh_one(args):
    expected = fresh(args)
    for other in CALLS:  # fill the cache with the others first
        validate_call(TOOLS, ToolCall("lookup", other))
    assert validate_call(TOOLS, ToolCall("lookup", args)) == expected
    assert validate_call(TOOLS, ToolCall("lookup", dict(args))) == expected


def test_types_and_orders_are_told_apart():
    assert fresh({"id": 3}) == ""
    assert "is not of type 'integer'" in validate_call(TOOLS, ToolCall("lookup", {"id": True}))
    assert "is not of type 'integer'" in validate_call(TOOLS, ToolCall("lookup", {"id": "3"}))
    assert fresh({"id": 3, "b": 1, "a": 2}) != "" and validate_call(TOOLS, ToolCall("lookup", {"id": 3})) == ""


def test_arguments_that_are_not_plain_json_are_validated_every_time():
    tool_calls._verdicts.clear()
    assert "is not of type 'integer'" in validate_call(TOOLS, ToolCall("lookup", {"id": (1,)}))
    assert len(tool_calls._verdicts) == 0
    other = ToolSpec("lookup", "look up", {"type": "object", "properties": {"id": {"type": "string"}}})
    assert validate_call({"lookup": other}, ToolCall("lookup", {"id": 3})) != ""
    assert validate_call(TOOLS, ToolCall("lookup", {"id": 3})) == ""  # another schema, another verdict


# ----- the fast path for calls that pass: surely_valid never says "valid" where jsonschema finds an error ---------
def _generated_cases(seed: int = 0, n: int = 4000):
    """(schema, instance) pairs over the keywords surely_valid reads and a few it does not, with values of every
    JSON type (and some that are not JSON: tuples, a float that is an integer, bools where numbers are asked)."""
    import random

    rng = random.Random(seed)
    leaves = [{"type": "string"}, {"type": "string", "minLength": 1}, {"type": "string", "maxLength": 3},
              {"type": "string", "pattern": "^kn-s[0-9]{4}$"}, {"type": "string", "pattern": "[a-z]"},
              {"type": "integer"}, {"type": "integer", "minimum": 1, "maximum": 10}, {"type": "number"},
              {"type": "number", "minimum": 0.5}, {"type": "boolean"}, {"type": "null"}, {"minLength": 2},
              {"minimum": 3}, {"type": ["string", "null"]}, {"type": "array", "items": {"type": "string"}},
              {"type": "array", "minItems": 1, "items": {"type": "integer", "maximum": 5}}, {"type": "array"},
              {"enum": [1, 2]}, {"type": "string", "format": "date"}, {"maximum": True}, {}, {"type": "object"},
              {"type": "string", "enum": ["a", "kn-s0042", 1]}, {"enum": ["ab", None, True]},
              {"type": "number", "enum": [1, 2.5]}, {"enum": [["a"], {"a": 1}]}]
    values = ["", "a", "abcd", "kn-s0042", "kn-s42", "ABC", 0, 1, 3, 10, 11, -2, 0.5, 3.0, 2.5, float("nan"), True,
              False, None, [], ["a"], [1, 7], [1, 2], (1, 2), {"a": 1}, {1: "x"}, ["a", 3]]
    names = ["query", "k", "doc_id", "entity", "field", "x"]
    for _ in range(n):
        props = {name: rng.choice(leaves) for name in rng.sample(names, rng.randint(0, 4))}
        schema: dict = {"type": "object", "properties": props}
        if props and rng.random() < 0.7:
            schema["required"] = rng.sample(sorted(props), rng.randint(1, len(props)))
        if rng.random() < 0.6:
            schema["additionalProperties"] = rng.random() < 0.2
        if rng.random() < 0.05:
            schema["additionalProperties"] = {"type": "string"}
        if rng.random() < 0.1:
            schema["description"] = "a tool"
        args = {name: rng.choice(values) for name in rng.sample(names, rng.randint(0, 4))}
        yield schema, args


def test_surely_valid_agrees_with_jsonschema_on_generated_cases():
    import jsonschema

    from harness_gym.core.tool_calls import surely_valid

    said_valid = 0
    for schema, args in _generated_cases():
        errors = list(jsonschema.validators.validator_for(schema)(schema).iter_errors(args))
        if surely_valid(schema, args):
            said_valid += 1
            assert not errors, (schema, args, [e.message for e in errors])
    assert said_valid > 500  # the fast path answers a good share of the cases


def test_validate_call_gives_jsonschemas_verdict_and_message_with_or_without_the_fast_path(monkeypatch):
    import jsonschema

    for schema, args in _generated_cases(seed=1, n=1500):
        spec = ToolSpec("t", "a tool", schema)
        tool_calls._verdicts.clear()
        got = validate_call({"t": spec}, ToolCall("t", args))
        error = jsonschema.exceptions.best_match(jsonschema.validators.validator_for(schema)(schema).iter_errors(args))
        if error is None:
            assert got == ""
        else:
            where = "/".join(str(p) for p in error.absolute_path) or "arguments"
            assert got == f"invalid arguments for t: {where}: {error.message}"
