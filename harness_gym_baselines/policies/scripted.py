"""Reference controllers: random, the static harness, forced-CHECK, the thorough harness and an oracle.

A policy maps the observation (and, for the oracle only, the env's hidden state) to an action id. The static,
forced-check and thorough policies read nothing but the observation vector and the action mask, as a
hand-written harness would; the oracle reads hidden state and is an upper reference, not a baseline. Each is a
:class:`harness_gym.rollout.Policy`; :mod:`harness_gym_baselines.policies.registry` names them.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from harness_gym import HarnessEnv
from harness_gym.core.actions import Action
from harness_gym.core.state import FEATURE_NAMES
from harness_gym.rollout import harness_env
from harness_gym_baselines.policies.open_loop import Script, ScriptPolicy

_F = {name: i for i, name in enumerate(FEATURE_NAMES)}


def budget_units_left(obs: np.ndarray, env: HarnessEnv) -> int:
    """Budget units left, read from the observation (the ``budget_left`` feature is a fraction of the budget).

    :param obs: the observation vector
    :param env: the harness env it came from
    """
    return int(round(float(obs[_F["budget_left"]]) * env.budget))


class RandomPolicy:
    """Uniform over the applicable actions (the action mask)."""

    name = "random"

    def __init__(self) -> None:
        self.rng = np.random.default_rng(0)

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)

    def act(self, obs: np.ndarray, env: gym.Env) -> int:
        mask = harness_env(env).action_masks()
        return int(self.rng.choice(np.flatnonzero(mask)))


STATIC_SCRIPT: tuple[Action, ...] = (Action.OBSERVE, Action.RETRIEVE, Action.RETRIEVE, Action.TOOL, Action.DRAFT)
"""The evidence-gathering prefix of the static harness; steps the mask rules out are skipped."""


class StaticPolicy:
    """The paper's static harness: a fixed script that gathers a little evidence, drafts and submits,
    never checking. With ``check=True`` it becomes the forced-CHECK harness: CHECK before every SUBMIT and
    REVISE after a failed check while the budget still allows REVISE + CHECK + SUBMIT.

    :param check: enable the forced CHECK / REVISE loop
    """

    def __init__(self, check: bool = False) -> None:
        self.check = check
        self.name = "forced-check" if check else "static"
        self._pos = 0

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        self._pos = 0

    def act(self, obs: np.ndarray, env: gym.Env) -> int:
        henv = harness_env(env)
        mask = henv.action_masks()
        while self._pos < len(STATIC_SCRIPT):
            action = STATIC_SCRIPT[self._pos]
            self._pos += 1
            if mask[action] and not (action == Action.DRAFT and obs[_F["has_draft"]] > 0):
                return int(action)
        if obs[_F["has_draft"]] == 0:
            return int(Action.DRAFT)
        if not self.check:
            return int(Action.SUBMIT)
        if obs[_F["checked_since_change"]] == 0:
            return int(Action.CHECK)
        costs = henv.action_costs
        failed = obs[_F["last_check_result"]] < 0
        room = costs[Action.REVISE] + costs[Action.CHECK] + costs[Action.SUBMIT]
        if failed and mask[Action.REVISE] and budget_units_left(obs, henv) >= room:
            return int(Action.REVISE)
        return int(Action.SUBMIT)


class ThoroughPolicy:
    """The "gather everything, then check" harness: OBSERVE up to 4 times, RETRIEVE up to 4 times, TOOL until 3
    calls have succeeded (at most 6 tries), DRAFT, then CHECK every new draft; after a failed check REVISE (up
    to twice per draft) or write a fresh DRAFT, while the budget leaves room for that step, a CHECK and the
    SUBMIT; SUBMIT after a passed check or when the room is gone. Steps the action mask rules out are skipped
    (TOOL in a domain where it runs the draft comes after the first DRAFT). It reads only the observation and
    the mask. Without a cost on the steps it is hard to beat; with one, it pays for every step of the script.
    """

    name = "thorough"
    MAX_OBSERVE = 4
    MAX_RETRIEVE = 4
    TOOL_SUCCESSES = 3
    MAX_TOOL_TRIES = 6
    MAX_REVISIONS_PER_DRAFT = 2

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        self._observed = self._retrieved = self._tool_tries = self._revisions = 0

    def act(self, obs: np.ndarray, env: gym.Env) -> int:
        henv = harness_env(env)
        mask = henv.action_masks()
        if mask[Action.OBSERVE] and self._observed < self.MAX_OBSERVE:
            self._observed += 1
            return int(Action.OBSERVE)
        if mask[Action.RETRIEVE] and self._retrieved < self.MAX_RETRIEVE:
            self._retrieved += 1
            return int(Action.RETRIEVE)
        successes = round(10 * float(obs[_F["n_tool_calls"]])) - round(10 * float(obs[_F["n_tool_errors"]]))
        if mask[Action.TOOL] and successes < self.TOOL_SUCCESSES and self._tool_tries < self.MAX_TOOL_TRIES:
            self._tool_tries += 1
            return int(Action.TOOL)
        if obs[_F["has_draft"]] == 0:
            return int(Action.DRAFT)
        if obs[_F["checked_since_change"]] == 0:
            return int(Action.CHECK)
        if obs[_F["last_check_result"]] > 0:
            return int(Action.SUBMIT)
        costs = henv.action_costs
        left = budget_units_left(obs, henv)
        tail = costs[Action.CHECK] + costs[Action.SUBMIT]
        if mask[Action.REVISE] and self._revisions < self.MAX_REVISIONS_PER_DRAFT and left >= costs[Action.REVISE] + tail:
            self._revisions += 1
            return int(Action.REVISE)
        if left >= costs[Action.DRAFT] + tail:
            self._revisions = 0
            return int(Action.DRAFT)
        return int(Action.SUBMIT)


class _EvidenceGatherer:
    """Gathers exactly a task's required evidence, read from the hidden task (the oracles' shared first phase)."""

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        self._retrievals = 0
        self._tool_tries = 0

    def _gather(self, henv: HarnessEnv, mask: np.ndarray, *, tools: bool = True) -> int | None:
        """The next evidence action the task still needs, or ``None`` when it has what it needs (or can get no
        more); ``tools=False`` leaves tool calls out."""
        ctx = henv.context
        task = ctx.task
        if mask[Action.OBSERVE] and not task.required_observations.issubset(ctx.observed):
            return int(Action.OBSERVE)
        if (task.relevant_docs and mask[Action.RETRIEVE] and self._retrievals < len(task.relevant_docs) + 3
                and not task.relevant_docs.issubset(ctx.retrieved)):
            self._retrievals += 1
            return int(Action.RETRIEVE)
        wants_tool = (tools and task.tool_calls and ctx.good_tool_results < len(task.tool_calls)
                      and self._tool_tries < 2 * len(task.tool_calls) + 2)
        if wants_tool and mask[Action.TOOL]:
            self._tool_tries += 1
            return int(Action.TOOL)
        return None


class OraclePolicy(_EvidenceGatherer):
    """Reads the hidden state: gathers exactly the task's required evidence, drafts, and redrafts (or
    revises after a failed check) until the worker's draft is a correct candidate, then submits."""

    name = "oracle"

    def act(self, obs: np.ndarray, env: gym.Env) -> int:
        henv = harness_env(env)
        ctx = henv.context
        task = ctx.task
        mask = henv.action_masks()
        costs = henv.action_costs
        left = budget_units_left(obs, henv)
        gather = self._gather(henv, mask)
        if gather is not None:
            return gather
        if ctx.draft is None:
            return int(Action.DRAFT)
        correct = 0 <= ctx.draft.candidate < len(task.candidates) and task.candidates[ctx.draft.candidate].correct
        if correct or left < costs[Action.DRAFT] + costs[Action.SUBMIT]:
            return int(Action.SUBMIT)
        return int(Action.DRAFT)


class EvidenceOraclePolicy(_EvidenceGatherer):
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

