"""The reference controllers that define the benchmark's scale and its cost budget.

- ``random``: uniform over the applicable actions; the bottom of the normalised score (0);
- ``static``: the paper's static harness (gather a little evidence, draft, submit unchecked);
- ``forced-check``: the static harness with CHECK before every SUBMIT and REVISE after a failed check;
- ``thorough``: gather everything, then check, revise twice per draft and redraft;
- ``oracle``: reads the hidden task, gathers exactly the required evidence and redrafts until the draft is a
  correct candidate: the **upper reference**, the top of the normalised score (100). It is not a baseline.

The named scripts read only the observation vector and the action mask, as a hand-written harness would.
Each is a :class:`harness_gym.running.rollout.Policy`; ``harness_gym_baselines.policies.registry`` names them for the
command line. The cost-budget rule (:mod:`harness_gym.budget.rule`) plays these four controllers, so that the
default budget never cuts the upper reference or a named script (docs/cost.md, "Budget").

:func:`normalized_score` is the one definition of a normalised score: 0 = random, 100 = the upper reference.
"""

from __future__ import annotations

import math
from typing import Any, Union

import gymnasium as gym
import numpy as np

from harness_gym.core.actions import Action
from harness_gym.core.state import FEATURE_NAMES
from harness_gym.core.types import SPLITS

# This module imports only the ground floor (``core``): the env plays these controllers to set its cost budget, so
# they know the env only through what every harness env has (``unwrapped``, ``action_masks``, ``action_costs``,
# ``budget``, ``context``, ``domain``).

_F = {name: i for i, name in enumerate(FEATURE_NAMES)}


def harness_env(env: gym.Env) -> Any:
    """The harness env under a (possibly wrapped) env (:func:`harness_gym.running.rollout.harness_env` checks its type)."""
    return env.unwrapped


def budget_units_left(obs: np.ndarray, env: Any) -> int:
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


class EvidenceGatherer:
    """Gathers exactly a task's required evidence, read from the hidden task (the oracles' shared first phase)."""

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        self._retrievals = 0
        self._tool_tries = 0

    def _gather(self, henv: Any, mask: np.ndarray, *, tools: bool = True, left: int | None = None) -> int | None:
        """The next evidence action the task still needs, or ``None`` when it has what it needs (or can get no
        more); ``tools=False`` leaves tool calls out. With ``left`` (the step budget left), an action is taken
        only while it leaves room for a DRAFT and the SUBMIT after it."""
        ctx = henv.context
        task = ctx.task
        costs = henv.action_costs

        def room(action: Action) -> bool:
            return left is None or left >= costs[action] + costs[Action.DRAFT] + costs[Action.SUBMIT]

        if mask[Action.OBSERVE] and not task.required_observations.issubset(ctx.observed) and room(Action.OBSERVE):
            return int(Action.OBSERVE)
        if (task.relevant_docs and mask[Action.RETRIEVE] and self._retrievals < len(task.relevant_docs) + 3
                and not task.relevant_docs.issubset(ctx.retrieved) and room(Action.RETRIEVE)):
            self._retrievals += 1
            return int(Action.RETRIEVE)
        wants_tool = (tools and task.tool_calls and ctx.good_tool_results < len(task.tool_calls)
                      and self._tool_tries < 2 * len(task.tool_calls) + 2)
        if wants_tool and mask[Action.TOOL] and room(Action.TOOL):
            self._tool_tries += 1
            return int(Action.TOOL)
        return None


class OraclePolicy(EvidenceGatherer):
    """The upper reference. Reads the hidden state: gathers exactly the task's required evidence (while the step
    budget leaves room for a DRAFT and the SUBMIT), drafts, and redrafts until the worker's draft is a correct
    candidate or the step budget leaves room for nothing but the SUBMIT, then submits. Under the default cost
    budget (:mod:`harness_gym.budget.rule`) it always ends in its own SUBMIT, never a forced one."""

    name = "oracle"

    def act(self, obs: np.ndarray, env: gym.Env) -> int:
        henv = harness_env(env)
        ctx = henv.context
        task = ctx.task
        mask = henv.action_masks()
        costs = henv.action_costs
        left = budget_units_left(obs, henv)
        gather = self._gather(henv, mask, left=left)
        if gather is not None:
            return gather
        if ctx.draft is None:
            return int(Action.DRAFT)
        correct = 0 <= ctx.draft.candidate < len(task.candidates) and task.candidates[ctx.draft.candidate].correct
        if correct or left < costs[Action.DRAFT] + costs[Action.SUBMIT]:
            return int(Action.SUBMIT)
        return int(Action.DRAFT)


NAMED_SCRIPTS: tuple[str, ...] = ("static", "forced-check", "thorough")
"""The hand-written harnesses every table reports, in table order."""
UPPER_REFERENCE = "oracle"
"""The name of the upper reference (100 on the normalised scale)."""
LOWER_REFERENCE = "random"
"""The name of the lower reference (0 on the normalised scale)."""
BUDGET_REFERENCES: tuple[str, ...] = (*NAMED_SCRIPTS, UPPER_REFERENCE)
"""The controllers the cost-budget rule plays (:mod:`harness_gym.budget.rule`): the default budget leaves each
of them room to finish as designed."""


ReferencePolicy = Union["RandomPolicy", "StaticPolicy", "ThoroughPolicy", "OraclePolicy"]
"""Any reference controller (each is a :class:`harness_gym.running.rollout.Policy`)."""


def reference_policy(name: str) -> ReferencePolicy:
    """A fresh reference controller by name (one of :data:`BUDGET_REFERENCES` or ``random``).

    :param name: ``random``, ``static``, ``forced-check``, ``thorough`` or ``oracle``
    :raises ValueError: naming the known references for any other name
    """
    makers = {"random": RandomPolicy, "static": StaticPolicy, "forced-check": lambda: StaticPolicy(check=True),
              "thorough": ThoroughPolicy, "oracle": OraclePolicy}
    if name not in makers:
        raise ValueError(f"unknown reference controller {name!r}; expected one of {', '.join(makers)}")
    return makers[name]()


def play_reference_bills(env: Any, *, seed: int) -> list[dict[str, float]]:
    """The bills (item -> quantity) of the budget rule's reference episodes: each of
    :data:`BUDGET_REFERENCES` played once on every task of every split, reset with ``seed``.

    :param env: the env to play them on (no cost budget of its own)
    :param seed: the reset seed of every episode
    """
    bills = []
    for split in SPLITS:
        for task in env.domain.tasks(split):
            for name in BUDGET_REFERENCES:
                policy = reference_policy(name)
                obs, _ = env.reset(seed=seed, options={"task_id": task.task_id, "split": split})
                policy.reset(env, seed)
                while True:
                    obs, _, terminated, truncated, _ = env.step(policy.act(obs, env))
                    if terminated or truncated:
                        break
                bills.append(dict(env.episode_bill))
    return bills


def normalized_score(value: float, lower: float, upper: float) -> float:
    """A score on the benchmark's scale: 0 = the lower reference (random), 100 = the upper reference (oracle),
    both measured on the same episodes and settings as ``value`` (Q or return alike). NaN when the two
    references tie (no range to place the value in).

    :param value: the controller's mean Q (or return)
    :param lower: the random controller's mean on the same episodes
    :param upper: the upper reference's mean on the same episodes
    """
    span = upper - lower
    if not math.isfinite(span) or abs(span) < 1e-12:
        return float("nan")
    return 100.0 * (value - lower) / span
