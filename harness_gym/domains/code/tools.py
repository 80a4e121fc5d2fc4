"""The code domain's tool: ``run_example`` runs the current draft on one call expression in the sandbox."""

from __future__ import annotations

from harness_gym.core.sandbox import Sandbox
from harness_gym.core.types import ToolResult
from harness_gym.domains.code.sandbox_jobs import call_once
from harness_gym.domains.tool_table import ToolTable

TOOLS = ToolTable()
"""The code domain's tools; each takes the sandbox and the draft's source before its call arguments."""


@TOOLS.tool(
    "Run the current draft on one example call and return the repr of the result, or the exception it raised.",
    {
        "type": "object",
        "properties": {"call": {"type": "string", "minLength": 1, "maxLength": 500,
                                "description": "a Python expression calling the draft, e.g. \"f([1, 2], 3)\""}},
        "required": ["call"],
        "additionalProperties": False,
    },
)
def run_example(sandbox: Sandbox, source: str, call: str) -> ToolResult:
    """Evaluate ``call`` with the draft loaded as ``solution.py``.

    Stands for running a snippet in the agent's code sandbox (a serverless function): it declares no bill,
    because its one sandbox job is metered and priced as every sandbox job is (docs/cost.md).

    :param sandbox: where the draft runs
    :param source: the draft's Python source
    :param call: the expression to evaluate
    """
    ok, text = call_once(sandbox, source, call)
    if ok:
        return ToolResult(ok=True, output=f"{call} -> {text}", ran_code=True)
    return ToolResult(ok=False, output="", error=f"{call} -> {text}", ran_code=True)
