"""The toy domain's one tool, ``add``: its JSON-schema spec and its implementation."""

from __future__ import annotations

from harness_gym.core.tools import ToolSpec
from harness_gym.core.types import ToolCall, ToolResult

ADD = ToolSpec("add", "add two integers", {
    "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"], "additionalProperties": False})
TOOLS: dict[str, ToolSpec] = {ADD.name: ADD}


def run(call: ToolCall) -> ToolResult:
    """Run a call already validated against :data:`TOOLS` (the env validates before the domain runs it).

    :param call: a schema-valid call of a tool in :data:`TOOLS`
    """
    return ToolResult(ok=True, output=str(call.args["a"] + call.args["b"]))
