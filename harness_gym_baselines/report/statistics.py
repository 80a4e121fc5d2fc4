"""Aggregate statistics across envs of the kind RL readers expect (Agarwal et al., 2021, "Deep RL at the edge
of the statistical precipice"): the interquartile mean (IQM) over envs, stratified bootstrap confidence
intervals, and the probability of improvement of one controller over another.

Why not rliable itself: ``pip install rliable`` resolves with the pinned stack (rliable 1.2.0, arch 7.2.0,
statsmodels 0.15.0; numpy and scipy unchanged), but ``import rliable`` then fails inside arch
(``TypeError: deprecate_kwarg() missing 1 required positional argument: 'new_arg_name'``): arch < 8, which
rliable requires, calls pandas' ``deprecate_kwarg`` with the signature pandas 3 removed. So the same
estimators are implemented here, with the definitions of rliable's ``metrics`` module:

- **IQM** (:func:`harness_gym_baselines.evaluate.iqm`): the mean of the middle 50% of all scores.
- **Stratified bootstrap**: each env is a stratum; a resample draws, inside every env independently, seeds
  with replacement and then episodes with replacement inside each drawn seed (the two-level bootstrap of
  :func:`harness_gym_baselines.experiments.offline_comparison.two_level_bootstrap`, per stratum), so no env is over- or under-represented
  and the interval includes the variance across training seeds. rliable resamples runs only; harness runs
  have few seeds and many episodes, so episodes are resampled too (with one seed it is the episode bootstrap).
- **Probability of improvement** ``P(X > Y)``: per env, the probability that an episode score of X exceeds
  one of Y (ties count 1/2; the Mann-Whitney U statistic over n * m), averaged over envs; CIs by the same
  stratified bootstrap of both controllers.

Scores are the task quality Q of each episode, which lies in [0, 1] in every env, so no normalisation by
reference scores is applied before aggregating.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from harness_gym_baselines.evaluate import iqm

Strata = Mapping[str, Sequence[np.ndarray]]
"""env -> per-seed arrays of per-episode scores (one array per training seed)"""


def _resample(rng: np.random.Generator, per_seed: Sequence[np.ndarray]) -> np.ndarray:
    """One two-level resample (seeds, then episodes within each seed) of one stratum."""
    picked = rng.integers(len(per_seed), size=len(per_seed))
    return np.concatenate([per_seed[k][rng.integers(len(per_seed[k]), size=len(per_seed[k]))] for k in picked])


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
