"""The policy registry: every controller the command line and the experiments can name, declared once.

``harness-gym eval/compare/play/collect --policy NAME`` accept a name of :data:`POLICIES` or the path of a
model file written by a trainer (:mod:`baselines.learned`); their choices and help text come from here.
Adding a controller is one entry in :data:`POLICIES`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from baselines.behaviour import BehaviourPolicy
from baselines.policies import OraclePolicy, RandomPolicy, StaticPolicy
from harness_gym.rollout import Policy


@dataclass(frozen=True)
class PolicyEntry:
    """A registered controller."""

    factory: Callable[[], Policy]
    """builds a fresh instance"""
    summary: str
    """one line for ``--help``"""


POLICIES: dict[str, PolicyEntry] = {
    "random": PolicyEntry(RandomPolicy, "uniform over the applicable actions"),
    "static": PolicyEntry(StaticPolicy, "the static harness: gather a little evidence, draft, submit"),
    "forced-check": PolicyEntry(lambda: StaticPolicy(check=True), "the static harness with CHECK before SUBMIT"),
    "oracle": PolicyEntry(OraclePolicy, "reads the hidden state (an upper reference, not a baseline)"),
    "behaviour": PolicyEntry(BehaviourPolicy, "the seeded mixture of harness runs that fills offline buffers"),
}
POLICY_NAMES: tuple[str, ...] = tuple(POLICIES)


def policy_help() -> str:
    """The ``--policy`` help text: every registered name with its summary, then the model-file form."""
    names = "; ".join(f"{name}: {entry.summary}" for name, entry in POLICIES.items())
    return f"a registered policy ({names}) or the path of a trained model file"


def make_policy(name: str) -> Policy:
    """A registered policy by name, or the controller stored in a trained model file.

    :param name: a key of :data:`POLICIES` or the path of a model file: this project's
        (:func:`baselines.learned.load_policy`) or a Stable-Baselines3 zip (:func:`baselines.sb3_policy.load_sb3_policy`)
    """
    if name in POLICIES:
        return POLICIES[name].factory()
    if Path(name).is_file():
        from baselines.sb3_policy import is_sb3_zip, load_sb3_policy

        if is_sb3_zip(name):
            return load_sb3_policy(name)
        from baselines.learned import load_policy  # torch is imported only when a model file is evaluated

        return load_policy(name)
    raise ValueError(f"unknown policy {name!r}: expected one of {POLICY_NAMES} or the path of a model file")
