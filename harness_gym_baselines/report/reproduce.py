"""``harness-gym reproduce``: every table and figure of both papers from one command, in one report.

Stages (each resumable: a finished stage leaves ``stages/<name>.json`` and is skipped on a rerun with the same
``--out``; inside a stage the experiment modules skip their finished cells, datasets and models):

1. ``harness:<env>`` per env (and per public-data variant when ``--tau-data`` / ``--dbbench-data`` is given):
   :func:`harness_gym_baselines.experiments.offline_comparison.run_env` (coverage buffers, static, forced-check, thorough, BC, AWR with
   both advantage estimators, the support-ceiling ablation, IQL, CQL), then the online controllers ppo-sparse, ECPO
   and the potential-based ECPO (and ppo-dense with ``--ppo-dense``) trained at :data:`TRAIN_COST_WEIGHT` with
   :func:`harness_gym_baselines.experiments.ecpo_comparison.train_cell` and evaluated on the same test episodes
   with :func:`harness_gym_baselines.experiments.offline_comparison.run_cell`, each greedy (``NAME``) and
   sampling (``NAME-sampled``), the random and oracle references for the frontier, and at every cost weight
   ``w`` of the run the best searched script and the closed-loop probe chosen at ``w`` (``best-fixed-w<w>``,
   ``probe-w<w>``: :mod:`harness_gym_baselines.experiments.fixed_references`, fitted per seed on train and val,
   cached under ``OUT/references``), on the same test episodes. The online trainers take no env constructor
   arguments, so the public-data variants have no online rows.
2. ``ecpo``: :func:`harness_gym_baselines.experiments.ecpo_comparison.table` (ppo-sparse, ppo-dense, BC, ECPO, static,
   forced-check, thorough, the best searched script and the probe at every cost weight, read from stage 1's
   cache; test and ood splits; deterministic and sampling) on the ECPO envs among ``--envs``.
   It shares the model folder with stage 1, so the ppo-sparse and ECPO models are trained once; ECPO's
   preference pairs come from its behaviour buffers in both stages
   (:func:`harness_gym_baselines.experiments.ecpo_comparison.behaviour_dataset`), not from the offline learners'
   coverage buffers.
3. ``corruption``: :func:`harness_gym_baselines.experiments.ecpo_comparison.corruption` (adaptive vs frozen trust weights,
   for ``ecpo`` and ``ecpo-pb``).
4. ``sim_to_real``: :func:`harness_gym_baselines.experiments.sim_to_real.sim_to_real` on the shipped SmolLM2 recording (replayed).
5. ``examples``: a few test episodes recorded step by step (:class:`harness_gym_baselines.report.episode_view.EpisodeRecorder`).
6. ``report``: :mod:`harness_gym_baselines.report.writer` writes the tables, figures, ``report.html`` and ``manifest.json``.

Sizes: :data:`FULL` and :data:`QUICK` (``--quick``); ``--seeds N`` and ``--size FIELD=VALUE`` change single
fields. Quick outputs say so everywhere (titles, a ``run`` column, the report's banner, the manifest), and
every learned row carries a verdict, meaningful or not and why (:func:`harness_gym_baselines.report.rows.verdict`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym

import harness_gym
from harness_gym_baselines.experiments import offline_comparison
from harness_gym_baselines.experiments.engine import Task, progress_bar, run_tasks
from harness_gym_baselines.experiments.fixed_references import fixed_references
from harness_gym_baselines.experiments.specs.reproduce import REPRODUCE
from harness_gym_baselines.experiments.specs.sizes import ReferenceSizes, parse_size_overrides
from harness_gym_baselines.experiments.specs.sizes import ReproduceSizes as Sizes

FULL, QUICK = REPRODUCE.full, REPRODUCE.quick

ECPO_ENVS = REPRODUCE.ecpo_envs
CORRUPTION_ENV = REPRODUCE.corruption_env
QUICK_ENVS = REPRODUCE.quick_envs
ONLINE = REPRODUCE.online
TRAIN_COST_WEIGHT = REPRODUCE.train_cost_weight
REFERENCES = REPRODUCE.frontier_references
DEFAULT_COST_WEIGHTS = REPRODUCE.cost_weights
"""the grid of the run, from its spec (:data:`harness_gym_baselines.experiments.specs.reproduce.REPRODUCE`)"""


@dataclass
class Variant:
    """One row group of the harness table: an env, on its default data or on public data."""

    env_id: str
    variant: str = ""
    env_kwargs: dict[str, Any] = dataclasses.field(default_factory=dict)
    data_path: str | None = None

    @property
    def label(self) -> str:
        return offline_comparison.env_label(self.env_id, self.variant)


def current_id(name: str) -> str:
    """The current id (:data:`harness_gym.ENV_IDS`) of the env named ``name`` (``HarnessDBBench`` ->
    ``HarnessDBBench-v2``)."""
    return next(env_id for env_id in harness_gym.ENV_IDS if env_id.rpartition("-")[0] == name)


def variants(env_ids: list[str], tau_data: str | None, dbbench_data: str | None) -> list[Variant]:
    """The env ids, then the public-data variants whose data is given (a missing path is an error).

    :param env_ids: the envs
    :param tau_data: a τ-bench retail data folder
    :param dbbench_data: a DB-Bench JSONL file
    """
    out = [Variant(e) for e in env_ids]
    if tau_data:
        if not Path(tau_data).is_dir():
            raise FileNotFoundError(f"--tau-data {tau_data}: no such folder")
        out.append(Variant(current_id("HarnessTauRetail"), "tau", {"data_dir": str(Path(tau_data).resolve())}, tau_data))
    if dbbench_data:
        if not Path(dbbench_data).is_file():
            raise FileNotFoundError(f"--dbbench-data {dbbench_data}: no such file")
        out.append(Variant(current_id("HarnessDBBench"), "dbbench", {"data_path": str(Path(dbbench_data).resolve())},
                           dbbench_data))
    for var in out[len(env_ids):]:
        _check_has_test_tasks(var)
    return out


def _check_has_test_tasks(var: Variant) -> None:
    """Every table row is evaluated on the test split: data without test tasks is refused before any stage
    runs, naming the flag, the data and the splits it has."""
    env = gym.make(var.env_id, **var.env_kwargs)
    try:
        domain = env.unwrapped.domain
        counts = {split: len(domain.tasks(split)) for split in ("train", "val", "test", "ood")}
    finally:
        env.close()
    if not counts["test"]:
        flag = "--tau-data" if var.variant == "tau" else "--dbbench-data"
        have = ", ".join(f"{split} {n}" for split, n in counts.items() if n)
        hint = (" (the τ-bench v1 release ships train and dev tasks only; τ²-bench's retail folder, tasks.json "
                "with split_tasks.json, has a test split)" if var.variant == "tau" else "")
        raise ValueError(f"{flag} {var.data_path}: no test-split tasks, and every row of the harness table is "
                         f"evaluated on the test split; the data has {have}{hint}")


def default_workers() -> int:
    """``--num-workers``'s default: 2, or 1 on a one-core machine (the quick run's budget is 2 cores)."""
    return min(2, os.cpu_count() or 1)


def _ecpo_stage(args: argparse.Namespace) -> dict[str, Any]:
    from harness_gym_baselines.experiments import ecpo_comparison

    return {"rows": ecpo_comparison.table(args)}


def _corruption_stage(args: argparse.Namespace) -> dict[str, Any]:
    from harness_gym_baselines.experiments import ecpo_comparison

    return {"runs": ecpo_comparison.corruption(args)}


def _offline_args(out: Path, sizes: Sizes, quiet: bool) -> argparse.Namespace:
    from harness_gym_baselines.algos.awr import AWRConfig

    return argparse.Namespace(out=str(out), seeds=sizes.seeds, episodes=sizes.buffer_episodes,
                              eval_episodes=sizes.eval_episodes, epochs=sizes.epochs, beta=AWRConfig.beta,
                              ref_episodes=sizes.ref_score_episodes, cost_weight=TRAIN_COST_WEIGHT, quiet=quiet)


def _online_args(out: Path, sizes: Sizes, envs: list[str], *, cost_weights: tuple[float, ...] = (),
                 references: ReferenceSizes | None = None, references_dir: Path | None = None) -> argparse.Namespace:
    return argparse.Namespace(out=out, env=envs, seeds=sizes.online_seeds, steps=sizes.online_steps,
                              episodes=sizes.ecpo_episodes, buffer_episodes=sizes.buffer_episodes,
                              corrupt_from=sizes.corrupt_from, cost_weight=TRAIN_COST_WEIGHT,
                              quiet=True,  # its tables go to the report
                              reference_weights=cost_weights, reference_sizes=references,
                              references_dir=references_dir)


def harness_stage(out: Path, var: Variant, sizes: Sizes, online: tuple[str, ...], quiet: bool, *,
                  cost_weights: tuple[float, ...] = DEFAULT_COST_WEIGHTS,
                  references: ReferenceSizes = ReferenceSizes.FULL) -> dict[str, Any]:
    """Every cell of one env: the offline comparison, then the online controllers and the references.

    :param out: the run folder
    :param var: the env (and data variant)
    :param sizes: the sizes
    :param online: the online trainers to run (none on a public-data variant)
    :param quiet: no progress bars of the sub-experiments
    :param cost_weights: the weights the best searched script and the probe are chosen at
    :param references: the sizes of the search and the probe fit
    """
    from harness_gym_baselines.experiments.ecpo_comparison import behaviour_dataset, train_cell
    from harness_gym_baselines.policies.registry import make_policy
    from harness_gym_baselines.policies.sb3_zip import load_sb3_policy

    offline_dir = out / "offline"
    cells = offline_comparison.run_env(var.env_id, _offline_args(offline_dir, sizes, quiet), variant=var.variant,
                                    env_kwargs=var.env_kwargs)
    cell_dir = offline_dir / "cells" / var.label
    for seed in range(sizes.seeds):
        for name in REFERENCES:
            cells.setdefault(name, []).append(offline_comparison.run_cell(
                cell_dir / f"{name}-seed{seed}.json", var.env_id, make_policy(name), name,
                episodes=sizes.eval_episodes, seed=seed, env_kwargs=var.env_kwargs))
        for w, found in fixed_references(var.env_id, cost_weights, cache_dir=out / "references",
                                         env_kwargs=var.env_kwargs, variant=var.variant, seed=seed,
                                         sizes=references, progress=not quiet).items():
            extra = {"reference": {key: found.record[key] for key in (
                "script", "script_val_return", "probe_val_return", "probe_chosen", "search_seconds",
                "probe_seconds")}, "cost_weight_chosen_at": w}
            for name, policy in found.policies().items():
                cells.setdefault(name, []).append(offline_comparison.run_cell(
                    cell_dir / f"{name}-seed{seed}.json", var.env_id, policy, name, episodes=sizes.eval_episodes,
                    seed=seed, extra=extra, env_kwargs=var.env_kwargs))
    online_args = _online_args(out / "online", sizes, [var.env_id])
    for seed in range(sizes.online_seeds):
        for name in online:
            dsid = behaviour_dataset(var.env_id, seed, sizes.buffer_episodes)  # stage 2's: ECPO's preferences
            model = train_cell(name, var.env_id, seed, online_args, dsid)  # trained once, then found
            for label, deterministic in ((name, True), (f"{name}-sampled", False)):
                path = cell_dir / f"{label}-seed{seed}.json"
                extra: dict[str, Any] = {}
                policy = None
                if not path.exists():
                    policy = load_sb3_policy(model, deterministic=deterministic)
                    policy.name = label
                    extra = {"model": str(model), "train_seconds": policy.model.harness_gym.get("train_seconds"),
                             "online_steps": sizes.online_steps, "train_cost_weight": TRAIN_COST_WEIGHT,
                             "deterministic": deterministic}
                cells.setdefault(label, []).append(offline_comparison.run_cell(
                    path, var.env_id, policy, label, episodes=sizes.eval_episodes, seed=seed, extra=extra,
                    env_kwargs=var.env_kwargs))
    return {"label": var.label, "cells": {name: [str(cell_dir / f"{name}-seed{c['seed']}.json") for c in per]
                                          for name, per in cells.items()}}


def examples_stage(out: Path, env_id: str, sizes: Sizes) -> dict[str, Any]:
    """Record ``sizes.examples`` test episodes of seed 0 step by step: static, forced-check and AWR with the
    fitted advantage (the seed-0 model), on the first of the first 30 episodes in which forced-check's CHECK
    fails (so the examples show a check's feedback and a revise), or on episode 0 if none does; more examples
    repeat the controllers on the following episodes.

    :param out: the run folder
    :param env_id: the env of the examples
    :param sizes: the sizes
    """
    import gymnasium as gym

    from harness_gym.running.rollout import episode_seed, play_episode
    from harness_gym_baselines.policies.learned import load_policy
    from harness_gym_baselines.policies.registry import make_policy
    from harness_gym_baselines.report.episode_view import EpisodeRecorder, save_episodes

    def record(name: str, policy: Any, index: int) -> dict[str, Any]:
        env = EpisodeRecorder(gym.make(env_id, render_mode="ansi"), policy=name)
        try:
            play_episode(env, policy, seed=episode_seed(0, index), split="test")
        finally:
            env.close()
        return env.episodes[0]

    controllers: list[tuple[str, Any]] = [("static", make_policy("static")), ("forced-check", make_policy("forced-check"))]
    awr_model = out / "offline" / "models" / env_id / "awr-q-seed0.pt"
    if awr_model.exists():
        controllers.append(("awr-q", load_policy(awr_model)))
    start = next((i for i in range(30) if any(s["action"] == "CHECK" and (s["text"] or "").startswith("CHECK: FAIL")
                                              for s in record("forced-check", controllers[1][1], i)["steps"])), 0)
    episodes = [record(*controllers[k % len(controllers)], start + k // len(controllers))
                for k in range(sizes.examples)]
    path = save_episodes(out / "examples.json", episodes, env_id=env_id, split="test", seed=0)
    return {"file": str(path), "episodes": len(episodes), "first_episode_index": start}


def reproduce(out: Path, *, quick: bool = False, env_ids: list[str] | None = None, tau_data: str | None = None,
              dbbench_data: str | None = None, seeds: int | None = None, size_overrides: list[str] | None = None,
              cost_weights: list[float] | None = None, ppo_dense: bool = False, quiet: bool = False,
              progress: bool = True, argv: list[str] | None = None, num_workers: int | None = None) -> dict[str, Any]:
    """Run (or resume) every stage under ``out`` and write the report; returns the manifest.

    Stages whose inputs are ready run at the same time in ``num_workers`` processes (:func:`harness_gym_baselines.experiments.engine.run_tasks`); the
    tables are the same as with one.

    :param out: output folder (reused to resume)
    :param quick: the sizes of :data:`QUICK` instead of :data:`FULL`
    :param env_ids: the envs (default: every registered id; with ``quick``, :data:`QUICK_ENVS`)
    :param tau_data: a τ-bench retail data folder: adds the public-data variant of HarnessTauRetail (its current id)
    :param dbbench_data: a DB-Bench JSONL file: adds the public-data variant of HarnessDBBench (its current id)
    :param seeds: sets every seed count (offline, online, corruption)
    :param size_overrides: ``FIELD=VALUE`` changes of the sizes
    :param cost_weights: the cost weights of the frontier (default :data:`DEFAULT_COST_WEIGHTS`)
    :param ppo_dense: also train ppo-dense for every env of the harness table
    :param quiet: no output on the terminal (no progress, no summary)
    :param progress: progress bars (without them, one line per finished stage and the summary)
    :param argv: the command line, for the manifest
    :param num_workers: stages run at once (default: ``min(2, os.cpu_count())``; 1 runs them in this process)
    """
    from rich.console import Console

    from harness_gym_baselines.report import writer

    num_workers = default_workers() if num_workers is None else num_workers
    if num_workers < 1:
        raise ValueError(f"--num-workers {num_workers}: must be at least 1")

    sizes = QUICK if quick else FULL
    if seeds is not None:
        sizes = dataclasses.replace(sizes, seeds=seeds, online_seeds=seeds, corruption_seeds=seeds)
    sizes = parse_size_overrides(sizes, list(size_overrides or []))
    env_ids = list(env_ids or (QUICK_ENVS if quick else harness_gym.ENV_IDS))
    unknown = [e for e in env_ids if e not in harness_gym.ENV_IDS]
    if unknown:
        raise ValueError(f"--envs: unknown env id(s) {unknown}; registered: {', '.join(harness_gym.ENV_IDS)}")
    cost_weights = list(cost_weights if cost_weights is not None else DEFAULT_COST_WEIGHTS)
    groups = variants(env_ids, tau_data, dbbench_data)
    online = (*ONLINE[:1], "ppo-dense", *ONLINE[1:]) if ppo_dense else ONLINE
    ecpo_envs = [e for e in ECPO_ENVS if e in env_ids] or env_ids[:1]
    corruption_env = CORRUPTION_ENV if CORRUPTION_ENV in env_ids else env_ids[0]
    out.mkdir(parents=True, exist_ok=True)
    os.environ["MINARI_DATASETS_PATH"] = str((out / "minari").resolve())
    settings = {"quick": quick, "sizes": dataclasses.asdict(sizes), "envs": env_ids,
                "variants": [dataclasses.asdict(v) for v in groups], "online": list(online),
                "ecpo_envs": ecpo_envs, "corruption_env": corruption_env, "cost_weights": cost_weights,
                "train_cost_weight": TRAIN_COST_WEIGHT,
                "tau_data": tau_data, "dbbench_data": dbbench_data}
    _keep_settings(out, settings)

    console = Console(stderr=True, quiet=quiet)
    bars = progress and not quiet
    quiet = quiet or not progress  # the sub-experiments' own bars and lines
    sub_quiet = quiet or num_workers > 1  # workers' bars would interleave with the parent's
    plan = plan_stages(out, settings, sizes, groups, quiet=sub_quiet)

    total_start = time.perf_counter()
    load = LoadSampler()
    with load, progress_bar("reproduce" + (" (quick)" if quick else ""), len(plan) + 1, console=console,
                            enabled=bars) as bar:
        records = run_tasks(plan, out, num_workers, started=bar.started, finished=bar.finished)
        bar.step("reproduce: report")
        start = time.perf_counter()
        manifest = writer.write_report(out, settings=settings, stages=records, argv=argv or sys.argv,
                                       total_seconds=time.perf_counter() - total_start, machine=load.summary())
        bar.print(f"  report: done ({time.perf_counter() - start:.0f} s)")
        bar.advance()
    manifest["num_workers"] = num_workers
    manifest["wall_seconds"] = load.wall  # stages and report, this invocation
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1, default=str))
    if not console.quiet:
        print("\n".join(terminal_summary(out, manifest)))
    return manifest


def plan_stages(out: Path, settings: dict[str, Any], sizes: Sizes, groups: list[Variant], *,
                quiet: bool) -> list[Task]:
    """The stages of a run as tasks for :func:`harness_gym_baselines.experiments.engine.run_tasks`: a harness stage
    per env and variant, then ``ecpo``, ``corruption``, ``sim_to_real`` and ``examples``.

    :param out: the run folder
    :param settings: the run's settings (``settings.json``)
    :param sizes: the run's sizes
    :param groups: the envs and public-data variants (:func:`variants`)
    :param quiet: no progress bars of the sub-experiments
    """
    quick, env_ids, online = settings["quick"], settings["envs"], tuple(settings["online"])
    cost_weights, ecpo_envs, corruption_env = settings["cost_weights"], settings["ecpo_envs"], settings["corruption_env"]
    plan: list[Task] = []
    awaited = {*ecpo_envs, corruption_env}
    for var in groups:
        plan.append(Task(
            f"harness:{var.label}", harness_stage,
            {"out": out, "var": var, "sizes": sizes, "online": () if var.variant else online, "quiet": quiet,
             "cost_weights": tuple(cost_weights), "references": sizes.references(quick)},
            f"python -m harness_gym_baselines.experiments.offline_comparison {var.env_id} --out {out / 'offline'} --seeds {sizes.seeds} "
            f"--episodes {sizes.buffer_episodes} --eval-episodes {sizes.eval_episodes} --epochs "
            f"{sizes.epochs}; harness-gym train {{{','.join(online)}}} --env {var.env_id} --steps "
            f"{sizes.online_steps}; fixed_references.fixed_references({var.env_id!r}, "
            f"{tuple(cost_weights)}, cache_dir={str(out / 'references')!r})",
            priority=int(not var.variant and var.env_id in awaited)))
    online_dir = out / "online"
    ecpo_args = _online_args(online_dir, sizes, ecpo_envs, cost_weights=tuple(cost_weights),
                             references=sizes.references(quick), references_dir=out / "references")
    trains_online = {var.env_id: f"harness:{var.label}" for var in groups if not var.variant}
    # ecpo shares stage 1's models, reference cache and behaviour buffers: it starts after their harness stages
    plan.append(Task("ecpo", _ecpo_stage, {"args": ecpo_args},
                      f"python -m harness_gym_baselines.experiments.ecpo_comparison table --out {online_dir} "
                      + " ".join(f"--env {e}" for e in ecpo_envs)
                      + f" --seeds {sizes.online_seeds} --steps {sizes.online_steps} --episodes {sizes.ecpo_episodes}"
                      f" --buffer-episodes {sizes.buffer_episodes}",
                      needs=tuple(trains_online[e] for e in ecpo_envs if e in trains_online)))
    corruption_args = dataclasses.replace(sizes, online_seeds=sizes.corruption_seeds, online_steps=sizes.corruption_steps)
    # the corruption runs collect the same behaviour buffers (one Minari id per env and seed) as the harness
    # stage of their env: two processes must not write one dataset at once
    plan.append(Task("corruption", _corruption_stage,
                      {"args": _online_args(out / "corruption", corruption_args, [corruption_env])},
                      f"python -m harness_gym_baselines.experiments.ecpo_comparison corruption --out {out / 'corruption'} --env {corruption_env} "
                      f"--seeds {sizes.corruption_seeds} --steps {sizes.corruption_steps} --corrupt-from "
                      f"{sizes.corrupt_from}",
                      needs=tuple(trains_online[e] for e in [corruption_env] if e in trains_online)))
    plan.append(Task("sim_to_real", _sim_to_real_stage, {"sim_seeds": sizes.sim_seeds,
                                                          "profiles_out": out / "fitted_profiles"},
                      f"python benchmarks/sim_to_real.py --out {out / 'fitted_profiles'} --sim-seeds {sizes.sim_seeds}"))
    if sizes.examples:  # the awr-q model of env 0's harness stage
        plan.append(Task("examples", examples_stage, {"out": out, "env_id": env_ids[0], "sizes": sizes},
                          f"harness-gym eval {env_ids[0]} --policy ... --save-episodes {out / 'examples.json'}",
                          needs=(f"harness:{groups[0].label}",)))

    return plan


def _keep_settings(out: Path, settings: dict[str, Any]) -> None:
    """Write ``settings.json``; a folder that holds a run with other settings is refused, naming what differs."""
    settings_path = out / "settings.json"
    if settings_path.exists():
        before = json.loads(settings_path.read_text())
        if before != json.loads(json.dumps(settings)):
            changed = sorted(k for k in settings if before.get(k) != json.loads(json.dumps(settings)).get(k))
            raise ValueError(f"{out} holds a run with other settings ({', '.join(changed)} differ; see "
                             f"{settings_path}): use another --out, or delete the folder to start over")
    settings_path.write_text(json.dumps(settings, indent=1))


class LoadSampler:
    """The machine's 1-minute load average, sampled every ``every`` seconds in a daemon thread while the run
    lasts (``with LoadSampler() as load: ...``), for the manifest: a time measured on a shared machine means
    little without the load it was measured under.

    :param every: seconds between samples
    """

    def __init__(self, every: float = 10.0) -> None:
        import threading

        self.every, self.samples = every, []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="load-sampler")
        self._start = time.perf_counter()

    def _run(self) -> None:
        while True:
            self.samples.append(os.getloadavg()[0])
            if self._stop.wait(self.every):
                return

    def __enter__(self) -> LoadSampler:
        self._start = time.perf_counter()
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()
        self.wall = time.perf_counter() - self._start

    def summary(self) -> dict[str, Any]:
        """``cpus``, the samples' ``min`` / ``median`` / ``max`` and count, the sampling interval."""
        import statistics

        values = self.samples or [os.getloadavg()[0]]
        return {"cpus": os.cpu_count(), "load_average_1min": {"min": min(values), "median": statistics.median(values),
                                                              "max": max(values), "samples": len(values),
                                                              "every_s": self.every}}


SUMMARY_WIDTH = 80
"""the columns of :func:`terminal_summary`: the last screen of the main job fits a default terminal"""


def text_table(header: list[str], rows: list[list[str]], *, keep: int = 1, width: int = SUMMARY_WIDTH) -> list[str]:
    """A plain-text table in blocks no wider than ``width``: the first ``keep`` columns start every block, the
    others are dealt into as many blocks as they need (a column is never wrapped or cut).

    :param header: the column names
    :param rows: the cells
    :param keep: leading columns repeated in every block (the row names)
    :param width: the most columns a line may take
    """
    widths = [max(len(c) for c in [h, *(r[k] for r in rows)]) for k, h in enumerate(header)]
    fixed = sum(widths[:keep]) + 2 * keep
    blocks, current, used = [], [], fixed
    for k in range(keep, len(header)):
        if current and used + widths[k] + 2 > width:
            blocks.append(current)
            current, used = [], fixed
        current.append(k)
        used += widths[k] + 2
    blocks.append(current)
    lines: list[str] = []
    for block in blocks:
        cols = [*range(keep), *block]
        text = ["  ".join((cells[k].ljust(widths[k]) if k < keep else cells[k].rjust(widths[k])) for k in cols).rstrip()
                for cells in (header, *rows)]
        lines += ([""] if lines else []) + text
    return lines


def terminal_summary(out: Path, manifest: dict[str, Any], *, width: int = SUMMARY_WIDTH) -> list[str]:
    """The main job's last screen, at most ``width`` columns and (for 8 envs) 24 lines: Q per env and controller
    (``table_harness.csv``; ``*``: not meaningful, ``†``: budget-ended; the greedy rows, the sampled ones are in the tables) with
    AWR-q minus static beside the paper, then what ran and how long, and where the report is. Of the searched
    references only the best fixed at the run's lowest cost weight is shown (as ``best fixed``: at w = 0 the
    script with the best Q); the others are in the report.

    :param out: the run folder
    :param manifest: what :func:`harness_gym_baselines.report.writer.write_report` returned
    """
    import csv

    from harness_gym_baselines.experiments.fixed_references import parse_reference_name
    from harness_gym_baselines.report.rows import mark, short_label

    with open(out / "table_harness.csv") as fh:
        rows = list(csv.DictReader(fh))
    envs = list(dict.fromkeys(r["env"] for r in rows))
    listed = list(dict.fromkeys(r["controller"] for r in rows if not r["controller"].endswith("-sampled")))
    searched = sorted((parsed[1], n) for n in listed if (parsed := parse_reference_name(n)) and parsed[0] == "best-fixed")
    lowest = searched[0][1] if searched else None
    shown = {n: "best fixed" if n == lowest else n for n in listed if n == lowest or parse_reference_name(n) is None}
    names = list(shown)
    by = {(r["env"], r["controller"]): r for r in rows}
    table = []
    for env in envs:
        cells = [short_label(env)]
        for name in names:
            r = by.get((env, name))
            cells.append("" if r is None else f"{float(r['Q']):.2f}" + (mark(r["verdict"]) or " "))
        gain = by.get((env, "awr-q"), {}).get("awr_minus_static_points", "")
        paper = by.get((env, "awr-q"), {}).get("paper_awr_minus_static", "")
        cells.append((f"{float(gain):+.1f}" if gain else "") + (f" ({float(paper):+.1f})" if paper else ""))
        table.append(cells)
    quick = manifest["quick"]
    minutes, seconds = divmod(round(manifest.get("wall_seconds", manifest["seconds_this_invocation"])), 60)
    resumed = sum(s["resumed"] for s in manifest["stages"].values())
    lines = ["Q on the test split (* not meaningful, † budget-ended: see the verdicts in report.html)"]
    lines += text_table(["env", *shown.values(), "awr-q - static (paper)"], table)
    lines += [f"reproduce{' --quick' if quick else ''}: {len(envs)} env(s), {minutes} min {seconds} s"
              + (f" ({resumed} stage(s) resumed)" if resumed else "")
              + ("; QUICK RUN, not the paper numbers" if quick else "; full run"),
              f"report: {out / 'report.html'}",
              f"tables, figures, manifest.json: {out}/ ({len(manifest['outputs'])} files)"]
    return [piece for line in lines for piece in (_fold(line, width) if len(line) > width else line).splitlines()]


def _fold(line: str, width: int) -> str:
    """A long line (a deep output path) broken at ``/`` or spaces so that no piece passes ``width``."""
    import textwrap

    return "\n".join(textwrap.wrap(line, width, break_on_hyphens=False, subsequent_indent="  ")) or line


def json_summary(out: Path, manifest: dict[str, Any]) -> dict[str, Any]:
    """What ``harness-gym reproduce --json`` prints: the report and manifest paths, the run's time and load,
    and the rows of ``table_harness.csv`` (env, controller, Q with its CI, verdict).

    :param out: the run folder
    :param manifest: what :func:`harness_gym_baselines.report.writer.write_report` returned
    """
    import csv

    with open(out / "table_harness.csv") as fh:
        rows = [{"env": r["env"], "controller": r["controller"], "Q": float(r["Q"]),
                 "Q_ci95": [float(r["Q_ci_lo"]), float(r["Q_ci_hi"])], "verdict": r["verdict"]}
                for r in csv.DictReader(fh)]
    return {"report": str(out / "report.html"), "manifest": str(out / "manifest.json"), "quick": manifest["quick"],
            "wall_seconds": manifest.get("wall_seconds"), "machine": manifest.get("machine"), "rows": rows}


def _sim_to_real_stage(sim_seeds: int, profiles_out: Path) -> dict[str, Any]:
    """The sim-to-real stage's result; a recording made on retired env ids yields no rows and says why."""
    from harness_gym_baselines.experiments.sim_to_real import StaleRecording, sim_to_real

    try:
        return _sim_to_real_result(sim_to_real(sim_seeds=sim_seeds, profiles_out=profiles_out))
    except StaleRecording as exc:
        return {"rows": [], "markdown": f"Not run: {exc}.", "recording": "not replayable", "model": "the recorded model"}


def _sim_to_real_result(result: tuple[Any, Any, Any]) -> dict[str, Any]:
    from harness_gym_baselines.experiments.sim_to_real import markdown

    rows, fits, manifest = result
    return {"rows": [dataclasses.asdict(r) for r in rows], "markdown": markdown(rows, fits),
            "recording": manifest.get("note", ""), "model": manifest["worker"].get("model")}
