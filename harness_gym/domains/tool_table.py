"""Registering a domain's tools once: a decorator attaches a tool's description, JSON schema and write flag to
the function that implements it, and a :class:`ToolTable` collects them.

A domain's ``tools.py`` makes one table and decorates each implementation::

    TOOLS = ToolTable()

    @TOOLS.tool("The slots in which a person is free.", object_schema({"person": NAME}))
    def availability(instance, person): ...

The specs the env validates calls against (:attr:`ToolTable.specs`), the implementation of a name
(:meth:`ToolTable.implementation`) and the set of tools that change state (:attr:`ToolTable.write_tools`) all
come from that one declaration.

**The tool rule.** A domain runs a tool through :meth:`ToolTable.call`, which always returns a
:class:`~harness_gym.core.types.ToolResult`: a tool returns its output (a ``ToolResult`` of its own, to set
``ran_code`` or ``billed``; or any other value, which the table's ``render`` turns into the output text, ``str``
by default) and signals a refusal by raising :class:`ToolError`, whose message is what the worker reads. An
exception the call's arguments can provoke (:data:`ARGUMENT_ERRORS`) is an error result too, so no tool call
raises out of ``env.step``; any other exception (a sandbox that cannot isolate, a lost database: a failure of the
harness, not of the call) propagates.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from harness_gym.core.tool_calls import ToolSpec
from harness_gym.core.types import ToolResult

F = TypeVar("F", bound=Callable[..., Any])


class ToolError(Exception):
    """A tool refused its call (no such order, a unit mismatch, a bad date); the message is what the worker
    reads in the error result :meth:`ToolTable.call` makes of it."""


ARGUMENT_ERRORS: tuple[type[BaseException], ...] = (ToolError, ValueError, TypeError, LookupError, ArithmeticError,
                                                    RecursionError)
"""What a tool raises that :meth:`ToolTable.call` turns into an error result: a refusal, or what hostile arguments
can provoke in the tool's own code (a bad value, a missing key, an overflow, nesting too deep)."""


def object_schema(properties: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON schema of an object whose ``properties`` are all required and which allows no other key.

    :param properties: property name -> JSON schema of its value
    """
    return {"type": "object", "properties": dict(properties), "required": list(properties),
            "additionalProperties": False}


@dataclass(frozen=True)
class Tool:
    """One registered tool: its spec (what a worker sees and calls are validated against) and its function."""

    spec: ToolSpec
    run: Callable[..., Any]


class ToolTable(Mapping[str, Tool]):
    """A domain's tools by name, in the order they were registered.

    :param render: the output text of a value a tool returns that is not a :class:`ToolResult` (default ``str``)
    """

    def __init__(self, render: Callable[[Any], str] = str) -> None:
        self._tools: dict[str, Tool] = {}
        self.render = render

    def tool(self, description: str, parameters: Mapping[str, Any] | None = None, *, writes: bool = False,
             name: str | None = None, bills: Mapping[str, float] | None = None) -> Callable[[F], F]:
        """Decorator: register the decorated function as a tool and return it unchanged.

        :param description: what the tool does, as the worker reads it
        :param parameters: JSON schema of the call's arguments (default: an object without properties)
        :param writes: True when the tool changes state; such tools form a draft's plan, not evidence
        :param name: the tool's name (default: the function's name)
        :param bills: what one call costs, billable item -> quantity (default: nothing; see
            :attr:`~harness_gym.core.tool_calls.ToolSpec.bills`)
        """
        def register(func: F) -> F:
            tool_name = name or func.__name__
            if tool_name in self._tools:
                raise ValueError(f"tool {tool_name!r} is registered twice")
            schema = parameters if parameters is not None else {"type": "object", "properties": {}}
            self._tools[tool_name] = Tool(ToolSpec(tool_name, description, schema, writes, dict(bills or {})), func)
            return func
        return register

    def __getitem__(self, tool_name: str) -> Tool:
        return self._tools[tool_name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._tools)

    def __len__(self) -> int:
        return len(self._tools)

    @property
    def specs(self) -> dict[str, ToolSpec]:
        """Tool name -> spec, in registration order (a fresh dict the caller may keep)."""
        return {n: t.spec for n, t in self._tools.items()}

    @property
    def write_tools(self) -> frozenset[str]:
        """The names of the tools registered with ``writes=True``."""
        return frozenset(n for n, t in self._tools.items() if t.spec.writes)

    def implementation(self, tool_name: str) -> Callable[..., Any]:
        """The function registered under ``tool_name``; a :class:`KeyError` names the known tools."""
        try:
            return self._tools[tool_name].run
        except KeyError:
            raise KeyError(f"unknown tool {tool_name!r}; known: {', '.join(self._tools)}") from None

    def call(self, tool_name: str, *context: Any, **args: Any) -> ToolResult:
        """Run tool ``tool_name`` on ``context`` (what the domain hands every tool first: a table, a sandbox, a
        database) and the call's ``args``, and return its :class:`ToolResult` (the module's tool rule): the tool's
        own result, its value rendered as the output, or an error result for :data:`ARGUMENT_ERRORS` (a
        :class:`ToolError`'s message as it is, another one as ``"TypeName: message"``).

        :param tool_name: a registered tool (the env validated the call against its schema)
        :param context: the positional arguments the domain's tools take before the call's arguments
        :param args: the call's arguments
        """
        run = self.implementation(tool_name)
        try:
            out = run(*context, **args)
        except ToolError as exc:
            return ToolResult(ok=False, output="", error=str(exc))
        except ARGUMENT_ERRORS as exc:
            return ToolResult(ok=False, output="", error=f"{type(exc).__name__}: {exc}")
        return out if isinstance(out, ToolResult) else ToolResult(ok=True, output=self.render(out))
