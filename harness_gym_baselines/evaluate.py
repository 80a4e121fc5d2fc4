"""Running a policy for N episodes and summarising it as the evaluation JSON object.

The summary has the keys (README, `eval --json`): ``env_id, policy, split, episodes, quality_mean,
quality_ci95, quality_iqm, success_rate, hms_mean, patterns, mean_steps, invalid_action_rate, forced_submit_rate,
n_unfinished, unfinished_rate, cost_mean, cost_ci95, return_mean, cost_weight, llm_calls, llm_errors,
llm_calls_mean, llm_error_rate, llm_server_error_rate, llm_faults, settings, seconds``. ``settings`` is what
decides the episodes' cost and return (:attr:`harness_gym.HarnessEnv.settings`): the price profile, the cost
budget as asked and in force (``budget_spec``; ``budget`` in words and ``budget_units``) and the cost weight.
``forced_submit_rate`` is the share of episodes the step budget or the
cost budget (``budget_units``) ended with a forced submit, ``invalid_action_rate`` the share of steps that were
inapplicable no-ops. ``cost_mean`` is the mean episode cost in cost units (the sum of ``info["cost"]["units"]``,
see ``harness_gym.core.cost``), ``return_mean`` the mean undiscounted episode return, ``Q - cost_weight * cost``
at the env's ``cost_weight``. ``llm_calls`` and ``llm_errors`` are the worker's requests and failed requests over
all episodes (``info["cost"]``; the simulated worker meters calls and never fails), ``llm_calls_mean`` the
requests per episode and ``llm_error_rate`` the share of requests that failed (0 without requests);
``llm_faults`` says why (``info["llm_faults"]`` summed: failed requests per ``CALL.CAUSE`` and fallbacks per
``CALL.fallback``, :data:`harness_gym.core.cost.LLM_FAULT_KEYS`) and ``llm_server_error_rate`` is the share of
requests that failed for a fault of the server (connection, timeout, HTTP status, malformed body: every cause but
an unparseable reply). Above :data:`LLM_ERROR_RATE_WARNING`, :func:`evaluate` warns (:class:`LLMErrorRateWarning`,
naming the call types and causes): a live model whose calls fail scores its empty drafts, and the summary alone
would not say why. The command line fails a run whose ``llm_server_error_rate`` is above
:data:`LLM_SERVER_ERROR_RATE_LIMIT` unless ``--max-llm-error-rate`` says otherwise.

An episode that an outer limit cut short (``gym.make(..., max_episode_steps=N)``, ``gym.wrappers.TimeLimit``:
``truncated`` without ``terminated``) was never graded; its ``info["quality"]`` is the pending ``-1.0``, which
is not a score. Its record has ``finished: False`` and NaN quality, hms and patterns; the summary counts such
episodes in ``n_unfinished`` and ``unfinished_rate`` and leaves them out of ``quality_*``, ``success_rate``,
``hms_mean``, ``patterns`` and ``return_mean`` (NaN when no episode finished); ``mean_steps``,
``invalid_action_rate``, ``forced_submit_rate`` and ``cost_*`` count every episode.

A layer of its own, between ``policies`` (whose registry resolves a policy name here) and ``algos`` (whose
trainers end with an evaluation): every room above uses it (the package docstring lists the layers).
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from tqdm import tqdm

from harness_gym.core.cost import LLM_CALL_TYPES, LLM_ERROR_CAUSES, LLM_SERVER_CAUSES, llm_faults_info
from harness_gym.core.maturity import PATTERNS
from harness_gym.running.parallel import is_concurrent, map_episodes
from harness_gym.running.rollout import Policy, episode_seed, harness_env, play_episode
from harness_gym_baselines.policies.registry import make_policy

LLM_ERROR_RATE_WARNING: float = 0.05
"""the share of failed LLM requests above which :func:`evaluate` warns"""


LLM_SERVER_ERROR_RATE_LIMIT: float = 0.25
"""the share of LLM requests failed for a fault of the server (``llm_server_error_rate``) above which ``eval`` and
``compare`` exit 1 when ``--max-llm-error-rate`` is not given: a server that stopped answering mid-run. Each
failed call makes ``max_retries + 1`` failed requests, so with the default 3 retries a server that dies before
about 90% of the calls is over it; rate-limit answers (HTTP 429) count, unparseable replies do not"""


class LLMErrorRateWarning(UserWarning):
    """More than :data:`LLM_ERROR_RATE_WARNING` of the worker's LLM requests failed during an evaluation."""


def llm_error_text(summary: dict[str, Any]) -> str:
    """One line saying how many of an evaluation's LLM requests failed, e.g. ``HarnessCode-v1 / static:
    12.0% of LLM requests failed (12 of 100)``.

    :param summary: an evaluation summary (module docstring)
    """
    return (f"{summary['env_id']} / {summary['policy']}: {100 * summary['llm_error_rate']:.1f}% of LLM requests "
            f"failed ({summary['llm_errors']} of {summary['llm_calls']})" + llm_faults_text(summary.get("llm_faults")))


def llm_faults_text(faults: dict[str, int] | None) -> str:
    """Why LLM requests failed, per call type, e.g. ``: draft 12 (timeout 8, http_status 4; 2 fallbacks),
    confidence 3 (unparseable 3; 3 fallbacks)``; ``""`` when nothing failed.

    :param faults: counts keyed by :data:`harness_gym.core.cost.LLM_FAULT_KEYS` (missing keys are 0)
    """
    parts = []
    for call in LLM_CALL_TYPES:
        causes = [(cause, int((faults or {}).get(f"{call}.{cause}", 0))) for cause in LLM_ERROR_CAUSES]
        failed = sum(n for _, n in causes)
        fallbacks = int((faults or {}).get(f"{call}.fallback", 0))
        if not failed and not fallbacks:
            continue
        why = ", ".join(f"{cause} {n}" for cause, n in causes if n)
        fell = f"{fallbacks} fallback{'s' if fallbacks != 1 else ''}"
        parts.append(f"{call} {failed} ({why}; {fell})" if why else f"{call} 0 ({fell})")
    return (": " + ", ".join(parts)) if parts else ""


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
                 progress: bool = False, pairs: Sequence[tuple[str, int]] | None = None) -> list[dict[str, Any]]:
    """Play ``episodes`` episodes (episode ``i`` resets with :func:`harness_gym.running.rollout.episode_seed`
    ``(seed, i)``); one record per episode with quality, success, hms, patterns, steps, cost (units), return.

    :param env: a harness env
    :param policy: the controller
    :param episodes: number of episodes
    :param split: the task split
    :param seed: the run's seed
    :param progress: show a tqdm progress bar
    :param pairs: play exactly these ``(task id, reset seed)`` pairs instead, in order (``episodes`` and ``seed``
        are then unused), e.g. the episodes of a recording
    """
    jobs = [(None, episode_seed(seed, ep)) for ep in range(episodes)] if pairs is None else list(pairs)
    records: list[dict[str, Any]] = []
    for ep, (task_id, ep_seed) in enumerate(tqdm(jobs, disable=not progress, desc=f"{policy.name}", leave=False)):
        records.append(episode_record(env, policy, index=ep, seed=ep_seed, split=split, task_id=task_id))
    return records


def episode_record(env: gym.Env, policy: Policy, *, index: int, seed: int, split: str,
                   task_id: str | None = None) -> dict[str, Any]:
    """Play one episode and return its evaluation record (quality, success, hms, patterns, steps, ...).

    :param env: a harness env
    :param policy: the controller
    :param index: the episode's position in the run (unused: the record depends on the seed alone)
    :param seed: its reset seed
    :param split: the task split
    :param task_id: play this task instead of one drawn from ``split`` by ``seed``
    """
    played = play_episode(env, policy, seed=seed, split=split, task_id=task_id)
    info = played.final_info
    finished = bool(played.terminations[-1])
    if finished:
        outcome = {"quality": info["quality"], "success": info["success"], "hms": info["hms"],
                   "patterns": dict(info["patterns"])}
    else:  # cut by an outer time limit: the pending -1.0 values are no score
        outcome = {"quality": math.nan, "success": False, "hms": math.nan,
                   "patterns": dict.fromkeys(info["patterns"], math.nan)}
    return {"task_id": info["task_id"], **outcome, "finished": finished, "steps": len(played.actions),
            "invalid_actions": sum(int(i["invalid_action"]) for i in played.infos[1:]),
            "forced_submit": info["forced_submit"], "cost": float(sum(i["cost"]["units"] for i in played.infos)),
            "return": float(sum(played.rewards)),
            "llm_calls": int(sum(i["cost"]["llm_calls"] for i in played.infos)),
            "llm_errors": int(sum(i["cost"]["llm_errors"] for i in played.infos)),
            "llm_faults": _nonzero_faults(played.infos), "settings": harness_env(env).settings}


def _nonzero_faults(infos: list[dict[str, Any]]) -> dict[str, int]:
    """The non-zero counts of ``info["llm_faults"]`` summed over an episode's infos."""
    out: dict[str, int] = {}
    for info in infos:
        for key, count in info.get("llm_faults", {}).items():
            if count:
                out[key] = out.get(key, 0) + int(count)
    return out


def finished_records(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records of episodes that ended in the MDP (submitted or forced), not cut by an outer time limit;
    a record without ``finished`` (written before the field existed) counts as finished."""
    return [r for r in records if r.get("finished", True)]


def run_episodes_concurrently(env_id: str, policy: Policy, episodes: int, *, split: str, seed: int,
                              env_kwargs: dict[str, Any] | None = None, progress: bool = False,
                              **scale: Any) -> list[dict[str, Any]]:
    """:func:`run_episodes` with several episodes at once (:func:`harness_gym.running.parallel.map_episodes`); the
    records come back in episode order, the same records as the sequential loop's for a simulated worker.

    :param env_id: a registered env id
    :param policy: the controller (each env plays with its own copy)
    :param episodes: number of episodes
    :param split: the task split
    :param seed: the run's seed
    :param env_kwargs: constructor keywords for ``gym.make``
    :param progress: show a tqdm progress bar
    :param scale: ``num_envs``, ``parallel``, ``backend``, ``address``, ``envs_per_actor`` of ``map_episodes``
    """
    jobs = [(ep, episode_seed(seed, ep)) for ep in range(episodes)]
    finished = map_episodes(env_id, policy, jobs, episode_record, split=split, env_kwargs=env_kwargs, **scale)
    by_index = dict(tqdm(finished, disable=not progress, desc=f"{policy.name}", leave=False, total=episodes))
    return [by_index[ep] for ep in range(episodes)]


def summarise(records: list[dict[str, Any]], *, env_id: str, policy: str, split: str, seconds: float,
              seed: int = 0, cost_weight: float = 0.0, settings: dict[str, Any] | None = None) -> dict[str, Any]:
    """The evaluation summary (module docstring) of a list of episode records.

    :param records: one record per episode (:func:`run_episodes`)
    :param env_id: the env id reported
    :param policy: the policy name reported
    :param split: the split reported
    :param seconds: wall time of the episodes
    :param seed: seed of the bootstrap resampling
    :param cost_weight: the env's ``cost_weight`` the returns were earned under (reported)
    :param settings: the env's :attr:`~harness_gym.HarnessEnv.settings` (reported; ``None``: not known)
    """
    finished = finished_records(records)
    q = np.array([r["quality"] for r in finished], dtype=float)
    h = np.array([r["hms"] for r in finished], dtype=float)
    lo, hi = bootstrap_ci(q, seed=seed)
    patterns = {}
    for name in PATTERNS:
        vals = np.array([r["patterns"][name] for r in finished], dtype=float)
        vals = vals[~np.isnan(vals)]
        patterns[name] = float(vals.mean()) if len(vals) else math.nan
    steps = sum(r["steps"] for r in records)
    cost = np.array([r["cost"] for r in records], dtype=float)
    n_unfinished = len(records) - len(finished)
    llm_calls = sum(int(r.get("llm_calls", 0)) for r in records)  # records stored before these were counted: 0
    llm_errors = sum(int(r.get("llm_errors", 0)) for r in records)
    faults = llm_faults_info()
    for r in records:
        for key, count in r.get("llm_faults", {}).items():
            faults[key] += int(count)
    server_errors = sum(faults[f"{call}.{cause}"] for call in LLM_CALL_TYPES for cause in LLM_SERVER_CAUSES)
    return {
        "env_id": env_id,
        "policy": policy,
        "split": split,
        "episodes": len(records),
        "quality_mean": float(q.mean()) if len(q) else math.nan,
        "quality_ci95": [lo, hi],
        "quality_iqm": iqm(q),
        "success_rate": float(np.mean([r["success"] for r in finished])) if finished else math.nan,
        "hms_mean": float(np.nanmean(h)) if np.any(~np.isnan(h)) else math.nan,
        "patterns": patterns,
        "mean_steps": steps / len(records),
        "invalid_action_rate": sum(r["invalid_actions"] for r in records) / max(steps, 1),
        "forced_submit_rate": float(np.mean([bool(r["forced_submit"]) for r in records])),
        "n_unfinished": n_unfinished,
        "unfinished_rate": n_unfinished / len(records),
        "cost_mean": float(cost.mean()),
        "cost_ci95": list(bootstrap_ci(cost, seed=seed)),
        "return_mean": float(np.mean([r["return"] for r in finished])) if finished else math.nan,
        "cost_weight": float(cost_weight),
        "llm_calls": llm_calls,
        "llm_errors": llm_errors,
        "llm_calls_mean": llm_calls / len(records),
        "llm_error_rate": llm_errors / llm_calls if llm_calls else 0.0,
        "llm_server_error_rate": server_errors / llm_calls if llm_calls else 0.0,
        "llm_faults": faults,
        "settings": settings,
        "seconds": seconds,
    }


def evaluate(env_id: str, policy: str | Policy, *, episodes: int = 100, split: str = "test", seed: int = 0,
             env_kwargs: dict[str, Any] | None = None, progress: bool = False, num_envs: int = 1,
             parallel: str | None = None, backend: str = "local", address: str | None = None,
             envs_per_actor: int = 1, wrap_env: Callable[[gym.Env], gym.Env] | None = None,
             pairs: Sequence[tuple[str, int]] | None = None) -> dict[str, Any]:
    """Evaluate a policy on an env id; returns the summary (module docstring).

    :param env_id: a registered env id
    :param policy: a registered name, a model file or a policy instance
    :param episodes: number of episodes
    :param split: the task split
    :param seed: the run's seed (episode ``i`` resets with ``seed * 1000003 + i``)
    :param env_kwargs: constructor keywords for ``gym.make``
    :param progress: show a tqdm progress bar
    :param num_envs: episodes played at once (``docs/scale_out.md``); the summary does not depend on it for
        a simulated worker
    :param parallel: ``"process"`` or ``"thread"`` (default: threads for an LLM worker, else processes)
    :param backend: ``"local"`` or ``"ray"``
    :param address: the Ray cluster to join (``backend="ray"``)
    :param envs_per_actor: with Ray, envs per actor
    :param wrap_env: applied to the env before the episodes (e.g. :class:`harness_gym_baselines.report.episode_view.EpisodeRecorder`);
        sequential runs only
    :param pairs: play exactly these ``(task id, reset seed)`` pairs instead of ``episodes`` drawn ones
        (:func:`run_episodes`); sequential runs only
    :warns LLMErrorRateWarning: when more than :data:`LLM_ERROR_RATE_WARNING` of the LLM requests failed
    """
    pol = make_policy(policy) if isinstance(policy, str) else policy
    start = time.perf_counter()
    if is_concurrent(num_envs, backend):  # each slot makes its own env; no env is made here
        if wrap_env is not None or pairs is not None:
            raise ValueError(f"{'wrap_env' if wrap_env is not None else 'pairs'} needs the sequential path "
                             "(num_envs=1, backend='local')")
        records = run_episodes_concurrently(env_id, pol, episodes, split=split, seed=seed, env_kwargs=env_kwargs,
                                            progress=progress, num_envs=num_envs, parallel=parallel,
                                            backend=backend, address=address, envs_per_actor=envs_per_actor)
        # read from the slots' envs (a record of an older run has none): making an env here would open what the
        # slots open, e.g. a per-slot LLM cache path with its {slot} unfilled
        settings = next((r["settings"] for r in records if r.get("settings")), None)
        cost_weight = float(settings["cost_weight"] if settings else (env_kwargs or {}).get("cost_weight", 0.0))
    else:
        env = gym.make(env_id, **(env_kwargs or {}))
        if wrap_env is not None:
            env = wrap_env(env)
        cost_weight = env.unwrapped.cost_weight
        settings = env.unwrapped.settings
        try:
            records = run_episodes(env, pol, episodes, split=split, seed=seed, progress=progress, pairs=pairs)
        finally:
            env.close()
    seconds = time.perf_counter() - start
    name = policy if isinstance(policy, str) else pol.name
    summary = summarise(records, env_id=env_id, policy=name, split=split, seconds=seconds, seed=seed,
                        cost_weight=cost_weight, settings=settings)
    if summary["llm_error_rate"] > LLM_ERROR_RATE_WARNING:
        warnings.warn(f"{llm_error_text(summary)}, above {100 * LLM_ERROR_RATE_WARNING:g}%: failed calls give empty "
                      "drafts and failed steps", LLMErrorRateWarning, stacklevel=2)
    return summary
