"""The behaviour policy that fills offline rollout buffers: a log of harness runs, not of one fixed script.

A real log of an agent team's harness runs is mostly the deployed static script, with some runs from a
variant that checks before submitting, an operator who occasionally triggers a check, script steps skipped
by quicker variants, and one-off deviations. :class:`BehaviourPolicy` draws each of those from the seeded
mixture in :class:`BehaviourMix`. The mixture was fixed from that description before any experiment and is
not tuned to make an offline learner look good.
"""

from __future__ import annotations

from dataclasses import dataclass

import gymnasium as gym
import numpy as np

from harness_gym.core.actions import Action
from harness_gym.core.state import FEATURE_NAMES
from harness_gym.running.rollout import harness_env
from harness_gym_baselines.policies.scripted import StaticPolicy, budget_units_left

_F = {name: i for i, name in enumerate(FEATURE_NAMES)}
_EVIDENCE = frozenset({Action.OBSERVE, Action.RETRIEVE, Action.TOOL})


def check_probabilities(mix: object) -> None:
    """Raise ``ValueError`` naming the first field of the dataclass ``mix`` that is not in [0, 1]."""
    for name, value in vars(mix).items():
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{type(mix).__name__}.{name} must be a probability, got {value}")


@dataclass(frozen=True)
class BehaviourMix:
    """Probabilities of the behaviour mixture (per episode or per decision, as each field says)."""

    check_variant: float = 0.25
    """per episode: the run comes from the forced-CHECK harness variant instead of the static script"""
    skip_evidence: float = 0.15
    """per evidence step of the static script: a quicker variant skips it"""
    occasional_check: float = 0.1
    """per SUBMIT of the static script on an unchecked draft: an operator triggers a CHECK first"""
    revise_after_fail: float = 0.8
    """after an operator-triggered check failed: REVISE (budget allowing) rather than submit anyway"""
    perturb: float = 0.1
    """per step: a one-off deviation, a uniformly random applicable action"""

    def __post_init__(self) -> None:
        check_probabilities(self)


class BehaviourPolicy:
    """The seeded mixture of static harness, forced-CHECK variant, operator checks and random deviations.

    :param mix: the mixture probabilities
    """

    name = "behaviour"

    def __init__(self, mix: BehaviourMix | None = None) -> None:
        self.mix = mix or BehaviourMix()
        self.rng = np.random.default_rng(0)
        self.script = StaticPolicy()

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)
        self.script = StaticPolicy(check=bool(self.rng.random() < self.mix.check_variant))
        self.script.reset(env, seed)

    def act(self, obs: np.ndarray, env: gym.Env) -> int:
        henv = harness_env(env)
        mask = henv.action_masks()
        if self.rng.random() < self.mix.perturb:
            return int(self.rng.choice(np.flatnonzero(mask)))
        action = Action(self.script.act(obs, env))
        while action in _EVIDENCE and obs[_F["has_draft"]] == 0 and self.rng.random() < self.mix.skip_evidence:
            action = Action(self.script.act(obs, env))
        if action != Action.SUBMIT or self.script.check:
            return int(action)
        if obs[_F["checked_since_change"]] == 0:
            return int(Action.CHECK if self.rng.random() < self.mix.occasional_check else Action.SUBMIT)
        costs = henv.action_costs
        room = costs[Action.REVISE] + costs[Action.CHECK] + costs[Action.SUBMIT]
        if (obs[_F["last_check_result"]] < 0 and mask[Action.REVISE] and budget_units_left(obs, henv) >= room
                and self.rng.random() < self.mix.revise_after_fail):
            return int(Action.REVISE)
        return int(Action.SUBMIT)
