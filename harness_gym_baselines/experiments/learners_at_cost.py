"""Learners at a cost: every learned controller trained at the cost weight it is judged at, beside the best
searched script, the closed-loop probe and the named scripts (issue 24, "Must show", first bullet).

    python -m harness_gym_baselines.experiments.learners_at_cost --envs HarnessPlan-v1,HarnessCode-v1
        --cost-weights 0,0.01,0.1 --out results/learners_at_cost [--quick] [--num-workers 2]
        [--prices PROFILE] [--size FIELD=VALUE ...]

For each env (at one price profile, ``--prices``, default the cheap-hosted ``default``) and each cost weight ``w``
(return ``Q - w * cost units``; every env, search, buffer, trainer and evaluation is built with the profile):

- **references**: ``forced-check`` and ``static`` (:mod:`harness_gym_baselines.policies.scripted`),
  ``best-fixed``, the winner at ``w`` of the open-loop script search (one search per env serving every
  ``w``, chosen on train and val), and ``probe``, the closed-loop linear probe fitted at ``w``, both from
  :func:`~harness_gym_baselines.experiments.fixed_references.fixed_references` (cached under ``OUT/references``);
- **offline learners** ``bc``, ``awr`` (sample advantage), ``awr-q`` (fitted advantage), ``iql``, ``cql``, each
  with its config's defaults, trained on a behaviour buffer collected on the env built with ``cost_weight=w``
  (the coverage mixture of :func:`~harness_gym_baselines.experiments.offline_comparison.run_env`,
  :mod:`harness_gym_baselines.policies.coverage`, over the top scripts of its small search for every ``w``); one buffer
  per (env, w, offline seed). The buffer's observations and actions do not depend on ``w``, only its rewards
  do, so one buffer relabelled per ``w`` would serve too; collecting per ``w`` keeps every dataset exactly what
  ``harness-gym collect --cost-weight W`` writes;
- **online learners** ``ppo-sparse``, ``ppo-dense``, ``ecpo``, ``ecpo-pb`` trained with ``cost_weight=w`` at
  the defaults of their configs (:class:`~harness_gym_baselines.algos.ppo.PPOConfig`: the step budget is
  the ``online_steps`` size), each reported greedy (the mode of the policy) and sampled (``-sampled``).

Every controller plays the same seeded test episodes (episode ``i`` resets with
``episode_seed(test_seed, i)``, :func:`~harness_gym_baselines.experiments.offline_comparison.run_cell`), so
differences are paired. Nothing is tuned per env: the sizes (:class:`Sizes`) are the same for every env.

The table (``table.md``, ``table.csv``, ``table.json`` under ``--out``), per env, ``w`` and controller: mean
return, Q and cost with 95% CIs (two-level bootstrap over training seeds, then episodes:
:func:`~harness_gym_baselines.experiments.statistics.two_level_bootstrap`), the forced-submit rate, the
number of seeds and, for the learned rows and the probe, the paired per-episode return difference to the best
script at ``w`` with its CI, and the seed spread of a row trained on several seeds (the largest minus the
smallest of its seeds' mean returns). Three summary lines are computed from the rows (:func:`summary_lines`):

- **beats the best fixed**: a learned row whose paired difference to the best fixed has a CI above 0; the
  line counts the envs with at least one such (env, w, controller) and lists them;
- **forced-check's Q at half its cost**: a learned row (any ``w``) with mean Q >= forced-check's mean Q and
  mean cost <= 0.5 x forced-check's mean cost on the same env. Q and cost do not depend on ``w`` for a fixed
  script, so forced-check's row at the same ``w`` is the bar (the bar cascades and routers such as FrugalGPT,
  AutoMix and RouteLLM report against their always-strong model);
- **beyond the seed spread**: of the rows of the first line, those whose mean difference to the best fixed is
  larger than their own seed spread (a row of one seed has none and is not counted).

``table.md`` opens with a condensed table: per env and ``w``, the learned row with the best mean return beside
forced-check, the best fixed and the probe.

Resumable: every (env, w, controller, seed) cell is a JSON file ``cells/<env>/w<w>/<controller>-seed<s>.json``
with its per-episode records, every model and buffer is kept, and a rerun with the same ``--out`` skips what is
finished. ``--num-workers N`` runs independent cells in N spawned processes (the script searches first, then
every reference, offline and online cell set).
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import difflib
import json
import os
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import harness_gym  # noqa: F401  (registers the env ids, also in worker processes)
from harness_gym.core.prices import DEFAULT_PROFILE
from harness_gym_baselines.common.dataclass_flags import doc_summary
from harness_gym_baselines.common.options import prices_name
from harness_gym_baselines.experiments.engine import Task, progress_bar, run_tasks
from harness_gym_baselines.experiments.fixed_references import ReferenceSizes, fixed_references
from harness_gym_baselines.experiments.frontier import parse_cost_weights
from harness_gym_baselines.experiments.offline_comparison import run_cell
from harness_gym_baselines.experiments.script_search import SearchConfig
from harness_gym_baselines.experiments.specs import provenance_line
from harness_gym_baselines.experiments.specs.sizes import LEARNERS_FULL as FULL
from harness_gym_baselines.experiments.specs.sizes import LEARNERS_QUICK as QUICK
from harness_gym_baselines.experiments.specs.sizes import LearnersAtCostSizes as Sizes
from harness_gym_baselines.experiments.specs.sizes import with_sizes
from harness_gym_baselines.experiments.statistics import mean_ci, paired_difference
from harness_gym_baselines.experiments.statistics import seed_spread as spread_of

REFERENCES: tuple[str, ...] = ("forced-check", "static", "best-fixed", "probe")
"""The fixed and probe controllers every learned row is judged against."""
OFFLINE: tuple[str, ...] = ("bc", "awr", "awr-q", "iql", "cql")
"""The offline learners, trained on the behaviour buffer collected at ``w``."""
ONLINE: tuple[str, ...] = ("ppo-sparse", "ppo-dense", "ecpo", "ecpo-pb")
"""The online trainers (:data:`~harness_gym_baselines.common.trainer_registry.TRAINERS`), trained at ``w``."""
SAMPLED = "-sampled"
"""Suffix of an online learner's row when its policy samples actions instead of taking the mode."""
LEARNED: tuple[str, ...] = OFFLINE + tuple(c for name in ONLINE for c in (name, name + SAMPLED))
"""Every learned row of a cell set."""
CONTROLLERS: tuple[str, ...] = REFERENCES + LEARNED
"""Every row of one (env, w), in table order."""
_TRAINER_OF_OFFLINE = {"bc": "bc", "awr": "awr", "awr-q": "awr", "iql": "iql", "cql": "cql"}


# ----- where things are written ---------------------------------------------------------------------------------
def wkey(w: float) -> str:
    """How a cost weight is written in keys and folder names (``0.01``)."""
    return f"{w:g}"


def cell_path(out: Path, env_id: str, w: float, controller: str, seed: int) -> Path:
    """The JSON file of one (env, w, controller, seed) cell."""
    return out / "cells" / env_id / f"w{wkey(w)}" / f"{controller}-seed{seed}.json"


def dataset_id(env_id: str, w: float, seed: int) -> str:
    """The Minari id of the behaviour buffer of ``env_id`` collected at ``w`` with ``seed``."""
    slug = short_name(env_id).lower()
    return f"harness/{slug}-coverage-w{wkey(w).replace('.', 'p')}-seed{seed}-v0"


def short_name(env_id: str) -> str:
    """``HarnessCode-v2`` as ``Code`` (tables and dataset ids)."""
    name, sep, version = env_id.removeprefix("Harness").rpartition("-v")
    return name if sep and version.isdigit() else env_id.removeprefix("Harness")


def price_kwargs(prices: str) -> dict[str, Any]:
    """The env keywords of a price profile: none for the default (cells and searches keep their v1 settings)."""
    return {} if prices == DEFAULT_PROFILE else {"prices": prices}


# ----- the cell sets (each one a job of the process pool) -------------------------------------------------------
def reference_sizes(sizes: Sizes) -> ReferenceSizes:
    """The search and probe sizes of :func:`~harness_gym_baselines.experiments.fixed_references.fixed_references`
    from ours."""
    return ReferenceSizes(rounds=sizes.search_rounds, val_episodes=sizes.search_val_episodes,
                          bc_episodes=sizes.probe_bc_episodes, cem_iterations=sizes.probe_cem_iterations,
                          cem_population=sizes.probe_cem_population, cem_elite=sizes.probe_cem_elite,
                          cem_episodes=sizes.probe_cem_episodes)


def _references(env_id: str, w: float, weights: Sequence[float], sizes: Sizes, out: Path,
                prices: str) -> dict[str, tuple[Any, dict]]:
    """The reference controllers at ``w``: {name: (policy, what to record with its cell)}."""
    from harness_gym_baselines.policies.registry import make_policy

    found = fixed_references(env_id, weights, cache_dir=out / "references", sizes=reference_sizes(sizes),
                             env_kwargs=price_kwargs(prices))[w]
    record = {key: found.record[key] for key in ("script", "script_val_return", "probe_val_return", "probe_chosen")}
    return {"forced-check": (make_policy("forced-check"), {}), "static": (make_policy("static"), {}),
            "best-fixed": (found.script, {"script": found.record["script"]}),
            "probe": (found.probe, {"reference": record, "probe_weights": found.record["probe_weights"]})}


def _coverage_args(weights: Sequence[float], out: Path) -> argparse.Namespace:
    """What :func:`~harness_gym_baselines.experiments.offline_comparison.coverage_scripts` reads: the small
    search of :func:`run_search` (every weight, once per env, ``out/coverage_scripts``)."""
    return argparse.Namespace(scripts=str(out / "coverage_scripts"), out=str(out / "coverage_search"),
                              cost_weight=max(weights), quiet=True)


def run_search(env_id: str, weights: Sequence[float], sizes: Sizes, out: Path, prices: str = DEFAULT_PROFILE) -> str:
    """The script search and the probes of ``env_id`` (cached under ``out/references``), and the small search
    whose top scripts the coverage buffers play (``out/coverage_scripts``)."""
    from harness_gym_baselines.experiments.offline_comparison import SMALL_SEARCH
    from harness_gym_baselines.experiments.script_search import search_to_file

    fixed_references(env_id, weights, cache_dir=out / "references", sizes=reference_sizes(sizes),
                     env_kwargs=price_kwargs(prices))
    search_to_file(SearchConfig(env_id, cost_weights=tuple(sorted({0.0, *map(float, weights)})),
                                env_kwargs=price_kwargs(prices), **SMALL_SEARCH), out / "coverage_scripts")
    return f"{env_id} script search and probes"


def run_references(env_id: str, w: float, weights: Sequence[float], sizes: Sizes, out: Path,
                   prices: str = DEFAULT_PROFILE) -> str:
    """Evaluate every reference controller of (env, w) on the test episodes."""
    paths = {name: cell_path(out, env_id, w, name, 0) for name in REFERENCES}
    if not all(p.exists() for p in paths.values()):
        for name, (policy, extra) in _references(env_id, w, weights, sizes, out, prices).items():
            policy.name = name
            run_cell(paths[name], env_id, policy, name, episodes=sizes.test_episodes, seed=sizes.test_seed,
                     extra={"train_seed": 0, **extra}, cost_weight=w, env_kwargs=price_kwargs(prices))
    return f"{env_id} w={wkey(w)} references"


def run_offline(env_id: str, w: float, seed: int, sizes: Sizes, out: Path, prices: str = DEFAULT_PROFILE) -> str:
    """Collect the behaviour buffer of (env, w, seed), train every offline learner on it and evaluate them."""
    paths = {name: cell_path(out, env_id, w, name, seed) for name in OFFLINE}
    if all(p.exists() for p in paths.values()):
        return f"{env_id} w={wkey(w)} offline seed {seed}"
    from harness_gym.datasets import collect, load_transitions
    from harness_gym_baselines.common.trainer_registry import load_trainer
    from harness_gym_baselines.experiments.offline_comparison import coverage_scripts
    from harness_gym_baselines.policies.coverage import CoveragePolicy

    dsid = dataset_id(env_id, w, seed)
    start = time.perf_counter()
    behaviour = CoveragePolicy(coverage_scripts(env_id, _coverage_args((w,), out), price_kwargs(prices)))
    collect(env_id, behaviour, dsid, episodes=sizes.buffer_episodes, seed=seed, progress=False,
            env_kwargs={"cost_weight": w, **price_kwargs(prices)})
    collect_seconds = time.perf_counter() - start
    data = None
    for name, path in paths.items():
        if path.exists():
            continue
        trainer = load_trainer(_TRAINER_OF_OFFLINE[name])
        model = out / "models" / env_id / f"w{wkey(w)}" / f"{name}-seed{seed}.pt"
        extra: dict[str, Any] = {"train_seed": seed, "dataset_id": dsid, "collect_seconds": collect_seconds}
        if not model.exists():
            data = data if data is not None else load_transitions(dsid)
            settings: dict[str, Any] = {"dataset_id": dsid, "out": str(model), "seed": seed, "eval_episodes": 0,
                                        "log_dir": str(out / "runs"), "progress": False, "epochs": sizes.epochs,
                                        "value_steps": sizes.value_steps}
            if name.startswith("awr"):
                settings["advantage"] = "q" if name == "awr-q" else "mc"
            start = time.perf_counter()
            trainer.train(trainer_config(trainer.config, settings), data)
            extra["train_seconds"] = time.perf_counter() - start
        policy = trainer.load(model)
        policy.name = name
        run_cell(path, env_id, policy, name, episodes=sizes.test_episodes, seed=sizes.test_seed, extra=extra,
                 cost_weight=w, env_kwargs=price_kwargs(prices))
    return f"{env_id} w={wkey(w)} offline seed {seed}"


def run_online(env_id: str, w: float, algo: str, seed: int, sizes: Sizes, out: Path,
               prices: str = DEFAULT_PROFILE) -> str:
    """Train one online learner at (env, w, seed) and evaluate its greedy and its sampled policy."""
    paths = {name: cell_path(out, env_id, w, name, seed) for name in (algo, algo + SAMPLED)}
    if all(p.exists() for p in paths.values()):
        return f"{env_id} w={wkey(w)} {algo} seed {seed}"
    from harness_gym_baselines.common.trainer_registry import load_trainer

    trainer = load_trainer(algo)
    model = out / "models" / env_id / f"w{wkey(w)}" / f"{algo}-seed{seed}.zip"
    extra: dict[str, Any] = {"train_seed": seed}
    if not model.exists():
        settings = {"env_id": env_id, "out": str(model), "seed": seed, "cost_weight": w, "prices": prices,
                    "steps": sizes.online_steps,
                    "preference_episodes": sizes.ecpo_preference_episodes, "final_eval_episodes": 0,
                    "log_dir": str(out / "runs"), "progress": False}
        start = time.perf_counter()
        trainer.train(trainer_config(trainer.config, settings))
        extra["train_seconds"] = time.perf_counter() - start
    for name, path in paths.items():
        policy = trainer.load(model)
        policy.name, policy.deterministic = name, not name.endswith(SAMPLED)
        run_cell(path, env_id, policy, name, episodes=sizes.test_episodes, seed=sizes.test_seed, extra=extra,
                 cost_weight=w, env_kwargs=price_kwargs(prices))
    return f"{env_id} w={wkey(w)} {algo} seed {seed}"


def trainer_config(config: type, settings: dict[str, Any]) -> Any:
    """``config(**settings)`` with the settings it has no field for, or left at ``None``, dropped."""
    fields = {f.name for f in dataclasses.fields(config) if f.init}
    return config(**{k: v for k, v in settings.items() if k in fields and v is not None})


def jobs(env_ids: Sequence[str], weights: Sequence[float], sizes: Sizes, out: Path,
         prices: str = DEFAULT_PROFILE) -> list[Task]:
    """The plan of :func:`run_all`: each env's script search, then its cell sets, the slowest kinds first (each
    cell set needs its env's search: the references and the offline buffers' coverage scripts come from it)."""
    def task(fn: Any, name: str, env_id: str, **kwargs: Any) -> Task:
        return Task(name, fn, {"env_id": env_id, "sizes": sizes, "out": out, "prices": prices, **kwargs},
                    f"{fn.__name__}({env_id!r}, ...)", needs=(f"search:{env_id}",))

    searches = [Task(f"search:{e}", run_search, {"env_id": e, "weights": tuple(weights), "sizes": sizes, "out": out,
                                                 "prices": prices},
                     f"run_search({e!r}, ...)") for e in env_ids]
    online = [task(run_online, f"online:{e}:w{wkey(w)}:{algo}:seed{s}", e, w=w, algo=algo, seed=s)
              for e in env_ids for w in weights for algo in ONLINE for s in range(sizes.online_seeds)]
    offline = [task(run_offline, f"offline:{e}:w{wkey(w)}:seed{s}", e, w=w, seed=s)
               for e in env_ids for w in weights for s in range(sizes.offline_seeds)]
    references = [task(run_references, f"references:{e}:w{wkey(w)}", e, w=w, weights=tuple(weights))
                  for e in env_ids for w in weights]
    return searches + online + offline + references


def run_all(env_ids: Sequence[str], weights: Sequence[float], sizes: Sizes, out: Path, *, num_workers: int = 1,
            progress: bool = True, prices: str = DEFAULT_PROFILE) -> None:
    """Run (or resume) every cell set with :func:`~harness_gym_baselines.experiments.engine.run_tasks`: the
    script searches first (the references need them), then the rest.

    :param env_ids: registered env ids
    :param weights: the cost weights
    :param sizes: the sizes
    :param out: the output folder (the task records under ``OUT/tasks``)
    :param num_workers: processes running cell sets at once (1: this process)
    :param progress: show a progress bar over the cell sets
    :param prices: the price profile of every env
    """
    plan = jobs(env_ids, weights, sizes, out, prices)
    with progress_bar("cell sets", len(plan), enabled=progress, print_each=False) as bar:
        run_tasks(plan, out, num_workers, started=bar.started, finished=bar.finished, records_dir="tasks",
                  what="learners_at_cost task")


# ----- the table -------------------------------------------------------------------------------------------------
def _per_seed(cells: list[dict[str, Any]], key: str) -> list[np.ndarray]:
    from harness_gym_baselines.evaluate import finished_records

    if key == "quality":
        return [np.array([r["quality"] for r in finished_records(c["records"])], dtype=float) for c in cells]
    return [np.array([float(r[key]) for r in c["records"]], dtype=float) for c in cells]


def table_row(env_id: str, w: float, controller: str, cells: list[dict[str, Any]],
              best_fixed: dict[str, Any] | None) -> dict[str, Any]:
    """One row of the table from the controller's cells (one per seed) and the best fixed's cell.

    :param env_id: the env
    :param w: the cost weight
    :param controller: the controller's name
    :param cells: its cells, one per training seed, on the same test episodes
    :param best_fixed: the best fixed's cell at ``w`` (``None``: no paired difference)
    """
    row: dict[str, Any] = {"env_id": env_id, "cost_weight": w, "controller": controller,
                           "kind": "reference" if controller in REFERENCES else "learned", "seeds": len(cells),
                           "episodes": sum(len(c["records"]) for c in cells),
                           "return": mean_ci(_per_seed(cells, "return")), "quality": mean_ci(_per_seed(cells, "quality")),
                           "cost": mean_ci(_per_seed(cells, "cost")),
                           "forced_submit_rate": float(np.concatenate(_per_seed(cells, "forced_submit")).mean()),
                           "seed_spread": seed_spread(cells), "minus_best_fixed": None}
    if "script" in cells[0]:
        row["script"] = cells[0]["script"]
    if best_fixed is not None and controller not in ("forced-check", "static", "best-fixed"):
        theirs = _per_seed([best_fixed], "return")[0]
        ours = _per_seed(cells, "return")
        row["minus_best_fixed"] = paired_difference(ours, theirs, f"{env_id} w={wkey(w)} {controller}")
    return row


def seed_spread(cells: list[dict[str, Any]]) -> float | None:
    """The largest minus the smallest of the cells' mean returns (one cell per training seed); ``None`` for one."""
    return spread_of(_per_seed(cells, "return"))


def collect_rows(out: Path, env_ids: Sequence[str], weights: Sequence[float], sizes: Sizes) -> list[dict[str, Any]]:
    """The table's rows from the cell files (every cell must exist)."""
    seeds = {name: range(1) if name in REFERENCES else range(sizes.offline_seeds if name in OFFLINE
                                                           else sizes.online_seeds) for name in CONTROLLERS}
    rows = []
    for env_id in env_ids:
        for w in weights:
            cells = {name: [json.loads(cell_path(out, env_id, w, name, s).read_text()) for s in seeds[name]]
                     for name in CONTROLLERS}
            best = cells["best-fixed"][0]
            rows += [table_row(env_id, w, name, cells[name], best) for name in CONTROLLERS]
    return rows


def beats_best_fixed(rows: Iterable[dict[str, Any]]) -> list[tuple[str, float, str]]:
    """(env, w, controller) of every learned row whose paired return difference to the best fixed has a 95% CI
    entirely above 0."""
    return [(r["env_id"], r["cost_weight"], r["controller"]) for r in rows
            if r["kind"] == "learned" and r["minus_best_fixed"] is not None and r["minus_best_fixed"]["ci95"][0] > 0]


def half_cost_of_forced_check(rows: Sequence[dict[str, Any]]) -> list[tuple[str, float, str]]:
    """(env, w, controller) of every learned row with mean Q >= forced-check's and mean cost <= 0.5 x
    forced-check's, on the same env and w (module docstring)."""
    bar = {(r["env_id"], r["cost_weight"]): r for r in rows if r["controller"] == "forced-check"}
    hits = []
    for r in rows:
        fc = bar.get((r["env_id"], r["cost_weight"]))
        if r["kind"] == "learned" and fc is not None and r["quality"]["mean"] >= fc["quality"]["mean"] \
                and r["cost"]["mean"] <= 0.5 * fc["cost"]["mean"]:
            hits.append((r["env_id"], r["cost_weight"], r["controller"]))
    return hits


def beyond_seed_spread(rows: Iterable[dict[str, Any]]) -> list[tuple[str, float, str]]:
    """The rows of :func:`beats_best_fixed` whose mean difference to the best fixed exceeds their seed spread."""
    by = {(r["env_id"], r["cost_weight"], r["controller"]): r for r in rows}
    return [h for h in beats_best_fixed(by.values())
            if by[h]["seed_spread"] is not None and by[h]["minus_best_fixed"]["mean"] > by[h]["seed_spread"]]


def summary_lines(rows: Sequence[dict[str, Any]]) -> list[str]:
    """The three summary lines of the module docstring, counted from ``rows``."""
    n = len({r["env_id"] for r in rows})

    def listed(hits: list[tuple[str, float, str]]) -> str:
        return "; ".join(f"{e} w={wkey(w)} {c}" for e, w, c in hits) or "none"

    beats, half, beyond = beats_best_fixed(rows), half_cost_of_forced_check(rows), beyond_seed_spread(rows)
    return [f"learned beats best fixed with CI above 0 in {len({h[0] for h in beats})} of {n} envs (at some w): "
            f"{listed(beats)}",
            f"reaches forced-check's Q at no more than half its cost in {len({h[0] for h in half})} of {n} envs: "
            f"{listed(half)}",
            f"of those wins over the best fixed, the gain exceeds the row's own seed spread in "
            f"{len({h[0] for h in beyond})} of {n} envs: {listed(beyond)}"]


def _fmt(stat: dict[str, Any] | None, signed: bool = False) -> str:
    if stat is None:
        return ""
    lo, hi = stat["ci95"]
    f = "+.3f" if signed else ".3f"
    return f"{stat['mean']:{f}} [{lo:{f}}, {hi:{f}}]"


def condensed_lines(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Per env and ``w``: forced-check's Q and cost, the best fixed and its return, the probe's paired
    difference, and the learned row with the best mean return (its difference, Q, cost, forced-submit rate,
    seeds and seed spread)."""
    lines = ["| env | w | forced-check Q / cost | best fixed, return | probe - best fixed | best learned (by "
             "return) | its return | - best fixed [95% CI] | its Q / cost / forced % | seeds (spread) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    keys = list(dict.fromkeys((r["env_id"], r["cost_weight"]) for r in rows))
    for env_id, w in keys:
        here = {r["controller"]: r for r in rows if (r["env_id"], r["cost_weight"]) == (env_id, w)}
        learned = [r for r in here.values() if r["kind"] == "learned"]
        if not learned or not {"forced-check", "best-fixed", "probe"} <= here.keys():
            continue
        fc, best, probe = here["forced-check"], here["best-fixed"], here["probe"]
        top = max(learned, key=lambda r: r["return"]["mean"])
        spread = "" if top["seed_spread"] is None else f" ({top['seed_spread']:.3f})"
        lines.append(f"| {short_name(env_id)} | {wkey(w)} | "
                     f"{fc['quality']['mean']:.3f} / {fc['cost']['mean']:.2f} | `{best.get('script', '')}` "
                     f"{best['return']['mean']:+.3f} | {_fmt(probe['minus_best_fixed'], True)} | {top['controller']} | "
                     f"{top['return']['mean']:+.3f} | {_fmt(top['minus_best_fixed'], True)} | "
                     f"{top['quality']['mean']:.3f} / {top['cost']['mean']:.2f} / {100 * top['forced_submit_rate']:.0f}"
                     f" | {top['seeds']}{spread} |")
    return lines


def markdown_table(rows: Sequence[dict[str, Any]], sizes: Sizes, prices: str = DEFAULT_PROFILE) -> str:
    """The condensed table, the summary lines and the full table as Markdown."""
    lines = [*condensed_lines(rows), "", f"Price profile `{prices}`; return = Q - w * cost units; test split, the same "
             f"{sizes.test_episodes} seeded episodes for every row; 95% CIs by a two-level bootstrap over training "
             "seeds and episodes; `- best fixed` is the paired per-episode return difference.", "",
             *(f"- {line}" for line in summary_lines(rows)), "",
             "| env | w | controller | return [95% CI] | Q [95% CI] | cost [95% CI] | forced % | seeds | "
             "seed spread | - best fixed [95% CI] |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        name = f"{r['controller']} `{r['script']}`" if r["controller"] == "best-fixed" else r["controller"]
        lines.append(f"| {r['env_id']} | {wkey(r['cost_weight'])} | {name} | {_fmt(r['return'], True)} | "
                     f"{_fmt(r['quality'])} | {_fmt(r['cost'])} | {100 * r['forced_submit_rate']:.0f} | {r['seeds']} | "
                     f"{'' if r['seed_spread'] is None else format(r['seed_spread'], '.3f')} | "
                     f"{_fmt(r['minus_best_fixed'], True)} |")
    return "\n".join([*lines, "", provenance_line("learners_at_cost")]) + "\n"


def write_table(out: Path, rows: Sequence[dict[str, Any]], sizes: Sizes, prices: str = DEFAULT_PROFILE) -> None:
    """``table.md``, ``table.csv`` and ``table.json`` (rows, summary lines, sizes, prices) under ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "table.md").write_text(markdown_table(rows, sizes, prices))
    (out / "table.json").write_text(json.dumps({"sizes": dataclasses.asdict(sizes), "prices": prices,
                                                "summary": summary_lines(rows), "rows": list(rows)}, indent=1) + "\n")
    stats = ("return", "quality", "cost", "minus_best_fixed")
    with open(out / "table.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["env_id", "cost_weight", "controller", "kind", "seeds", "episodes", "forced_submit_rate",
                         "seed_spread", *(f"{s}_{part}" for s in stats for part in ("mean", "ci_lo", "ci_hi"))])
        for r in rows:
            cols = [v for s in stats for v in ((r[s]["mean"], *r[s]["ci95"]) if r[s] else ("", "", ""))]
            writer.writerow([r["env_id"], r["cost_weight"], r["controller"], r["kind"], r["seeds"], r["episodes"],
                             r["forced_submit_rate"], "" if r["seed_spread"] is None else r["seed_spread"], *cols])


# ----- command line ----------------------------------------------------------------------------------------------
def parse_weights(text: str) -> tuple[float, ...]:
    """``0,0.01,0.1`` as a tuple of finite weights >= 0, each once (an error names the bad entry)."""
    weights = tuple(parse_cost_weights(text))
    if len(set(weights)) != len(weights):
        raise ValueError(f"--cost-weights {text}: a weight is listed twice")
    return weights


def parse_envs(text: str) -> tuple[str, ...]:
    """``HarnessPlan-v1,HarnessCode-v1`` as registered env ids (an error names the unknown one)."""
    env_ids = tuple(e.strip() for e in text.split(",") if e.strip())
    for env_id in env_ids:
        if env_id not in gym.registry:
            close = difflib.get_close_matches(env_id, [e for e in gym.registry if e.startswith("Harness")], n=3)
            raise ValueError(f"--envs: unknown env id {env_id!r}" + (f"; did you mean {', '.join(close)}?" if close
                                                                   else ""))
    if not env_ids:
        raise ValueError("--envs: no env id given")
    return env_ids


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=doc_summary(__doc__))
    parser.add_argument("--envs", required=True, help="comma-separated env ids")
    parser.add_argument("--cost-weights", default="0,0.01,0.1", help="comma-separated cost weights w")
    parser.add_argument("--out", required=True, help="output folder (rerun with the same folder to resume)")
    parser.add_argument("--quick", action="store_true", help="the QUICK sizes instead of FULL")
    parser.add_argument("--num-workers", type=int, default=1, help="processes running cell sets at once")
    parser.add_argument("--size", action="append", default=[], metavar="FIELD=VALUE",
                        help=f"change one size (repeatable): {', '.join(f.name for f in dataclasses.fields(Sizes))}")
    parser.add_argument("--prices", default=DEFAULT_PROFILE, metavar="PROFILE", type=prices_name,
                        help="price profile of every env (default: %(default)s; e.g. frontier-hosted)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar, no table on stdout")
    args = parser.parse_args(argv)
    try:
        env_ids, weights = parse_envs(args.envs), parse_weights(args.cost_weights)
        sizes = with_sizes(QUICK if args.quick else FULL, args.size)
        if args.num_workers < 1:
            raise ValueError(f"--num-workers must be >= 1, got {args.num_workers}")
    except ValueError as exc:
        parser.error(str(exc))
    out = Path(args.out)
    settings_file, settings = out / "sizes.json", {**dataclasses.asdict(sizes), **price_kwargs(args.prices)}
    if settings_file.exists() and json.loads(settings_file.read_text()) != json.loads(json.dumps(settings)):
        parser.error(f"{out} holds a run with other sizes or prices ({settings_file}): use another --out or the "
                     "same settings")
    out.mkdir(parents=True, exist_ok=True)
    settings_file.write_text(json.dumps(settings, indent=1) + "\n")
    os.environ["MINARI_DATASETS_PATH"] = str((out / "minari").resolve())  # inherited by the spawned workers
    start = time.perf_counter()
    run_all(env_ids, weights, sizes, out, num_workers=args.num_workers, progress=not args.quiet, prices=args.prices)
    rows = collect_rows(out, env_ids, weights, sizes)
    write_table(out, rows, sizes, args.prices)
    if not args.quiet:
        sys.stdout.write(markdown_table(rows, sizes, args.prices))
        sys.stdout.write(f"\n{time.perf_counter() - start:.0f} s\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
