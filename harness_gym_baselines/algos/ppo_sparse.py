"""PPO on the task reward only (the terminal quality, minus the cost term where the env has one): the sparse
baseline of docs/ecpo.md. Everything else is :mod:`harness_gym_baselines.algos.ppo`.

Run ``harness-gym train ppo-sparse --env ENV --steps N --seed S --out FILE``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from harness_gym_baselines.algos.ppo import PPOConfig, load, train


@dataclass
class PPOSparseConfig(PPOConfig):
    """The settings of :mod:`harness_gym_baselines.algos.ppo` with the reward fixed to the sparse one."""

    out: str = "models/ppo-sparse.zip"
    """where the model (an SB3 zip) is written"""
    reward: Literal["sparse", "dense"] = field(default="sparse", init=False)
    """fixed: the env's reward"""


__all__ = ["PPOSparseConfig", "load", "train"]

if __name__ == "__main__":  # the same as harness-gym train ppo-sparse (one way to run a trainer)
    from harness_gym_baselines.common.trainer_registry import run_trainer

    run_trainer("ppo-sparse")
