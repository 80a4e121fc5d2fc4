"""``harness-gym reproduce`` and ``calibrate``: the papers' tables and figures, and the simulated worker's profile
fitted to recorded real-model episodes.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import gymnasium as gym

from harness_gym.core.paths import data_path
from harness_gym.workers import WorkerProfile
from harness_gym.workers.calibrate import collect_events, default_profile, fit_profile, not_estimated_reason
from harness_gym_baselines.cli.options import (
    Subparsers,
    add_command,
    add_shared,
)
from harness_gym_baselines.cli.output import clean_json, json_default, print_table
from harness_gym_baselines.common.options import (
    UsageError,
    check_env_id,
    positive_int,
    recorded_env_kwargs,
)
from harness_gym_baselines.report.reproduce import QUICK_ENVS, reproduce


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
    env = gym.make(args.env_id, worker="openai", cache=str(cache), cache_mode="replay", **manifest["worker"],
                   **recorded_env_kwargs(manifest, args.env_id, str(manifest_path)))
    domain = env.unwrapped.domain.name
    default = WorkerProfile.load(args.profile) if args.profile else default_profile(env)
    try:
        fit = fit_profile(collect_events(env, episodes), default, n_boot=args.bootstrap, seed=args.seed)
    finally:
        env.close()
    source = f"{len(episodes)} recorded {manifest['worker'].get('model', 'model')} episodes ({manifest_path.name})"
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(fit.to_json(domain, source), indent=1) + "\n")
    if args.json:
        print(json.dumps(clean_json({"out": str(out), **fit.to_json(domain, source)}), default=json_default))
        return 0
    fitted = vars(fit.profile)
    cells = []
    for name, value in vars(fit.default).items():
        ci = fit.ci95[name]
        cells.append((name, f"{value:.3f}", f"{fitted[name]:.3f}",
                      f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else f"not estimated: {not_estimated_reason(name)}"))
    print_table(f"{domain} profile fitted to {source}", ("parameter", "default", "fitted", "95% CI"), cells)
    print(f"events: {fit.events}; held-out log-likelihood per event: fitted {fit.heldout_loglik:.3f}, "
          f"default {fit.heldout_loglik_default:.3f} ({fit.heldout_events} events)")
    print(f"wrote {out} (use it with --env-kwarg profile={out})")
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

        print(json.dumps(clean_json(json_summary(Path(args.out), manifest)), default=json_default))
    return 0


def add_calibrate(sub: Subparsers) -> None:
    """The parser of ``harness-gym calibrate``."""
    p = add_command(sub, "calibrate", "fit the simulated worker's profile to recorded real-model episodes",
                    cmd_calibrate, "print the fitted profile (with its intervals and held-out fit) as JSON")
    p.add_argument("env_id")
    p.add_argument("--recording", "--manifest", dest="manifest", default=None, metavar="MANIFEST",
                   help="recording manifest (JSON naming the cache file, worker settings and episodes, as --recording "
                        "of the other commands; default: the shipped SmolLM2 recording, "
                        "envs_data/recordings/smollm2.json)")
    p.add_argument("--profile", default=None, help="profile to start from (default: the env id's own, e.g. the v2 "
                   "profile set for a -v2 id)")
    p.add_argument("--bootstrap", type=positive_int, default=200, help="bootstrap resamples for the intervals")
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap and the held-out split")
    p.add_argument("--out", required=True, help="where to write the fitted profile JSON")
    add_shared(p)


def add_reproduce(sub: Subparsers) -> None:
    """The parser of ``harness-gym reproduce``."""
    p = add_command(sub, "reproduce", "every table and figure of both papers, and report.html", cmd_reproduce,
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
    add_shared(p)
