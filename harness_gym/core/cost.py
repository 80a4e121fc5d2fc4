"""The cost ledger: what one step of the Harness MDP spends, metered in ``info["cost"]`` (docs/cost.md).

Every step (and the reset, with zeros) reports ``info["cost"]``:

- ``llm_calls``, ``llm_errors``, ``prompt_tokens``, ``completion_tokens``, ``latency_s``: the worker's model
  calls during the step (:class:`~harness_gym.workers.base.Usage`). A live worker reports the server's
  ``usage``; the simulated worker counts the tokens of the real text a model would read and write
  (:func:`estimate_tokens` of the prompt built from :func:`~harness_gym.workers.prompting.render_context`).
- ``sandbox_jobs``: sandbox jobs the harness ran for the step (tool calls and CHECK; the hidden grader's jobs at
  SUBMIT are evaluation, not spending, and are not metered). Jobs served from the execution cache count too:
  the cache is a local shortcut, the ledger prices the work the harness asked for.
- ``tool_seconds``: billed sandbox seconds, ``sandbox_jobs * Prices.billed_seconds_per_job``. A deterministic
  proxy, not the jobs' wall-clock duration: wall-clock time differs from run to run (and is near zero for a
  cached job), so metering it would make seeded episodes differ in their returns.
- ``units``: the step's cost in one scalar, in **hundredths of a US cent** (1 unit = US$0.0001) at
  :class:`Prices`: ``(prompt_tokens * input_per_million + completion_tokens * output_per_million) / 1e6
  + tool_seconds * sandbox_per_second`` dollars, times 10,000. With the default prices an episode costs about
  1-10 units (a short scripted episode about 2, a thorough one about 10).
  ``units`` is computed from deterministic quantities only (``latency_s`` never enters it).

The env's reward is ``-cost_weight * units`` on every step plus the quality Q on the last one, so an episode's
return is ``Q - cost_weight * total units`` (:class:`~harness_gym.env.HarnessEnv`, ``cost_weight=``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

UNIT_DOLLARS = 0.0001
"""US dollars per cost unit: ``info["cost"]["units"]`` is in hundredths of a cent."""

CHARS_PER_TOKEN = 4.0
"""The token estimate's ratio: OpenAI's rule of thumb, "one token generally corresponds to ~4 characters of
common English text" (help.openai.com, "What are tokens and how to count them?"). Code, JSON and the
invented names of the generated worlds split into more tokens per character, so the estimate is low for them;
it is the same for every controller, which is what a comparison needs."""

COST_KEYS: tuple[str, ...] = ("llm_calls", "llm_errors", "prompt_tokens", "completion_tokens", "latency_s",
                              "sandbox_jobs", "tool_seconds", "units")
"""The keys of ``info["cost"]``, in order."""


def estimate_tokens(text: str) -> int:
    """Estimated tokens of ``text``: ``ceil(len(text) / CHARS_PER_TOKEN)`` (see :data:`CHARS_PER_TOKEN`).

    O(1) in the length of the text, so the simulated worker can meter every call of the hot path.

    :param text: the text a model reads or writes
    """
    return math.ceil(len(text) / CHARS_PER_TOKEN)


@dataclass(frozen=True)
class Prices:
    """The price table the cost units are computed from.

    Defaults: OpenAI **gpt-4o-mini**, US$0.15 per million input tokens and US$0.60 per million output tokens
    (openai.com/api/pricing, the list price since the model's release on 18 July 2024, unchanged as of
    2025-05); sandbox seconds at AWS Lambda's x86 price, US$0.0000166667 per GB-second (aws.amazon.com/lambda/pricing,
    us-east-1, as of 2025-05), for a 1 GB job.

    :param input_per_million: US$ per million prompt tokens
    :param output_per_million: US$ per million completion tokens
    :param sandbox_per_second: US$ per billed sandbox second
    :param billed_seconds_per_job: sandbox seconds billed per job (the deterministic proxy of a job's duration,
        module docstring). Default 0.1 s: the order of a job that starts Python and imports pandas in the
        process sandbox here (a bare job takes about 5 ms); Lambda bills per millisecond.
    """

    input_per_million: float = 0.15
    output_per_million: float = 0.60
    sandbox_per_second: float = 0.0000166667
    billed_seconds_per_job: float = 0.1

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise ValueError(f"prices: {f.name} must be a finite number >= 0, got {value!r}")

    @classmethod
    def coerce(cls, prices: Prices | Mapping[str, Any] | None) -> Prices:
        """A :class:`Prices` from an instance, a dict of some of its fields (the rest keep their defaults) or
        ``None`` (the defaults); unknown keys and bad values raise a ``ValueError`` naming them.

        :param prices: what the env's ``prices=`` argument was given
        """
        if prices is None:
            return cls()
        if isinstance(prices, cls):
            return prices
        if not isinstance(prices, Mapping):
            raise ValueError(f"prices must be a Prices or a dict, got {type(prices).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(prices) - known)
        if unknown:
            raise ValueError(f"prices: unknown key(s) {unknown}; known: {sorted(known)}")
        return cls(**dict(prices))

    def units(self, prompt_tokens: int, completion_tokens: int, tool_seconds: float) -> float:
        """The cost in units (:data:`UNIT_DOLLARS`) of the given quantities.

        :param prompt_tokens: prompt tokens
        :param completion_tokens: completion tokens
        :param tool_seconds: billed sandbox seconds
        """
        dollars = (prompt_tokens * self.input_per_million + completion_tokens * self.output_per_million) / 1e6
        dollars += tool_seconds * self.sandbox_per_second
        return dollars / UNIT_DOLLARS

    def as_dict(self) -> dict[str, float]:
        """The table as a plain dict (for run metadata)."""
        return {k: float(v) for k, v in asdict(self).items()}


def zero_cost() -> dict[str, int | float]:
    """``info["cost"]`` of a step that spent nothing (the reset's)."""
    return {"llm_calls": 0, "llm_errors": 0, "prompt_tokens": 0, "completion_tokens": 0, "latency_s": 0.0,
            "sandbox_jobs": 0, "tool_seconds": 0.0, "units": 0.0}
