"""The spec of ``harness-gym reproduce``: its grid (envs, controllers, cost weights, seeds) and sizes, as data.

:mod:`harness_gym_baselines.report.reproduce` turns it into a plan of stages for
:func:`harness_gym_baselines.experiments.engine.run_tasks`; a run records the settings it used in
``OUT/settings.json``, and every table names this spec (:func:`harness_gym_baselines.experiments.specs.provenance_line`).
"""

from __future__ import annotations

from dataclasses import dataclass

from harness_gym_baselines.experiments.specs.sizes import REPRODUCE_FULL, REPRODUCE_QUICK, ReproduceSizes


@dataclass(frozen=True)
class ReproduceSpec:
    """The grid of ``harness-gym reproduce``."""

    quick_envs: tuple[str, ...]
    """the envs of ``--quick`` without ``--envs``: the two ECPO envs and Code, so that every online controller
    trains its documented budget and the run stays within 15 minutes on 2 cores (docs/online_rl.md)"""
    ecpo_envs: tuple[str, ...]
    """the envs of the ECPO table (docs/ecpo.md), when they are among ``--envs``"""
    corruption_env: str
    """the env of the corruption experiment, when it is among ``--envs``"""
    online: tuple[str, ...]
    """the online controllers of the harness table; each is evaluated greedy (NAME, the mode of its policy) and
    sampling from its policy (NAME-sampled, as in training), from the same model"""
    train_cost_weight: float
    """the cost weight every learned controller of the harness stages trains at, online and offline (buffers,
    training returns, evaluation; docs/online_rl.md): the middle of :attr:`cost_weights`, so that the cost term is
    in the reward they learn from (at 0 a learner is free to spend the whole budget and let the forced submit end
    the episode) without 0.1's weight, at which the cheapest submit is close to the best return in most envs"""
    frontier_references: tuple[str, ...]
    """evaluated for the quality-cost frontier only"""
    cost_weights: tuple[float, ...]
    """the cost weights fixed before any run (docs/cost_results.md)"""
    full: ReproduceSizes
    quick: ReproduceSizes


REPRODUCE = ReproduceSpec(
    quick_envs=("HarnessCode-v2", "HarnessResearchQA-v2", "HarnessData-v2"),
    ecpo_envs=("HarnessData-v2", "HarnessResearchQA-v2"), corruption_env="HarnessResearchQA-v2",
    online=("ppo-sparse", "ecpo", "ecpo-pb"), train_cost_weight=0.01, frontier_references=("random", "oracle"),
    cost_weights=(0.0, 0.01, 0.1), full=REPRODUCE_FULL, quick=REPRODUCE_QUICK)
"""the spec of ``harness-gym reproduce``"""
