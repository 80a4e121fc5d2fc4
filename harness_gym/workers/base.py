"""The Worker protocol (DESIGN §5): the frozen LLM that does the work while the controller decides what."""

from __future__ import annotations

from dataclasses import dataclass
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


@dataclass
class Usage:
    """What a worker spent on model calls since it was last asked (one env step, for a live worker).

    A worker that calls a model also implements ``pop_usage() -> Usage`` (what it spent since the last
    pop); the env reads it after every step into ``info["cost"]``. Workers without it spend nothing
    the env can measure.

    :param llm_calls: requests sent to the model, retries included
    :param llm_errors: requests that failed (timeout, connection error, 429, 5xx, malformed body,
        unparseable reply)
    :param prompt_tokens: prompt tokens the server reported in its ``usage``
    :param completion_tokens: completion tokens the server reported in its ``usage``
    :param latency_s: wall-clock seconds spent waiting for the model, retries and back-off included
    """

    llm_calls: int = 0
    llm_errors: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0

    def add(self, other: Usage) -> None:
        """Add ``other``'s counts to this one in place.

        :param other: the usage to add
        """
        self.llm_calls += other.llm_calls
        self.llm_errors += other.llm_errors
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.latency_s += other.latency_s

    def as_dict(self) -> dict[str, int | float]:
        """The counts as a plain dict (ints and a float), the form they take in ``info["cost"]``."""
        return {"llm_calls": int(self.llm_calls), "llm_errors": int(self.llm_errors),
                "prompt_tokens": int(self.prompt_tokens), "completion_tokens": int(self.completion_tokens),
                "latency_s": float(self.latency_s)}
