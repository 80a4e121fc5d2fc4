"""The cascade experiment (docs/cascade.md): on the tiered envs, the quality-cost frontier of the fixed cascades and a
learned controller, at one cost weight and the default prices.

    python -m harness_gym_baselines.experiments.cascade --out OUT [--envs HarnessCodeTiered-v2 ...]
        [--cost-weight 0.01] [--val-episodes 100] [--train-episodes 60] [--test-episodes 300] [--ppo-steps 30000]
        [--ppo-seeds 0 1] [--offline awr-q iql] [--offline-episodes 1000] [--offline-seeds 0 1]

Per env, in order, each choice made before the test split is read:

1. the AutoMix-style threshold: ``O1-R2-T1-Dc-Eq<pct>-Vf-C2`` for each pct of :data:`THRESHOLDS`, ``--val-episodes``
   on val; the best mean return is ``confidence-cascade``;
2. the searched best fixed strategy: every script of :func:`search_grid` (gather, draft tier, escalation with the chosen
   threshold, repair tier, checks), ``--train-episodes`` on train; the best mean return is ``best-fixed``. With
   ``--wide``, a second reference as wide as the open-loop grammar: ``best-fixed-wide``, the best on
   ``--val-episodes`` val episodes of the named harnesses (static, forced-check, thorough, cheap tier), the winner
   above and every tier variant (:func:`tier_variants`) of the finalists of the open-loop script search
   (:func:`~harness_gym_baselines.experiments.script_search.choose_winners` at this cost weight on this env: OBSERVE
   0-4, RETRIEVE 0-8, TOOL 0-6 before and 0-2 after the draft, 0-12 checks, successive halving on train);
3. ``ppo-sparse`` (MaskablePPO on the env's reward, :mod:`harness_gym_baselines.algos.ppo`), one run per
   ``--ppo-seeds`` seed, ``--ppo-steps`` steps on train;
4. the offline learners of ``--offline`` (each trainer at its config's defaults; ``awr-q`` is AWR with the fitted
   advantage), one per ``--offline-seeds`` seed, trained on that seed's buffer (shared by the learners) of
   ``--offline-episodes`` train episodes of :class:`~harness_gym_baselines.policies.cascade.CascadeMixture` over the
   searched grid (every tier choice, plus one-step random departures), rewards at the same cost weight;
5. every controller on the same ``--test-episodes`` test episodes (reset seeds ``0..N-1``): mean Q, cost units and
   return with 95% bootstrap CIs, and each controller's return minus best-fixed's (and best-fixed-wide's), paired per
   episode (two-level bootstrap over seeds). The question asked of the learned controller: does it reach always-frontier's Q at
   <= 50% of its cost?

Writes ``OUT/cascade.json``, ``OUT/cascade.md`` and ``OUT/cascade.png`` (Q against cost per env). Models and buffers
are kept under ``OUT`` and a rerun reuses them; ``OUT/settings.json`` records the settings they depend on, and a rerun
with others is refused. ``--coupling``, ``--rho-sweep`` and ``--weight-sweep`` run only their measurement
(:func:`coupling`, :func:`rho_sweep`, :func:`weight_sweep`).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import harness_gym  # noqa: F401 -- registers the tiered ids
from harness_gym.budget.references import NAMED_SCRIPTS
from harness_gym.running.rollout import Policy, play_episode
from harness_gym_baselines.experiments.script_search import SearchConfig, choose_winners
from harness_gym_baselines.experiments.statistics import mean_ci, paired_difference
from harness_gym_baselines.policies.cascade import CASCADES, CascadeMixture, CascadePolicy, CascadeScript
from harness_gym_baselines.policies.open_loop import Script, is_script_name
from harness_gym_baselines.policies.registry import make_policy

THRESHOLDS: tuple[int, ...] = (50, 60, 70, 75, 80, 85, 90)
"""The confidence thresholds (percent) the val split chooses among."""
FIXED: tuple[str, ...] = ("always-cheap", "always-frontier", "cheap-then-frontier")
"""The named cascades run as registered."""


def play(env_id: str, policy: Policy, *, split: str, episodes: int, cost_weight: float,
         **env_kwargs: Any) -> dict[str, np.ndarray]:
    """``episodes`` episodes (reset seeds ``0..episodes-1``) of ``policy``: per-episode Q, cost units, return and the
    share of the units the frontier tier's steps cost (``env_kwargs``: further keywords of the env)."""
    env = gym.make(env_id, split=split, cost_weight=cost_weight, **env_kwargs)
    quality, units, returns, frontier = [], [], [], []
    try:
        for seed in range(episodes):
            played = play_episode(env, policy, seed=seed, split=split)
            quality.append(played.final_info["quality"])
            units.append(sum(info["cost"]["units"] for info in played.infos[1:]))
            returns.append(sum(played.rewards))
            frontier.append(played.final_info["tier_units"]["frontier"] / units[-1] if units[-1] > 0 else 0.0)
    finally:
        env.close()
    return {"quality": np.array(quality), "units": np.array(units), "return": np.array(returns),
            "frontier_share": np.array(frontier)}


def search_grid(threshold: int) -> list[CascadeScript]:
    """The fixed strategies searched on train: gather O1-R2-T1 or O2-R4-T3; the first draft cheap or frontier; for a
    cheap draft no escalation, escalation on a failed check or below ``threshold``; repairs cheap or frontier; 0-2
    checks."""
    return [CascadeScript(o, r, t, draft, escalate, repair, checks)
            for (o, r, t), draft, repair, checks in itertools.product(((1, 2, 1), (2, 4, 3)), "cf", "cf", (0, 1, 2))
            for escalate in _escalations(draft, checks, threshold)]


def _escalations(draft: str, checks: int, threshold: int) -> tuple[str, ...]:
    """The escalations a first draft of tier ``draft`` can have: none, on a failed check (when there is a check) or
    below the confidence ``threshold`` for a cheap draft; none for a frontier one."""
    if draft == "f":
        return ("n",)
    return ("n", "k", f"q{threshold}") if checks > 0 else ("n", f"q{threshold}")


def _best(env_id: str, scripts: Sequence[CascadeScript], *, split: str, episodes: int,
          cost_weight: float) -> tuple[CascadeScript, dict[str, float]]:
    scores = {s.name: float(play(env_id, CascadePolicy(s), split=split, episodes=episodes,
                                 cost_weight=cost_weight)["return"].mean()) for s in scripts}
    best = max(scripts, key=lambda s: (scores[s.name], s.name))
    return best, scores


def tier_variants(shape: Script, threshold: int) -> list[CascadeScript]:
    """Every tier choice of :func:`search_grid` on one open-loop script's shape: the first draft cheap or frontier; for
    a cheap draft no escalation, escalation on a failed check (when the shape checks) or below ``threshold``; repairs
    cheap or frontier. The cheap, never-escalating, cheap-repair variant plays ``shape`` itself."""
    return [CascadeScript(shape.observe, shape.retrieve, shape.tool, draft, escalate, repair, shape.checks,
                          shape.post_tool)
            for draft, repair in itertools.product("cf", "cf") for escalate in _escalations(draft, shape.checks, threshold)]


def wide_reference(env_id: str, *, threshold: int, narrow_best: CascadeScript, cost_weight: float,
                   val_episodes: int, num_workers: int = 1, search: SearchConfig | None = None) -> dict[str, Any]:
    """``best-fixed-wide`` (module docstring, step 2): the open-loop search's finalists on this env at this weight,
    their tier variants, the named harnesses and step 2's winner, chosen by mean val return.

    :param search: the open-loop search (default: its defaults at ``cost_weight`` on ``env_id``)
    """
    cfg = search or SearchConfig(env_id=env_id, cost_weights=(cost_weight,))
    if cfg.env_id != env_id or cfg.cost_weights != (cost_weight,):
        raise ValueError(f"wide_reference: the search must be on {env_id} at cost weight {cost_weight} only, got "
                         f"{cfg.env_id} at {cfg.cost_weights}")
    chosen = choose_winners(cfg, num_workers=num_workers)
    shapes = [Script.parse(name) for name in chosen["finalists"] if is_script_name(name)]
    candidates: dict[str, Policy] = {s.name: CascadePolicy(s) for shape in shapes for s in tier_variants(shape, threshold)}
    candidates[narrow_best.name] = CascadePolicy(narrow_best)
    candidates.update({name: make_policy(name) for name in NAMED_SCRIPTS})
    scores = {name: float(play(env_id, policy, split="val", episodes=val_episodes, cost_weight=cost_weight)
                          ["return"].mean()) for name, policy in candidates.items()}
    best = max(scores, key=lambda name: (scores[name], name))
    return {"best": best, "policy": candidates[best], "candidates": chosen["candidates"],
            "finalists": chosen["finalists"], "val_returns": scores}


def train_ppo(env_id: str, *, seed: int, steps: int, cost_weight: float, out: Path) -> Policy:
    """One ppo-sparse run on train (validation every 8 rollouts, no final evaluation: the test split is read here;
    kept under ``out``: a rerun reuses the model)."""
    from harness_gym_baselines.algos.ppo import PPOSparseConfig, load, train

    model = out / "models" / f"{env_id}-ppo-sparse-s{seed}.zip"
    if model.exists():
        return load(model)
    cfg = PPOSparseConfig(env_id=env_id, steps=steps, seed=seed, cost_weight=cost_weight, out=str(model),
                          progress=False, eval_every=8, eval_episodes=20, final_eval_episodes=0,
                          log_dir=str(out / "runs"))
    return train(cfg)


OFFLINE_TRAINERS: dict[str, tuple[str, dict[str, Any]]] = {"bc": ("bc", {}), "awr": ("awr", {"advantage": "mc"}),
                                                         "awr-q": ("awr", {"advantage": "q"}), "iql": ("iql", {}),
                                                         "cql": ("cql", {})}
"""The offline learners ``--offline`` can name: row name -> (registered trainer, its settings)."""


def train_offline(env_id: str, name: str, *, seed: int, episodes: int, grid: Sequence[CascadeScript],
                  cost_weight: float, out: Path) -> Policy:
    """One offline learner: a buffer of ``episodes`` train episodes of :class:`CascadeMixture` over ``grid`` (collection
    seed ``seed``), then the trainer at its defaults (kept under ``out``: a rerun reuses buffer and model)."""
    from harness_gym.datasets import collect, load_transitions
    from harness_gym_baselines.common.trainer_registry import load_trainer
    from harness_gym_baselines.experiments.learners_at_cost import short_name, trainer_config, wkey

    trainer_name, settings = OFFLINE_TRAINERS[name]
    trainer = load_trainer(trainer_name)
    dataset_id = f"harness/{short_name(env_id).lower()}-cascade-mixture-w{wkey(cost_weight).replace('.', 'p')}-seed{seed}-v0"
    model = out / "models" / f"{env_id}-{name}-s{seed}.pt"
    if not model.exists():
        collect(env_id, CascadeMixture(list(grid)), dataset_id, episodes=episodes, seed=seed, progress=False,
                env_kwargs={"cost_weight": cost_weight})
        config = trainer_config(trainer.config, {"dataset_id": dataset_id, "out": str(model), "seed": seed,
                                                 "eval_episodes": 0, "log_dir": str(out / "runs"), "progress": False,
                                                 **settings})
        trainer.train(config, load_transitions(dataset_id))
    policy = trainer.load(model)
    policy.name = name
    return policy


def coupling(env_id: str, *, seeds: int = 8, **env_kwargs: Any) -> dict[str, Any]:
    """How the tiers' successes go together across the test tasks: per task, the success rate over ``seeds`` episodes
    of ``O1-R2-T1-Dc-En-Vc-C0`` (cheap draft) and ``O1-R2-T1-Df-En-Vf-C0`` (frontier draft); their correlation across
    tasks, and the frontier tier's success rate on the episodes where the cheap draft failed and where it passed
    (same task and seed, so the same task ability draw and the same gathered evidence). ``env_kwargs``: further
    keywords of the env (e.g. ``ability_correlation``)."""
    env = gym.make(env_id, split="test", budget_units=None, **env_kwargs)
    cheap_policy, frontier_policy = CascadePolicy("O1-R2-T1-Dc-En-Vc-C0"), CascadePolicy("O1-R2-T1-Df-En-Vf-C0")
    per_task, pairs = [], []
    try:
        tasks = [t.task_id for t in env.unwrapped.domain.tasks("test")]
        for task_id in tasks:
            wins = []
            for seed in range(seeds):
                c = play_episode(env, cheap_policy, seed=seed, split="test", task_id=task_id).final_info["success"]
                f = play_episode(env, frontier_policy, seed=seed, split="test", task_id=task_id).final_info["success"]
                wins.append((c, f))
            pairs += wins
            per_task.append(np.mean(wins, axis=0))
    finally:
        env.close()
    rates, both = np.array(per_task), np.array(pairs, dtype=float)
    varied = rates.std(axis=0).min() > 0
    return {"tasks": len(tasks), "seeds": seeds, "cheap_success": float(both[:, 0].mean()),
            "frontier_success": float(both[:, 1].mean()),
            "per_task_correlation": float(np.corrcoef(rates[:, 0], rates[:, 1])[0, 1]) if varied else None,
            "frontier_success_where_cheap_failed": float(both[both[:, 0] == 0, 1].mean()),
            "frontier_success_where_cheap_passed": float(both[both[:, 0] == 1, 1].mean())}


def rho_sweep(env_id: str, rhos: Sequence[float], *, episodes: int, cost_weight: float,
              coupling_seeds: int = 8) -> list[dict[str, Any]]:
    """The tier correlation's sensitivity analysis (docs/cascade.md): per ``rho`` (the env's ``ability_correlation``),
    :func:`coupling` and the named cascades on ``episodes`` test episodes, with the per-episode routing oracle (the
    better return of always-cheap and always-frontier on each episode, a ceiling no router that must choose before
    seeing both reaches) and cheap-then-frontier's return minus the better of the two single tiers, paired."""
    found = []
    for rho in rhos:
        played = {name: play(env_id, CascadePolicy(CASCADES[name][0], name), split="test", episodes=episodes,
                             cost_weight=cost_weight, ability_correlation=rho) for name in FIXED}
        cheap, frontier = played["always-cheap"]["return"], played["always-frontier"]["return"]
        single = cheap if cheap.mean() >= frontier.mean() else frontier
        found.append({"rho": rho, "coupling": coupling(env_id, seeds=coupling_seeds, ability_correlation=rho),
                      "rows": {name: {k: mean_ci(run[k]) for k in ("quality", "units", "return")}
                               for name, run in played.items()},
                      "routing_oracle_return": mean_ci(np.maximum(cheap, frontier)),
                      "escalation_minus_best_single": paired_difference(
                          [played["cheap-then-frontier"]["return"]], single, "cascade")})
    return found


def weight_sweep(env_id: str, weights: Sequence[float], *, train_episodes: int, test_episodes: int,
                 threshold: int = 50) -> list[dict[str, Any]]:
    """Where the frontier tier starts to pay (docs/cascade.md): the scripts of :func:`search_grid` (confidence threshold
    ``threshold``) played once on ``train_episodes`` train episodes, the best per weight by mean ``Q - w * units`` (an
    episode's Q and units do not depend on ``w``), then each weight's winner on ``test_episodes`` test episodes."""
    grid = search_grid(threshold)
    train = {s.name: play(env_id, CascadePolicy(s), split="train", episodes=train_episodes, cost_weight=0.0)
             for s in grid}
    found, tested = [], {}
    for w in weights:
        best = max(grid, key=lambda s: (float((train[s.name]["quality"] - w * train[s.name]["units"]).mean()), s.name))
        if best.name not in tested:
            tested[best.name] = play(env_id, CascadePolicy(best), split="test", episodes=test_episodes, cost_weight=0.0)
        run = tested[best.name]
        found.append({"cost_weight": w, "threshold": threshold, "searched": len(grid), "best_fixed": best.name, "quality": mean_ci(run["quality"]),
                      "units": mean_ci(run["units"]), "frontier_share": mean_ci(run["frontier_share"]),
                      "return": mean_ci(run["quality"] - w * run["units"])})
    return found


def render_weight_sweep(found: dict[str, list[dict[str, Any]]], args: argparse.Namespace) -> str:
    """The Markdown table of :func:`weight_sweep`'s results per env."""
    first = next(iter(found.values()))[0]
    lines = [f"the best fixed cascade per cost weight ({first['searched']} scripts, threshold "
             f"{first['threshold'] / 100:.2f}, chosen on {args.train_episodes} train episodes), judged on "
             f"{args.test_episodes} test episodes, default prices", "",
             "| env | cost weight | best fixed (train) | Q | cost units | frontier share of cost | return |",
             "|---|---|---|---|---|---|---|"]
    for env_id, sweep in found.items():
        for res in sweep:
            cells = [f"{res[k]['mean']:.3f} [{res[k]['ci95'][0]:.3f}, {res[k]['ci95'][1]:.3f}]"
                     for k in ("quality", "units", "frontier_share", "return")]
            lines.append(f"| {env_id} | {res['cost_weight']:g} | `{res['best_fixed']}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def render_rho_sweep(found: dict[str, list[dict[str, Any]]], args: argparse.Namespace) -> str:
    """The Markdown table of :func:`rho_sweep`'s results per env."""
    seeds = next(iter(found.values()))[0]["coupling"]["seeds"]
    lines = [f"tier correlation rho swept, cost weight {args.cost_weight}, {args.test_episodes} test episodes, default "
             f"prices; coupling from {seeds} episodes per test task", "",
             "| env | rho | success cheap / frontier | per-task corr. | frontier success where cheap failed / passed | "
             "return always-cheap | return always-frontier | return cheap-then-frontier | routing oracle | "
             "cheap-then-frontier - best single (paired) |", "|---" * 10 + "|"]
    for env_id, sweep in found.items():
        for res in sweep:
            c, rows = res["coupling"], res["rows"]
            corr = "n/a" if c["per_task_correlation"] is None else f"{c['per_task_correlation']:.2f}"
            diff = res["escalation_minus_best_single"]
            lines.append(
                f"| {env_id} | {res['rho']:g} | {c['cheap_success']:.3f} / {c['frontier_success']:.3f} | {corr} | "
                f"{c['frontier_success_where_cheap_failed']:.3f} / {c['frontier_success_where_cheap_passed']:.3f} | "
                + " | ".join(f"{rows[n]['return']['mean']:.3f}" for n in FIXED)
                + f" | {res['routing_oracle_return']['mean']:.3f} | {diff['mean']:+.3f} [{diff['ci95'][0]:+.3f}, "
                  f"{diff['ci95'][1]:+.3f}] |")
    return "\n".join(lines)


def _summary(values: dict[str, list[np.ndarray]], best_fixed: np.ndarray,
             best_fixed_wide: np.ndarray | None) -> dict[str, Any]:
    row = {"quality": mean_ci(values["quality"]), "units": mean_ci(values["units"]),
           "return": mean_ci(values["return"]), "frontier_share": mean_ci(values["frontier_share"]),
           "return_minus_best_fixed": paired_difference(values["return"], best_fixed, "cascade")}
    if best_fixed_wide is not None:
        row["return_minus_best_fixed_wide"] = paired_difference(values["return"], best_fixed_wide, "cascade")
    return row


def run_env(env_id: str, args: argparse.Namespace, out: Path) -> dict[str, Any]:
    """Every step of the module docstring on one env."""
    cw = args.cost_weight
    conf_scripts = [CascadeScript.parse(f"O1-R2-T1-Dc-Eq{pct}-Vf-C2") for pct in THRESHOLDS]
    conf_best, conf_scores = _best(env_id, conf_scripts, split="val", episodes=args.val_episodes, cost_weight=cw)
    threshold = int(conf_best.escalate[1:])
    grid = search_grid(threshold)
    best, grid_scores = _best(env_id, grid, split="train", episodes=args.train_episodes, cost_weight=cw)
    controllers: dict[str, list[Policy]] = {name: [CascadePolicy(CASCADES[name][0], name)] for name in FIXED}
    controllers["confidence-cascade"] = [CascadePolicy(conf_best, "confidence-cascade")]
    controllers["best-fixed"] = [CascadePolicy(best, "best-fixed")]
    wide = None
    if args.wide:
        wide = wide_reference(env_id, threshold=threshold, narrow_best=best, cost_weight=cw,
                              val_episodes=args.val_episodes, num_workers=args.num_workers)
        controllers["best-fixed-wide"] = [wide.pop("policy")]
    if args.ppo_steps > 0:
        controllers["ppo-sparse"] = [train_ppo(env_id, seed=s, steps=args.ppo_steps, cost_weight=cw, out=out)
                                     for s in args.ppo_seeds]
    for name in args.offline:
        controllers[name] = [train_offline(env_id, name, seed=s, episodes=args.offline_episodes, grid=grid,
                                           cost_weight=cw, out=out) for s in args.offline_seeds]
    test = {name: [play(env_id, p, split="test", episodes=args.test_episodes, cost_weight=cw) for p in policies]
            for name, policies in controllers.items()}
    best_fixed_return = test["best-fixed"][0]["return"]
    wide_return = test["best-fixed-wide"][0]["return"] if wide else None
    rows = {name: _summary({k: [run[k] for run in runs] for k in ("quality", "units", "return", "frontier_share")},
                           best_fixed_return, wide_return)
            for name, runs in test.items()}
    frontier = rows["always-frontier"]
    for row in rows.values():
        row["reaches_frontier_q_at_half_cost"] = bool(
            row["quality"]["mean"] >= frontier["quality"]["mean"]
            and row["units"]["mean"] <= 0.5 * frontier["units"]["mean"])
    return {"env_id": env_id, "confidence_threshold": threshold, "confidence_val_returns": conf_scores,
            "best_fixed": best.name, "best_fixed_train_return": grid_scores[best.name], "searched": len(grid),
            "wide": wide, "rows": rows}


def render_markdown(results: Sequence[dict[str, Any]], args: argparse.Namespace) -> str:
    lines = [f"cost weight {args.cost_weight}, default prices (cheap-hosted / frontier-hosted), "
             f"{args.test_episodes} test episodes, ppo-sparse {args.ppo_steps} steps x seeds {list(args.ppo_seeds)}; "
             f"offline {', '.join(args.offline) or 'none'} on {args.offline_episodes} mixture episodes x seeds "
             f"{list(args.offline_seeds)}", ""]
    for res in results:
        lines += [f"### {res['env_id']}", "",
                  f"confidence threshold (val): {res['confidence_threshold'] / 100:.2f}; best fixed (train, "
                  f"{res['searched']} scripts): `{res['best_fixed']}`", ""]
        wide = res.get("wide")
        keys = ["quality", "units", "frontier_share", "return", "return_minus_best_fixed"]
        head = ("| controller | Q | cost units | frontier share of cost | return | return - best-fixed (paired) | "
                + ("return - best-fixed-wide (paired) | " if wide else "") + "frontier Q at <= 50% cost |")
        if wide:
            keys.append("return_minus_best_fixed_wide")
            lines += [f"best fixed wide (val, {len(wide['val_returns'])} strategies: the tier variants of the "
                      f"open-loop search's finalists among {wide['candidates']} scripts, the named harnesses, the "
                      f"{res['searched']}-script winner): `{wide['best']}`", ""]
        lines += [head, "|---" * (len(keys) + 2) + "|"]
        for name, row in res["rows"].items():
            cell = [f"{row[k]['mean']:.3f} [{row[k]['ci95'][0]:.3f}, {row[k]['ci95'][1]:.3f}]" for k in keys]
            lines.append(f"| {name} | " + " | ".join(cell) + f" | {'yes' if row['reaches_frontier_q_at_half_cost'] else 'no'} |")
        lines.append("")
    return "\n".join(lines)


def plot(results: Sequence[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    cols = min(len(results), 4)
    rows = -(-len(results) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.5 * cols, 4.2 * rows), squeeze=False)
    for ax in axes.flat[len(results):]:
        ax.set_visible(False)
    for ax, res in zip(axes.flat, results):
        for name, row in res["rows"].items():
            x, y = row["units"]["mean"], row["quality"]["mean"]
            ax.errorbar(x, y, yerr=[[y - row["quality"]["ci95"][0]], [row["quality"]["ci95"][1] - y]],
                        fmt="o" if name in CASCADES or name.startswith("best-fixed") else "*", capsize=3, label=name)
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("cost units per episode (log)")
        ax.set_ylabel("quality Q (test)")
        ax.set_title(res["env_id"])
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def merge_runs(dirs: Sequence[Path]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The results of several runs' ``cascade.json`` in one list, and their common settings (``envs`` joined).

    :raises SystemExit: naming the file and setting where a run differs from the first
    """
    merged: dict[str, Any] | None = None
    results: list[dict[str, Any]] = []
    for folder in dirs:
        path = folder / "cascade.json"
        if not path.is_file():
            raise SystemExit(f"cascade --merge: {path} does not exist (is {folder} a finished run?)")
        run = json.loads(path.read_text())
        settings = {k: v for k, v in run["args"].items() if k not in ("out", "envs", "merge", "num_workers")}
        if merged is None:
            merged = {**settings, "envs": []}
        differ = sorted(k for k in settings if settings[k] != merged.get(k))
        if differ:
            raise SystemExit(f"cascade --merge: {path} was run with other settings than {dirs[0] / 'cascade.json'}: "
                             + ", ".join(f"{k} {merged.get(k)!r} vs {settings[k]!r}" for k in differ))
        merged["envs"] += run["args"]["envs"]
        results += run["results"]
    assert merged is not None
    return merged, results


def _write(out: Path, stem: str, args: dict[str, Any], results: Any, text: str) -> None:
    """``OUT/<stem>.json`` (the settings and results) and ``OUT/<stem>.md`` (``text``, also printed)."""
    (out / f"{stem}.json").write_text(json.dumps({"args": args, "results": results}, indent=1) + "\n")
    (out / f"{stem}.md").write_text(text + "\n")
    print(text)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--envs", nargs="+", default=["HarnessCodeTiered-v2", "HarnessResearchQATiered-v2",
                                                      "HarnessTauRetailTiered-v2"])
    parser.add_argument("--cost-weight", type=float, default=0.01)
    parser.add_argument("--val-episodes", type=int, default=100)
    parser.add_argument("--train-episodes", type=int, default=60)
    parser.add_argument("--test-episodes", type=int, default=300)
    parser.add_argument("--ppo-steps", type=int, default=30_000)
    parser.add_argument("--ppo-seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--offline", nargs="*", default=["awr-q", "iql"], choices=sorted(OFFLINE_TRAINERS),
                        help="offline learners trained on the cascade-mixture buffers (none: leave them out)")
    parser.add_argument("--offline-episodes", type=int, default=1000)
    parser.add_argument("--offline-seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--wide", action="store_true",
                        help="add best-fixed-wide, the reference as wide as the open-loop grammar (step 2)")
    parser.add_argument("--num-workers", type=int, default=1, help="processes of the open-loop search (--wide)")
    parser.add_argument("--rho-sweep", type=float, nargs="+", metavar="RHO",
                        help="only the tier correlation's sensitivity analysis (rho_sweep()), into OUT/rho_sweep.json")
    parser.add_argument("--weight-sweep", type=float, nargs="+", metavar="W",
                        help="only the best fixed cascade per cost weight (weight_sweep()), into OUT/weight_sweep.json")
    parser.add_argument("--merge", nargs="+", metavar="DIR",
                        help="only join the cascade.json of runs (one env each, same settings) into OUT's tables and "
                             "figure")
    parser.add_argument("--coupling", action="store_true",
                        help="only measure how the tiers' successes go together (coupling()), into OUT/coupling.json")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("MINARI_DATASETS_PATH", str((out / "minari").resolve()))
    if args.merge:
        merged_args, results = merge_runs([Path(d) for d in args.merge])
        _write(out, "cascade", merged_args, results, render_markdown(results, argparse.Namespace(**merged_args)))
        plot(results, out / "cascade.png")
        return
    if args.weight_sweep:
        swept = {env_id: weight_sweep(env_id, args.weight_sweep, train_episodes=args.train_episodes,
                                      test_episodes=args.test_episodes) for env_id in args.envs}
        _write(out, "weight_sweep", vars(args), swept, render_weight_sweep(swept, args))
        return
    if args.rho_sweep:
        swept = {env_id: rho_sweep(env_id, args.rho_sweep, episodes=args.test_episodes, cost_weight=args.cost_weight)
                 for env_id in args.envs}
        _write(out, "rho_sweep", vars(args), swept, render_rho_sweep(swept, args))
        return
    if args.coupling:
        found = {env_id: coupling(env_id) for env_id in args.envs}
        (out / "coupling.json").write_text(json.dumps(found, indent=1) + "\n")
        print(json.dumps(found, indent=1))
        return
    settings = {key: getattr(args, key) for key in ("cost_weight", "val_episodes", "train_episodes", "ppo_steps",
                                                     "offline_episodes")}
    settings_file = out / "settings.json"
    if settings_file.exists():
        kept = json.loads(settings_file.read_text())
        differ = sorted(key for key in settings if kept.get(key) != settings[key])
        if differ:
            parser.error(f"{settings_file} holds models and buffers made with other settings ("
                         + ", ".join(f"{key} {kept.get(key)!r} -> {settings[key]!r}" for key in differ)
                         + "): use another --out")
    settings_file.write_text(json.dumps(settings, indent=1) + "\n")
    results = [run_env(env_id, args, out) for env_id in args.envs]
    _write(out, "cascade", vars(args), results, render_markdown(results, args))
    plot(results, out / "cascade.png")


if __name__ == "__main__":
    main()
