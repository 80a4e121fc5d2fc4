"""The rows of the reproduce report, read from the stage result files: the controllers, the verdicts and the
statistics of each row (:func:`harness_rows`, :func:`aggregate_rows`).

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

import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np

from harness_gym_baselines.experiments import offline_comparison
from harness_gym_baselines.experiments.fixed_references import parse_reference_name, reference_names
from harness_gym_baselines.experiments.paper_claims import (
    PAPER_GAIN,
)
from harness_gym_baselines.experiments.statistics import two_level_bootstrap

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
"""Besides these, the best searched script and the closed-loop probe at each cost weight (``best-fixed-w<w>``,
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
    return name in FIXED or (parsed is not None and parsed[0] == "best-fixed")


def _per_seed(cells: list[dict[str, Any]], key: str) -> list[np.ndarray]:
    return [np.array([float(r[key]) for r in c["records"]], dtype=float) for c in cells]


def base_env(label: str) -> str:
    """The env id of a table label (``HarnessTauRetail-v2+tau`` -> ``HarnessTauRetail-v2``)."""
    return label.split("+", 1)[0]


def env_name(label: str) -> str:
    """The env name of a table label, without variant or version (``HarnessTauRetail-v2+tau`` ->
    ``HarnessTauRetail``): what the paper's figures (:data:`PAPER_GAIN`) are keyed by."""
    return re.sub(r"-v\d+$", "", base_env(label))


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
            row["paper_gain"] = PAPER_GAIN.get(env_name(label)) if name in ("awr", "awr-q") else None
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


def short_label(label: str) -> str:
    """An env label without ``Harness`` and its version (``HarnessCode-v2`` -> ``Code``, ``HarnessTauRetail-v2+tau``
    -> ``TauRetail+tau``), for figures and sentences."""
    return re.sub(r"-v\d+(?=\+|$)", "", label.removeprefix("Harness"))
