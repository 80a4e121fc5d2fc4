"""Tiered envs: a cheap and a frontier worker in one harness, the controller choosing which model each call goes to
(docs/cascade.md).

``Harness<Name>Tiered-v2`` (:data:`TIERED_ENV_IDS`, one per domain) is the ``-v2`` env of a domain with two more
actions (three where the domain's CHECK is the worker's self-check, :func:`uses_self_check`: research_qa), so it is its
own id: the action space changes.

- Actions 0-6 are the base env's, run by the **cheap tier** (the domain's ``-v2`` worker, billed at ``prices``,
  default ``cheap-hosted``).
- :data:`DRAFT_FRONTIER` (7) and :data:`REVISE_FRONTIER` (8) are DRAFT and REVISE written by the **frontier tier**
  (the worker of ``envs_data/profiles/v2-frontier/<domain>.json``, billed at ``frontier_prices``, default
  ``frontier-hosted``); :data:`CHECK_FRONTIER` (9, self-check domains only) is the frontier tier's self-check. Each
  is applicable exactly when its base action is (the same mask entry).
- The observation is the base env's (its :data:`~harness_gym.core.state.FEATURE_NAMES`, unchanged) followed by
  :data:`TIER_FEATURE_NAMES`: ``draft_by_frontier`` (1 when the frontier tier wrote the current draft, else 0),
  ``cheap_cost_spent`` and ``frontier_cost_spent`` (the units of the steps each tier ran, over the same scale as
  ``cost_spent``, capped at 1; the base actions, tools and checks included, count as the cheap tier's).
- Every step's reward is the base env's: ``-cost_weight * units`` with each call priced at its tier's list price, plus
  Q on the last step. ``info`` adds ``tier`` (of the step), ``tier_units`` (per tier, so far) and names the frontier
  actions ``DRAFT_FRONTIER``, ``REVISE_FRONTIER``, ``CHECK_FRONTIER``.
- ``budget_units="auto"``: the auto rule (docs/cost.md) at ``frontier_prices``, i.e. twice the largest reference
  episode cost when every call goes to the frontier tier, so no all-frontier harness is cut.

**A real-model path**: ``worker="openai"`` (the cheap tier's ``base_url``, ``model``, ``cache``, ...) with
``frontier_model`` and, as needed, ``frontier_base_url`` and ``frontier_cache`` (the frontier tier's own record/replay
file, ``frontier_cache_mode``): every ``frontier_``-prefixed option of :data:`FRONTIER_OPTIONS` (:func:`make_tiered`).

**How the tiers' successes correlate across tasks**: the frontier worker's per-task latent ability is
``sd_f * (rho * z + sqrt(1 - rho**2) * z_f)``, where ``z`` is the very draw the cheap tier reads for the task and
``z_f`` the frontier tier's own (seeded from the task id with the frontier profile's ``task_ability_seed``); ``rho``
is the profile's ``tier.ability_correlation``, chosen (no source gives per-task agreement between the two models on
these families); the keyword ``ability_correlation=`` sets another for a sensitivity analysis (docs/cascade.md). Its
offset over the cheap tier is the profile's ``draft_logit_base``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from harness_gym.core.actions import N_ACTIONS, Action
from harness_gym.core.domain import Domain
from harness_gym.core.paths import data_path
from harness_gym.core.prices import PriceTable, price_table
from harness_gym.core.state import FEATURE_NAMES, HIGH, LOW
from harness_gym.core.taskfile import TaskFileError, read_json, require
from harness_gym.core.types import Task
from harness_gym.env import MAX_BUDGET, HarnessEnv
from harness_gym.workers import OPENAI_OPTIONS, OpenAIWorker, Worker
from harness_gym.workers.profile import WorkerProfile, WorkerProfileV2
from harness_gym.workers.simulated import SimulatedWorker, task_draws

TIERS: tuple[str, ...] = ("cheap", "frontier")
"""The two tiers, in the order of ``info["tier_units"]``."""
DRAFT_FRONTIER, REVISE_FRONTIER, CHECK_FRONTIER = N_ACTIONS, N_ACTIONS + 1, N_ACTIONS + 2
"""The frontier tier's actions (ids after the seven base actions; CHECK_FRONTIER only in a self-check domain)."""
FRONTIER_BASE: dict[int, Action] = {DRAFT_FRONTIER: Action.DRAFT, REVISE_FRONTIER: Action.REVISE,
                                    CHECK_FRONTIER: Action.CHECK}
"""Each frontier action's base action (what it does, and whose mask entry it shares)."""


def base_action(action: int) -> Action:
    """What an action id of a base or a tiered env does: its own :class:`Action`, or a frontier action's base action."""
    return FRONTIER_BASE[action] if action in FRONTIER_BASE else Action(action)


def action_name(action: int) -> str:
    """The name of an action id of a base or a tiered env: ``DRAFT``, ``DRAFT_FRONTIER``, ..."""
    return f"{FRONTIER_BASE[action].name}_FRONTIER" if action in FRONTIER_BASE else Action(action).name

TIER_FEATURE_NAMES: tuple[str, ...] = ("draft_by_frontier", "cheap_cost_spent", "frontier_cost_spent")
"""The features a tiered observation adds after the base env's :data:`FEATURE_NAMES`."""
TIERED_DOMAINS: dict[str, str] = {
    "HarnessCode": "code",
    "HarnessKnowledge": "knowledge",
    "HarnessResearchQA": "research_qa",
    "HarnessMultiTool": "multitool",
    "HarnessData": "data",
    "HarnessPlan": "plan",
    "HarnessTauRetail": "tau_retail",
    "HarnessDBBench": "dbbench",
}
"""Base env name -> its domain, for every domain with a frontier profile (``envs_data/profiles/v2-frontier``)."""
FRONTIER_OPTIONS: tuple[str, ...] = tuple(f"frontier_{name}" for name in OPENAI_OPTIONS)
"""The options of the frontier tier's live worker (``worker="openai"``): ``frontier_`` + each
:class:`~harness_gym.workers.OpenAIWorker` option."""
TIERED_ENV_IDS: tuple[str, ...] = tuple(f"{name}Tiered-v2" for name in TIERED_DOMAINS)
"""The registered tiered env ids."""
_NO_RHO_LIVE = "ability_correlation sets the simulated frontier tier's rho; a live frontier worker has none"


class FrontierWorker(SimulatedWorker):
    """The frontier tier's simulated worker: a ``-v2`` worker whose per-task ability shares the cheap tier's draw.

    :param profile: the frontier profile (``envs_data/profiles/v2-frontier/<domain>.json``)
    :param shared_seed: the cheap tier's ``task_ability_seed`` (whose draw ``z`` both tiers read)
    :param correlation: ``rho`` in [0, 1], the weight of the shared draw
    :param kwargs: :class:`SimulatedWorker`'s keywords
    """

    def __init__(self, profile: WorkerProfileV2, domain: str | None = None, *, shared_seed: int, correlation: float,
                 **kwargs: Any) -> None:
        super().__init__(profile, domain, **kwargs)
        if not 0.0 <= correlation <= 1.0:
            raise ValueError(f"correlation must lie in [0, 1], got {correlation}")
        self.shared_seed = int(shared_seed)
        self.correlation = float(correlation)
        self._abilities: dict[str, float] = {}

    def task_ability(self, task: Task) -> float:
        """``sd * (rho * z_shared + sqrt(1 - rho**2) * z_own)`` in log-odds."""
        got = self._abilities.get(task.task_id)
        if got is None:
            assert self._v2 is not None
            shared = task_draws(self.shared_seed, task.task_id)[0]
            own = task_draws(int(self._v2.task_ability_seed), task.task_id)[0]
            rho = self.correlation
            got = self._abilities[task.task_id] = self._v2.task_ability_sd * (
                rho * shared + math.sqrt(1.0 - rho * rho) * own)
        return got


def uses_self_check(domain: Domain) -> bool:
    """Whether CHECK on ``domain`` is the worker's self-check: the domain keeps :meth:`Domain.check`'s default (no
    structured verifier; research_qa), so the frontier tier gets its own self-check action, CHECK_FRONTIER."""
    return type(domain).check is Domain.check


def frontier_profile_path(domain: str) -> Any:
    """``envs_data/profiles/v2-frontier/<domain>.json``."""
    return data_path("profiles", "v2-frontier", f"{domain}.json")


def load_frontier(domain: str) -> tuple[WorkerProfileV2, float]:
    """The frontier profile of ``domain`` and its ``tier.ability_correlation``.

    :raises TaskFileError: for a profile that is not a ``-v2`` one, or a missing or out-of-range correlation
    """
    path = frontier_profile_path(domain)
    profile = WorkerProfile.load(path)
    if not isinstance(profile, WorkerProfileV2):
        raise TaskFileError(path, "a frontier profile must set the -v2 parameters", field="params")
    tier = require(read_json(path), "tier", dict, path=path)
    rho = require(tier, "ability_correlation", float, path=path)
    if not 0.0 <= rho <= 1.0:
        raise TaskFileError(path, f"must lie in [0, 1], got {rho}", field="tier.ability_correlation")
    return profile, rho


class TieredHarnessEnv(gym.Env[np.ndarray, np.int64]):
    """A ``-v2`` env with a cheap and a frontier tier (the module docstring gives the actions and features).

    :param base: the base env (a ``-v2`` :class:`HarnessEnv` made with ``prices=frontier_prices`` so that
        ``budget_units="auto"`` resolves at the frontier tier's prices; :func:`make_tiered` builds it)
    :param prices: the cheap tier's price profile (default ``cheap-hosted``)
    :param frontier_prices: the frontier tier's (default ``frontier-hosted``)
    :param self_check: whether the domain's CHECK is the worker's self-check (then CHECK_FRONTIER exists)
    :param frontier_worker: the frontier tier's worker (default: the simulated :class:`FrontierWorker` of the
        domain's frontier profile; a live one for ``worker="openai"``)
    :param ability_correlation: ``rho`` of the simulated frontier tier (default: its profile's
        ``tier.ability_correlation``)
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(self, base: HarnessEnv, *, prices: str | Mapping[str, Any] | PriceTable | None = None,
                 frontier_prices: str | Mapping[str, Any] | PriceTable | None = "frontier-hosted",
                 self_check: bool = False, frontier_worker: Worker | None = None,
                 ability_correlation: float | None = None) -> None:
        if ability_correlation is not None and frontier_worker is not None:
            raise ValueError(_NO_RHO_LIVE)
        if frontier_worker is None and not isinstance(base.worker, SimulatedWorker):
            raise ValueError("a tiered env with a live cheap worker needs a live frontier worker too: pass "
                             "frontier_model=... (and frontier_base_url=..., frontier_cache=...) with worker='openai'")
        self.base = base
        self.frontier_prices = price_table(frontier_prices)
        base.budget_units  # noqa: B018 -- resolve "auto" now, at the frontier tier's prices
        self.cheap_prices = price_table(prices)
        base.prices = self.cheap_prices
        domain = base.domain
        if frontier_worker is None:
            profile, rho = load_frontier(domain.name)
            rho = rho if ability_correlation is None else float(ability_correlation)
            shared_seed = int(getattr(base.worker.profile, "task_ability_seed", 0.0))
            frontier_worker = FrontierWorker(profile, domain.name, shared_seed=shared_seed, correlation=rho,
                                             tools=domain.tools, wrong_tool_calls=domain.wrong_tool_calls,
                                             prompts_dir=base._prompts_dir)
        self.frontier_worker: Worker = frontier_worker
        self.cheap_worker = base.worker
        self.ability_correlation: float | None = getattr(frontier_worker, "correlation", None)
        self.n_actions = N_ACTIONS + (3 if self_check else 2)
        self.action_space = spaces.Discrete(self.n_actions)
        self.observation_space = spaces.Box(np.concatenate([LOW, np.zeros(3, np.float32)]),
                                            np.concatenate([HIGH, np.ones(3, np.float32)]), dtype=np.float32)
        self.feature_names: tuple[str, ...] = FEATURE_NAMES + TIER_FEATURE_NAMES
        self.render_mode = base.render_mode
        self._tier_units = dict.fromkeys(TIERS, 0.0)
        self._draft_by_frontier = False

    # what policies and the rollout read of a harness env, from the base env (the tiered env's own mask and
    # features come from the methods below)
    @property
    def cost_weight(self) -> float:
        return self.base.cost_weight

    @property
    def context(self) -> Any:
        """The base env's worker context (hidden state, for oracles and tests)."""
        return self.base.context

    @property
    def task(self) -> Task:
        return self.base.task

    @property
    def domain(self) -> Any:
        return self.base.domain

    @property
    def budget(self) -> int:
        return self.base.budget

    @property
    def action_costs(self) -> Mapping[Action, int]:
        """The base actions' step costs (a frontier action costs what its base action costs)."""
        return self.base.action_costs

    @property
    def budget_units(self) -> float | None:
        return self.base.budget_units

    @property
    def prices(self) -> PriceTable:
        """The cheap tier's price table (actions 0-6; :attr:`frontier_prices` bills the frontier actions)."""
        return self.cheap_prices

    @property
    def settings(self) -> dict[str, Any]:
        """The base env's settings, with both tiers' price profiles."""
        return {**self.base.settings, "prices": self.cheap_prices.name, "frontier_prices": self.frontier_prices.name,
                "ability_correlation": self.ability_correlation}

    def _extra(self) -> np.ndarray:
        st = self.base._state
        assert st is not None
        scale = st.cost_scale
        spent = [min(self._tier_units[t] / scale, 1.0) if scale > 0 else 0.0 for t in TIERS]
        return np.array([float(self._draft_by_frontier), *spent], dtype=np.float32)

    def action_masks(self) -> np.ndarray:
        """The base mask, then each frontier action's base action's entry (for MaskablePPO)."""
        mask = self.base.action_masks()
        return np.concatenate([mask, [mask[FRONTIER_BASE[a]] for a in range(N_ACTIONS, self.n_actions)]])

    def _extend_info(self, info: dict[str, Any], tier: str | None) -> dict[str, Any]:
        info["action_mask"] = self.action_masks().astype(np.int8)
        info["tier"] = tier or ""
        info["tier_units"] = dict(self._tier_units)
        return info

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        obs, info = self.base.reset(seed=seed, options=options)
        self.frontier_worker.reset(self.base.np_random)
        pop_usage = getattr(self.frontier_worker, "pop_usage", None)
        if pop_usage is not None:
            pop_usage()  # what an unfinished earlier episode spent is not this episode's
        self._tier_units = dict.fromkeys(TIERS, 0.0)
        self._draft_by_frontier = False
        return np.concatenate([obs, self._extra()]), self._extend_info(info, None)

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)) and not (
                isinstance(action, np.ndarray) and action.shape == () and np.issubdtype(action.dtype, np.integer)):
            raise TypeError(f"action must be an int in [0, {self.n_actions}), got {type(action).__name__} {action!r}")
        index = int(action)
        if not 0 <= index < self.n_actions:
            raise ValueError(f"action must be in [0, {self.n_actions}), got {action!r}")
        frontier = index >= N_ACTIONS
        base = base_action(index)
        if frontier:
            self.base.worker, self.base.prices = self.frontier_worker, self.frontier_prices
        try:
            obs, reward, terminated, truncated, info = self.base.step(int(base))
        finally:
            self.base.worker, self.base.prices = self.cheap_worker, self.cheap_prices
        tier = TIERS[int(frontier)]
        self._tier_units[tier] += float(info["cost"]["units"])
        if not info["invalid_action"] and base in (Action.DRAFT, Action.REVISE):
            self._draft_by_frontier = frontier
        if frontier:
            info["action_name"] = f"{info['action_name']}_FRONTIER"
        return np.concatenate([obs, self._extra()]), reward, terminated, truncated, self._extend_info(info, tier)

    def render(self) -> str | None:
        return self.base.render()

    def close(self) -> None:
        self.base.close()
        super().close()


def make_tiered(base: str, base_entry_point: str, prices: str | Mapping[str, Any] | PriceTable | None = None,
                frontier_prices: str | Mapping[str, Any] | PriceTable | None = "frontier-hosted",
                ability_correlation: float | None = None, **kwargs: Any) -> TieredHarnessEnv:
    """The tiered env of ``base`` (a key of :data:`TIERED_DOMAINS`): its ``-v2`` env (``base_entry_point``, the
    registered ``module:EnvClass``) made with ``kwargs`` (the base env's keywords; ``profile`` is ``"v2"``) at
    ``frontier_prices`` for the budget, then wrapped.

    With ``worker="openai"`` the frontier tier is a second :class:`~harness_gym.workers.OpenAIWorker`, configured by
    the ``frontier_``-prefixed options (:data:`FRONTIER_OPTIONS`: ``frontier_model`` is required, ``frontier_base_url``,
    ``frontier_cache`` (its own record/replay file; ``frontier_cache_mode`` as ``cache_mode``), ...); each option
    not given is the cheap tier's (``api_key``, ``temperature``, ``max_tokens``, ``timeout_s``, ``max_retries``,
    ``backoff_s``, ``max_backoff_s``, ``prompts_dir``), except ``model``, ``base_url`` and ``cache``.

    :raises ValueError: for a base without a frontier profile, a ``profile`` keyword (the tiers fix it),
        ``frontier_`` options without ``worker="openai"``, or ``ability_correlation`` with it
    """
    if base not in TIERED_DOMAINS:
        raise ValueError(f"no tiered env for {base!r}; tiered bases: {sorted(TIERED_DOMAINS)}")
    if "profile" in kwargs:
        raise ValueError("a tiered env fixes the worker profiles (v2 and v2-frontier); do not pass profile")
    frontier_options = {key[len("frontier_"):]: kwargs.pop(key) for key in list(kwargs) if key in FRONTIER_OPTIONS}
    if frontier_options and kwargs.get("worker") != "openai":
        raise ValueError(f"{sorted('frontier_' + k for k in frontier_options)} configure a live frontier worker: "
                         "they need worker='openai'")
    if ability_correlation is not None and kwargs.get("worker") == "openai":
        raise ValueError(_NO_RHO_LIVE)
    env_class = gym.envs.registration.load_env_creator(base_entry_point)
    inner = env_class(profile="v2", prices=frontier_prices, **kwargs)
    frontier_worker = None
    if kwargs.get("worker") == "openai":
        if "model" not in frontier_options:
            raise ValueError("worker='openai' on a tiered env needs frontier_model=... (the frontier tier's model)")
        inherited = {k: v for k, v in kwargs.items() if k in OPENAI_OPTIONS and k not in ("model", "base_url", "cache",
                                                                                           "cache_mode")}
        frontier_worker = OpenAIWorker(inner.domain.name, inner.domain.tools, **{**inherited, **frontier_options})
    return TieredHarnessEnv(inner, prices=prices, frontier_prices=frontier_prices,
                            self_check=uses_self_check(inner.domain), frontier_worker=frontier_worker,
                            ability_correlation=ability_correlation)


def register_tiered(entry_points: Mapping[str, str]) -> tuple[str, ...]:
    """Register every id of :data:`TIERED_ENV_IDS` (once) and return them.

    :param entry_points: base env name -> its ``module:EnvClass`` (the package's registry of base envs)
    """
    for name, env_id in zip(TIERED_DOMAINS, TIERED_ENV_IDS):
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point="harness_gym.tiered:make_tiered", max_episode_steps=MAX_BUDGET,
                         kwargs={"base": name, "base_entry_point": entry_points[name]})
    return TIERED_ENV_IDS
