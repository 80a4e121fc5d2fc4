"""Open-loop harness scripts: a fixed action sequence with the check-revise loop as its one macro.

A script gathers a fixed number of observations, documents and tool results, drafts, optionally calls tools on
the draft (domains whose TOOL runs the draft), then runs the check-revise macro and submits::

    O{a}-R{b}-T{c}-D-T{p}-C{k}     e.g. O1-R2-T0-D-T1-C2

- ``O{a}``, ``R{b}``, ``T{c}``: OBSERVE ``a`` times, RETRIEVE ``b`` times, TOOL ``c`` times, in that order, before
  the draft;
- ``D``: DRAFT;
- ``T{p}``: TOOL ``p`` times after the draft;
- ``C{k}``: the check-revise macro with at most ``k`` checks: CHECK; while the last check failed and fewer than
  ``k`` checks ran, REVISE and CHECK again; ``C0`` never checks;
- then SUBMIT.

A step the action mask rules out (OBSERVE with nothing left to reveal, REVISE without feedback) is skipped, not
spent. The script reads the observation only where the macro needs it (the last check's result), so it is the
strongest *fixed* harness of its shape: what a learned controller must beat to show that reading the state pays
(``harness-gym search-script`` finds the best one per env, cost weight and price profile).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import gymnasium as gym
import numpy as np

from harness_gym.core.actions import Action
from harness_gym.core.state import FEATURE_NAMES
from harness_gym.running.rollout import harness_env

_F = {name: i for i, name in enumerate(FEATURE_NAMES)}
SCRIPT_PATTERN = re.compile(r"^O(\d+)-R(\d+)-T(\d+)-D-T(\d+)-C(\d+)$")
"""The name of a script (module docstring)."""


@dataclass(frozen=True, order=True)
class Script:
    """An open-loop harness (module docstring).

    :param observe: OBSERVE steps before the draft
    :param retrieve: RETRIEVE steps before the draft
    :param tool: TOOL steps before the draft
    :param post_tool: TOOL steps after the draft
    :param checks: the most CHECK steps of the check-revise macro (0: submit unchecked)
    """

    observe: int = 0
    retrieve: int = 0
    tool: int = 0
    post_tool: int = 0
    checks: int = 0

    def __post_init__(self) -> None:
        for name in ("observe", "retrieve", "tool", "post_tool", "checks"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"Script.{name} must be an int >= 0, got {value!r}")

    @property
    def name(self) -> str:
        """``O{a}-R{b}-T{c}-D-T{p}-C{k}``."""
        return f"O{self.observe}-R{self.retrieve}-T{self.tool}-D-T{self.post_tool}-C{self.checks}"

    @classmethod
    def parse(cls, name: str) -> Script:
        """The script a name stands for.

        :param name: ``O{a}-R{b}-T{c}-D-T{p}-C{k}`` with whole numbers
        :raises ValueError: naming the expected form when ``name`` does not have it
        """
        match = SCRIPT_PATTERN.match(name)
        if match is None:
            raise ValueError(f"not a script name: {name!r}; expected O<a>-R<b>-T<c>-D-T<p>-C<k>, e.g. O1-R2-T0-D-T0-C2")
        return cls(*(int(g) for g in match.groups()))

    def prefix(self) -> tuple[Action, ...]:
        """The actions before the check-revise macro."""
        return ((Action.OBSERVE,) * self.observe + (Action.RETRIEVE,) * self.retrieve + (Action.TOOL,) * self.tool
                + (Action.DRAFT,) + (Action.TOOL,) * self.post_tool)


def is_script_name(name: str) -> bool:
    """Whether ``name`` is a script name (module docstring)."""
    return SCRIPT_PATTERN.match(name) is not None


class ScriptPolicy:
    """Plays a :class:`Script` (a :class:`harness_gym.running.rollout.Policy`).

    :param script: the script, or its name
    """

    def __init__(self, script: Script | str) -> None:
        self.script = Script.parse(script) if isinstance(script, str) else script
        self.name = self.script.name
        self._plan = self.script.prefix()
        self._pos = 0
        self._checks = 0

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        self._pos = 0
        self._checks = 0

    def act(self, obs: np.ndarray, env: gym.Env) -> int:
        mask = harness_env(env).action_masks()
        while self._pos < len(self._plan):
            action = self._plan[self._pos]
            self._pos += 1
            if mask[action]:
                return int(action)
        if obs[_F["has_draft"]] == 0:  # the DRAFT step was skipped: never happens with a valid mask
            return int(Action.DRAFT)
        if self._checks < self.script.checks:
            if obs[_F["checked_since_change"]] == 0:
                self._checks += 1
                return int(Action.CHECK)
            if obs[_F["last_check_result"]] < 0 and mask[Action.REVISE]:
                return int(Action.REVISE)
        return int(Action.SUBMIT)



NAMED_SHAPES: dict[str, Script] = {
    "static": Script(observe=1, retrieve=2, tool=1, checks=0),
    "forced-check": Script(observe=1, retrieve=2, tool=1, checks=12),
    "thorough": Script(observe=4, retrieve=4, tool=3, checks=3),
}
"""The script of each named harness's shape (its gathering and how many checks it can run in the default step
budget), for the references that take a script's structure (the headroom benchmark's partial oracles, the probe's
imitation target when the best fixed strategy is a named script). The named harnesses themselves are closed-loop
in small ways (forced-check revises while the budget allows, thorough redrafts after two failed revisions)."""


def script_shape(name: str) -> Script:
    """The :class:`Script` a fixed strategy's name stands for: a script name parsed, a named harness's shape
    (:data:`NAMED_SHAPES`).

    :param name: a script name or a key of :data:`NAMED_SHAPES`
    """
    return NAMED_SHAPES[name] if name in NAMED_SHAPES else Script.parse(name)
