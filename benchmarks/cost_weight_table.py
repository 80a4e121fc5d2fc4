"""The offline comparison at several cost weights, side by side: per env, each controller's quality, cost
and return at the weight it was trained and evaluated at, and whether a fixed script keeps the best return.

Reads the ``summary.csv`` that ``python -m harness_gym_baselines.experiments.offline_comparison ... --cost-weight W --out DIR``
writes, one DIR per weight::

    for w in 0 0.01 0.1; do
        python -m harness_gym_baselines.experiments.offline_comparison <env ids> --out results/offline_cw$w --cost-weight $w
    done
    python benchmarks/cost_weight_table.py results/offline_cw0 results/offline_cw0.01 results/offline_cw0.1
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

FIXED = ("static", "forced-check", "thorough")
LEARNED = ("bc", "awr", "awr-q")


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="offline_comparison output folders, one per cost weight")
    args = parser.parse_args(argv)
    by_weight: dict[float, dict[tuple[str, str], dict[str, str]]] = {}
    for run in args.runs:
        path = run / "summary.csv"
        if not path.is_file():
            raise SystemExit(f"{path}: no such file (run offline_comparison with --out {run} first)")
        rows = list(csv.DictReader(path.open()))
        weight = float(rows[0]["cost_weight"])
        by_weight[weight] = {(r["env_id"], r["policy"]): r for r in rows}
    envs = sorted({env for table in by_weight.values() for env, _ in table})
    first = next(iter(next(iter(by_weight.values())).values()))
    lines = [f"{first['episodes']} test episodes per cell over {first['seeds']} seed(s); Q and cost with their 95% "
             "bootstrap CIs (two-level: seeds, then episodes), return = Q - w * cost (mean).", "",
             "| env | w | " + " | ".join(f"{p}: Q [CI] / cost [CI] / return" for p in FIXED + LEARNED)
             + " | best fixed return | best learned return |",
             "|---|---|" + "---|" * (len(FIXED) + len(LEARNED) + 2)]
    for env in envs:
        for weight in sorted(by_weight):
            table = by_weight[weight]
            cells, best = [], {}
            for policy in FIXED + LEARNED:
                row = table.get((env, policy))
                if row is None:
                    cells.append("n/a")
                    continue
                q, cost, ret = float(row["quality_mean"]), float(row["cost_mean"]), float(row["return_mean"])
                cells.append(f"{q:.3f} [{float(row['quality_ci_lo']):.2f}, {float(row['quality_ci_hi']):.2f}] / "
                             f"{cost:.2f} [{float(row['cost_ci_lo']):.2f}, {float(row['cost_ci_hi']):.2f}] / {ret:.3f}")
                best[policy] = ret
            fixed = max((p for p in FIXED if p in best), key=best.get, default=None)
            learned = max((p for p in LEARNED if p in best), key=best.get, default=None)
            lines.append(f"| {env} | {weight:g} | " + " | ".join(cells)
                         + f" | {fixed} {best.get(fixed, float('nan')):.3f} | {learned} {best.get(learned, float('nan')):.3f} |")
    out = "\n".join(lines)
    print(out)
    return out


if __name__ == "__main__":
    main()
