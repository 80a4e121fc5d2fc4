"""The one statistics module of the experiments and the report: percentile bootstrap CIs, the two-level
(seeds, then episodes) bootstrap, mean-with-CI records, paired differences, seed spread, and the aggregate
statistics across envs of the kind RL readers expect (Agarwal et al., 2021, "Deep RL at the edge of the
statistical precipice"): the interquartile mean (IQM) over envs, stratified bootstrap confidence intervals, and the
probability of improvement of one controller over another.

It lives in ``experiments`` (not ``report``) because the experiment modules use it and the rooms of the baselines
import only downwards (tests/test_architecture.py); :func:`bootstrap_ci` and :func:`iqm` are defined in
:mod:`harness_gym_baselines.evaluate` (one layer lower, which uses them itself) and re-exported here.

Why not rliable itself: ``pip install rliable`` resolves with the pinned stack (rliable 1.2.0, arch 7.2.0,
statsmodels 0.15.0; numpy and scipy unchanged), but ``import rliable`` then fails inside arch
(``TypeError: deprecate_kwarg() missing 1 required positional argument: 'new_arg_name'``): arch < 8, which
rliable requires, calls pandas' ``deprecate_kwarg`` with the signature pandas 3 removed. So the same
estimators are implemented here, with the definitions of rliable's ``metrics`` module:

- **IQM** (:func:`iqm`): the mean of the middle 50% of all scores.
- **Stratified bootstrap**: each env is a stratum; a resample draws, inside every env independently, seeds
  with replacement and then episodes with replacement inside each drawn seed (:func:`two_level_bootstrap`, per
  stratum), so no env is over- or under-represented and the interval includes the variance across training
  seeds. rliable resamples runs only; harness runs have few seeds and many episodes, so episodes are resampled
  too (with one seed it is the episode bootstrap).
- **Probability of improvement** ``P(X > Y)``: per env, the probability that an episode score of X exceeds
  one of Y (ties count 1/2; the Mann-Whitney U statistic over n * m), averaged over envs; CIs by the same
  stratified bootstrap of both controllers.

Scores are the task quality Q of each episode, which lies in [0, 1] in every env, so no normalisation by
reference scores is applied before aggregating.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from harness_gym_baselines.evaluate import bootstrap_ci, iqm

__all__ = ["Strata", "aggregate_iqm", "aggregate_iqm_ci", "bootstrap_ci", "iqm", "mean_ci", "paired_difference",
           "prob_greater", "probability_of_improvement", "seed_spread", "stratified_bootstrap_ci",
           "two_level_bootstrap"]

Strata = Mapping[str, Sequence[np.ndarray]]
"""env -> per-seed arrays of per-episode scores (one array per training seed)"""


def _resample(rng: np.random.Generator, per_seed: Sequence[np.ndarray]) -> np.ndarray:
    """One two-level resample (seeds, then episodes within each seed) of one stratum."""
    picked = rng.integers(len(per_seed), size=len(per_seed))
    return np.concatenate([per_seed[k][rng.integers(len(per_seed[k]), size=len(per_seed[k]))] for k in picked])


def two_level_bootstrap(per_seed: Sequence[np.ndarray], stat: Callable[[np.ndarray], float], *, n_boot: int = 2000,
                        seed: int = 0) -> tuple[float, float]:
    """95% CI of ``stat`` over the pooled episodes, resampling seeds and then episodes within each seed.

    :param per_seed: one array of per-episode values per training seed
    :param stat: the statistic of the pooled resample
    :param n_boot: bootstrap resamples
    :param seed: seed of the resampling
    """
    rng = np.random.default_rng(seed)
    stats = np.array([stat(_resample(rng, per_seed)) for _ in range(n_boot)])
    return float(np.quantile(stats, 0.025)), float(np.quantile(stats, 0.975))


def mean_ci(values: np.ndarray | Sequence[np.ndarray], *, seed: int = 0) -> dict[str, Any]:
    """``{"mean", "ci95"}`` of the values: one array (the episode bootstrap, :func:`bootstrap_ci`) or one array per
    training seed (the pooled mean and :func:`two_level_bootstrap`).

    :param values: an array of per-episode values, or a list of them (one per seed)
    :param seed: seed of the resampling
    """
    if isinstance(values, np.ndarray):
        return {"mean": float(np.mean(values)), "ci95": list(bootstrap_ci(values, seed=seed))}
    return {"mean": float(np.concatenate(list(values)).mean()),
            "ci95": list(two_level_bootstrap(values, np.mean, seed=seed))}


def paired_difference(ours: Sequence[np.ndarray], theirs: np.ndarray, what: str) -> dict[str, Any]:
    """:func:`mean_ci` of ``ours - theirs`` per seed, on the same (paired) test episodes.

    :param ours: per-seed arrays of one controller
    :param theirs: the other controller's array on the same episodes
    :param what: names the pair in the error when the episodes differ
    """
    if any(len(o) != len(theirs) for o in ours):
        raise ValueError(f"{what}: its cells have other test episodes than the ones it is paired with; delete the "
                         "cells of one of them and rerun")
    return mean_ci([o - theirs for o in ours])


def seed_spread(per_seed: Sequence[np.ndarray]) -> float | None:
    """The largest minus the smallest of the seeds' means; ``None`` for one seed.

    :param per_seed: one array of per-episode values per training seed
    """
    means = [float(np.mean(v)) for v in per_seed]
    return max(means) - min(means) if len(means) > 1 else None


def _check(strata: Strata, what: str) -> None:
    if not strata:
        raise ValueError(f"{what}: no env to aggregate over")
    for env, per_seed in strata.items():
        if not per_seed or any(len(s) == 0 for s in per_seed):
            raise ValueError(f"{what}: env {env!r} has a seed without episodes")


def aggregate_iqm(strata: Strata) -> float:
    """IQM of every episode score of every env (each env weighted by its number of episodes).

    :param strata: env -> per-seed score arrays
    """
    _check(strata, "aggregate_iqm")
    return iqm(np.concatenate([np.concatenate(list(s)) for s in strata.values()]))


def stratified_bootstrap_ci(strata: Strata, stat: Callable[[Mapping[str, np.ndarray]], float], *,
                            n_boot: int = 2000, seed: int = 0, alpha: float = 0.05) -> tuple[float, float]:
    """Percentile CI of ``stat`` under the stratified two-level bootstrap (module docstring).

    :param strata: env -> per-seed score arrays
    :param stat: a statistic of {env: resampled episode scores}
    :param n_boot: bootstrap resamples
    :param seed: seed of the resampling
    :param alpha: 1 - the confidence level
    """
    _check(strata, "stratified_bootstrap_ci")
    rng = np.random.default_rng(seed)
    values = np.array([stat({env: _resample(rng, s) for env, s in strata.items()}) for _ in range(n_boot)])
    return float(np.quantile(values, alpha / 2)), float(np.quantile(values, 1 - alpha / 2))


def aggregate_iqm_ci(strata: Strata, *, n_boot: int = 2000, seed: int = 0) -> tuple[float, tuple[float, float]]:
    """The aggregate IQM and its stratified bootstrap 95% CI.

    :param strata: env -> per-seed score arrays
    :param n_boot: bootstrap resamples
    :param seed: seed of the resampling
    """
    ci = stratified_bootstrap_ci(strata, lambda d: iqm(np.concatenate(list(d.values()))), n_boot=n_boot, seed=seed)
    return aggregate_iqm(strata), ci


def prob_greater(x: np.ndarray, y: np.ndarray) -> float:
    """``P(X > Y) + P(X = Y) / 2`` for one draw from each sample (Mann-Whitney U / (n m)).

    :param x: scores of the first controller
    :param y: scores of the second
    """
    x, y = np.asarray(x, dtype=float), np.sort(np.asarray(y, dtype=float))
    if len(x) == 0 or len(y) == 0:
        raise ValueError("prob_greater: both samples need at least one score")
    below = np.searchsorted(y, x, side="left")
    ties = np.searchsorted(y, x, side="right") - below
    return float((below + 0.5 * ties).sum() / (len(x) * len(y)))


def probability_of_improvement(x: Strata, y: Strata, *, n_boot: int = 1000,
                               seed: int = 0) -> tuple[float, tuple[float, float]]:
    """``P(X > Y)`` averaged over the envs both have, with a stratified bootstrap 95% CI.

    :param x: env -> per-seed score arrays of the first controller
    :param y: the same for the second (the envs must match)
    :param n_boot: bootstrap resamples
    :param seed: seed of the resampling
    """
    if set(x) != set(y):
        raise ValueError(f"probability_of_improvement: envs differ: {sorted(set(x) ^ set(y))}")
    _check(x, "probability_of_improvement (first)")
    _check(y, "probability_of_improvement (second)")
    envs = list(x)
    point = float(np.mean([prob_greater(np.concatenate(list(x[e])), np.concatenate(list(y[e]))) for e in envs]))
    rng = np.random.default_rng(seed)
    boots = np.array([np.mean([prob_greater(_resample(rng, x[e]), _resample(rng, y[e])) for e in envs])
                      for _ in range(n_boot)])
    return point, (float(np.quantile(boots, 0.025)), float(np.quantile(boots, 0.975)))
