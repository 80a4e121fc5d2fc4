"""Static, forced-CHECK, thorough, random and oracle harnesses on every registered env (and on the public data where given).

    python -m harness_gym_baselines.experiments.reference_scores --out results/reference_policies [--episodes 300]
        [--tau-data ../shared/data/tau2-retail] [--dbbench-data ../shared/data/dbbench/standard.jsonl]

Writes ``reference_policies.json`` (one evaluation summary of :mod:`harness_gym_baselines.evaluate` per row) and
``reference_policies.md`` (a table with 95% bootstrap CIs) under ``--out``; every policy sees the same task
sequence (seeded resets). Finished rows are kept in the JSON file and skipped on a rerun, so an interrupted run
resumes.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

from tqdm import tqdm

import harness_gym
from harness_gym_baselines.common.dataclass_flags import doc_summary
from harness_gym_baselines.evaluate import evaluate

POLICIES = ("static", "forced-check", "thorough", "random", "oracle")
COST_WEIGHTS = (0.01, 0.1)
"""The positive cost weights whose returns the table reports beside the quality (docs/cost_results.md)."""


def runs(args: argparse.Namespace) -> list[tuple[str, str, dict[str, Any], int]]:
    """(label, env id, env kwargs, episodes) for every row of the table."""
    out = []
    for env_id in args.env_ids or harness_gym.ENV_IDS:
        episodes = args.code_episodes if env_id == "HarnessCode-v1" else args.episodes
        out.append((env_id, env_id, {}, episodes))
    if args.tau_data:
        out.append(("HarnessTauRetail-v1 (tau2 data)", "HarnessTauRetail-v1", {"data_dir": args.tau_data},
                    args.episodes))
    if args.dbbench_data:
        out.append(("HarnessDBBench-v1 (standard.jsonl)", "HarnessDBBench-v1", {"data_path": args.dbbench_data},
                    args.episodes))
    return out


def fmt(value: float) -> str:
    return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.3f}"


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    """Run (or resume) the table; returns its rows."""
    ap = argparse.ArgumentParser(description=doc_summary(__doc__))
    ap.add_argument("--out", type=Path, default=Path("results/reference_policies"))
    ap.add_argument("--episodes", type=int, default=300)
    ap.add_argument("--code-episodes", type=int, default=500)
    ap.add_argument("--split", default="test")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tau-data", default=None)
    ap.add_argument("--dbbench-data", default=None)
    ap.add_argument("--env", action="append", dest="env_ids", default=None,
                    help="repeatable; default every registered env id")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "reference_policies.json"
    done: dict[str, dict[str, Any]] = json.loads(path.read_text()) if path.exists() else {}
    cells = [(label, env_id, kw, n, pol) for label, env_id, kw, n in runs(args) for pol in POLICIES]
    for label, env_id, kwargs, episodes, policy in tqdm(cells, desc="reference policies", disable=args.quiet):
        key = f"{label}|{policy}|{args.split}|{episodes}|{args.seed}"
        if key in done:
            continue
        result = evaluate(env_id, policy, episodes=episodes, split=args.split, seed=args.seed, env_kwargs=kwargs)
        done[key] = {"label": label, **result}
        path.write_text(json.dumps(done, indent=1, default=float))
    lines = [f"Split `{args.split}`, seed {args.seed}; quality mean with 95% bootstrap CI.", "",
             "| env | policy | episodes | quality [95% CI] | success | HMS | check_before_submit | mean steps | cost | "
             + " | ".join(f"return at w={w:g}" for w in COST_WEIGHTS) + " |",
             "|---|---|---|---|---|---|---|---|---|" + "---|" * len(COST_WEIGHTS)]
    for row in done.values():
        lo, hi = row["quality_ci95"]
        lines.append(f"| {row['label']} | {row['policy']} | {row['episodes']} | {row['quality_mean']:.3f} "
                     f"[{lo:.3f}, {hi:.3f}] | {row['success_rate']:.3f} | {fmt(row['hms_mean'])} | "
                     f"{fmt(row['patterns']['check_before_submit'])} | {row['mean_steps']:.1f} | "
                     f"{row['cost_mean']:.2f} | "
                     + " | ".join(f"{row['quality_mean'] - w * row['cost_mean']:.3f}" for w in COST_WEIGHTS) + " |")
    (args.out / "reference_policies.md").write_text("\n".join(lines) + "\n")
    if not args.quiet:
        print("\n".join(lines))
    return list(done.values())


if __name__ == "__main__":
    main()
