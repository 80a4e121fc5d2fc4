"""Shared checks for the domain test modules."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym

import harness_gym  # noqa: F401  (registers the env ids)
from harness_gym.core.types import Draft


def assert_env_runs_episodes(env_id: str, split: str, actions: Sequence[int], seeds: int = 3) -> list[dict[str, Any]]:
    """Play ``actions`` after ``reset(seed)`` for each of ``seeds`` seeds on the registered, sandbox-free env.

    Each episode must end on its last action (terminated, not truncated) with its quality in [0, 1] paid as
    the reward; returns every episode's last ``info`` for the caller's own checks.
    """
    env = gym.make(env_id, split=split)
    assert env.unwrapped.sandbox is None
    infos = []
    for seed in range(seeds):
        obs, info = env.reset(seed=seed)
        for action in actions:
            obs, reward, terminated, truncated, info = env.step(action)
        assert terminated and not truncated and 0.0 <= info["quality"] <= 1.0 and reward == info["quality"]
        infos.append(info)
    env.close()
    return infos


def draft(content: str, candidate: int = -1) -> Draft:
    """A first-version draft holding ``content`` (``candidate`` -1: not taken from the task's bank)."""
    return Draft(content=content, candidate=candidate, version=1)
