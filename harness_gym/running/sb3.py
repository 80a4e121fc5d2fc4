"""Stable-Baselines3 vector envs of the harness envs: :func:`make_sb3_vec_env` builds one from an env id (what
the online trainers of ``harness_gym_baselines`` train on), :func:`to_sb3_vec_env` adapts a Gymnasium vector env.

SB3 trains on its own ``VecEnv`` interface and rejects a Gymnasium :class:`~gymnasium.vector.VectorEnv`.
:func:`make_sb3_vec_env` is SB3's ``make_vec_env`` on a harness env id (a ``Monitor`` per env, env ``i``
seeded ``seed + i``), in this process (``DummyVecEnv``) or one process per env (``SubprocVecEnv``).
:class:`SB3VecEnv` is for a vector env made by Gymnasium, e.g. ``gym.make_vec(env_id, 4, vectorization_mode="async")``::

    import gymnasium as gym
    import harness_gym
    from harness_gym.running.sb3 import to_sb3_vec_env
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.vec_env import VecMonitor

    venv = VecMonitor(to_sb3_vec_env(gym.make_vec("HarnessCode-v1", 4, vectorization_mode="async")))
    MaskablePPO("MlpPolicy", venv, n_steps=128).learn(10_000)

What the adapter does, in SB3's terms:

- ``reset()`` returns the observations only and keeps the infos in ``reset_infos``; the seeds of
  ``seed()`` and the options of ``set_options()`` are used at the next ``reset()`` (one options dict for all
  sub-envs: a Gymnasium vector env passes the same options to each).
- ``step()`` returns ``(obs, rewards, dones, infos)`` with one info dict per sub-env. When a sub-env's
  episode ends its info holds ``terminal_observation``, and the observation
  returned is already the first one of its next episode (SB3's convention); ``TimeLimit.truncated`` is set at
  every step, as in SB3's own vector envs. Every Gymnasium autoreset mode
  works: ``SAME_STEP`` envs reset themselves; ``NEXT_STEP`` (the default) and ``DISABLED`` envs are reset
  at once by the adapter (``reset(options={"reset_mask": done})``), so no step is lost.
- ``env_method("action_masks")`` (what sb3-contrib's ``MaskablePPO`` calls) and ``has_attr`` work on both
  vectorization modes. ``get_attr`` returns attribute values; for a method, call it with ``env_method``.
  On an ``async`` env, ``env_method`` / ``get_attr`` / ``set_attr`` address all sub-envs at once: a
  subset of ``indices`` raises ``ValueError`` (Gymnasium's async env has no per-env call).
- Rewards and episode statistics are the sub-envs' own: wrap the result in SB3's ``VecMonitor`` for the
  ``ep_rew_mean`` / ``ep_len_mean`` logs.

This module imports Stable-Baselines3 (the ``train`` extra); ``import harness_gym`` does not import it.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import gymnasium as gym
import numpy as np

try:
    from stable_baselines3.common.env_util import is_wrapped, make_vec_env
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv
    from stable_baselines3.common.vec_env.base_vec_env import VecEnv, VecEnvIndices, VecEnvObs, VecEnvStepReturn
except ImportError as exc:  # SB3 is an optional extra
    raise ImportError(f"harness_gym.running.sb3 needs Stable-Baselines3 ({exc}); install it with "
                      'pip install "harness-gym[train]"') from exc

from gymnasium.vector import AutoresetMode, SyncVectorEnv, VectorEnv


def make_sb3_vec_env(env_id: str, n_envs: int, seed: int, env_kwargs: Mapping[str, Any] | None = None, *,
                     vec_env: Literal["dummy", "subproc"] = "dummy", start_method: str = "spawn") -> VecEnv:
    """``n_envs`` copies of ``env_id``, each in a ``Monitor`` (so episode returns reach SB3's logger), as one SB3
    ``VecEnv``. ``"dummy"`` steps them one after another in this process; ``"subproc"`` runs each in its own
    process (with ``n_envs > 1``), so the simulated worker's CPU work and a live worker's waits on its server
    overlap. Both give the same episodes for the same seed. The action masks that sb3-contrib's
    ``MaskablePPO`` asks for pass through (``env_method("action_masks")``).

    :param env_id: a registered env id
    :param n_envs: number of envs stepped together
    :param seed: env ``i`` is seeded ``seed + i`` (SB3's rule)
    :param env_kwargs: constructor keywords for ``gym.make`` (``worker=...``, ``data_dir=...``)
    :param vec_env: ``"dummy"`` (SB3's ``DummyVecEnv``) or ``"subproc"`` (``SubprocVecEnv``)
    :param start_method: the ``multiprocessing`` start method of the env processes
    """
    if int(n_envs) < 1:
        raise ValueError(f"n_envs must be >= 1, got {n_envs}")
    if vec_env not in ("dummy", "subproc"):
        raise ValueError(f"vec_env must be 'dummy' or 'subproc', got {vec_env!r}")
    # the registration travels with the factory, so a fresh env process need not import harness_gym first
    make_env = functools.partial(gym.make, gym.spec(env_id))
    kwargs = dict(env_kwargs or {})
    if vec_env == "dummy" or int(n_envs) == 1:
        return make_vec_env(make_env, n_envs=int(n_envs), seed=seed, env_kwargs=kwargs, vec_env_cls=DummyVecEnv)
    return make_vec_env(make_env, n_envs=int(n_envs), seed=seed, env_kwargs=kwargs, vec_env_cls=SubprocVecEnv,
                        vec_env_kwargs={"start_method": start_method})


def unbatch_infos(infos: Mapping[str, Any], num_envs: int) -> list[dict[str, Any]]:
    """A Gymnasium vector env's info dict (arrays with ``_key`` masks, nested dicts nested) as one dict per
    sub-env, the way SB3 vector envs return them. Numpy scalars become Python scalars.

    :param infos: the info dict of a vector ``reset`` or ``step``
    :param num_envs: number of sub-envs
    """
    out: list[dict[str, Any]] = [{} for _ in range(num_envs)]
    for key, value in infos.items():
        if key.startswith("_") and key[1:] in infos:
            continue
        mask = infos.get(f"_{key}", np.ones(num_envs, dtype=bool))
        per_env = unbatch_infos(value, num_envs) if isinstance(value, Mapping) else value
        for i in range(num_envs):
            if mask[i]:
                item = per_env[i]
                out[i][key] = item.item() if isinstance(item, np.generic) else item
    return out


class SB3VecEnv(VecEnv):
    """A Gymnasium :class:`~gymnasium.vector.VectorEnv` behind Stable-Baselines3's ``VecEnv`` interface (the
    module docstring lists the semantics).

    :param vector_env: a Gymnasium vector env with a ``Box`` or ``Discrete`` single observation / action
        space (e.g. from ``gym.make_vec(env_id, n, vectorization_mode="sync" | "async")``)
    """

    def __init__(self, vector_env: VectorEnv) -> None:
        if not isinstance(vector_env, VectorEnv):
            raise TypeError(f"SB3VecEnv wraps a gymnasium.vector.VectorEnv, got {type(vector_env).__name__}; "
                            "an SB3 VecEnv needs no adapter")
        self.vector_env = vector_env
        self.autoreset_mode = AutoresetMode(vector_env.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP))
        self._actions: np.ndarray | None = None
        super().__init__(vector_env.num_envs, vector_env.single_observation_space, vector_env.single_action_space)

    # ----- stepping ---------------------------------------------------------------------------------------
    def reset(self) -> VecEnvObs:
        """Reset every sub-env with the seeds of :meth:`seed` and the options of :meth:`set_options`."""
        seeds = None if all(s is None for s in self._seeds) else list(self._seeds)
        options = self._options[0]
        if any(o != options for o in self._options):
            raise ValueError("a Gymnasium vector env passes one options dict to every sub-env; "
                             f"set_options gave different ones: {self._options}")
        obs, infos = self.vector_env.reset(seed=seeds, options=dict(options) or None)
        self.reset_infos = unbatch_infos(infos, self.num_envs)
        self._reset_seeds()
        self._reset_options()
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions)

    def step_wait(self) -> VecEnvStepReturn:
        if self._actions is None:
            raise RuntimeError("step_wait() without step_async()")
        obs, rewards, terminations, truncations, infos = self.vector_env.step(self._actions)
        self._actions = None
        dones = np.logical_or(terminations, truncations)
        if self.autoreset_mode == AutoresetMode.SAME_STEP:
            step_infos = unbatch_infos(infos.get("final_info", {}), self.num_envs)
            current = unbatch_infos({k: v for k, v in infos.items()
                                     if k not in ("final_obs", "_final_obs", "final_info", "_final_info")},
                                    self.num_envs)
            final_obs = infos.get("final_obs")
            for i in np.flatnonzero(dones):
                step_infos[i]["terminal_observation"] = final_obs[i]
                self.reset_infos[i] = current[i]
            for i in np.flatnonzero(~dones):
                step_infos[i] = current[i]
        else:
            step_infos = unbatch_infos(infos, self.num_envs)
            if dones.any():
                obs = np.array(obs, copy=True)
                for i in np.flatnonzero(dones):
                    step_infos[i]["terminal_observation"] = obs[i].copy()
                reset_obs, reset_infos = self.vector_env.reset(options={"reset_mask": dones.copy()})
                reset_per_env = unbatch_infos(reset_infos, self.num_envs)
                for i in np.flatnonzero(dones):
                    obs[i] = reset_obs[i]
                    self.reset_infos[i] = reset_per_env[i]
        for i in range(self.num_envs):  # set at every step, as SB3's DummyVecEnv does
            step_infos[i]["TimeLimit.truncated"] = bool(truncations[i] and not terminations[i])
        return obs, np.asarray(rewards, dtype=np.float32), dones, step_infos

    def close(self) -> None:
        self.vector_env.close()

    # ----- attributes and methods of the sub-envs -------------------------------------------------------
    @property
    def _sync_envs(self) -> list[gym.Env] | None:
        """The sub-envs themselves when they live in this process (``sync``), else ``None``."""
        env = self.vector_env.unwrapped if hasattr(self.vector_env, "unwrapped") else self.vector_env
        return list(env.envs) if isinstance(env, SyncVectorEnv) else None

    def _indices(self, indices: VecEnvIndices, what: str) -> list[int] | None:
        """The requested sub-env indices; ``None`` means all (the only choice on an async env)."""
        chosen = list(self._get_indices(indices))
        if chosen == list(range(self.num_envs)):
            return None
        if self._sync_envs is None:
            raise ValueError(f"{what} on the sub-envs {chosen} only: a Gymnasium {type(self.vector_env).__name__} "
                             "addresses all its sub-envs at once; use vectorization_mode='sync' for that")
        return chosen

    def has_attr(self, attr_name: str) -> bool:
        """Whether every sub-env (through its wrappers) has ``attr_name``, without calling or fetching it."""
        envs = self._sync_envs
        if envs is not None:
            return all(env.has_wrapper_attr(attr_name) for env in envs)
        return all(self.vector_env.call("has_wrapper_attr", attr_name))

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        chosen = self._indices(indices, f"get_attr({attr_name!r})")
        envs = self._sync_envs
        if envs is not None:
            return [envs[i].get_wrapper_attr(attr_name) for i in (chosen or range(self.num_envs))]
        return list(self.vector_env.call("get_wrapper_attr", attr_name))

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        chosen = self._indices(indices, f"set_attr({attr_name!r})")
        envs = self._sync_envs
        if envs is not None:
            for i in chosen or range(self.num_envs):
                envs[i].set_wrapper_attr(attr_name, value)
        else:
            self.vector_env.call("set_wrapper_attr", attr_name, value)

    def env_method(self, method_name: str, *method_args: Any, indices: VecEnvIndices = None,
                   **method_kwargs: Any) -> list[Any]:
        chosen = self._indices(indices, f"env_method({method_name!r})")
        envs = self._sync_envs
        if envs is not None:
            return [envs[i].get_wrapper_attr(method_name)(*method_args, **method_kwargs)
                    for i in (chosen or range(self.num_envs))]
        return list(self.vector_env.call(method_name, *method_args, **method_kwargs))

    def env_is_wrapped(self, wrapper_class: type[gym.Wrapper], indices: VecEnvIndices = None) -> list[bool]:
        """Whether each sub-env is wrapped in ``wrapper_class``. The sub-envs of an async env live in other
        processes: each is answered from a copy made in this process with the same ``env_fns`` entry (made
        once and closed at once)."""
        envs = self._sync_envs
        if envs is not None:
            return [is_wrapped(envs[i], wrapper_class) for i in self._get_indices(indices)]
        env_fns = getattr(self.vector_env.unwrapped, "env_fns", None)
        if env_fns is None:
            raise ValueError(f"env_is_wrapped: cannot inspect the sub-envs of a {type(self.vector_env).__name__}")
        answers = []
        for i in self._get_indices(indices):
            copy = env_fns[i]()
            try:
                answers.append(is_wrapped(copy, wrapper_class))
            finally:
                copy.close()
        return answers

    def get_images(self) -> Sequence[np.ndarray | None]:
        return list(self.vector_env.call("render"))


def to_sb3_vec_env(vector_env: VectorEnv) -> SB3VecEnv:
    """Wrap a Gymnasium vector env (``gym.make_vec(...)``) for Stable-Baselines3 and sb3-contrib.

    :param vector_env: the Gymnasium vector env (sync or async, any autoreset mode)
    """
    return SB3VecEnv(vector_env)
