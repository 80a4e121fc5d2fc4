"""The ``harness-gym`` command (DESIGN §9).

The env library never imports ``baselines``; this command line is the one place that does (lazily, per
command), because evaluating and training controllers is what it is for.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from typing import Any

import gymnasium as gym


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
    from rich.console import Console
    from rich.table import Table

    import harness_gym

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


def cmd_eval(args: argparse.Namespace) -> int:
    from baselines.evaluate import evaluate

    result = evaluate(args.env_id, args.policy, episodes=args.episodes, split=args.split, seed=args.seed,
                      env_kwargs=parse_env_kwargs(args.env_kwarg, args.worker, args.sandbox),
                      progress=not args.json)
    if args.json:
        print(json.dumps(_clean(result), default=_json_default))
    else:
        from rich.console import Console
        from rich.table import Table

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
    from rich.console import Console
    from rich.table import Table

    from baselines.evaluate import evaluate

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
    from rich.console import Console
    from rich.table import Table

    from baselines.policies import make_policy

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
    from baselines.policies import make_policy
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


def cmd_train(args: argparse.Namespace) -> int:
    if args.algo == "bc":
        from baselines.bc import BCConfig as Config
        from baselines.bc import train
    else:
        from baselines.awr import AWRConfig as Config  # type: ignore[assignment]
        from baselines.awr import train  # type: ignore[assignment]
    given = {k: v for k, v in vars(args).items() if v is not None}
    options = {f: given[f] for f in Config.__dataclass_fields__ if f in given}
    if "hidden_sizes" in options:
        options["hidden_sizes"] = tuple(options["hidden_sizes"])
    if args.algo == "bc" and given.keys() & {"beta", "weight_max", "advantage"}:
        raise SystemExit("--beta, --weight-max and --advantage apply to awr only")
    cfg = Config(dataset_id=args.dataset, **options)
    policy = train(cfg)
    print(f"wrote {cfg.out} ({policy.name}, trained on {cfg.dataset_id}, seed {cfg.seed})")
    return 0


def cmd_reproduce(args: argparse.Namespace) -> int:
    from pathlib import Path

    from baselines.reproduce import reproduce

    reproduce(Path(args.out), quick=args.quick, env_ids=args.env or None, tau_data=args.tau_data,
              dbbench_data=args.dbbench_data)
    return 0


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

    p = sub.add_parser("eval", help="evaluate a policy and print the summary")
    p.add_argument("env_id")
    p.add_argument("--policy", required=True, help="random | static | forced-check | oracle | MODEL_FILE")
    _add_run_options(p, "print one JSON object (DESIGN §9)")
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("compare", help="evaluate several policies on the same episodes and print a table")
    p.add_argument("env_id")
    p.add_argument("--policy", action="append", required=True, help="repeatable; names or model files")
    _add_run_options(p, "print a JSON list of DESIGN §9 objects")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("play", help="print a step-by-step trace of one episode")
    p.add_argument("env_id")
    p.add_argument("--policy", default="forced-check")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--split", default="test", choices=("train", "val", "test", "ood"))
    p.add_argument("--task-id", default=None)
    _add_env_options(p)
    p.set_defaults(func=cmd_play)

    p = sub.add_parser("collect", help="collect a rollout buffer as a Minari dataset (resumable)")
    p.add_argument("env_id")
    p.add_argument("--policy", default="behaviour", help="controller that acts (default: behaviour)")
    p.add_argument("--episodes", type=int, required=True)
    p.add_argument("--out", required=True, metavar="DATASET_ID", help="Minari id, e.g. harness/code-behaviour-v0")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--split", default="train", choices=("train", "val", "test", "ood"))
    p.add_argument("--ref-episodes", type=int, default=100,
                   help="episodes of the random and oracle controllers for ref_min/max_score (0: none)")
    _add_env_options(p)
    p.set_defaults(func=cmd_collect)

    p = sub.add_parser("train", help="train an offline controller (bc | awr) on a Minari dataset")
    p.add_argument("algo", choices=("bc", "awr"))
    p.add_argument("--dataset", required=True, metavar="DATASET_ID")
    p.add_argument("--out", required=True, metavar="FILE", help="model file to write (.pt)")
    p.add_argument("--seed", type=int)
    p.add_argument("--epochs", type=int)
    p.add_argument("--batch-size", type=int)
    p.add_argument("--learning-rate", type=float)
    p.add_argument("--hidden-sizes", type=int, nargs="+")
    p.add_argument("--beta", type=float, help="awr: temperature of exp(A / beta) ('inf': behaviour cloning)")
    p.add_argument("--weight-max", type=float, help="awr: clip of the advantage weights")
    p.add_argument("--advantage", choices=("mc", "q"), help="awr: advantage estimator, G - V(s) or Q(s, a) - V(s)")
    p.add_argument("--eval-episodes", type=int, help="episodes of the final evaluation on --eval-split")
    p.add_argument("--eval-split", choices=("train", "val", "test", "ood"))
    p.add_argument("--log-dir", help="TensorBoard folder (default: runs)")
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
    import harness_gym  # noqa: F401  (registers the env ids)

    args = build_parser().parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
