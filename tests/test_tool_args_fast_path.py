"""accept_tool_call's fast path for flat plain arguments gives what the general bounded walk gives."""

from __future__ import annotations

import math

import numpy as np

from harness_gym.core import intake
from harness_gym.core.intake import MAX_ARG_INT_BITS, MAX_TOOL_ARGS_CHARS, accept_tool_call
from harness_gym.core.types import ToolCall


def _by_the_general_walk(raw: ToolCall) -> tuple[ToolCall, str]:
    args, problem = intake._json_problem(raw.args, "arguments", 0, [MAX_TOOL_ARGS_CHARS])
    if problem:
        return ToolCall(name=raw.name, args={}), f"malformed tool call {raw.name}: {problem}"
    return ToolCall(name=raw.name, args=args), ""


def _typed(value):
    """A value with its types spelled out (True == 1 and NaN != NaN in plain comparison)."""
    if isinstance(value, dict):
        return ("dict", [(_typed(k), _typed(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("list", [_typed(v) for v in value])
    return (type(value).__name__, repr(value))


def _random_value(rng: np.random.Generator, depth: int = 0):
    kind = int(rng.integers(16))
    if kind == 0:
        return None
    if kind == 1:
        return bool(rng.integers(2))
    if kind == 2:
        return int(rng.integers(-10**6, 10**6))
    if kind == 3:
        return 1 << int(rng.choice([MAX_ARG_INT_BITS - 1, MAX_ARG_INT_BITS, MAX_ARG_INT_BITS + 1]))
    if kind == 4:
        return float(rng.choice([0.5, -0.0, math.inf, math.nan, 1e300]))
    if kind == 5:
        return np.int64(rng.integers(100))
    if kind == 6:
        return np.float32(0.25)
    if kind == 7:
        return np.bool_(True)
    if kind == 8:
        return "caf\u00e9 \ud800"[: int(rng.integers(1, 7))]
    if kind == 9:
        return "x" * int(rng.choice([0, 10, MAX_TOOL_ARGS_CHARS // 2, MAX_TOOL_ARGS_CHARS]))
    if kind == 10:
        return b"bytes"
    if kind == 11 and depth < 2:
        return [_random_value(rng, depth + 1) for _ in range(int(rng.integers(3)))]
    if kind == 12 and depth < 2:
        return _random_args(rng, depth + 1)
    if kind == 13:
        return (1, "a")
    if kind == 14:
        return object()
    return "plain text"


def _random_args(rng: np.random.Generator, depth: int = 0):
    keys = ["a", "entity", "field", "k\u00e9y", "x" * 40000, 7, "query"]
    args = {}
    for _ in range(int(rng.integers(0, 5))):
        args[keys[int(rng.integers(len(keys)))]] = _random_value(rng, depth)
    return args


class _Subclass(dict):
    pass


def test_accept_tool_call_equals_the_general_walk_on_generated_arguments() -> None:
    rng = np.random.default_rng(5)
    fast = 0
    cases = [_random_args(rng) for _ in range(6000)] + [_Subclass(a=1), {"a": True, "b": 1, "c": 1.0}]
    for args in cases:
        raw = ToolCall(name="tool", args=args)
        got, want = accept_tool_call(raw), _by_the_general_walk(raw)
        assert (got[0].name, _typed(dict(got[0].args)), got[1]) == (want[0].name, _typed(dict(want[0].args)),
                                                                    want[1]), args
        assert got[0].args is not args
        fast += intake._flat_plain_args(args) is not None
    assert 500 < fast < len(cases) - 500  # both paths were taken
