"""The env keywords of a command line: the ``env`` and ``cost-weight`` option groups (``--env-kwarg``,
``--worker``, the LLM worker flags, ``--prices``, ``--budget-units``, ``--cost-weight``) and ``--recording``, a
recording of a real model whose episodes ``eval`` and ``compare`` replay.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym

from harness_gym_baselines.cli.options import WORKER_FLAGS
from harness_gym_baselines.common.options import (
    UsageError,
    check_env_kwargs,
    make_env,
    parse_key_values,
    recorded_env_kwargs,
)


def parse_env_kwargs(pairs: Sequence[str], worker: str | None, sandbox: str | None,
                     worker_options: dict[str, Any] | None = None,
                     pricing: dict[str, Any] | None = None) -> dict[str, Any]:
    """``KEY=VALUE`` pairs to constructor kwargs; VALUE is parsed as JSON when it parses, else kept as text.
    ``worker_options`` (from the ``--base-url``, ``--model``, ... flags) and ``pricing`` (from ``--prices``,
    ``--budget-units``, ``--cost-weight``) are added as they are; a keyword given both ways is an error."""
    out = parse_key_values(pairs)
    for key, value in (pricing or {}).items():
        if key in out:
            raise UsageError(f"--env-kwarg {key}=... and --{key.replace('_', '-')}: give it once")
        out[key] = value
    if worker is not None:
        out["worker"] = worker
    if sandbox is not None:
        out["sandbox"] = sandbox
    if worker_options:
        if out.get("worker") != "openai":
            flags = ", ".join(flag for key, flag, _, _ in WORKER_FLAGS if key in worker_options)
            raise UsageError(f"{flags}: option(s) of the LLM worker, which --worker openai selects")
        out.update(worker_options)
    return out


def recording_options(manifest: str, env_ids: Sequence[str]) -> dict[str, Any]:
    """The worker keywords that replay a recording (``--recording MANIFEST``): its cache file in replay mode
    and the model and sampling settings it was recorded with (the manifest's ``worker``), so that the replayed
    requests have the recorded keys. An env id the recording holds no episode of is a :class:`UsageError`.

    :param manifest: a recording manifest (JSON naming ``cache``, ``worker`` and ``episodes``, as
        ``benchmarks/record_llm.py`` writes it)
    :param env_ids: the envs the command makes
    """
    path = Path(manifest)
    if not path.is_file():
        raise UsageError(f"--recording {manifest}: no such file")
    try:
        blob = json.loads(path.read_text())
        cache, worker = path.parent / blob["cache"], dict(blob["worker"])
    except (ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"--recording {manifest}: not a recording manifest (JSON with 'cache', 'worker' and "
                         f"'episodes'): {type(exc).__name__}: {exc}") from None
    recorded = sorted({ep.get("env_id") for ep in blob.get("episodes", ()) if ep.get("env_id")})
    for env_id in env_ids:
        if recorded and env_id not in recorded:
            stale = [e for e in recorded if e not in gym.registry]
            why = (f"; {', '.join(stale)} {'is' if len(stale) == 1 else 'are'} retired, so the recording needs "
                   "re-recording on the registered ids (benchmarks/record_llm.py)" if stale else "")
            raise UsageError(f"--recording {manifest}: it records episodes of {', '.join(recorded)}, not of "
                             f"{env_id}{why}")
    return {**worker, "cache": str(cache), "cache_mode": "replay"}


def recorded_pairs(manifest: str, env_id: str) -> tuple[list[tuple[str, int]], list[str]]:
    """The ``(task id, reset seed)`` pairs a recording holds episodes of on ``env_id``, in recorded order, and
    the controllers it recorded there.

    :param manifest: a recording manifest (:func:`recording_options` has checked it)
    :param env_id: the env id
    """
    episodes = [ep for ep in json.loads(Path(manifest).read_text()).get("episodes", ())
                if ep.get("env_id") == env_id]
    pairs = list(dict.fromkeys((str(ep["task_id"]), int(ep["seed"])) for ep in episodes))
    return pairs, list(dict.fromkeys(str(ep.get("policy", "?")) for ep in episodes))


def recording_pairs(args: argparse.Namespace) -> list[tuple[str, int]] | None:
    """The episodes ``eval`` / ``compare`` play with ``--recording``: the recorded ``(task id, seed)`` pairs of
    the env (the first ``--episodes`` of them when given), said on stderr; ``None`` without ``--recording``.

    :param args: the parsed command line
    """
    if args.recording is None:
        return None
    pairs, controllers = recorded_pairs(args.recording, args.env_id)
    if args.episodes is not None and args.episodes > len(pairs):
        raise UsageError(f"--episodes {args.episodes}: --recording {args.recording} holds {len(pairs)} (task, seed) "
                         f"pairs of {args.env_id}; drop --episodes to replay them all")
    if args.num_envs != 1 or args.backend != "local":
        raise UsageError("--recording replays its episodes one after another: drop --num-envs / --backend")
    pairs = pairs[:args.episodes] if args.episodes is not None else pairs
    if not args.json:
        print(f"harness-gym {args.command}: replaying the {len(pairs)} recorded (task, seed) pairs of {args.env_id} "
              f"(recorded controllers: {', '.join(controllers)}); --split and --seed do not apply", file=sys.stderr)
    return pairs


def recording_miss(args: argparse.Namespace, policy: str, exc: Exception) -> UsageError:
    """The one-line error of a replay that asked for a call the recording does not hold: what the recording
    holds ((task, seed) pairs and controllers) and how to run past it.

    :param args: the parsed command line (``recording``, ``env_id``)
    :param policy: the ``--policy`` value that missed
    :param exc: the :class:`~harness_gym.workers.llm_cache.CacheMissError`
    """
    pairs, controllers = recorded_pairs(args.recording, args.env_id)
    shown = ", ".join(f"({task}, {seed})" for task, seed in pairs[:12]) + (", ..." if len(pairs) > 12 else "")
    return UsageError(f"--recording {args.recording}: --policy {policy} asked for an LLM call it does not hold; it "
                      f"holds {len(pairs)} episodes of {args.env_id} by the controllers {', '.join(controllers)} on the "
                      f"(task, seed) pairs {shown}, and a controller that acts otherwise needs the live model (record the "
                      f"rest with --worker openai --base-url URL --cache FILE --cache-mode auto). Cache: {exc}")


def worker_options(args: argparse.Namespace, env_ids: Sequence[str] = ()) -> dict[str, Any]:
    """The ``--worker openai`` options given on the command line (see :data:`WORKER_FLAGS`), with those of
    ``--recording``; a flag that contradicts the recording is a :class:`UsageError`.

    :param args: the parsed command line
    :param env_ids: the envs the command makes (checked against the recording)
    """
    given = {key: getattr(args, key) for key, _, _, _ in WORKER_FLAGS if getattr(args, key, None) is not None}
    if getattr(args, "recording", None) is None:
        return given
    recorded = recording_options(args.recording, env_ids)
    for key, flag, _, _ in WORKER_FLAGS:
        if key in given and key in recorded and given[key] != recorded[key]:
            raise UsageError(f"{flag} {given[key]}: --recording {args.recording} was recorded with "
                             f"{key}={recorded[key]}, and a replay must ask what was recorded; drop {flag}")
    return {**recorded, **given}


def recorded_settings(manifest: str, env_ids: Sequence[str]) -> dict[str, Any]:
    """The env keywords a recording's episodes were recorded under (:func:`recorded_env_kwargs`: its manifest's
    ``env_kwargs`` per env id, checked), which a replay must use to ask the recorded calls; ``{}`` when it names none.

    :param manifest: a recording manifest (:func:`recording_options` has checked it)
    :param env_ids: the envs the command makes
    :raises UsageError: when the envs were recorded under different keywords (replay them one at a time)
    """
    blob = json.loads(Path(manifest).read_text())
    settings = [recorded_env_kwargs(blob, env_id, f"--recording {manifest}") for env_id in env_ids]
    if any(s != settings[0] for s in settings[1:]):
        raise UsageError(f"--recording {manifest}: {', '.join(env_ids)} were recorded under different env keywords "
                         f"({', '.join(f'{e}: {s}' for e, s in zip(env_ids, settings))}); replay one env at a time")
    return settings[0] if settings else {}


def pricing_options(args: argparse.Namespace) -> dict[str, Any]:
    """The env keywords of ``--prices``, ``--budget-units`` and ``--cost-weight`` given on the command line.

    :param args: the parsed command line
    """
    out: dict[str, Any] = {}
    if getattr(args, "prices", None) is not None:
        out["prices"] = args.prices
    if hasattr(args, "budget_units"):  # absent unless given (argparse.SUPPRESS); None is "none", no cost budget
        out["budget_units"] = args.budget_units
    if getattr(args, "cost_weight", None) is not None:
        out["cost_weight"] = args.cost_weight
    return out


def command_env_kwargs(args: argparse.Namespace, env_ids: Sequence[str]) -> dict[str, Any]:
    """The env keywords of the ``env`` and ``cost-weight`` option groups (:data:`COMMAND_OPTIONS`), checked
    against each env's constructor and tried once, so that a wrong key or value is reported before any
    episode runs.

    :param args: the parsed command line
    :param env_ids: the envs the command makes
    """
    worker = args.worker if args.worker is not None or getattr(args, "recording", None) is None else "openai"
    pricing = pricing_options(args)
    if getattr(args, "recording", None) is not None:
        recorded = recorded_settings(args.recording, env_ids)
        for key, value in recorded.items():
            if key in pricing and pricing[key] != value:
                raise UsageError(f"--{key.replace('_', '-')} {pricing[key]}: --recording {args.recording} was "
                                 f"recorded with {key}={value}, and a replay must ask what was recorded")
        pricing = {**recorded, **pricing}
    kwargs = parse_env_kwargs(args.env_kwarg, worker, args.sandbox, worker_options(args, env_ids), pricing)
    for env_id in env_ids:
        make_env(env_id, check_env_kwargs(env_id, kwargs)).close()
    return kwargs


def env_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """:func:`command_env_kwargs` of a command on one env (``args.env_id``).

    :param args: the parsed command line (with ``env_id``)
    """
    return command_env_kwargs(args, [args.env_id])


