"""Stable-Baselines3 vector envs of a harness env id, for the online trainers' ``--num-envs``
(``docs/scale_out.md``).

With ``n_envs > 1`` every env runs in its own process (SB3's ``SubprocVecEnv``, ``spawn`` start method), so
the simulated worker's CPU work and a live worker's waits on its server both overlap: a rollout step sends
``n_envs`` model calls at once. With one env it is a ``DummyVecEnv`` in this process. Env ``i`` is seeded
``seed + i`` (SB3's rule) and wrapped in a ``Monitor``, so episode returns reach SB3's logger; the action
masks that sb3-contrib's ``MaskablePPO`` asks for pass through (``env_method("action_masks")``).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecEnv

import harness_gym  # noqa: F401  (registers the env ids)


def make_sb3_vec_env(env_id: str, n_envs: int, seed: int, env_kwargs: Mapping[str, Any] | None = None, *,
                     start_method: str = "spawn") -> VecEnv:
    """``n_envs`` copies of ``env_id`` as one SB3 ``VecEnv`` (processes when ``n_envs > 1``).

    :param env_id: a registered env id
    :param n_envs: number of envs stepped together
    :param seed: env ``i`` is seeded ``seed + i``
    :param env_kwargs: constructor keywords for ``gym.make`` (``worker=...``, ``data_dir=...``)
    :param start_method: the ``multiprocessing`` start method of the env processes
    """
    if int(n_envs) < 1:
        raise ValueError(f"n_envs must be >= 1, got {n_envs}")
    # the registration travels with the factory, so a fresh env process need not import harness_gym first
    make_env = functools.partial(gym.make, gym.spec(env_id))
    kwargs = dict(env_kwargs or {})
    if int(n_envs) == 1:
        return make_vec_env(make_env, n_envs=1, seed=seed, env_kwargs=kwargs, vec_env_cls=DummyVecEnv)
    return make_vec_env(make_env, n_envs=int(n_envs), seed=seed, env_kwargs=kwargs, vec_env_cls=SubprocVecEnv,
                        vec_env_kwargs={"start_method": start_method})
