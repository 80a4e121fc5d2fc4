"""``harness-gym reproduce``: the paper's tables and figures from one command.

Two experiments, each resumable (rerun with the same ``--out`` to continue an interrupted run):

1. reference harnesses (:mod:`baselines.reference_policies`): static, forced-CHECK and oracle on every env;
2. offline learning (:mod:`baselines.offline_compare`): behaviour buffers, BC, AWR (sample and fitted advantage)
   and the support-ceiling ablation, pooled over seeds with two-level bootstrap CIs.

Written under ``--out``: ``table1_quality.{md,csv}`` (Q with 95% CI, success, HMS and check-before-submit per env
and controller), ``table2_ablation.{md,csv}``, ``table3_reference.md``, ``fig1_quality.png`` (Q per env and
controller with CIs), ``fig2_check_before_submit.png``, and the raw results of both experiments.
``--quick`` shrinks every size (2 seeds, 300-episode buffers, 50 evaluation episodes) to check the pipeline
in minutes; its numbers are not the paper tables.
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import harness_gym
from baselines import offline_compare, reference_policies


@dataclass(frozen=True)
class Sizes:
    """How big each experiment is."""

    seeds: int
    """seeds of the offline comparison (buffer + training)"""
    buffer_episodes: int
    """episodes per rollout buffer"""
    eval_episodes: int
    """test-split episodes per offline cell"""
    reference_episodes: int
    """episodes per reference-harness row (HarnessCode-v0 gets 5/3 of it)"""
    ref_score_episodes: int
    """episodes of the random and oracle policies for a dataset's reference scores"""
    epochs: int
    """training epochs of BC and AWR"""


FULL = Sizes(seeds=5, buffer_episodes=2000, eval_episodes=200, reference_episodes=300, ref_score_episodes=100,
             epochs=30)
QUICK = Sizes(seeds=2, buffer_episodes=300, eval_episodes=50, reference_episodes=60, ref_score_episodes=20,
              epochs=10)
CONTROLLERS = ("static", "forced-check", "bc", "awr", "awr-q")
ABLATION = ("awr", "awr-ablation", "awr-q", "awr-q-ablation")


def _fmt(value: float) -> str:
    return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.3f}"


def _write_table(path: Path, header: list[str], rows: list[list[Any]], title: str) -> None:
    with open(path.with_suffix(".csv"), "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    lines = [title, "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_fmt(c) if isinstance(c, float) else str(c) for c in row) + " |" for row in rows]
    path.with_suffix(".md").write_text("\n".join(lines) + "\n")


def write_tables(out: Path, rows: list[dict[str, Any]], sizes: Sizes) -> None:
    """Tables 1 and 2 from the pooled offline rows."""
    by = {(r["env_id"], r["policy"]): r for r in rows}
    envs = list(dict.fromkeys(r["env_id"] for r in rows))
    setup = (f"Test split; {sizes.seeds} seeds x {sizes.eval_episodes} episodes; buffers of "
             f"{sizes.buffer_episodes} behaviour episodes; 95% two-level bootstrap CIs.")
    t1 = []
    for env in envs:
        for name in CONTROLLERS:
            r = by[(env, name)]
            t1.append([env, name, r["quality_mean"], r["quality_ci95"][0], r["quality_ci95"][1], r["quality_iqm"],
                       r["success_rate"], r["hms_mean"], r["patterns"]["check_before_submit"]])
    _write_table(out / "table1_quality", ["env", "controller", "Q", "Q CI low", "Q CI high", "Q IQM", "success",
                                          "HMS", "check_before_submit"], t1, f"Table 1. Quality and process. {setup}")
    t2 = [[env, name, by[(env, name)]["quality_mean"], by[(env, name)]["patterns"]["check_before_submit"]]
          for env in envs for name in ABLATION]
    _write_table(out / "table2_ablation", ["env", "learner", "Q", "check_before_submit"], t2,
                 "Table 2. Support-ceiling ablation: the same learner without the episodes holding a successful "
                 f"revise. {setup}")


def write_figures(out: Path, rows: list[dict[str, Any]]) -> None:
    """Figure 1 (Q with CIs) and Figure 2 (check-before-submit rate), grouped by env."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    by = {(r["env_id"], r["policy"]): r for r in rows}
    envs = list(dict.fromkeys(r["env_id"] for r in rows))
    x = np.arange(len(envs))
    width = 0.8 / len(CONTROLLERS)
    for fname, ylabel, value, with_ci in (
            ("fig1_quality.png", "task quality Q (test)", lambda r: r["quality_mean"], True),
            ("fig2_check_before_submit.png", "check-before-submit rate",
             lambda r: r["patterns"]["check_before_submit"], False)):
        fig, ax = plt.subplots(figsize=(max(6.0, 1.4 * len(envs)), 3.6))
        for i, name in enumerate(CONTROLLERS):
            vals = np.array([value(by[(e, name)]) for e in envs])
            kw: dict[str, Any] = {}
            if with_ci:
                ci = np.array([by[(e, name)]["quality_ci95"] for e in envs])
                kw["yerr"] = np.abs(ci.T - vals)
            ax.bar(x + (i - (len(CONTROLLERS) - 1) / 2) * width, vals, width, label=name, capsize=2, **kw)
        ax.set_xticks(x, [e.removeprefix("Harness").removesuffix("-v0") for e in envs], rotation=20)
        ax.set_ylim(0, 1.05)
        ax.set_ylabel(ylabel)
        ax.legend(ncol=len(CONTROLLERS), fontsize=7, loc="upper center", bbox_to_anchor=(0.5, 1.15))
        fig.tight_layout()
        fig.savefig(out / fname, dpi=120)
        plt.close(fig)


def reproduce(out: Path, *, quick: bool = False, env_ids: list[str] | None = None, tau_data: str | None = None,
              dbbench_data: str | None = None, quiet: bool = False) -> None:
    """Run both experiments under ``out`` and write the tables and figures.

    :param out: output folder (reused to resume)
    :param quick: the small sizes of :data:`QUICK` instead of :data:`FULL`
    :param env_ids: the envs (default: every registered id)
    :param tau_data: a τ-bench retail data folder for an extra reference row on the public data
    :param dbbench_data: a DB-Bench JSONL file for an extra reference row on the public data
    :param quiet: no progress output
    """
    sizes = QUICK if quick else FULL
    env_ids = list(env_ids or harness_gym.ENV_IDS)
    out.mkdir(parents=True, exist_ok=True)
    ref_args = ["--out", str(out / "reference"), "--episodes", str(sizes.reference_episodes),
                "--code-episodes", str(sizes.reference_episodes * 5 // 3)]
    ref_args += [a for e in env_ids for a in ("--env", e)]
    ref_args += (["--tau-data", tau_data] if tau_data else []) + (["--dbbench-data", dbbench_data] if dbbench_data
                                                                  else [])
    ref_rows = reference_policies.main(ref_args + (["--quiet"] if quiet else []))
    (out / "table3_reference.md").write_text((out / "reference" / "reference_policies.md").read_text())
    offline_compare.main([*env_ids, "--out", str(out / "offline"), "--seeds", str(sizes.seeds),
                          "--episodes", str(sizes.buffer_episodes), "--eval-episodes", str(sizes.eval_episodes),
                          "--epochs", str(sizes.epochs), "--ref-episodes", str(sizes.ref_score_episodes),
                          *(["--quiet"] if quiet else [])])
    rows = [r for r in json.loads((out / "offline" / "summary.json").read_text()) if r["env_id"] in env_ids]
    write_tables(out, rows, sizes)
    write_figures(out, rows)
    if not quiet:
        print((out / "table1_quality.md").read_text())
        print((out / "table2_ablation.md").read_text())
        print(f"reference harnesses: {len(ref_rows)} rows in {out / 'table3_reference.md'}; "
              f"figures in {out}")
