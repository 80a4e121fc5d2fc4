"""Stable-Baselines3 model zips as harness controllers: ``harness-gym eval ENV --policy model.zip``.

:func:`load_sb3_policy` reads which algorithm wrote the zip from the policy class stored in it and loads it
with that algorithm: sb3-contrib's ``MaskablePPO`` (also what :mod:`harness_gym_baselines.algos.ecpo` and :mod:`harness_gym_baselines.algos.ppo`
save), SB3's ``PPO``, ``A2C`` (same policy class as PPO; loaded as PPO, which acts identically) and ``DQN``.
A maskable model acts with the env's action mask; the others act on the observation alone, as they were
trained (an inapplicable action is a legal no-op of the Harness MDP).

Models written by this project's trainers carry a ``harness_gym`` attribute (saved inside the zip): the
algorithm name, the record of the env it was trained on (env id, feature names, observation shape:
:mod:`harness_gym_baselines.policies.trained_on`, checked against the env at every reset) and training
diagnostics such as the evidence weights. A zip from elsewhere is checked against the observation shape SB3
stored in it.
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from harness_gym.rollout import harness_env
from harness_gym_baselines.policies.trained_on import TrainedOn


class SB3Policy:
    """A loaded SB3 model as a :class:`harness_gym.rollout.Policy`.

    :param model: the SB3 model (``MaskablePPO``, ``PPO``, ``A2C`` or ``DQN``)
    :param name: the policy name shown in evaluation output
    :param deterministic: act with the mode of the policy (``False``: sample, as during training)
    """

    def __init__(self, model: Any, name: str, deterministic: bool = True) -> None:
        self.model = model
        self.name = name
        self.deterministic = deterministic
        self.maskable = type(model).__name__ == "MaskablePPO"
        meta = getattr(model, "harness_gym", None) or {}
        self.trained_on = TrainedOn.from_record(meta, getattr(model.observation_space, "shape", None))
        self.feature_names: tuple[str, ...] | None = self.trained_on.feature_names

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        """Check ``env`` against the env the model was trained on (:meth:`TrainedOn.check`); reseed sampling.

        :param env: the env of the episode
        :param seed: the episode's reset seed (seeds the model's action sampling when not deterministic)
        """
        self.trained_on.check(env, self.name)
        if seed is not None and not self.deterministic:
            self.model.set_random_seed(seed)

    def act(self, obs: np.ndarray, env: gym.Env) -> int:
        """The model's action for ``obs`` (with the env's action mask for a maskable model).

        :param obs: the observation vector
        :param env: the env (its action mask is read)
        """
        if self.maskable:
            action, _ = self.model.predict(obs, deterministic=self.deterministic,
                                           action_masks=harness_env(env).action_masks())
        else:
            action, _ = self.model.predict(obs, deterministic=self.deterministic)
        return int(action)


def sb3_algorithm(path: str | Path) -> type:
    """The SB3 algorithm class that wrote the zip at ``path``, from the policy class stored in it.

    :param path: an SB3 model zip
    """
    from stable_baselines3.common.save_util import load_from_zip_file

    try:
        data, _, _ = load_from_zip_file(path, load_data=True, device="cpu")
    except (zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise ValueError(f"{path}: not a Stable-Baselines3 model zip ({exc})") from exc
    policy_class = (data or {}).get("policy_class")
    if not isinstance(policy_class, type):
        raise ValueError(f"{path}: the zip names no loadable policy class (written by another SB3 version?)")
    module = policy_class.__module__
    if module.startswith("sb3_contrib.common.maskable"):
        from sb3_contrib import MaskablePPO

        return MaskablePPO
    if module.startswith("stable_baselines3.dqn"):
        from stable_baselines3 import DQN

        return DQN
    if module.startswith("stable_baselines3.common.policies"):
        from stable_baselines3 import PPO

        return PPO
    raise ValueError(f"{path}: policy class {module}.{policy_class.__name__} is not one of MaskablePPO, PPO, "
                     "A2C or DQN")


def load_sb3_policy(path: str | Path, deterministic: bool = True) -> SB3Policy:
    """The controller stored in an SB3 model zip (module docstring).

    :param path: the zip file
    :param deterministic: act with the policy's mode (``False``: sample)
    """
    algo = sb3_algorithm(path)
    model = algo.load(path, device="cpu")
    meta = getattr(model, "harness_gym", None) or {}
    label = meta.get("algo", algo.__name__)
    return SB3Policy(model, name=f"{label}:{Path(path).name}", deterministic=deterministic)

