"""The harness-gym command: evaluate, compare, trace, collect, train and reproduce harness controllers.

``list`` the envs, ``eval`` / ``compare`` / ``play`` controllers, ``collect`` offline datasets, ``train``
offline controllers and ``reproduce`` the paper tables.

It lives in ``baselines`` because it uses both layers: the env library (``harness_gym``, which never imports
``baselines``) and the controllers, trainers and experiments here. Heavy modules (torch, Minari) are imported
by the command that needs them. The policy names come from :mod:`baselines.registry`, the trainers and their
flags from :mod:`baselines.trainers`.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
from rich.console import Console
from rich.table import Table

import harness_gym
from baselines.dataclass_args import add_dataclass_arguments, config_from_args
from baselines.evaluate import evaluate
from baselines.registry import POLICIES, make_policy, policy_help
from baselines.reproduce import reproduce
from baselines.trainers import TRAINERS, load_trainer


def parse_env_kwargs(pairs: Sequence[str], worker: str | None, sandbox: str | None) -> dict[str, Any]:
    """``KEY=VALUE`` pairs to constructor kwargs; VALUE is parsed as JSON when it parses, else kept as text."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise SystemExit(f"--env-kwarg expects KEY=VALUE, got {pair!r}")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    if worker is not None:
        out["worker"] = worker
    if sandbox is not None:
        out["sandbox"] = sandbox
    return out


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


def cmd_list(args: argparse.Namespace) -> int:
    table = Table(title="harness_gym environments")
    for col in ("env id", "domain", "train", "val", "test", "ood", "total"):
        table.add_column(col)
    rows = []
    for env_id in harness_gym.ENV_IDS:
        try:
            env = gym.make(env_id)
        except Exception as exc:  # an adapter may need data the user has not given
            rows.append({"env_id": env_id, "error": f"{type(exc).__name__}: {exc}"})
            table.add_row(env_id, f"[red]{type(exc).__name__}: {exc}[/red]", "", "", "", "", "")
            continue
        domain = env.unwrapped.domain
        counts = domain.counts()
        env.close()
        rows.append({"env_id": env_id, "domain": domain.name, **counts, "total": sum(counts.values())})
        table.add_row(env_id, domain.name, *(str(counts[s]) for s in ("train", "val", "test", "ood")),
                      str(sum(counts.values())))
    if args.json:
        print(json.dumps(rows))
    else:
        Console().print(table)
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
    result = evaluate(args.env_id, args.policy, episodes=args.episodes, split=args.split, seed=args.seed,
                      env_kwargs=parse_env_kwargs(args.env_kwarg, args.worker, args.sandbox),
                      progress=not args.json)
    if args.json:
        print(json.dumps(_clean(result), default=_json_default))
    else:
        table = Table(title=f"{args.env_id} / {result['policy']} / {args.split} ({result['episodes']} episodes)")
        table.add_column("metric")
        table.add_column("value")
        lo, hi = result["quality_ci95"]
        table.add_row("quality", f"{result['quality_mean']:.3f} [{lo:.3f}, {hi:.3f}]")
        for key in ("success_rate", "hms_mean", "mean_steps", "invalid_action_rate", "seconds"):
            table.add_row(key, f"{result[key]:.3f}")
        for name, rate in result["patterns"].items():
            table.add_row(f"pattern {name}", "n/a" if math.isnan(rate) else f"{rate:.3f}")
        Console().print(table)
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    kwargs = parse_env_kwargs(args.env_kwarg, args.worker, args.sandbox)
    results = [evaluate(args.env_id, p, episodes=args.episodes, split=args.split, seed=args.seed,
                        env_kwargs=kwargs, progress=not args.json) for p in args.policy]
    if args.json:
        print(json.dumps(_clean(results), default=_json_default))
        return 0
    table = Table(title=f"{args.env_id}, {args.split} split, {args.episodes} episodes, seed {args.seed} "
                        "(same task sequence for every policy)")
    for col in ("policy", "quality [95% CI]", "success", "HMS", "check_before_submit", "mean steps"):
        table.add_column(col)
    for r in results:
        lo, hi = r["quality_ci95"]
        cbs = r["patterns"]["check_before_submit"]
        table.add_row(r["policy"], f"{r['quality_mean']:.3f} [{lo:.3f}, {hi:.3f}]", f"{r['success_rate']:.3f}",
                      f"{r['hms_mean']:.3f}", "n/a" if math.isnan(cbs) else f"{cbs:.3f}", f"{r['mean_steps']:.1f}")
    Console().print(table)
    return 0


def cmd_play(args: argparse.Namespace) -> int:
    console = Console()
    env = gym.make(args.env_id, render_mode="ansi", **parse_env_kwargs(args.env_kwarg, args.worker, args.sandbox))
    policy = make_policy(args.policy)
    options: dict[str, Any] = {"split": args.split}
    if args.task_id:
        options["task_id"] = args.task_id
    obs, info = env.reset(seed=args.seed, options=options)
    policy.reset(env, seed=args.seed)
    console.print(f"[bold]{args.env_id}[/bold] task [cyan]{info['task_id']}[/cyan] ({info['split']}), "
                  f"policy [green]{policy.name}[/green], seed {args.seed}")
    console.print(env.render())
    table = Table()
    for col in ("step", "action", "budget left", "evidence (env/cons/know/self)", "what happened"):
        table.add_column(col)
    step = 0
    while True:
        obs, reward, terminated, truncated, info = env.step(policy.act(obs, env))
        step += 1
        ev = info["evidence"]
        name = info["action_name"] + (" [red](no-op)[/red]" if info["invalid_action"] else "")
        table.add_row(str(step), name, str(info["budget_left"]),
                      f"{ev['env']:+.2f} / {ev['consistency']:.2f} / {ev['knowledge']:+.0f} / {ev['self']:+.2f}",
                      env.render() or "")
        if terminated or truncated:
            break
    console.print(table)
    pats = ", ".join(f"{k}={'n/a' if math.isnan(v) else int(v)}" for k, v in info["patterns"].items())
    console.print(f"quality [bold]{info['quality']:.3f}[/bold]  success {info['success']}  "
                  f"HMS {info['hms']:.3f}  forced_submit {info['forced_submit']}\npatterns: {pats}")
    env.close()
    return 0


def cmd_collect(args: argparse.Namespace) -> int:
    from harness_gym.datasets import collect

    refs = (make_policy("random"), make_policy("oracle")) if args.ref_episodes > 0 else None
    dataset = collect(args.env_id, make_policy(args.policy), args.out, episodes=args.episodes, seed=args.seed,
                      split=args.split, env_kwargs=parse_env_kwargs(args.env_kwarg, args.worker, args.sandbox),
                      ref_policies=refs, ref_episodes=args.ref_episodes)
    meta = dataset.storage.metadata
    print(f"{dataset.id}: {dataset.total_episodes} episodes, {dataset.total_steps} steps, ref scores "
          f"{meta.get('ref_min_score')} (random) .. {meta.get('ref_max_score')} (oracle), "
          f"stored at {dataset.storage.data_path}")
    return 0


def train_parser(trainer_name: str) -> argparse.ArgumentParser:
    """The parser of ``harness-gym train NAME``: one flag per field of the trainer's ``Config``.

    :param trainer_name: a key of :data:`baselines.trainers.TRAINERS`
    """
    trainer = load_trainer(trainer_name)
    parser = argparse.ArgumentParser(prog=f"harness-gym train {trainer_name}", description=trainer.summary)
    add_dataclass_arguments(parser, trainer.config)
    return parser


def cmd_train(args: argparse.Namespace) -> int:
    trainer = load_trainer(args.algo)
    cfg = config_from_args(trainer.config, train_parser(args.algo).parse_args(args.options))
    policy = trainer.train(cfg)
    print(f"wrote {cfg.out} ({policy.name}, trained on {cfg.dataset_id}, seed {cfg.seed})")
    return 0


def cmd_reproduce(args: argparse.Namespace) -> int:
    reproduce(Path(args.out), quick=args.quick, env_ids=args.env or None, tau_data=args.tau_data,
              dbbench_data=args.dbbench_data)
    return 0


def policy_name(value: str) -> str:
    """``--policy`` values: a registered name or an existing model file (argparse ``type``).

    :param value: what was given on the command line
    """
    if value in POLICIES or Path(value).is_file():
        return value
    raise argparse.ArgumentTypeError(f"{value!r} is neither a registered policy ({', '.join(POLICIES)}) "
                                     "nor an existing model file")


def _add_env_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--env-kwarg", action="append", default=[], metavar="KEY=VALUE",
                   help="constructor argument for the env (repeatable), e.g. data_dir=PATH")
    p.add_argument("--worker", default=None, help="worker name (default: the env's, 'simulated')")
    p.add_argument("--sandbox", default=None, help="sandbox backend: process (default) or docker")


def _add_run_options(p: argparse.ArgumentParser, json_help: str) -> None:
    p.add_argument("--episodes", type=int, default=100)
    p.add_argument("--split", default="test", choices=("train", "val", "test", "ood"))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true", help=json_help)
    _add_env_options(p)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="harness-gym", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("list", help="every env id with its domain and task counts per split")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("doctor", help="the sandbox isolation in force (bubblewrap, unshare, none; docker)")
    p.add_argument("--docker", action="store_true", help="also start the docker backend")
    p.add_argument("--require", action="store_true",
                   help="fail unless full isolation starts (as HG_REQUIRE_ISOLATION=1 does)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_doctor)

    p = sub.add_parser("eval", help="evaluate a policy and print the summary")
    p.add_argument("env_id")
    p.add_argument("--policy", required=True, type=policy_name, help=policy_help())
    _add_run_options(p, "print the summary as one JSON object")
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("compare", help="evaluate several policies on the same episodes and print a table")
    p.add_argument("env_id")
    p.add_argument("--policy", action="append", required=True, type=policy_name,
                   help=f"repeatable; {policy_help()}")
    _add_run_options(p, "print a JSON list of summaries, one per policy")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("play", help="print a step-by-step trace of one episode")
    p.add_argument("env_id")
    p.add_argument("--policy", default="forced-check", type=policy_name, help=policy_help())
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--split", default="test", choices=("train", "val", "test", "ood"))
    p.add_argument("--task-id", default=None)
    _add_env_options(p)
    p.set_defaults(func=cmd_play)

    p = sub.add_parser("collect", help="collect a rollout buffer as a Minari dataset (resumable)")
    p.add_argument("env_id")
    p.add_argument("--policy", default="behaviour", type=policy_name,
                   help=f"the controller that acts (default: behaviour); {policy_help()}")
    p.add_argument("--episodes", type=int, required=True)
    p.add_argument("--out", required=True, metavar="DATASET_ID", help="Minari id, e.g. harness/code-behaviour-v0")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--split", default="train", choices=("train", "val", "test", "ood"))
    p.add_argument("--ref-episodes", type=int, default=100,
                   help="episodes of the random and oracle controllers for ref_min/max_score (0: none)")
    _add_env_options(p)
    p.set_defaults(func=cmd_collect)

    p = sub.add_parser("train", help=f"train an offline controller ({' | '.join(TRAINERS)}) on a Minari dataset",
                       description="harness-gym train NAME --help lists the flags of trainer NAME")
    p.add_argument("algo", choices=tuple(TRAINERS), metavar="NAME", help=f"the trainer: {', '.join(TRAINERS)}")
    p.add_argument("options", nargs=argparse.REMAINDER, help="the trainer's flags (from its Config dataclass)")
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("reproduce", help="the paper tables (Markdown, CSV) and figures (PNG)")
    p.add_argument("--out", required=True, help="output folder; rerun with the same folder to resume")
    p.add_argument("--quick", action="store_true", help="small sizes: checks the pipeline, not the paper numbers")
    p.add_argument("--env", action="append", default=[], help="repeatable; default every registered env")
    p.add_argument("--tau-data", default=None, help="also evaluate the reference harnesses on this τ-bench data")
    p.add_argument("--dbbench-data", default=None, help="also evaluate them on this DB-Bench JSONL file")
    p.set_defaults(func=cmd_reproduce)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
