"""Reference controllers: random, the static harness, forced-CHECK, the thorough harness, the oracle (all
defined in :mod:`harness_gym.budget.references`, where the cost-budget rule plays them) and the headroom benchmark's
partial oracles.

A policy maps the observation (and, for the oracles only, the env's hidden state) to an action id. The static,
forced-check and thorough policies read nothing but the observation vector and the action mask, as a
hand-written harness would; the oracles read hidden state and are references, not baselines. Each is a
:class:`harness_gym.running.rollout.Policy`; :mod:`harness_gym_baselines.policies.registry` names them.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from harness_gym.budget.references import (
    EvidenceGatherer,
    OraclePolicy,
    RandomPolicy,
    StaticPolicy,
    ThoroughPolicy,
    budget_units_left,
)
from harness_gym.core.actions import Action
from harness_gym.core.state import FEATURE_NAMES
from harness_gym.running.rollout import harness_env
from harness_gym_baselines.policies.open_loop import Script, ScriptPolicy

__all__ = ["CorrectnessOraclePolicy", "EvidenceOraclePolicy", "OraclePolicy", "RandomPolicy", "StaticPolicy",
           "ThoroughPolicy", "budget_units_left"]

_F = {name: i for i, name in enumerate(FEATURE_NAMES)}


class EvidenceOraclePolicy(EvidenceGatherer):
    """Knows when evidence suffices and nothing else: gathers exactly the task's required evidence (read from
    the hidden task), drafts, then runs the open-loop check-revise macro of ``checks`` checks (as
    :class:`~harness_gym_baselines.policies.open_loop.ScriptPolicy` does) and submits. The headroom benchmark's
    reference for what knowing evidence sufficiency is worth.

    :param checks: the most CHECK steps after the draft
    """

    def __init__(self, checks: int = 1) -> None:
        self.checks = checks
        self.name = f"evidence-oracle-C{checks}"

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        super().reset(env, seed)
        self._done_checks = 0

    def act(self, obs: np.ndarray, env: gym.Env) -> int:
        henv = harness_env(env)
        ctx, mask = henv.context, henv.action_masks()
        gather = self._gather(henv, mask, tools=ctx.draft is not None or not henv.domain.tool_needs_draft)
        if gather is not None and (ctx.draft is None or henv.domain.tool_needs_draft):
            return gather
        if ctx.draft is None:
            return int(Action.DRAFT)
        if self._done_checks < self.checks:
            if ctx.checked_version != ctx.draft.version:
                self._done_checks += 1
                return int(Action.CHECK)
            if ctx.last_check is not None and not ctx.last_check.passed and mask[Action.REVISE]:
                return int(Action.REVISE)
        return int(Action.SUBMIT)

class CorrectnessOraclePolicy(ScriptPolicy):
    """A :class:`Script` whose check verdict is replaced by the hidden truth: the script's gathering prefix,
    then SUBMIT as soon as the current draft is a correct candidate; a wrong draft is checked (REVISE needs the
    check's feedback) and revised, or drafted anew when the check passed it or named no fault, at most
    ``checks`` times. It reads the hidden task, so it is a reference, not a baseline: on the best script's
    evidence, what knowing whether a draft is right would be worth (the headroom benchmark's column).

    :param script: the script, or its name
    """

    def __init__(self, script: Script | str) -> None:
        super().__init__(script)
        self.name = f"correctness-oracle[{self.script.name}]"
        self._fixes = 0

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        super().reset(env, seed)
        self._fixes = 0

    def act(self, obs: np.ndarray, env: gym.Env) -> int:
        henv = harness_env(env)
        mask = henv.action_masks()
        while self._pos < len(self._plan):
            action = self._plan[self._pos]
            self._pos += 1
            if mask[action]:
                return int(action)
        ctx = henv.context
        if ctx.draft is None:
            return int(Action.DRAFT)
        candidates = ctx.task.candidates
        if 0 <= ctx.draft.candidate < len(candidates) and candidates[ctx.draft.candidate].correct:
            return int(Action.SUBMIT)
        if self._fixes >= self.script.checks:
            return int(Action.SUBMIT)
        if obs[_F["checked_since_change"]] == 0:
            return int(Action.CHECK)
        self._fixes += 1
        return int(Action.REVISE if mask[Action.REVISE] else Action.DRAFT)

