"""The harness-gym command: evaluate, compare, trace, collect, train and reproduce harness controllers.

``list`` the envs, ``eval`` / ``compare`` / ``play`` controllers, ``collect`` offline datasets, ``train``
offline controllers and ``reproduce`` the paper tables.

It lives in ``harness_gym_baselines`` because it uses both layers: the env library (``harness_gym``, which never
imports ``harness_gym_baselines``) and the controllers, trainers and experiments here; it is the package's top
layer. Heavy modules (torch, Minari) are imported by the command that needs them. The policy names come from
:mod:`harness_gym_baselines.policies.registry`, the trainers and their flags from
:mod:`harness_gym_baselines.common.trainer_registry`.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import json
import math
import re
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import gymnasium as gym
from rich.console import Console
from rich.table import Table

import harness_gym
from harness_gym.core.paths import data_path
from harness_gym.core.prices import price_profiles
from harness_gym.running.parallel import BACKENDS, PARALLEL_MODES
from harness_gym.running.rollout import Policy
from harness_gym.workers import WORKER_NAMES, WorkerProfile
from harness_gym.workers.calibrate import collect_events, fit_profile
from harness_gym.workers.llm_cache import CacheMissError
from harness_gym_baselines.common.dataclass_flags import add_dataclass_arguments, config_from_args, doc_summary
from harness_gym_baselines.common.options import (
    ONLINE_CONFIG_KEYWORDS,
    UsageError,
    budget_units_value,
    check_dataset,
    check_env_id,
    check_env_kwargs,
    check_policy_value,
    check_task_id,
    closest,
    make_env,
    parse_key_values,
    positive_int,
    prices_name,
    refuse_config_keywords,
)
from harness_gym_baselines.common.trainer_registry import TRAINERS, load_trainer
from harness_gym_baselines.evaluate import (
    LLM_ERROR_RATE_WARNING,
    LLM_SERVER_ERROR_RATE_LIMIT,
    LLMErrorRateWarning,
    evaluate,
    llm_error_text,
    llm_faults_text,
)
from harness_gym_baselines.policies.open_loop import is_script_name
from harness_gym_baselines.policies.registry import POLICIES, make_policy, policy_help
from harness_gym_baselines.policies.trained_on import OtherEnvWarning
from harness_gym_baselines.report.reproduce import QUICK_ENVS, reproduce

WORKER_FLAGS: tuple[tuple[str, str, Any, str], ...] = (
    ("base_url", "--base-url", str, "OpenAI-compatible endpoint, e.g. http://127.0.0.1:8011/v1 (default: none; "
                                    "needed unless every call is replayed from --cache)"),
    ("model", "--model", str, "model name the server knows (default: none; required with --worker openai)"),
    ("api_key", "--api-key", str, "API key (default: $OPENAI_API_KEY, or none for a local server)"),
    ("temperature", "--temperature", float, "sampling temperature (default: 0)"),
    ("max_tokens", "--max-tokens", int, "completion token limit per call (default: 512)"),
    ("timeout_s", "--timeout-s", float, "seconds before a call times out, then retried (default: 60)"),
    ("max_retries", "--max-retries", int, "retries of a failed call before the step fails (default: 3)"),
    ("cache", "--cache", str, "SQLite record/replay file of the model's calls (default: none, no cache)"),
    ("cache_mode", "--cache-mode", str, "off, record, replay or auto (default: auto with --cache, else off)"),
)
"""``--worker openai`` options: (keyword of ``gym.make``, flag, type, help); see docs/llm_worker.md."""

COMMAND_OPTIONS: dict[str, tuple[str, ...]] = {
    "list": ("json",),
    "calibrate": ("json",),
    "doctor": ("json",),
    "eval": ("policy", "run", "env", "cost-weight", "scale", "llm-errors", "progress", "json"),
    "compare": ("policies", "run", "env", "cost-weight", "scale", "llm-errors", "progress", "json", "width"),
    "frontier": ("labelled-policies", "run", "env", "progress", "json"),
    "search-script": ("env", "progress", "json"),
    "card": ("progress", "json"),
    "play": ("policy", "env", "cost-weight", "width"),
    "collect": ("policy", "env", "cost-weight", "scale", "progress", "json"),
    "merge-cache": ("json",),
    "train": (),
    "view": (),
    "reproduce": ("progress", "json"),
    "train (offline trainer)": ("progress", "json"),
    "train (online trainer)": ("env", "cost-weight", "progress", "json"),
}
"""The shared option groups of every command, the one place they are chosen (``tests/test_cli_options.py``
walks every parser against it):

- ``policy`` / ``policies`` / ``labelled-policies``: ``--policy`` once / repeated / repeated with an optional
  ``LABEL[@W]=`` prefix; each value a registered name, an open-loop script, a model file or ``module:callable``;
- ``env``: ``--env-kwarg KEY=VALUE`` (repeated), ``--worker``, ``--sandbox``, ``--prices``, ``--budget-units``,
  ``--recording`` and the ``--worker openai`` flags (:data:`WORKER_FLAGS`);
- ``cost-weight``: ``--cost-weight W``, the env's reward ``Q - W * cost`` (the commands that score several cost
  weights at once, ``frontier`` and ``search-script``, take ``--cost-weights W,W,...`` instead);
- ``run``: ``--episodes``, ``--split``, ``--seed``; ``scale``: ``--num-envs``, ``--parallel``, ``--backend``,
  ``--address``, ``--envs-per-actor``; ``width``: ``--width``;
- ``llm-errors``: ``--max-llm-error-rate X``, exit 1 when more than that share of the LLM worker's requests
  failed; without it, exit 1 when more than :data:`~harness_gym_baselines.evaluate.LLM_SERVER_ERROR_RATE_LIMIT`
  failed for a fault of the server (:func:`llm_error_status`);
- ``progress``: ``--no-progress`` (every command that draws progress bars); ``json``: ``--json`` (every command
  that ends with a summary prints it as JSON instead).

A trainer's own flags come from its config dataclass (:mod:`harness_gym_baselines.common.dataclass_flags`); an
online trainer (one whose config has ``env_id``) gets the ``env`` group on top, offline ones evaluate on the
dataset's own env.
"""


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
    kwargs = parse_env_kwargs(args.env_kwarg, worker, args.sandbox, worker_options(args, env_ids),
                              pricing_options(args))
    for env_id in env_ids:
        make_env(env_id, check_env_kwargs(env_id, kwargs)).close()
    return kwargs


def env_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """:func:`command_env_kwargs` of a command on one env (``args.env_id``).

    :param args: the parsed command line (with ``env_id``)
    """
    return command_env_kwargs(args, [args.env_id])


DEFAULT_EPISODES = 100
"""``--episodes`` of the ``run`` option group when not given (and no ``--recording`` sets the episodes)"""


def episode_count(args: argparse.Namespace) -> int:
    """``--episodes``, or :data:`DEFAULT_EPISODES` when not given.

    :param args: the parsed command line
    """
    return DEFAULT_EPISODES if args.episodes is None else int(args.episodes)


def load_policy_arg(value: str) -> Policy:
    """The controller of a ``--policy`` value; a model file that does not load is a :class:`UsageError`
    naming the file.

    :param value: a value accepted by :func:`policy_name`
    """
    if not Path(value).is_file():
        return make_policy(value)
    try:
        return make_policy(value)
    except UsageError as exc:  # the file's format or trainer, already said in one line
        raise UsageError(f"--policy {exc}") from exc
    except Exception as exc:  # torch / zip / format errors of a user's file are reported, not raised
        raise UsageError(f"--policy {value}: cannot load this model file: {type(exc).__name__}: {exc}") from exc


def _json_default(value: Any) -> Any:
    raise TypeError(f"not JSON serialisable: {value!r}")


def _clean(obj: Any) -> Any:
    """NaN becomes null so that the printed JSON is standard."""
    if isinstance(obj, float) and math.isnan(obj):
        return None
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    return obj


def print_table(title: str, headers: Sequence[str], rows: Sequence[Sequence[str]], *, width: int | None = None,
                right: Sequence[int] = ()) -> None:
    """Print a table: drawn by Rich on a terminal or with ``--width`` (long cells wrap within the width), else
    (output piped or redirected) as plain columns padded with spaces, one line per row and nothing wrapped or
    cut, so that ``grep``, ``column`` and a log keep every value whole.

    :param title: the line above the table
    :param headers: the column names
    :param rows: the cells, one sequence per row
    :param width: ``--width``: the columns of the output (drawn by Rich)
    :param right: indices of the columns aligned right
    """
    if width is None and not sys.stdout.isatty():
        cells = [list(headers), *[list(map(str, row)) for row in rows]]
        sizes = [max(len(row[i]) for row in cells) for i in range(len(headers))]
        print(title)
        for row in cells:
            print("  ".join((c.rjust(n) if i in right else c.ljust(n)) for i, (c, n) in enumerate(zip(row, sizes)))
                  .rstrip())
        return
    table = Table(title=title)
    for i, header in enumerate(headers):
        table.add_column(header, justify="right" if i in right else "left", overflow="fold")
    for row in rows:
        table.add_row(*map(str, row))
    Console(width=width).print(table)


def cmd_list(args: argparse.Namespace) -> int:
    rows, cells = [], []
    for env_id in harness_gym.ENV_IDS:
        try:
            env = gym.make(env_id)
        except Exception as exc:  # an adapter may need data the user has not given
            rows.append({"env_id": env_id, "error": f"{type(exc).__name__}: {exc}"})
            cells.append((env_id, f"{type(exc).__name__}: {exc}", "", "", "", "", ""))
            continue
        domain = env.unwrapped.domain
        counts = domain.counts()
        env.close()
        left_out = [str(record) for record in getattr(domain, "load_report", ())]
        rows.append({"env_id": env_id, "domain": domain.name, **counts, "total": sum(counts.values()),
                     "left_out": left_out})
        cells.append((env_id, domain.name, *(str(counts[s]) for s in ("train", "val", "test", "ood")),
                      str(sum(counts.values()))))
    if args.json:
        print(json.dumps(rows))
    else:
        print_table("harness_gym environments", ("env id", "domain", "train", "val", "test", "ood", "total"), cells,
                    right=(2, 3, 4, 5, 6))
    return 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    manifest_path = Path(args.manifest) if args.manifest else Path(data_path("recordings", "smollm2.json"))
    if not manifest_path.is_file():
        raise UsageError(f"--recording {manifest_path}: no such file")
    manifest = json.loads(manifest_path.read_text())
    recorded = sorted({ep["env_id"] for ep in manifest["episodes"]})
    episodes = [ep for ep in manifest["episodes"] if ep["env_id"] == args.env_id]
    if not episodes:
        raise UsageError(f"{manifest_path} records no episode of {args.env_id}; it records {', '.join(recorded)}")
    cache = manifest_path.parent / manifest["cache"]
    env = gym.make(args.env_id, worker="openai", cache=str(cache), cache_mode="replay", **manifest["worker"])
    domain = env.unwrapped.domain.name
    default = WorkerProfile.load(args.profile) if args.profile else WorkerProfile.for_domain(domain)
    try:
        fit = fit_profile(collect_events(env, episodes), default, n_boot=args.bootstrap, seed=args.seed)
    finally:
        env.close()
    source = f"{len(episodes)} recorded {manifest['worker'].get('model', 'model')} episodes ({manifest_path.name})"
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(fit.to_json(domain, source), indent=1) + "\n")
    if args.json:
        print(json.dumps(_clean({"out": str(out), **fit.to_json(domain, source)}), default=_json_default))
        return 0
    fitted = vars(fit.profile)
    cells = []
    for name, value in vars(fit.default).items():
        ci = fit.ci95[name]
        cells.append((name, f"{value:.3f}", f"{fitted[name]:.3f}",
                      f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "not estimated (no events)"))
    print_table(f"{domain} profile fitted to {source}", ("parameter", "default", "fitted", "95% CI"), cells)
    print(f"events: {fit.events}; held-out log-likelihood per event: fitted {fit.heldout_loglik:.3f}, "
          f"default {fit.heldout_loglik_default:.3f} ({fit.heldout_events} events)")
    print(f"wrote {out} (use it with --env-kwarg profile={out})")
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    """Print the isolation in force for each sandbox backend; 1 when it is weaker than required."""
    from harness_gym.sandbox import DockerUnavailableError, IsolationError, make_sandbox

    reports, status = [], 0
    for backend in ("process", "docker") if args.docker else ("process",):
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", RuntimeWarning)
                box = make_sandbox(backend, require_isolation=args.require or None)
                report = box.isolation_report()
                box.close()
            report["warnings"] = [str(w.message) for w in caught]
        except (IsolationError, DockerUnavailableError, RuntimeError) as exc:
            report = {"backend": backend, "error": f"{type(exc).__name__}: {exc}"}
            status = 1
        reports.append(report)
    if args.json:
        print(json.dumps(reports))
        return status
    for report in reports:
        if "error" in report:
            print(f"{report['backend']}: ERROR {report['error']}")
            continue
        print(f"{report['backend']}: isolation in force: {report['in_force']}"
              + (f" (DEGRADED: {report['reason']})" if report["degraded"] else "")
              + f"; user namespaces refused: {report['userns_blocked']}; required: {report['require_isolation']}")
        for text in report["warnings"]:
            print(f"  warning: {text}")
    return status


def cmd_eval(args: argparse.Namespace) -> int:
    kwargs = env_kwargs(args)
    recorded: list[Any] = []  # the EpisodeRecorder that evaluate() wraps its env in (--save-episodes)
    wrap = None
    if args.save_episodes:
        if args.num_envs != 1 or args.backend != "local":
            raise UsageError("--save-episodes records the episodes one after another: drop --num-envs / --backend")
        from harness_gym_baselines.report.episode_view import EpisodeRecorder

        kwargs = {**kwargs, "render_mode": "ansi"}

        def wrap(env: gym.Env) -> gym.Env:
            recorded.append(EpisodeRecorder(env, policy=args.policy))
            return recorded[-1]

    pairs = recording_pairs(args)
    try:
        result = evaluate_with_one_line_warnings(args, args.env_id, load_policy_arg(args.policy),
                                                 episodes=episode_count(args), split=args.split, seed=args.seed,
                                                 env_kwargs=kwargs, progress=args.progress and not args.json,
                                                 wrap_env=wrap, pairs=pairs, **scale_options(args))
    except CacheMissError as exc:
        if pairs is None:
            raise
        raise recording_miss(args, args.policy, exc) from exc
    result["policy"] = args.policy
    if recorded:
        from harness_gym_baselines.report.episode_view import save_episodes

        save_episodes(args.save_episodes, recorded[0].episodes, env_id=args.env_id, policy=args.policy,
                      split=args.split, seed=args.seed, env_kwargs={k: v for k, v in kwargs.items()
                                                                   if k != "render_mode"})
        if not args.json:
            print(f"wrote {len(recorded[0].episodes)} episodes to {args.save_episodes} "
                  f"(harness-gym view {args.save_episodes} --out FILE.html)")
    if args.json:
        print(json.dumps(_clean(result), default=_json_default))
    else:
        lo, hi = result["quality_ci95"]
        cells = [("quality", f"{result['quality_mean']:.3f} [{lo:.3f}, {hi:.3f}]")]
        for key in ("success_rate", "hms_mean", "mean_steps", "invalid_action_rate", "forced_submit_rate",
                    "unfinished_rate", "seconds"):
            cells.append((key, f"{result[key]:.3f}"))
        clo, chi = result["cost_ci95"]
        cells.append(("cost (units per episode)", f"{result['cost_mean']:.3f} [{clo:.3f}, {chi:.3f}]"))
        cells.append((f"return (cost_weight {result['cost_weight']:g})", f"{result['return_mean']:.3f}"))
        if kwargs.get("worker") == "openai":
            cells += [("llm_calls (requests)", str(result["llm_calls"])),
                      ("llm_errors (failed requests)", str(result["llm_errors"])),
                      ("llm_error_rate", f"{result['llm_error_rate']:.3f}"),
                      ("llm_server_error_rate", f"{result['llm_server_error_rate']:.3f}"),
                      ("llm failures (call: cause)", llm_faults_text(result["llm_faults"]).removeprefix(": ") or "none")]
        for name, rate in result["patterns"].items():
            cells.append((f"pattern {name}", "n/a" if math.isnan(rate) else f"{rate:.3f}"))
        where = (f"{args.split}" if pairs is None else "recorded pairs")
        print_table(f"{args.env_id} / {result['policy']} / {where} ({result['episodes']} episodes)", ("metric", "value"),
                    cells)
    return llm_error_status(args, [result])


ONE_LINE_WARNINGS: tuple[type[Warning], ...] = (LLMErrorRateWarning, OtherEnvWarning)
"""the warnings ``eval`` and ``compare`` print as one line each: too many failed LLM requests, a model run on
another env id than it was trained on"""


def evaluate_with_one_line_warnings(args: argparse.Namespace, *pos: Any, **kwargs: Any) -> dict[str, Any]:
    """:func:`~harness_gym_baselines.evaluate.evaluate`, its warnings that a score is not what it seems
    (:data:`ONE_LINE_WARNINGS`) printed as one line ``harness-gym COMMAND: warning: ...`` each on stderr (other
    warnings are shown as they would be).

    :param args: the parsed command line (``command``)
    :param pos: positional arguments of ``evaluate``
    :param kwargs: keyword arguments of ``evaluate``
    """
    with warnings.catch_warnings(record=True) as caught:
        for category in ONE_LINE_WARNINGS:
            warnings.simplefilter("always", category)
        result = evaluate(*pos, **kwargs)
    for warning in caught:
        if issubclass(warning.category, ONE_LINE_WARNINGS):
            print(f"harness-gym {args.command}: warning: {warning.message}", file=sys.stderr)
        else:
            warnings.showwarning(warning.message, warning.category, warning.filename, warning.lineno)
    return result


def llm_error_status(args: argparse.Namespace, results: Sequence[dict[str, Any]]) -> int:
    """The exit status of ``eval`` / ``compare`` after the summary: 1, with one line on stderr naming the first
    policy over the limit, when a policy's ``llm_error_rate`` is above ``--max-llm-error-rate``, or, without
    that option, its ``llm_server_error_rate`` above
    :data:`~harness_gym_baselines.evaluate.LLM_SERVER_ERROR_RATE_LIMIT` (a server that stopped answering); else 0.

    :param args: the parsed command line (``max_llm_error_rate``)
    :param results: the printed summaries
    """
    limit = args.max_llm_error_rate
    if limit is not None:
        over = [r for r in results if r["llm_error_rate"] > limit]
        rule = f"above --max-llm-error-rate {limit:g}"
    else:
        over = [r for r in results if r.get("llm_server_error_rate", 0.0) > LLM_SERVER_ERROR_RATE_LIMIT]
        rule = (f"{100 * over[0]['llm_server_error_rate']:.1f}% for a fault of the server, above the default limit "
                f"{LLM_SERVER_ERROR_RATE_LIMIT:g} (--max-llm-error-rate X sets another; 1 accepts any)") if over else ""
    if not over:
        return 0
    print(f"harness-gym {args.command}: error: {llm_error_text(over[0])}; {rule}"
          + (f" ({len(over)} policies over it)" if len(over) > 1 else ""), file=sys.stderr)
    return 1


def row_labels(specs: Sequence[str]) -> list[str]:
    """Short row names that tell the compared policies apart: a registered name as it is, a path by the
    fewest trailing components that no other value shares (``a/models/awr.pt`` and ``b/models/awr.pt`` become
    ``a/models/awr.pt`` and ``b/models/awr.pt``; ``models/awr.pt`` and ``models/bc.pt`` become ``awr.pt`` and
    ``bc.pt``); a value given twice gets ``#2``, ``#3``.

    :param specs: the ``--policy`` values in order
    """
    parts = [Path(s).parts if Path(s).is_file() else (s,) for s in specs]
    labels = []
    for i, mine in enumerate(parts):
        for depth in range(1, len(mine) + 1):
            tail = mine[-depth:]
            if all(other[-depth:] != tail for j, other in enumerate(parts) if j != i and other != mine):
                break
        labels.append(str(Path(*tail)))
    seen: dict[str, int] = {}
    for i, label in enumerate(labels):
        seen[label] = seen.get(label, 0) + 1
        if seen[label] > 1:
            labels[i] = f"{label} #{seen[label]}"
    return labels


def cmd_compare(args: argparse.Namespace) -> int:
    kwargs = env_kwargs(args)
    policies = [load_policy_arg(p) for p in args.policy]
    pairs = recording_pairs(args)
    results = []
    for spec, policy in zip(args.policy, policies):
        try:
            result = evaluate_with_one_line_warnings(args, args.env_id, policy, episodes=episode_count(args),
                                                     split=args.split, seed=args.seed, env_kwargs=kwargs,
                                                     progress=args.progress and not args.json, pairs=pairs,
                                                     **scale_options(args))
        except CacheMissError as exc:
            if pairs is None:
                raise
            raise recording_miss(args, spec, exc) from exc
        results.append({**result, "policy": spec})
    if args.json:
        print(json.dumps(_clean(results), default=_json_default))
        return llm_error_status(args, results)
    title = (f"{args.env_id}, {args.split} split, {results[0]['episodes']} episodes, seed {args.seed} (same task "
             "sequence for every policy)" if pairs is None else
             f"{args.env_id}, the {len(pairs)} recorded (task, seed) pairs of {args.recording}")
    llm = kwargs.get("worker") == "openai"
    headers = ("#", "policy", "quality [95% CI]", "success", "HMS", "check before submit", "mean steps",
               "forced submit", "invalid actions", "cost", "return", *(("LLM errors",) if llm else ()))
    cells = []
    for i, (label, r) in enumerate(zip(row_labels(args.policy), results), start=1):
        lo, hi = r["quality_ci95"]
        cbs = r["patterns"]["check_before_submit"]
        llm_cell = (f"{r['llm_errors']}/{r['llm_calls']} {100 * r['llm_error_rate']:.0f}%"
                    + llm_faults_text(r["llm_faults"]).replace(": ", " ", 1),) if llm else ()
        cells.append((str(i), label, f"{r['quality_mean']:.3f} [{lo:.3f}, {hi:.3f}]", f"{r['success_rate']:.3f}",
                      f"{r['hms_mean']:.3f}", "n/a" if math.isnan(cbs) else f"{cbs:.3f}", f"{r['mean_steps']:.1f}",
                      f"{100 * r['forced_submit_rate']:.0f}%", f"{100 * r['invalid_action_rate']:.0f}%",
                      f"{r['cost_mean']:.2f}", f"{r['return_mean']:.3f}", *llm_cell))
    print_table(title, headers, cells, width=args.width, right=(0,))
    console = Console(width=args.width)
    for i, spec in enumerate(args.policy, start=1):  # the full values, never cut, whatever the width
        console.print(f"#{i}: {spec}", soft_wrap=True, markup=False, highlight=False)
    return llm_error_status(args, results)


def _draft_text(previous: str | None, content: str, *, version: int, mode: str) -> str:
    """What ``play`` prints after a DRAFT or REVISE: the whole draft, or a unified diff against the previous
    one (the first draft is always shown whole)."""
    if mode == "full" or previous is None:
        return f"draft v{version}:\n{content}"
    diff = list(difflib.unified_diff(previous.splitlines(), content.splitlines(), f"v{version - 1}", f"v{version}",
                                     lineterm="", n=1))
    return "\n".join(diff) if diff else f"draft v{version}: unchanged"


FALLBACKS: dict[str, str] = {"draft": "an empty draft", "revise": "an empty draft",
                             "tool": "a malformed tool call", "self_check": "a failed self-check",
                             "confidence": "the neutral confidence 0.5"}
"""what the LLM worker puts in place of a call that got no usable reply (docs/llm_worker.md)"""


def _fallback_note(faults: dict[str, int]) -> str:
    """`` -> fallback: ...`` naming what replaced each call of the step that got no usable reply, else ``""``."""
    used = [f"{FALLBACKS[call]} ({call})" for call in FALLBACKS if faults.get(f"{call}.fallback")]
    return f" -> fallback: {', '.join(used)}" if used else ""


def cmd_play(args: argparse.Namespace) -> int:
    console = Console(width=args.width)
    env = make_env(args.env_id, env_kwargs(args), render_mode="ansi")
    policy = load_policy_arg(args.policy)
    options: dict[str, Any] = {"split": args.split}
    if args.task_id:
        options["task_id"] = check_task_id(env, args.task_id)
    obs, info = env.reset(seed=args.seed, options=options)
    policy.reset(env, seed=args.seed)
    henv = env.unwrapped
    console.print(f"[bold]{args.env_id}[/bold] task [cyan]{info['task_id']}[/cyan] ({info['split']}), "
                  f"policy [green]{policy.name}[/green], seed {args.seed}")
    console.print(henv.task.prompt, markup=False, highlight=False)
    step, previous = 0, None
    while True:
        obs, reward, terminated, truncated, info = env.step(policy.act(obs, env))
        step += 1
        ev = info["evidence"]
        name = info["action_name"] + (" (no-op)" if info["invalid_action"] else "")
        console.print(f"[bold]{step:>3}[/bold] {name:<16} budget {info['budget_left']:>3}  evidence env "
                      f"{ev['env']:+.2f} cons {ev['consistency']:.2f} know {ev['knowledge']:+.0f} self "
                      f"{ev['self']:+.2f}", highlight=False)
        console.print(f"     {env.render() or ''}", markup=False, highlight=False)
        if info["cost"]["llm_errors"] or any(info["llm_faults"].values()):
            console.print(f"     LLM FAILURE: {info['cost']['llm_errors']} of {info['cost']['llm_calls']} requests "
                          f"failed{llm_faults_text(info['llm_faults'])}" + _fallback_note(info["llm_faults"]),
                          markup=False, highlight=False)
        draft = henv.context.draft
        if (info["action_name"] in ("DRAFT", "REVISE") and not info["invalid_action"] and draft is not None
                and args.drafts != "none"):
            console.print(_draft_text(previous, draft.content, version=draft.version, mode=args.drafts),
                          markup=False, highlight=False)
            previous = draft.content
        if terminated or truncated:
            break
    pats = ", ".join(f"{k}={'n/a' if math.isnan(v) else int(v)}" for k, v in info["patterns"].items())
    console.print(f"quality [bold]{info['quality']:.3f}[/bold]  success {info['success']}  "
                  f"HMS {info['hms']:.3f}  forced_submit {info['forced_submit']}\npatterns: {pats}")
    env.close()
    return 0


def cmd_collect(args: argparse.Namespace) -> int:
    from harness_gym.datasets import STEP_INFO_KEYS, SettingsMismatch, collect
    from harness_gym_baselines.policies.coverage import CoveragePolicy, record_components

    kwargs = env_kwargs(args)
    refs = (make_policy("random"), make_policy("oracle")) if args.ref_episodes > 0 else None
    policy = load_policy_arg(args.policy)
    try:
        dataset = collect(args.env_id, policy, args.out, episodes=args.episodes, seed=args.seed,
                          split=args.split, env_kwargs=kwargs, ref_policies=refs, ref_episodes=args.ref_episodes,
                          info_keys=None if "all" in args.info_key else (*STEP_INFO_KEYS, *args.info_key),
                          progress=args.progress and not args.json, **scale_options(args))
    except SettingsMismatch as exc:
        raise UsageError(f"--out {args.out}: {exc}") from None
    if isinstance(policy, CoveragePolicy):
        record_components(dataset, policy)
    meta = dataset.storage.metadata
    if args.json:
        print(json.dumps(_clean({"dataset_id": dataset.id, "episodes": dataset.total_episodes,
                                 "steps": dataset.total_steps, "ref_min_score": meta.get("ref_min_score"),
                                 "ref_max_score": meta.get("ref_max_score"),
                                 "cost_mean": meta.get("harness_gym", {}).get("cost_mean"),
                                 "return_mean": meta.get("harness_gym", {}).get("return_mean"),
                                 "path": str(dataset.storage.data_path)}), default=_json_default))
        return 0
    print(f"{dataset.id}: {dataset.total_episodes} episodes, {dataset.total_steps} steps, ref scores "
          f"{meta.get('ref_min_score')} (random) .. {meta.get('ref_max_score')} (oracle), "
          f"cost {meta.get('harness_gym', {}).get('cost_mean')} units/episode, "
          f"return {meta.get('harness_gym', {}).get('return_mean')}, "
          f"stored at {dataset.storage.data_path}")
    return 0


def cmd_frontier(args: argparse.Namespace) -> int:
    from harness_gym_baselines.experiments.frontier import (
        FIXED_POLICIES,
        frontier_rows,
        parse_cost_weights,
        parse_policy_spec,
        write_frontier,
    )

    try:
        weights = parse_cost_weights(args.cost_weights)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    specs = list(FIXED_POLICIES) + list(args.policy)
    for spec in args.policy:
        load_policy_arg(parse_policy_spec(spec)[1])  # a model file that does not load, said before any episode
    rows = frontier_rows(args.env_id, specs, weights, episodes=episode_count(args), split=args.split, seed=args.seed,
                         env_kwargs=env_kwargs(args), progress=args.progress and not args.json)
    paths = write_frontier(Path(args.out), args.env_id, rows, weights)
    if args.json:
        print(json.dumps(_clean(rows), default=_json_default))
    else:
        print(paths["md"].read_text())
        print(f"wrote {paths['png']}, {paths['json']}, {paths['md']}")
    return 0


def cmd_card(args: argparse.Namespace) -> int:
    from harness_gym_baselines.report import card

    env_ids = args.env_ids or list(harness_gym.ENV_IDS)
    unknown = [e for e in env_ids if e not in harness_gym.ENV_IDS]
    if unknown:
        raise UsageError(f"--env {unknown[0]}: not a registered env id ({', '.join(harness_gym.ENV_IDS)})")
    data, markdown, readme, figure = card.default_paths(Path(args.root))
    readme_path = None if args.no_readme else readme
    if args.check:
        if not data.is_file():
            raise UsageError(f"--check: no card at {data}; run harness-gym card first")
        stored = json.loads(data.read_text())
        problems = card.check(stored, env_ids, markdown=markdown, readme=readme_path, learned=args.check_learned,
                              num_workers=args.num_workers, progress=args.progress)
        for line in problems:
            print(line)
        print(f"{data}: {'differs from the run in ' + str(len(problems)) + ' place(s)' if problems else 'matches the run'}"
              f" ({', '.join(env_ids)})")
        return 1 if problems else 0
    cfg = card.CardConfig(episodes=args.episodes, seed=args.seed, learned_seeds=tuple(range(args.learned_seeds)))
    previous = json.loads(data.read_text()) if data.is_file() else None

    def keep(env_id: str, entry: dict[str, Any]) -> None:
        if not args.json:
            print(f"{env_id}: {entry['headroom']}", flush=True)

    fresh = card.measure(env_ids, cfg, learned=bool(cfg.learned_seeds), num_workers=args.num_workers,
                         progress=args.progress, on_env=keep)
    if previous is not None and previous.get("config") == fresh["config"] and set(env_ids) != set(previous["envs"]):
        fresh["envs"] = {e: fresh["envs"].get(e, previous["envs"].get(e)) for e in harness_gym.ENV_IDS
                         if e in fresh["envs"] or e in previous["envs"]}
    written = card.write(fresh, data=data, markdown=markdown, readme=readme_path, figure=figure)
    if args.json:
        print(json.dumps(_clean(fresh), default=_json_default))
    else:
        print(f"wrote {', '.join(map(str, written))}")
    return 0


def cmd_search_script(args: argparse.Namespace) -> int:
    from harness_gym_baselines.experiments.frontier import parse_cost_weights
    from harness_gym_baselines.experiments.script_search import COST_WEIGHTS, SearchConfig, search_to_file

    try:
        weights = tuple(parse_cost_weights(args.cost_weights)) if args.cost_weights else COST_WEIGHTS
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if args.num_workers < 1:
        raise UsageError(f"--num-workers must be >= 1, got {args.num_workers}")
    try:
        rounds = tuple((int(n), int(k)) for n, k in (part.split(":") for part in args.rounds.split(",")))
    except ValueError:
        raise UsageError(f"--rounds {args.rounds!r}: expected EPISODES:KEEP pairs separated by commas, "
                         "e.g. 16:48,48:12,128:4") from None
    if not rounds or any(n < 1 or k < 1 for n, k in rounds):
        raise UsageError(f"--rounds {args.rounds!r}: every EPISODES and KEEP must be >= 1")
    kwargs = command_env_kwargs(args, args.env_id)
    if "cost_weight" in kwargs:
        raise UsageError("--env-kwarg cost_weight=...: the search scores every weight of --cost-weights itself; "
                         "drop it")
    results = []
    for env_id in args.env_id:
        cfg = SearchConfig(env_id, cost_weights=weights, env_kwargs=kwargs, seed=args.seed, rounds=rounds,
                           val_episodes=args.val_episodes, test_episodes=args.test_episodes)
        results.append(search_to_file(cfg, args.out, num_workers=args.num_workers,
                                      progress=args.progress and not args.json))
    if args.json:
        print(json.dumps(results, default=_json_default))
        return 0
    for res in results:
        env_id = res["settings"]["env_id"]
        print(f"{env_id}: {res['candidates']} scripts searched on train/val in {res['seconds']:.0f} s; test split, "
              f"{res['settings']['test_episodes']} episodes")
        for w, won in res["winners"].items():
            test = res["test"][won["script"]]
            ret = test["return"][w]
            vs = test["minus"].get("forced-check", {}).get(w)
            versus = (f"; minus forced-check {vs['mean']:+.3f} [{vs['ci95'][0]:+.3f}, {vs['ci95'][1]:+.3f}]"
                      if vs else "")
            print(f"  w={w}: {won['script']}  return {ret['mean']:.3f} [{ret['ci95'][0]:.3f}, {ret['ci95'][1]:.3f}]"
                  f"  Q {test['quality_mean']:.3f}  cost {test['cost_mean']:.2f}  forced "
                  f"{100 * test['forced_submit_rate']:.0f}%{versus}")
    print(f"wrote {', '.join(str(Path(args.out) / (r['settings']['env_id'] + '.json')) for r in results)}")
    return 0


def cmd_merge_cache(args: argparse.Namespace) -> int:
    from harness_gym.workers.llm_cache import merge_caches

    report = merge_caches(args.dest, args.sources)
    if args.json:
        print(json.dumps({"dest": args.dest, **dataclasses.asdict(report)}))
        return 0
    print(f"{args.dest}: {report.added} entries added, {report.kept} already held, {report.replaced} failures "
          f"replaced, {report.conflicts} conflicting keys (the first outcome kept)")
    return 0


def train_parser(trainer_name: str) -> argparse.ArgumentParser:
    """The parser of ``harness-gym train NAME``: one flag per field of the trainer's config dataclass, then
    the shared option groups of :data:`COMMAND_OPTIONS` (an online trainer's are its env's).

    :param trainer_name: a key of :data:`harness_gym_baselines.common.trainer_registry.TRAINERS`
    """
    trainer = load_trainer(trainer_name)
    parser = OneLineErrorParser(prog=f"harness-gym train {trainer_name}", description=trainer.summary)
    add_dataclass_arguments(parser, trainer.config)
    fields = {f.name for f in dataclasses.fields(trainer.config)}
    groups = COMMAND_OPTIONS["train (online trainer)" if "env_id" in fields else "train (offline trainer)"]
    add_shared_options(parser, [g for g in groups if g != "cost-weight"], given=fields,
                       json_help="print the trained model's summary (file, run folder, losses, evaluation) as JSON")
    return parser


def _online_env_kwargs(ns: argparse.Namespace, cfg: Any) -> tuple[str, ...]:
    """An online trainer's ``env_kwargs`` with the ``env`` option group folded in (as ``KEY=JSON`` pairs),
    checked by making the env once with the config's ``cost_weight``, ``prices`` and ``budget_units``."""
    worker = ns.worker if ns.worker is not None or ns.recording is None else "openai"
    kwargs = parse_env_kwargs(cfg.env_kwargs, worker, ns.sandbox, worker_options(ns, [cfg.env_id]))
    refuse_config_keywords(kwargs)
    fixed = {key: getattr(cfg, key) for key in ONLINE_CONFIG_KEYWORDS}
    make_env(cfg.env_id, {**check_env_kwargs(cfg.env_id, kwargs), **fixed}).close()
    return tuple(f"{key}={json.dumps(value)}" for key, value in kwargs.items())


def cmd_train(args: argparse.Namespace) -> int:
    trainer = load_trainer(args.algo)
    ns = train_parser(args.algo).parse_args(args.options)
    cfg = config_from_args(trainer.config, ns)
    dataset_id = getattr(cfg, "dataset_id", None)  # offline trainers learn from a dataset, online ones from an env
    if dataset_id is not None:
        check_dataset(dataset_id)
    else:
        cfg = dataclasses.replace(cfg, env_kwargs=_online_env_kwargs(ns, cfg))
    try:
        policy = trainer.train(cfg)
    except ModuleNotFoundError as exc:
        if exc.name != "wandb":
            raise
        raise UsageError(str(exc)) from exc
    source = dataset_id or getattr(cfg, "env_id", None)
    report = getattr(policy, "report", None) or {}
    result = report.get("eval")
    if ns.json:
        print(json.dumps(_clean({"out": cfg.out, "policy": policy.name, "trained_on": source, "seed": cfg.seed,
                                 "run_dir": report.get("run_dir"), "losses": report.get("losses") or {},
                                 "eval": result}), default=_json_default))
        return 0
    print(f"wrote {cfg.out} ({policy.name}, trained on {source}, seed {cfg.seed})")
    if report.get("run_dir"):
        print(f"run: {report['run_dir']}")
    if report.get("losses"):
        print("final loss: " + ", ".join(f"{name} {value:.4f}" for name, value in report["losses"].items()))
    if result:
        lo, hi = result["quality_ci95"]
        print(f"evaluation ({result['split']} split, {result['episodes']} episodes, seed {cfg.seed}): quality "
              f"{result['quality_mean']:.3f} [{lo:.3f}, {hi:.3f}], success {result['success_rate']:.3f}, "
              f"HMS {result['hms_mean']:.3f}")
    return 0


def cmd_view(args: argparse.Namespace) -> int:
    from harness_gym_baselines.report.episode_view import episodes_page, load_run

    try:
        episodes = load_run(args.run, limit=args.limit)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(episodes_page(episodes, f"harness_gym episodes: {args.run}"))
    print(f"wrote {out} ({len(episodes)} episodes of {args.run})")
    return 0


def cmd_reproduce(args: argparse.Namespace) -> int:
    from harness_gym_baselines.experiments.frontier import parse_cost_weights

    try:
        weights = parse_cost_weights(args.cost_weights) if args.cost_weights else None
        for env_id in [*args.env, *args.envs]:
            check_env_id(env_id)
        manifest = reproduce(Path(args.out), quick=args.quick, env_ids=[*args.env, *args.envs] or None,
                             tau_data=args.tau_data, dbbench_data=args.dbbench_data, seeds=args.seeds,
                             size_overrides=args.size, cost_weights=weights, ppo_dense=args.ppo_dense,
                             argv=args.argv, progress=args.progress, quiet=args.json,
                             num_workers=args.num_workers)
    except (ValueError, FileNotFoundError) as exc:
        raise UsageError(str(exc)) from None
    if args.json:
        from harness_gym_baselines.report.reproduce import json_summary

        print(json.dumps(_clean(json_summary(Path(args.out), manifest)), default=_json_default))
    return 0


# ----- the options: types, the shared groups of COMMAND_OPTIONS, the parser --------------------------------
def policy_name(value: str) -> str:
    """``--policy`` values: a registered name, an open-loop script name, an existing model file or an importable
    ``module:callable`` (argparse ``type``; :func:`harness_gym_baselines.common.options.check_policy_value`
    says what is wrong with any other).

    :param value: what was given on the command line
    """
    if is_script_name(value):
        return value
    try:
        return check_policy_value(value, tuple(POLICIES))
    except UsageError as exc:
        raise argparse.ArgumentTypeError(f"{value!r}: {str(exc).removeprefix(f'--policy {value}: ')}") from None


def labelled_policy(value: str) -> str:
    """``frontier``'s ``--policy`` values: ``[LABEL[@W]=]POLICY`` with ``POLICY`` any value :func:`policy_name`
    accepts (argparse ``type``).

    :param value: what was given on the command line
    """
    from harness_gym_baselines.experiments.frontier import parse_policy_spec

    policy_name(parse_policy_spec(value)[1])
    return value


class DefaultsHelpFormatter(argparse.HelpFormatter):
    """Help that shows every option's default: ``(default: X)`` is appended where the text does not state one
    already; a flag without a value shows ``(default: off)``. An option whose default is ``None`` must say in
    its text what leaving it out means (``tests/test_cli_options.py`` checks every option)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if (not action.option_strings or "default" in text or action.required or action.default is None
                or action.default is argparse.SUPPRESS):
            return text
        if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
            shown = "off" if isinstance(action, argparse._StoreTrueAction) else "on"
        elif isinstance(action.default, (list, tuple)) and not action.default:
            shown = "none"
        else:
            shown = "%(default)s"
        return f"{text} (default: {shown})" if text else f"default: {shown}"


class OneLineErrorParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line (``PROG: error: MESSAGE (see PROG --help)``), exit 2,
    and whose help shows every default (:class:`DefaultsHelpFormatter`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", DefaultsHelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        choice = re.match(r"argument (\S+): invalid choice: '(.*?)' \(choose from (.*)\)$", message)
        if choice:
            message += closest(choice.group(2), re.findall(r"'([^']*)'", choice.group(3)))
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

    def parse_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                   namespace: argparse.Namespace | None = None) -> argparse.Namespace:
        """``ArgumentParser.parse_args``, with unrecognised arguments reported by the subcommand that got them
        and the closest flags of that subcommand suggested (``--episods``: did you mean ``--episodes``?)."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            parser: argparse.ArgumentParser = self
            for action in self._actions:
                if isinstance(action, argparse._SubParsersAction):
                    parser = action.choices.get(getattr(parsed, action.dest, None), self)
            flags = [flag for action in parser._actions for flag in action.option_strings]
            hints = "".join(closest(extra.split("=", 1)[0], flags) for extra in extras if extra.startswith("-"))
            parser.error(f"unrecognized arguments: {' '.join(extras)}{hints}")
        return parsed


def share_value(value: str) -> float:
    """``--max-llm-error-rate`` values: a number in [0, 1] (argparse ``type``).

    :param value: what was given on the command line
    """
    try:
        share = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r}: expected a share between 0 and 1, e.g. 0.05") from None
    if not 0.0 <= share <= 1.0:
        raise argparse.ArgumentTypeError(f"{value!r}: a share is between 0 and 1")
    return share


def _add_env_options(p: argparse.ArgumentParser, given: set[str]) -> None:
    if "env_kwargs" not in given:
        p.add_argument("--env-kwarg", action="append", default=[], metavar="KEY=VALUE",
                       help="constructor argument of the env, VALUE read as JSON when it parses (repeatable), "
                            "e.g. --env-kwarg budget=40 --env-kwarg data_dir=PATH")
    p.add_argument("--worker", default=None, choices=WORKER_NAMES,
                   help="the frozen LLM: simulated or openai, any OpenAI-compatible server (default: simulated; "
                        "openai with --recording)")
    p.add_argument("--sandbox", default=None, help="sandbox backend: process or docker (default: process)")
    if "prices" not in given:
        p.add_argument("--prices", default=None, type=prices_name, metavar="PROFILE",
                       help="price profile BASE[+OVERLAY...] (docs/cost.md; default: cheap-hosted): "
                            + ", ".join(price_profiles()))
    if "budget_units" not in given:
        p.add_argument("--budget-units", default=argparse.SUPPRESS, type=budget_units_value, metavar="auto|none|UNITS",
                       help="cost budget per episode in units of US$0.0001: auto (the default: twice the largest "
                            "episode cost of the reference controllers; none on the public-benchmark adapters, "
                            "docs/cost.md), none (no cost budget) or a number")
    p.add_argument("--recording", default=None, metavar="MANIFEST",
                   help="replay a recording of a real model's calls, e.g. envs_data/recordings/smollm2.json: "
                        "--worker openai with the recording's cache in replay mode and its model and sampling "
                        "settings (docs/llm_worker.md; default: none)")
    for key, flag, kind, text in WORKER_FLAGS:
        p.add_argument(flag, dest=key, type=kind, default=None, help=f"with --worker openai: {text}")


def _add_scale_options(p: argparse.ArgumentParser) -> None:
    """``--num-envs``, ``--parallel``, ``--backend``, ``--address``, ``--envs-per-actor`` (docs/scale_out.md)."""
    p.add_argument("--num-envs", type=int, default=1, metavar="N",
                   help="episodes played at once (default: 1, one after another); same results for any N "
                        "with the simulated worker")
    p.add_argument("--parallel", choices=PARALLEL_MODES, default=None,
                   help="processes or threads (default: threads for --worker openai, else processes)")
    p.add_argument("--backend", choices=BACKENDS, default="local",
                   help="local (this machine) or ray (a Ray cluster; needs the [ray] extra)")
    p.add_argument("--address", default=None, metavar="ADDR",
                   help="the Ray cluster to join, e.g. auto or ray://HOST:10001 (default: start Ray locally)")
    p.add_argument("--envs-per-actor", type=int, default=1, metavar="K",
                   help="with --backend ray: envs per actor, played in the actor's threads (for LLM workers)")


def scale_options(args: argparse.Namespace) -> dict[str, Any]:
    """The keywords of ``evaluate`` / ``collect`` that :func:`_add_scale_options` parsed, checked.

    :param args: the parsed command line
    """
    if args.num_envs < 1:
        raise UsageError(f"--num-envs must be >= 1, got {args.num_envs}")
    if args.envs_per_actor < 1:
        raise UsageError(f"--envs-per-actor must be >= 1, got {args.envs_per_actor}")
    if args.address is not None and args.backend != "ray":
        raise UsageError(f"--address {args.address} needs --backend ray")
    return {"num_envs": args.num_envs, "parallel": args.parallel, "backend": args.backend,
            "address": args.address, "envs_per_actor": args.envs_per_actor}


def add_shared_options(p: argparse.ArgumentParser, groups: Sequence[str], *, json_help: str = "",
                       policy: dict[str, Any] | None = None, given: set[str] | frozenset[str] = frozenset()) -> None:
    """Add the option groups of :data:`COMMAND_OPTIONS` to a command's parser, the same flags everywhere.

    :param p: the command's parser
    :param groups: its groups, e.g. ``COMMAND_OPTIONS["eval"]``
    :param json_help: the ``--json`` help (what the JSON holds)
    :param policy: ``default`` / ``help`` of a ``policy`` group that differ from the required ``--policy``
    :param given: destinations the command already has (a trainer's config fields), not added again
    """
    unknown = set(groups) - {"policy", "policies", "labelled-policies", "env", "cost-weight", "run", "scale",
                             "llm-errors", "progress", "json", "width"}
    if unknown:
        raise ValueError(f"unknown option group(s) {sorted(unknown)}")
    policy = policy or {}
    if "policy" in groups:
        p.add_argument("--policy", type=policy_name, default=policy.get("default"),
                       required="default" not in policy, help=policy.get("help", policy_help()))
    if "policies" in groups:
        p.add_argument("--policy", action="append", required=True, type=policy_name,
                       help=f"repeatable; {policy_help()}")
    if "labelled-policies" in groups:
        p.add_argument("--policy", action="append", default=[], type=labelled_policy,
                       metavar="[LABEL[@W]=]POLICY",
                       help="repeatable; added to static, forced-check, thorough, random and oracle: any --policy "
                            "value of harness-gym eval, optionally labelled, with @W the cost weight it was "
                            "trained at (models of one label trained at several weights are joined into a curve)")
    if "run" in groups:
        p.add_argument("--episodes", type=positive_int, default=None,
                       help=f"episodes per policy (default: {DEFAULT_EPISODES}); with --recording, every recorded "
                            "(task, seed) pair of the env unless given")
        p.add_argument("--split", default="test", choices=("train", "val", "test", "ood"), help="task split")
        p.add_argument("--seed", type=int, default=0,
                       help="episode i resets with seed * 1000003 + i: the same tasks for every policy")
    if "env" in groups:
        _add_env_options(p, set(given))
    if "cost-weight" in groups and "cost_weight" not in given:
        p.add_argument("--cost-weight", default=None, type=float, metavar="W",
                       help="reward = Q - W * cost units (default: 0)")
    if "scale" in groups:
        _add_scale_options(p)
    if "llm-errors" in groups:
        p.add_argument("--max-llm-error-rate", type=share_value, default=None, metavar="X",
                       help="exit 1 after the summary when more than this share (0..1) of the LLM worker's requests "
                            f"failed (default: exit 1 when more than {LLM_SERVER_ERROR_RATE_LIMIT:g} failed for a "
                            f"fault of the server, i.e. not counting unparseable replies; above "
                            f"{LLM_ERROR_RATE_WARNING:g} of any kind a warning on stderr)")
    if "width" in groups:
        p.add_argument("--width", type=positive_int, default=None,
                       help="columns of the output (default: the terminal's); long text wraps, nothing is cut")
    if "progress" in groups and "progress" not in given:
        p.add_argument("--no-progress", dest="progress", action="store_false",
                       help="draw no progress bars (for logs; default: bars on stderr)")
    if "json" in groups:
        p.add_argument("--json", action="store_true", help=json_help or "print the summary as JSON")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineErrorParser(prog="harness-gym", description=doc_summary(__doc__),
                                epilog="A mistake in the arguments is reported in one line with exit status 2; "
                                       "--debug (anywhere on the line) shows the traceback instead.")
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error")
    sub = parser.add_subparsers(dest="command", required=True)

    def command(name: str, help_text: str, func: Any, json_help: str = "", **kwargs: Any) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=kwargs.pop("description", help_text))
        p.set_defaults(func=func, _groups=COMMAND_OPTIONS[name], _json_help=json_help, _shared=kwargs)
        return p

    def shared(p: argparse.ArgumentParser) -> None:  # after the command's own options, so --help lists them first
        add_shared_options(p, p.get_default("_groups"), json_help=p.get_default("_json_help"),
                           **p.get_default("_shared"))

    p = command("list", "every env id with its domain and task counts per split", cmd_list,
                "print a JSON list, one object per env id")
    shared(p)

    p = command("calibrate", "fit the simulated worker's profile to recorded real-model episodes", cmd_calibrate,
                "print the fitted profile (with its intervals and held-out fit) as JSON")
    p.add_argument("env_id")
    p.add_argument("--recording", "--manifest", dest="manifest", default=None, metavar="MANIFEST",
                   help="recording manifest (JSON naming the cache file, worker settings and episodes, as --recording "
                        "of the other commands; default: the shipped SmolLM2 recording, "
                        "envs_data/recordings/smollm2.json)")
    p.add_argument("--profile", default=None, help="profile to start from (default: the domain's shipped one)")
    p.add_argument("--bootstrap", type=positive_int, default=200, help="bootstrap resamples for the intervals")
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap and the held-out split")
    p.add_argument("--out", required=True, help="where to write the fitted profile JSON")
    shared(p)

    p = command("doctor", "the sandbox isolation in force (bubblewrap, unshare, none; docker)", cmd_doctor,
                "print a JSON list, one report per backend")
    p.add_argument("--docker", action="store_true", help="also start the docker backend")
    p.add_argument("--require", action="store_true",
                   help="fail unless full isolation starts (as HG_REQUIRE_ISOLATION=1 does)")
    shared(p)

    p = command("eval", "evaluate a policy and print the summary", cmd_eval, "print the summary as one JSON object")
    p.add_argument("env_id")
    p.add_argument("--save-episodes", default=None, metavar="FILE",
                   help="also write every episode step by step (action, env feedback, draft, cost) to this JSON "
                        "file, for harness-gym view (default: none)")
    shared(p)

    p = command("compare", "evaluate several policies on the same episodes and print a table", cmd_compare,
                "print a JSON list of summaries, one per policy")
    p.add_argument("env_id")
    shared(p)

    p = command("frontier", "quality against cost of the fixed (and given) controllers over cost weights",
                cmd_frontier, "print the rows as a JSON list")
    p.add_argument("env_id")
    p.add_argument("--cost-weights", default="0,0.01,0.1", metavar="W,W,...",
                   help="comma-separated cost weights of the returns and iso-return lines")
    p.add_argument("--out", required=True, help="folder for frontier.png, frontier.json and frontier.md")
    shared(p)

    p = command("card", "the benchmark card: random, the named harnesses, the best fixed strategy, the upper "
                        "reference and a learned controller per env at the defaults (docs/benchmark_card.md)",
                cmd_card, "print the card's data as JSON")
    p.add_argument("--env", dest="env_ids", action="append", default=[], metavar="ENV_ID",
                   help="measure (or with --check, check) this env (repeatable; default: every registered env)")
    p.add_argument("--episodes", type=positive_int, default=300, help="test episodes per controller")
    p.add_argument("--seed", type=int, default=0, help="seed of the episodes, the search and the bootstrap")
    p.add_argument("--learned-seeds", type=int, default=2, metavar="N",
                   help="training seeds of the learned controller, 0..N-1 (0: no learned row)")
    p.add_argument("--num-workers", type=int, default=1, metavar="N", help="processes of the script search")
    p.add_argument("--root", default=".", help="the checkout whose docs/benchmark_card.{json,md} and README.md "
                                               "are written or checked")
    p.add_argument("--no-readme", action="store_true", help="leave README.md alone")
    p.add_argument("--check", action="store_true",
                   help="play the stored card's references again with its settings and compare every number, "
                        "and compare the README's and the markdown's cards with its rendering (exit 1 on a "
                        "difference)")
    p.add_argument("--check-learned", action="store_true", help="with --check, also train the learned rows again")
    shared(p)

    p = command("search-script", "the best open-loop script (the strongest fixed baseline) per cost weight: "
                                 "searched on train/val, judged on test", cmd_search_script,
                "print the results as a JSON list")
    p.add_argument("env_id", nargs="+", help="one or more registered env ids")
    p.add_argument("--cost-weights", default=None, metavar="W,W,...",
                   help="comma-separated weights w of the return Q - w * cost (default: 0,0.001,0.01,0.1)")
    p.add_argument("--seed", type=int, default=0, help="seed of the search's and the test's episodes")
    p.add_argument("--rounds", default="16:48,48:12,128:4", metavar="N:K,...",
                   help="successive halving on train: per round, episodes per script and how many to keep per "
                        "cost weight")
    p.add_argument("--val-episodes", type=positive_int, default=300, help="val episodes per finalist")
    p.add_argument("--episodes", "--test-episodes", dest="test_episodes", type=positive_int, default=500,
                   help="test episodes of the winners and the named scripts, the episodes the result is judged on "
                        "(as --episodes of eval and compare)")
    p.add_argument("--num-workers", type=int, default=1, metavar="N", help="processes playing scripts at once")
    p.add_argument("--out", default="results/scripts", help="results folder, one JSON per env")
    shared(p)

    p = command("play", "print a step-by-step trace of one episode", cmd_play,
                policy={"default": "forced-check", "help": policy_help()})
    p.add_argument("env_id")
    p.add_argument("--seed", type=int, default=0, help="reset seed (and the task drawn, unless --task-id)")
    p.add_argument("--split", default="test", choices=("train", "val", "test", "ood"), help="task split")
    p.add_argument("--task-id", default=None, help="play this task (default: one drawn from --split by --seed)")
    p.add_argument("--drafts", default="diff", choices=("diff", "full", "none"),
                   help="after each DRAFT / REVISE show the draft: the first in full, later ones as a diff "
                        "against the previous draft (diff), each in full, or not at all")
    shared(p)

    p = command("collect", "collect a rollout buffer as a Minari dataset (resumable)", cmd_collect,
                "print the dataset's summary (id, episodes, steps, reference scores, cost) as JSON",
                policy={"default": "behaviour", "help": f"the controller that acts; {policy_help()}"})
    p.add_argument("env_id")
    p.add_argument("--episodes", type=positive_int, required=True, help="episodes to collect")
    p.add_argument("--out", required=True, metavar="DATASET_ID", help="Minari id, e.g. harness/code-behaviour-v0")
    p.add_argument("--seed", type=int, default=0, help="episode i resets with seed * 1000003 + i")
    p.add_argument("--split", default="train", choices=("train", "val", "test", "ood"), help="task split")
    p.add_argument("--ref-episodes", type=int, default=100,
                   help="episodes of the random and oracle controllers for ref_min/max_score (0: none)")
    p.add_argument("--info-key", action="append", default=[], metavar="KEY",
                   help="also store this info key at every step (repeatable; 'all': every key). By default only "
                        "action_mask and invalid_action are stored per step, and each episode's outcome "
                        "(quality, success, hms, patterns, ...) once as episode metadata")
    shared(p)

    p = command("merge-cache", "merge LLM record/replay caches recorded on several nodes into one file",
                cmd_merge_cache, "print the counts (added, kept, replaced, conflicts) as JSON")
    p.add_argument("dest", help="the merged cache (created when missing)")
    p.add_argument("sources", nargs="+", help="cache files to merge in, in order (the first outcome of a key wins)")
    shared(p)

    p = command("train", f"train a controller ({' | '.join(TRAINERS)}): offline on a Minari dataset or online on "
                         "an env", cmd_train,
                description="harness-gym train NAME --help lists the flags of trainer NAME")
    p.add_argument("algo", choices=tuple(TRAINERS), metavar="NAME", help=f"the trainer: {', '.join(TRAINERS)}")
    p.add_argument("options", nargs=argparse.REMAINDER, help="the trainer's flags (from its config dataclass)")
    shared(p)

    p = command("view", "render the episodes of a dataset or an eval run step by step as HTML", cmd_view)
    p.add_argument("run", help="an episodes file (harness-gym eval --save-episodes) or a Minari dataset id or folder")
    p.add_argument("--out", required=True, help="the HTML file to write")
    p.add_argument("--limit", type=positive_int, default=50, help="at most this many episodes")
    shared(p)

    p = command("reproduce", "every table and figure of both papers, and report.html", cmd_reproduce,
                "print the run's summary (report, manifest, main table rows) as JSON instead of the text summary")
    p.add_argument("--out", required=True, help="output folder; rerun with the same folder to resume")
    p.add_argument("--quick", action="store_true",
                   help="small sizes: checks the pipeline, not the paper numbers (the README states its time)")
    p.add_argument("--envs", nargs="+", default=[], metavar="ENV",
                   help=f"the envs (default: every registered env; with --quick, {', '.join(QUICK_ENVS)})")
    p.add_argument("--env", action="append", default=[], help="one env (repeatable; same as --envs)")
    p.add_argument("--seeds", type=positive_int, default=None, help="seeds of every training (default: 5 / quick 2 "
                   "offline, 3 / quick 1 online)")
    p.add_argument("--cost-weights", default=None, metavar="W,W,...",
                   help="comma-separated cost weights of the frontier (default: 0,0.01,0.1)")
    p.add_argument("--size", action="append", default=[], metavar="FIELD=VALUE",
                   help="change one size (repeatable; fields of harness_gym_baselines.report.reproduce.Sizes, e.g. "
                        "online_steps=8192)")
    p.add_argument("--ppo-dense", action="store_true", help="also train ppo-dense for every env of the harness table")
    p.add_argument("--tau-data", default=None,
                   help="also run the τ-bench retail rows on this data folder (default: none)")
    p.add_argument("--dbbench-data", default=None, help="also run the DB-Bench rows on this JSONL file (default: none)")
    p.add_argument("--num-workers", type=positive_int, default=None, metavar="N",
                   help="stages run at once, each in its own process, once the stages it reads have finished; the "
                        "tables are the same for every N (default: min(2, CPU cores); 1: one after another in "
                        "this process)")
    shared(p)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``harness-gym``: a :class:`~harness_gym_baselines.common.options.UsageError` is printed as one line with exit status 2,
    any other error as one line with status 1; ``--debug`` (anywhere) raises it with its traceback.

    :param argv: the arguments (default ``sys.argv[1:]``)
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    argv = [a for a in argv if a != "--debug"]
    args = build_parser().parse_args(argv)
    args.argv = ["harness-gym", *argv]  # the command as given, for manifests
    try:
        for env_id in ([args.env_id] if isinstance(getattr(args, "env_id", None), str) else getattr(args, "env_id", [])):
            check_env_id(env_id)
        return int(args.func(args) or 0)
    except UsageError as exc:
        if debug:
            raise
        print(f"harness-gym {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:
        if debug:
            raise
        print(f"harness-gym {args.command}: error: {type(exc).__name__}: {exc} (rerun with --debug for the "
              "traceback)", file=sys.stderr)
        return 1


def run_trainer(name: str) -> NoReturn:
    """``python -m MODULE ARGS`` of a trainer's module: exit with ``harness-gym train NAME ARGS``.

    :param name: the trainer's name in :data:`harness_gym_baselines.common.trainer_registry.TRAINERS`
    """
    sys.exit(main(["train", name, *sys.argv[1:]]))


if __name__ == "__main__":
    sys.exit(main())
