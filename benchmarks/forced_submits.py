"""Forced-submit rates of the named and the searched scripts, with the default cost budget and without one.

    python benchmarks/forced_submits.py [ENV ...] [--scripts results/headroom/scripts] [--episodes 300]
        [--prices PROFILE] [--json OUT.json]

For every env: static, forced-check, thorough and the searched winners found by ``harness-gym search-script`` (read
from ``--scripts``, one JSON per env; envs without one get the named scripts only), each played on the same
seeded test episodes twice, with ``budget_units="auto"`` (the default rule, docs/cost.md) and with
``budget_units=None`` (the step budget alone). Prints per row the forced-submit rate, Q and mean cost under both,
so the table shows where the budget binds and what it costs a script in quality.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np

import harness_gym
from harness_gym.running.rollout import episode_seed
from harness_gym_baselines.experiments.script_search import NAMED_SCRIPTS, play_outcomes
from harness_gym_baselines.policies.registry import make_policy


def scripts_of(env_id: str, folder: Path) -> list[str]:
    """The named scripts and the searched winners of ``env_id`` (every cost weight's, once each)."""
    path = folder / f"{env_id}.json"
    searched = []
    if path.is_file():
        searched = sorted({w["script"] for w in json.loads(path.read_text())["winners"].values()})
    return [*NAMED_SCRIPTS, *searched]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("env_id", nargs="*", help="registered env ids (default: all)")
    parser.add_argument("--scripts", type=Path, default=Path("results/headroom/scripts"),
                        help="folder of search-script results (default results/headroom/scripts)")
    parser.add_argument("--episodes", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--prices", default=None, help="price profile (default: the env's default)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    unknown = [e for e in args.env_id if e not in harness_gym.ENV_IDS]
    if unknown:
        parser.error(f"unknown env id(s) {unknown}; registered: {', '.join(harness_gym.ENV_IDS)}")
    seeds = [episode_seed(args.seed, i) for i in range(args.episodes)]
    rows = []
    print("| env | script | searched | forced % (auto budget) | Q (auto) | cost (auto) | forced % (no budget) | "
          "Q (none) | cost (none) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for env_id in args.env_id or harness_gym.ENV_IDS:
        extra = {} if args.prices is None else {"prices": args.prices}
        envs = {b: gym.make(env_id, budget_units=b, **extra) for b in ("auto", None)}
        try:
            for name in scripts_of(env_id, args.scripts):
                got = {str(b): play_outcomes(env, make_policy(name), seeds, "test") for b, env in envs.items()}
                row = {"env_id": env_id, "script": name, "searched": name not in NAMED_SCRIPTS,
                       **{f"{k}_{b}": float(np.mean(out[:, i])) for b, out in got.items()
                          for i, k in enumerate(("quality", "cost", "forced_submit_rate"))}}
                rows.append(row)
                print(f"| {env_id} | `{name}` | {'yes' if row['searched'] else ''} | "
                      f"{100 * row['forced_submit_rate_auto']:.1f} | {row['quality_auto']:.3f} | {row['cost_auto']:.2f} | "
                      f"{100 * row['forced_submit_rate_None']:.1f} | {row['quality_None']:.3f} | "
                      f"{row['cost_None']:.2f} |", flush=True)
        finally:
            for env in envs.values():
                env.close()
    print(f"\n{args.episodes} test episodes per row (seed {args.seed}), the same for every script and budget.")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
