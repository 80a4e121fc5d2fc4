"""The cost ledger: what one step of the Harness MDP spends, metered in ``info["cost"]`` (docs/cost.md).

Every step is billed as a set of billable items (the keys of the price tables, :mod:`harness_gym.core.prices`)
with quantities, priced at the env's :class:`~harness_gym.core.prices.PriceTable`:

- model calls: ``prompt_token`` and ``completion_token``, metered by the worker (a live worker reports the
  server's ``usage``; the simulated worker counts the tokens of the real text a model would read and write,
  :func:`estimate_tokens` of the prompt built from :func:`~harness_gym.workers.prompting.render_context`);
- RETRIEVE: one query in the table's retrieval mode (``index_query`` + the query's ``embedding_token``, or one
  ``search_query``);
- OBSERVE: :meth:`~harness_gym.core.domain.Domain.observe_bill` (reading the task statement is free);
- TOOL: the tool's declared :attr:`~harness_gym.core.tool_calls.ToolSpec.bills`, or the result's own ``billed``, for
  every call that passed schema validation;
- CHECK: the checker's :attr:`~harness_gym.core.types.CheckResult.billed`, beside its sandbox jobs and model calls;
- sandbox jobs (tool calls and CHECK; the hidden grader's jobs at SUBMIT are evaluation and are not metered):
  ``sandbox_request`` per job and ``sandbox_seconds_per_job * sandbox_gb`` of ``sandbox_gb_second``. Jobs
  served from the execution cache count too: the cache is a local shortcut, the ledger prices the work the
  harness asked for.

``info["cost"]`` (the reset's has the same keys, all zero) reports ``llm_calls``, ``llm_errors``,
``prompt_tokens``, ``completion_tokens``, ``latency_s`` (never priced), ``sandbox_jobs``, ``tool_seconds``
(``sandbox_jobs * sandbox_seconds_per_job``: a deterministic proxy, never the wall clock), ``units`` (the
step's bill priced, in **hundredths of a US cent**, 1 unit = US$0.0001), and the counts ``search_queries``,
``index_queries``, ``embedding_tokens``, ``api_calls`` (requests of every ``api_call:<api>`` item, free ones
included) and ``db_queries``. Billed quantities only, never wall time, so seeded episodes keep their returns.

``info["llm_faults"]`` (also the same keys at reset and every step, :data:`LLM_FAULT_KEYS`) says why: per call
type (:data:`LLM_CALL_TYPES`) the failed requests by cause (:data:`LLM_ERROR_CAUSES`) and the calls that ended in
the worker's fallback.

The env's reward is ``-cost_weight * units`` on every step plus the quality Q on the last one, so an episode's
return is ``Q - cost_weight * total units`` (:class:`~harness_gym.env.HarnessEnv`, ``cost_weight=``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from harness_gym.core.prices import API_PREFIX, UNIT_DOLLARS, PriceTable

__all__ = ["CHARS_PER_TOKEN", "COST_KEYS", "LLM_CALL_TYPES", "LLM_ERROR_CAUSES", "LLM_FAULT_KEYS", "LLM_SERVER_CAUSES",
           "UNIT_DOLLARS",
           "add_bill", "checked_bill", "cost_info", "estimate_tokens", "llm_faults_info", "step_bill", "zero_cost"]

CHARS_PER_TOKEN = 4.0
"""The token estimate's ratio: OpenAI's rule of thumb, "one token generally corresponds to ~4 characters of
common English text" (help.openai.com, "What are tokens and how to count them?"). Code, JSON and the
invented names of the generated worlds split into more tokens per character, so the estimate is low for them;
it is the same for every controller, which is what a comparison needs."""

COUNTED_ITEMS: dict[str, str] = {"search_queries": "search_query", "index_queries": "index_query",
                                 "embedding_tokens": "embedding_token", "db_queries": "db_query"}
"""``info["cost"]`` count -> the billable item it counts (``api_calls`` counts every ``api_call:<api>``)."""
COST_KEYS: tuple[str, ...] = ("llm_calls", "llm_errors", "prompt_tokens", "completion_tokens", "latency_s",
                              "sandbox_jobs", "tool_seconds", "units", "search_queries", "index_queries",
                              "embedding_tokens", "api_calls", "db_queries")
"""The keys of ``info["cost"]``, in order."""

LLM_CALL_TYPES: tuple[str, ...] = ("draft", "revise", "tool", "self_check", "confidence")
"""The worker's call types (the methods of the Worker protocol that may call a model)."""
LLM_ERROR_CAUSES: tuple[str, ...] = ("connection", "timeout", "http_status", "malformed_body", "unparseable")
"""Why a request failed: ``connection`` (refused, unknown host, dropped), ``timeout``, ``http_status`` (429, 5xx
and any other error status), ``malformed_body`` (a 200 whose body is no chat completion) and ``unparseable``
(the model answered; the parser could not read its reply)."""
LLM_SERVER_CAUSES: tuple[str, ...] = LLM_ERROR_CAUSES[:4]
"""The causes that are faults of the server, not of what the model wrote."""
LLM_FAULT_KEYS: tuple[str, ...] = tuple(f"{call}.{what}" for call in LLM_CALL_TYPES
                                        for what in (*LLM_ERROR_CAUSES, "fallback"))
"""The keys of ``info["llm_faults"]``: ``CALL.CAUSE`` counts the call type's failed requests of that cause,
``CALL.fallback`` its calls that ended with no usable reply, so the worker used its fallback (an empty draft, a
malformed tool call, a failed self-check, a neutral confidence)."""
_NO_LLM_FAULTS: dict[str, int] = dict.fromkeys(LLM_FAULT_KEYS, 0)


def estimate_tokens(text: str) -> int:
    """Estimated tokens of ``text``: ``ceil(len(text) / CHARS_PER_TOKEN)`` (see :data:`CHARS_PER_TOKEN`).

    O(1) in the length of the text, so the simulated worker can meter every call of the hot path.

    :param text: the text a model reads or writes
    """
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def checked_bill(bill: Mapping[str, Any] | None, prices: PriceTable, where: str) -> dict[str, float]:
    """``bill`` as item -> float after checking it: every item priced, every quantity a finite number >= 0.

    :param bill: what a domain hook, tool or checker says it billed (``None``: nothing)
    :param prices: the env's price table
    :param where: who billed it (for the error message)
    :raises ValueError: naming ``where``, the item and what is wrong
    """
    if not bill:
        return {}
    prices.check_items(bill, where)
    out = {}
    for item, quantity in bill.items():
        if isinstance(quantity, bool) or not isinstance(quantity, (int, float)) or not math.isfinite(quantity) \
                or quantity < 0:
            raise ValueError(f"{where}: bills {quantity!r} of {item!r}; a quantity is a finite number >= 0")
        out[item] = float(quantity)
    return out


def add_bill(into: dict[str, float], bill: Mapping[str, float]) -> None:
    """Add ``bill``'s quantities to ``into`` in place.

    :param into: the running bill
    :param bill: the quantities to add
    """
    for item, quantity in bill.items():
        into[item] = into.get(item, 0.0) + quantity


def step_bill(prices: PriceTable, *, prompt_tokens: int, completion_tokens: int, sandbox_jobs: int,
              actions: Mapping[str, float]) -> dict[str, float]:
    """A step's whole bill: the model's tokens, the sandbox jobs and what the action billed.

    :param prices: the price table (its sandbox billing parameters)
    :param prompt_tokens: prompt tokens of the step's model calls
    :param completion_tokens: completion tokens of the step's model calls
    :param sandbox_jobs: sandbox jobs the step ran
    :param actions: what the action itself billed (retrieval query, observation, tool call, check)
    """
    bill = {"prompt_token": float(prompt_tokens), "completion_token": float(completion_tokens)}
    if sandbox_jobs:
        add_bill(bill, prices.sandbox_bill(sandbox_jobs))
    if actions:
        add_bill(bill, actions)
    return {item: q for item, q in bill.items() if q}


def cost_info(usage: Mapping[str, int | float], sandbox_jobs: int, prices: PriceTable,
              bill: Mapping[str, float]) -> dict[str, int | float]:
    """``info["cost"]`` of a step (keys :data:`COST_KEYS`).

    :param usage: the worker's ``llm_calls``, ``llm_errors``, ``prompt_tokens``, ``completion_tokens``,
        ``latency_s`` of the step
    :param sandbox_jobs: sandbox jobs the step ran
    :param prices: the price table
    :param bill: the step's whole bill (:func:`step_bill`)
    """
    api_calls = 0.0
    for item, quantity in bill.items():
        if item.startswith(API_PREFIX):
            api_calls += quantity
    get = bill.get
    # the keys of COST_KEYS in order (tests/test_cost.py), the counts of COUNTED_ITEMS
    return {"llm_calls": usage["llm_calls"], "llm_errors": usage["llm_errors"],
            "prompt_tokens": usage["prompt_tokens"], "completion_tokens": usage["completion_tokens"],
            "latency_s": usage["latency_s"], "sandbox_jobs": int(sandbox_jobs),
            "tool_seconds": float(sandbox_jobs * prices.sandbox_seconds_per_job), "units": float(prices.units(bill)),
            "search_queries": float(get("search_query", 0.0)), "index_queries": float(get("index_query", 0.0)),
            "embedding_tokens": float(get("embedding_token", 0.0)), "api_calls": api_calls,
            "db_queries": float(get("db_query", 0.0))}


def llm_faults_info(counts: Mapping[str, int] | None = None) -> dict[str, int]:
    """``info["llm_faults"]`` of a step: every key of :data:`LLM_FAULT_KEYS`, 0 unless ``counts`` has it.

    :param counts: the step's non-zero counts (a worker's :attr:`~harness_gym.workers.base.Usage.faults`)
    :raises KeyError: for a key outside :data:`LLM_FAULT_KEYS`
    """
    out = _NO_LLM_FAULTS.copy()
    if counts:
        for key, count in counts.items():
            if key not in out:
                raise KeyError(f"LLM fault {key!r} is not one of CALL.CAUSE with CALL in {LLM_CALL_TYPES} and CAUSE "
                               f"in {(*LLM_ERROR_CAUSES, 'fallback')}")
            out[key] += int(count)
    return out


def zero_cost() -> dict[str, int | float]:
    """``info["cost"]`` of a step that spent nothing (the reset's)."""
    return {"llm_calls": 0, "llm_errors": 0, "prompt_tokens": 0, "completion_tokens": 0, "latency_s": 0.0,
            "sandbox_jobs": 0, "tool_seconds": 0.0, "units": 0.0, "search_queries": 0.0, "index_queries": 0.0,
            "embedding_tokens": 0.0, "api_calls": 0.0, "db_queries": 0.0}
