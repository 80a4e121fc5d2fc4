"""The budget rule in cost units and the precomputed budgets of the shipped profiles (``envs_data/budgets.json``).

The rule (docs/cost.md, "Budget"), fixed before any learned run. The cost budget is a cap that leaves every task
solvable: it must never cut the upper reference, a public benchmark's gold plan or a named script.

- **Public-benchmark adapters** (a domain whose :attr:`~harness_gym.core.domain.Domain.follows_published_limits`
  is true: τ-bench retail, AgentBench DB-Bench): ``budget_units="auto"`` is **no cost budget**. The published
  benchmarks bound an episode by its steps, not its cost, and the adapters follow them (the step budget).
- **Controlled domains**: ``budget_units="auto"`` is :data:`FACTOR` times the **largest** episode cost of the
  reference controllers (:data:`harness_gym.budget.references.BUDGET_REFERENCES`: static, forced-check, thorough and
  the oracle), each played once on every task of every split (reset with seed :data:`SEED`), with the
  simulated worker, at the env's price profile.

Either way the same value (``FACTOR`` x the largest reference cost) scales the ``cost_spent`` feature, so that
feature means the same in both kinds of env. The shipped profiles' values are precomputed by
``python -m harness_gym.budget``; each entry carries the fingerprint of what it was computed from (tasks,
corpus, tools, worker profile, prompts, step budget) and the digest of its prices, so an env whose
configuration differs computes its own on first use.

Rule 1 (before 2026-12-07: twice the median cost of the forced-check sequence over 100 train episodes) cut the
oracle in 7-61% of episodes and the τ-bench gold plans in about half; its numbers are in docs/cost.md.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from harness_gym.core.paths import data_path

AUTO = "auto"
"""``budget_units="auto"``: the cost budget of this rule."""

RULE_VERSION = 2
"""Bumped whenever the reference controllers, their episodes or the env's billing change, so that every stored
budget is stale."""
SEED = 0
"""The reset seed of every reference episode."""
FACTOR = 2.0
"""The margin over the largest reference episode cost."""
RULE = (f"controlled domains: budget_units = {FACTOR:g} x the largest episode cost of the reference controllers "
        "(static, forced-check, thorough, oracle), each played once on every task of every split (reset seed "
        f"{SEED}), simulated worker, at the env's price profile; public-benchmark adapters (tau-bench retail, "
        "AgentBench DB-Bench): no cost budget, the published step limits only")
"""The rule in words (written into ``budgets.json``)."""


def budgets_file() -> Path:
    """Where the precomputed budgets of the shipped profiles live (``envs_data/budgets.json``)."""
    return data_path("budgets.json")


def budget_from_costs(costs: list[float]) -> float:
    """:data:`FACTOR` times the largest of the reference episodes' costs.

    :param costs: the cost (units) of each reference episode
    """
    if not costs:
        raise ValueError("no reference episodes to take a budget from")
    return FACTOR * max(costs)


@lru_cache(maxsize=4)
def _load(path: str, mtime_ns: int) -> dict[str, Any]:
    raw = json.loads(Path(path).read_text())
    if not isinstance(raw, dict) or not isinstance(raw.get("envs"), dict):
        raise ValueError(f"{path}: expected an object with 'envs' (written by python -m harness_gym.budget)")
    return raw


def stored_budget(path: Path, domain: str, data_fingerprint: str, prices_digest: str) -> float | None:
    """The budget ``budgets.json`` stores for this domain configuration and these prices, or ``None`` when it
    stores none (another configuration, other prices, or no file).

    :param path: the budgets file
    :param domain: the domain's name
    :param data_fingerprint: the fingerprint of the configuration (:func:`~harness_gym.budget.fingerprint.fingerprint`)
    :param prices_digest: :meth:`~harness_gym.core.prices.PriceTable.digest` of the env's prices
    """
    if not path.is_file():
        return None
    for entry in _load(str(path), path.stat().st_mtime_ns)["envs"].values():
        if entry.get("domain") != domain or entry.get("fingerprint") != data_fingerprint:
            continue
        for profile in entry.get("profiles", {}).values():
            if profile.get("prices") == prices_digest:
                return float(profile["budget_units"])
    return None
