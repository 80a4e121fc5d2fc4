"""The budget rule applied to one env: the fingerprint of its configuration, its reference episodes' bills, the
rule's value at its prices and the cost budget in force, and how summaries name it.

:class:`~harness_gym.env.HarnessEnv`'s ``budget_units``, ``budget_rule``, ``settings``, ``reference_budget``,
``reference_fingerprint`` and ``reference_bills`` are these functions on the env's own configuration. Fingerprints,
bills and budgets are kept for the process (a configuration is computed once, whichever env asks).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping
from typing import Any

from harness_gym.budget import rule
from harness_gym.budget.fingerprint import fingerprint
from harness_gym.budget.references import play_reference_bills
from harness_gym.core.domain import Domain
from harness_gym.core.prices import PriceTable
from harness_gym.core.types import SPLITS
from harness_gym.workers.profile import WorkerProfile
from harness_gym.workers.prompting import PromptSet

_BUDGETS: dict[tuple[str, str], float] = {}
"""(reference fingerprint, prices digest) -> the auto cost budget, for this process"""
_REFERENCE_BILLS: dict[tuple[str, str], list[dict[str, float]]] = {}
"""(reference fingerprint, retrieval mode) -> the reference episodes' bills, for this process"""
_DOMAIN_FINGERPRINTS: weakref.WeakKeyDictionary[Domain, str] = weakref.WeakKeyDictionary()
"""domain -> fingerprint of its tasks (every split), corpus and tools"""


def resolve(spec: float | str | None, reference_budget: Callable[[], float],
            follows_published_limits: bool) -> tuple[float | None, float]:
    """(the cost budget in force, what the ``cost_spent`` feature divides by) for a ``budget_units=`` value.

    :param spec: ``budget_units`` as given: a number of units (a float), ``None`` or :data:`~rule.AUTO`
    :param reference_budget: the rule's value for the env (called only for ``None`` and ``"auto"``)
    :param follows_published_limits: whether the domain follows a published benchmark's step limits (then
        ``"auto"`` sets no cost budget)
    """
    reference = reference_budget() if spec in (None, rule.AUTO) else None
    if spec == rule.AUTO:
        budget = None if follows_published_limits or not reference else reference
    else:
        budget = spec
    assert budget is None or isinstance(budget, float)
    return budget, budget if budget is not None else float(reference or 0.0)


def in_words(spec: float | str | None, budget: float | None) -> str:
    """The cost budget in force, in words: ``"auto (rule 2): 57.3 units"``, ``"auto (rule 2): none, the published
    step limits"``, ``"none"`` or ``"12.5 units"``.

    :param spec: ``budget_units`` as given
    :param budget: the cost budget it resolved to (:func:`resolve`)
    """
    if spec == rule.AUTO:
        what = "none, the published step limits" if budget is None else f"{budget:.6g} units"
        return f"auto (rule {rule.RULE_VERSION}): {what}"
    return "none" if spec is None else f"{budget:.6g} units"


def as_asked(spec: float | str | None) -> float | str:
    """``budget_units`` as asked, as summaries record it: ``"auto (rule N)"``, ``"none"`` or the number of units.

    :param spec: ``budget_units`` as given
    """
    return f"auto (rule {rule.RULE_VERSION})" if spec == rule.AUTO else "none" if spec is None else spec


def reference_budget(env: Any) -> float:
    """The rule's value for ``env``: :data:`~rule.FACTOR` times the largest cost of its reference episodes, read from
    ``envs_data/budgets.json`` when it holds this configuration and these prices, else computed from
    ``env.reference_bills()``; kept for the process.

    :param env: a :class:`~harness_gym.env.HarnessEnv` (its ``reference_fingerprint()``, ``reference_bills()``,
        ``prices`` and ``domain``)
    """
    fingerprint_ = env.reference_fingerprint()
    prices: PriceTable = env.prices
    key = (fingerprint_, prices.digest())
    if key not in _BUDGETS:
        stored = rule.stored_budget(rule.budgets_file(), env.domain.name, fingerprint_, prices.digest())
        if stored is None:
            stored = rule.budget_from_costs([prices.units(b) for b in env.reference_bills()])
        _BUDGETS[key] = stored
    return _BUDGETS[key]


def reference_fingerprint(domain: Domain, profile: WorkerProfile | str | None, prompts_dir: Any, budget: int,
                          action_costs: Mapping[Any, int]) -> str:
    """A fingerprint of everything an env's reference episodes depend on besides the prices (:func:`fingerprint`).

    :param domain: the env's domain (its tasks of every split, corpus, tools and settings)
    :param profile: the simulated worker's profile: an instance, a JSON path, or ``None`` (the domain's default)
    :param prompts_dir: the folder of prompt files, or ``None`` (the shipped ones)
    :param budget: the step budget
    :param action_costs: action -> step-budget cost
    """
    per_domain = _DOMAIN_FINGERPRINTS.get(domain)
    if per_domain is None:
        d = domain
        per_domain = fingerprint(
            type(d).__qualname__, d.name, [d.tasks(split) for split in SPLITS], d.corpus,
            sorted(d.tools.items()),
            [d.uses_sandbox, d.tool_needs_draft, d.check_false_alarm_rate, d.relevant_looking_ratio,
             d.wrong_calls_per_call, d.success_threshold, d.follows_published_limits])
        _DOMAIN_FINGERPRINTS[domain] = per_domain
    if profile is None:
        profile = WorkerProfile.for_domain(domain.name, "v1", domain.assets_dir)
    elif not isinstance(profile, WorkerProfile):
        profile = WorkerProfile.load(profile)
    prompts = PromptSet.for_domain(domain.name, prompts_dir)
    return fingerprint(per_domain, profile, [prompts.system, prompts.templates, prompts.draft_format,
                                             prompts.self_check_specificity], budget,
                       sorted((int(a), c) for a, c in action_costs.items()), rule.SEED, rule.FACTOR)


def reference_bills(fingerprint_: str, retrieval_mode: str, make_env: Callable[[], Any]) -> list[dict[str, float]]:
    """The bills of the reference episodes (:data:`~harness_gym.budget.references.BUDGET_REFERENCES`, each once on
    every task of every split, reset seed :data:`~rule.SEED`) of a configuration, played once per process.

    :param fingerprint_: the configuration's :func:`reference_fingerprint`
    :param retrieval_mode: the prices' retrieval mode (what RETRIEVE bills depends on it)
    :param make_env: makes the env to play them in (that configuration, the simulated worker, no cost budget); it
        is closed after
    """
    key = (fingerprint_, retrieval_mode)
    if key not in _REFERENCE_BILLS:
        env = make_env()
        try:
            _REFERENCE_BILLS[key] = play_reference_bills(env, seed=rule.SEED)
        finally:
            env.close()
    return _REFERENCE_BILLS[key]
