"""PPO on the task reward plus hand-shaped step rewards of the usual kind (the table in :mod:`harness_gym_baselines.algos.ppo`):
the dense baseline of docs/ecpo.md. Everything else is :mod:`harness_gym_baselines.algos.ppo`.

Run ``harness-gym train ppo-dense --env ENV --steps N --seed S --out FILE``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from harness_gym_baselines.algos.ppo import PPOConfig, load, train


@dataclass
class PPODenseConfig(PPOConfig):
    """The settings of :mod:`harness_gym_baselines.algos.ppo` with the reward fixed to the dense one."""

    out: str = "models/ppo-dense.zip"
    """where the model (an SB3 zip) is written"""
    reward: Literal["sparse", "dense"] = field(default="dense", init=False)
    """fixed: the env's reward plus the shaped step rewards"""


__all__ = ["PPODenseConfig", "load", "train"]

if __name__ == "__main__":  # the same as harness-gym train ppo-dense (one way to run a trainer)
    from harness_gym_baselines.common.trainer_registry import run_trainer

    run_trainer("ppo-dense")
