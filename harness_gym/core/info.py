"""The ``info`` dict every reset and step of a Harness env returns (its keys: docs/harness_mdp.md, "Info")."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

_ATOMIC_TYPES: frozenset[type] = frozenset({int, float, bool, str, type(None)})
"""Types :func:`copy.deepcopy` returns as they are."""


class StepInfo(dict):  # type: ignore[type-arg]
    """The ``info`` dict of a reset or step. A plain ``dict`` in all but its deep copy, which Stable-Baselines3's
    ``DummyVecEnv`` makes of every step's infos: a nested dict of atomic keys and values is copied with
    ``dict(...)`` and an array with its own ``__deepcopy__``, not element by element; anything else goes through
    :func:`copy.deepcopy`. The copy is as deep and as shared as :func:`copy.deepcopy` makes it
    (``tests/test_env_api.py`` holds the two equal)."""

    def __deepcopy__(self, memo: dict[int, Any]) -> StepInfo:
        copied = StepInfo()
        memo[id(self)] = copied
        for key, value in self.items():
            kind = type(value)
            if kind in _ATOMIC_TYPES:
                copied[key] = value
            elif id(value) in memo:
                copied[key] = memo[id(value)]
            elif (kind is dict and _ATOMIC_TYPES.issuperset(map(type, value.values()))
                  and _ATOMIC_TYPES.issuperset(map(type, value))):
                copied[key] = memo[id(value)] = dict(value)
            elif kind is np.ndarray:
                copied[key] = memo[id(value)] = value.__deepcopy__(memo)
            else:
                copied[key] = copy.deepcopy(value, memo)
        return copied
