"""What a controller is and how one episode of it is played: the contract shared by evaluation
(``harness_gym_baselines/evaluate.py``) and offline collection (:mod:`harness_gym.datasets`).

- :class:`Policy`: a controller; ``reset`` at every episode start, ``act`` at every step.
- :func:`episode_seed`: the reset seed of episode ``i`` of a run with seed ``K``, ``K * 1000003 + i``, for
  evaluation and offline collection alike, so every policy compared under the same seed sees the same task
  sequence.
- :func:`play_episode`: the one episode loop (reset the env, reset the policy with the same seed, step until
  the episode ends), returning everything that happened as an :class:`Episode`.

This module is part of the env library: it imports nothing beyond gymnasium and numpy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import gymnasium as gym
import numpy as np

from harness_gym.env import HarnessEnv
from harness_gym.tiered import TieredHarnessEnv


class Policy(Protocol):
    """A controller of a harness env. ``reset`` is called at every episode start, ``act`` at every step."""

    name: str
    """the name shown in evaluation output and stored as a dataset's ``algorithm_name``"""

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        """Start an episode.

        :param env: the env the episode runs in (already reset)
        :param seed: the episode's reset seed, for a policy that draws random numbers
        """
        ...

    def act(self, obs: np.ndarray, env: gym.Env) -> int:
        """The action id for the current step.

        :param obs: the observation vector
        :param env: the env (a policy may read its action mask; only an oracle reads its hidden state)
        """
        ...


def episode_seed(seed: int, index: int) -> int:
    """The reset seed of episode ``index`` of a run (evaluation or collection) with seed ``seed``:
    ``seed * 1000003 + index``.

    :param seed: the run's seed (``--seed``)
    :param index: the episode's position in the run, from 0
    """
    return int(seed) * 1_000_003 + int(index)


def harness_env(env: gym.Env) -> HarnessEnv:
    """The :class:`HarnessEnv` under a (possibly wrapped) env, or a tiered env
    (:class:`~harness_gym.tiered.TieredHarnessEnv`, which has the same attributes that policies read); a clear error
    for any other env.

    :param env: an env made from a harness_gym id, wrapped or not
    """
    base = env.unwrapped
    if not isinstance(base, (HarnessEnv, TieredHarnessEnv)):
        raise TypeError(f"expected a harness_gym env, got {type(base).__name__}")
    return base


@dataclass
class Episode:
    """One played episode. ``observations``, ``infos`` and ``action_masks`` have one entry more than
    ``actions`` (index 0 is the reset; index t + 1 is what followed action t)."""

    seed: int
    """the reset seed"""
    observations: list[np.ndarray] = field(default_factory=list)
    actions: list[int] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    terminations: list[bool] = field(default_factory=list)
    truncations: list[bool] = field(default_factory=list)
    infos: list[dict[str, Any]] = field(default_factory=list)
    action_masks: list[np.ndarray] = field(default_factory=list)
    """the applicable actions after each reset/step (empty unless asked for)"""

    @property
    def final_info(self) -> dict[str, Any]:
        """The info of the last step (quality, success, patterns, ...)."""
        return self.infos[-1]


def play_episode(env: gym.Env, policy: Policy, *, seed: int, split: str, record_masks: bool = False,
                 task_id: str | None = None) -> Episode:
    """Play one episode of ``policy`` on ``env``: reset both with ``seed``, step until terminated or truncated.

    :param env: a harness env (wrapped or not)
    :param policy: the controller
    :param seed: reset seed of the env and of the policy
    :param split: the task split the episode's task is drawn from
    :param record_masks: also record the action mask after the reset and after every step
    :param task_id: play this task instead of one drawn from ``split``
    """
    henv = harness_env(env)
    obs, info = env.reset(seed=seed, options={"split": split} if task_id is None else {"task_id": task_id})
    policy.reset(env, seed=seed)
    episode = Episode(seed=seed, observations=[obs], infos=[info])
    if record_masks:
        episode.action_masks.append(henv.action_masks())
    while True:
        action = policy.act(obs, env)
        obs, reward, terminated, truncated, info = env.step(action)
        episode.observations.append(obs)
        episode.actions.append(action)
        episode.rewards.append(reward)
        episode.terminations.append(terminated)
        episode.truncations.append(truncated)
        episode.infos.append(info)
        if record_masks:
            episode.action_masks.append(henv.action_masks())
        if terminated or truncated:
            return episode
