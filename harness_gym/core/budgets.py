"""The budget rule in cost units and the precomputed budgets of the shipped profiles (``envs_data/budgets.json``).

The rule (docs/cost.md, "Budget"), fixed before any learned run: an env's ``budget_units="auto"`` is
:data:`FACTOR` times the median episode cost of the **reference sequence** (OBSERVE, RETRIEVE, RETRIEVE, TOOL,
DRAFT, then CHECK and REVISE on a failed check while the step budget allows, SUBMIT: the forced-check script
as a plain action loop, :func:`harness_gym.env.play_reference_episode`) over :data:`EPISODES` episodes of the
:data:`SPLIT` split (episode ``i`` reset with seed ``SEED + i``), with the simulated worker, at the env's price
profile. The shipped profiles' budgets are precomputed by ``python -m harness_gym.budgets``; each entry carries
the fingerprint of what it was computed from (tasks, corpus, tools, worker profile, prompts, step budget) and
the digest of its prices, so an env whose configuration differs computes its own budget on first use.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

RULE_VERSION = 1
"""Bumped whenever the reference sequence or the env's billing changes, so that every stored budget is stale."""
EPISODES = 100
SEED = 0
SPLIT = "train"
FACTOR = 2.0
RULE = (f"budget_units = {FACTOR:g} x the median episode cost of the reference sequence (OBSERVE, RETRIEVE, "
        "RETRIEVE, TOOL, DRAFT, then CHECK and REVISE on a failed check while the step budget allows, SUBMIT), "
        f"{EPISODES} episodes of the {SPLIT} split reset with seeds {SEED}..{SEED + EPISODES - 1}, simulated "
        "worker, at the env's price profile")
"""The rule in words (written into ``budgets.json``)."""


def budget_from_costs(costs: list[float]) -> float:
    """:data:`FACTOR` times the median of the reference episodes' costs.

    :param costs: the cost (units) of each reference episode
    """
    if not costs:
        raise ValueError("no reference episodes to take a budget from")
    ordered = sorted(costs)
    mid = len(ordered) // 2
    median = ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
    return FACTOR * median


def _digest(obj: Any, memo: dict[int, tuple[Any, str]]) -> str:
    """A canonical hash of ``obj`` (sets sorted, mappings by key; dataclass fields that take no part in
    comparison, such as a task's source file, left out), hashing each container once per call (``memo``, by
    identity; the memo holds the object too, so that no id is reused within the call), so that data shared by
    many tasks (a store snapshot) costs one pass."""
    if obj is None or isinstance(obj, (bool, int, str)):
        return json.dumps(obj)
    if isinstance(obj, float):
        return json.dumps(obj if math.isfinite(obj) else repr(obj))
    key = id(obj)
    if key in memo:
        return memo[key][1]
    if isinstance(obj, Mapping):
        parts: Any = ["map", sorted((str(k), _digest(v, memo)) for k, v in obj.items())]
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        parts = [type(obj).__name__, [(f.name, _digest(getattr(obj, f.name), memo))
                                      for f in dataclasses.fields(obj) if f.compare]]
    elif hasattr(obj, "_asdict"):
        parts = [type(obj).__name__, _digest(obj._asdict(), memo)]
    elif isinstance(obj, (set, frozenset)):
        parts = ["set", sorted(_digest(v, memo) for v in obj)]
    elif isinstance(obj, (list, tuple)):
        parts = ["seq", [_digest(v, memo) for v in obj]]
    elif hasattr(obj, "__dict__"):
        parts = [type(obj).__name__, _digest(vars(obj), memo)]
    else:
        raise TypeError(f"cannot fingerprint a {type(obj).__name__}")
    digest = hashlib.sha256(json.dumps(parts, separators=(",", ":")).encode()).hexdigest()
    memo[key] = (obj, digest)
    return digest


def fingerprint(*parts: Any) -> str:
    """A stable hash of ``parts`` (the same on every machine and Python hash seed).

    :param parts: data (dataclasses, mappings, sequences, sets, scalars)
    """
    return _digest([RULE_VERSION, *parts], {})[:20]


@lru_cache(maxsize=4)
def _load(path: str, mtime_ns: int) -> dict[str, Any]:
    raw = json.loads(Path(path).read_text())
    if not isinstance(raw, dict) or not isinstance(raw.get("domains"), dict):
        raise ValueError(f"{path}: expected an object with 'domains' (written by python -m harness_gym.budgets)")
    return raw


def stored_budget(path: Path, domain: str, data_fingerprint: str, prices_digest: str) -> float | None:
    """The budget ``budgets.json`` stores for this domain configuration and these prices, or ``None`` when it
    stores none (another configuration, other prices, or no file).

    :param path: the budgets file
    :param domain: the domain's name
    :param data_fingerprint: the fingerprint of the configuration (:func:`fingerprint`)
    :param prices_digest: :meth:`~harness_gym.core.prices.PriceTable.digest` of the env's prices
    """
    if not path.is_file():
        return None
    entry = _load(str(path), path.stat().st_mtime_ns)["domains"].get(domain)
    if not entry or entry.get("fingerprint") != data_fingerprint:
        return None
    for profile in entry.get("profiles", {}).values():
        if profile.get("prices") == prices_digest:
            return float(profile["budget_units"])
    return None
