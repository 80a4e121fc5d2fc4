"""Fixed model cascades on the tiered envs (``Harness<Name>Tiered-v2``, :mod:`harness_gym.tiered`, docs/cascade.md).

A cascade script gathers, drafts at one tier, may escalate to the frontier tier once, then runs the check-revise
macro at a repair tier and submits::

    O{a}-R{b}-T{c}-D{c|f}[-T{p}]-E{n|k|q<pct>}-V{c|f}-C{k}     e.g. O1-R2-T1-Dc-Eq80-Vf-C2

- ``O{a}``, ``R{b}``, ``T{c}``: OBSERVE, RETRIEVE, TOOL that many times before the draft (masked steps skipped);
- ``D{c|f}``: the first draft by the cheap (DRAFT) or the frontier tier (DRAFT_FRONTIER);
- ``T{p}``: TOOL ``p`` times after the first draft (domains whose TOOL runs the draft; masked steps skipped; the name
  leaves it out when ``p`` is 0), as the open-loop scripts' ``D-T{p}`` (:mod:`~harness_gym_baselines.policies.open_loop`):
  a cheap-tier cascade ``...-Dc[-T{p}]-En-Vc-C{k}`` plays the script ``...-D-T{p}-C{k}`` step for step;
- ``E``: escalation of a cheap draft to a fresh frontier draft, at most once: ``n`` never; ``k`` when the cheap draft's
  CHECK fails (the AutoMix/FrugalGPT shape with the env's check as the verifier); ``q<pct>`` when the cheap draft's
  stated confidence (the ``worker_confidence`` feature) is below ``pct``/100 (AutoMix-style threshold);
- ``V{c|f}``: the tier of the check-revise macro's REVISE steps (and, where the domain's CHECK is the worker's
  self-check, of its CHECK steps: CHECK_FRONTIER);
- ``C{k}``: at most ``k`` CHECK steps on the final draft lineage: CHECK; while the last check failed and fewer than
  ``k`` ran, REVISE and CHECK; ``C0`` never checks;
- then SUBMIT.

It reads only the observation (has_draft, checked_since_change, last_check_result, worker_confidence) and the mask.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

import gymnasium as gym
import numpy as np

from harness_gym.core.actions import N_ACTIONS, Action
from harness_gym.core.state import FEATURE_NAMES
from harness_gym.running.rollout import harness_env
from harness_gym.tiered import CHECK_FRONTIER, DRAFT_FRONTIER, REVISE_FRONTIER

_F = {name: i for i, name in enumerate(FEATURE_NAMES)}
CASCADE_PATTERN = re.compile(r"^O(\d+)-R(\d+)-T(\d+)-D([cf])(?:-T(\d+))?-E(n|k|q\d{1,3})-V([cf])-C(\d+)$")
"""The name of a cascade script (module docstring)."""


@dataclass(frozen=True)
class CascadeScript:
    """A fixed cascade (module docstring).

    :param observe: OBSERVE steps before the draft
    :param retrieve: RETRIEVE steps before the draft
    :param tool: TOOL steps before the draft
    :param draft: ``"c"`` or ``"f"``, the tier of the first draft
    :param escalate: ``"n"``, ``"k"`` or ``"q<pct>"``
    :param repair: ``"c"`` or ``"f"``, the tier of the check-revise macro
    :param checks: the most CHECK steps on the final draft lineage
    :param post_tool: TOOL steps after the first draft
    """

    observe: int = 1
    retrieve: int = 2
    tool: int = 1
    draft: str = "c"
    escalate: str = "n"
    repair: str = "c"
    checks: int = 2
    post_tool: int = 0

    @property
    def name(self) -> str:
        post = f"-T{self.post_tool}" if self.post_tool else ""
        return (f"O{self.observe}-R{self.retrieve}-T{self.tool}-D{self.draft}{post}-E{self.escalate}-V{self.repair}"
                f"-C{self.checks}")

    @property
    def threshold(self) -> float | None:
        """The confidence threshold of ``q<pct>`` (``None`` for another escalation)."""
        return int(self.escalate[1:]) / 100.0 if self.escalate.startswith("q") else None

    @classmethod
    def parse(cls, name: str) -> CascadeScript:
        """The script named ``name``.

        :raises ValueError: for a name outside the grammar (module docstring)
        """
        match = CASCADE_PATTERN.match(name)
        if match is None:
            raise ValueError(f"not a cascade script name: {name!r} (expected e.g. O1-R2-T1-Dc-Eq80-Vf-C2)")
        o, r, t, d, p, e, v, c = match.groups()
        if e.startswith("q") and not 0 <= int(e[1:]) <= 100:
            raise ValueError(f"cascade {name!r}: the confidence threshold must be 0-100 percent")
        return cls(int(o), int(r), int(t), d, e, v, int(c), int(p or 0))


def is_cascade_name(name: str) -> bool:
    return CASCADE_PATTERN.match(name) is not None


class CascadePolicy:
    """Plays a :class:`CascadeScript` on a tiered env.

    :param script: the script or its name
    :param name: the policy's name (default: the script's)
    """

    def __init__(self, script: CascadeScript | str, name: str | None = None) -> None:
        self.script = CascadeScript.parse(script) if isinstance(script, str) else script
        self.name = name or self.script.name
        self.reset(None)

    def reset(self, env: gym.Env | None, seed: int | None = None) -> None:
        s = self.script
        self._prefix = [Action.OBSERVE] * s.observe + [Action.RETRIEVE] * s.retrieve + [Action.TOOL] * s.tool
        self._post_tool = s.post_tool
        self._escalated = False
        self._checks = 0

    def act(self, obs: np.ndarray, env: gym.Env) -> int:
        s = self.script
        henv = harness_env(env)
        mask = henv.action_masks()
        if len(mask) <= N_ACTIONS:
            raise TypeError(f"{self.name}: a cascade needs a tiered env (Harness<Name>Tiered-v2), got "
                            f"{len(mask)} actions")
        while self._prefix and obs[_F["has_draft"]] == 0:
            action = self._prefix.pop(0)
            if mask[action]:
                return int(action)
        if obs[_F["has_draft"]] == 0:
            return DRAFT_FRONTIER if s.draft == "f" else int(Action.DRAFT)
        while self._post_tool > 0:
            self._post_tool -= 1
            if mask[Action.TOOL]:
                return int(Action.TOOL)
        can_escalate = s.draft == "c" and not self._escalated
        threshold = s.threshold
        if can_escalate and threshold is not None:
            self._escalated = True
            if obs[_F["worker_confidence"]] < threshold:
                return DRAFT_FRONTIER
        checked = obs[_F["checked_since_change"]] > 0
        if not checked and self._checks < s.checks:
            self._checks += 1
            return CHECK_FRONTIER if s.repair == "f" and len(mask) > CHECK_FRONTIER else int(Action.CHECK)
        failed = checked and obs[_F["last_check_result"]] < 0
        if failed and can_escalate and s.escalate == "k":
            self._escalated = True
            self._checks = 0  # the escalated draft is a new lineage
            return DRAFT_FRONTIER
        if failed and self._checks < s.checks and mask[Action.REVISE]:
            return REVISE_FRONTIER if s.repair == "f" else int(Action.REVISE)
        return int(Action.SUBMIT)


CASCADES: dict[str, tuple[str, str]] = {
    "always-cheap": ("O1-R2-T1-Dc-En-Vc-C2", "every call to the cheap tier: gather a little, draft, check-revise (2 "
                                             "checks), submit"),
    "always-frontier": ("O1-R2-T1-Df-En-Vf-C2", "the same script with every draft and repair by the frontier tier"),
    "cheap-then-frontier": ("O1-R2-T1-Dc-Ek-Vf-C2", "cheap draft; on a failed check a fresh frontier draft, "
                                                    "frontier repairs"),
    "confidence-cascade": ("O1-R2-T1-Dc-Eq80-Vf-C2", "cheap draft; a frontier draft when the stated confidence is "
                                                     "below 0.80 (AutoMix-style; the cascade experiment chooses "
                                                     "the threshold on val)"),
}
"""The registered fixed cascades: policy name -> (script, summary)."""


class CascadeMixture:
    """The behaviour policy of the cascade experiment's offline buffers: per episode one of ``scripts`` uniformly
    (drawn from the episode's reset seed), and at every step with probability ``deviate`` a uniformly random
    applicable action instead of the script's (the script carries on from the state that action left), so the buffer
    holds every tier choice of the grid and one-step departures from each. Fixed before any offline result (the same
    per-step deviation as :class:`~harness_gym_baselines.policies.coverage.CoverageMix`).

    :param scripts: the cascade scripts (names or :class:`CascadeScript`), at least one
    :param deviate: the per-step probability of a random applicable action
    """

    def __init__(self, scripts: list[CascadeScript | str], deviate: float = 0.1) -> None:
        if not scripts:
            raise ValueError("CascadeMixture: at least one script is needed")
        if not 0.0 <= deviate <= 1.0:
            raise ValueError(f"CascadeMixture: deviate must lie in [0, 1], got {deviate}")
        self.scripts = tuple(CascadeScript.parse(s) if isinstance(s, str) else s for s in scripts)
        self.deviate = deviate
        digest = hashlib.sha256(" ".join(s.name for s in self.scripts).encode()).hexdigest()[:8]
        self.name = f"cascade-mixture[{len(self.scripts)} scripts {digest}, deviate {deviate:g}]"
        self.rng = np.random.default_rng(0)
        self.inner = CascadePolicy(self.scripts[0])

    def reset(self, env: gym.Env | None, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)
        self.inner = CascadePolicy(self.scripts[int(self.rng.integers(len(self.scripts)))])

    def act(self, obs: np.ndarray, env: gym.Env) -> int:
        if self.rng.random() < self.deviate:
            return int(self.rng.choice(np.flatnonzero(harness_env(env).action_masks())))
        return self.inner.act(obs, env)
