"""Fuzz the whole env API with a worker whose every output is generated hostile content (issue 25).

Every registered env runs episodes whose controller actions and worker outputs come from hypothesis: the
:class:`FuzzWorker` answers every call (``draft``, ``revise``, ``propose_tool_call``, ``self_check``,
``confidence``) with a drawn value: random and structured text (the domain's JSON shapes with hostile leaves,
deep nesting, integers past Python's digit limit, hexadecimal numbers, SQL and Python snippets that attack the
host's parsers), huge text, bytes that are not UTF-8 and lone surrogates, and values of the wrong type (a
``Draft`` holding bytes, a tool call whose arguments are a list or hold a set, a confidence of ``"high"``).
Each example asserts that every ``reset`` and ``step`` returns, that the observation is in the space, that
``info["quality"]`` is pending (-1.0) before the end and in [0, 1] at the end, and the test asserts that the
host's memory stays bounded (the growth of the resident and the peak resident set over all examples).

The envs that run code (Code, Data) are fuzzed on both sandbox backends (docker: skipped unless dockerd and the
image are there; ``HG_REQUIRE_DOCKER=1`` makes a missing docker fail); the others run no sandbox. The example
budget is fixed (:data:`FUZZ_EXAMPLES` per env and backend, ``HG_FUZZ_EXAMPLES`` overrides it) and hypothesis
is derandomized, so a run is reproducible.
"""

from __future__ import annotations

import json
import math
import os
import resource
import warnings
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import harness_gym
from harness_gym.core.types import CheckResult, Context, Draft, ToolCall
from harness_gym.domains.dbbench.engines import SQLiteEngine, TableSpec
from harness_gym.domains.dbbench.sql_guard import SQLITE_FUNCTIONS
from harness_gym.domains.dbbench.statements import SQLError
from harness_gym.domains.multitool.tools import ToolError, calculate
from harness_gym.env import PENDING
from tests.test_sandbox import require_backend

FUZZ_EXAMPLES = int(os.environ.get("HG_FUZZ_EXAMPLES", "150"))
"""Episodes per env and backend."""
FUZZ_BUDGET = 12
"""Each episode's budget: at most this many steps."""
ACTIONS = st.sampled_from([0, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6])
"""The controller's actions, drawn step by step: the ones that hand worker output to the host more often."""
MAX_RSS_GROWTH_MB = 512
"""The most the host's resident set (now, and at its peak) may grow over one env's examples."""
SANDBOXED = ("HarnessCode-v1", "HarnessData-v1")
CASES = [(env_id, backend) for env_id in harness_gym.ENV_IDS
         for backend in (("process", "docker") if env_id in SANDBOXED else ("none",))]

# ----- hostile content ------------------------------------------------------------------------------------
KEYS = ["plan", "answer", "reply", "assignments", "entity", "values", "citations", "tool", "args", "name",
        "arguments", "slot", "room", "expression", "results", "value", "raised", "order_id", "item_ids"]
NASTY_TEXT = ["$1", "$" + "9" * 5000, "lit_7", "ref_x", "0x" + "f" * 290, "1e999", "NaN", "-Infinity", "\x00",
              "\udc80\udcff", "\ud800", "%", "_%", "'", '"', "`", "\\", "/*!", "; DROP TABLE t", "9" * 5000]


def _nested(depth: int, kind: str) -> str:
    opener, closer, inner = {"array": ("[", "]", ""), "object": ('{"a": ', "}", "1"), "paren": ("(", ")", "1"),
                             "minus": ("-", "", "1"), "not": ("NOT ", "", "1")}[kind]
    return opener * depth + inner + closer * depth


def _json_text(value: Any) -> str:
    return json.dumps(value, allow_nan=True)


leaf = st.one_of(
    st.none(), st.booleans(), st.integers(-10**30, 10**30), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40), st.sampled_from(NASTY_TEXT))
json_values = st.recursive(leaf, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.one_of(st.sampled_from(KEYS), st.text(max_size=8)), inner,
                                                 max_size=4)), max_leaves=20)
structured = st.builds(_json_text, st.one_of(json_values, st.dictionaries(st.sampled_from(KEYS), json_values,
                                                                             max_size=5)))
deep = st.builds(_nested, st.sampled_from([65, 300, 2000, 100_000]),
                 st.sampled_from(["array", "object", "paren", "minus", "not"]))
big_numbers = st.one_of(
    st.integers(4301, 20_000).map(lambda n: "9" * n),
    st.integers(300, 20_000).map(lambda n: "0x" + "f" * n),
    st.integers(300, 5000).map(lambda n: '{"answer": ' + "7" * n + ', "plan": [], "reply": "", "entity": 1}'),
    st.sampled_from(["1e400", "-1e400", "0b" + "1" * 20_000, str(10**4000)]))
unicode_mess = st.one_of(
    st.text(st.characters(codec=None, exclude_categories=()), max_size=80),
    st.binary(max_size=80).map(lambda b: b.decode("utf-8", "surrogateescape")))
huge = st.sampled_from([100_000, 1_100_000, 2_000_000]).map(lambda n: "x" * n)
PROGRAMS = [
    "print('9' * 5000)", "print(10 ** 4000)", "print('[' * 30000 + ']' * 30000)", "print(float('nan'))",
    "print('x' * 200000)", "raise SystemExit(3)", "import os\nos._exit(0)", "print('{\"a\": ' + str(10**4000) + '}')",
    "def {fn}(*a, **k):\n    return 10 ** 4000\n",
    "def {fn}(*a, **k):\n    return " + "[" * 500 + "]" * 500 + "\n",
    "import os\ndef {fn}(*a, **k):\n    os.write(3, b'{\"value\": \"0x" + "f" * 5000 + "\"}\\n')\n    os._exit(0)\n",
    "import os\ndef {fn}(*a, **k):\n    os.write(3, b'" + "[" * 5000 + "\\n')\n    os._exit(0)\n",
    "class ValueError(Exception):\n    pass\ndef {fn}(*a, **k):\n    raise ValueError('x')\n",
    "def {fn}(*a, **k):\n    raise ValueError('always')\n",
]
SQL = [
    "SELECT " + "+".join(["1"] * 3000), "SELECT zeroblob(500000) FROM {table} a, {table} b, {table} c",
    "SELECT * FROM {table} WHERE `x` LIKE '" + "%a" * 40 + "'", "SELECT " + "(" * 3000 + "1" + ")" * 3000,
    "SHOW TABLES", "DESCRIBE {table}", "SELECT 1; SELECT 2", "/*!SELECT 1*/", "SELECT 0x" + "f" * 2000,
    "SELECT fts3_tokenizer('simple')", "SELECT fts3_tokenizer('simple', x'4141414141414141')",
    "SELECT * FROM fts3tokenize WHERE input = 'x'", "SELECT * FROM json_each('[1]')", "SELECT name FROM sqlite_master",
    "SELECT * FROM pragma_compile_options", "SELECT load_extension('/tmp/x')", "SELECT sqlite_version() FROM {table}",
]
SQL_FUNCTIONS = sorted(SQLITE_FUNCTIONS | {"fts3_tokenizer", "load_extension", "sqlite_version", "sqlite_source_id",
                                           "sqlite_compileoption_get", "zeroblob", "randomblob", "printf", "json",
                                           "json_extract", "snippet", "rtreenode", "changes", "likelihood", "regexp",
                                           "unknown_fn"})
"""Function names the fuzzed SQL calls: every allowed one and a spread of refused ones."""
SQL_ARGUMENTS = ["1", "-1", "0", "1e308", "-1e308", "9" * 30, "NULL", "'x'", "''", "x'41'", "'2024-02-30'",
                 "'%Y'", "'simple'", "0.5", "-0.0", "9223372036854775807", "-9223372036854775808"]
"""Literal arguments, extreme ones included."""
sql_calls = st.builds(lambda fn, args, table: f"SELECT {fn}({', '.join(args)})" + (" FROM {table}" if table else ""),
                      st.sampled_from(SQL_FUNCTIONS), st.lists(st.sampled_from(SQL_ARGUMENTS), max_size=3),
                      st.booleans())
EXTREME_OPERANDS = ["1e-300", "1e300", "1e15", "1e-320", "5e-324", "0", "-1e-300", "999999999999999", "0.1"]
"""Calculator operands at and past the float range."""
extreme_arithmetic = st.builds(lambda a, op, b: f"{a} {op} {b}", st.sampled_from(EXTREME_OPERANDS),
                               st.sampled_from(["**", "*", "/", "+", "-"]),
                               st.one_of(st.sampled_from(EXTREME_OPERANDS), st.integers(-6, 6).map(str)))


def _fill(template: str, ctx: Context) -> str:
    payload = ctx.task.payload
    fn = getattr(payload, "function", "f")
    record = getattr(payload, "record", None)
    table = "`" + record.table.name.replace("`", "``") + "`" if record is not None else "t"
    return template.replace("{fn}", str(fn)).replace("{table}", table)


texts = st.one_of(unicode_mess, structured, deep, big_numbers, huge, st.sampled_from(PROGRAMS),
                  st.sampled_from(SQL), sql_calls, extreme_arithmetic, st.sampled_from(NASTY_TEXT))


class Unprintable:
    """An object whose ``repr`` and ``str`` raise: what a careless formatter would choke on."""

    def __repr__(self) -> str:
        raise RuntimeError("no repr")

    __str__ = __repr__


def _nested_list(depth: int) -> list:
    out: list = []
    for _ in range(depth):
        out = [out]
    return out


arg_values = st.one_of(
    json_values, st.builds(_nested_list, st.sampled_from([65, 5000, 100_000])),
    st.sampled_from([10**5000, -(10**400), float("nan"), b"\xff\xfe", {1, 2}, Unprintable(), ("t", "u"),
                     np.int64(7), np.float64("inf"), "x" * 70_000, 1e308, -1e308, 5e-324, 2**332]), texts)
wrong_types = st.sampled_from([None, 3, 2.5, b"\xff\xfe\x00", ["a"], {"plan": []}, Unprintable(), object()])


class FuzzWorker:
    """Answers every call with a value drawn from hypothesis (see the module docstring).

    :param tools: the env's tool names (half of the calls name one of them)
    """

    def __init__(self, tools: list[str]) -> None:
        self.tools = tools or ["none"]
        self.data: Any = None

    def reset(self, rng: np.random.Generator) -> None:
        pass

    def _content(self, ctx: Context) -> Any:
        draw = self.data.draw
        kind = draw(st.sampled_from(["text", "text", "text", "bytes", "draft_of_bytes", "odd_draft", "wrong"]))
        if kind == "text":
            return _fill(draw(texts), ctx)
        if kind == "bytes":
            return draw(st.binary(max_size=200))
        if kind == "draft_of_bytes":
            return Draft(content=draw(st.binary(max_size=200)), candidate=-1, version=1)  # type: ignore[arg-type]
        if kind == "odd_draft":
            return Draft(content=_fill(draw(texts), ctx), candidate=draw(st.sampled_from([-5, 10**9, "x", None, 0])),
                         version=draw(st.sampled_from([-1, 0, "v", None, 10**30])))  # type: ignore[arg-type]
        return draw(wrong_types)

    def draft(self, ctx: Context) -> Any:
        return self._content(ctx)

    def revise(self, ctx: Context, draft: Draft, feedback: CheckResult) -> Any:
        return self._content(ctx)

    def propose_tool_call(self, ctx: Context) -> Any:
        draw = self.data.draw
        kind = draw(st.sampled_from(["known", "known", "any_name", "args_not_a_mapping", "wrong"]))
        if kind == "wrong":
            return draw(wrong_types)
        name = draw(st.sampled_from(self.tools)) if kind == "known" else draw(st.one_of(texts, wrong_types))
        if kind == "args_not_a_mapping":
            return ToolCall(name=name, args=draw(st.one_of(wrong_types, st.lists(leaf))))  # type: ignore[arg-type]
        keys = st.one_of(st.sampled_from(["call", "sql", "expression", "value", "from_unit", "date", "table", "key",
                                          "field", "person", "order_id", "email"]), st.text(max_size=8),
                         st.sampled_from([1, None, ("k",)]))
        return ToolCall(name=name, args=draw(st.dictionaries(keys, arg_values, max_size=3)))

    def self_check(self, ctx: Context, draft: Draft) -> Any:
        draw = self.data.draw
        return draw(st.one_of(wrong_types, st.builds(
            CheckResult, passed=st.sampled_from([True, False, "yes", None, np.bool_(True)]),
            feedback=st.one_of(texts, wrong_types), specificity=st.sampled_from([0.5, math.nan, -3, 10**400, "x"]))))

    def confidence(self, ctx: Context, draft: Draft) -> Any:
        return self.data.draw(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(),
                                        st.sampled_from([10**400, "high", None, np.float64("nan"), np.int64(3),
                                                         True, Unprintable()])))


# ----- the suite -------------------------------------------------------------------------------------------
def _rss_mb() -> tuple[float, float]:
    """(resident, peak resident) of this process in MB."""
    with open("/proc/self/status") as fh:
        rss = next(int(line.split()[1]) for line in fh if line.startswith("VmRSS")) / 1024
    return rss, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@pytest.fixture(params=CASES, ids=[f"{e}-{b}" for e, b in CASES])
def fuzz_env(request: pytest.FixtureRequest) -> Iterator[gym.Env]:
    env_id, backend = request.param
    kwargs: dict[str, Any] = {"budget": FUZZ_BUDGET}
    if backend != "none":
        kwargs["sandbox"] = require_backend(backend)
    env = gym.make(env_id, worker=FuzzWorker([]), **kwargs)
    env.unwrapped.worker.tools = sorted(env.unwrapped.domain.tools)
    yield env
    env.close()


def test_no_worker_output_breaks_a_step(fuzz_env: gym.Env) -> None:
    env, worker = fuzz_env, fuzz_env.unwrapped.worker
    space = env.observation_space
    steps = []

    @settings(max_examples=FUZZ_EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(data=st.data(), seed=st.integers(0, 2**31 - 1))
    def episode(data: st.DataObject, seed: int) -> None:
        worker.data = data
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            obs, info = env.reset(seed=seed)
            assert info["quality"] == PENDING
            for n in range(1, FUZZ_BUDGET + 2):  # a DRAFT first, so that most steps have a draft to work on
                action = 3 if n == 1 else data.draw(ACTIONS, label="action")
                obs, reward, terminated, truncated, info = env.step(action)
                assert space.contains(obs) and math.isfinite(reward) and not truncated
                if terminated:
                    assert 0.0 <= info["quality"] <= 1.0, info
                    steps.append(n)
                    return
                assert info["quality"] == PENDING, info
        raise AssertionError(f"the budget of {FUZZ_BUDGET} did not end the episode")

    before = _rss_mb()
    episode()
    after = _rss_mb()
    print(f"{env.spec.id if env.spec else type(env.unwrapped).__name__}: {len(steps)} episodes, {sum(steps)} steps, "
          f"resident {after[0] - before[0]:+.0f} MB, peak {after[1] - before[1]:+.0f} MB")
    assert len(steps) >= FUZZ_EXAMPLES
    growth = (after[0] - before[0], after[1] - before[1])
    assert max(growth) < MAX_RSS_GROWTH_MB, f"resident set grew {growth[0]:.0f} MB, peak {growth[1]:.0f} MB"


# ----- focused: SQL function calls on the SQLite engine, extreme calculator operands ------------------------------
FOCUSED_EXAMPLES = 300
"""Examples of each focused test (each takes well under a millisecond)."""
FUZZ_TABLE = TableSpec("t", ("a", "b"), (("1", "x"), ("2.5", None), ("-7", "2024-01-31")))


def test_sql_function_calls_answer_or_refuse_and_only_allowed_functions_run() -> None:
    session = SQLiteEngine().open(FUZZ_TABLE)

    @settings(max_examples=FOCUSED_EXAMPLES, deadline=None, derandomize=True, database=None)
    @given(fn=st.sampled_from(SQL_FUNCTIONS), args=st.lists(st.sampled_from([*SQL_ARGUMENTS, "a", "b"]), max_size=3),
           window=st.booleans())
    def call(fn: str, args: list[str], window: bool) -> None:
        sql = f"SELECT {fn}({', '.join(args)}){' OVER ()' if window else ''} FROM t"
        try:
            with session.scratch(writable=False):
                session.execute(sql)
        except SQLError as exc:
            assert "\n" not in str(exc)
        else:
            assert fn in SQLITE_FUNCTIONS, f"{sql} ran"

    call()
    assert session.table_rows() == [tuple(r) for r in FUZZ_TABLE.rows]
    session.close()


def test_extreme_calculator_operands_give_a_finite_value_or_a_tool_error() -> None:
    @settings(max_examples=FOCUSED_EXAMPLES, deadline=None, derandomize=True, database=None)
    @given(expression=st.one_of(extreme_arithmetic, st.builds(
        lambda a, b, n: f"({a} * {b}) ** {n}", st.floats(allow_nan=False, allow_infinity=False).map(repr),
        st.sampled_from(EXTREME_OPERANDS), st.integers(-6, 6))))
    def evaluate(expression: str) -> None:
        try:
            value = calculate(expression)
        except ToolError:
            return
        assert math.isfinite(value.value) and abs(value.value) <= 1e15, (expression, value)

    evaluate()
