"""Potential-based ECPO (``ecpo-pb``): the seed blog's ECPO with each evidence source entering the reward as a
potential difference ``gamma * phi_k(s') - phi_k(s)`` (Ng, Harada and Russell, 1999), so a step repeated with
the verdict it got before earns nothing. Everything else (the sources, the trust weights, the preference
model, the corruption switch, the flags) is :mod:`harness_gym_baselines.algos.ecpo`; the potentials are its
:class:`~harness_gym_baselines.algos.ecpo.EvidencePotential` (docs/ecpo.md, "The potential-based variant").

Run ``harness-gym train ecpo-pb --env ENV --steps N --seed S --out FILE [--preference-dataset ID]``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from harness_gym_baselines.algos.ecpo import ECPOConfig, load, train


@dataclass
class ECPOPBConfig(ECPOConfig):
    """The settings of :mod:`harness_gym_baselines.algos.ecpo` with the shaping fixed to the potential one."""

    out: str = "models/ecpo-pb.zip"
    """where the model (an SB3 zip) is written"""
    shaping: Literal["blog", "potential"] = field(default="potential", init=False)
    """fixed: each source as gamma * phi(s') - phi(s)"""


__all__ = ["ECPOPBConfig", "load", "train"]

if __name__ == "__main__":  # the same as harness-gym train ecpo-pb (one way to run a trainer)
    from harness_gym_baselines.common.trainer_registry import run_trainer

    run_trainer("ecpo-pb")
