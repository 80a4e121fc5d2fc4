"""Workers: the frozen LLM behind the harness."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from harness_gym.core.tools import ToolSpec
from harness_gym.core.types import Task, ToolCall
from harness_gym.workers.base import Usage, Worker
from harness_gym.workers.openai_worker import OPTION_NAMES as OPENAI_OPTIONS
from harness_gym.workers.openai_worker import LLMUnreachableError, OpenAIWorker
from harness_gym.workers.profile import WorkerProfile
from harness_gym.workers.simulated import SimulatedWorker

WORKER_NAMES: tuple[str, ...] = ("simulated", "openai")
SIMULATED_OPTIONS: tuple[str, ...] = ("prompts_dir",)
"""The options the simulated worker takes (the folder of prompt files its metering reads)."""


def make_worker(spec: str | Worker, domain: str, profile: WorkerProfile | str | None = None, *,
                tools: Mapping[str, ToolSpec] | None = None, options: Mapping[str, Any] | None = None,
                wrong_tool_calls: Callable[[Task], Sequence[ToolCall]] | None = None) -> Worker:
    """Build a worker from a name (``"simulated"``, ``"openai"``) or pass an instance through.

    :param spec: a worker name or a ready :class:`Worker`
    :param domain: the domain name, used to find the default profile and the prompts
    :param profile: a profile, a path to a profile JSON file, or ``None`` for the domain's shipped profile
    :param tools: the domain's tools (a live worker shows them to the model)
    :param options: keyword arguments of the named worker, e.g. ``base_url``, ``model``, ``cache`` for
        ``"openai"`` (see :data:`OPENAI_OPTIONS`); the simulated worker takes only ``prompts_dir``
    :param wrong_tool_calls: the domain's well-formed wrong calls per task, for the simulated worker
        (:meth:`~harness_gym.core.domain.Domain.wrong_tool_calls`)
    :raises TypeError: for a ``spec`` that is neither a name nor a :class:`Worker`
    :raises ValueError: for an unknown name or options the worker does not take
    """
    options = dict(options or {})
    if not isinstance(spec, str):
        if not isinstance(spec, Worker):
            raise TypeError(f"worker must be one of {WORKER_NAMES} or a Worker (an object with reset, draft, revise, "
                            f"propose_tool_call, self_check and confidence), got {type(spec).__name__} {spec!r:.80}")
        if options:
            raise ValueError(f"worker options {sorted(options)} given with a Worker instance; set them on it")
        return spec
    if spec == "openai":
        unknown = sorted(set(options) - set(OPENAI_OPTIONS))
        if unknown:
            raise ValueError(f"unknown option(s) {unknown} for worker 'openai'; known: {list(OPENAI_OPTIONS)}")
        return OpenAIWorker(domain, tools, **options)
    if spec == "simulated":
        unknown = sorted(set(options) - set(SIMULATED_OPTIONS))
        if unknown:
            raise ValueError(f"worker 'simulated' takes no options other than {list(SIMULATED_OPTIONS)}, got "
                             f"{unknown} (they are for worker='openai')")
        if profile is None:
            prof = WorkerProfile.for_domain(domain)
        elif isinstance(profile, WorkerProfile):
            prof = profile
        else:
            prof = WorkerProfile.load(profile)
        return SimulatedWorker(prof, domain, tools=tools, wrong_tool_calls=wrong_tool_calls, **options)
    raise ValueError(f"unknown worker {spec!r}; expected one of {WORKER_NAMES} or a Worker instance")


__all__ = ["Worker", "Usage", "WorkerProfile", "SimulatedWorker", "OpenAIWorker", "LLMUnreachableError", "make_worker",
           "WORKER_NAMES", "OPENAI_OPTIONS", "SIMULATED_OPTIONS"]
