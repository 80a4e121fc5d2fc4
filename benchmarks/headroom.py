"""Headroom per env: the best searched open-loop script, a closed-loop probe that reads only the observation,
the hidden-state references, and closed-loop minus open-loop with a paired CI
(:mod:`harness_gym_baselines.experiments.headroom`).

    python benchmarks/headroom.py [ENV ...] [--prices cheap-hosted] [--cost-weight 0.001 ...]
        [--episodes 500] [--num-workers 2] [--out results/headroom]

Prints the Markdown table (and writes it with one JSON per env under ``--out``; finished envs are reused, so an
interrupted run resumes). Without env ids: every registered env.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import harness_gym
from harness_gym_baselines.experiments.headroom import (
    HEADROOM_WEIGHTS,
    HeadroomConfig,
    headroom_table,
    headroom_to_file,
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("env_id", nargs="*", help="registered env ids (default: all)")
    parser.add_argument("--prices", default=None, help="price profile name (default: the env's default profile)")
    parser.add_argument("--budget-units", default=None, help="the env's budget_units (default: the env's default)")
    parser.add_argument("--cost-weight", type=float, action="append", default=[], metavar="W",
                        help=f"repeatable (default {', '.join(map(str, HEADROOM_WEIGHTS))})")
    parser.add_argument("--episodes", type=int, default=500, help="test episodes per row (default 500)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--num-workers", type=int, default=2)
    parser.add_argument("--out", default="results/headroom")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    unknown = [e for e in args.env_id if e not in harness_gym.ENV_IDS]
    if unknown:
        parser.error(f"unknown env id(s) {unknown}; registered: {', '.join(harness_gym.ENV_IDS)}")
    env_kwargs: dict = {}
    if args.prices is not None:
        env_kwargs["prices"] = args.prices
    if args.budget_units is not None:
        env_kwargs["budget_units"] = None if args.budget_units == "none" else (
            args.budget_units if args.budget_units == "auto" else float(args.budget_units))
    weights = tuple(args.cost_weight) or HEADROOM_WEIGHTS
    results = []
    start = time.perf_counter()
    for env_id in args.env_id or harness_gym.ENV_IDS:
        cfg = HeadroomConfig(env_id, cost_weights=weights, env_kwargs=env_kwargs, seed=args.seed,
                             test_episodes=args.episodes)
        results.append(headroom_to_file(cfg, args.out, num_workers=args.num_workers, progress=not args.no_progress))
    table = headroom_table(results, profile=args.prices or "default")
    out = Path(args.out)
    (out / "headroom.md").write_text(table)
    (out / "headroom.json").write_text(json.dumps(results, indent=1) + "\n")
    print(table)
    print(f"({time.perf_counter() - start:.0f} s; wrote {out / 'headroom.md'} and {out / 'headroom.json'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
