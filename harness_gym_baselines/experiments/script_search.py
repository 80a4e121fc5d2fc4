"""The best fixed strategy of an env: the best of the named harnesses and the open-loop scripts of a grid, chosen on
train and val, judged on test. Every table's "best fixed" column is this strategy.

    harness-gym search-script HarnessCode-v1 [--cost-weights 0,0.01] [--prices cheap-hosted]
        [--budget-units auto] [--seed 0] [--num-workers 2] [--out results/scripts] [--json]

The candidates are every :class:`~harness_gym_baselines.policies.open_loop.Script` of a grid (OBSERVE 0-4,
RETRIEVE 0-8, TOOL 0-6 before the draft, TOOL 0-2 after it where TOOL runs the draft, and 0, 1, 2, 3, 4, 6, 8 or 12
checks: the check-revise macro revises until a check passes for as many rounds as the named harnesses use in the
default step budget), without the parts the domain cannot use (no tools, TOOL only after a draft). An episode's return is ``Q - w * cost``, and a
script's Q and cost on a seeded episode do not depend on ``w``, so one pass over the episodes serves every cost
weight. The search is successive halving on the **train** split with common random numbers (every candidate
plays the same seeded episodes): all candidates on ``n1`` episodes, the best ``k1`` for any weight on ``n2``
more, the best ``k2`` on ``n3`` more; the finalists **and the named harnesses** (static, forced-check, thorough)
are then compared on ``n_val`` **val** episodes and the best per weight is the winner, the best fixed strategy (so
on val it is at least every named harness). The winner is evaluated on the **test** split beside the named
harnesses, with bootstrap CIs over episodes and paired differences (the same test seeds for every policy).
Nothing of the test split enters the choice.

Results are written to ``OUT/<env id>.json`` (and reused when the settings match, so an interrupted search of
several envs resumes at the next env).
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from tqdm import tqdm

import harness_gym  # noqa: F401  (registers the ids in worker processes)
from harness_gym.budget.references import NAMED_SCRIPTS
from harness_gym.running.rollout import Policy, episode_seed, play_episode
from harness_gym_baselines.evaluate import bootstrap_ci
from harness_gym_baselines.policies.open_loop import Script, ScriptPolicy, is_script_name, script_shape
from harness_gym_baselines.policies.registry import make_policy

CHECKS: tuple[int, ...] = (0, 1, 2, 3, 4, 6, 8, 12)
"""The check counts of the grid: up to forced-check's rounds in the default step budget of 30."""
COST_WEIGHTS: tuple[float, ...] = (0.0, 0.001, 0.01, 0.1)
"""The cost weights a search serves by default."""


@dataclass(frozen=True)
class SearchConfig:
    """The search's settings (module docstring); every field is recorded with the result."""

    env_id: str
    """a registered env id"""
    cost_weights: tuple[float, ...] = COST_WEIGHTS
    """the weights w of the return Q - w * cost the winners are chosen for"""
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    """constructor keywords of the env (prices, budget_units, ...; not cost_weight: returns are computed here)"""
    seed: int = 0
    """seed of the train, val and test episode sequences"""
    rounds: tuple[tuple[int, int], ...] = ((16, 48), (48, 12), (128, 4))
    """successive halving on train: (episodes, how many to keep per weight) per round"""
    val_episodes: int = 300
    """episodes on the val split that pick the winner among the finalists"""
    test_episodes: int = 500
    """episodes on the test split of the winner and the named scripts"""
    max_observe: int = 4
    max_retrieve: int = 8
    max_tool: int = 6
    max_post_tool: int = 2
    checks: tuple[int, ...] = CHECKS


def candidate_scripts(env_id: str, cfg: SearchConfig) -> list[Script]:
    """The grid of scripts worth trying on ``env_id`` (module docstring).

    :param env_id: a registered env id
    :param cfg: the grid's bounds
    """
    env = gym.make(env_id, **cfg.env_kwargs)
    try:
        domain = env.unwrapped.domain
        n_obs = max((len(t.observations) for t in domain.all_tasks()), default=0)
        has_tools = bool(domain.tools)
        tool_after_draft = has_tools and domain.tool_needs_draft
    finally:
        env.close()
    observes = range(min(n_obs, cfg.max_observe) + 1)
    retrieves = range(cfg.max_retrieve + 1) if domain.corpus else range(1)
    tools = range(cfg.max_tool + 1) if has_tools and not tool_after_draft else range(1)
    posts = range(cfg.max_post_tool + 1) if tool_after_draft else range(1)
    return [Script(o, r, t, p, c) for o in observes for r in retrieves for t in tools for p in posts
            for c in cfg.checks]


def fixed_policy(name: str) -> Policy:
    """The fixed strategy a name stands for: a script name (``O1-R2-T0-D-T0-C2``) or a named harness.

    :param name: a script name or one of :data:`~harness_gym.budget.references.NAMED_SCRIPTS`
    """
    return ScriptPolicy(name) if is_script_name(name) else make_policy(name)


# ----- playing scripts on seeded episodes (one env per worker process) --------------------------------------
_ENVS: dict[tuple[str, str], gym.Env] = {}


def _env(env_id: str, env_kwargs: dict[str, Any]) -> gym.Env:
    key = (env_id, json.dumps(env_kwargs, sort_keys=True, default=str))
    if key not in _ENVS:
        _ENVS[key] = gym.make(env_id, **env_kwargs)
    return _ENVS[key]


def play_outcomes(env: gym.Env, policy: Policy, seeds: Sequence[int], split: str) -> np.ndarray:
    """Quality, cost and forced-submit flag of ``policy`` on each seeded episode, as an ``(n, 3)`` array.

    :param env: a harness env
    :param policy: the controller
    :param seeds: reset seeds
    :param split: the task split
    """
    out = np.empty((len(seeds), 3), dtype=float)
    for i, seed in enumerate(seeds):
        episode = play_episode(env, policy, seed=seed, split=split)
        final = episode.final_info
        out[i] = (final["quality"], sum(info["cost"]["units"] for info in episode.infos), float(final["forced_submit"]))
    return out


def _play_batch(env_id: str, env_kwargs: dict[str, Any], names: list[str], seeds: list[int],
                split: str) -> list[np.ndarray]:
    env = _env(env_id, env_kwargs)
    return [play_outcomes(env, fixed_policy(name), seeds, split) for name in names]


def evaluate_scripts(env_id: str, env_kwargs: dict[str, Any], scripts: Sequence[Script | str], seeds: Sequence[int],
                     split: str, *, num_workers: int = 1, progress: bool = False,
                     desc: str = "scripts") -> dict[Any, np.ndarray]:
    """Every fixed strategy's outcomes (:func:`play_outcomes`) on the same seeded episodes, keyed as given.

    :param env_id: a registered env id
    :param env_kwargs: its constructor keywords
    :param scripts: the scripts (or the names of fixed strategies, :func:`fixed_policy`)
    :param seeds: the episodes' reset seeds (common to all scripts)
    :param split: the task split
    :param num_workers: processes playing scripts at once (1: this process)
    :param progress: show a progress bar
    :param desc: the progress bar's label
    """
    keys = {(s if isinstance(s, str) else s.name): s for s in scripts}
    names = list(keys)
    chunk = max(1, math.ceil(len(names) / (4 * max(num_workers, 1))))
    batches = [names[i:i + chunk] for i in range(0, len(names), chunk)]
    results: dict[Any, np.ndarray] = {}
    bar = tqdm(total=len(names), desc=desc, disable=not progress, leave=False)
    if num_workers <= 1:
        for batch in batches:
            for name, out in zip(batch, _play_batch(env_id, env_kwargs, batch, list(seeds), split)):
                results[keys[name]] = out
                bar.update(1)
    else:
        import multiprocessing

        with ProcessPoolExecutor(num_workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            futures = [(batch, pool.submit(_play_batch, env_id, env_kwargs, batch, list(seeds), split))
                       for batch in batches]
            for batch, future in futures:
                for name, out in zip(batch, future.result()):
                    results[keys[name]] = out
                    bar.update(1)
    bar.close()
    return results


def returns(outcomes: np.ndarray, w: float) -> np.ndarray:
    """Per-episode returns ``Q - w * cost`` of an outcomes array (:func:`play_outcomes`)."""
    return outcomes[:, 0] - w * outcomes[:, 1]


def _length(strategy: Script | str) -> int:
    """How many steps a fixed strategy's structure names (a named harness counts as its shape)."""
    script = script_shape(strategy) if isinstance(strategy, str) else strategy
    return sum(asdict(script).values())


def _top(outcomes: dict[Any, np.ndarray], weights: Iterable[float], keep: int) -> list[Any]:
    """The union over ``weights`` of the ``keep`` best strategies by mean return (ties: the shorter one)."""
    chosen: dict[Any, None] = {}
    for w in weights:
        ranked = sorted(outcomes, key=lambda s: (-float(returns(outcomes[s], w).mean()), _length(s), str(s)))
        for script in ranked[:keep]:
            chosen.setdefault(script, None)
    return list(chosen)


def choose_winners(cfg: SearchConfig, *, num_workers: int = 1, progress: bool = False) -> dict[str, Any]:
    """The train and val part of the search (module docstring), nothing of the test split: how many candidates,
    the finalists, every finalist's mean val return per weight (``finalist_val_returns``) and per weight the
    winner, the finalist with the best val return.

    :param cfg: the settings (``test_episodes`` is not used)
    :param num_workers: processes playing scripts at once
    :param progress: show progress bars
    """
    candidates = candidate_scripts(cfg.env_id, cfg)
    pool = list(candidates)
    train: dict[Script, np.ndarray] = {}
    used = 0
    for r, (episodes, keep) in enumerate(cfg.rounds):
        seeds = [episode_seed(cfg.seed, used + i) for i in range(episodes)]
        used += episodes
        got = evaluate_scripts(cfg.env_id, cfg.env_kwargs, pool, seeds, "train", num_workers=num_workers,
                               progress=progress, desc=f"{cfg.env_id} train round {r + 1}")
        for script, out in got.items():
            train[script] = np.concatenate([train[script], out]) if script in train else out
        pool = _top({s: train[s] for s in pool}, cfg.cost_weights, keep)
    val_seeds = [episode_seed(cfg.seed, i) for i in range(cfg.val_episodes)]
    finalists = [s.name for s in pool] + [n for n in NAMED_SCRIPTS]
    val = evaluate_scripts(cfg.env_id, cfg.env_kwargs, finalists, val_seeds, "val", num_workers=num_workers,
                           progress=progress, desc=f"{cfg.env_id} val")
    by_name = {s.name: s for s in pool}
    winners: dict[str, dict[str, Any]] = {}
    for w in cfg.cost_weights:
        best = _top(val, [w], 1)[0]
        searched = by_name.get(best)
        winners[_wkey(w)] = {"script": best, "val_return": float(returns(val[best], w).mean()),
                             "train_return": float(returns(train[searched], w).mean()) if searched else None,
                             "train_episodes": int(len(train[searched])) if searched else 0}
    return {"candidates": len(candidates), "finalists": finalists, "winners": winners,
            "finalist_val_returns": {name: {_wkey(w): float(returns(val[name], w).mean()) for w in cfg.cost_weights}
                                     for name in finalists}}


def search(cfg: SearchConfig, *, num_workers: int = 1, progress: bool = False) -> dict[str, Any]:
    """Run the search of the module docstring (:func:`choose_winners`, then :func:`judge_on_test`); returns the
    result object written by :func:`search_to_file`.

    :param cfg: the settings
    :param num_workers: processes playing scripts at once
    :param progress: show progress bars
    """
    start = time.perf_counter()
    chosen = choose_winners(cfg, num_workers=num_workers, progress=progress)
    test = judge_on_test(cfg, sorted({v["script"] for v in chosen["winners"].values()}),
                         num_workers=num_workers, progress=progress)
    return {"settings": _settings(cfg), **chosen, "test": test, "seconds": time.perf_counter() - start}


def judge_on_test(cfg: SearchConfig, scripts: Sequence[Script | str], *, num_workers: int = 1,
                  progress: bool = False) -> dict[str, Any]:
    """The test-split outcomes of ``scripts`` and the named scripts on the same seeded episodes: per policy and
    weight the mean return, Q and cost with bootstrap CIs and the forced-submit rate, and each searched script's
    paired return difference to every named script.

    :param cfg: the settings (test episodes, seed, env)
    :param scripts: the winners (scripts or names of fixed strategies)
    :param num_workers: processes playing scripts at once
    :param progress: show progress bars
    """
    seeds = [episode_seed(cfg.seed, i) for i in range(cfg.test_episodes)]
    searched = [s for s in scripts if (s if isinstance(s, str) else s.name) not in NAMED_SCRIPTS]
    outcomes: dict[str, np.ndarray] = {(s if isinstance(s, str) else s.name): o for s, o in evaluate_scripts(
        cfg.env_id, cfg.env_kwargs, searched, seeds, "test", num_workers=num_workers, progress=progress,
        desc=f"{cfg.env_id} test").items()}
    env = gym.make(cfg.env_id, **cfg.env_kwargs)
    try:
        for name in NAMED_SCRIPTS:
            outcomes[name] = play_outcomes(env, make_policy(name), seeds, "test")
    finally:
        env.close()
    return {name: summarise_outcomes(out, cfg.cost_weights, seed=cfg.seed, against={
        other: outcomes[other] for other in NAMED_SCRIPTS if other != name}) for name, out in outcomes.items()}


def summarise_outcomes(outcomes: np.ndarray, weights: Iterable[float], *, seed: int = 0,
                       against: dict[str, np.ndarray] | None = None) -> dict[str, Any]:
    """Means with 95% bootstrap CIs of Q, cost and (per weight) return; the forced-submit rate; and, per weight,
    the paired mean return difference to each policy of ``against`` (played on the same seeds) with its CI.

    :param outcomes: an ``(n, 3)`` outcomes array (:func:`play_outcomes`)
    :param weights: the cost weights
    :param seed: seed of the bootstrap
    :param against: other policies' outcomes on the same episodes
    """
    q, cost = outcomes[:, 0], outcomes[:, 1]
    out: dict[str, Any] = {"episodes": int(len(q)), "quality_mean": float(q.mean()),
                           "quality_ci95": list(bootstrap_ci(q, seed=seed)), "cost_mean": float(cost.mean()),
                           "cost_ci95": list(bootstrap_ci(cost, seed=seed)),
                           "forced_submit_rate": float(outcomes[:, 2].mean()), "return": {}, "minus": {}}
    for w in weights:
        ret = returns(outcomes, w)
        out["return"][_wkey(w)] = {"mean": float(ret.mean()), "ci95": list(bootstrap_ci(ret, seed=seed))}
        for other, theirs in (against or {}).items():
            diff = ret - returns(theirs, w)
            out["minus"].setdefault(other, {})[_wkey(w)] = {"mean": float(diff.mean()),
                                                            "ci95": list(bootstrap_ci(diff, seed=seed))}
    return out


def _wkey(w: float) -> str:
    return f"{w:g}"


def _settings(cfg: SearchConfig) -> dict[str, Any]:
    return json.loads(json.dumps(asdict(cfg), default=str))


def search_to_file(cfg: SearchConfig, out_dir: str | os.PathLike, *, num_workers: int = 1,
                   progress: bool = False) -> dict[str, Any]:
    """:func:`search`, written to ``out_dir/<env id>.json``; a finished file with the same settings is read back
    instead of searching again.

    :param cfg: the settings
    :param out_dir: the results folder
    :param num_workers: processes playing scripts at once
    :param progress: show progress bars
    """
    path = Path(out_dir) / f"{cfg.env_id}.json"
    if path.is_file():
        done = json.loads(path.read_text())
        if done.get("settings") == _settings(cfg):
            return done
    result = search(cfg, num_workers=num_workers, progress=progress)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(result, indent=1) + "\n")
    tmp.replace(path)
    return result
