"""LatencyWorker: a worker that waits a fixed time on every model call, to imitate a remote LLM.

It wraps another worker (by default the domain's :class:`~harness_gym.workers.SimulatedWorker`), so the
content, the episodes and their results are the wrapped worker's; only the wall time changes: every call
(draft, revise, tool proposal, self-check, confidence) sleeps ``latency_s`` first, the way a call to a
server blocks on the network and the model. Since it waits without using the CPU, its episodes scale with
threads far past the number of cores (``benchmarks/collect_scaling.py``, ``docs/scale_out.md``). It sets
``io_bound = True``, so :func:`harness_gym.running.parallel.default_parallel` runs it in threads.

A :class:`CallMeter` shared by the copies of one worker (each env of a concurrent run plays with its own
copy) counts the calls in flight and the most seen at once::

    meter = CallMeter()
    worker = LatencyWorker(SimulatedWorker(WorkerProfile.for_domain("code")), latency_s=0.2, meter=meter)
    env = gym.make("HarnessCode-v1", worker=worker)
"""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np

from harness_gym.core.types import CheckResult, Context, Draft, ToolCall
from harness_gym.workers.base import Usage, Worker


class CallMeter:
    """Counts the calls in flight across every copy of a :class:`LatencyWorker` in this process.

    Deep copies share the meter (that is its purpose); a pickled meter (sent to another process) starts
    again from zero there.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.in_flight = 0
        """calls started and not finished"""
        self.max_in_flight = 0
        """the most calls in flight at once so far"""
        self.calls = 0
        """calls started so far"""

    def enter(self) -> None:
        """A call starts."""
        with self._lock:
            self.in_flight += 1
            self.calls += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def leave(self) -> None:
        """A call ends."""
        with self._lock:
            self.in_flight -= 1

    def __deepcopy__(self, memo: dict[int, Any]) -> CallMeter:
        return self

    def __getstate__(self) -> dict[str, Any]:
        return {}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__()  # type: ignore[misc]


class LatencyWorker:
    """Another worker's content, delivered after a fixed wait per call.

    :param inner: the worker that writes the content (e.g. a :class:`~harness_gym.workers.SimulatedWorker`)
    :param latency_s: seconds every call waits before it answers
    :param meter: counts calls in flight (shared by deep copies); a fresh one when omitted
    """

    io_bound = True
    """its calls wait rather than compute: concurrent runs use threads"""

    def __init__(self, inner: Worker, latency_s: float = 0.2, meter: CallMeter | None = None) -> None:
        if float(latency_s) < 0:
            raise ValueError(f"latency_s must be >= 0, got {latency_s}")
        self.inner = inner
        self.latency_s = float(latency_s)
        self.meter = meter if meter is not None else CallMeter()

    def _wait(self) -> None:
        self.meter.enter()
        try:
            time.sleep(self.latency_s)
        finally:
            self.meter.leave()

    def reset(self, rng: np.random.Generator) -> None:
        """Start an episode (passed on to the wrapped worker).

        :param rng: the env's random generator
        """
        self.inner.reset(rng)

    def draft(self, ctx: Context) -> Draft:
        """The wrapped worker's draft, after the wait.

        :param ctx: the episode's context
        """
        self._wait()
        return self.inner.draft(ctx)

    def revise(self, ctx: Context, draft: Draft, feedback: CheckResult) -> Draft:
        """The wrapped worker's revision, after the wait.

        :param ctx: the episode's context
        :param draft: the draft to revise
        :param feedback: the check result it revises against
        """
        self._wait()
        return self.inner.revise(ctx, draft, feedback)

    def propose_tool_call(self, ctx: Context) -> ToolCall:
        """The wrapped worker's tool call, after the wait.

        :param ctx: the episode's context
        """
        self._wait()
        return self.inner.propose_tool_call(ctx)

    def self_check(self, ctx: Context, draft: Draft) -> CheckResult:
        """The wrapped worker's self-check, after the wait.

        :param ctx: the episode's context
        :param draft: the draft to check
        """
        self._wait()
        return self.inner.self_check(ctx, draft)

    def confidence(self, ctx: Context, draft: Draft) -> float:
        """The wrapped worker's confidence, after the wait.

        :param ctx: the episode's context
        :param draft: the draft it is confident about
        """
        self._wait()
        return self.inner.confidence(ctx, draft)

    def pop_usage(self) -> Usage:
        """The wrapped worker's usage since the last pop (zeros when it keeps none)."""
        pop = getattr(self.inner, "pop_usage", None)
        return pop() if pop is not None else Usage()
