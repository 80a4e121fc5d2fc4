"""A trainer added as a contributor would add one: this file plus one line in ``harness_gym_baselines.trainers.TRAINERS``
(``tests/test_architecture.py`` adds that line and runs ``harness-gym train majority``).

It needs no torch: it counts the logged actions of a Minari dataset and acts with the most frequent one among
the applicable actions (ties: the lower action id).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import gymnasium as gym
import numpy as np

from harness_gym.datasets import Transitions, load_transitions
from harness_gym.rollout import harness_env


@dataclass
class Config:
    """The settings of the majority trainer."""

    dataset_id: str = "harness/toy-behaviour-v0"
    """the Minari dataset to count actions in"""
    out: str = "models/majority.json"
    """where the action counts are written (JSON)"""
    seed: int = 0
    """unused (the counts are deterministic); printed by the command line like every trainer's"""
    skip_first: int = 0
    """ignore this many transitions at the start of every episode"""


class MajorityPolicy:
    """Acts with the most frequently logged action that is applicable now.

    :param counts: how often each action id was logged
    """

    name = "majority"

    def __init__(self, counts: np.ndarray) -> None:
        self.counts = counts

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        """Nothing to reset: the policy is deterministic."""

    def act(self, obs: np.ndarray, env: gym.Env) -> int:
        """The most frequent applicable action."""
        mask = harness_env(env).action_masks()
        return int(np.argmax(np.where(mask, self.counts, -1)))


def train(cfg: Config, data: Transitions | None = None) -> MajorityPolicy:
    """Count the logged actions, write the counts to ``cfg.out`` and return the policy.

    :param cfg: the configuration
    :param data: the transitions (default: all of ``cfg.dataset_id``)
    """
    data = data if data is not None else load_transitions(cfg.dataset_id)
    position = np.zeros(len(data), dtype=int)
    for episode in np.unique(data.episode):
        rows = np.flatnonzero(data.episode == episode)
        position[rows] = np.arange(len(rows))
    kept = data.actions[position >= cfg.skip_first]
    counts = np.bincount(kept, minlength=data.action_masks.shape[1])
    Path(cfg.out).parent.mkdir(parents=True, exist_ok=True)
    Path(cfg.out).write_text(json.dumps({"dataset_id": cfg.dataset_id, "counts": counts.tolist()}))
    return MajorityPolicy(counts)
