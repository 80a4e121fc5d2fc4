"""Red team: hostile drafts against every domain that executes content, graded through ``env.step(SUBMIT)``.

Each hostile draft is injected as the env's current draft (as an LLM worker would write it) and must score
Q = 0, after which the same sandbox must still serve a normal job. The code and data attacks run on both
sandbox backends (docker: skipped unless dockerd and the image are there; ``HG_REQUIRE_DOCKER=1`` makes a
missing docker fail); the SQL attacks on both engines (MariaDB: needs ``HG_MYSQL_DSN``, see
``scripts/start_mariadb.sh``); the reply-stuffing attack on the retail domain.

The code drafts raise ``RuntimeError`` (which no task expects) whenever their trick finds nothing, so a
score above 0 can only come from the trick working.
"""

from __future__ import annotations

import json
import os
import time
import uuid
import warnings
from collections.abc import Iterator

import gymnasium as gym
import pytest

import harness_gym  # noqa: F401
from harness_gym.core.actions import Action
from harness_gym.domains.tau_retail.drafts import compose_reply, encode_draft
from tests.domain_cases import draft
from tests.test_sandbox import require_backend

CODE_TASKS = ("code-math-to_binary", "code-dicts-dict_diff", "code-lists-split_positive")
OLD_MARKER = "@@harness_gym.code.result@@"

# Finds the expected value of the running test wherever a harness might keep it: in a frame's variables
# ("expect", "want", "expected"), in the source of __main__ (linecache), or in hidden task files on disk.
_FIND = r'''
import ast, glob, json, linecache, os, sys

def _from_frames():
    frame = sys._getframe(1)
    while frame is not None:
        for scope in (frame.f_locals, frame.f_globals):
            for name in ("expect", "want", "expected"):
                value = scope.get(name)
                if isinstance(value, str):
                    return ast.literal_eval(value)
        frame = frame.f_back
    raise LookupError

def _current_call():
    frame = sys._getframe(1)
    while frame is not None:
        for scope in (frame.f_locals, frame.f_globals):
            if isinstance(scope.get("expr"), str):
                return scope["expr"]
        frame = frame.f_back
    raise LookupError

def _from_linecache(call):
    for entry in list(linecache.cache.values()):
        text = "".join(entry[2]) if len(entry) > 2 and entry[2] else ""
        for node in ast.walk(ast.parse(text)) if "TESTS" in text else ():
            if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "TESTS":
                for expr, expect, raises in ast.literal_eval(node.value):
                    if expr == call and expect is not None:
                        return ast.literal_eval(expect)
    raise LookupError

def _from_disk(call):
    roots = set(sys.path) | {"/work", "/tmp", "/root", "/home", "/usr/lib", "/usr/local/lib"}
    for root in roots:
        for path in glob.glob(os.path.join(str(root), "**", "code", "tasks.jsonl"), recursive=True)[:20]:
            try:
                for line in open(path, encoding="utf-8"):
                    for row in json.loads(line).get("hidden_tests", []):
                        if row.get("call") == call and "expect" in row:
                            return ast.literal_eval(row["expect"])
            except (OSError, ValueError):
                continue
    raise LookupError

def _steal():
    for attempt in (_from_frames, lambda: _from_linecache(_current_call()), lambda: _from_disk(_current_call())):
        try:
            return attempt()
        except Exception:
            continue
    raise RuntimeError("nothing to steal")
'''

CODE_ATTACKS: dict[str, str] = {
    # The report writer, patched so that every test reads as passed (the function is never defined).
    "patched_serialiser": '''
import json
_dumps = json.dumps
def _all_pass(obj, *a, **k):
    if isinstance(obj, dict) and isinstance(obj.get("results"), list):
        obj = {"results": [[1, "", ""] for _ in obj["results"]]}
    return _dumps(obj, *a, **k)
json.dumps = _all_pass
''',
    # A fake result line for every test on the job's stdout, then an early exit before any test runs.
    "fake_marker_and_early_exit": '''
import ast, linecache, os, sys
n = 0
for entry in list(linecache.cache.values()):
    text = "".join(entry[2]) if len(entry) > 2 and entry[2] else ""
    if "TESTS = " in text:
        n = len(ast.literal_eval(text.split("TESTS = ", 1)[1].split("\\n", 1)[0]))
line = "\\n" + %(marker)r + '{"results": ' + str([[1, "", ""]] * n) + '}\\n'
for fd in (1, 2):
    try:
        os.write(fd, line.encode())
    except OSError:
        pass
sys.__stdout__.write(line)
sys.__stdout__.flush()
os._exit(0)
''' % {"marker": OLD_MARKER},
    # The function walks the stack, reads linecache or hidden files for the expected value.
    "frame_walk_linecache_hidden_files": _FIND + '''
def {fn}(*args, **kwargs):
    return _steal()
''',
    # eval itself patched to answer every test expression with the stolen expected value.
    "patched_builtins": _FIND + '''
import builtins
_eval = builtins.eval
def _answering_eval(source, *rest):
    if isinstance(source, str) and "{fn}" in source:
        return _steal()
    return _eval(source, *rest)
builtins.eval = _answering_eval
''',
    # A forked child that outlives the harness and keeps printing fake all-pass result lines.
    "forked_late_writer": '''
import os, time
if os.fork() == 0:
    os.setsid()
    line = ("\\n" + %(marker)r + '{"results": ' + str([[1, "", ""]] * 13) + '}\\n').encode()
    fake = b'{"value": "True", "printed": ""}\\n' * 4
    end = time.monotonic() + 3
    while time.monotonic() < end:
        for fd in (1, 2, 3):
            try:
                os.write(fd, line if fd != 3 else fake)
            except OSError:
                pass
        time.sleep(0.0005)
    os._exit(0)
''' % {"marker": OLD_MARKER},
    # The harness process itself attacked from the draft: killed, stopped, its pipes looked for in /proc.
    "attack_the_harness": '''
import os, signal
for fd in os.listdir("/proc/%d/fd" % os.getppid()) if os.access("/proc/%d/fd" % os.getppid(), os.R_OK) else []:
    try:
        os.write(os.open("/proc/%d/fd/%s" % (os.getppid(), fd), os.O_WRONLY), b'{"results": []}\\n')
    except OSError:
        pass
os.kill(os.getppid(), signal.SIGKILL)
''',
    "fork_bomb": '''
import os
while True:
    try:
        os.fork()
    except OSError:
        pass
''',
    "memory_bomb": "x = bytearray(1 << 40)\n",
    "disk_filler": '''
import os
block = b"x" * (1 << 20)
for i in range(1000):
    try:
        with open(f"/tmp/fill{i}", "wb") as fh:
            fh.write(block * 64)
    except OSError:
        with open(f"fill{i}", "wb") as fh:
            fh.write(block * 64)
''',
    "ignores_cpu_limit_and_sleeps": '''
import signal, time
signal.signal(signal.SIGPROF, signal.SIG_IGN)
def {fn}(*args, **kwargs):
    time.sleep(30)
''',
    "user_namespace_escape": '''
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
if libc.unshare(0x10000000) == 0:
    {fn} = lambda *a, **k: __import__("os").getuid()
''',
}


def env_on_each_backend(env_id: str, request: pytest.FixtureRequest) -> Iterator[gym.Env]:
    """``env_id`` (unwrapped) on the sandbox backend the fixture's parameter names, closed afterwards."""
    env = gym.make(env_id, sandbox=require_backend(request.param)).unwrapped
    yield env
    env.close()


@pytest.fixture(scope="module", params=["process", "docker"])
def code_env(request: pytest.FixtureRequest) -> Iterator[gym.Env]:
    yield from env_on_each_backend("HarnessCode-v1", request)


def submit(env: gym.Env, task_id: str, content: str) -> dict:
    """Reset onto ``task_id``, make ``content`` the current draft and SUBMIT; the last info."""
    env.reset(seed=0, options={"task_id": task_id})
    env.context.draft = draft(content)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        _, _, terminated, _, info = env.step(int(Action.SUBMIT))
    assert terminated
    return info


def assert_serves(env: gym.Env) -> None:
    """The env's sandbox still runs a normal (never cached) job correctly."""
    token = uuid.uuid4().hex
    res = env.sandbox.run(f"print({token!r})")
    assert res.ok and res.stdout == token + "\n", res


@pytest.mark.parametrize("attack", sorted(CODE_ATTACKS))
def test_hostile_code_drafts_score_zero(code_env: gym.Env, attack: str) -> None:
    for task_id in CODE_TASKS:
        fn = code_env.domain.task(task_id).payload.function
        content = CODE_ATTACKS[attack].replace("{fn}", fn)
        info = submit(code_env, task_id, content)
        assert info["quality"] == 0.0, (attack, task_id, info["quality"])
    assert_serves(code_env)
    reference = code_env.domain.task(CODE_TASKS[0]).reference.content
    assert submit(code_env, CODE_TASKS[0], reference + f"\n# {uuid.uuid4().hex}\n")["quality"] == 1.0


def test_hostile_code_drafts_cannot_fool_check(code_env: gym.Env) -> None:
    """CHECK (the visible tests) follows the same rule: nothing passes without the right values."""
    for attack in ("patched_serialiser", "fake_marker_and_early_exit", "frame_walk_linecache_hidden_files",
                   "patched_builtins", "forked_late_writer"):
        task_id = CODE_TASKS[1]
        code_env.reset(seed=0, options={"task_id": task_id})
        content = CODE_ATTACKS[attack].replace("{fn}", code_env.task.payload.function)
        code_env.context.draft = draft(content)
        code_env.step(int(Action.CHECK))
        assert not code_env.context.last_check.passed, (attack, code_env.context.last_check)
    assert_serves(code_env)


# ----- data -----------------------------------------------------------------------------------------------
DATA_TASK = "data-orders_kingsmarsh-group_mean"
DATA_ATTACKS: dict[str, str] = {
    "reads_hidden_answers": '''
import glob, json, os, sys
for root in set(sys.path) | {"/work", "/tmp", "/root", "/home", "/usr/lib", "/usr/local/lib"}:
    for path in glob.glob(os.path.join(str(root), "**", "data", "tasks.jsonl"), recursive=True)[:20]:
        try:
            for line in open(path, encoding="utf-8"):
                rec = json.loads(line)
                if rec.get("task_id") == %(task)r:
                    print(json.dumps(rec["expected"]))
                    raise SystemExit(0)
        except (OSError, ValueError):
            continue
raise RuntimeError("nothing found")
''' % {"task": DATA_TASK},
    "late_writer_after_exit": '''
import os, time
if os.fork() == 0:
    time.sleep(0.3)
    os.write(1, b'{"Books": 10.26, "Electronics": 27.08, "Garden": 42.56, "Sports": 5.61}\\n')
    os._exit(0)
os._exit(0)
''',
    "fork_bomb": "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n",
    "memory_bomb": "x = bytearray(1 << 40)\n",
    "shared_memory_plant": '''
import os
for d in ("/dev/shm", "/tmp", "."):
    try:
        open(os.path.join(d, "answer.json"), "w").write("{}")
    except OSError:
        pass
raise RuntimeError("planted")
''',
}


@pytest.fixture(scope="module", params=["process", "docker"])
def data_env(request: pytest.FixtureRequest) -> Iterator[gym.Env]:
    yield from env_on_each_backend("HarnessData-v1", request)


@pytest.mark.parametrize("attack", sorted(DATA_ATTACKS))
def test_hostile_data_programs_score_zero(data_env: gym.Env, attack: str) -> None:
    assert submit(data_env, DATA_TASK, DATA_ATTACKS[attack])["quality"] == 0.0
    assert_serves(data_env)
    leftover = data_env.sandbox.run(
        "import os\nprint([p for p in ('/dev/shm/answer.json', '/tmp/answer.json', 'answer.json') if os.path.exists(p)])")
    assert leftover.stdout == "[]\n", leftover


# ----- SQL ------------------------------------------------------------------------------------------------
DSN = os.environ.get("HG_MYSQL_DSN", "")
ENGINES = ["sqlite", pytest.param("mysql", marks=pytest.mark.skipif(not DSN, reason="HG_MYSQL_DSN is not set"))]


@pytest.fixture(scope="module", params=ENGINES)
def db_env(request: pytest.FixtureRequest) -> Iterator[gym.Env]:
    env = gym.make("HarnessDBBench-v1", engine=request.param, dsn=DSN or None).unwrapped
    yield env
    env.close()


def _sql_attacks(table: str, other_schema: str | None) -> dict[str, str]:
    q = "`" + table.replace("`", "``") + "`"
    attacks = {
        "executable_comment_ddl": f"/*!CREATE TABLE hg_planted (a INT) */ SELECT 1 FROM {q}",
        "executable_comment_lifts_limit": f"/*M!SET STATEMENT max_statement_time=0 FOR*/ SELECT SLEEP(30) FROM {q}",
        "set_statement": f"SET STATEMENT max_statement_time=0 FOR SELECT SLEEP(30) FROM {q}",
        "several_statements": f"DELETE FROM {q}; SELECT 1",
        "catastrophic_like": f"SELECT COUNT(*) FROM {q} WHERE '{'a' * 60}c' LIKE '{'%a' * 38}%b'",
        "huge_blob": f"SELECT LENGTH(RANDOMBLOB(1000000000)) FROM {q}",
        "cross_join_flood": f"SELECT * FROM {q} a, {q} b, {q} c, {q} d, {q} e",
        "select_into_file": f"SELECT * INTO OUTFILE '/tmp/hg_dump' FROM {q}",
    }
    if other_schema is not None:
        attacks["other_episode_read"] = f"SELECT * FROM `{other_schema}`.{q}"
        attacks["other_episode_write"] = f"DELETE FROM `{other_schema}`.{q}"
    return attacks


def test_sql_attacks_score_zero_and_stay_in_their_episode(db_env: gym.Env) -> None:
    other = db_env.domain.begin_episode(db_env.domain.all_tasks()[0])  # another episode's database
    try:
        other_schema = getattr(other, "schema", None)
        before = other.table_rows()
        for task in db_env.domain.all_tasks()[:2]:
            table = task.payload.record.table.name
            for attack, sql in _sql_attacks(table, other_schema if table == other.table.name else None).items():
                start = time.monotonic()
                info = submit(db_env, task.task_id, sql)
                took = time.monotonic() - start
                assert info["quality"] == 0.0, (attack, sql)
                assert took < 12.0, f"{attack} held the env for {took:.1f} s"
        assert other.table_rows() == before, "an attack changed another episode's table"
        if hasattr(other, "_admin"):
            with other._admin.cursor() as cur:
                cur.execute("SELECT COUNT(*) FROM information_schema.tables WHERE table_name = 'hg_planted'")
                assert cur.fetchone()[0] == 0
    finally:
        db_env.domain.end_episode(db_env.domain.all_tasks()[0], other)
    task = db_env.domain.all_tasks()[0]
    assert submit(db_env, task.task_id, task.reference.content)["quality"] == 1.0


# ----- reply stuffing -------------------------------------------------------------------------------------
def test_reply_stuffing_scores_zero() -> None:
    env = gym.make("HarnessTauRetail-v1").unwrapped
    snap = env.domain.snapshot
    catalogue = json.dumps(snap.tables["products"])
    with_outputs = [t for t in env.domain.all_tasks() if t.payload.outputs]
    passes_substring = 0
    for task in with_outputs:
        data = task.payload
        user = snap.tables["users"][data.user_id]
        records = json.dumps({"user": user, "orders": [snap.tables["orders"][o] for o in user["orders"]]})
        plan_reply = compose_reply(data.gold_plan, ())
        for stuffing in (records, catalogue):
            info = submit(env, task.task_id, encode_draft(data.gold_plan, plan_reply + " " + stuffing))
            assert info["quality"] == 0.0 and info["reward_substring"] == 0.0, task.task_id
        figures = []
        for oid in user["orders"]:
            order = snap.tables["orders"][oid]
            figures += [str(item["price"]) for item in order["items"]]
            figures.append(str(round(sum(item["price"] for item in order["items"]), 2)))
            figures += [str(p["amount"]) for p in order.get("payment_history", [])]
        figures = list(dict.fromkeys(figures))
        if len(figures) < 2:
            continue
        within_bound = (plan_reply + " Figures: " + " ".join(figures))[:1000]
        info = submit(env, task.task_id, encode_draft(data.gold_plan, within_bound))
        assert info["quality"] == 0.0 and info["reward_strict"] == 0.0, task.task_id
        passes_substring += int(info["reward_substring"] == 1.0)
    assert passes_substring > 0, "the substring match no longer needs the strict default"
    env.close()
