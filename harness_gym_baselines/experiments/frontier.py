"""The quality-cost frontier: controllers as points (or curves) of mean quality against mean episode cost.

    harness-gym frontier ENV --cost-weights 0,0.01,0.1 [--policy NAME_OR_FILE ...] --out DIR

Every controller is evaluated once on the same seeded test episodes: what a controller does never depends on
the env's ``cost_weight`` (it reads observations, not rewards), and an episode's return is exactly
``Q - cost_weight * cost`` (``harness_gym.core.cost``), so the return at each cost weight is computed from the
per-episode quality and cost of that one evaluation. A learned controller trained at one cost weight is one
point; give the models trained at several cost weights as ``LABEL@W=FILE`` and they are joined into a curve.

Writes ``frontier.json`` (one row per controller: quality and cost with 95% bootstrap CIs, the mean return at
each cost weight), ``frontier.md`` (the returns table; the best return per cost weight in bold) and
``frontier.png`` (quality against cost, one marker per controller, dashed iso-return lines through the best
controller at each positive cost weight; markers shrink in drawing order, so controllers at one point all show:
:func:`marker_styles`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from harness_gym_baselines.evaluate import run_episodes

FIXED_POLICIES: tuple[str, ...] = ("static", "forced-check", "thorough", "random", "oracle")
"""The registered controllers the frontier evaluates unless told otherwise."""

_TRAINED_AT = re.compile(r"^(?P<label>[^@=]+)@(?P<weight>[0-9.eE+-]+)=(?P<path>.+)$")


def parse_cost_weights(text: str) -> list[float]:
    """``"0,0.01,0.1"`` as a list of floats; a clear error for a bad entry.

    :param text: comma-separated cost weights
    """
    weights = []
    for part in text.split(","):
        try:
            value = float(part)
        except ValueError:
            raise ValueError(f"--cost-weights: {part!r} is not a number (expected e.g. 0,0.01,0.1)") from None
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"--cost-weights: {part!r} must be a finite number >= 0")
        weights.append(value)
    if not weights:
        raise ValueError("--cost-weights: give at least one cost weight")
    return weights


def parse_policy_spec(spec: str) -> tuple[str, str, float | None]:
    """``(label, policy, trained_at)`` from ``NAME``, ``FILE``, ``LABEL=FILE`` or ``LABEL@W=FILE``.

    :param spec: one ``--policy`` value
    """
    m = _TRAINED_AT.match(spec)
    if m is not None:
        return m.group("label"), m.group("path"), float(m.group("weight"))
    label, sep, path = spec.partition("=")
    if sep and label and path:
        return label, path, None
    is_file = Path(spec).is_file() or "/" in spec or Path(spec).suffix in (".pt", ".zip", ".pth")
    return Path(spec).stem if is_file and ":" not in spec else spec, spec, None


def frontier_rows(env_id: str, policies: Sequence[str], cost_weights: Sequence[float], *, episodes: int,
                  split: str = "test", seed: int = 0, env_kwargs: dict[str, Any] | None = None,
                  progress: bool = False, out: Path | None = None, num_workers: int = 1) -> list[dict[str, Any]]:
    """One row per controller: its evaluation summary plus ``return_at`` (cost weight -> mean return) and
    ``trained_at`` (the cost weight a learned model was trained at, if given). Each controller is one task of
    :func:`~harness_gym_baselines.experiments.engine.run_tasks` (:func:`frontier_cell`).

    :param env_id: a registered env id
    :param policies: ``--policy`` specs (:func:`parse_policy_spec`)
    :param cost_weights: the cost weights to report returns at
    :param episodes: evaluation episodes per controller
    :param split: the task split
    :param seed: the run's seed (the same episodes for every controller)
    :param env_kwargs: other constructor arguments of the env (its own ``cost_weight`` is ignored)
    :param progress: a progress bar per controller (on stderr)
    :param out: the folder whose ``tasks/`` keeps the task records, so that a rerun with the same settings
        resumes (``None``: a temporary folder, every controller evaluated afresh: a model file may have changed)
    :param num_workers: controllers evaluated at once
    """
    import tempfile

    from harness_gym_baselines.experiments.engine import Task, run_tasks, settings_digest

    kwargs = {k: v for k, v in (env_kwargs or {}).items() if k != "cost_weight"}
    settings = {"env_id": env_id, "cost_weights": list(cost_weights), "episodes": episodes, "split": split,
                "seed": seed, "env_kwargs": kwargs}
    plan = [Task(f"frontier:{parse_policy_spec(spec)[0]}:{settings_digest([spec, settings])}", frontier_cell,
                 {"spec": spec, **settings, "progress": progress and num_workers == 1},
                 f"harness-gym frontier {env_id} --policy {spec} --episodes {episodes} --seed {seed}")
            for spec in policies]
    with tempfile.TemporaryDirectory() as tmp:
        records = run_tasks(plan, out if out is not None else Path(tmp), num_workers, records_dir="tasks",
                            what="frontier controller")
    return [records[task.name]["result"] for task in plan]


def frontier_cell(spec: str, env_id: str, cost_weights: list[float], episodes: int, split: str, seed: int,
                  env_kwargs: dict[str, Any], progress: bool) -> dict[str, Any]:
    """The frontier row of one controller (``spec``: :func:`parse_policy_spec`); :func:`frontier_rows`' arguments."""
    import gymnasium as gym

    from harness_gym_baselines.policies.registry import make_policy

    label, name, trained_at = parse_policy_spec(spec)
    policy = make_policy(name)
    env = gym.make(env_id, **env_kwargs)
    try:
        records = run_episodes(env, policy, episodes, split=split, seed=seed, progress=progress)
    finally:
        env.close()
    return frontier_row(records, label, cost_weights, trained_at=trained_at, env_id=env_id, split=split, seed=seed)


def frontier_row(records: Sequence[dict[str, Any]], label: str, cost_weights: Sequence[float], *,
                 trained_at: float | None, env_id: str, split: str = "test", seed: int = 0) -> dict[str, Any]:
    """One frontier row from a controller's evaluated episodes (:func:`harness_gym_baselines.evaluate.run_episodes`
    records): the evaluation summary plus ``return_at`` and ``trained_at``.

    :param records: per-episode records (quality, cost, ...)
    :param label: the controller's name in the plot and table
    :param cost_weights: the cost weights to report returns at
    :param trained_at: the cost weight a learned model was trained at (``None`` for a fixed script)
    :param env_id: the env id reported
    :param split: the split reported
    :param seed: seed of the bootstrap CIs
    """
    from harness_gym_baselines.evaluate import finished_records, summarise

    summary = summarise(list(records), env_id=env_id, policy=label, split=split, seconds=0.0, seed=seed)
    graded = finished_records(list(records))
    q = np.array([r["quality"] for r in graded], dtype=float)
    cost = np.array([r["cost"] for r in graded], dtype=float)
    summary["return_at"] = {str(w): float(np.mean(q - w * cost)) for w in cost_weights}
    summary["trained_at"] = trained_at
    return summary


MARKERS = "osD^v<>pPX*h"
COLOURS = ("C0", "C1", "C2", "C3", "C4", "C5", "C6", "C7", "C8", "C9", "black", "olive")


def marker_styles(n: int) -> list[dict[str, Any]]:
    """The marker of each of ``n`` controllers in drawing order: a distinct shape drawn as an outline (no fill),
    a size that shrinks and a z-order that grows with the order. Controllers at the same point (BC cloning the
    static script it learned from lands on static's point) stay visible: no marker covers another, and each
    later, smaller outline sits inside the earlier ones.

    :param n: how many controllers are drawn
    """
    return [{"fmt": MARKERS[i % len(MARKERS)], "markersize": max(4.0, 20.0 - 1.6 * i), "zorder": 3 + i,
             "markerfacecolor": "none", "markeredgewidth": 1.2, "color": COLOURS[i % len(COLOURS)]} for i in range(n)]


MAX_SERIES = 8
"""the most controllers a frontier plot draws with their own marker and legend entry"""
NAMED_FIRST = ("static", "forced-check", "thorough", "oracle")
"""the controllers a frontier plot always draws (when present), before those with the best returns"""


def series_to_draw(groups: dict[str, list[dict[str, Any]]], limit: int = MAX_SERIES) -> list[str]:
    """The labels a frontier plot draws with markers and legend entries: :data:`NAMED_FIRST`, then the others by
    their best return at any cost weight, the controllers before the references (``best-fixed-*``, ``probe-*``,
    which have their own tables), at most ``limit``; the order of ``groups`` is kept.

    :param groups: label -> its rows (``return_at``)
    :param limit: the most labels
    """
    named = [label for label in NAMED_FIRST if label in groups]
    best = {label: max(v for r in members for v in r["return_at"].values()) for label, members in groups.items()}
    others = sorted((label for label in groups if label not in named),
                    key=lambda label: (label.startswith(("best-fixed", "probe")), -best[label]))
    keep = set((named + others)[:limit])
    return [label for label in groups if label in keep]


def plot_frontier(rows: Sequence[dict[str, Any]], cost_weights: Sequence[float], path: Path, title: str) -> Path:
    """Draw quality against episode cost: one marker with CI bars per controller for at most :data:`MAX_SERIES`
    of them (:func:`series_to_draw`; the others as small grey outlines, their numbers in frontier.md), the legend
    right of the axes, controllers sharing a label
    and trained at several cost weights joined in order of the weight, dashed iso-return lines
    ``Q = R* + w * cost`` through the best return R* at each positive cost weight w.

    :param rows: :func:`frontier_rows` rows (``policy``, ``quality_mean``, ``quality_ci95``, ``cost_mean``,
        ``cost_ci95``, ``return_at``, ``trained_at``)
    :param cost_weights: the cost weights of the iso-return lines
    :param path: the PNG to write
    :param title: the plot title
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9.0, 5.0))
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(row["policy"], []).append(row)
    drawn = series_to_draw(groups)
    for label, members in groups.items():  # the rest: small grey outlines, named in frontier.md's table
        if label not in drawn:
            ax.plot([r["cost_mean"] for r in members], [r["quality_mean"] for r in members], "o", color="grey",
                    markerfacecolor="none", markersize=4, zorder=2)
    if len(drawn) < len(groups):
        ax.plot([], [], "o", color="grey", markerfacecolor="none", markersize=4,
                label=f"{len(groups) - len(drawn)} more (frontier.md)")
    for (label, members), style in zip(((k, groups[k]) for k in drawn), marker_styles(len(drawn))):
        members = sorted(members, key=lambda r: r["trained_at"] or 0.0)
        x = [r["cost_mean"] for r in members]
        y = [r["quality_mean"] for r in members]
        xerr = np.array([[r["cost_mean"] - r["cost_ci95"][0], r["cost_ci95"][1] - r["cost_mean"]] for r in members]).T
        yerr = np.array([[r["quality_mean"] - r["quality_ci95"][0], r["quality_ci95"][1] - r["quality_mean"]]
                         for r in members]).T
        line = "-" if len(members) > 1 else "none"
        handle = ax.errorbar(x, y, xerr=xerr, yerr=yerr, linestyle=line, capsize=2, label=label,
                             elinewidth=0.8, **style)
        if len(members) > 1:
            for r in members:
                ax.annotate(f"w={r['trained_at']:g}", (r["cost_mean"], r["quality_mean"]), fontsize=7,
                            xytext=(3, 3), textcoords="offset points", color=handle[0].get_color())
    xmax = max(r["cost_ci95"][1] for r in rows) * 1.1 or 1.0
    xs = np.linspace(0, xmax, 50)
    dashes = iter(["--", ":", "-.", (0, (5, 1, 1, 1, 1, 1))] * len(cost_weights))
    for w in cost_weights:
        if w <= 0:
            continue
        best = max(rows, key=lambda r: r["return_at"][str(w)])
        r_star = best["return_at"][str(w)]
        # labelled in the legend, not on the line, where the label would cover the points near cost 0
        ax.plot(xs, r_star + w * xs, linestyle=next(dashes), linewidth=0.9, color="grey",
                label=f"iso-return w={w:g}: best {best['policy']} ({r_star:.3f})")
    ax.set_xlabel("mean episode cost (units of US$0.0001; gpt-4o-mini list prices)")
    ax.set_ylabel("mean quality Q (test split)")
    ax.set_title(title)
    ax.set_ylim(-0.02, 1.05)
    ax.set_xlim(0, xmax)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), markerscale=0.6, frameon=False)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=120, bbox_inches="tight")  # the legend sits right of the axes, outside the data
    plt.close(fig)
    return path


def plot_frontier_panels(panels: dict[str, Sequence[dict[str, Any]]], learned: Sequence[str], path: Path,
                         title: str) -> Path:
    """Quality against episode cost, one panel per env, the learned controllers in colour on the scripts' field:
    each learned controller (a name of ``learned``; the ``MAX_SERIES - 2`` with the highest mean Q, the others
    grey) is a filled marker of its own colour with CI bars, at the cost
    weight it was trained at; the fixed scripts, the searched scripts and probes and the random and oracle
    references are small grey outlines, the best searched script at each cost weight a black diamond. The same
    rows as :func:`plot_frontier`'s per-env figures.

    :param panels: env label -> :func:`frontier_row` rows
    :param learned: the learned controllers' names, in legend order
    :param path: the PNG to write
    :param title: the figure title
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(panels)
    cols = min(n, 4)
    rows_n = -(-n // cols)
    fig, axes = plt.subplots(rows_n, cols, figsize=(max(4.2 * cols, 7.5), 3.6 * rows_n + 1.2), squeeze=False,
                             sharey=True)
    present = [name for name in learned if any(r["policy"] == name for rows in panels.values() for r in rows)]
    mean_q = {name: np.mean([r["quality_mean"] for rows in panels.values() for r in rows if r["policy"] == name])
              for name in present}
    keep = set(sorted(present, key=lambda name: -mean_q[name])[:MAX_SERIES - 2])  # 2 entries: the scripts' marks
    present = [name for name in present if name in keep]
    hues = [c for c in COLOURS if c not in ("C7", "black")]  # grey and black are the scripts'
    colour = {name: hues[i % len(hues)] for i, name in enumerate(present)}
    shapes = [m for m in MARKERS if m not in "oD"]  # those two mark the scripts and the best searched one
    marker = {name: shapes[i % len(shapes)] for i, name in enumerate(present)}
    for ax, (label, rows) in zip(axes.flat, panels.items()):
        for r in rows:
            xerr = [[r["cost_mean"] - r["cost_ci95"][0]], [r["cost_ci95"][1] - r["cost_mean"]]]
            yerr = [[r["quality_mean"] - r["quality_ci95"][0]], [r["quality_ci95"][1] - r["quality_mean"]]]
            if r["policy"] in colour:
                ax.errorbar([r["cost_mean"]], [r["quality_mean"]], xerr=xerr, yerr=yerr, fmt=marker[r["policy"]],
                            color=colour[r["policy"]], markersize=7, elinewidth=0.7, capsize=1.5, zorder=4)
            elif r["policy"].startswith("best-fixed"):
                ax.plot([r["cost_mean"]], [r["quality_mean"]], "D", color="black", markersize=6, zorder=5)
            else:
                ax.plot([r["cost_mean"]], [r["quality_mean"]], "o", markerfacecolor="none", color="grey",
                        markersize=5, zorder=2)
                if r["policy"] in ("static", "forced-check", "thorough", "oracle"):
                    ax.annotate(r["policy"], (r["cost_mean"], r["quality_mean"]), fontsize=6, color="dimgrey",
                                xytext=(3, -8), textcoords="offset points")
        ax.set_title(label.removeprefix("Harness"), fontsize=10)
        ax.set_xlim(0, max(r["cost_ci95"][1] for r in rows) * 1.1 or 1.0)
        ax.set_ylim(-0.02, 1.05)
        ax.grid(alpha=0.3)
        ax.set_xlabel("mean episode cost (units)", fontsize=8)
    for ax in axes.flat[n:]:
        ax.axis("off")
    for ax in axes[:, 0]:
        ax.set_ylabel("mean quality Q (test split)")
    handles = [plt.Line2D([], [], linestyle="none", marker=marker[name], color=colour[name], label=name)
               for name in present]
    handles += [plt.Line2D([], [], linestyle="none", marker="D", color="black", label="best searched script (each w)"),
                plt.Line2D([], [], linestyle="none", marker="o", markerfacecolor="none", color="grey",
                           label="named scripts, probes, random, oracle")]
    ncol = min(len(handles), 4)
    legend_rows = -(-len(handles) // ncol)
    fig.legend(handles=handles, loc="lower center", ncol=ncol, fontsize=8, frameon=False)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, (0.3 * legend_rows + 0.1) / fig.get_figheight(), 1, 0.95))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight")  # a title wider than the panels widens the image, uncut
    plt.close(fig)
    return path


def returns_table(rows: Sequence[dict[str, Any]], cost_weights: Sequence[float]) -> str:
    """A Markdown table: controller, quality, cost and the return at every cost weight (the best in bold).

    :param rows: :func:`frontier_rows` rows
    :param cost_weights: the cost weights
    """
    best = {w: max(r["return_at"][str(w)] for r in rows) for w in cost_weights}
    head = "| controller | Q [95% CI] | cost [95% CI] | " + " | ".join(f"return at w={w:g}" for w in cost_weights) + " |"
    lines = [head, "|" + "---|" * (3 + len(cost_weights))]
    for r in rows:
        name = r["policy"] + (f" (trained at w={r['trained_at']:g})" if r.get("trained_at") is not None else "")
        cells = []
        for w in cost_weights:
            value = r["return_at"][str(w)]
            cells.append(f"**{value:.3f}**" if value == best[w] else f"{value:.3f}")
        lines.append(f"| {name} | {r['quality_mean']:.3f} [{r['quality_ci95'][0]:.3f}, {r['quality_ci95'][1]:.3f}] | "
                     f"{r['cost_mean']:.2f} [{r['cost_ci95'][0]:.2f}, {r['cost_ci95'][1]:.2f}] | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_frontier(out: Path, env_id: str, rows: list[dict[str, Any]], cost_weights: Sequence[float], *,
                   title_suffix: str = "") -> dict[str, Path]:
    """Write ``frontier.json``, ``frontier.md`` and ``frontier.png`` under ``out``.

    :param out: the output folder
    :param env_id: the env id (titles)
    :param rows: :func:`frontier_rows` rows
    :param cost_weights: the cost weights
    :param title_suffix: appended to the plot title
    """
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "frontier.json", "md": out / "frontier.md", "png": out / "frontier.png"}
    paths["json"].write_text(json.dumps({"env_id": env_id, "cost_weights": list(cost_weights), "rows": rows},
                                        indent=1, default=float))
    paths["md"].write_text(f"{env_id}: quality, cost and return per cost weight{title_suffix}\n\n"
                           + returns_table(rows, cost_weights) + "\n")
    plot_frontier(rows, cost_weights, paths["png"], f"{env_id}: quality against cost{title_suffix}")
    return paths

