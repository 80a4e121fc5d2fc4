"""The outputs of ``harness-gym reproduce`` (:mod:`harness_gym_baselines.report.reproduce`): tables, figures, ``report.html`` and
``manifest.json``, all computed from the stage result files under the run folder.

Verdicts. Every learned row says whether it means something (:func:`verdict`). A row is marked *not
meaningful* when

- it was trained at cost weight 0 and ends in a forced submit in at least :data:`FORCED_SUBMIT_LIMIT` of its
  test episodes: spending is free to it, so the budget, not the controller, decides when the episode ends (e.g.
  RETRIEVE until the budget ends: Q is whatever draft exists then, and a larger budget would give another Q);
- an online trainer ran fewer than :data:`MIN_ONLINE_STEPS` steps (the budget of docs/ecpo.md's table; fewer
  were never checked to leave the untrained policy);
- an offline learner trained fewer than :data:`MIN_EPOCHS` epochs (at 10 epochs on a 300-episode buffer BC did
  not yet reproduce the script it clones: 25-step episodes instead of the static script's 6); for IQL (its
  policy fit) and CQL (which has none) also fewer than :data:`MIN_VALUE_STEPS` value-learning steps (their
  configs' default; fewer were never checked).

A row trained at a cost weight w > 0 that ends in a forced submit as often is *meaningful* and marked
*budget-ended* (``†`` in the tables, :func:`budget_ended`): every unit it spends on the way to the budget is
charged in the return it was trained on, so running into the budget is its priced choice, not a free default;
the table still says that the budget, not a SUBMIT, ends most of its episodes.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import html
import importlib.metadata
import json
import math
import platform
import re
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from harness_gym.core.maturity import PATTERNS
from harness_gym_baselines.experiments import offline_comparison
from harness_gym_baselines.experiments.fixed_references import parse_reference_name, reference_names
from harness_gym_baselines.experiments.paper_claims import (
    ECPO_CLAIMS,
    OFFLINE_RL_CLAIMS,
    PAPER_GAIN,
    SEED_REPORTED,
    seed_ordering,
)
from harness_gym_baselines.experiments.statistics import two_level_bootstrap
from harness_gym_baselines.report.episode_view import STYLE as EPISODE_STYLE
from harness_gym_baselines.report.episode_view import episode_html, load_episodes

FORCED_SUBMIT_LIMIT = 0.5
MIN_ONLINE_STEPS = 20_000
MIN_EPOCHS = 30
MIN_VALUE_STEPS = 5000
VALUE_LEARNERS = ("iql", "cql")
FIXED = ("static", "forced-check", "thorough")
ONLINE = ("ppo-sparse", "ppo-dense", "ecpo", "ecpo-pb")
"""the online trainers; each has a greedy row (NAME: the mode of its policy, what ``harness-gym eval --policy``
runs) and a sampled one (NAME-sampled: the same model sampling from its policy, as in training)"""
SAMPLED = tuple(f"{name}-sampled" for name in ONLINE)
LEARNED = ("bc", "awr", "awr-q", "iql", "cql", *ONLINE, *SAMPLED)
ABLATION = ("awr", "awr-ablation", "awr-q", "awr-q-ablation")
FRONTIER = ("static", "forced-check", "thorough", "random", "oracle", "bc", "awr", "awr-q", "iql", "cql",
            "ppo-sparse", "ppo-dense", "ecpo", "ecpo-pb")
"""Besides these, the best searched script and the closed-loop probe at each cost weight (``best-script-w<w>``,
``probe-w<w>``: :mod:`harness_gym_baselines.experiments.fixed_references`) are rows of every table and points
of every frontier; :func:`controllers` puts them between the fixed scripts and the learned controllers."""
PACKAGES = ("harness-gym", "gymnasium", "numpy", "scipy", "pandas", "torch", "stable-baselines3", "sb3-contrib",
            "minari", "h5py", "matplotlib", "rich", "tqdm")


# ----- reading the cells -----------------------------------------------------------------------------------
def load_cells(stages: dict[str, dict[str, Any]]) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """{env label: {controller: [cell per seed]}} from the harness stages' result files.

    :param stages: stage name -> stage record (:class:`harness_gym_baselines.experiments.engine.TaskRecords`)
    """
    out: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for name, record in stages.items():
        if name.startswith("harness:"):
            result = record["result"]
            out[result["label"]] = {c: [json.loads(Path(p).read_text()) for p in paths]
                                    for c, paths in result["cells"].items()}
    return out


def controllers(names: Any) -> list[str]:
    """The controllers among ``names`` in table order: the named fixed scripts, the best searched script and the
    probe per cost weight, the learned controllers.

    :param names: controller names (any iterable; a dict's keys)
    """
    names = list(names)
    return [*(n for n in FIXED if n in names), *reference_names(names), *(n for n in LEARNED if n in names)]


def is_fixed_script(name: str) -> bool:
    """A named fixed script or a best searched script (what "best fixed" is chosen among)."""
    parsed = parse_reference_name(name)
    return name in FIXED or (parsed is not None and parsed[0] == "best-script")


def _per_seed(cells: list[dict[str, Any]], key: str) -> list[np.ndarray]:
    return [np.array([float(r[key]) for r in c["records"]], dtype=float) for c in cells]


def base_env(label: str) -> str:
    """The env id of a table label (``HarnessTauRetail-v1+tau`` -> ``HarnessTauRetail-v1``)."""
    return label.split("+", 1)[0]


def verdict(name: str, row: dict[str, Any], cells: list[dict[str, Any]], sizes: dict[str, Any]) -> str:
    """``"meaningful"`` or ``"not meaningful: REASON"`` for a learned controller's row (module docstring);
    ``"fixed script"`` for the named and the searched scripts, ``"reference: ..."`` for the closed-loop probe.

    :param name: the controller
    :param row: its pooled row (``forced_submit_rate``)
    :param cells: its cells (training settings)
    :param sizes: the run's sizes
    """
    parsed = parse_reference_name(name)
    if parsed is not None and parsed[0] == "probe":
        return ("reference: the closed-loop linear probe of the headroom benchmark, fitted on train and val at the "
                "cost weight w of its name; not a learned controller of this table")
    if name not in LEARNED:
        return "fixed script"
    reasons = []
    weight = train_cost_weight(cells[0]) if cells else 0.0
    forced = row["forced_submit_rate"] >= FORCED_SUBMIT_LIMIT
    if forced and weight == 0:
        reasons.append(f"ends in a forced submit in {100 * row['forced_submit_rate']:.0f}% of test episodes and was "
                       "trained at cost weight 0 (spending is free to it: the budget, not the controller, ends them)")
    if name.removesuffix("-sampled") in ONLINE:
        steps = min(int(c.get("online_steps", sizes["online_steps"])) for c in cells)
        if steps < MIN_ONLINE_STEPS:
            reasons.append(f"trained {steps} steps (< {MIN_ONLINE_STEPS}, the budget of docs/ecpo.md)")
    else:
        if name != "cql" and sizes["epochs"] < MIN_EPOCHS:
            reasons.append(f"trained {sizes['epochs']} epochs (< {MIN_EPOCHS})")
        if name in VALUE_LEARNERS:
            steps = min(int(c.get("value_steps", MIN_VALUE_STEPS)) for c in cells)
            if steps < MIN_VALUE_STEPS:
                reasons.append(f"value learning ran {steps} steps (< {MIN_VALUE_STEPS})")
    if reasons:
        return "not meaningful: " + "; ".join(reasons)
    if forced:
        return (f"meaningful, budget-ended: ends in a forced submit in {100 * row['forced_submit_rate']:.0f}% of "
                f"test episodes; trained at cost weight {weight:g}, which charges every unit it spends on the way")
    return "meaningful"


def train_cost_weight(cell: dict[str, Any]) -> float:
    """The cost weight a learned cell's controller was trained at: an online cell's ``train_cost_weight``, else
    the weight of the envs the offline comparison collected, trained and evaluated on (its summary's)."""
    return float(cell.get("train_cost_weight", cell.get("summary", {}).get("cost_weight", 0.0)))


def budget_ended(verdict_text: str) -> bool:
    """Whether a verdict marks a meaningful row whose episodes mostly end at the budget (``†`` in the tables)."""
    return verdict_text.startswith("meaningful, budget-ended")


def mark(verdict_text: str) -> str:
    """The table mark of a verdict: ``*`` not meaningful, ``†`` budget-ended, else nothing."""
    return "*" if verdict_text.startswith("not") else "†" if budget_ended(verdict_text) else ""


def harness_rows(cells: dict[str, dict[str, list[dict[str, Any]]]], sizes: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per env label and controller of the harness table: :func:`offline_comparison.pooled` plus CIs of
    success and HMS, the forced-submit rate, AWR minus static (paired by episode) and the verdict.

    :param cells: :func:`load_cells`
    :param sizes: the run's sizes
    """
    rows = []
    for label, by_name in cells.items():
        for name in controllers(by_name):
            per = by_name[name]
            row = offline_comparison.pooled(label, name, per)
            row["success_ci95"] = two_level_bootstrap(_per_seed(per, "success"), np.mean)
            hms = [h[~np.isnan(h)] for h in _per_seed(per, "hms")]  # HMS is NaN where no pattern applies
            hms = [h for h in hms if len(h)]
            row["hms_ci95"] = two_level_bootstrap(hms, np.mean) if hms else (math.nan, math.nan)
            row["forced_submit_rate"] = float(np.mean([r["forced_submit"] for c in per for r in c["records"]]))
            row["verdict"] = verdict(name, row, per, sizes)
            row["gain_vs_static"] = row["gain_vs_static_ci95"] = None
            if name in ("awr", "awr-q", *VALUE_LEARNERS) and "static" in by_name:
                static = {c["seed"]: c for c in by_name["static"]}
                diffs = [_per_seed([c], "quality")[0] - _per_seed([static[c["seed"]]], "quality")[0] for c in per]
                row["gain_vs_static"] = 100 * float(np.concatenate(diffs).mean())
                lo, hi = two_level_bootstrap(diffs, np.mean)
                row["gain_vs_static_ci95"] = (100 * lo, 100 * hi)
            row["paper_gain"] = PAPER_GAIN.get(base_env(label)) if name in ("awr", "awr-q") else None
            rows.append(row)
    return rows


def best_fixed(rows: list[dict[str, Any]], label: str) -> str:
    """The fixed script (named or searched: :func:`is_fixed_script`) with the highest mean Q in ``label``."""
    return max((r for r in rows if r["env_id"] == label and is_fixed_script(r["policy"])),
               key=lambda r: r["quality_mean"])["policy"]


def aggregate_rows(rows: list[dict[str, Any]], cells: dict[str, dict[str, list[dict[str, Any]]]],
                   labels: list[str]) -> tuple[list[dict[str, Any]], dict[tuple[str, str], tuple[float, tuple]]]:
    """Per controller over ``labels``: aggregate IQM with a stratified bootstrap CI, mean Q, and P(controller
    > best fixed script of each env) (:mod:`harness_gym_baselines.experiments.statistics`); also the per-env probabilities of improvement.

    :param rows: :func:`harness_rows`
    :param cells: :func:`load_cells`
    :param labels: the envs aggregated over (those where every controller ran)
    """
    from harness_gym_baselines.experiments.statistics import aggregate_iqm_ci, probability_of_improvement

    quality = {label: {name: _per_seed(per, "quality") for name, per in cells[label].items()} for label in labels}
    best = {label: best_fixed(rows, label) for label in labels}
    per_env: dict[tuple[str, str], tuple[float, tuple]] = {}
    out = []
    for name in controllers({n for label in labels for n in quality[label]}):
        envs = [label for label in labels if name in quality[label]]
        if len(envs) < len(labels) or not envs:
            continue
        strata = {label: quality[label][name] for label in envs}
        value, ci = aggregate_iqm_ci(strata, n_boot=1000)
        row: dict[str, Any] = {"controller": name, "envs": len(envs), "iqm": value, "iqm_ci95": ci,
                               "mean_q": float(np.mean([np.concatenate(s).mean() for s in strata.values()]))}
        if name in LEARNED:
            for label in envs:
                per_env[(label, name)] = probability_of_improvement({label: strata[label]},
                                                                    {label: quality[label][best[label]]}, n_boot=500)
            row["p_improvement"], row["p_improvement_ci95"] = probability_of_improvement(
                strata, {label: quality[label][best[label]] for label in envs}, n_boot=500)
        out.append(row)
    return out, per_env


# ----- tables -------------------------------------------------------------------------------------------
def _f(value: Any, spec: str = ".3f") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return format(value, spec)


def _ci(value: Any, ci: Sequence[float] | None, spec: str = ".3f") -> str:
    if ci is None or value is None or (isinstance(value, float) and math.isnan(value)):
        return _f(value, spec)
    return f"{_f(value, spec)} [{_f(ci[0], spec)}, {_f(ci[1], spec)}]"


def write_table(path: Path, header: list[str], rows: list[list[Any]], title: str, run: str) -> None:
    """``path.md`` (title, then a Markdown table) and ``path.csv`` (a ``run`` column first: quick or full).

    :param path: the file stem
    :param header: column names
    :param rows: cells (strings or numbers)
    :param title: the text above the Markdown table
    :param run: ``quick`` or ``full``
    """
    with open(path.with_suffix(".csv"), "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["run", *header])
        writer.writerows([[run, *row] for row in rows])
    lines = [title, "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_f(c) if isinstance(c, float) else str(c) for c in row) + " |" for row in rows]
    path.with_suffix(".md").write_text("\n".join(lines) + "\n")


def harness_table(out: Path, rows: list[dict[str, Any]], per_env_poi: dict, banner: str, run: str) -> None:
    """``table_harness.{md,csv}``: the Markdown shows values with CIs, the CSV one number per column."""
    header = ["env", "controller", "Q [95% CI]", "IQM", "success [95% CI]", "HMS [95% CI]", "cost [95% CI]",
              "check_before_submit", "early_submit", "forced_submit", "AWR - static (points) [95% CI]",
              "paper: AWR - static", "P(> best fixed) [95% CI]", "verdict"]
    md_rows, csv_rows = [], []
    for r in rows:
        poi = per_env_poi.get((r["env_id"], r["policy"]))
        md_rows.append([r["env_id"], r["policy"], _ci(r["quality_mean"], r["quality_ci95"]), _f(r["quality_iqm"]),
                        _ci(r["success_rate"], r["success_ci95"]), _ci(r["hms_mean"], r["hms_ci95"]),
                        _ci(r["cost_mean"], r["cost_ci95"], ".2f"), _f(r["patterns"]["check_before_submit"]),
                        _f(r["patterns"]["early_submit"]), _f(r["forced_submit_rate"]),
                        _ci(r["gain_vs_static"], r["gain_vs_static_ci95"], "+.1f") if r["gain_vs_static"] is not None
                        else "", _f(r["paper_gain"], "+.1f") if r["paper_gain"] is not None else "",
                        _ci(poi[0], poi[1], ".2f") if poi else "", r["verdict"]])
        gain_ci = r["gain_vs_static_ci95"] or (None, None)
        csv_rows.append([r["env_id"], r["policy"], r["seeds"], r["episodes"], r["quality_mean"], *r["quality_ci95"],
                         r["quality_iqm"], r["success_rate"], *r["success_ci95"], r["hms_mean"], *r["hms_ci95"],
                         r["cost_mean"], *r["cost_ci95"], r["patterns"]["check_before_submit"],
                         r["patterns"]["early_submit"], r["forced_submit_rate"], r["gain_vs_static"], *gain_ci,
                         r["paper_gain"], poi[0] if poi else None, *(poi[1] if poi else (None, None)), r["verdict"]])
    write_table(out / "table_harness", header, md_rows, f"Harness controllers on the test split. {banner}", run)
    with open(out / "table_harness.csv", "w", newline="") as fh:  # one number per column in the CSV
        writer = csv.writer(fh)
        writer.writerow(["run", "env", "controller", "seeds", "episodes", "Q", "Q_ci_lo", "Q_ci_hi", "Q_iqm",
                         "success", "success_ci_lo", "success_ci_hi", "hms", "hms_ci_lo", "hms_ci_hi", "cost",
                         "cost_ci_lo", "cost_ci_hi", "check_before_submit", "early_submit", "forced_submit",
                         "awr_minus_static_points", "gain_ci_lo", "gain_ci_hi", "paper_awr_minus_static",
                         "p_improvement_vs_best_fixed", "poi_ci_lo", "poi_ci_hi", "verdict"])
        writer.writerows([[run, *row] for row in csv_rows])


def main_table(out: Path, rows: list[dict[str, Any]], banner: str) -> None:
    """``table_main.md``: one line per env, Q of every controller (``*``: not meaningful), check-before-submit
    of static and AWR-q, and AWR-q minus static beside the paper's figure (the README shows this table)."""
    by = {(r["env_id"], r["policy"]): r for r in rows}
    names = controllers({r["policy"] for r in rows})
    head = ["env", *(f"Q {n}" for n in names), "check<submit static / awr-q", "AWR-q - static (paper)"]
    lines = [f"Q per env and controller, test split (`*`: not meaningful; `†`: budget-ended, the budget ends most "
             f"episodes of a controller trained at a cost weight > 0; see table_harness.md). {banner}", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for label in dict.fromkeys(r["env_id"] for r in rows):
        cells = []
        for n in names:
            r = by.get((label, n))
            cells.append("" if r is None else f"{r['quality_mean']:.2f}" + mark(r["verdict"]))
        cbs = " / ".join(_f(by[(label, n)]["patterns"]["check_before_submit"], ".2f") if (label, n) in by else "n/a"
                         for n in ("static", "awr-q"))
        gain = by.get((label, "awr-q"), {}).get("gain_vs_static")
        paper = PAPER_GAIN.get(base_env(label))
        lines.append(f"| {_short(label)} | " + " | ".join(cells) + f" | {cbs} | "
                     + ("" if gain is None else f"{gain:+.1f}") + (f" ({paper:+.1f})" if paper else "") + " |")
    (out / "table_main.md").write_text("\n".join(lines) + "\n")


# ----- figures ------------------------------------------------------------------------------------------
def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"font.size": 9, "axes.titlesize": 10})
    return plt


def _short(label: str) -> str:
    return label.removeprefix("Harness").replace("-v1", "")


MAX_SERIES = 8
"""the most controllers one figure draws in colour (more cannot be told apart); the rest are in the tables"""


def figure_controllers(rows: list[dict[str, Any]], limit: int = MAX_SERIES) -> list[str]:
    """The controllers a figure draws: the named fixed scripts, then the learned controllers by their mean Q over
    the envs, highest first, then the rest (searched scripts, probes) likewise, at most ``limit`` in all.

    :param rows: :func:`harness_rows` (``policy``, ``quality_mean``)
    :param limit: the most controllers
    """
    names = controllers({r["policy"] for r in rows})
    fixed = [n for n in FIXED if n in names]
    mean_q = {n: float(np.nanmean([r["quality_mean"] for r in rows if r["policy"] == n])) for n in names}
    rest = sorted((n for n in names if n not in fixed),
                  key=lambda n: (n not in LEARNED, -np.nan_to_num(mean_q[n], nan=-1.0), n))
    return (fixed + rest)[:limit]


def _title_and_legend(fig: Any, title: str, handles: list[Any], names: list[str]) -> None:
    """Put the title and the legend (at most four entries a row) above the panels, outside the data, and fit the
    panels below them (a figure-level legend and a suptitle overlap under constrained layout, so the room is
    reserved by hand)."""
    height = fig.get_figheight()
    title_lines = title.count("\n") + 1
    title_room = 0.06 + 0.17 * title_lines
    ncol = min(len(names), 4) or 1
    legend_rows = -(-len(names) // ncol)
    fig.suptitle(title, y=1 - 0.04 / height, va="top")
    fig.legend(handles, names, ncol=ncol, fontsize=8, loc="upper center",
               bbox_to_anchor=(0.5, 1 - title_room / height), frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 1 - (title_room + 0.17 * legend_rows) / height))


def fig_quality_hms(path: Path, rows: list[dict[str, Any]], banner: str) -> None:
    """Q and HMS per env and controller, with 95% CIs (two panels). Each env's group holds only the controllers
    that were run on it (the public-data variants have no online rows), centred on its tick."""
    plt = _plt()
    labels = list(dict.fromkeys(r["env_id"] for r in rows))
    names = figure_controllers(rows)
    left_out = len(controllers({r["policy"] for r in rows})) - len(names)
    by = {(r["env_id"], r["policy"]): r for r in rows}
    colours = {name: plt.get_cmap("tab10")(i % 10) for i, name in enumerate(names)}
    width = 0.85 / len(names)
    fig, axes = plt.subplots(2, 1, figsize=(max(8.0, 1.5 * len(labels)), 7.5), sharex=True)
    for ax, key, ci_key, ylabel in ((axes[0], "quality_mean", "quality_ci95", "task quality Q (test split)"),
                                    (axes[1], "hms_mean", "hms_ci95", "harness maturity score HMS")):
        for k, env in enumerate(labels):
            present = [n for n in names if (env, n) in by]
            for i, name in enumerate(present):
                row = by[(env, name)]
                value = float(row[key])
                low, high = (float(v) for v in row[ci_key])
                faint = row.get("verdict", "").startswith("not meaningful")
                ax.bar(k + (i - (len(present) - 1) / 2) * width, value, width,
                       yerr=[[max(0.0, value - low)], [max(0.0, high - value)]], capsize=1.5,
                       color=colours[name], hatch="///" if faint else None, alpha=0.35 if faint else 1.0,
                       error_kw={"linewidth": 0.7})
        ax.set_ylabel(ylabel)
        ax.set_ylim(0, 1.05)
        ax.grid(axis="y", alpha=0.3)
    axes[1].set_xticks(np.arange(len(labels)), [_short(e) for e in labels], rotation=20)
    axes[1].set_xlabel("environment        (hatched, pale: not meaningful, see the verdict column of table_harness)"
                       + (f"\nthe fixed scripts and the {len(names) - len([n for n in FIXED if n in names])} "
                          f"controllers with the highest mean Q, learned ones first; the other {left_out} are in "
                          "table_harness"
                          if left_out else ""))
    handles = [plt.Rectangle((0, 0), 1, 1, color=colours[n]) for n in names]
    _title_and_legend(fig, f"Q and HMS per env and controller (95% two-level bootstrap CIs){banner}", handles, names)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def fig_patterns(path: Path, rows: list[dict[str, Any]], banner: str) -> None:
    """Harness pattern rates before (static, BC) and after AWR (both estimators), one panel per env. A pattern
    that never applied in a controller's episodes (its rate is undefined) is marked with a grey x at the base."""
    plt = _plt()
    labels = list(dict.fromkeys(r["env_id"] for r in rows))
    names = [n for n in ("static", "bc", "awr", "awr-q") if any(r["policy"] == n for r in rows)]
    by = {(r["env_id"], r["policy"]): r for r in rows}
    cols = min(4, len(labels))
    nrows = math.ceil(len(labels) / cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(max(7.0, 3.6 * cols), 3.0 * nrows + 1.0), squeeze=False,
                             sharey=True)
    x = np.arange(len(PATTERNS))
    width = 0.8 / len(names)
    for k, label in enumerate(labels):
        ax = axes[k // cols][k % cols]
        for i, name in enumerate(names):
            if (label, name) not in by:
                continue
            rates = np.array([by[(label, name)]["patterns"][p] for p in PATTERNS], dtype=float)
            offset = x + (i - (len(names) - 1) / 2) * width
            ax.bar(offset, np.nan_to_num(rates), width, label=name, color=f"C{i}")
            undefined = np.isnan(rates)
            ax.plot(offset[undefined], np.full(int(undefined.sum()), 0.03), "x", color="#777", markersize=3)
        ax.set_title(_short(label))
        ax.set_xticks(x, [p.replace("_", " ") for p in PATTERNS], rotation=55, ha="right", fontsize=7)
        ax.set_ylim(0, 1.05)
        ax.grid(axis="y", alpha=0.3)
        if k % cols == 0:
            ax.set_ylabel("pattern rate (test episodes)")
    for k in range(len(labels), nrows * cols):
        axes[k // cols][k % cols].axis("off")
    handles = [plt.Rectangle((0, 0), 1, 1, color=f"C{i}") for i in range(len(names))]
    _title_and_legend(fig, f"Pattern rates before (static, BC) and after AWR (x: the pattern never applied){banner}",
                      handles, names)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def fig_support_ceiling(path: Path, rows: list[dict[str, Any]], banner: str) -> None:
    """The support-ceiling ablation: Q (bars with CIs) and check-before-submit (markers) of each AWR learner
    with and without the episodes holding a successful revise."""
    plt = _plt()
    labels = list(dict.fromkeys(r["env_id"] for r in rows if r["policy"] in ABLATION))
    by = {(r["env_id"], r["policy"]): r for r in rows}
    names = [n for n in ABLATION if any((e, n) in by for e in labels)]
    x = np.arange(len(labels))
    width = 0.8 / max(1, len(names))
    fig, (ax_q, ax_c) = plt.subplots(2, 1, figsize=(max(8.0, 1.4 * len(labels)), 6.5), sharex=True)
    for i, name in enumerate(names):
        offset = x + (i - (len(names) - 1) / 2) * width
        q = np.array([by[(e, name)]["quality_mean"] for e in labels])
        ci = np.array([by[(e, name)]["quality_ci95"] for e in labels]).T
        hatch = "//" if name.endswith("-ablation") else None
        ax_q.bar(offset, q, width, yerr=np.abs(ci - q), capsize=2, label=name, hatch=hatch,
                 color=f"C{i // 2}", alpha=0.55 if hatch else 1.0)
        cbs = np.nan_to_num(np.array([by[(e, name)]["patterns"]["check_before_submit"] for e in labels], dtype=float))
        ax_c.bar(offset, cbs, width, label=name, hatch=hatch, color=f"C{i // 2}", alpha=0.55 if hatch else 1.0)
    ax_q.set_ylabel("task quality Q (test)")
    ax_c.set_ylabel("check-before-submit rate")
    for ax in (ax_q, ax_c):
        ax.set_ylim(0, 1.05)
        ax.grid(axis="y", alpha=0.3)
    ax_c.set_xticks(x, [_short(e) for e in labels], rotation=20)
    ax_c.set_xlabel("environment")
    handles, legend_names = ax_q.get_legend_handles_labels()
    _title_and_legend(fig, f"Support-ceiling ablation: AWR without the episodes holding a successful revise{banner}",
                      handles, legend_names)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def frontiers(out: Path, cells: dict[str, dict[str, list[dict[str, Any]]]], cost_weights: list[float],
              banner: str) -> dict[str, Path]:
    """The quality-cost frontier of every env (:mod:`harness_gym_baselines.experiments.frontier`) from the cells' episodes: the fixed
    scripts, random, oracle, the learned controllers (at the cost weight each cell was trained at, its
    ``train_cost_weight``; 0 where a cell does not say), and the best searched script and the probe chosen at
    each cost weight, as points.

    Also the report's headline, ``fig_frontier.png``: every env in one figure, the learned controllers (greedy
    rows) in colour on the scripts' field (:func:`~harness_gym_baselines.experiments.frontier.plot_frontier_panels`).

    :param out: the run folder (writes ``frontier/<env>/frontier.{json,md,png}`` and ``fig_frontier.png``)
    :param cells: :func:`load_cells`
    :param cost_weights: the cost weights of the returns and the iso-return lines
    :param banner: appended to the titles
    """
    from harness_gym_baselines.experiments.frontier import frontier_row, plot_frontier_panels, write_frontier

    pngs, panels = {}, {}
    for label, by_name in cells.items():
        rows = [frontier_row([r for c in by_name[name] for r in c["records"]], name, cost_weights,
                             trained_at=train_cost_weight(by_name[name][0]) if name in LEARNED
                             else None, env_id=label)
                for name in [*(n for n in FRONTIER if n in by_name), *reference_names(by_name)]]
        paths = write_frontier(out / "frontier" / label.replace("+", "_"), label, rows, cost_weights,
                               title_suffix=banner)
        pngs[label] = paths["png"]
        panels[label] = rows
    trained_at = trained_weights(cells)
    plot_frontier_panels(panels, [n for n in LEARNED if n not in SAMPLED], out / "fig_frontier.png",
                         "Quality against cost on the test split: learned controllers (trained at cost weight "
                         f"{', '.join(f'{w:g}' for w in trained_at)}) among the fixed scripts{banner}")
    return pngs


def trained_weights(cells: dict[str, dict[str, list[dict[str, Any]]]]) -> list[float]:
    """The cost weights the run's learned controllers were trained at (:func:`train_cost_weight`), sorted.

    :param cells: :func:`load_cells`
    """
    return sorted({train_cost_weight(c[0]) for by_name in cells.values() for n, c in by_name.items() if n in LEARNED})


def best_returns(frontier_files: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per cost weight: how many envs each fixed script (named or searched: :func:`is_fixed_script`) has the best
    return among the fixed ones, and in how many a learned controller's return beats every fixed script's.

    :param frontier_files: the ``frontier.json`` contents of every env
    """
    out: dict[str, dict[str, Any]] = {}
    for blob in frontier_files:
        for w in blob["cost_weights"]:
            entry = out.setdefault(f"{w:g}", {"fixed": {}, "learned_wins": 0, "envs": 0})
            fixed = [r for r in blob["rows"] if is_fixed_script(r["policy"])]
            learned = [r for r in blob["rows"] if r["policy"] in LEARNED]
            top = max(fixed, key=lambda r: r["return_at"][str(w)])
            entry["fixed"][top["policy"]] = entry["fixed"].get(top["policy"], 0) + 1
            entry["learned_wins"] += any(r["return_at"][str(w)] > top["return_at"][str(w)] for r in learned)
            entry["envs"] += 1
    return out


# ----- the reading ----------------------------------------------------------------------------------------
def reading(rows: list[dict[str, Any]], agg: list[dict[str, Any]], ecpo_rows: list[dict[str, Any]],
            corruption: dict[str, Any], sim_rows: list[dict[str, Any]], online_verdict: str, corruption_verdict: str,
            cost_best: dict[str, dict[str, Any]], quick: bool, trained_at: Sequence[float] = ()) -> list[str]:
    """What agrees with the papers and what does not, as sentences whose numbers come from this run; the
    mechanisms are those of docs/offline_results.md, docs/cost_results.md and docs/ecpo.md.

    :param rows: :func:`harness_rows`
    :param agg: :func:`aggregate_rows`
    :param ecpo_rows: the ECPO table's rows (deterministic policies)
    :param corruption: the corruption runs
    :param sim_rows: the sim-to-real rows
    :param online_verdict: the verdict of the online trainers' rows (their training budget)
    :param corruption_verdict: the same for the corruption runs
    :param cost_best: :func:`best_returns`
    :param quick: a quick run
    :param trained_at: the cost weights the learned controllers were trained at (:func:`trained_weights`)
    """
    by = {(r["env_id"], r["policy"]): r for r in rows}
    labels = list(dict.fromkeys(r["env_id"] for r in rows))
    out = []
    if quick:
        out.append("This is a QUICK run: small buffers, few seeds and short online training. Its numbers check the "
                   "pipeline; rows marked 'not meaningful' say why they cannot be read as results.")

    def cbs(label: str, name: str) -> float:
        r = by.get((label, name))
        return float("nan") if r is None else float(np.nan_to_num(r["patterns"]["check_before_submit"]))

    for name in ("awr", "awr-q"):
        learned = [e for e in labels if (e, name) in by and cbs(e, name) >= cbs(e, "static") + 0.1]
        out.append(f"Check-before-submit emerges with {name} (rate at least 0.1 above static) in {len(learned)} of "
                   f"{len(labels)} envs{': ' + ', '.join(_short(e) for e in learned) if learned else ''}. The paper "
                   f"reports it {OFFLINE_RL_CLAIMS['check_before_submit_emerges']}. "
                   + ("Mechanism (docs/offline_results.md): with the sample advantage G - V(s) and a mostly pass/fail "
                      "terminal reward, the reweighting multiplies CHECK's behaviour probability by at most the ratio "
                      "of success rates (1.05-1.3), which does not overturn the buffer's 2:1 prior for SUBMIT."
                      if name == "awr" else
                      "The fitted advantage Q(s, a) - V(s) averages the pass/fail outcome first, so its weights grow "
                      "with the difference in expected quality and CHECK wins where it pays."))
    for env_id, paper in PAPER_GAIN.items():
        for label in [e for e in labels if base_env(e) == env_id]:
            parts = []
            for name in ("awr", "awr-q"):
                r = by.get((label, name))
                if r is None or r["gain_vs_static"] is None:
                    continue
                lo, hi = r["gain_vs_static_ci95"]
                relation = ("includes" if lo <= paper <= hi else "is below" if hi < paper else "is above")
                parts.append(f"{name} {r['gain_vs_static']:+.1f} points [{lo:+.1f}, {hi:+.1f}] ({relation} the "
                             f"paper's {paper:+.1f}; {r['verdict']})")
            if parts:
                out.append(f"AWR minus static on {_short(label)}: " + "; ".join(parts) + ".")
    pairs = [(by[(e, "awr")], by[(e, "bc")]) for e in labels if (e, "awr") in by and (e, "bc") in by]
    wins = sum(a["quality_ci95"][0] > b["quality_mean"] for a, b in pairs)
    losses = sum(a["quality_ci95"][1] < b["quality_mean"] for a, b in pairs)
    out.append(f"AWR (sample advantage) against BC: above BC's mean by more than its CI in {wins}, below in {losses}, "
               f"within its CI in {len(pairs) - wins - losses} of {len(pairs)} envs. The paper: "
               f"{OFFLINE_RL_CLAIMS['awr_vs_bc']}" + (" (agrees)." if wins > len(pairs) / 2 else "; here mostly ties: BC clones the behaviour's "
                             "static script, and the sample advantage barely reweights it (above)."))
    fc_wins = [e for e in labels if (e, "forced-check") in by and all(
        by[(e, "forced-check")]["quality_mean"] >= by[(e, n)]["quality_mean"] for n in LEARNED if (e, n) in by)]
    out.append(f"Forced-CHECK is at least as good as every learned controller in {len(fc_wins)} of {len(labels)} "
               f"envs (the paper: {OFFLINE_RL_CLAIMS['awr_vs_forced_check']}). The support ceiling (wrong drafts "
               "that pass the checker) caps the fixed scripts and the learners alike (docs/offline_results.md).")
    for r in agg:
        if "p_improvement" in r:
            lo, hi = r["p_improvement_ci95"]
            out.append(f"P({r['controller']} > best fixed script per env) = {r['p_improvement']:.2f} [{lo:.2f}, "
                       f"{hi:.2f}] over {r['envs']} envs; aggregate IQM {r['iqm']:.3f} [{r['iqm_ci95'][0]:.3f}, "
                       f"{r['iqm_ci95'][1]:.3f}].")
    by_e = {(r["env_id"], r["method"]): r for r in ecpo_rows}
    for env in dict.fromkeys(r["env_id"] for r in ecpo_rows):
        order = sorted((m for m in ("ppo-sparse", "ppo-dense", "bc", "ecpo", "ecpo-pb") if (env, m) in by_e),
                       key=lambda m: by_e[(env, m)]["success"])
        out.append(f"ECPO table, {_short(env)}: success from lowest to highest: "
                   + ", ".join(f"{m} {100 * by_e[(env, m)]['success']:.0f}%" for m in order)
                   + f". The seed's ordering is {seed_ordering()}. "
                   "Mechanisms where it differs (docs/ecpo.md): harness episodes are short, so the sparse reward is "
                   "not starved; without a binding cost PPO policies spend the whole budget; ECPO's knowledge and "
                   "consistency sources can be raised by repeating a step, which the policy farms."
                   + ("" if online_verdict == "meaningful" else f" In this run the online rows are {online_verdict}."))
    for method in dict.fromkeys(r.get("method", "ecpo") for r in corruption.values()):
        finals = {arm: [r["test_success"] for r in corruption.values()
                        if r.get("method", "ecpo") == method and r["arm"] == arm] for arm in ("adaptive", "frozen")}
        if all(finals.values()):
            out.append(f"Knowledge corruption, {method}: final test success adaptive {np.mean(finals['adaptive']):.2f} "
                       f"vs frozen {np.mean(finals['frozen']):.2f} ({len(finals['adaptive'])} seed(s)). The seed reports that "
                       f"{ECPO_CLAIMS['corruption']}; docs/ecpo.md found the weight moving less than "
                       "its own sampling noise with 30 validation episodes per calibration."
                       + ("" if corruption_verdict == "meaningful" else f" These runs are {corruption_verdict}."))
    if sim_rows:
        from harness_gym_baselines.experiments.sim_to_real import LEARNED as SIM_LEARNED
        from harness_gym_baselines.experiments.sim_to_real import SimToRealRow, rank

        gap_d = np.mean([abs(r["q_real"] - r["q_sim_default"]) for r in sim_rows])
        gap_f = np.mean([abs(r["q_real"] - r["q_sim_fitted"]) for r in sim_rows])
        tasks = sorted({r["tasks"] for r in sim_rows})
        text = (f"Sim-to-real on the shipped SmolLM2 recording: mean |Q real - Q sim| is {gap_d:.3f} with the "
                f"default profiles and {gap_f:.3f} with the fitted ones ({len(sim_rows)} env x controller rows, "
                f"{'-'.join(map(str, tasks[:1] + tasks[-1:] if len(tasks) > 1 else tasks))} tasks each, so the "
                "intervals are wide).")
        learned = [r for r in sim_rows if r["controller"] == SIM_LEARNED]
        if learned:
            text += (f" The controller trained on the simulator ({SIM_LEARNED}) scores Q "
                     + ", ".join(f"{r['q_real']:.2f} real vs {r['q_sim_default']:.2f} simulated on "
                                 f"{_short(r['env_id'])}" for r in learned) + ".")
        agree = {"sim default": 0, "sim fitted": 0}
        pairs = 0
        for env_id in dict.fromkeys(r["env_id"] for r in sim_rows):
            ranking = rank([SimToRealRow(**r) for r in sim_rows if r["env_id"] == env_id])
            pairs += ranking.pairs
            for w in agree:
                agree[w] += ranking.agreeing_pairs[w]
        best = max(agree.values()) / pairs if pairs else 0.0
        verdict = ("the simulators largely rank the controllers as the real model does" if best >= 0.75 else
                   "the simulators' ranking of the controllers only partly carries over to the real model"
                   if best >= 0.5 else "neither simulator predicts how the controllers rank with this model")
        text += (f" Of {pairs} controller pairs the default simulator orders {agree['sim default']} as the real "
                 f"model does and the fitted one {agree['sim fitted']}: {verdict}.")
        out.append(text)
    trained = ("trained at w = " + " and ".join(f"{w:g}" for w in trained_at)) if trained_at else "trained"
    for w, best in cost_best.items():
        fixed = ", ".join(f"{name} in {n}" for name, n in best["fixed"].items())
        out.append(f"Cost weight {w}: the best return among the fixed scripts (named and searched) goes to {fixed} env(s); a learned "
                   f"controller ({trained}) has a higher return than every fixed script in "
                   f"{best['learned_wins']} of {best['envs']} envs.")
    out.extend(cost_reading(cost_best))
    return out


def cost_reading(cost_best: dict[str, dict[str, Any]]) -> list[str]:
    """Which fixed script has the best return in the most envs at the lowest and at the highest cost weight,
    set against docs/cost_results.md's expectation (thorough, which gathers everything and then checks, at w = 0;
    cheaper scripts as w grows); nothing without cost weights.

    :param cost_best: :func:`best_returns`
    """
    if not cost_best:
        return []
    weights = sorted(cost_best, key=float)

    def leader(w: str) -> str:
        counts = cost_best[w]["fixed"]
        top = max(counts.values())
        names = sorted(name for name, n in counts.items() if n == top)
        return f"{' and '.join(names)} ({top} of {cost_best[w]['envs']} env(s))"

    low, high = leader(weights[0]), leader(weights[-1])
    thorough_low = "thorough" in low.split(" (")[0].split(" and ")
    thorough_high = "thorough" in high.split(" (")[0].split(" and ")
    agrees = thorough_low and (len(weights) == 1 or not thorough_high)
    return [f"The best fixed script in the most envs is {low} at w = {weights[0]}"
            + (f" and {high} at w = {weights[-1]}" if len(weights) > 1 else "")
            + ". docs/cost_results.md expects thorough (gather everything, then check) at w = 0 and cheaper scripts "
            "as w grows: " + ("this run agrees." if agrees else "this run does not show that.")]


# ----- report.html and the manifest -------------------------------------------------------------------------
_INLINE = re.compile(r"\*\*(?P<bold>[^*]+)\*\*|`(?P<code>[^`]+)`")


def inline_html(text: str) -> str:
    """Markdown's inline marks as HTML, the rest escaped: ``**bold**`` and ```code```, as the tables and
    titles of the run's ``.md`` files use them.

    :param text: one line or cell of Markdown
    """
    out, pos = [], 0
    for m in _INLINE.finditer(text):
        out.append(html.escape(text[pos:m.start()]))
        out.append(f"<strong>{html.escape(m['bold'])}</strong>" if m["bold"] is not None
                   else f"<code>{html.escape(m['code'])}</code>")
        pos = m.end()
    out.append(html.escape(text[pos:]))
    return "".join(out)


def _md_table_html(md: str, *, notes_id: str = "") -> str:
    """A Markdown table (and the text lines around it) as HTML, inline marks rendered (:func:`inline_html`).

    A ``verdict`` column states each distinct verdict once: a cell shows the verdict's head (``meaningful``,
    ``fixed script``, ``not meaningful``) with a numbered reference to the full text, listed once under the
    table.

    :param md: the Markdown
    :param notes_id: prefix of the verdict notes' anchors (unique per table in one page)
    """
    parts, table = [], []
    for line in md.splitlines() + [""]:
        if line.startswith("|"):
            table.append(line)
            continue
        if table:
            parts.append(_table_html(table, notes_id or "t" + hashlib.sha256("\n".join(table).encode()).hexdigest()[:8]))
            table = []
        if line.strip():
            parts.append(f"<p>{inline_html(line)}</p>")
    return "\n".join(parts)


def _table_html(lines: list[str], notes_id: str) -> str:
    head = [c.strip() for c in lines[0].strip().strip("|").split("|")]
    body = [[c.strip() for c in row.strip().strip("|").split("|")] for row in lines[2:]]
    verdict_col = head.index("verdict") if "verdict" in head else None
    notes: dict[str, int] = {}

    def cell(k: int, text: str) -> str:
        bad = ' class="bad"' if text.startswith("not meaningful") else ""
        if k != verdict_col or ":" not in text:
            return f"<td{bad}>{inline_html(text)}</td>"
        number = notes.setdefault(text, len(notes) + 1)
        return (f'<td{bad}>{html.escape(text.split(":", 1)[0])} '
                f'<a href="#{notes_id}-v{number}">[{number}]</a></td>')

    rows = "".join("<tr>" + "".join(cell(k, c) for k, c in enumerate(row)) + "</tr>" for row in body)
    out = ("<table><thead><tr>" + "".join(f"<th>{inline_html(h)}</th>" for h in head) + "</tr></thead><tbody>"
           + rows + "</tbody></table>")
    if notes:
        out += ('<ol class="verdicts">' + "".join(f'<li id="{notes_id}-v{n}" value="{n}">{inline_html(text)}</li>'
                                                   for text, n in notes.items()) + "</ol>")
    return out


def _img(path: Path, alt: str) -> str:
    data = base64.b64encode(path.read_bytes()).decode()
    return f'<figure><img alt="{html.escape(alt)}" src="data:image/png;base64,{data}"><figcaption>{html.escape(alt)}</figcaption></figure>'


def sha256(path: Path) -> str:
    """The SHA-256 of a file."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def data_hashes(settings: dict[str, Any]) -> dict[str, str]:
    """SHA-256 of the worker profiles, the shipped recording, the task banks and any public data given."""
    from harness_gym.paths import data_path

    root = Path(data_path("profiles")).parent
    files = sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    out = {str(p.relative_to(root.parent)): sha256(p) for p in files}
    for key in ("tau_data", "dbbench_data"):
        given = settings.get(key)
        if given:
            paths = sorted(p for p in Path(given).rglob("*") if p.is_file()) if Path(given).is_dir() else [Path(given)]
            out.update({str(p): sha256(p) for p in paths})
    return out


def write_report(out: Path, *, settings: dict[str, Any], stages: dict[str, dict[str, Any]], argv: list[str],
                 total_seconds: float, machine: dict[str, Any] | None = None) -> dict[str, Any]:
    """Write every table, figure, ``report.html`` and ``manifest.json`` from the stage results.

    :param out: the run folder
    :param settings: the run's settings (:func:`harness_gym_baselines.report.reproduce.reproduce`)
    :param stages: stage name -> stage record
    :param argv: the command line
    :param total_seconds: wall time of the stages in this invocation
    :param machine: the CPUs and the load average sampled during the run
        (:class:`harness_gym_baselines.report.reproduce.LoadSampler`), for the manifest
    """
    from harness_gym.paths import data_path
    from harness_gym_baselines.experiments.ecpo_comparison import corruption_lines, plot_corruption

    quick, sizes = settings["quick"], settings["sizes"]
    run = "quick" if quick else "full"
    banner = (f"\nQUICK RUN ({sizes['seeds']} offline seed(s), {sizes['buffer_episodes']}-episode buffers, "
              f"{sizes['online_steps']} online steps): not the paper numbers") if quick else ""
    trained_at = f"; every learned controller trained at cost weight {settings.get('train_cost_weight', 0.0):g}"
    text_banner = (f"QUICK RUN: {sizes['seeds']} offline seed(s) x {sizes['eval_episodes']} test episodes, "
                   f"{sizes['buffer_episodes']}-episode buffers, {sizes['online_seeds']} online seed(s) of "
                   f"{sizes['online_steps']} steps{trained_at}; not the paper numbers." if quick else
                   f"{sizes['seeds']} offline seeds x {sizes['eval_episodes']} test episodes, "
                   f"{sizes['buffer_episodes']}-episode buffers, {sizes['online_seeds']} online seeds of "
                   f"{sizes['online_steps']} steps{trained_at}.")
    cells = load_cells(stages)
    rows = harness_rows(cells, sizes)
    base_labels = [label for label in cells if "+" not in label]
    agg, per_env_poi = aggregate_rows(rows, cells, base_labels)
    harness_table(out, rows, per_env_poi, text_banner + " 95% two-level bootstrap CIs (seeds, then episodes); "
                  "P(> best fixed): probability of improvement over the env's best fixed script.", run)
    main_table(out, rows, text_banner)
    write_table(out / "table_aggregate", ["controller", "envs", "IQM [95% CI]", "mean Q", "P(> best fixed) [95% CI]"],
                [[r["controller"], r["envs"], _ci(r["iqm"], r["iqm_ci95"]), r["mean_q"],
                  _ci(r.get("p_improvement"), r.get("p_improvement_ci95"), ".2f") if "p_improvement" in r else ""]
                 for r in agg],
                f"Aggregate over {len(base_labels)} envs: IQM of episode quality with stratified bootstrap CIs, and "
                f"the probability of improvement over each env's best fixed script (harness_gym_baselines/experiments/statistics.py). {text_banner}",
                run)
    ablation = [offline_comparison.pooled(label, name, cells[label][name]) for label in cells for name in ABLATION
                if name in cells[label]]
    write_table(out / "table_ablation", ["env", "learner", "Q [95% CI]", "check_before_submit",
                                         "episodes removed per seed"],
                [[r["env_id"], r["policy"], _ci(r["quality_mean"], r["quality_ci95"]),
                  _f(r["patterns"]["check_before_submit"]),
                  ", ".join(str(n) for n in r.get("removed_episodes_per_seed", []))] for r in ablation],
                "Support-ceiling ablation: the same learner on the buffer without the episodes holding a successful "
                f"revise (harness_gym_baselines/experiments/offline_comparison.py). {text_banner}", run)

    # the ECPO table, as ecpo_comparison wrote it
    online = out / "online"
    ecpo_rows = stages["ecpo"]["result"]["rows"]
    online_verdict = (f"not meaningful: trained {sizes['online_steps']} steps (< {MIN_ONLINE_STEPS}, the budget of "
                      "docs/ecpo.md)" if sizes["online_steps"] < MIN_ONLINE_STEPS else "meaningful")
    (out / "table_ecpo.md").write_text(f"ECPO comparison (harness_gym_baselines/experiments/ecpo_comparison.py). {text_banner}\n\n"
                                       f"Verdict of the ppo-sparse, ppo-dense and ECPO rows: {online_verdict}.\n\n"
                                       + (online / "table.md").read_text())
    with open(online / "table.csv") as src, open(out / "table_ecpo.csv", "w", newline="") as dst:
        reader = csv.reader(src)
        writer = csv.writer(dst)
        writer.writerow(["run", *next(reader), "seed_reported_success", "seed_reported_score", "seed_reported_ood",
                         "verdict"])
        for row in reader:
            method = row[2]
            writer.writerow([run, *row, *SEED_REPORTED.get(method, ("", "", "")),
                             online_verdict if method in ONLINE else
                             verdict(method, {"forced_submit_rate": 0.0}, [], sizes) if method in FIXED
                             or parse_reference_name(method) else "meaningful"])
    corruption = stages["corruption"]["result"]["runs"]
    plot_corruption(corruption, settings["corruption_env"], sizes["corrupt_from"], out / "fig_ecpo_corruption.png",
                    title_suffix=banner)
    (out / "table_corruption.md").write_text(
        "\n".join(corruption_lines(corruption, settings["corruption_env"], sizes["corrupt_from"]))
        + f"\n\n{text_banner} Corruption runs: {sizes['corruption_seeds']} seed(s) of {sizes['corruption_steps']} "
        f"steps, {sizes['corruption_steps'] - sizes['corrupt_from']} of them after the switch.\n")
    sim = stages["sim_to_real"]["result"]
    (out / "table_sim_to_real.md").write_text(
        f"Sim-to-real: {sim['model']} replayed from the shipped recording ({sim['recording']}), no server; the "
        f"simulated worker on the same tasks with its default and its fitted profile ({sizes['sim_seeds']} seeds per "
        f"recorded episode). {text_banner}\n\n{sim['markdown']}\n")
    fig_quality_hms(out / "fig_quality_hms.png", rows, banner)
    fig_patterns(out / "fig_patterns_awr.png", rows, banner)
    fig_support_ceiling(out / "fig_support_ceiling.png", ablation, banner)
    frontier_png = frontiers(out, cells, settings["cost_weights"], banner)
    for label, png in frontier_png.items():
        shutil.copyfile(png, out / f"fig_frontier_{label.replace('+', '_')}.png")
    frontier_md = {label: (png.parent / "frontier.md").read_text() for label, png in frontier_png.items()}

    corruption_verdict = (f"not meaningful: trained {sizes['corruption_steps']} steps (< {MIN_ONLINE_STEPS})"
                          if sizes["corruption_steps"] < MIN_ONLINE_STEPS else "meaningful")
    cost_best = best_returns([json.loads((png.parent / "frontier.json").read_text()) for png in frontier_png.values()])
    lines = reading(rows, agg, ecpo_rows, corruption, sim["rows"], online_verdict, corruption_verdict, cost_best,
                    quick, trained_weights(cells))
    examples = load_episodes(out / "examples.json") if (out / "examples.json").exists() else []
    figures = [("fig_quality_hms.png", "Q and HMS per env and controller with 95% CIs"),
               ("fig_patterns_awr.png", "Pattern rates before and after AWR"),
               ("fig_support_ceiling.png", "Support-ceiling ablation"),
               ("fig_ecpo_corruption.png", "ECPO knowledge-corruption experiment: adaptive vs frozen trust weights")]
    css = ("body{font-family:sans-serif;max-width:1250px;margin:1em auto;padding:0 1em;background:#fafafa;color:#222}"
           "table{border-collapse:collapse;font-size:.8em;margin:.5em 0;background:#fff}"
           "td,th{border:1px solid #ccc;padding:.2em .4em;text-align:left}th{background:#eee}"
           "td.bad{color:#a00}ol.verdicts{font-size:.85em;margin:.2em 0 1em 0}figure{margin:1em 0}img{max-width:100%;border:1px solid #ddd;background:#fff}"
           ".banner{background:#fff3cd;border:1px solid #e0c060;padding:.6em;border-radius:4px}" + EPISODE_STYLE)
    sections = [f"<h1>harness_gym: reproduction report{' (quick run)' if quick else ''}</h1>",
                f'<p class="banner">{html.escape(text_banner)} Generated {time.strftime("%Y-%m-%d %H:%M")} by '
                f'<code>{html.escape(" ".join(argv))}</code>.</p>',
                "<h2>Quality against cost: the learned controllers on the frontier</h2>",
                _img(out / "fig_frontier.png", "Every env: the learned controllers (colour) among the named and "
                     "searched scripts, the probes and the random and oracle references (grey; black diamonds: the "
                     "best searched script at each cost weight); 95% CIs. Per env, with the iso-return lines, in "
                     "'Quality-cost frontier per env' below"),
                "<h2>Reading: what agrees with the papers and what does not</h2><ul>"
                + "".join(f"<li>{html.escape(s)}</li>" for s in lines) + "</ul>",
                "<h2>Harness controllers (offline-RL paper)</h2>", _md_table_html((out / "table_main.md").read_text()),
                _md_table_html((out / "table_harness.md").read_text()),
                "<h2>Aggregate statistics</h2>", _md_table_html((out / "table_aggregate.md").read_text()),
                _img(out / figures[0][0], figures[0][1]), _img(out / figures[1][0], figures[1][1]),
                "<h2>Support-ceiling ablation</h2>", _md_table_html((out / "table_ablation.md").read_text()),
                _img(out / figures[2][0], figures[2][1]),
                "<h2>Quality-cost frontier per env</h2>"]
    for label, png in frontier_png.items():
        sections += [_md_table_html(frontier_md[label]), _img(png, f"{label}: quality against cost")]
    sections += ["<h2>ECPO (second paper)</h2>", _md_table_html((out / "table_ecpo.md").read_text()),
                 _img(out / figures[3][0], figures[3][1]),
                 _md_table_html((out / "table_corruption.md").read_text()),
                 "<h2>Sim-to-real</h2>", _md_table_html((out / "table_sim_to_real.md").read_text()),
                 "<h2>Example episodes</h2>", "".join(episode_html(ep) for ep in examples)]
    (out / "report.html").write_text(f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>harness_gym '
                                     f'reproduction report</title><style>{css}</style></head><body>'
                                     + "\n".join(sections) + "</body></html>")

    outputs = sorted(str(p.relative_to(out)) for p in out.iterdir() if p.is_file() and p.name != "manifest.json")
    profiles = Path(data_path("profiles"))
    manifest = {"quick": quick, "generated": time.strftime("%Y-%m-%dT%H:%M:%S"), "command": argv,
                "settings": settings, "seeds": {"offline": list(range(sizes["seeds"])),
                                                "online": list(range(sizes["online_seeds"])),
                                                "corruption": list(range(sizes["corruption_seeds"])),
                                                "episode_seed_rule": "seed * 1000003 + episode index"},
                "versions": _versions(), "platform": platform.platform(),
                "stages": {name: {"seconds": r["seconds"], "command": r["command"],
                                  "finished_at": r.get("finished_at"), "resumed": bool(r.get("resumed"))}
                           for name, r in stages.items()},
                "seconds_this_invocation": total_seconds, "machine": machine or {},
                "worker_profile_hashes": {p.name: sha256(p) for p in sorted(profiles.glob("*.json"))},
                "data_hashes": data_hashes(settings), "outputs": outputs}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1, default=str))
    return manifest
