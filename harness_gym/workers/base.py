"""The Worker protocol (DESIGN §5): the frozen LLM that does the work while the controller decides what."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from harness_gym.core.types import CheckResult, Context, Draft, ToolCall


@runtime_checkable
class Worker(Protocol):
    """What the env asks of a worker. ``reset`` hands it the env's random generator at every episode."""

    def reset(self, rng: np.random.Generator) -> None: ...

    def draft(self, ctx: Context) -> Draft: ...

    def revise(self, ctx: Context, draft: Draft, feedback: CheckResult) -> Draft: ...

    def propose_tool_call(self, ctx: Context) -> ToolCall: ...

    def self_check(self, ctx: Context, draft: Draft) -> CheckResult: ...

    def confidence(self, ctx: Context, draft: Draft) -> float: ...
