"""Running a policy for N episodes and summarising it as the evaluation JSON object.

The summary has the keys (README, `eval --json`): ``env_id, policy, split, episodes, quality_mean,
quality_ci95, quality_iqm, success_rate, hms_mean, patterns, mean_steps, invalid_action_rate, cost_mean,
cost_ci95, return_mean, cost_weight, seconds``. ``cost_mean`` is the mean episode cost in cost units (the sum of
``info["cost"]["units"]``, see ``harness_gym.core.cost``), ``return_mean`` the mean undiscounted episode return,
``Q - cost_weight * cost`` at the env's ``cost_weight``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
from tqdm import tqdm

import harness_gym  # noqa: F401  (registers the env ids)
from baselines.registry import make_policy
from harness_gym.core.maturity import PATTERNS
from harness_gym.rollout import Policy, episode_seed, play_episode


def bootstrap_ci(values: np.ndarray, stat: Callable[[np.ndarray], float] = np.mean, *, n_boot: int = 2000,
                 seed: int = 0, alpha: float = 0.05) -> tuple[float, float]:
    """Percentile bootstrap confidence interval of ``stat`` over ``values``."""
    values = np.asarray(values, dtype=float)
    if len(values) == 0:
        return (math.nan, math.nan)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(values), size=(n_boot, len(values)))
    stats = np.array([stat(values[row]) for row in idx])
    return float(np.quantile(stats, alpha / 2)), float(np.quantile(stats, 1 - alpha / 2))


def iqm(values: np.ndarray) -> float:
    """Interquartile mean: the mean of the middle 50% of the values (Agarwal et al., 2021)."""
    v = np.sort(np.asarray(values, dtype=float))
    n = len(v)
    if n == 0:
        return math.nan
    lo, hi = int(math.floor(0.25 * n)), int(math.ceil(0.75 * n))
    return float(v[lo:hi].mean()) if hi > lo else float(v.mean())


def run_episodes(env: gym.Env, policy: Policy, episodes: int, *, split: str, seed: int,
                 progress: bool = False) -> list[dict[str, Any]]:
    """Play ``episodes`` episodes (episode ``i`` resets with :func:`harness_gym.rollout.episode_seed`
    ``(seed, i)``); one record per episode with quality, success, hms, patterns, steps, cost (units), return.

    :param env: a harness env
    :param policy: the controller
    :param episodes: number of episodes
    :param split: the task split
    :param seed: the run's seed
    :param progress: show a tqdm progress bar
    """
    records: list[dict[str, Any]] = []
    for ep in tqdm(range(episodes), disable=not progress, desc=f"{policy.name}", leave=False):
        played = play_episode(env, policy, seed=episode_seed(seed, ep), split=split)
        info = played.final_info
        records.append({"task_id": info["task_id"], "quality": info["quality"], "success": info["success"],
                        "hms": info["hms"], "patterns": dict(info["patterns"]), "steps": len(played.actions),
                        "invalid_actions": sum(int(i["invalid_action"]) for i in played.infos[1:]),
                        "forced_submit": info["forced_submit"],
                        "cost": float(sum(i["cost"]["units"] for i in played.infos)),
                        "return": float(sum(played.rewards))})
    return records


def summarise(records: list[dict[str, Any]], *, env_id: str, policy: str, split: str, seconds: float,
              seed: int = 0, cost_weight: float = 0.0) -> dict[str, Any]:
    """The evaluation summary (module docstring) of a list of episode records.

    :param records: one record per episode (:func:`run_episodes`)
    :param env_id: the env id reported
    :param policy: the policy name reported
    :param split: the split reported
    :param seconds: wall time of the episodes
    :param seed: seed of the bootstrap resampling
    :param cost_weight: the env's ``cost_weight`` the returns were earned under (reported)
    """
    q = np.array([r["quality"] for r in records], dtype=float)
    h = np.array([r["hms"] for r in records], dtype=float)
    lo, hi = bootstrap_ci(q, seed=seed)
    patterns = {}
    for name in PATTERNS:
        vals = np.array([r["patterns"][name] for r in records], dtype=float)
        vals = vals[~np.isnan(vals)]
        patterns[name] = float(vals.mean()) if len(vals) else math.nan
    steps = sum(r["steps"] for r in records)
    cost = np.array([r["cost"] for r in records], dtype=float)
    return {
        "env_id": env_id,
        "policy": policy,
        "split": split,
        "episodes": len(records),
        "quality_mean": float(q.mean()),
        "quality_ci95": [lo, hi],
        "quality_iqm": iqm(q),
        "success_rate": float(np.mean([r["success"] for r in records])),
        "hms_mean": float(np.nanmean(h)) if np.any(~np.isnan(h)) else math.nan,
        "patterns": patterns,
        "mean_steps": steps / len(records),
        "invalid_action_rate": sum(r["invalid_actions"] for r in records) / max(steps, 1),
        "cost_mean": float(cost.mean()),
        "cost_ci95": list(bootstrap_ci(cost, seed=seed)),
        "return_mean": float(np.mean([r["return"] for r in records])),
        "cost_weight": float(cost_weight),
        "seconds": seconds,
    }


def evaluate(env_id: str, policy: str | Policy, *, episodes: int = 100, split: str = "test", seed: int = 0,
             env_kwargs: dict[str, Any] | None = None, progress: bool = False,
             wrap_env: Callable[[gym.Env], gym.Env] | None = None) -> dict[str, Any]:
    """Evaluate a policy on an env id; returns the summary (module docstring).

    :param env_id: a registered env id
    :param policy: a registered name, a model file or a policy instance
    :param episodes: number of episodes
    :param split: the task split
    :param seed: the run's seed (episode ``i`` resets with ``seed * 1000003 + i``)
    :param env_kwargs: constructor keywords for ``gym.make``
    :param progress: show a tqdm progress bar
    :param wrap_env: applied to the env before the episodes (e.g. :class:`baselines.episode_view.EpisodeRecorder`)
    """
    pol = make_policy(policy) if isinstance(policy, str) else policy
    env = gym.make(env_id, **(env_kwargs or {}))
    if wrap_env is not None:
        env = wrap_env(env)
    cost_weight = env.unwrapped.cost_weight
    try:
        start = time.perf_counter()
        records = run_episodes(env, pol, episodes, split=split, seed=seed, progress=progress)
        seconds = time.perf_counter() - start
    finally:
        env.close()
    name = policy if isinstance(policy, str) else pol.name
    return summarise(records, env_id=env_id, policy=name, split=split, seconds=seconds, seed=seed,
                     cost_weight=cost_weight)
