"""Offline comparison per env: static, BC, forced-CHECK, thorough, AWR, IQL and CQL on the test split, plus the
support-ceiling ablation, for AWR with the sample advantage (``awr``) and with the fitted advantage (``awr-q``).

``--cost-weight W`` runs the whole comparison on envs with ``cost_weight=W`` (buffers, the rewards and returns
every learner trains on, and the evaluation; docs/cost_results.md): rows then report ``cost_mean`` (episode cost
units, with a two-level CI) and ``return_mean`` (``Q - W * cost``) beside the quality, and every model file
records ``cost_weight=W`` in its ``env_kwargs`` (what ``trained_on`` reads).

The buffers come from the coverage mixture (:mod:`harness_gym_baselines.policies.coverage`): searched scripts,
named scripts, random episodes and per-step deviations. Its searched scripts are the top
:data:`~harness_gym_baselines.policies.coverage.TOP_K` of ``--scripts DIR/<env>.json`` (a ``harness-gym
search-script`` result) when that file exists, else of a small search on the train split (:data:`SMALL_SEARCH`,
for the weights 0 and W) cached in ``OUT/scripts/<env>.json``. Which component played each episode is in the
dataset's ``coverage`` metadata.

For every env id and every seed s (seed = buffer + training): collect a rollout buffer of the coverage
controller (``harness/<env>-coverage-seed<s>-v0``, train split), train BC, AWR, IQL and CQL on it (each with its
config's defaults; ``--epochs`` sets the policy fit of BC, AWR and IQL, ``--value-steps`` the value learning of
IQL and CQL), train AWR again on the same buffer minus every episode with a *successful revise* (below), and
evaluate every controller on the same test-split episodes (reset seeds from
``harness_gym.running.rollout.episode_seed(s, i)``).

Outputs under ``--out``: ``cells/<env>/<policy>-seed<s>.json`` (one per evaluated cell, with per-episode
records: the run resumes by skipping finished cells, models and datasets), ``summary.csv`` / ``summary.json``
(per env and policy: Q mean with a 95% bootstrap CI, Q IQM with its CI, success rate, HMS, every pattern
rate), ``per_seed.csv`` and ``ablation.csv``. Pooled statistics resample seeds, then episodes within each
seed (a two-level bootstrap), so the CIs include training variance across seeds.

**Successful revise** (the ablation's filter): a valid REVISE taken while the current draft's last CHECK
failed, whose resulting draft then either passed its next CHECK, or was submitted without another CHECK in
an episode that ended in success. It is computed from the logged observations (``last_check_result`` after
each CHECK), ``infos/invalid_action`` and the episode's ``success`` outcome; a draft's quality is hidden until
SUBMIT, so "the quality rose" cannot be observed per revision and is not used. A passed check is not necessarily a
correct draft (wrong drafts that pass the checker are the support ceiling), so this removes every logged
instance of check -> fail -> revise -> "fixed" as the controller can see it.

Example (minutes per env on 2 cores)::

    python -m harness_gym_baselines.experiments.offline_comparison HarnessCode-v1 --out results/offline --seeds 5 --episodes 2000
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import harness_gym  # noqa: F401  (registers the env ids)
from harness_gym.core.actions import Action
from harness_gym.core.maturity import PATTERNS
from harness_gym_baselines.common.dataclass_flags import doc_summary
from harness_gym_baselines.experiments.cells import cell_record, write_cell
from harness_gym_baselines.experiments.statistics import iqm, two_level_bootstrap

FIXED = ("static", "forced-check", "thorough")
"""The fixed scripts evaluated beside the learned controllers (:mod:`harness_gym_baselines.policies.scripted`)."""
POLICIES = ("static", "forced-check", "thorough", "bc", "awr", "awr-ablation", "awr-q", "awr-q-ablation", "iql",
            "cql")
"""``awr`` uses the sample advantage G - V(s) (the configuration fixed before any run, the paper's method);
``awr-q`` the fitted advantage Q(s, a) - V(s) (see :mod:`harness_gym_baselines.algos.awr`), added after the ``awr``
results, for the mechanism the notes explain. Everything else (buffers, beta, weight clip, epochs) is the same for
both. ``iql`` and ``cql`` are the multi-step learners (:mod:`harness_gym_baselines.algos.iql`,
:mod:`harness_gym_baselines.algos.cql`) with their configs' defaults."""
ADVANTAGE = {"awr": "mc", "awr-ablation": "mc", "awr-q": "q", "awr-q-ablation": "q"}
SMALL_SEARCH: dict[str, Any] = {"rounds": ((8, 6), (32, 2)), "val_episodes": 50, "test_episodes": 20,
                                "max_observe": 2, "max_retrieve": 4, "max_tool": 3, "max_post_tool": 1,
                                "checks": (0, 1, 2)}
"""The script search run where no search result is given (:class:`~harness_gym_baselines.experiments.script_search.
SearchConfig` fields): a coarser grid and far fewer episodes than ``harness-gym search-script``'s defaults (20-30
seconds per env and weight on 2 cores), enough to find scripts worth covering, not to name the best fixed script."""


def dataset_id(env_id: str, seed: int, variant: str = "") -> str:
    """The Minari id of the coverage buffer of ``env_id`` (on the data ``variant`` names, if any) for ``seed``."""
    slug = env_id.removeprefix("Harness").removesuffix("-v1").lower() + (f"-{variant}" if variant else "")
    return f"harness/{slug}-coverage-seed{seed}-v0"


def coverage_scripts(env_id: str, args: argparse.Namespace, env_kwargs: dict[str, Any] | None = None) -> list[str]:
    """The searched scripts of ``env_id``'s coverage buffers (module docstring): from ``args.scripts``'s result
    file when there is one, else from a :data:`SMALL_SEARCH` cached under ``args.out/scripts``.

    :param env_id: the env
    :param args: the comparison's arguments (``scripts``, ``out``, ``cost_weight``, ``quiet``)
    :param env_kwargs: the env's other constructor keywords (not ``cost_weight``)
    """
    from harness_gym_baselines.experiments.script_search import SearchConfig, search_to_file
    from harness_gym_baselines.policies.coverage import searched_scripts

    given = Path(args.scripts) / f"{env_id}.json" if getattr(args, "scripts", None) else None
    if given is not None and given.is_file():
        return searched_scripts(json.loads(given.read_text()))
    cfg = SearchConfig(env_id, cost_weights=tuple(sorted({0.0, float(args.cost_weight)})),
                       env_kwargs=dict(env_kwargs or {}), **SMALL_SEARCH)
    return searched_scripts(search_to_file(cfg, Path(args.out) / "scripts", progress=not args.quiet))


def env_label(env_id: str, variant: str = "") -> str:
    """How tables and cell folders name an env on a data variant: ``HarnessTauRetail-v2+tau2`` (else the id)."""
    return f"{env_id}+{variant}" if variant else env_id


def has_successful_revise(actions: np.ndarray, observations: np.ndarray, invalid: np.ndarray, success: bool,
                          check_feature: int) -> bool:
    """Whether the episode holds a successful revise (module docstring). ``invalid`` and the observations
    have one entry more than ``actions`` (index t + 1 describes the outcome of action t)."""
    failed, revised = False, False
    for t, a in enumerate(actions):
        if invalid[t + 1]:
            continue
        if a == Action.DRAFT:
            failed, revised = False, False
        elif a == Action.CHECK:
            passed = observations[t + 1, check_feature] > 0
            if passed and revised:
                return True
            failed, revised = not passed, False
        elif a == Action.REVISE and failed:
            revised = True
    return revised and bool(success)


def ablation_episodes(dsid: str) -> tuple[list[int], int]:
    """Indices of the episodes kept by the ablation, and how many were removed."""
    import minari

    from harness_gym.datasets import dataset_settings, episode_outcomes, read_columns

    ds = minari.load_dataset(dsid)
    check_feature = dataset_settings(ds)["feature_names"].index("last_check_result")
    cols = read_columns(ds, ("actions", "observations", "infos/invalid_action"))
    keep = [int(i) for i, ep, outcome in zip(ds.episode_indices, cols, episode_outcomes(ds)) if not
            has_successful_revise(ep["actions"], ep["observations"], ep["infos/invalid_action"], outcome["success"],
                                  check_feature)]
    return keep, len(cols) - len(keep)


def run_cell(path: Path, env_id: str, policy: Any, name: str, *, episodes: int, seed: int,
             extra: dict[str, Any] | None = None, cost_weight: float = 0.0,
             env_kwargs: dict[str, Any] | None = None) -> dict[str, Any]:
    """Evaluate one (env, policy, seed) cell on the test split and write it (:func:`~harness_gym_baselines.experiments.
    cells.write_cell`), or read it back if it is already done (``env_kwargs``: other constructor arguments, e.g.
    ``data_dir`` of a public-data variant)."""
    from harness_gym_baselines.evaluate import run_episodes, summarise

    if path.exists():
        return json.loads(path.read_text())
    env = gym.make(env_id, cost_weight=cost_weight, **(env_kwargs or {}))
    try:
        start = time.perf_counter()
        records = run_episodes(env, policy, episodes, split="test", seed=seed)
        summary = summarise(records, env_id=env_id, policy=name, split="test",
                            seconds=time.perf_counter() - start, seed=seed, cost_weight=cost_weight)
    finally:
        env.close()
    return write_cell(path, cell_record(env_id=env_id, controller=name, seed=seed, split="test", records=records,
                                        summary=summary, cost_weight=cost_weight, env_kwargs=env_kwargs, extra=extra))


def run_env(env_id: str, args: argparse.Namespace, *, variant: str = "",
            env_kwargs: dict[str, Any] | None = None) -> dict[str, list[dict[str, Any]]]:
    """Every cell of one env: {policy: [cell per seed]}; with ``variant`` and ``env_kwargs`` on that data
    (cells under ``cells/<env_label>``).

    The cells run as a plan of :func:`~harness_gym_baselines.experiments.engine.run_tasks` tasks: per seed one
    collection (:func:`collect_buffer`), then one task per controller (:func:`policy_cell`: train unless its
    model exists, evaluate unless its cell exists); ``args.num_workers`` (default 1) at a time, resumed from
    ``OUT/tasks/<env label>``.
    """
    from harness_gym_baselines.experiments.engine import Task, run_tasks

    out = Path(args.out)
    label = env_label(env_id, variant)
    scripts = coverage_scripts(env_id, args, env_kwargs)
    command = (f"python -m harness_gym_baselines.experiments.offline_comparison {env_id} --out {out} "
               f"--seeds {args.seeds} --episodes {args.episodes} --eval-episodes {args.eval_episodes}")
    plan = []
    for seed in range(args.seeds):
        collected = f"collect:{label}:seed{seed}"
        plan.append(Task(collected, collect_buffer, {"env_id": env_id, "scripts": scripts, "seed": seed,
                                                     "variant": variant, "args": args, "env_kwargs": env_kwargs},
                         command))
        plan += [Task(f"{label}:{name}:seed{seed}", policy_cell,
                      {"env_id": env_id, "name": name, "scripts": scripts, "seed": seed, "variant": variant,
                       "args": args, "env_kwargs": env_kwargs}, command, needs=(collected,)) for name in POLICIES]
    run_tasks(plan, out, getattr(args, "num_workers", 1), records_dir=f"tasks/{label}",
              what="offline comparison task")
    return {name: [json.loads((out / "cells" / label / f"{name}-seed{seed}.json").read_text())
                   for seed in range(args.seeds)] for name in POLICIES}


def collect_buffer(env_id: str, scripts: list[str], seed: int, variant: str, args: argparse.Namespace,
                   env_kwargs: dict[str, Any] | None) -> dict[str, Any]:
    """Collect (or find) the coverage buffer of one env and seed; its dataset id and the seconds it took."""
    from harness_gym.datasets import collect
    from harness_gym_baselines.policies.coverage import CoveragePolicy, record_components
    from harness_gym_baselines.policies.registry import make_policy

    behaviour = CoveragePolicy(scripts)
    dsid = dataset_id(env_id, seed, variant)
    start = time.perf_counter()
    dataset = collect(env_id, behaviour, dsid, episodes=args.episodes, seed=seed, progress=not args.quiet,
                      env_kwargs={"cost_weight": args.cost_weight, **(env_kwargs or {})},
                      ref_policies=(make_policy("random"), make_policy("oracle")), ref_episodes=args.ref_episodes)
    record_components(dataset, behaviour)
    return {"dataset_id": dsid, "seconds": time.perf_counter() - start}


def policy_cell(env_id: str, name: str, scripts: list[str], seed: int, variant: str, args: argparse.Namespace,
                env_kwargs: dict[str, Any] | None) -> str:
    """One controller's cell of one env and seed (trained on the seed's buffer unless its model exists);
    returns the cell file's path."""
    from harness_gym_baselines.experiments.engine import TaskRecords
    from harness_gym_baselines.policies.coverage import CoveragePolicy
    from harness_gym_baselines.policies.learned import load_policy
    from harness_gym_baselines.policies.registry import make_policy

    out = Path(args.out)
    label = env_label(env_id, variant)
    path = out / "cells" / label / f"{name}-seed{seed}.json"
    if path.exists():
        return str(path)
    collected = TaskRecords(out, f"tasks/{label}").done(f"collect:{label}:seed{seed}")
    dsid = dataset_id(env_id, seed, variant)
    extra: dict[str, Any] = {"dataset_id": dsid, "collect_seconds": collected["result"]["seconds"] if collected else None,
                             "behaviour": CoveragePolicy(scripts).name}
    if name in FIXED:
        policy = make_policy(name)
    else:
        model = out / "models" / label / f"{name}-seed{seed}.pt"
        if not model.exists():
            extra.update(train_model(name, dsid, model, seed, args))
        policy = load_policy(model)
        policy.name = name
    run_cell(path, env_id, policy, name, episodes=args.eval_episodes, seed=seed, extra=extra,
             cost_weight=args.cost_weight, env_kwargs=env_kwargs)
    return str(path)


def train_model(name: str, dsid: str, model: Path, seed: int, args: argparse.Namespace) -> dict[str, Any]:
    """Train learner ``name`` on buffer ``dsid`` into ``model``; what its cell records of the training."""
    from harness_gym.datasets import load_transitions
    from harness_gym_baselines.algos.awr import AWRConfig
    from harness_gym_baselines.algos.awr import train as train_awr
    from harness_gym_baselines.algos.bc import BCConfig
    from harness_gym_baselines.algos.bc import train as train_bc
    from harness_gym_baselines.algos.cql import CQLConfig
    from harness_gym_baselines.algos.cql import train as train_cql
    from harness_gym_baselines.algos.iql import IQLConfig
    from harness_gym_baselines.algos.iql import train as train_iql

    value_steps = getattr(args, "value_steps", IQLConfig.value_steps)
    data = load_transitions(dsid)
    common = {"dataset_id": dsid, "out": str(model), "seed": seed, "epochs": args.epochs, "eval_episodes": 0,
              "log_dir": str(Path(args.out) / "runs"), "progress": not args.quiet}
    extra: dict[str, Any] = {}
    start = time.perf_counter()
    if name == "bc":
        train_bc(BCConfig(**common), data)
    elif name == "iql":
        train_iql(IQLConfig(**common, value_steps=value_steps), data)
        extra["value_steps"] = value_steps
    elif name == "cql":
        common.pop("epochs")
        train_cql(CQLConfig(**common, value_steps=value_steps), data)
        extra["value_steps"] = value_steps
    elif name.endswith("-ablation"):
        keep, removed = ablation_episodes(dsid)
        extra.update(removed_episodes=removed, kept_episodes=len(keep))
        train_awr(AWRConfig(**common, beta=args.beta, advantage=ADVANTAGE[name], variant="ablation"),
                  data.subset(keep))
    else:
        train_awr(AWRConfig(**common, beta=args.beta, advantage=ADVANTAGE[name]), data)
    extra["train_seconds"] = time.perf_counter() - start
    return extra


def pooled(env_id: str, name: str, cells: list[dict[str, Any]]) -> dict[str, Any]:
    """Statistics of one (env, policy) over all seeds."""
    from harness_gym_baselines.evaluate import finished_records

    per_seed = [np.array([r["quality"] for r in finished_records(c["records"])], dtype=float) for c in cells]
    q = np.concatenate(per_seed)
    records = finished_records([r for c in cells for r in c["records"]])  # scores of graded episodes only
    patterns = {}
    for p in PATTERNS:
        vals = np.array([r["patterns"][p] for r in records], dtype=float)
        vals = vals[~np.isnan(vals)]
        patterns[p] = float(vals.mean()) if len(vals) else math.nan
    hms = np.array([r["hms"] for r in records], dtype=float)
    per_seed_cost = [np.array([r["cost"] for r in c["records"]], dtype=float) for c in cells]
    row = {"env_id": env_id, "policy": name, "seeds": len(cells), "episodes": len(q),
           "quality_mean": float(q.mean()), "quality_ci95": two_level_bootstrap(per_seed, np.mean),
           "quality_iqm": iqm(q), "quality_iqm_ci95": two_level_bootstrap(per_seed, iqm),
           "quality_per_seed": [float(s.mean()) for s in per_seed],
           "success_rate": float(np.mean([r["success"] for r in records])),
           "hms_mean": float(np.nanmean(hms)) if np.any(~np.isnan(hms)) else math.nan, "patterns": patterns,
           "cost_mean": float(np.concatenate(per_seed_cost).mean()),
           "cost_ci95": two_level_bootstrap(per_seed_cost, np.mean),
           "return_mean": float(np.mean([r["return"] for r in records])),
           "cost_weight": float(cells[0]["summary"].get("cost_weight", 0.0))}
    if name.endswith("-ablation"):
        row["removed_episodes_per_seed"] = [c.get("removed_episodes") for c in cells]
    return row


def write_outputs(out: Path, rows: list[dict[str, Any]], all_cells: dict[str, dict[str, list[dict]]]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(rows, indent=1))
    head = ["env_id", "policy", "seeds", "episodes", "quality_mean", "quality_ci_lo", "quality_ci_hi",
            "quality_iqm", "quality_iqm_ci_lo", "quality_iqm_ci_hi", "success_rate", "hms_mean", *PATTERNS,
            "cost_mean", "cost_ci_lo", "cost_ci_hi", "return_mean", "cost_weight"]
    with open(out / "summary.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(head)
        for r in rows:
            w.writerow([r["env_id"], r["policy"], r["seeds"], r["episodes"], r["quality_mean"], *r["quality_ci95"],
                        r["quality_iqm"], *r["quality_iqm_ci95"], r["success_rate"], r["hms_mean"],
                        *(r["patterns"][p] for p in PATTERNS), r["cost_mean"], *r["cost_ci95"], r["return_mean"],
                        r["cost_weight"]])
    with open(out / "per_seed.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["env_id", "policy", "seed", "quality_mean", "success_rate", "hms_mean", *PATTERNS,
                    "train_seconds", "removed_episodes"])
        for env_id, cells in all_cells.items():
            for name, per in cells.items():
                for c in per:
                    s = c["summary"]
                    w.writerow([env_id, name, c["seed"], s["quality_mean"], s["success_rate"], s["hms_mean"],
                                *(s["patterns"][p] for p in PATTERNS), c.get("train_seconds"),
                                c.get("removed_episodes")])
    with open(out / "ablation.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["env_id", "policy", "check_before_submit", "quality_mean", "quality_ci_lo", "quality_ci_hi",
                    "removed_episodes_per_seed"])
        for r in rows:
            if r["policy"] in ADVANTAGE:
                w.writerow([r["env_id"], r["policy"], r["patterns"]["check_before_submit"], r["quality_mean"],
                            *r["quality_ci95"], r.get("removed_episodes_per_seed", "")])


def print_table(rows: list[dict[str, Any]]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="offline comparison, test split (pooled over seeds; 95% two-level bootstrap CIs)")
    for col in ("env", "policy", "Q [95% CI]", "IQM", "success", "HMS", "check_before_submit", "cost", "return"):
        table.add_column(col)
    for r in rows:
        lo, hi = r["quality_ci95"]
        table.add_row(r["env_id"], r["policy"], f"{r['quality_mean']:.3f} [{lo:.3f}, {hi:.3f}]",
                      f"{r['quality_iqm']:.3f}", f"{r['success_rate']:.3f}", f"{r['hms_mean']:.3f}",
                      f"{r['patterns']['check_before_submit']:.3f}", f"{r['cost_mean']:.2f}", f"{r['return_mean']:.3f}")
    Console().print(table)


def main(argv: list[str] | None = None) -> int:
    from harness_gym_baselines.algos.awr import AWRConfig
    from harness_gym_baselines.algos.iql import IQLConfig

    parser = argparse.ArgumentParser(description=doc_summary(__doc__))
    parser.add_argument("env_ids", nargs="+")
    parser.add_argument("--out", required=True, help="output folder (rerun with the same folder to resume)")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--episodes", type=int, default=2000, help="episodes per rollout buffer")
    parser.add_argument("--eval-episodes", type=int, default=200, help="test-split episodes per cell")
    parser.add_argument("--epochs", type=int, default=30,
                        help="policy-fit epochs of BC, AWR and IQL (AWR's V(s): AWRConfig.value_epochs)")
    parser.add_argument("--value-steps", type=int, default=IQLConfig.value_steps,
                        help="gradient steps of IQL's and CQL's value learning (default: their configs')")
    parser.add_argument("--scripts", default=None, metavar="DIR",
                        help="harness-gym search-script results (DIR/<env>.json) whose top scripts the coverage "
                             "buffers play (default, or no file for an env: a small search cached in OUT/scripts)")
    parser.add_argument("--beta", type=float, default=AWRConfig.beta, help="AWR temperature (default: AWRConfig's)")
    parser.add_argument("--ref-episodes", type=int, default=100)
    parser.add_argument("--cost-weight", type=float, default=0.0,
                        help="the envs' cost_weight for collection, training returns and evaluation (default 0)")
    parser.add_argument("--datasets-path", default=None,
                        help="Minari datasets root (default: OUT/minari; MINARI_DATASETS_PATH is set to it)")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    os.environ["MINARI_DATASETS_PATH"] = str(Path(args.datasets_path or Path(args.out) / "minari").resolve())

    rows, all_cells = [], {}
    for env_id in args.env_ids:
        all_cells[env_id] = run_env(env_id, args)
        rows += [pooled(env_id, name, cells) for name, cells in all_cells[env_id].items()]
        write_outputs(Path(args.out), rows, all_cells)
    if not args.quiet:
        print_table(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
