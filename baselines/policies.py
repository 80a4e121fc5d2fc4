"""Reference controllers: random, the static harness, forced-CHECK and an oracle (issue 2, item 6).

A policy maps the observation (and, for the oracle only, the env's hidden state) to an action id. The static
and forced-check policies read nothing but the observation vector and the action mask, as a hand-written
harness would; the oracle reads hidden state and is an upper reference, not a baseline.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import gymnasium as gym
import numpy as np

from harness_gym.core.actions import Action
from harness_gym.core.env import HarnessEnv
from harness_gym.core.state import FEATURE_NAMES

_F = {name: i for i, name in enumerate(FEATURE_NAMES)}


class Policy(Protocol):
    """A controller. ``reset`` is called at every episode start, ``act`` at every step."""

    name: str

    def reset(self, env: gym.Env, seed: int | None = None) -> None: ...

    def act(self, obs: np.ndarray, env: gym.Env) -> int: ...


def harness_env(env: gym.Env) -> HarnessEnv:
    base = env.unwrapped
    if not isinstance(base, HarnessEnv):
        raise TypeError(f"expected a harness_gym env, got {type(base).__name__}")
    return base


def budget_units_left(obs: np.ndarray, env: HarnessEnv) -> int:
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


class OraclePolicy:
    """Reads the hidden state: gathers exactly the task's required evidence, drafts, and redrafts (or
    revises after a failed check) until the worker's draft is a correct candidate, then submits."""

    name = "oracle"

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        self._retrievals = 0
        self._tool_tries = 0

    def act(self, obs: np.ndarray, env: gym.Env) -> int:
        henv = harness_env(env)
        ctx = henv.context
        task = ctx.task
        mask = henv.action_masks()
        costs = henv.action_costs
        left = budget_units_left(obs, henv)
        if mask[Action.OBSERVE] and not task.required_observations.issubset(ctx.observed):
            return int(Action.OBSERVE)
        if (task.relevant_docs and mask[Action.RETRIEVE] and self._retrievals < len(task.relevant_docs) + 3
                and not task.relevant_docs.issubset(ctx.retrieved)):
            self._retrievals += 1
            return int(Action.RETRIEVE)
        wants_tool = (task.tool_calls and ctx.good_tool_results < len(task.tool_calls)
                      and self._tool_tries < 2 * len(task.tool_calls) + 2)
        if wants_tool and mask[Action.TOOL]:
            self._tool_tries += 1
            return int(Action.TOOL)
        if ctx.draft is None:
            return int(Action.DRAFT)
        correct = 0 <= ctx.draft.candidate < len(task.candidates) and task.candidates[ctx.draft.candidate].correct
        if correct or left < costs[Action.DRAFT] + costs[Action.SUBMIT]:
            return int(Action.SUBMIT)
        return int(Action.DRAFT)


def _behaviour_policy() -> Policy:
    from baselines.behaviour import BehaviourPolicy  # imported late: it builds on StaticPolicy above

    return BehaviourPolicy()


POLICY_NAMES: tuple[str, ...] = ("random", "static", "forced-check", "oracle", "behaviour")

_FACTORIES: dict[str, Callable[[], Any]] = {
    "random": RandomPolicy,
    "static": StaticPolicy,
    "forced-check": lambda: StaticPolicy(check=True),
    "oracle": OraclePolicy,
    "behaviour": _behaviour_policy,
}


def make_policy(name: str) -> Policy:
    """A reference policy by name, or a trained model file (see :mod:`baselines.learned`)."""
    if name in _FACTORIES:
        return _FACTORIES[name]()
    from pathlib import Path

    if Path(name).is_file():
        from baselines.learned import load_policy

        return load_policy(name)
    raise ValueError(f"unknown policy {name!r}: expected one of {POLICY_NAMES} or a path to a model file")
