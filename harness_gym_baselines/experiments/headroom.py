"""Headroom: does reading the observation pay over the best fixed script, and how much would hidden state pay?

For one env, price profile and cost weight ``w`` (return ``Q - w * cost``), on the same seeded test episodes:

- **best open-loop script**: the winner of :mod:`harness_gym_baselines.experiments.script_search` (chosen on
  train and val);
- **closed-loop probe**: a linear controller over the observation vector (logits ``obs @ W + b``, masked argmax),
  first fitted by multinomial logistic regression to the best script's own steps on train (so it starts as a
  copy of the script, where a linear rule over the features can copy it), then improved by the cross-entropy
  method on train episodes (common random numbers within an iteration); the better of the two on val is kept.
  It reads nothing but the observation and the action mask: what it gains over the script is what the
  observation is worth to a controller;
- **evidence oracle**: gathers exactly the task's required evidence (hidden), then drafts and runs the best
  script's check-revise macro: what knowing when evidence suffices is worth;
- **correctness oracle**: the best script with its check verdict replaced by the hidden truth
  (:class:`~harness_gym_baselines.policies.scripted.CorrectnessOraclePolicy`): on the script's own evidence,
  what knowing whether the draft is right would be worth. With the probe it brackets the decision: the probe
  is what the observation yields, this is what the hidden label would;
- **oracle**: the full-information reference (:class:`~harness_gym_baselines.policies.scripted.OraclePolicy`):
  required evidence only, redrafting until a draft is correct. It is not cost-aware and gathers only what the
  task marks as required, so it can score below a script that gathers more (reported as it comes out).

The headline is *probe minus script*, a paired mean over the test episodes with a 95% bootstrap CI. The report
states it whatever it shows: a CI above 0 means the env holds a decision that a controller reading the
observation can learn and no fixed script matches.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from tqdm import tqdm

from harness_gym.core.actions import N_ACTIONS
from harness_gym.running.rollout import episode_seed, harness_env, play_episode
from harness_gym_baselines.experiments.script_search import (
    SearchConfig,
    _env,
    fixed_policy,
    play_outcomes,
    returns,
    search_to_file,
)
from harness_gym_baselines.experiments.statistics import mean_ci
from harness_gym_baselines.policies.open_loop import Script, ScriptPolicy, script_shape
from harness_gym_baselines.policies.scripted import CorrectnessOraclePolicy, EvidenceOraclePolicy, OraclePolicy

RESULT_FORMAT = 2
"""The layout of a result file's rows (2: with the correctness oracle); a file of another layout is recomputed."""
HEADROOM_WEIGHTS: tuple[float, ...] = (0.001, 0.01, 0.1)
"""The cost weights of the headroom table (issue: w in {0.001, 0.01, 0.1})."""


@dataclass(frozen=True)
class HeadroomConfig:
    """Settings of one env's headroom run (module docstring); recorded with the result."""

    env_id: str
    cost_weights: tuple[float, ...] = HEADROOM_WEIGHTS
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    """constructor keywords (prices, budget_units); not cost_weight"""
    seed: int = 0
    bc_episodes: int = 200
    """train episodes of the best script the probe is first fitted to"""
    cem_iterations: int = 12
    cem_population: int = 24
    cem_elite: int = 6
    cem_episodes: int = 24
    """train episodes per candidate per iteration (new seeds every iteration, the same for all candidates)"""
    cem_init_std: float = 0.5
    val_episodes: int = 300
    test_episodes: int = 500


class LinearPolicy:
    """A linear controller over the observation: the applicable action with the largest ``obs @ W + b``.

    :param weights: an ``(F + 1, 7)`` array, the last row the bias
    :param name: the name shown in tables
    """

    def __init__(self, weights: np.ndarray, name: str = "probe") -> None:
        self.weights = np.asarray(weights, dtype=np.float64)
        self.name = name

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        pass

    def act(self, obs: np.ndarray, env: gym.Env) -> int:
        mask = harness_env(env).action_masks()
        logits = obs.astype(np.float64) @ self.weights[:-1] + self.weights[-1]
        logits[~mask] = -np.inf
        return int(np.argmax(logits))


# ----- fitting the probe -------------------------------------------------------------------------------------
def _steps_of(env: gym.Env, policy: Any, seeds: Sequence[int], split: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Observations, actions and action masks of every step ``policy`` takes on the seeded episodes."""
    obs, acts, masks = [], [], []
    for seed in seeds:
        episode = play_episode(env, policy, seed=seed, split=split, record_masks=True)
        obs += episode.observations[:-1]
        acts += episode.actions
        masks += episode.action_masks[:-1]
    return np.array(obs, dtype=np.float64), np.array(acts), np.array(masks, dtype=bool)


def fit_imitation(obs: np.ndarray, actions: np.ndarray, masks: np.ndarray, *, iterations: int = 800,
                  lr: float = 0.5, l2: float = 1e-4) -> np.ndarray:
    """Multinomial logistic regression of ``actions`` on ``obs`` over the applicable actions (full-batch gradient
    descent on the masked softmax cross-entropy); the ``(F + 1, 7)`` weights of a :class:`LinearPolicy`.

    :param obs: ``(n, F)`` observations
    :param actions: ``(n,)`` action ids taken
    :param masks: ``(n, 7)`` applicable actions
    :param iterations: gradient steps
    :param lr: step size
    :param l2: weight decay
    """
    x = np.hstack([obs, np.ones((len(obs), 1))])
    w = np.zeros((x.shape[1], N_ACTIONS))
    onehot = np.eye(N_ACTIONS)[actions]
    for _ in range(iterations):
        logits = x @ w
        logits[~masks] = -1e9
        logits -= logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        p /= p.sum(axis=1, keepdims=True)
        grad = x.T @ (p - onehot) / len(x) + l2 * w
        w -= lr * grad
    return w


def _evaluate_weights(env_id: str, env_kwargs: dict[str, Any], candidates: list[np.ndarray], seeds: list[int],
                      split: str) -> list[np.ndarray]:
    env = _env(env_id, env_kwargs)
    return [play_outcomes(env, LinearPolicy(w), seeds, split) for w in candidates]


def fit_probe(cfg: HeadroomConfig, script: Script | str, w: float, *,
              progress: bool = False) -> tuple[LinearPolicy, dict[str, Any]]:
    """The closed-loop probe for weight ``w`` (module docstring) and a record of how it was fitted.

    :param cfg: the settings
    :param script: the best fixed strategy at ``w`` (the imitation target): a script or a fixed strategy's name
    :param w: the cost weight
    :param progress: show a progress bar over the CEM iterations
    """
    env = _env(cfg.env_id, cfg.env_kwargs)
    seeds = [episode_seed(cfg.seed + 7, i) for i in range(cfg.bc_episodes)]
    target = fixed_policy(script) if isinstance(script, str) else ScriptPolicy(script)
    w0 = fit_imitation(*_steps_of(env, target, seeds, "train"))
    rng = np.random.default_rng(cfg.seed)
    mean, std = w0.copy(), np.full_like(w0, cfg.cem_init_std)
    history = []
    offset = 10_000
    for it in tqdm(range(cfg.cem_iterations), desc=f"{cfg.env_id} probe w={w:g}", disable=not progress, leave=False):
        it_seeds = [episode_seed(cfg.seed + 11, offset + it * cfg.cem_episodes + i) for i in range(cfg.cem_episodes)]
        population = [mean] + [mean + std * rng.standard_normal(mean.shape) for _ in range(cfg.cem_population - 1)]
        outcomes = _evaluate_weights(cfg.env_id, cfg.env_kwargs, population, it_seeds, "train")
        scores = np.array([returns(out, w).mean() for out in outcomes])
        elite = np.argsort(-scores)[:cfg.cem_elite]
        stacked = np.stack([population[i] for i in elite])
        mean = stacked.mean(axis=0)
        std = stacked.std(axis=0) + 0.02
        history.append({"iteration": it, "mean_candidate": float(scores[0]), "best": float(scores.max()),
                        "elite_mean": float(scores[elite].mean())})
    val_seeds = [episode_seed(cfg.seed, i) for i in range(cfg.val_episodes)]
    imitation, refined = _evaluate_weights(cfg.env_id, cfg.env_kwargs, [w0, mean], val_seeds, "val")
    val = {"imitation": float(returns(imitation, w).mean()), "cem": float(returns(refined, w).mean())}
    chosen = "cem" if val["cem"] > val["imitation"] else "imitation"
    return LinearPolicy(mean if chosen == "cem" else w0), {"val_return": val, "chosen": chosen, "cem": history}


# ----- the table -----------------------------------------------------------------------------------------------
def headroom(cfg: HeadroomConfig, *, scripts_dir: str | os.PathLike, num_workers: int = 1,
             progress: bool = False) -> dict[str, Any]:
    """One env's headroom rows (one per cost weight), as a JSON-ready dict.

    After the script search, each cost weight's row is one task of
    :func:`~harness_gym_baselines.experiments.engine.run_tasks` (:func:`headroom_row`), ``num_workers`` at a
    time, resumed from ``<scripts_dir>/../tasks`` while the settings are the same.

    :param cfg: the settings
    :param scripts_dir: where the script search writes (and finds) its results
    :param num_workers: worker processes
    :param progress: show progress bars
    """
    from harness_gym_baselines.experiments.engine import Task, run_tasks, settings_digest

    start = time.perf_counter()
    search = search_to_file(SearchConfig(cfg.env_id, cost_weights=cfg.cost_weights, env_kwargs=cfg.env_kwargs,
                                         seed=cfg.seed, test_episodes=cfg.test_episodes),
                            scripts_dir, num_workers=num_workers, progress=progress)
    test_seeds = [episode_seed(cfg.seed, i) for i in range(cfg.test_episodes)]
    oracle = play_outcomes(_env(cfg.env_id, cfg.env_kwargs), OraclePolicy(), test_seeds, "test")
    digest = settings_digest([RESULT_FORMAT, asdict(cfg)])
    plan = []
    for w in cfg.cost_weights:
        named = {n: search["test"][n]["return"][f"{w:g}"]["mean"] for n in ("static", "forced-check", "thorough")}
        plan.append(Task(f"headroom:{cfg.env_id}:w{w:g}:{digest}", headroom_row,
                         {"cfg": cfg, "w": w, "winner": search["winners"][f"{w:g}"]["script"], "named": named,
                          "oracle": oracle, "progress": progress and num_workers == 1},
                         f"python benchmarks/headroom.py {cfg.env_id} --cost-weight {w:g}"))
    records = run_tasks(plan, Path(scripts_dir).parent, num_workers, records_dir="tasks", what="headroom row")
    rows = [records[task.name]["result"] for task in plan]
    return {"format": RESULT_FORMAT, "settings": json.loads(json.dumps(asdict(cfg), default=str)), "rows": rows,
            "test_episodes": cfg.test_episodes, "seconds": time.perf_counter() - start}


def headroom_row(cfg: HeadroomConfig, w: float, winner: str, named: dict[str, float], oracle: np.ndarray,
                 progress: bool) -> dict[str, Any]:
    """The headroom row of one cost weight (module docstring), JSON-ready.

    :param cfg: the settings
    :param w: the cost weight
    :param winner: the best fixed script at ``w``
    :param named: the named scripts' mean test returns at ``w``
    :param oracle: the oracle's test outcomes
    :param progress: show a progress bar over the CEM iterations
    """
    test_seeds = [episode_seed(cfg.seed, i) for i in range(cfg.test_episodes)]
    env = _env(cfg.env_id, cfg.env_kwargs)
    shape = script_shape(winner)
    scripted = play_outcomes(env, fixed_policy(winner), test_seeds, "test")
    probe, fitted = fit_probe(cfg, winner, w, progress=progress)
    probed = _evaluate_weights(cfg.env_id, cfg.env_kwargs, [probe.weights], test_seeds, "test")[0]
    evidence = play_outcomes(env, EvidenceOraclePolicy(shape.checks), test_seeds, "test")
    knowing = play_outcomes(env, CorrectnessOraclePolicy(shape), test_seeds, "test")

    def ci(values: np.ndarray) -> dict[str, Any]:
        return mean_ci(values, seed=cfg.seed)

    script_return = returns(scripted, w)
    return {
        "cost_weight": w, "script": winner, "script_return": ci(script_return),
        "script_quality": float(scripted[:, 0].mean()), "script_cost": float(scripted[:, 1].mean()),
        "script_forced_submit_rate": float(scripted[:, 2].mean()),
        "probe_return": ci(returns(probed, w)),
        "probe_quality": float(probed[:, 0].mean()), "probe_cost": float(probed[:, 1].mean()),
        "probe_forced_submit_rate": float(probed[:, 2].mean()),
        "probe_minus_script": ci(returns(probed, w) - script_return),
        "evidence_oracle_return": ci(returns(evidence, w)),
        "evidence_oracle_minus_script": ci(returns(evidence, w) - script_return),
        "correctness_oracle_return": ci(returns(knowing, w)),
        "correctness_oracle_minus_script": ci(returns(knowing, w) - script_return),
        "oracle_return": ci(returns(oracle, w)), "named_returns": named,
        "probe_fit": fitted, "probe_weights": probe.weights.round(6).tolist(),
    }


def headroom_to_file(cfg: HeadroomConfig, out_dir: str | os.PathLike, *, num_workers: int = 1,
                     progress: bool = False) -> dict[str, Any]:
    """:func:`headroom` written to ``out_dir/headroom_<env id>.json`` (reused when the settings match).

    :param cfg: the settings
    :param out_dir: the results folder (the script search writes into ``out_dir/scripts``, the row tasks their
        records into ``out_dir/tasks``)
    :param num_workers: worker processes
    :param progress: show progress bars
    """
    path = Path(out_dir) / f"headroom_{cfg.env_id}.json"
    settings = json.loads(json.dumps(asdict(cfg), default=str))
    if path.is_file():
        done = json.loads(path.read_text())
        if done.get("settings") == settings and done.get("format") == RESULT_FORMAT:
            return done
    result = headroom(cfg, scripts_dir=Path(out_dir) / "scripts", num_workers=num_workers, progress=progress)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(result, indent=1) + "\n")
    tmp.replace(path)
    return result


def headroom_table(results: Sequence[dict[str, Any]], *, profile: str) -> str:
    """The Markdown headroom table of several envs' results.

    :param results: :func:`headroom` results
    :param profile: the price profile named in the caption
    """
    def fmt(ci: dict[str, Any]) -> str:
        lo, hi = ci["ci95"]
        return f"{ci['mean']:+.3f} [{lo:+.3f}, {hi:+.3f}]"

    lines = [f"Price profile `{profile}`; return = Q - w * cost units; test split, the same seeded episodes for "
             "every row; 95% bootstrap CIs over episodes (paired for differences).", "",
             "| env | w | best fixed | script return | forced % | probe return | probe - script | "
             "evidence oracle - script | correctness oracle - script | oracle return |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for res in results:
        env_id = res["settings"]["env_id"]
        for row in res["rows"]:
            lines.append(f"| {env_id} | {row['cost_weight']:g} | `{row['script']}` | {fmt(row['script_return'])} | "
                         f"{100 * row['script_forced_submit_rate']:.0f} | {fmt(row['probe_return'])} | "
                         f"**{fmt(row['probe_minus_script'])}** | {fmt(row['evidence_oracle_minus_script'])} | "
                         f"{fmt(row['correctness_oracle_minus_script'])} | {fmt(row['oracle_return'])} |")
    return "\n".join(lines) + "\n"
