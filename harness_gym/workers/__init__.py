"""Workers: the frozen LLM behind the harness."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from harness_gym.core.tool_calls import ToolSpec
from harness_gym.core.types import Task, ToolCall
from harness_gym.workers.base import Usage, Worker
from harness_gym.workers.openai_worker import OPTION_NAMES as OPENAI_OPTIONS
from harness_gym.workers.openai_worker import LLMUnreachableError, OpenAIWorker
from harness_gym.workers.profile import WorkerProfile
from harness_gym.workers.prompting import prompts_dir_of
from harness_gym.workers.simulated import SimulatedWorker

WORKER_NAMES: tuple[str, ...] = ("simulated", "openai")
SIMULATED_OPTIONS: tuple[str, ...] = ("prompts_dir",)
"""The options the simulated worker takes (the folder of prompt files its metering reads)."""
WORKER_OPTIONS: Mapping[str, tuple[str, ...]] = {"simulated": SIMULATED_OPTIONS, "openai": OPENAI_OPTIONS}
"""Each named worker's options (the keywords ``gym.make`` passes through to it)."""


def unexpected_keyword(owner: str, key: str, accepted: Iterable[str]) -> TypeError:
    """The one-line :class:`TypeError` of a keyword nobody takes, worded as Python's own (``owner() got an
    unexpected keyword argument 'key'``, which TorchRL's ``GymEnv`` recognises when it probes with
    ``frameskip``), plus the closest accepted keywords.

    :param owner: what was called, e.g. ``"HarnessCodeEnv.__init__"``
    :param key: the keyword given
    :param accepted: every keyword the call takes
    """
    close = difflib.get_close_matches(key, sorted(set(accepted)), n=3, cutoff=0.6)
    hint = ("; did you mean " + " or ".join(repr(c) for c in close) + "?") if close else ""
    return TypeError(f"{owner}() got an unexpected keyword argument {key!r}{hint}")


def check_worker_options(spec: str | Worker, options: Mapping[str, Any], owner: str,
                         other_keywords: Iterable[str] = ()) -> None:
    """Raise :class:`TypeError` for the first option (in sorted order) that the worker ``spec`` does not take:
    one that another worker takes names that worker; any other is an unexpected keyword with the closest of
    ``other_keywords`` and the worker options.

    :param spec: a worker name or a :class:`Worker` instance (which takes no options: set them on it)
    :param options: the keywords left for the worker
    :param owner: what was called, for the message (e.g. ``"HarnessCodeEnv.__init__"``)
    :param other_keywords: the caller's own keywords, suggested for a misspelt one
    """
    if isinstance(spec, str) and spec not in WORKER_OPTIONS:
        return  # make_worker names the unknown worker
    accepted = WORKER_OPTIONS[spec] if isinstance(spec, str) else ()
    given = f"worker={spec!r}" if isinstance(spec, str) else "a Worker instance"
    for key in sorted(map(str, options)):
        if key in accepted:
            continue
        takers = [name for name, names in WORKER_OPTIONS.items() if key in names]
        if takers:
            fix = "set it on the instance" if not isinstance(spec, str) else f"pass worker={takers[0]!r}"
            raise TypeError(f"{owner}() got keyword {key!r}, an option of worker="
                            f"{' or '.join(map(repr, takers))}; {given} does not take it ({fix})")
        every_option = {name for names in WORKER_OPTIONS.values() for name in names}
        raise unexpected_keyword(owner, key, {*other_keywords, *every_option})


def make_worker(spec: str | Worker, domain: str, profile: WorkerProfile | str | None = None, *,
                tools: Mapping[str, ToolSpec] | None = None, options: Mapping[str, Any] | None = None,
                wrong_tool_calls: Callable[[Task], Sequence[ToolCall]] | None = None,
                assets_dir: str | Path | None = None) -> Worker:
    """Build a worker from a name (``"simulated"``, ``"openai"``) or pass an instance through.

    :param spec: a worker name or a ready :class:`Worker`
    :param domain: the domain name, used to find the default profile and the prompts
    :param profile: a profile, a path to a profile JSON file, or ``None`` for the domain's ``-v1`` profile in its
        assets folder
    :param tools: the domain's tools (a live worker shows them to the model)
    :param options: keyword arguments of the named worker, e.g. ``base_url``, ``model``, ``cache`` for
        ``"openai"`` (see :data:`OPENAI_OPTIONS`); the simulated worker takes only ``prompts_dir``
    :param wrong_tool_calls: the domain's well-formed wrong calls per task, for the simulated worker
        (:meth:`~harness_gym.core.domain.Domain.wrong_tool_calls`)
    :param assets_dir: the domain's :attr:`~harness_gym.core.domain.Domain.assets_dir`, where its profile and
        prompts are (``None``: the shipped ``envs_data``); ``prompts_dir`` in ``options`` overrides its prompts
    :raises TypeError: for a ``spec`` that is neither a name nor a :class:`Worker`, or an option the worker
        does not take (:func:`check_worker_options`)
    :raises ValueError: for an unknown worker name
    """
    options = dict(options or {})
    if not isinstance(spec, str) and not isinstance(spec, Worker):
        raise TypeError(f"worker must be one of {WORKER_NAMES} or a Worker (an object with reset, draft, revise, "
                        f"propose_tool_call, self_check and confidence), got {type(spec).__name__} {spec!r:.80}")
    check_worker_options(spec, options, "make_worker")
    if not isinstance(spec, str):
        return spec
    if assets_dir is not None:
        options.setdefault("prompts_dir", prompts_dir_of(assets_dir))
    if spec == "openai":
        return OpenAIWorker(domain, tools, **options)
    if spec == "simulated":
        if profile is None:
            prof = WorkerProfile.for_domain(domain, "v1", assets_dir)
        elif isinstance(profile, WorkerProfile):
            profile.validate("profile")
            prof = profile
        else:
            prof = WorkerProfile.load(profile)
        return SimulatedWorker(prof, domain, tools=tools, wrong_tool_calls=wrong_tool_calls, **options)
    raise ValueError(f"unknown worker {spec!r}; expected one of {WORKER_NAMES} or a Worker instance")


__all__ = ["Worker", "Usage", "WorkerProfile", "SimulatedWorker", "OpenAIWorker", "LLMUnreachableError", "make_worker",
           "WORKER_NAMES", "OPENAI_OPTIONS", "SIMULATED_OPTIONS", "WORKER_OPTIONS", "check_worker_options",
           "unexpected_keyword"]
