"""validate_call keeps verdicts per (schema, tool, arguments): a kept verdict equals a fresh validation."""

from __future__ import annotations

import pytest

from harness_gym.core import tools as tools_module
from harness_gym.core.tools import ToolSpec, validate_call
from harness_gym.core.types import ToolCall

SPEC = ToolSpec("lookup", "look up", {"type": "object", "properties": {"id": {"type": "integer"}},
                                      "required": ["id"], "additionalProperties": False})
TOOLS = {"lookup": SPEC}
CALLS = [{"id": 3}, {"id": 3.0}, {"id": True}, {"id": "3"}, {}, {"id": 3, "b": 1, "a": 2}, {"a": 2, "id": 3, "b": 1},
         {"id": [1]}, {"id": None}, {"id": 3, "x": {"y": [1, 2.5, "z"]}}]


def fresh(args):
    tools_module._verdicts.clear()
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
    tools_module._verdicts.clear()
    assert "is not of type 'integer'" in validate_call(TOOLS, ToolCall("lookup", {"id": (1,)}))
    assert len(tools_module._verdicts) == 0
    other = ToolSpec("lookup", "look up", {"type": "object", "properties": {"id": {"type": "string"}}})
    assert validate_call({"lookup": other}, ToolCall("lookup", {"id": 3})) != ""
    assert validate_call(TOOLS, ToolCall("lookup", {"id": 3})) == ""  # another schema, another verdict
