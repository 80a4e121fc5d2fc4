"""Hostile SQL and hostile arithmetic through the public env API (issue 41, part A).

- DB-Bench's SQLite engine runs worker SQL in the host process: ``fts3_tokenizer`` hands the worker a pointer
  into ``libsqlite3`` and, given one back, calls through it (SIGSEGV, run here in a child process); eponymous
  virtual tables (``json_each``, ``pragma_*``, ``fts3tokenize``), the schema table and the engine's own
  introspection functions answer as if they were the task's. Every statement may touch only the task's table
  and call only the allowed functions; a refusal is an SQL error naming what was refused, on the TOOL path and
  on the DRAFT / CHECK / SUBMIT path.
- DB-Bench's MariaDB engine (skipped unless ``HG_MYSQL_DSN`` is set, as in ``test_dbbench``): a result
  larger than the SQLite engine's byte bound is refused while it arrives (the host's memory stays bounded, in a
  child with an address-space limit), and a connection the server dropped is an SQL error followed by a
  reconnect, never an exception out of ``env.step``.
- MultiTool's tools raise only their tool error for any operands: an overflowing power, a conversion past the
  float range (TOOL and CHECK).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pytest

import harness_gym  # noqa: F401  (registers the env ids)
from harness_gym.core.actions import Action
from harness_gym.core.types import ToolCall
from tests.test_hostile import HostileWorker, play

ROOT = Path(__file__).resolve().parents[1]
DSN = os.environ.get("HG_MYSQL_DSN", "")
needs_mysql = pytest.mark.skipif(not DSN, reason="HG_MYSQL_DSN is not set: run scripts/start_mariadb.sh and export "
                                                  "HG_MYSQL_DSN=<the DSN it prints> to test the MySQL engine")


def _tool_results(env_id: str, calls: list[ToolCall], **kwargs: object) -> list:
    """TOOL once per call on a fresh env; each call's result."""
    env = gym.make(env_id, worker=HostileWorker([""], calls), **kwargs)
    play(env, [Action.TOOL] * len(calls))
    results = [result for _, result in env.unwrapped.context.tool_history]
    env.close()
    return results


# ----- SQLite: only the task's table, only the allowed functions ------------------------------------------
REFUSED_SQLITE = {
    "fts3_tokenizer_pointer": ("SELECT fts3_tokenizer('simple')", "fts3_tokenizer"),
    "engine_version": ("SELECT sqlite_version()", "sqlite_version"),
    "compile_options": ("SELECT sqlite_compileoption_get(0)", "sqlite_compileoption_get"),
    "schema_table": ("SELECT name FROM sqlite_master", "sqlite_master"),
    "json_each_vtab": ("SELECT * FROM json_each('[1, 2]')", "json_each"),
    "pragma_vtab": ("SELECT * FROM pragma_compile_options", "pragma_compile_options"),
    "pragma_function_vtab": ("SELECT * FROM pragma_table_info('x')", "pragma_table_info"),
    "fts3tokenize_vtab": ("SELECT * FROM fts3tokenize WHERE input = 'x'", "fts3tokenize"),
    "load_extension": ("SELECT load_extension('/tmp/libnothing.so')", "load_extension"),
}


@pytest.mark.parametrize("attack", sorted(REFUSED_SQLITE))
def test_sqlite_tool_refuses_what_is_not_the_tasks(attack: str) -> None:
    sql, named = REFUSED_SQLITE[attack]
    (result,) = _tool_results("HarnessDBBench-v1", [ToolCall("execute_sql", {"sql": sql})])
    assert not result.ok and result.output == "", result
    assert named in result.error, result.error


def test_sqlite_check_refuses_fts3_tokenizer() -> None:
    env = gym.make("HarnessDBBench-v1", worker=HostileWorker([""]))
    env.reset(seed=0)
    table = env.unwrapped.context.task.payload.record.table.name
    env.unwrapped.worker.drafts = [f"SELECT fts3_tokenizer('simple') FROM `{table}`"]
    infos = [env.step(int(a))[4] for a in (Action.DRAFT, Action.CHECK, Action.SUBMIT)]
    check = env.unwrapped.context.last_check
    assert not check.passed and "fts3_tokenizer" in check.feedback, check
    assert infos[-1]["quality"] == 0.0
    env.close()


_POINTER_CHILD = r'''
import json, sys, warnings
warnings.simplefilter("ignore")
import gymnasium as gym
import harness_gym
from harness_gym.core.actions import Action
from harness_gym.core.types import ToolCall
from tests.test_hostile import HostileWorker

set_pointer = "SELECT fts3_tokenizer('simple', x'4141414141414141')"
use_pointer = "SELECT * FROM fts3tokenize WHERE input = 'x'"
path = sys.argv[1]
if path == "tool":
    env = gym.make("HarnessDBBench-v1", worker=HostileWorker([""], [ToolCall("execute_sql", {"sql": s})
                                                                    for s in (set_pointer, use_pointer)]))
    env.reset(seed=0)
    for _ in range(2):
        env.step(int(Action.TOOL))
    print(json.dumps([[r.ok, r.error] for _, r in env.unwrapped.context.tool_history]))
else:
    env = gym.make("HarnessDBBench-v1", worker=HostileWorker([set_pointer, use_pointer]))
    env.reset(seed=0)
    feedback = []
    for action in (Action.DRAFT, Action.CHECK, Action.DRAFT, Action.CHECK, Action.SUBMIT):
        info = env.step(int(action))[4]
        if action == Action.CHECK:
            check = env.unwrapped.context.last_check
            feedback.append([check.passed, check.feedback])
    print(json.dumps(feedback + [info["quality"]]))
'''


@pytest.mark.parametrize("path", ["tool", "draft_check"])
def test_sqlite_never_calls_a_pointer_the_worker_supplies(path: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", _POINTER_CHILD, path], capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=600)
    assert proc.returncode == 0, f"the child ended with {proc.returncode}: {proc.stderr[-2000:]}"
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    if path == "tool":
        assert [ok for ok, _ in got] == [False, False], got
        assert "fts3_tokenizer" in got[0][1] and "fts3tokenize" in got[1][1], got
    else:
        assert [passed for passed, _ in got[:2]] == [False, False] and got[2] == 0.0, got


# ----- MariaDB: bounded results, reconnect after a failure -------------------------------------------------
_MYSQL_CHILD = r'''
import json, os, resource, sys, warnings
warnings.simplefilter("ignore")
import gymnasium as gym
import harness_gym
from harness_gym.core.actions import Action
from harness_gym.core.types import ToolCall
from tests.test_hostile import HostileWorker

def rss_mb():
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmRSS")) / 1024

env = gym.make("HarnessDBBench-v1", engine="mysql", dsn=os.environ["HG_MYSQL_DSN"], worker=HostileWorker([""]))
env.reset(seed=0)
task = env.unwrapped.context.task
table = "`" + task.payload.record.table.name + "`"
calls = [sys.stdin.read().replace("TABLE", table), "SELECT COUNT(*) FROM " + table]
env.unwrapped.worker.calls = [ToolCall("execute_sql", {"sql": sql}) for sql in calls]
with open("/proc/self/statm") as fh:
    vm = int(fh.read().split()[0]) * resource.getpagesize()
limit = vm + int(sys.argv[1]) * 1024 * 1024
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
before = rss_mb()
for _ in calls:
    env.step(int(Action.TOOL))
results = [[r.ok, r.output, r.error] for _, r in env.unwrapped.context.tool_history]
print(json.dumps({"results": results, "rss_growth_mb": rss_mb() - before, "rows": len(task.payload.record.table.rows)}))
env.close()
'''
MYSQL_ADDRESS_SPACE_MB = 512
"""The child's address-space headroom: far above what a bounded fetch needs, far below an unbounded result."""


@needs_mysql
def test_mysql_result_is_bounded_while_it_arrives_and_the_session_goes_on() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", _MYSQL_CHILD, str(MYSQL_ADDRESS_SPACE_MB)],
                          input="SELECT REPEAT('x', 15000000) FROM TABLE a, TABLE b", capture_output=True,
                          text=True, cwd=ROOT, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    (flood_ok, _, flood_error), (count_ok, count_output, _) = got["results"]
    assert not flood_ok and "bytes" in flood_error, got
    assert count_ok and count_output == repr([(got["rows"],)]), got
    assert got["rss_growth_mb"] < 256, got


def _kill_session_connection(env: gym.Env) -> None:
    """End the episode session's server connection, as a server restart or a network fault would (from a second
    connection of the session's own account, which may end its own connections)."""
    import pymysql

    session = env.unwrapped._resource
    dsn = session._dsn
    killer = pymysql.connect(host=dsn.host, port=dsn.port, user=session.account, password=session._password)
    try:
        with killer.cursor() as cur:
            cur.execute(f"KILL CONNECTION {int(session._conn.thread_id())}")
    finally:
        killer.close()


@needs_mysql
def test_mysql_dropped_connection_is_a_failed_check_then_a_reconnect() -> None:
    env = gym.make("HarnessDBBench-v1", engine="mysql", dsn=DSN, worker=HostileWorker([""]))
    env.reset(seed=0)
    task = env.unwrapped.context.task
    env.unwrapped.worker.drafts = [task.reference.content]
    env.step(int(Action.DRAFT))
    _kill_session_connection(env)
    env.step(int(Action.CHECK))
    first = env.unwrapped.context.last_check
    env.step(int(Action.CHECK))
    second = env.unwrapped.context.last_check
    info = env.step(int(Action.SUBMIT))[4]
    assert not first.passed and "SQL error" in first.feedback, first
    assert second.passed and info["quality"] == 1.0, (second, info["quality"])
    env.close()


# ----- MultiTool: only ToolError for any operands -----------------------------------------------------------
OVERFLOWING_EXPRESSIONS = ["1e-300 ** -6", "(-1e-300) ** -5", "1e-320 ** -1", "1e-310 ** -2"]


def _assert_tool_and_check_out_of_range(call: ToolCall) -> None:
    """TOOL with ``call`` and DRAFT / CHECK / SUBMIT of a one-step plan making it: a tool error and a failed check,
    both saying the value is out of range, and Q = 0."""
    plan = {"plan": [{"tool": call.name, "args": dict(call.args)}], "answer": 1}
    env = gym.make("HarnessMultiTool-v1", worker=HostileWorker([json.dumps(plan)], [call]))
    infos = play(env, (Action.TOOL, Action.DRAFT, Action.CHECK, Action.SUBMIT))
    ctx = env.unwrapped.context
    result = ctx.tool_history[0][1]
    assert not result.ok and "out of range" in result.error, result
    assert not ctx.last_check.passed and "out of range" in ctx.last_check.feedback, ctx.last_check
    assert infos[-1]["quality"] == 0.0
    env.close()


@pytest.mark.parametrize("expression", OVERFLOWING_EXPRESSIONS)
def test_overflowing_power_is_a_tool_error_and_a_failed_check(expression: str) -> None:
    _assert_tool_and_check_out_of_range(ToolCall("calculate", {"expression": expression}))


@pytest.mark.parametrize("value", [1e308, -1e308])
def test_conversion_past_the_float_range_is_a_tool_error_and_a_failed_check(value: float) -> None:
    _assert_tool_and_check_out_of_range(ToolCall("convert_units", {"value": value, "from_unit": "km",
                                                                   "to_unit": "mm"}))


def test_the_overflow_tests_run_the_expressions_they_name() -> None:
    """The plans above reach the tools: an honest power of the same shape runs, in TOOL and in CHECK (whose
    plan step passes; the task's unit is another matter)."""
    plan = {"plan": [{"tool": "calculate", "args": {"expression": "2 ** -2"}}], "answer": 0.25}
    env = gym.make("HarnessMultiTool-v1", worker=HostileWorker([json.dumps(plan)],
                                                               [ToolCall("calculate", {"expression": "2 ** -2"})]))
    play(env, (Action.TOOL, Action.DRAFT, Action.CHECK))
    ctx = env.unwrapped.context
    assert ctx.tool_history[0][1].ok and ctx.tool_history[0][1].output == "0.25", ctx.tool_history[0]
    assert ctx.last_check.n_passed == 1 and "out of range" not in ctx.last_check.feedback, ctx.last_check
    env.close()

