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
from json.encoder import encode_basestring_ascii as _json_str  # what json.dumps writes for a str
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


def _json_pairs(pairs: Any) -> str:
    """``json.dumps(pairs, separators=(",", ":"))`` of a sequence of (str, str) pairs, without the encoder."""
    return "[" + ",".join(f"[{_json_str(a)},{_json_str(b)}]" for a, b in pairs) + "]"


def _json_strs(items: Any) -> str:
    """``json.dumps(items, separators=(",", ":"))`` of a sequence of str."""
    return "[" + ",".join(map(_json_str, items)) + "]"


@lru_cache(maxsize=256)
def _compared_fields(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls) if f.compare)


def _digest(obj: Any, memo: dict[int, tuple[Any, str]]) -> str:
    """A canonical hash of ``obj`` (sets sorted, mappings by key; dataclass fields that take no part in
    comparison, such as a task's source file, left out), hashing each container once per call (``memo``, by
    identity; the memo holds the object too, so that no id is reused within the call), so that data shared by
    many tasks (a store snapshot) costs one pass.

    A container's hash is the SHA-256 of ``json.dumps([tag, children], separators=(",", ":"))``, a scalar's
    ``json.dumps`` of it; the JSON text is written here directly (the same text), as the encoder's calls were
    most of the time of a first reset."""
    if obj is None:
        return "null"
    if obj is True:
        return "true"
    if obj is False:
        return "false"
    if isinstance(obj, int):
        return int.__repr__(obj)
    if isinstance(obj, str):
        return _json_str(obj)
    if isinstance(obj, float):
        return float.__repr__(obj) if math.isfinite(obj) else _json_str(repr(obj))
    key = id(obj)
    if key in memo:
        return memo[key][1]
    kind = type(obj)
    if kind is dict or isinstance(obj, Mapping):
        text = f'["map",{_json_pairs(sorted((str(k), _digest(v, memo)) for k, v in obj.items()))}]'
    elif kind is list or kind is tuple:  # no dataclass, no ``_asdict``
        text = f'["seq",{_json_strs([_digest(v, memo) for v in obj])}]'
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        text = (f"[{_json_str(kind.__name__)},"
                f"{_json_pairs([(f, _digest(getattr(obj, f), memo)) for f in _compared_fields(kind)])}]")
    elif hasattr(obj, "_asdict"):
        text = f"[{_json_str(kind.__name__)},{_json_str(_digest(obj._asdict(), memo))}]"
    elif isinstance(obj, (set, frozenset)):
        text = f'["set",{_json_strs(sorted(_digest(v, memo) for v in obj))}]'
    elif isinstance(obj, (list, tuple)):
        text = f'["seq",{_json_strs([_digest(v, memo) for v in obj])}]'
    elif hasattr(obj, "__dict__"):
        caches = getattr(kind, "CACHE_ATTRIBUTES", ())
        state = {k: v for k, v in vars(obj).items() if k not in caches} if caches else vars(obj)
        text = f"[{_json_str(kind.__name__)},{_json_str(_digest(state, memo))}]"
    else:
        raise TypeError(f"cannot fingerprint a {kind.__name__}")
    digest = hashlib.sha256(text.encode()).hexdigest()
    memo[key] = (obj, digest)
    return digest


def fingerprint(*parts: Any) -> str:
    """A stable hash of ``parts`` (the same on every machine and Python hash seed). An object's attributes that
    its class names in ``CACHE_ATTRIBUTES`` (results kept from its data, filled as it is used) are not part of it.

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
