"""The figures of the reproduce report (matplotlib, Agg): Q and HMS, patterns, the support ceiling and the
quality-cost frontiers, at most :data:`MAX_SERIES` controllers in colour each."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from harness_gym.core.maturity import PATTERNS
from harness_gym_baselines.experiments.fixed_references import reference_names
from harness_gym_baselines.report.rows import (
    ABLATION,
    FIXED,
    FRONTIER,
    LEARNED,
    SAMPLED,
    controllers,
    is_fixed_script,
    short_label,
    train_cost_weight,
)


# ----- figures ------------------------------------------------------------------------------------------
def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"font.size": 9, "axes.titlesize": 10})
    return plt


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
    axes[1].set_xticks(np.arange(len(labels)), [short_label(e) for e in labels], rotation=20)
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
        ax.set_title(short_label(label))
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
    ax_c.set_xticks(x, [short_label(e) for e in labels], rotation=20)
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


