"""The Worker protocol: the frozen LLM that does the work while the controller decides what
(docs/harness_mdp.md, "Workers"; a new worker: docs/extending.md).

The env calls a worker only while an episode runs, always with the episode's :class:`Context`. A worker reads
the context and never changes it (the env owns it: the observation is computed from it), and never raises
for what a model does: a malformed, empty or off-topic output is a result the env scores (a failed tool call,
a wrong draft, a failed self-check), not an exception. Exceptions are for the worker's own faults (a missing
API key, a server that cannot be reached after its retries).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np

from harness_gym.core.types import CheckResult, Context, Draft, ToolCall


@runtime_checkable
class Worker(Protocol):
    """What the env asks of a worker; see the module docstring for what every method must not do."""

    def reset(self, rng: np.random.Generator) -> None:
        """Start an episode. Called at every ``env.reset``, before any other method of that episode.

        :param rng: the env's ``np_random``; a worker draws all of its randomness from it (sampling seeds
            included), so that an episode is a function of the reset seed. It keeps no state of the previous
            episode that changes what it does next.
        """
        ...

    def draft(self, ctx: Context) -> Draft:
        """Write a fresh draft from the task and the evidence in ``ctx`` (DRAFT).

        :param ctx: the episode's context (task prompt, revealed observations, retrieved documents, tool
            history, the current draft if any)
        :returns: the new draft, with ``version`` one more than ``ctx.draft``'s (1 for the first) and
            ``candidate`` the index of the task's candidate it reproduces, or -1 for free-form content.
            An unusable model output is still a draft (its content is what the model wrote).
        """
        ...

    def revise(self, ctx: Context, draft: Draft, feedback: CheckResult) -> Draft:
        """Rewrite ``draft`` using ``feedback`` (REVISE).

        :param ctx: the episode's context
        :param draft: the current draft (``ctx.draft``)
        :param feedback: the check result on that draft, or its last tool error, that the revision acts on
        :returns: the revised draft, ``version`` one more than ``draft``'s; it may keep the content unchanged
        """
        ...

    def propose_tool_call(self, ctx: Context) -> ToolCall:
        """Choose the next tool call (TOOL). The env validates and runs it; the worker does not.

        :param ctx: the episode's context
        :returns: a call; an unknown tool name or malformed arguments are allowed and come back to the worker
            as a tool error in ``ctx.tool_history``
        """
        ...

    def self_check(self, ctx: Context, draft: Draft) -> CheckResult:
        """Judge ``draft`` without a domain verifier (CHECK in a domain whose checker returns ``None``).

        :param ctx: the episode's context
        :param draft: the current draft
        :returns: pass or fail with the worker's feedback; ``specificity`` says how precisely the feedback
            names a fault (a bare "may be wrong" is near 0)
        """
        ...

    def confidence(self, ctx: Context, draft: Draft) -> float:
        """The worker's stated confidence in ``draft``, after every DRAFT and REVISE (feature
        ``worker_confidence`` and the ``self`` evidence signal).

        :param ctx: the episode's context
        :param draft: the draft just written
        :returns: a probability in [0, 1]; a worker that cannot tell returns a constant, never NaN
        """
        ...


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
    :param faults: why requests failed, the non-zero counts of ``info["llm_faults"]``
        (:data:`~harness_gym.core.cost.LLM_FAULT_KEYS`: ``CALL.CAUSE`` failed requests, ``CALL.fallback`` calls
        that got no usable reply); a worker that leaves it empty reports its ``llm_errors`` without causes
    """

    llm_calls: int = 0
    llm_errors: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    faults: dict[str, int] = field(default_factory=dict)

    def add(self, other: Usage) -> None:
        """Add ``other``'s counts to this one in place.

        :param other: the usage to add
        """
        self.llm_calls += other.llm_calls
        self.llm_errors += other.llm_errors
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.latency_s += other.latency_s
        for key, count in other.faults.items():
            self.faults[key] = self.faults.get(key, 0) + count

    def as_dict(self) -> dict[str, int | float]:
        """The counts as a plain dict (ints and a float), the form they take in ``info["cost"]``."""
        return {"llm_calls": int(self.llm_calls), "llm_errors": int(self.llm_errors),
                "prompt_tokens": int(self.prompt_tokens), "completion_tokens": int(self.completion_tokens),
                "latency_s": float(self.latency_s)}
