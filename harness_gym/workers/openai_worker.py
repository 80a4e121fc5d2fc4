"""OpenAIWorker: a real LLM behind any OpenAI-compatible chat endpoint (vLLM, llama.cpp server, Ollama,
hosted APIs) as the harness's frozen worker.

The model writes the content for real. Each worker call (draft, revise, tool proposal, self-check,
confidence) sends the domain's prompt for that action (``envs_data/prompts/<domain>.json``) filled with
the context the harness gathered (:func:`~harness_gym.workers.prompting.render_context`); the reply is
parsed into the domain's draft format, a tool call, a verdict or a number, and the env then checks and
grades it like any draft.

Faults of a server that has answered are observations, never exceptions: timeouts, connection errors,
HTTP 429 (its ``Retry-After`` is honoured), 5xx, malformed response bodies and, at temperature > 0,
unparseable replies are retried with exponential back-off up to ``max_retries`` times (the client library's
own retries are off, so every attempt is counted); a call that still fails gives an empty draft, a malformed
tool call (``ToolCall(name="", args={})``, which the domain reports as a tool error), a failed self-check or a
neutral confidence of 0.5, and its failed requests are counted in ``info["cost"]["llm_errors"]``, with their
call type and cause (connection, timeout, http status, malformed body, unparseable reply) and the fallback in
``info["llm_faults"]`` (:data:`harness_gym.core.cost.LLM_FAULT_KEYS`). A server
that never answered is a configuration fault, not a model fault: when the worker's first call gets no
readable reply from any of its requests (refused connection, unknown host, wrong ``base_url``, HTTP errors or
garbage bodies throughout), it raises :class:`LLMUnreachableError` naming the URL and the last error, so a
misconfigured run stops at once instead of scoring empty drafts. A reply the model wrote but the parser
cannot read counts as an answer. At temperature 0 an unparseable reply is not retried: a greedy decode of the
same prompt repeats itself. What every step spent (requests, errors, tokens from the server's ``usage``,
latency) is returned by :meth:`OpenAIWorker.pop_usage` and reported by the env in ``info["cost"]``.

With a cache (:mod:`harness_gym.workers.llm_cache`) calls are recorded and replayed: a replayed episode
is deterministic and needs no server. Without one, episodes of a live model are not reproducible.
"""

from __future__ import annotations

import email.utils
import json
import math
import os
import time
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from harness_gym.core.tool_calls import ToolSpec
from harness_gym.core.types import CheckResult, Context, Draft, ToolCall
from harness_gym.workers.base import Usage
from harness_gym.workers.llm_cache import CACHE_MODES, CallOutcome, LLMCache, request_key
from harness_gym.workers.prompting import (
    PromptSet,
    parse_confidence,
    parse_draft,
    parse_tool_call,
    parse_verdict,
    render_context,
    render_tools,
)

T = TypeVar("T")

OPTION_NAMES: tuple[str, ...] = ("base_url", "model", "api_key", "temperature", "max_tokens", "timeout_s",
                                 "max_retries", "cache", "cache_mode", "backoff_s", "max_backoff_s",
                                 "prompts_dir")
"""Keyword arguments of :class:`OpenAIWorker` that ``gym.make(..., worker="openai", ...)`` passes through."""


class LLMUnreachableError(RuntimeError):
    """The worker's first call got no readable reply from its server after every retry: the URL or the
    server is wrong (connection refused, unknown host, HTTP errors, bodies that are not chat completions).
    Raised only while the worker has never had a reply; later faults are counted, not raised."""


NEUTRAL_CONFIDENCE = 0.5
"""The confidence reported when the model's could not be obtained."""

_MAX_TOKENS_SMALL = {"confidence": 8, "self_check": 64}


class OpenAIWorker:
    """A worker backed by an OpenAI-compatible chat completions endpoint.

    :param domain: the domain name (selects ``envs_data/prompts/<domain>.json``)
    :param tools: the domain's tools, shown to the model when it proposes a call or writes a plan
    :param base_url: the endpoint, e.g. ``http://127.0.0.1:8080/v1`` (default: ``OPENAI_BASE_URL``; not
        needed in ``replay`` mode)
    :param model: the model name sent to the server (and part of every cache key)
    :param api_key: the API key (default: ``OPENAI_API_KEY``; local servers accept any)
    :param temperature: sampling temperature (0: greedy)
    :param max_tokens: the most tokens a draft, revision or tool proposal may generate
    :param timeout_s: seconds before one request times out
    :param max_retries: how often a failed request is retried (so at most ``max_retries + 1`` requests a call)
    :param cache: path of a SQLite record/replay cache, or ``None``
    :param cache_mode: ``"off"``, ``"record"``, ``"replay"`` or ``"auto"`` (default ``"auto"`` with a cache)
    :param backoff_s: the first retry waits this long, doubling each retry (a ``Retry-After`` wins)
    :param max_backoff_s: the longest wait between retries, ``Retry-After`` included
    :param prompts_dir: a folder of prompt files to use instead of ``envs_data/prompts``
    """

    def __init__(self, domain: str, tools: Mapping[str, ToolSpec] | None = None, *, base_url: str | None = None,
                 model: str | None = None, api_key: str | None = None, temperature: float = 0.0,
                 max_tokens: int = 512, timeout_s: float = 60.0, max_retries: int = 3,
                 cache: str | Path | None = None, cache_mode: str | None = None, backoff_s: float = 0.5,
                 max_backoff_s: float = 30.0, prompts_dir: str | Path | None = None) -> None:
        if not model:
            raise ValueError("OpenAIWorker needs model=... (the model name the server serves)")
        if not 0.0 <= float(temperature) <= 2.0:
            raise ValueError(f"temperature must be in [0, 2], got {temperature}")
        if int(max_tokens) < 1 or float(timeout_s) <= 0 or int(max_retries) < 0:
            raise ValueError(f"need max_tokens >= 1, timeout_s > 0, max_retries >= 0; got {max_tokens}, "
                             f"{timeout_s}, {max_retries}")
        mode = cache_mode if cache_mode is not None else ("auto" if cache is not None else "off")
        if mode not in CACHE_MODES:
            raise ValueError(f"cache_mode must be one of {CACHE_MODES}, got {mode!r}")
        if mode != "off" and cache is None:
            raise ValueError(f"cache_mode={mode!r} needs cache=PATH (a SQLite file)")
        self.domain = domain
        self.tools: dict[str, ToolSpec] = dict(tools or {})
        self.prompts = PromptSet.for_domain(domain, prompts_dir)
        self.model = str(model)
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL")
        self.api_key = api_key or os.environ.get("OPENAI_API_KEY") or "not-needed"
        self.temperature = float(temperature)
        self.max_tokens = int(max_tokens)
        self.timeout_s = float(timeout_s)
        self.max_retries = int(max_retries)
        self.backoff_s = float(backoff_s)
        self.max_backoff_s = float(max_backoff_s)
        self.cache_mode = mode
        self.cache: LLMCache | None = None if mode == "off" else LLMCache(cache, mode)  # type: ignore[arg-type]
        if mode != "replay" and not self.base_url:
            raise ValueError("OpenAIWorker needs base_url=... (or OPENAI_BASE_URL) unless cache_mode='replay'")
        self._client: Any = None
        self._client_pid = -1
        self._samples: dict[str, int] = {}
        self._episode_seed = 0
        self._usage = Usage()
        self._confidence: dict[tuple[int, str], float] = {}
        self._answered = False  # a request of this worker (or a cache entry) has had a readable reply

    # ----- episode and accounting --------------------------------------------------------------------
    def reset(self, rng: np.random.Generator) -> None:
        """Start an episode: sample indices restart, and at temperature > 0 a seed for the server is drawn
        from ``rng`` (so episodes with different env seeds get different samples and each replays).

        :param rng: the env's random generator
        """
        self._samples.clear()
        self._confidence.clear()
        self._episode_seed = int(rng.integers(2**31 - 1)) if self.temperature > 0 else 0

    def pop_usage(self) -> Usage:
        """What the model calls cost since the last pop."""
        usage, self._usage = self._usage, Usage()
        return usage

    # ----- the model call ------------------------------------------------------------------------------
    @property
    def client(self) -> Any:
        """The ``openai.OpenAI`` client (its own retries off), made on first use in each process."""
        if self._client is None or self._client_pid != os.getpid():
            try:
                import openai
            except ImportError:
                raise ImportError("OpenAIWorker needs the openai package: pip install 'harness-gym[llm]'") from None
            self._client = openai.OpenAI(base_url=self.base_url, api_key=self.api_key, max_retries=0,
                                         timeout=self.timeout_s)
            self._client_pid = os.getpid()
        return self._client

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_client"] = None
        return state

    def _request(self, action: str, messages: list[dict[str, str]]) -> dict[str, Any]:
        params: dict[str, Any] = {"temperature": self.temperature,
                                  "max_tokens": _MAX_TOKENS_SMALL.get(action, self.max_tokens)}
        if self.temperature > 0:
            params["seed"] = self._episode_seed
        probe = {"model": self.model, "messages": messages, "params": params}
        base = request_key(probe)
        sample = self._samples.get(base, 0)
        self._samples[base] = sample + 1
        return {**probe, "sample": sample}

    def _call(self, action: str, messages: list[dict[str, str]], parse: Callable[[str], T | None]) -> T | None:
        """One logical call: served from the cache or sent (with retries); its cost added to the usage.
        Returns the parsed reply or ``None`` when the call failed or its reply did not parse."""
        request = self._request(action, messages)
        outcome: CallOutcome | None = None
        key = ""
        if self.cache is not None:
            key, outcome = self.cache.lookup(request)
            self._answered |= outcome is not None  # a recorded outcome: the server answered when it was recorded
        if outcome is None:
            outcome = self._send(request, parse)
            if self.cache is not None:
                outcome = self.cache.put(key, request, outcome, replace=self.cache_mode == "record")
        parsed = parse(outcome.text) if outcome.ok else None
        faults = {f"{action}.{cause}": count for cause, count in outcome.error_causes().items()}
        if parsed is None:
            faults[f"{action}.fallback"] = 1
        self._usage.add(Usage(llm_calls=outcome.requests, llm_errors=outcome.errors,
                              prompt_tokens=outcome.prompt_tokens, completion_tokens=outcome.completion_tokens,
                              latency_s=outcome.latency_s, faults=faults))
        return parsed

    def _send(self, request: dict[str, Any], parse: Callable[[str], Any]) -> CallOutcome:
        """Send the request, retrying faults with exponential back-off; never raises for a model fault.

        :raises LLMUnreachableError: when no request got a readable reply and none of this worker's requests
            ever has (module docstring)
        """
        import openai

        params = dict(request["params"])
        start = time.perf_counter()
        requests = prompt_tokens = completion_tokens = 0
        causes: Counter[str] = Counter()  # failed requests by cause
        last_error = ""
        last_retry_after: float | None = None
        text = ""
        for attempt in range(self.max_retries + 1):
            if attempt:
                time.sleep(self._wait(attempt, last_retry_after))
            last_retry_after = None
            requests += 1
            if "seed" in params:
                params["seed"] = request["params"]["seed"] + 7919 * (attempt + 1000 * request["sample"])
            try:
                response = self.client.chat.completions.create(model=request["model"], messages=request["messages"],
                                                               **params)
                text, p_tok, c_tok = _reply_text(response)
                prompt_tokens += p_tok
                completion_tokens += c_tok
                self._answered = True
            except openai.RateLimitError as exc:
                causes["http_status"] += 1
                last_error = "http 429"
                last_retry_after = _retry_after(exc)
                continue
            except openai.APITimeoutError:
                causes["timeout"] += 1
                last_error = f"timeout after {self.timeout_s:g} s"
                continue
            except openai.APIConnectionError as exc:
                causes["connection"] += 1
                cause = exc.__cause__  # the transport's own error names the cause (refused, unknown host)
                last_error = f"connection error: {cause or exc}"
                continue
            except openai.APIStatusError as exc:
                causes["http_status"] += 1
                last_error = f"http {exc.status_code}"
                last_retry_after = _retry_after(exc)
                if exc.status_code < 500 and exc.status_code not in (408, 409):
                    break  # a request the server will always refuse (bad request, auth, not found)
                continue
            except (openai.APIResponseValidationError, ValueError, TypeError, KeyError, IndexError,
                    AttributeError) as exc:
                causes["malformed_body"] += 1
                last_error = f"malformed body: {type(exc).__name__}: {exc}"[:300]
                continue
            if parse(text) is not None:
                return CallOutcome(text=text, ok=True, requests=requests, errors=causes.total(),
                                   prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                                   latency_s=time.perf_counter() - start, causes=dict(causes))
            causes["unparseable"] += 1
            last_error = "unparseable reply"
            if self.temperature == 0:
                break  # a greedy decode of the same prompt gives the same reply
        if not self._answered:
            raise LLMUnreachableError(
                f"the LLM server at {self.base_url} gave no usable reply to the worker's first call "
                f"({requests} request{'s' if requests != 1 else ''}, model {self.model!r}): {last_error}; check "
                "base_url (--base-url) and that the server is running")
        return CallOutcome(text=text if last_error == "unparseable reply" else "", ok=last_error == "unparseable reply",
                           error=last_error, requests=requests, errors=causes.total(), prompt_tokens=prompt_tokens,
                           completion_tokens=completion_tokens, latency_s=time.perf_counter() - start,
                           causes=dict(causes))

    def _wait(self, attempt: int, retry_after: float | None) -> float:
        backoff = self.backoff_s * 2 ** (attempt - 1)
        if retry_after is not None:
            backoff = retry_after
        return min(self.max_backoff_s, max(0.0, backoff))

    # ----- Worker protocol ---------------------------------------------------------------------------
    def _slots(self, ctx: Context, **extra: str) -> dict[str, str]:
        return {"context": render_context(ctx), "tools": render_tools(self.tools), **extra}

    def _new_draft(self, ctx: Context, content: str | None) -> Draft:
        version = ctx.draft.version + 1 if ctx.draft is not None else 1
        return Draft(content=content or "", candidate=-1, version=version)

    def draft(self, ctx: Context) -> Draft:
        """A new draft written by the model from the gathered context (empty when the call failed).

        :param ctx: the worker's context
        """
        fmt = self.prompts.draft_format
        content = self._call("draft", self.prompts.messages("draft", **self._slots(ctx)),
                             lambda reply: parse_draft(reply, fmt))
        return self._new_draft(ctx, content)

    def revise(self, ctx: Context, draft: Draft, feedback: CheckResult) -> Draft:
        """The model's revision of ``draft`` answering ``feedback`` (empty when the call failed).

        :param ctx: the worker's context
        :param draft: the draft to revise
        :param feedback: the failed check (or tool error) the revision answers
        """
        fmt = self.prompts.draft_format
        slots = self._slots(ctx, draft=draft.content, feedback=feedback.feedback or "(failed, no details)")
        content = self._call("revise", self.prompts.messages("revise", **slots), lambda reply: parse_draft(reply, fmt))
        return self._new_draft(ctx, content)

    def propose_tool_call(self, ctx: Context) -> ToolCall:
        """The tool call the model proposes (``ToolCall(name="", args={})`` when the call failed).

        :param ctx: the worker's context
        """
        call = self._call("tool", self.prompts.messages("tool", **self._slots(ctx)),
                          lambda reply: parse_tool_call(reply, self.tools))
        return call if call is not None else ToolCall(name="", args={})

    def self_check(self, ctx: Context, draft: Draft) -> CheckResult:
        """The model's verdict on its draft, for domains without a verifier (a failed call is a FAIL).

        :param ctx: the worker's context
        :param draft: the draft to check
        """
        verdict = self._call("self_check", self.prompts.messages("self_check", **self._slots(ctx, draft=draft.content)),
                             parse_verdict)
        specificity = self.prompts.self_check_specificity
        if verdict is None:
            return CheckResult(passed=False, feedback="self-check failed: no verdict from the model", specificity=0.0)
        passed, reason = verdict
        return CheckResult(passed=passed, feedback=reason, specificity=specificity)

    def confidence(self, ctx: Context, draft: Draft) -> float:
        """The model's stated probability that ``draft`` is correct (0.5 when it gave none).

        :param ctx: the worker's context
        :param draft: the draft to rate
        """
        cache_key = (draft.version, draft.content)
        if cache_key not in self._confidence:
            value = self._call("confidence", self.prompts.messages("confidence", **self._slots(ctx, draft=draft.content)),
                               parse_confidence)
            self._confidence[cache_key] = NEUTRAL_CONFIDENCE if value is None else float(value)
        return self._confidence[cache_key]


def _reply_text(response: Any) -> tuple[str, int, int]:
    """The reply text and token counts of a chat completion; raises ValueError for a malformed one."""
    choices = getattr(response, "choices", None)
    if not choices:
        raise ValueError("the response has no choices")
    message = choices[0].message
    text = getattr(message, "content", None)
    if text is None:
        calls = getattr(message, "tool_calls", None) or []
        if calls:  # a server that answered with native tool calls: keep them as JSON text
            fn = calls[0].function
            text = '{"name": %s, "arguments": %s}' % (_json_str(fn.name), fn.arguments or "{}")
        else:
            raise ValueError("the response's message has no content")
    if not isinstance(text, str):
        raise TypeError(f"the response's content is {type(text).__name__}, not text")
    usage = getattr(response, "usage", None)
    p_tok = int(getattr(usage, "prompt_tokens", 0) or 0) if usage is not None else 0
    c_tok = int(getattr(usage, "completion_tokens", 0) or 0) if usage is not None else 0
    return text, p_tok, c_tok


def _json_str(value: Any) -> str:
    return json.dumps(str(value))


def _retry_after(exc: Any) -> float | None:
    """Seconds the server asked to wait (``retry-after-ms`` or ``Retry-After``: seconds or an HTTP date)."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    raw_ms = headers.get("retry-after-ms")
    if raw_ms is not None:
        try:
            return float(raw_ms) / 1000.0
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        value = float(raw)
        return value if math.isfinite(value) and value >= 0 else None
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
