"""The toy domain's one tool, ``add``: declared once in a :class:`~harness_gym.domains.tool_table.ToolTable` (its
JSON schema, its description and the function that runs it)."""

from __future__ import annotations

from harness_gym.core.types import ToolResult
from harness_gym.domains.tool_table import ToolTable, object_schema

TOOLS = ToolTable()
"""The toy tools; the env validates every call against the schema before the function sees it."""


@TOOLS.tool("add two integers", object_schema({"a": {"type": "integer"}, "b": {"type": "integer"}}))
def add(a: int, b: int) -> ToolResult:
    """The sum of ``a`` and ``b``.

    :param a: the first operand
    :param b: the second operand
    """
    return ToolResult(ok=True, output=str(a + b))
