"""The ECPO experiments of docs/ecpo.md: the comparison table and the knowledge-corruption experiment.

    python -m harness_gym_baselines.experiments.ecpo_comparison table --out results/ecpo [--env ENV ...] [--seeds 3] [--steps 20000]
    python -m harness_gym_baselines.experiments.ecpo_comparison corruption --out results/ecpo [--env HarnessResearchQA-v1] [--seeds 3]

``table``: per env and seed s, a behaviour-policy buffer (``harness-gym collect``'s Minari format, train split,
collection seed s), BC trained on it, ppo-sparse, ppo-dense, ECPO and the potential-based ECPO (``ecpo-pb``)
trained online for ``--steps`` steps with seed s (the ECPO preference models learn from the same buffer), and
the static and forced-check harnesses, and at each cost weight of ``reference_weights`` (w = 0 from the command
line) the best searched script and the closed-loop probe (``best-fixed-w<w>``, ``probe-w<w>``:
:mod:`harness_gym_baselines.experiments.fixed_references`, fitted on train and val with seed s); each
is evaluated on ``--episodes`` test-split and ood-split episodes, acting deterministically (the mode of a
trained policy, what ``harness-gym eval --policy`` runs) and, for the trained methods, also sampling from
the policy (as during training), with the reset seeds of
:func:`harness_gym.running.rollout.episode_seed` ``(s, i)`` (every method sees the same tasks). Writes
``cells_<env id>.json`` (one record per method and seed; a rerun skips finished cells, and runs for
different envs can go in parallel), ``table.md`` and ``table.csv``.

Columns: success rate (test), the trajectory quality score (:func:`rubric_score`, 1-5), OOD retention (ood
success / test success), training stability (the std of the validation return over the last
``STABILITY_LAST`` evaluations of a training run, averaged over seeds; and the std of test success across
seeds), the mean cost per episode (``info["cost"]["units"]`` summed over the episode where the env reports
a cost ledger, else the number of steps) and, for ``ecpo`` and ``ecpo-pb``, the farming share
(:func:`harness_gym_baselines.algos.ecpo.farming_share`: the share of test steps that repeat an action which
earned evidence earlier in the episode and are paid for it again, under the blog shaping calibrated as the
``ecpo`` run of the same env and seed ended its training).

``corruption``: for both ECPOs (``ecpo`` and ``ecpo-pb``), adaptive trust weights against the weights frozen at
their value before the switch, the knowledge corruption on from ``--corrupt-from``
(:mod:`harness_gym_baselines.algos.ecpo`); writes ``corruption.json`` and ``corruption.png`` (w_knowledge and
validation success over training, mean over seeds, one line per method and arm) and ``corruption.md`` (final test
success per method and arm, and the steps trained after the switch).

``--cost-weight W`` trains every online method at the env's ``cost_weight`` W (default 0).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np

import harness_gym  # noqa: F401
from harness_gym.running.rollout import Episode, Policy, episode_seed, play_episode
from harness_gym_baselines.common.dataclass_flags import doc_summary
from harness_gym_baselines.experiments.cells import cell_record
from harness_gym_baselines.experiments.fixed_references import KINDS, ReferenceSizes, fixed_references, reference_name
from harness_gym_baselines.experiments.paper_claims import SEED_REPORTED
from harness_gym_baselines.policies.registry import make_policy

if TYPE_CHECKING:
    from harness_gym_baselines.algos.ecpo_analysis import BlogEvidenceTerm

ENVS = ("HarnessData-v1", "HarnessResearchQA-v1")
TRAINED = ("ppo-sparse", "ppo-dense", "bc", "ecpo", "ecpo-pb")
ECPO_METHODS = ("ecpo", "ecpo-pb")
"""the methods whose test episodes get a farming share"""
REFERENCE = ("static", "forced-check", "thorough")
STABILITY_LAST = 3


# ----- per-episode measures -----------------------------------------------------------------------------
def rubric_score(quality: float, success: bool, budget_used: float, hms: float) -> int:
    """The automatic 1-5 trajectory quality rubric (docs/ecpo.md): 1 point, plus correctness (2 for a success,
    1 for quality >= 0.5, else 0), efficiency (1 when at most half the budget was used) and process (1 when
    HMS >= 0.75; an episode with no applicable pattern gets 0).

    :param quality: the graded quality in [0, 1]
    :param success: the episode succeeded
    :param budget_used: fraction of the budget spent
    :param hms: the episode's HMS (NaN when no pattern applies)
    """
    correctness = 2 if success else 1 if quality >= 0.5 else 0
    efficiency = 1 if budget_used <= 0.5 else 0
    process = 1 if not math.isnan(hms) and hms >= 0.75 else 0
    return 1 + correctness + efficiency + process


def episode_record(episode: Episode, budget: int, farming: BlogEvidenceTerm | None = None) -> dict[str, Any]:
    """What the table needs of one episode.

    :param episode: the played episode
    :param budget: the env's budget per episode
    :param farming: the blog calibration that counts its farming steps (``farming_steps``; none without it)
    """
    final = episode.final_info
    farmed: dict[str, int] = {}
    if farming is not None:
        from harness_gym_baselines.algos.ecpo_analysis import farming_steps  # torch only where a farming share is asked

        farmed["farming_steps"] = int(farming_steps(episode.actions, farming.of_episode(episode)).sum())
    has_cost = isinstance(final.get("cost"), dict) and "units" in final["cost"]
    cost = (sum(float(i["cost"]["units"]) for i in episode.infos[1:]) if has_cost else float(len(episode.actions)))
    used = (budget - final["budget_left"]) / budget
    return {"task_id": final["task_id"], "quality": float(final["quality"]), "success": bool(final["success"]),
            "hms": float(final["hms"]), "steps": len(episode.actions), "budget_used": used,
            "return": float(sum(episode.rewards)), "cost": cost, "cost_is_units": has_cost,
            "rubric": rubric_score(final["quality"], final["success"], used, final["hms"]), **farmed}


def evaluate_split(env_id: str, policy: Policy, *, split: str, episodes: int, seed: int,
                   farming: BlogEvidenceTerm | None = None) -> list[dict[str, Any]]:
    """Per-episode records of ``policy`` on ``episodes`` episodes of ``split`` (reset seeds episode_seed(seed, i)).

    :param env_id: the env
    :param policy: the controller
    :param split: the task split
    :param episodes: number of episodes
    :param seed: the run's seed
    :param farming: count each episode's farming steps under this blog calibration
    """
    env = gym.make(env_id)
    try:
        budget = env.unwrapped.budget
        return [episode_record(play_episode(env, policy, seed=episode_seed(seed, i), split=split), budget, farming)
                for i in range(episodes)]
    finally:
        env.close()


# ----- training the cells -------------------------------------------------------------------------------
def behaviour_dataset(env_id: str, seed: int, episodes: int) -> str:
    """Collect (or find) the behaviour buffer of ``env_id`` with collection seed ``seed``; returns its id."""
    from harness_gym.datasets import collect
    from harness_gym_baselines.policies.behaviour import BehaviourPolicy

    dsid = f"harness/{env_id.lower().removesuffix('-v1').removeprefix('harness')}-behaviour-s{seed}-v0"
    collect(env_id, BehaviourPolicy(), dsid, episodes=episodes, seed=seed, progress=False, ref_policies=None)
    return dsid


def train_cell(method: str, env_id: str, seed: int, args: argparse.Namespace, dsid: str) -> Path:
    """Train ``method`` for one env and seed (unless its model exists); returns the model path."""
    from harness_gym_baselines.common.trainer_registry import load_trainer

    models = args.out / "models"
    models.mkdir(parents=True, exist_ok=True)
    suffix = ".pt" if method == "bc" else ".zip"
    path = models / f"{env_id}__{method}__{seed}{suffix}"
    if path.exists():
        return path
    trainer = load_trainer(method)
    common: dict[str, Any] = {"out": str(path), "seed": seed, "log_dir": str(args.out / "runs")}
    if method == "bc":
        cfg = trainer.config(dataset_id=dsid, eval_episodes=0, progress=False, **common)
    else:
        cfg = trainer.config(env_id=env_id, steps=args.steps, cost_weight=getattr(args, "cost_weight", 0.0),
                             final_eval_episodes=0, progress=False, **common)
        if method in ECPO_METHODS:
            cfg = replace(cfg, preference_dataset=dsid)
    trainer.train(cfg)
    return path


def evaluate_both(env_id: str, policy: Policy, episodes: int, seed: int,
                  farming: BlogEvidenceTerm | None = None) -> dict[str, list[dict[str, Any]]]:
    """Test- and ood-split records of ``policy`` (same reset seeds for every method)."""
    return {split: evaluate_split(env_id, policy, split=split, episodes=episodes, seed=seed, farming=farming)
            for split in ("test", "ood")}


def farming_reference(method: str, out: Path, env_id: str, seed: int) -> BlogEvidenceTerm | None:
    """The blog calibration the farming steps of a cell are counted under: the one the ``ecpo`` model of the
    same env and seed ended training with (``None`` for a method outside :data:`ECPO_METHODS`)."""
    if method not in ECPO_METHODS:
        return None
    from harness_gym_baselines.algos.ecpo_analysis import BlogEvidenceTerm
    from harness_gym_baselines.policies.sb3_zip import load_sb3_policy

    return BlogEvidenceTerm.from_model(load_sb3_policy(out / "models" / f"{env_id}__ecpo__{seed}.zip").model.harness_gym)


def sampling_policy(method: str, out: Path, env_id: str, seed: int) -> Policy | None:
    """The trained model of a cell acting by sampling from its policy (as during training); ``None`` for the
    scripted harnesses."""
    if method not in TRAINED:
        return None
    if method == "bc":
        from harness_gym_baselines.policies.learned import load_policy

        return load_policy(out / "models" / f"{env_id}__bc__{seed}.pt", sample=True)
    from harness_gym_baselines.policies.sb3_zip import load_sb3_policy

    return load_sb3_policy(out / "models" / f"{env_id}__{method}__{seed}.zip", deterministic=False)


def table(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Run (or resume) every cell of the comparison and write the cells files, table.md and table.csv.

    One :func:`~harness_gym_baselines.experiments.engine.run_tasks` task per env (:func:`env_cells`, which skips
    finished cells), ``args.num_workers`` (default 1) envs at a time."""
    from harness_gym_baselines.experiments.engine import Task, run_tasks, settings_digest
    from harness_gym_baselines.policies.registry import POLICIES

    references = [p for p in REFERENCE if p in POLICIES]
    weights = tuple(getattr(args, "reference_weights", None) or (0.0,))
    methods = (*TRAINED, *references, *[reference_name(kind, w) for w in weights for kind in KINDS])
    plan = [Task(f"ecpo:{env_id}:{settings_digest([vars(args), methods])}", env_cells,
                 {"env_id": env_id, "args": args, "methods": methods, "weights": weights},
                 f"python -m harness_gym_baselines.experiments.ecpo_comparison table --out {args.out} --env {env_id} "
                 f"--seeds {args.seeds} --episodes {args.episodes}") for env_id in args.env]
    run_tasks(plan, args.out, getattr(args, "num_workers", 1), records_dir="tasks", what="ECPO comparison env")
    cells: dict[str, dict[str, Any]] = {}
    for env_id in args.env:
        cells.update(json.loads((args.out / f"cells_{env_id}.json").read_text()))
    rows = summarise(cells, args.env, methods)
    write_table(rows, summarise(cells, args.env, methods, sampled=True), args.out,
                missing=[p for p in REFERENCE if p not in POLICIES], echo=not getattr(args, "quiet", False))
    return rows


def env_cells(env_id: str, args: argparse.Namespace, methods: tuple[str, ...], weights: tuple[float, ...]) -> str:
    """Run (or resume) the cells of one env (every method and seed) into ``cells_<env id>.json``; its path.

    Each cell is a :func:`~harness_gym_baselines.experiments.cells.cell_record` whose ``records`` are the
    deterministic test episodes, with ``method``, ``ood``, ``test_sampled``, ``ood_sampled``, ``training`` and
    ``train_seconds`` beside them."""
    path = args.out / f"cells_{env_id}.json"
    cells: dict[str, dict[str, Any]] = json.loads(path.read_text()) if path.exists() else {}
    for seed in range(args.seeds):
        dsid = None
        found: dict[str, Policy] = {}
        for method in methods:
            key = f"{env_id}|{method}|{seed}"
            if key not in cells:
                start = time.perf_counter()
                meta: dict[str, Any] = {}
                if method in TRAINED:
                    dsid = dsid or behaviour_dataset(env_id, seed, args.buffer_episodes)
                    policy = make_policy(str(train_cell(method, env_id, seed, args, dsid)))
                    meta = {k: v for k, v in (getattr(getattr(policy, "model", None), "harness_gym", None)
                                              or {}).items() if k not in ("config", "feature_names")}
                elif method in REFERENCE:
                    policy = make_policy(method)
                else:
                    found = found or _searched_references(args, env_id, weights, seed)
                    policy = found[method]
                train_s = time.perf_counter() - start
                split = evaluate_both(env_id, policy, args.episodes, seed, farming_reference(method, args.out, env_id, seed))
                cells[key] = cell_record(env_id=env_id, controller=method, seed=seed, split="test", records=split["test"],
                                         summary=None, extra={"method": method,
                                                "train_cost_weight": getattr(args, "cost_weight", 0.0), "train_seconds": train_s, "training": meta,
                                                "ood": split["ood"]})
                path.write_text(json.dumps(cells, default=float))
                if not getattr(args, "quiet", False):
                    print(f"{key}: test success {np.mean([r['success'] for r in split['test']]):.3f} "
                          f"({time.perf_counter() - start:.0f} s)", flush=True)
            if "test_sampled" not in cells[key]:
                cells[key].update(_sampled(cells[key], method, env_id, seed, args))
                path.write_text(json.dumps(cells, default=float))
    return str(path)


def _sampled(cell: dict[str, Any], method: str, env_id: str, seed: int, args: argparse.Namespace) -> dict[str, Any]:
    """The ``test_sampled`` and ``ood_sampled`` records of a cell: its trained model sampling from its policy."""
    policy = sampling_policy(method, args.out, env_id, seed)
    if policy is None:  # a scripted harness: sampling is the same as acting
        return {"test_sampled": _test_records(cell), "ood_sampled": cell["ood"]}
    farming = farming_reference(method, args.out, env_id, seed)
    return {f"{k}_sampled": v for k, v in evaluate_both(env_id, policy, args.episodes, seed, farming).items()}


def _test_records(cell: dict[str, Any]) -> list[dict[str, Any]]:
    """The deterministic test episodes of a cell (``test`` in a cells file written before the cell schema)."""
    return cell["records"] if "records" in cell else cell["test"]


def _searched_references(args: argparse.Namespace, env_id: str, weights: tuple[float, ...],
                         seed: int) -> dict[str, Policy]:
    """The best searched script and the probe per weight (:mod:`harness_gym_baselines.experiments.fixed_references`),
    from ``args.references_dir`` (default ``OUT/references``) at ``args.reference_sizes`` (default FULL)."""
    refs = fixed_references(env_id, weights, cache_dir=getattr(args, "references_dir", None) or args.out / "references",
                            seed=seed, sizes=getattr(args, "reference_sizes", None) or ReferenceSizes.FULL)
    return {name: policy for found in refs.values() for name, policy in found.policies().items()}


def summarise(cells: dict[str, dict[str, Any]], envs: list[str], methods: tuple[str, ...],
              sampled: bool = False) -> list[dict[str, Any]]:
    """One row per env and method: the table's columns, from the cells of every seed.

    :param cells: the cell records
    :param envs: the env ids, in row order
    :param methods: the methods, in row order
    :param sampled: summarise the episodes of the sampling policies instead of the deterministic ones
    """
    test_key, ood_key = ("test_sampled", "ood_sampled") if sampled else ("test", "ood")
    rows = []
    for env_id in envs:
        for method in methods:
            runs = [c for c in cells.values() if c["env_id"] == env_id and c["method"] == method]
            if not runs:
                continue
            tests = [c[test_key] if sampled else _test_records(c) for c in runs]
            test_success = [np.mean([r["success"] for r in records]) for records in tests]
            ood_success = [np.mean([r["success"] for r in c[ood_key]]) for c in runs]
            within = [np.std([e["return"] for e in c["training"]["eval_history"][-STABILITY_LAST:]])
                      for c in runs if c["training"].get("eval_history")]
            test = [r for records in tests for r in records]
            farmed = [r for r in test if "farming_steps" in r]
            success = float(np.mean(test_success))
            rows.append({
                "env_id": env_id, "method": method, "seeds": len(runs), "episodes": len(test),
                "success": success,
                "success_seed_std": float(np.std(test_success)) if len(runs) >= 2 else math.nan,
                "quality": float(np.mean([r["quality"] for r in test])),
                "rubric": float(np.mean([r["rubric"] for r in test])),
                "ood_success": float(np.mean(ood_success)),
                "ood_retention": float(np.mean(ood_success)) / success if success > 0 else math.nan,
                "val_return_std_last": float(np.mean(within)) if within else math.nan,
                "cost": float(np.mean([r["cost"] for r in test])),
                "cost_is_units": all(r["cost_is_units"] for r in test),
                "hms": _nan_mean([r["hms"] for r in test]),
                "steps": float(np.mean([r["steps"] for r in test])),
                "farming_share": (sum(r["farming_steps"] for r in farmed) / sum(r["steps"] for r in farmed)
                                  if farmed else math.nan),
                "train_seconds": float(np.mean([c["train_seconds"] for c in runs])),
                "final_weights": _mean_weights(runs),
            })
    return rows


def _nan_mean(values: list[float]) -> float:
    kept = [v for v in values if not math.isnan(v)]
    return float(np.mean(kept)) if kept else math.nan


def _mean_weights(runs: list[dict[str, Any]]) -> dict[str, float] | None:
    weights = [c["training"]["weights"] for c in runs if "weights" in c["training"]]
    if not weights:
        return None
    return {k: float(np.mean([w[k] for w in weights])) for k in weights[0]}


def _pct(value: float) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{100 * value:.1f}%"


def seed_spread(std: float) -> str:
    """`` (12.3%)``, the seed standard deviation of a success rate beside it, or ``""`` where it is NaN: a
    spread needs two seeds or more, and one seed's "(0.0%)" would read as a measured agreement.

    :param std: the standard deviation over seeds (NaN with fewer than two)
    """
    return "" if math.isnan(std) else f" ({_pct(std)})"


def table_lines(rows: list[dict[str, Any]]) -> list[str]:
    """One Markdown table of summarised rows, with the seed's reported figures beside ours."""
    cost_label = "mean cost (units)" if rows and all(r["cost_is_units"] for r in rows) else "mean cost (steps)"
    lines = [f"| env | method | seeds x episodes | success (seed std, 2+ seeds) | quality score 1-5 | OOD retention | "
             f"val-return std, last {STABILITY_LAST} evals | {cost_label} | HMS | farming share | seed blog: "
             "success / score / OOD retention |", "|---" * 11 + "|"]
    for r in rows:
        reported = " / ".join(SEED_REPORTED[r["method"]]) if r["method"] in SEED_REPORTED else ""
        hms = "n/a" if math.isnan(r["hms"]) else f"{r['hms']:.3f}"
        stability = "n/a" if math.isnan(r["val_return_std_last"]) else f"{r['val_return_std_last']:.3f}"
        lines.append(f"| {r['env_id']} | {r['method']} | {r['seeds']} x {r['episodes'] // r['seeds']} | "
                     f"{_pct(r['success'])}{seed_spread(r['success_seed_std'])} | {r['rubric']:.2f} | "
                     f"{_pct(r['ood_retention'])} ({_pct(r['ood_success'])} ood) | {stability} | "
                     f"{r['cost']:.1f} | {hms} | {_pct(r.get('farming_share', math.nan))} | {reported} |")
    return lines


def write_table(rows: list[dict[str, Any]], sampled_rows: list[dict[str, Any]], out: Path,
                missing: list[str], echo: bool = True) -> None:
    """table.md (deterministic policies, then the trained ones sampling) and table.csv (both); ``echo``
    prints table.md too."""
    lines = ["Deterministic policies (the mode of each trained policy: what `harness-gym eval --policy` runs):", "",
             *table_lines(rows), "",
             "The trained policies sampling from their action distribution (as during training):", "",
             *table_lines([r for r in sampled_rows if r["method"] in TRAINED])]
    if missing:
        lines += ["", f"Not in the policy registry, left out: {', '.join(missing)}."]
    (out / "table.md").write_text("\n".join(lines) + "\n")
    with open(out / "table.csv", "w", newline="") as f:
        fields = ["policy_mode", *(k for k in rows[0] if k != "final_weights")]
        writer = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        writer.writeheader()
        writer.writerows({"policy_mode": "deterministic", **r} for r in rows)
        writer.writerows({"policy_mode": "sampled", **r} for r in sampled_rows if r["method"] in TRAINED)
    if echo:
        print("\n".join(lines))


# ----- the corruption experiment ------------------------------------------------------------------------
def corruption(args: argparse.Namespace) -> dict[str, Any]:
    """Adaptive vs frozen trust weights under the knowledge corruption, for each method of
    :data:`ECPO_METHODS`; writes corruption.json, corruption.png and corruption.md.

    A plan of :func:`~harness_gym_baselines.experiments.engine.run_tasks` tasks: per seed the behaviour buffer,
    then one :func:`corruption_run` per method and arm (``args.num_workers`` at a time, default 1); a run that
    corruption.json already holds is not planned again."""
    from harness_gym_baselines.experiments.engine import Task, run_tasks, settings_digest

    path = args.out / "corruption.json"
    runs: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
    env_id = args.env[0]
    digest = settings_digest([vars(args), ECPO_METHODS])
    command = (f"python -m harness_gym_baselines.experiments.ecpo_comparison corruption --out {args.out} "
               f"--env {env_id} --seeds {args.seeds} --steps {args.steps} --corrupt-from {args.corrupt_from}")
    plan, keys = [], {}
    for seed in range(args.seeds):
        buffer = f"behaviour:{env_id}:seed{seed}:{digest}"
        plan.append(Task(buffer, behaviour_dataset, {"env_id": env_id, "seed": seed,
                                                     "episodes": args.buffer_episodes}, command))
        for method in ECPO_METHODS:
            for arm in ("adaptive", "frozen"):
                key = f"{env_id}|{method}|{arm}|{seed}"
                if key not in runs:
                    keys[f"corruption:{method}:{arm}:seed{seed}:{digest}"] = key
                    plan.append(Task(f"corruption:{method}:{arm}:seed{seed}:{digest}", corruption_run,
                                     {"method": method, "arm": arm, "env_id": env_id, "seed": seed,
                                      "buffer": buffer, "args": args},
                                     command, needs=(buffer,)))
    if keys:  # nothing to train: no buffer needed either
        records = run_tasks(plan, args.out, getattr(args, "num_workers", 1), records_dir="tasks",
                            what="corruption run", finished=lambda name, record: _corruption_done(
                                args, keys.get(name), record, runs, path))
        for name, key in keys.items():
            runs[key] = records[name]["result"]
    path.write_text(json.dumps(runs, default=float))
    plot_corruption(runs, env_id, args.corrupt_from, args.out / "corruption.png")
    (args.out / "corruption.md").write_text("\n".join(corruption_lines(runs, env_id, args.corrupt_from)) + "\n")
    return runs


def _corruption_done(args: argparse.Namespace, key: str | None, record: dict[str, Any], runs: dict[str, Any],
                     path: Path) -> None:
    """Keep a finished run in corruption.json at once (a later failure loses none) and say its test success."""
    if key is None:
        return
    runs[key] = record["result"]
    path.write_text(json.dumps(runs, default=float))
    if not getattr(args, "quiet", False):
        print(f"{key}: test success {runs[key]['test_success']:.3f}", flush=True)


def corruption_run(method: str, arm: str, env_id: str, seed: int, buffer: str,
                   args: argparse.Namespace) -> dict[str, Any]:
    """One arm of the corruption experiment: train ``method`` with the corruption on from ``args.corrupt_from``
    (trust weights frozen at the switch for ``arm == "frozen"``; its preferences from the dataset the task
    ``buffer`` collected), then its test success."""
    from harness_gym_baselines.common.trainer_registry import load_trainer
    from harness_gym_baselines.experiments.engine import TaskRecords

    trainer = load_trainer(method)
    model = args.out / "models" / f"{env_id}__{method}-corrupt-{arm}__{seed}.zip"
    cfg = trainer.config(env_id=env_id, steps=args.steps, seed=seed, out=str(model),
                         cost_weight=getattr(args, "cost_weight", 0.0), log_dir=str(args.out / "runs"),
                         preference_dataset=TaskRecords(args.out, "tasks").done(buffer)["result"],
                         corrupt_from=args.corrupt_from, freeze_weights_at_corruption=arm == "frozen",
                         final_eval_episodes=0, progress=False)
    policy = trainer.train(cfg)
    test = evaluate_split(env_id, policy, split="test", episodes=args.episodes, seed=seed)
    return {"method": method, "arm": arm, "seed": seed, "steps": args.steps,
            "steps_after_switch": args.steps - args.corrupt_from, "episodes": args.episodes,
            "history": policy.model.harness_gym["eval_history"],
            "test_success": float(np.mean([r["success"] for r in test]))}


def corruption_lines(runs: dict[str, Any], env_id: str, corrupt_from: int) -> list[str]:
    """A Markdown table of the corruption runs: per method and arm, the seeds, the steps trained in all and
    after the switch, the final test success (mean and spread across seeds) and the final w_knowledge.

    :param runs: the corruption runs (``corruption.json``)
    :param env_id: the env (title)
    :param corrupt_from: the step the corruption starts
    """
    lines = [f"Knowledge corruption on {env_id} from step {corrupt_from}: adaptive vs frozen trust weights.", "",
             "| method | arm | seeds | steps (after the switch) | test success (seed std, 2+ seeds) | final w_knowledge |",
             "|---|---|---|---|---|---|"]
    for method in ECPO_METHODS:
        for arm in ("adaptive", "frozen"):
            arm_runs = [r for r in runs.values() if r.get("method", "ecpo") == method and r["arm"] == arm]
            if not arm_runs:
                continue
            success = [r["test_success"] for r in arm_runs]
            steps = min(r.get("steps", 0) for r in arm_runs)
            after = min(r.get("steps_after_switch", steps - corrupt_from) for r in arm_runs)
            weight = [r["history"][-1]["weight_knowledge"] for r in arm_runs if r["history"]]
            spread = float(np.std(success)) if len(success) >= 2 else math.nan
            lines.append(f"| {method} | {arm} | {len(arm_runs)} | {steps} ({after}) | {_pct(float(np.mean(success)))}"
                         f"{seed_spread(spread)} | {_f3(weight)} |")
    lines.append("")
    lines.extend(f"- {method}: {separation_sentence(runs, method)}" for method in ECPO_METHODS
                 if any(r.get("method", "ecpo") == method for r in runs.values()))
    return lines


def separation(runs: dict[str, Any], method: str) -> dict[str, Any] | None:
    """Adaptive minus frozen test success of ``method``, paired by seed (both arms of a seed play the same test
    episodes), with a 95% normal interval whose standard error is the larger of the episodes' binomial one
    (all seeds' episodes pooled) and, with two or more seeds, the spread of the per-seed differences.

    :returns: ``difference``, ``low``, ``high``, ``seeds``, ``episodes`` (per seed) and ``separated`` (the
        interval excludes 0); ``None`` when no seed has both arms or a run does not record its episode count
    """
    by_seed: dict[int, dict[str, dict[str, Any]]] = {}
    for r in runs.values():
        if r.get("method", "ecpo") == method:
            by_seed.setdefault(int(r["seed"]), {})[r["arm"]] = r
    pairs = [arms for arms in by_seed.values() if {"adaptive", "frozen"} <= set(arms)]
    if not pairs or any("episodes" not in r for arms in pairs for r in arms.values()):
        return None
    episodes = min(int(r["episodes"]) for arms in pairs for r in arms.values())
    diffs = np.array([arms["adaptive"]["test_success"] - arms["frozen"]["test_success"] for arms in pairs])
    p_adaptive = float(np.mean([arms["adaptive"]["test_success"] for arms in pairs]))
    p_frozen = float(np.mean([arms["frozen"]["test_success"] for arms in pairs]))
    n = episodes * len(pairs)
    se = float(np.sqrt((p_adaptive * (1 - p_adaptive) + p_frozen * (1 - p_frozen)) / n))
    if len(pairs) > 1:
        se = max(se, float(np.std(diffs, ddof=1) / np.sqrt(len(pairs))))
    difference = float(np.mean(diffs))
    low, high = difference - 1.96 * se, difference + 1.96 * se
    return {"difference": difference, "low": low, "high": high, "seeds": len(pairs), "episodes": episodes,
            "separated": bool(low > 0 or high < 0)}


def separation_sentence(runs: dict[str, Any], method: str) -> str:
    """One line saying whether the corruption runs of ``method`` separate adaptive from frozen weights."""
    s = separation(runs, method)
    if s is None:
        return "adaptive vs frozen: no seed with both arms and a recorded episode count, so no verdict"
    verdict = "separated" if s["separated"] else "**not separated** (the interval holds 0: more seeds or episodes are needed)"
    return (f"adaptive - frozen test success {100 * s['difference']:+.1f} points [95% CI {100 * s['low']:+.1f}, "
            f"{100 * s['high']:+.1f}] over {s['seeds']} seed(s) x {s['episodes']} episodes: {verdict}")


def _f3(values: list[float]) -> str:
    return f"{np.mean(values):.3f}" if values else "n/a"


def plot_corruption(runs: dict[str, Any], env_id: str, corrupt_from: int, out: Path, title_suffix: str = "") -> None:
    """w_knowledge and validation success over training, adaptive vs frozen (mean over seeds), for each ECPO
    (solid: ``ecpo``, dashed: ``ecpo-pb``).

    :param runs: the corruption runs (``corruption.json``; a run without ``method`` is an ``ecpo`` run)
    :param env_id: the env (title)
    :param corrupt_from: the step the corruption starts (a vertical line)
    :param out: the PNG to write
    :param title_suffix: appended to the title
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_w, ax_s) = plt.subplots(1, 2, figsize=(11, 4), layout="constrained")
    for method, style in zip(ECPO_METHODS, ("-", "--")):
        for arm, colour in (("adaptive", "tab:blue"), ("frozen", "tab:orange")):
            hist = [r["history"] for r in runs.values() if r.get("method", "ecpo") == method and r["arm"] == arm]
            if not hist:
                continue
            n = min(len(h) for h in hist)
            steps = [hist[0][i]["timesteps"] for i in range(n)]
            w = np.mean([[h[i]["weight_knowledge"] for i in range(n)] for h in hist], axis=0)
            s = np.mean([[h[i]["success_rate"] for i in range(n)] for h in hist], axis=0)
            label = f"{method} {arm} ({len(hist)} seeds)"
            ax_w.plot(steps, w, color=colour, linestyle=style, label=label)
            ax_s.plot(steps, s, color=colour, linestyle=style, label=label)
    for ax, title, ylabel in ((ax_w, "trust weight of the knowledge signal", "w_knowledge (mean over seeds)"),
                              (ax_s, "validation success of the sampling policy", "success rate (mean over seeds)")):
        ax.axvline(corrupt_from, color="grey", linestyle=":", label="corruption on")
        ax.set_xlabel("training steps")
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.legend(fontsize="small")
    fig.suptitle(f"{env_id}: 30% of correct knowledge signals flipped from step {corrupt_from}{title_suffix}")
    fig.savefig(out, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> Any:
    parser = argparse.ArgumentParser(description=doc_summary(__doc__))
    parser.add_argument("experiment", choices=("table", "corruption"))
    parser.add_argument("--out", type=Path, default=Path("results/ecpo"))
    parser.add_argument("--env", action="append", default=None, help=f"repeatable; default {', '.join(ENVS)} "
                        "(corruption: the first one, default HarnessResearchQA-v1)")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=20_000, help="training steps per online run")
    parser.add_argument("--episodes", type=int, default=100, help="test- and ood-split episodes per cell")
    parser.add_argument("--buffer-episodes", type=int, default=500, help="episodes of each behaviour buffer")
    parser.add_argument("--corrupt-from", type=int, default=10_000, help="corruption: step of the switch")
    parser.add_argument("--cost-weight", type=float, default=0.0, help="the env's cost_weight the online methods "
                        "train at")
    args = parser.parse_args(argv)
    args.env = args.env or (list(ENVS) if args.experiment == "table" else ["HarnessResearchQA-v1"])
    args.out.mkdir(parents=True, exist_ok=True)
    os.environ["MINARI_DATASETS_PATH"] = str((args.out / "minari").resolve())
    return table(args) if args.experiment == "table" else corruption(args)


if __name__ == "__main__":
    main()
