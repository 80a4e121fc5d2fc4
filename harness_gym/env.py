"""HarnessEnv: the finite-horizon Harness MDP over a Domain, a Worker and a Sandbox (docs/harness_mdp.md).

The env is the one place where the layers meet: it sits above :mod:`harness_gym.core` (the MDP's pieces and
the Domain contract), :mod:`harness_gym.workers`, :mod:`harness_gym.sandbox` and :mod:`harness_gym.budget` (the
cost budget of ``budget_units="auto"``), none of which imports it; :mod:`harness_gym.running` (playing episodes)
and the domains' env classes sit above it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from harness_gym.budget import resolve as budget_resolve
from harness_gym.budget.rule import AUTO
from harness_gym.core.actions import DEFAULT_ACTION_COST, N_ACTIONS, Action
from harness_gym.core.cost import (
    add_bill,
    checked_bill,
    cost_info,
    estimate_tokens,
    llm_faults_info,
    step_bill,
    zero_cost,
)
from harness_gym.core.domain import Domain
from harness_gym.core.env_class import MAKE_KEYWORDS, env_keywords, is_int
from harness_gym.core.evidence import EVIDENCE_SOURCES, consistency
from harness_gym.core.info import StepInfo
from harness_gym.core.intake import accept_check, accept_confidence, accept_draft, accept_tool_call
from harness_gym.core.maturity import PATTERNS, StepRecord, episode_patterns, hms
from harness_gym.core.prices import PriceTable, price_table
from harness_gym.core.state import FEATURE_NAMES, HIGH, LOW, HarnessState, KeyCoverage, TaskSignals
from harness_gym.core.tool_calls import validate_call
from harness_gym.core.types import SPLITS, CheckResult, Context, Draft, Task, ToolResult
from harness_gym.sandbox import CACHE_MODES, SANDBOX_NAMES, ExecRecorder, Sandbox, make_sandbox
from harness_gym.workers import Usage, Worker, WorkerProfile, check_worker_options, make_worker
from harness_gym.workers.profile import PROFILE_VERSIONS
from harness_gym.workers.prompting import prompts_dir_of

PENDING = -1.0
"""Value of ``quality``, ``hms`` and every pattern in ``info`` before the episode ends (not NaN: Gymnasium's
``check_env`` compares step infos with ``data_equivalence``, where NaN != NaN; see docs/harness_mdp.md, "Info").
At the end a pattern that does not apply is NaN."""
MAX_BUDGET = 100
"""Upper bound on ``budget``; the registered ``max_episode_steps`` equals it, so the budget always ends an
episode before the time limit can."""


@dataclass
class _StepOutcome:
    """What a handled action produced, beyond the state counters it updates."""

    env_signal: float = 0.0
    knowledge: float = 0.0
    repeated_failed_tool: bool = False
    record: dict[str, Any] = field(default_factory=dict)


class UnsupportedRenderMode(TypeError, ValueError):
    """A ``render_mode`` the env does not implement (it implements ``None`` and ``"ansi"``).

    A :class:`TypeError` as well as a :class:`ValueError`: Stable-Baselines3's ``make_vec_env`` asks every env
    for ``render_mode="rgb_array"`` and, on a ``TypeError``, makes it again without a render mode, which is
    what a text env needs (docs/harness_mdp.md, "Rendering").
    """


_ACTIONS: tuple[Action, ...] = tuple(sorted(Action))
"""Every action, indexed by its id."""

RESET_OPTIONS: tuple[str, ...] = ("task_id", "split")
"""The keys ``reset(options=...)`` understands; any other raises."""


def _pending_patterns() -> dict[str, float]:
    return dict.fromkeys(PATTERNS, PENDING)


class HarnessEnv(gym.Env[np.ndarray, np.int64]):
    """The Harness MDP shared by every domain; each registered env is a thin subclass naming its domain.

    The env owns everything that lives for one episode: the task, the :class:`Context`, the state counters and
    the domain's episode resource (:meth:`Domain.begin_episode` at ``reset``, :meth:`Domain.end_episode` at
    the next ``reset`` or ``close``). The domain itself may be shared with other envs (see :class:`Domain`).

    :param domain: the task family (data, tools, checker, grader)
    :param split: which tasks ``reset`` draws from unless ``options["split"]`` says otherwise
    :param budget: the step budget per episode (each action spends at least 1, see :data:`DEFAULT_ACTION_COST`);
        it bounds the episode's length, it is not what the episode costs (that is ``info["cost"]``)
    :param cost_weight: weight of the metered cost in the reward: every step's reward is
        ``-cost_weight * info["cost"]["units"]``, plus the quality Q on the last step, so an episode's return is
        ``Q - cost_weight * total units`` (default 0: the terminal quality alone; see :mod:`harness_gym.core.cost`)
    :param prices: the price profile of the cost units (docs/cost.md): a name ``BASE[+OVERLAY...]`` such as
        ``"cheap-hosted"`` (the default), ``"frontier-hosted"``, ``"self-hosted"``, ``"cheap-hosted+web-search"``,
        a dict of item -> US$ over the default profile, or a :class:`~harness_gym.core.prices.PriceTable`
    :param budget_units: the cost budget per episode, in cost units: a number > 0, ``None`` (no cost budget) or
        ``"auto"`` (the default, :mod:`harness_gym.budget.rule`: in a controlled domain twice the largest episode
        cost of the reference controllers at this env's prices, so that no named harness and not the oracle is ever
        cut; in a public-benchmark adapter no cost budget, as the published benchmarks have step limits only;
        precomputed for the shipped profiles, else computed on the first ``reset`` and kept for the process; no
        budget when the reference episodes cost nothing at these prices).
        When a step brings the spent units to the budget, the episode ends with a forced submit
        (``info["forced_submit"]``), as when the step budget runs out
    :param worker: ``"simulated"`` or a :class:`~harness_gym.workers.Worker` instance
    :param profile: worker profile: an instance, a JSON path, or the name of a shipped set, ``"v1"`` (the default,
        ``envs_data/profiles/<domain>.json``) or ``"v2"`` (``envs_data/profiles/v2/<domain>.json``, the worker pinned to
        the fidelity cards, which the ``-v2`` ids pass)
    :param sandbox: ``"process"``, ``"docker"`` or a :class:`~harness_gym.sandbox.Sandbox`; only opened
        when the domain runs code. A sandbox made from a name caches completed executions as ``exec_cache``
        says; ``info["exec_cached"]`` says when a job of the step was served from the cache (read from this
        env's own results, :attr:`~harness_gym.sandbox.ExecResult.cached`)
    :param exec_cache: the execution-result cache of a sandbox made from a name (docs/harness_mdp.md,
        "Sandboxes"): ``True`` or ``"disk"`` (the default: in memory, then on disk, shared by every process
        and kept across runs), ``"memory"`` (this process only) or ``False`` (none: every job runs). A result
        is keyed by the job's code, files, stdin and limits, the preloaded modules, the isolation in force, the
        package version and the cache format; only jobs that ran to completion are kept. The folder is
        ``$HARNESS_GYM_CACHE_DIR``, else ``$XDG_CACHE_HOME/harness-gym/exec``, else ``~/.cache/harness-gym/exec``
        (512 MiB at most, the least recently used results pruned first; delete the folder to clear it).
        ``cache=False`` (or ``True``, ``"disk"``, ``"memory"``) is the same setting; ``cache=PATH`` is
        ``worker="openai"``'s record/replay file
    :param action_costs: override of the per-action budget cost
    :param render_mode: ``None`` or ``"ansi"`` (any other mode raises :class:`UnsupportedRenderMode`)
    :param worker_options: keyword arguments of the named worker. Both take ``prompts_dir``, the folder of
        prompt files (default ``envs_data/prompts``; the domain's ``<name>.json`` must be there);
        ``worker="openai"`` also takes ``base_url``, ``model``, ``api_key``, ``temperature``, ``max_tokens``,
        ``timeout_s``, ``max_retries``, ``cache`` (a SQLite record/replay file), ``cache_mode`` (``"off"``,
        ``"record"``, ``"replay"``, ``"auto"``), ``backoff_s``, ``max_backoff_s`` (see
        :class:`~harness_gym.workers.OpenAIWorker` and ``docs/llm_worker.md``)
    :param require_isolation: for a sandbox made from a name: refuse to run code with weaker isolation than
        bubblewrap (or a container); default the ``HG_REQUIRE_ISOLATION`` environment variable
    :raises TypeError: for a keyword the env and its worker do not take, one line naming it and the closest
        accepted ones (``got an unexpected keyword argument 'budgett'; did you mean 'budget'?``), or naming the
        worker that takes it (``model`` without ``worker="openai"``); and for arguments of the wrong type
    :raises ValueError: for arguments out of range
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(
        self,
        domain: Domain,
        *,
        split: str = "train",
        budget: int = 30,
        cost_weight: float = 0.0,
        prices: str | Mapping[str, Any] | PriceTable | None = None,
        budget_units: float | str | None = AUTO,
        worker: str | Worker = "simulated",
        profile: WorkerProfile | str | None = None,
        sandbox: str | Sandbox = "process",
        exec_cache: bool | str = True,
        action_costs: Mapping[int, int] | None = None,
        render_mode: str | None = None,
        require_isolation: bool | None = None,
        **worker_options: Any,
    ) -> None:
        given_cache = worker_options.get("cache")
        if isinstance(given_cache, bool) or given_cache in ("disk", "memory"):
            # cache=True|False|"disk"|"memory" is the execution-result cache (a record/replay file is a path)
            if exec_cache is not True:
                raise TypeError(f"{type(self).__name__}.__init__() got both cache={given_cache!r} and "
                                f"exec_cache={exec_cache!r}; give one")
            exec_cache = worker_options.pop("cache")
        check_worker_options(worker, worker_options, f"{type(self).__name__}.__init__",
                             (*env_keywords(type(self), HarnessEnv), *MAKE_KEYWORDS))
        if split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
        if not is_int(budget):
            raise TypeError(f"budget must be an int, got {type(budget).__name__} {budget!r}")
        if not 1 <= int(budget) <= MAX_BUDGET:
            raise ValueError(f"budget must be in [1, {MAX_BUDGET}], got {budget}")
        if isinstance(cost_weight, bool) or not isinstance(cost_weight, (int, float, np.integer, np.floating)):
            raise TypeError(f"cost_weight must be a number, got {type(cost_weight).__name__} {cost_weight!r}")
        if not math.isfinite(float(cost_weight)) or float(cost_weight) < 0:
            raise ValueError(f"cost_weight must be finite and >= 0, got {cost_weight}")
        if isinstance(sandbox, str) and sandbox not in SANDBOX_NAMES:
            raise ValueError(f"unknown sandbox {sandbox!r}; choose one of {SANDBOX_NAMES} or pass a Sandbox")
        if not isinstance(sandbox, str) and not isinstance(sandbox, Sandbox):
            raise TypeError(f"sandbox must be a name or a Sandbox, got {type(sandbox).__name__}")
        if not any(exec_cache is mode if isinstance(mode, bool) else exec_cache == mode for mode in CACHE_MODES):
            raise ValueError(f"exec_cache must be True or 'disk' (memory + disk), 'memory' (this process only) or "
                             f"False (no result cache), got {exec_cache!r}")
        if action_costs is not None and not all(is_int(a) and is_int(c) for a, c in action_costs.items()):
            raise TypeError(f"action_costs must map action ints to int costs, got {dict(action_costs)!r}")
        if action_costs is not None and not set(action_costs) <= set(range(N_ACTIONS)):
            raise ValueError(f"action_costs has unknown actions {sorted(set(action_costs) - set(range(N_ACTIONS)))}")
        if require_isolation is not None and not isinstance(require_isolation, (bool, np.bool_)):
            raise TypeError(f"require_isolation must be a bool or None, got {type(require_isolation).__name__} "
                            f"{require_isolation!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise UnsupportedRenderMode(f"render_mode must be None or 'ansi', got {render_mode!r}")
        costs = {Action(a): int(c) for a, c in (action_costs or DEFAULT_ACTION_COST).items()}
        if set(costs) != set(Action) or min(costs.values()) < 1:
            raise ValueError("action_costs must give every action a cost >= 1")
        if not domain.tasks(split):
            raise ValueError(f"{domain.name}: split {split!r} has no tasks")
        if budget_units is not None and budget_units != AUTO:
            if isinstance(budget_units, bool) or not isinstance(budget_units, (int, float, np.integer, np.floating)):
                raise TypeError(f"budget_units must be a number, None or 'auto', got {type(budget_units).__name__} "
                                f"{budget_units!r}")
            if not math.isfinite(float(budget_units)) or float(budget_units) <= 0:
                raise ValueError(f"budget_units must be finite and > 0 (or None, or 'auto'), got {budget_units}")
        table = price_table(prices)
        for tool in domain.tools.values():
            table.check_items(tool.bills, f"{domain.name}: tool {tool.name!r}")

        self.domain = domain
        self.split = split
        self.budget = int(budget)
        self.cost_weight = float(cost_weight)
        self.prices = table
        self._budget_units_spec: float | str | None = (budget_units if budget_units in (None, AUTO)
                                                       else float(budget_units))
        self._resolved_budget: tuple[float | None, float] | None = None
        # a shipped profile set's name ("v1", "v2": what the -v2 ids pass) is read here, so that everything below
        # (the worker, the budget's fingerprint) sees the profile itself
        self._profile_spec = (WorkerProfile.for_domain(domain.name, profile, domain.assets_dir)
                              if isinstance(profile, str) and profile in PROFILE_VERSIONS else profile)
        self._prompts_dir = worker_options.get("prompts_dir", prompts_dir_of(domain.assets_dir))
        self.action_costs = costs
        self.render_mode = render_mode
        self.worker: Worker = make_worker(worker, domain.name, self._profile_spec, tools=domain.tools, options=worker_options,
                                          wrong_tool_calls=domain.wrong_tool_calls, assets_dir=domain.assets_dir)
        self._sandbox_spec = sandbox
        self._exec_cache: bool | str = exec_cache if isinstance(exec_cache, str) else bool(exec_cache)
        self._require_isolation = require_isolation
        self._sandbox: ExecRecorder | None = None

        self.action_space = spaces.Discrete(N_ACTIONS)
        self.observation_space = spaces.Box(LOW, HIGH, dtype=np.float32)
        self.feature_names: tuple[str, ...] = FEATURE_NAMES

        self._task: Task | None = None
        self._ctx: Context | None = None
        self._state: HarnessState | None = None
        self._trace: list[StepRecord] = []
        self._last_text = ""
        self._done = False
        self._resource: Any = None
        self._resource_task: Task | None = None
        self._signals: dict[str, tuple[Task, TaskSignals]] = {}
        self._action_bill: dict[str, float] = {}
        self._episode_bill: dict[str, float] = {}
        self._step_llm_faults: dict[str, int] = {}  # the last step's Usage.faults, for its info

    # ----- helpers -----------------------------------------------------------------------------------
    @property
    def sandbox(self) -> Sandbox | None:
        """The sandbox, opened on first use; ``None`` for domains that run no code."""
        recorder = self._recorder
        return recorder.inner if recorder is not None else None

    @property
    def _recorder(self) -> ExecRecorder | None:
        """The sandbox as the domain's hooks get it: wrapped to note which results came from the cache."""
        if self._sandbox is None and self.domain.uses_sandbox:
            spec = self._sandbox_spec
            inner = (make_sandbox(spec, cache=self._exec_cache, require_isolation=self._require_isolation,
                                  **self.domain.sandbox_options) if isinstance(spec, str) else make_sandbox(spec))
            self._sandbox = ExecRecorder(inner)
        return self._sandbox

    def _end_episode(self) -> None:
        """Hand the episode resource back to the domain (idempotent)."""
        if self._resource_task is not None:
            resource, task = self._resource, self._resource_task
            self._resource, self._resource_task = None, None
            self.domain.end_episode(task, resource)

    @property
    def context(self) -> Context:
        """The worker's context (hidden state: for oracles, analysis and tests, never the controller)."""
        if self._ctx is None:
            raise RuntimeError("call reset() first")
        return self._ctx

    @property
    def task(self) -> Task:
        if self._task is None:
            raise RuntimeError("call reset() first")
        return self._task

    def _pick_task(self, options: dict[str, Any] | None) -> Task:
        options = options or {}
        if "task_id" in options and options["task_id"] is not None:
            return self.domain.task(str(options["task_id"]))
        split = options.get("split", self.split)
        tasks = self.domain.tasks(split)
        if not tasks:
            raise ValueError(f"{self.domain.name}: split {split!r} has no tasks")
        return tasks[int(self.np_random.integers(len(tasks)))]

    def action_masks(self) -> np.ndarray:
        """Boolean mask of applicable actions (for sb3-contrib's MaskablePPO); only defined after ``reset()``.

        The same values are in every reset's and step's ``info["action_mask"]`` (as ``np.int8``, Gymnasium's
        convention). Through ``gym.make``'s wrappers call ``env.get_wrapper_attr("action_masks")()`` or
        ``env.unwrapped.action_masks()``; on a vector env ``env_method("action_masks")``."""
        if self._ctx is None or self._state is None:
            raise RuntimeError("action_masks() before reset(): the applicable actions depend on the task; "
                               "call reset() first")
        return self._applicable(self._ctx, self._state)

    def _applicable(self, ctx: Context, st: HarnessState) -> np.ndarray:
        """The action mask of a context and state: what the controller could know, never hidden task fields."""
        return np.array(self._applicable_list(ctx, st), dtype=bool)

    def _applicable_list(self, ctx: Context, st: HarnessState) -> list[bool]:
        """:meth:`_applicable` as a list, in action order (DRAFT is always applicable)."""
        domain = self.domain
        can_observe = not st.observations_exhausted
        can_retrieve = len(ctx.retrieved) < len(domain.corpus)
        draft = ctx.draft
        # TOOL: what the controller knows is that the domain has tools (never whether this task needs them)
        if draft is None:
            return [can_observe, can_retrieve, bool(domain.tools) and not domain.tool_needs_draft, True, False, False,
                    False]
        return [can_observe, can_retrieve, bool(domain.tools), True, True,
                self._revise_feedback(ctx, st) is not None, True]

    def _revise_feedback(self, ctx: Context, st: HarnessState) -> CheckResult | None:
        """Feedback a revision can act on: the current draft's check result, or its last tool error."""
        assert ctx.draft is not None
        if ctx.last_check is not None and ctx.checked_version == ctx.draft.version:
            return ctx.last_check
        if ctx.tool_history and self.domain.tool_needs_draft:
            call, res = ctx.tool_history[-1]
            if not res.ok and st.tool_version == ctx.draft.version:
                return CheckResult(passed=False, feedback=res.error, specificity=0.5)
        return None

    def _info(self, action: Action | None, *, invalid: bool = False, forced: bool = False,
              evidence: dict[str, float] | None = None, cached: bool = False,
              cost: dict[str, int | float] | None = None, llm_faults: dict[str, int] | None = None) -> StepInfo:
        ctx, st, task = self._ctx, self._state, self._task
        assert ctx is not None and st is not None and task is not None
        return StepInfo(
            action_name=action.name if action is not None else "",
            action_mask=np.array(self._applicable_list(ctx, st), dtype=np.int8),
            invalid_action=invalid,
            forced_submit=forced,
            quality=PENDING,
            success=False,
            hms=PENDING,
            patterns=_pending_patterns(),
            evidence=evidence if evidence is not None else dict.fromkeys(EVIDENCE_SOURCES, 0.0),
            task_id=task.task_id,
            split=task.split,
            budget_left=int(max(st.budget_left, 0)),
            draft_version=int(ctx.draft.version) if ctx.draft is not None else 0,
            exec_cached=cached,
            cost=cost if cost is not None else zero_cost(),
            llm_faults=llm_faults if llm_faults is not None else llm_faults_info(),
        )

    def _bill(self, bill: Mapping[str, Any] | None, where: str) -> None:
        """Add what the step's action billed (checked against the price table) to the step's bill."""
        add_bill(self._action_bill, checked_bill(bill, self.prices, where))

    def _cost(self) -> dict[str, int | float]:
        """``info["cost"]`` of the step (:mod:`harness_gym.core.cost`): the worker's model calls since the last
        step, the sandbox jobs the step ran and what its action billed, priced at :attr:`prices`; added to the
        episode's bill and to the units spent."""
        pop_usage = getattr(self.worker, "pop_usage", None)
        usage = pop_usage() if pop_usage is not None else Usage()
        jobs = self._sandbox.jobs if self._sandbox is not None else 0
        bill = step_bill(self.prices, prompt_tokens=usage.prompt_tokens, completion_tokens=usage.completion_tokens,
                         sandbox_jobs=jobs, actions=self._action_bill)
        add_bill(self._episode_bill, bill)
        cost = cost_info(usage.as_dict(), jobs, self.prices, bill)
        assert self._state is not None
        self._state.spent_units += cost["units"]
        self._step_llm_faults = usage.faults
        return cost

    @property
    def episode_bill(self) -> Mapping[str, float]:
        """Everything the episode has billed so far, billable item -> quantity (a read-only view)."""
        return MappingProxyType(self._episode_bill)

    # ----- the cost budget ---------------------------------------------------------------------------
    @property
    def budget_units(self) -> float | None:
        """The episode's cost budget in units (``None``: none); ``"auto"`` is resolved here, on first use."""
        return self._budget()[0]

    def _budget(self) -> tuple[float | None, float]:
        """(the cost budget, what ``cost_spent`` divides by), resolved once."""
        if self._resolved_budget is None:
            self._resolved_budget = budget_resolve.resolve(self._budget_units_spec, self.reference_budget,
                                                           self.domain.follows_published_limits)
        return self._resolved_budget

    @property
    def budget_rule(self) -> str:
        """Which cost budget is in force, in words: ``"auto (rule 2): 57.3 units"``, ``"auto (rule 2): none, the
        published step limits"``, ``"none"`` or ``"12.5 units"`` (written into every summary)."""
        return budget_resolve.in_words(self._budget_units_spec, self.budget_units)

    @property
    def settings(self) -> dict[str, Any]:
        """The settings that decide what an episode costs and returns, as every summary records them: the price
        profile's name, the cost budget as asked (``budget_spec``: ``"auto (rule N)"``, ``"none"`` or the number
        of units given) and as in force (:attr:`budget_rule` in words, ``budget_units``: a number or ``None``),
        and the cost weight."""
        return {"prices": self.prices.name, "budget_spec": budget_resolve.as_asked(self._budget_units_spec),
                "budget": self.budget_rule, "budget_units": self.budget_units, "cost_weight": float(self.cost_weight)}

    def reference_budget(self) -> float:
        """The rule's value for this env (:mod:`harness_gym.budget.rule`): :data:`~harness_gym.budget.rule.FACTOR`
        times the largest cost of the reference controllers' episodes, read from ``envs_data/budgets.json`` when
        it holds this configuration and these prices, else computed by playing them and kept for the process. 0
        when nothing the reference episodes do is priced. The cost budget of ``"auto"`` in a controlled
        domain, and the scale of the ``cost_spent`` feature everywhere."""
        return budget_resolve.reference_budget(self)

    def reference_fingerprint(self) -> str:
        """A fingerprint of everything the reference episodes depend on besides the prices: the domain's tasks,
        corpus and tools, the simulated worker's profile and prompts, the step budget and the action costs
        (:func:`~harness_gym.budget.fingerprint.fingerprint`)."""
        return budget_resolve.reference_fingerprint(self.domain, self._profile_spec, self._prompts_dir, self.budget,
                                                    self.action_costs)

    def reference_bills(self) -> list[dict[str, float]]:
        """The bills of the reference episodes (:data:`harness_gym.budget.references.BUDGET_REFERENCES`, each once on
        every task of every split, reset seed :data:`~harness_gym.budget.rule.SEED`) in this env's configuration
        and retrieval mode (simulated worker, no cost budget), computed once per process."""
        return budget_resolve.reference_bills(self.reference_fingerprint(), self.prices.retrieval_mode,
                                              self._reference_env)

    def _reference_env(self) -> HarnessEnv:
        """A fresh env of this configuration to play the reference episodes in: the simulated worker, no cost budget."""
        options = {"prompts_dir": self._prompts_dir} if self._prompts_dir is not None else {}
        env = HarnessEnv(self.domain, split=self.split, budget=self.budget, prices=self.prices, budget_units=None,
                         worker="simulated", profile=self._profile_spec, sandbox=self._sandbox_spec,
                         action_costs=self.action_costs, require_isolation=self._require_isolation, **options)
        env._resolved_budget = (None, 0.0)  # the reference env itself has no budget to resolve
        return env

    def _task_signals(self, task: Task) -> TaskSignals:
        """The task's visible signals (the domain's hooks), read once per task id."""
        cached = self._signals.get(task.task_id)
        if cached is None or cached[0] is not task:
            signals = TaskSignals(tuple(self.domain.task_keys(task)), int(self.domain.n_visible_checks(task)),
                                  int(self.domain.input_size(task)))
            cached = self._signals[task.task_id] = (task, signals)
        return cached[1]

    # ----- Gymnasium API -----------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        if options is not None:
            if not isinstance(options, Mapping):
                raise TypeError(f"options must be a dict, got {type(options).__name__}")
            unknown = sorted(map(str, set(options) - set(RESET_OPTIONS)))
            if unknown:
                raise ValueError(f"unknown reset option(s) {unknown}; known: {list(RESET_OPTIONS)}")
            if "split" in options and options["split"] not in SPLITS:
                raise ValueError(f"options['split'] must be one of {SPLITS}, got {options['split']!r}")
        if seed is not None and not is_int(seed):
            raise TypeError(f"seed must be an int or None, got {type(seed).__name__} {seed!r}")
        super().reset(seed=None if seed is None else int(seed))
        self._end_episode()
        self._task = self._pick_task(options)
        self._resource = self.domain.begin_episode(self._task)
        self._resource_task = self._task
        self._ctx = Context(task=self._task)
        budget_units, cost_scale = self._budget()
        signals = self._task_signals(self._task)
        self._state = HarnessState(ctx=self._ctx, budget=self.budget, budget_left=self.budget, signals=signals,
                                   budget_units=budget_units, cost_scale=cost_scale,
                                   coverage=KeyCoverage(signals.keys))
        self._trace = []
        self._episode_bill = {}
        self._done = False
        self.worker.reset(self.np_random)
        pop_usage = getattr(self.worker, "pop_usage", None)
        if pop_usage is not None:
            pop_usage()  # what an unfinished earlier episode spent is not this episode's
        self._last_text = f"task {self._task.task_id}: {self._task.prompt[:200]}"
        return self._state.encode(), self._info(None)

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        if self._ctx is None or self._state is None:
            raise RuntimeError("call reset() before step()")
        if self._done:
            raise RuntimeError("episode is over; call reset()")
        if type(action) is not int and not is_int(action):
            raise TypeError(f"action must be an int in [0, {N_ACTIONS}), got {type(action).__name__} {action!r}")
        index = int(action)
        if not 0 <= index < N_ACTIONS:
            raise ValueError(f"action must be in [0, {N_ACTIONS}), got {action!r}")
        act = _ACTIONS[index]
        ctx, st = self._ctx, self._state

        valid = self._applicable_list(ctx, st)[index]
        draft = ctx.draft
        checked_before = draft is not None and ctx.checked_version == draft.version
        last_check_before = st.last_check
        any_evidence = bool(ctx.observed or ctx.retrieved or any(res.ok for _, res in ctx.tool_history))
        conf_before = st.confidence
        if self._sandbox is not None:
            self._sandbox.start()
        self._action_bill = {}
        outcome = _StepOutcome()
        if not valid:
            st.n_invalid += 1
            self._last_text = f"{act.name}: not applicable (no-op)"
        else:
            self._HANDLERS[act](self, outcome)

        st.budget_left -= self.action_costs[act]
        st.steps += 1
        cost = self._cost()
        submitted = valid and index == Action.SUBMIT
        forced = not submitted and (st.budget_left <= 0 or st.cost_exhausted)
        evidence = {
            "env": outcome.env_signal,
            "consistency": consistency(act, valid=valid, checked_current=checked_before,
                                       last_check=last_check_before, any_evidence=any_evidence,
                                       repeated_failed_tool=outcome.repeated_failed_tool),
            "knowledge": outcome.knowledge,
            "self": st.confidence - conf_before,
        }
        self._trace.append(StepRecord(action=act, valid=valid, draft_version=st.draft_version, **outcome.record))
        st.last_action = int(act)

        terminated = submitted or forced
        quality = 0.0
        if terminated:
            quality = self._grade()
            evidence["env"] = quality
            patterns = episode_patterns(self._trace, ctx.draft.version if ctx.draft else 0,
                                        ctx.draft is not None and ctx.checked_version == ctx.draft.version)
        info = self._info(act, invalid=not valid, forced=forced, evidence=evidence,
                          cached=self._sandbox is not None and self._sandbox.served_from_cache, cost=cost,
                          llm_faults=llm_faults_info(self._step_llm_faults))
        reward = -self.cost_weight * cost["units"] + quality
        if terminated:
            info.update(quality=quality, success=quality >= self.domain.success_threshold, hms=hms(patterns),
                        patterns=patterns)
            spent = "step budget" if st.budget_left <= 0 else "cost budget"
            self._last_text += (f" | {spent} exhausted: forced SUBMIT" if forced else "") + f" -> quality {quality:.3f}"
            self._done = True
        return st.encode(), float(reward), terminated, False, info

    # ----- action handlers: each runs a valid action and records what the step produced -------------------
    def _observe(self, out: _StepOutcome) -> None:
        ctx = self.context
        got = self.domain.observe(ctx.task, ctx)
        assert got is not None
        idx, text = got
        ctx.observed.append(idx)
        self._bill(self.domain.observe_bill(ctx.task, idx), f"{self.domain.name}: observe_bill of observation {idx}")
        assert self._state is not None
        self._state.gather(text)
        self._last_text = f"OBSERVE: {text}"

    def _retrieve(self, out: _StepOutcome) -> None:
        ctx, st = self.context, self._state
        hit = self.domain.retrieve(ctx.task, ctx)
        assert hit is not None and st is not None
        doc = hit.document
        ctx.retrieved.append(doc.doc_id)
        ctx.documents.append(doc)
        st.n_relevant_looking += int(hit.looks_relevant)
        st.last_retrieval = (float(hit.score_share), float(hit.gap_share))
        st.gather(f"{doc.title}\n{doc.text}")
        self._bill(self.prices.retrieval_bill(estimate_tokens(hit.query or self.domain.query(ctx.task))), "RETRIEVE")
        self._last_text = f"RETRIEVE: [{doc.doc_id}] {doc.title}"

    def _tool(self, out: _StepOutcome) -> None:
        ctx, st = self.context, self._state
        assert st is not None
        call, malformed = accept_tool_call(self.worker.propose_tool_call(ctx))
        if ctx.tool_history:
            prev_call, prev_res = ctx.tool_history[-1]
            out.repeated_failed_tool = (not prev_res.ok and st.last_action == Action.TOOL
                                        and prev_call.key() == call.key())
        if malformed:
            result = ToolResult(ok=False, output="", error=malformed)
        else:
            result = self.domain.run_tool(ctx.task, call, ctx, self._recorder, resource=self._resource)
        ctx.tool_history.append((call, result))
        st.tool_version = ctx.draft.version if ctx.draft is not None else -1
        if result.billed is not None:
            self._bill(result.billed, f"{self.domain.name}: the result of tool {call.name!r}")
        elif result.ok or not validate_call(self.domain.tools, call):  # a call the schema rejects is never sent
            self._bill(self.domain.tools[call.name].bills, f"{self.domain.name}: tool {call.name!r}")
        st.last_tool_answers = 1 if self.domain.tool_answers(ctx.task, call, result) else -1
        st.gather(result.output)
        if result.ok:
            out.env_signal = 0.05 if result.ran_code else 0.0
        else:
            out.env_signal = -0.1
        out.knowledge = self.domain.knowledge_signal(ctx.task, ctx, call)
        out.record.update(tool_key=call.key(), tool_ok=result.ok)
        self._last_text = f"TOOL {call.name}({dict(call.args)}) -> " + (
            result.output[:200] if result.ok else f"ERROR {result.error[:200]}")

    def _draft(self, out: _StepOutcome) -> None:
        ctx = self.context
        self._set_draft(accept_draft(self.worker.draft(ctx), ctx.draft, len(ctx.task.candidates)), out, "DRAFT")

    def _revise(self, out: _StepOutcome) -> None:
        ctx, st = self.context, self._state
        assert ctx.draft is not None and st is not None
        feedback = self._revise_feedback(ctx, st)
        assert feedback is not None
        st.n_revisions += 1
        revised = self.worker.revise(ctx, ctx.draft, feedback)
        self._set_draft(accept_draft(revised, ctx.draft, len(ctx.task.candidates)), out, "REVISE")

    def _set_draft(self, draft: Draft, out: _StepOutcome, label: str) -> None:
        ctx, st = self.context, self._state
        assert st is not None
        ctx.draft = draft
        st.confidence = accept_confidence(self.worker.confidence(ctx, draft))
        out.knowledge = self.domain.knowledge_signal(ctx.task, ctx)
        self._last_text = f"{label}: version {draft.version}"

    def _check(self, out: _StepOutcome) -> None:
        ctx, st = self.context, self._state
        assert ctx.draft is not None and st is not None
        redundant = ctx.checked_version == ctx.draft.version  # this very draft version was checked already
        result = self.domain.check(ctx.task, ctx.draft, self._recorder, resource=self._resource)
        if result is None:
            result = accept_check(self.worker.self_check(ctx, ctx.draft))
        else:
            self._bill(result.billed, f"{self.domain.name}: the check of task {ctx.task.task_id}")
            if result.passed and self.domain.check_false_alarm_rate > 0 and (
                    self.np_random.random() < self.domain.check_false_alarm_rate):
                result = CheckResult(passed=False, specificity=0.0,
                                     feedback="the check did not complete (a step failed without naming a fault)")
        out.record.update(check_passed=result.passed, redundant_check=redundant)
        ctx.last_check = result
        ctx.checked_version = ctx.draft.version
        st.n_checks += 1
        self._last_text = f"CHECK: {'pass' if result.passed else 'FAIL'}: {result.feedback[:200]}"

    def _submit(self, out: _StepOutcome) -> None:
        self._last_text = "SUBMIT"

    _HANDLERS: ClassVar[dict[Action, Callable[[HarnessEnv, _StepOutcome], None]]] = {
        Action.OBSERVE: _observe, Action.RETRIEVE: _retrieve, Action.TOOL: _tool, Action.DRAFT: _draft,
        Action.CHECK: _check, Action.REVISE: _revise, Action.SUBMIT: _submit}
    """Each action's handler: it runs the (valid) action and records what the step produced in the outcome."""

    def grade_draft(self, task: Task, draft: Draft, sandbox: Sandbox | None, *, resource: Any = None) -> float:
        """The hidden quality of the submitted ``draft``: the domain's grader (:meth:`Domain.grade`). An env
        overrides it to grade under a setting of its own (τ-bench retail's output match) or to keep more of the
        grading for its ``info``; whatever it returns is checked to be a number in [0, 1].

        :param task: the episode's task
        :param draft: the draft being graded (never ``None``: no draft is quality 0 without grading)
        :param sandbox: where the grader runs code (its jobs are not metered), ``None`` for a domain without one
        :param resource: the episode resource (:meth:`Domain.begin_episode`)
        """
        return self.domain.grade(task, draft, sandbox, resource=resource)

    def _grade(self) -> float:
        ctx = self._ctx
        assert ctx is not None
        if ctx.draft is None:
            return 0.0
        recorder = self._recorder
        if recorder is not None:
            recorder.metering = False  # the hidden grader's jobs are evaluation, not what the harness spends
        try:
            quality = float(self.grade_draft(self.task, ctx.draft, recorder, resource=self._resource))
        finally:
            if recorder is not None:
                recorder.metering = True
        if math.isnan(quality) or not 0.0 <= quality <= 1.0:
            raise RuntimeError(f"{self.domain.name}: grader returned {quality} for task {self.task.task_id}")
        return quality

    def render(self) -> str | None:
        if self.render_mode == "ansi":
            return self._last_text
        return None

    def close(self) -> None:
        """End the open episode (the domain releases its resource) and close a sandbox this env opened.
        The domain is not closed: other envs may share it."""
        self._end_episode()
        if self._sandbox is not None and isinstance(self._sandbox_spec, str):
            self._sandbox.close()
        self._sandbox = None
        super().close()
