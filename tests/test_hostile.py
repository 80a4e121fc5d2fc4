"""Hostile worker output through the public env API (issue 25): every step ends, every job is sealed, every grader
is exact.

Each test builds an env with ``worker=`` a :class:`HostileWorker` of its own, which writes the drafts and tool
calls a red-team pass found harmful, and drives the env with ``reset`` / ``step`` as a controller would:

- exceptions out of ``env.step``: deep or huge JSON drafts (Knowledge, MultiTool, Plan, TauRetail), Data programs
  printing values past the host's parsing limits, a Code job's result record holding an oversized number, hostile
  calculator expressions in MultiTool plans and TOOL calls;
- SysV and POSIX IPC objects crossing jobs on both sandbox backends, and outliving the jobs without isolation;
- DB-Bench's SQLite without memory or parse-time bounds (run in a child process with an address-space limit,
  so that a regression fails the test instead of the machine);
- the retail strict output match whitelisting figures of free-text and failing calls;
- the execution cache serving results across isolation modes;
- Code's raise tests: an always-raising draft, and a draft's own class called ``ValueError``;
- construction and reset arguments (``worker=None``, ``seed=True``).
"""

from __future__ import annotations

import ctypes
import json
import os
import random
import subprocess
import sys
import textwrap
import uuid
import warnings
from collections.abc import Sequence
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import harness_gym  # noqa: F401  (registers the env ids)
from harness_gym.core.actions import Action
from harness_gym.core.types import CheckResult, Context, Draft, ToolCall
from harness_gym.sandbox import IsolationError, ProcessSandbox
from harness_gym.sandbox import process as process_mod
from tests.test_sandbox import require_backend

ROOT = Path(__file__).resolve().parents[1]
IS_ROOT = os.geteuid() == 0


class HostileWorker:
    """A worker that writes what it is told: the n-th DRAFT or REVISE returns ``drafts[n]`` (the last one once they
    run out) and the n-th TOOL proposes ``calls[n]``; it never looks at the context.

    :param drafts: the contents of successive drafts
    :param calls: the successive tool calls
    """

    def __init__(self, drafts: Sequence[str] = ("",), calls: Sequence[ToolCall] = ()) -> None:
        self.drafts, self.calls = list(drafts), list(calls)
        self._n_drafts = self._n_calls = 0

    def reset(self, rng: np.random.Generator) -> None:
        self._n_drafts = self._n_calls = 0

    def _next(self, ctx: Context) -> Draft:
        content = self.drafts[min(self._n_drafts, len(self.drafts) - 1)]
        self._n_drafts += 1
        return Draft(content=content, candidate=-1, version=(ctx.draft.version if ctx.draft else 0) + 1)

    def draft(self, ctx: Context) -> Draft:
        return self._next(ctx)

    def revise(self, ctx: Context, draft: Draft, feedback: CheckResult) -> Draft:
        return self._next(ctx)

    def propose_tool_call(self, ctx: Context) -> ToolCall:
        call = self.calls[min(self._n_calls, len(self.calls) - 1)] if self.calls else ToolCall("none", {})
        self._n_calls += 1
        return call

    def self_check(self, ctx: Context, draft: Draft) -> CheckResult:
        return CheckResult(passed=True, feedback="looks fine", specificity=0.0)

    def confidence(self, ctx: Context, draft: Draft) -> float:
        return 0.5


def play(env: gym.Env, actions: Sequence[Action], *, seed: int = 0, task_id: str | None = None) -> list[dict]:
    """Reset (onto ``task_id`` if given) and take ``actions``; every step's info. Warnings are ignored."""
    infos = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        env.reset(seed=seed, options={"task_id": task_id} if task_id else None)
        for action in actions:
            infos.append(env.step(int(action))[4])
    return infos


DRAFT_CHECK_SUBMIT = (Action.DRAFT, Action.CHECK, Action.SUBMIT)


def assert_failed_check_and_zero(env: gym.Env, infos: list[dict]) -> None:
    """The CHECK of :data:`DRAFT_CHECK_SUBMIT` failed and the SUBMIT scored 0."""
    check = env.unwrapped.context.last_check
    assert check is not None and not check.passed, check
    assert infos[-1]["quality"] == 0.0, infos[-1]


# ----- exceptions out of env.step: deep or huge JSON drafts ------------------------------------------------
HOSTILE_JSON = {
    "deep_array": "[" * 100_000 + "]" * 100_000,
    "deep_object": '{"a": ' * 50_000 + "1" + "}" * 50_000,
    "digits_past_python_limit": "1" * 5000,
    "digits_inside_an_object": '{"entity": 1, "plan": [], "reply": "", "answer": ' + "7" * 5000 + "}",
}
JSON_ENVS = ("HarnessKnowledge-v1", "HarnessMultiTool-v1", "HarnessPlan-v1", "HarnessTauRetail-v1")


@pytest.mark.parametrize("env_id", JSON_ENVS)
@pytest.mark.parametrize("attack", sorted(HOSTILE_JSON))
def test_deep_or_huge_json_draft_is_a_failed_draft(env_id: str, attack: str) -> None:
    env = gym.make(env_id, worker=HostileWorker([HOSTILE_JSON[attack]]))
    infos = play(env, DRAFT_CHECK_SUBMIT)
    assert_failed_check_and_zero(env, infos)
    env.close()


# ----- exceptions out of env.step: Data programs ---------------------------------------------------------
DATA_PRINTS = {
    "digits_past_python_limit": "print('9' * 5000)",
    "deep_array": "print('[' * 30000 + ']' * 30000)",
    "huge_integer_answer": "print(10 ** 4000)",
}


@pytest.fixture(scope="module", params=["process", "docker"])
def data_backend(request: pytest.FixtureRequest) -> str:
    return require_backend(request.param)


@pytest.mark.parametrize("attack", sorted(DATA_PRINTS))
def test_data_program_printing_hostile_values_is_a_failed_check(data_backend: str, attack: str) -> None:
    env = gym.make("HarnessData-v1", sandbox=data_backend, worker=HostileWorker([DATA_PRINTS[attack]]))
    domain = env.unwrapped.domain
    for kind in ("integer", "mapping"):
        task = next(t for t in domain.all_tasks() if t.payload.spec.kind == kind)
        infos = play(env, DRAFT_CHECK_SUBMIT, task_id=task.task_id)
        assert_failed_check_and_zero(env, infos)
    env.close()


# ----- exceptions out of env.step: a Code job's result record --------------------------------------------
def _fake_record_draft(function: str, literal: str) -> str:
    """A draft whose function writes its own result line on the child's report descriptor, then exits."""
    line = json.dumps({"value": literal}) + "\n"
    return textwrap.dedent(f"""\
        import os
        def {function}(*args, **kwargs):
            os.write(3, {line.encode()!r})
            os._exit(0)
        """)


@pytest.mark.parametrize("literal", ["0x" + "f" * 5000, "-0x" + "9" * 4000, "0b" + "1" * 20000])
def test_code_result_with_oversized_number_fails_check_and_submit(literal: str) -> None:
    env = gym.make("HarnessCode-v1")
    domain = env.unwrapped.domain
    float_task = next(t for t in domain.all_tasks() if any("." in (c.expect or "") for c in t.payload.visible))
    for task in (domain.all_tasks()[0], float_task):
        env.unwrapped.worker = HostileWorker([_fake_record_draft(task.payload.function, literal)])
        infos = play(env, DRAFT_CHECK_SUBMIT, task_id=task.task_id)
        assert_failed_check_and_zero(env, infos)
    env.close()


# ----- exceptions out of env.step: MultiTool's calculator -------------------------------------------------
CALCULATOR_ATTACKS = {
    "unknown_literal_reference": "lit_7 + 1",
    "malformed_step_reference": "ref_x * 2",
    "oversized_hex_number": "0x" + "f" * 290,
    "oversized_step_number": "$" + "9" * 290,
}


@pytest.mark.parametrize("attack", sorted(CALCULATOR_ATTACKS))
def test_hostile_calculator_expression_is_a_tool_error(attack: str) -> None:
    expression = CALCULATOR_ATTACKS[attack]
    plan = {"plan": [{"tool": "calculate", "args": {"expression": "2 + 2"}},
                     {"tool": "calculate", "args": {"expression": expression}}], "answer": 4}
    plan_ref = {"plan": [{"tool": "calculate", "args": {"expression": "2 + 2"}},
                         {"tool": "convert_units", "args": {"value": "$" + "9" * 5000, "from_unit": "km",
                                                            "to_unit": "m"}}], "answer": 4}
    call = ToolCall("calculate", {"expression": expression})
    env = gym.make("HarnessMultiTool-v1", worker=HostileWorker([json.dumps(plan), json.dumps(plan_ref)], [call]))
    infos = play(env, (Action.TOOL, Action.DRAFT, Action.CHECK, Action.REVISE, Action.CHECK, Action.SUBMIT))
    ctx = env.unwrapped.context
    assert not ctx.tool_history[0][1].ok and ctx.tool_history[0][1].error, ctx.tool_history[0]
    assert not ctx.last_check.passed and infos[-1]["quality"] == 0.0
    env.close()


# ----- SysV and POSIX IPC between jobs --------------------------------------------------------------------
IPC_LIB = r'''
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
try:
    librt = ctypes.CDLL("librt.so.1", use_errno=True)
except OSError:
    librt = libc
KEY, NAME = %(key)d, %(name)r
IPC_CREAT, IPC_NOWAIT, SETVAL, GETVAL = 0o1000, 0o4000, 16, 12

class MsgBuf(ctypes.Structure):
    _fields_ = [("mtype", ctypes.c_long), ("mtext", ctypes.c_char * 64)]

def plant(kind, token):
    if kind == "sysv_shm":
        shmid = libc.shmget(KEY, 4096, IPC_CREAT | 0o666)
        addr = libc.shmat(shmid, None, 0) if shmid >= 0 else None
        if addr in (None, ctypes.c_void_p(-1).value):
            return "refused: errno %%d" %% ctypes.get_errno()
        ctypes.memmove(addr, token.encode(), len(token))
    elif kind == "sysv_msg":
        qid = libc.msgget(KEY, IPC_CREAT | 0o666)
        buf = MsgBuf(1, token.encode())
        if qid < 0 or libc.msgsnd(qid, ctypes.byref(buf), len(token), IPC_NOWAIT) != 0:
            return "refused: errno %%d" %% ctypes.get_errno()
    elif kind == "sysv_sem":
        semid = libc.semget(KEY, 1, IPC_CREAT | 0o666)
        if semid < 0 or libc.semctl(semid, 0, SETVAL, ctypes.c_int(int(token[:3], 16))) != 0:
            return "refused: errno %%d" %% ctypes.get_errno()
    elif kind == "posix_mq":
        librt.mq_open.restype = ctypes.c_int
        mq = librt.mq_open(("/" + NAME).encode(), os.O_CREAT | os.O_RDWR, 0o666, None)
        if mq < 0 or librt.mq_send(mq, token.encode(), len(token), 0) != 0:
            return "refused: errno %%d" %% ctypes.get_errno()
    elif kind == "posix_shm":
        try:
            with open("/dev/shm/" + NAME, "w") as fh:
                fh.write(token)
        except OSError as exc:
            return "refused: %%s" %% exc
    return "planted"

def read(kind):
    if kind == "sysv_shm":
        shmid = libc.shmget(KEY, 0, 0)
        addr = libc.shmat(shmid, None, 0o10000) if shmid >= 0 else None
        return "" if addr in (None, ctypes.c_void_p(-1).value) else ctypes.string_at(addr, 32).decode("ascii", "replace")
    if kind == "sysv_msg":
        qid = libc.msgget(KEY, 0)
        buf = MsgBuf()
        got = libc.msgrcv(qid, ctypes.byref(buf), 64, 0, IPC_NOWAIT) if qid >= 0 else -1
        return buf.mtext[:got].decode("ascii", "replace") if got > 0 else ""
    if kind == "sysv_sem":
        semid = libc.semget(KEY, 1, 0)
        return "%%03x" %% libc.semctl(semid, 0, GETVAL) if semid >= 0 else ""
    if kind == "posix_mq":
        librt.mq_open.restype = ctypes.c_int
        mq = librt.mq_open(("/" + NAME).encode(), os.O_RDONLY | os.O_NONBLOCK)
        buf = ctypes.create_string_buffer(8192)
        got = librt.mq_receive(mq, buf, 8192, None) if mq >= 0 else -1
        return buf.raw[:got].decode("ascii", "replace") if got > 0 else ""
    try:
        with open("/dev/shm/" + NAME) as fh:
            return fh.read()
    except OSError:
        return ""
'''
IPC_KINDS = ("sysv_shm", "sysv_msg", "sysv_sem", "posix_mq")
HARNESS_MODULES = ("ast", "ctypes", "io", "json", "select", "signal", "time", "traceback")
"""What the Code harness imports: preloaded by a sandbox whose jobs cannot read the Python installation."""


def secret(kind: str, token: str) -> str:
    """What a job plants of ``token`` (a semaphore holds a number below 4096: three hex digits of it)."""
    return token[:3] if kind == "sysv_sem" else token


def _ipc_drafts(function: str, kind: str, key: int, name: str, token: str) -> tuple[str, str]:
    lib = IPC_LIB % {"key": key, "name": name}
    planter = lib + f"\ndef {function}(*args, **kwargs):\n    return plant({kind!r}, {token!r})\n"
    reader = lib + f"\ndef {function}(*args, **kwargs):\n    return read({kind!r})\n"
    return planter, reader


def _ipc_episode(sandbox: object, kind: str) -> tuple[str, str, str, int, str]:
    """Plant an IPC object holding a token from one job and read it from the next (each a TOOL run of a draft of
    the Code env); returns (token, what the planting job said, what the reading job saw, key, name)."""
    token = uuid.uuid4().hex[:16]
    key, name = random.randrange(1 << 20, 1 << 30), "hg-" + token
    env = gym.make("HarnessCode-v1", sandbox=sandbox)
    task = env.unwrapped.domain.all_tasks()[0]
    fn = task.payload.function
    planter, reader = _ipc_drafts(fn, kind, key, name, token)
    call = ToolCall("run_example", {"call": f"{fn}(1)"})
    env.unwrapped.worker = HostileWorker([planter, reader], [call])
    play(env, (Action.DRAFT, Action.TOOL, Action.DRAFT, Action.TOOL), task_id=task.task_id)
    (_, planted), (_, read) = env.unwrapped.context.tool_history
    env.close()
    return token, planted.output or planted.error, read.output or read.error, key, name


@pytest.fixture(scope="module", params=["process", "docker"])
def ipc_backend(request: pytest.FixtureRequest) -> str:
    return require_backend(request.param)


@pytest.mark.parametrize("kind", IPC_KINDS)
def test_ipc_objects_do_not_cross_jobs(ipc_backend: str, kind: str) -> None:
    token, planted, seen, _, _ = _ipc_episode(ipc_backend, kind)
    assert secret(kind, token) not in seen, (kind, planted, seen)


def _host_ipc_leftovers(key: int, name: str) -> list[str]:
    """IPC objects with ``key`` or ``name`` in this (the host's) IPC namespace, removing any it finds."""
    libc = ctypes.CDLL(None, use_errno=True)
    remove = {"shm": lambda ipc_id: libc.shmctl(ipc_id, 0, None), "msg": lambda ipc_id: libc.msgctl(ipc_id, 0, None),
              "sem": lambda ipc_id: libc.semctl(ipc_id, 0, 0)}  # IPC_RMID
    found = []
    for kind, table in (("sysv_shm", "shm"), ("sysv_msg", "msg"), ("sysv_sem", "sem")):
        for row in Path(f"/proc/sysvipc/{table}").read_text().splitlines()[1:]:
            fields = row.split()
            if int(fields[0]) == key:
                found.append(kind)
                remove[table](int(fields[1]))
    librt = ctypes.CDLL("librt.so.1", use_errno=True)
    if librt.mq_unlink(("/" + name).encode()) == 0:
        found.append("posix_mq")
    if os.path.exists("/dev/shm/" + name):
        os.unlink("/dev/shm/" + name)
        found.append("posix_shm")
    return found


@pytest.mark.skipif(not IS_ROOT, reason="a job of a non-root sandbox without isolation is the user itself")
@pytest.mark.parametrize("kind", IPC_KINDS + ("posix_shm",))
def test_no_isolation_leaves_no_ipc_objects(kind: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        sandbox = ProcessSandbox(isolation="none", require_isolation=False, preload=HARNESS_MODULES)
        token, planted, seen, key, name = _ipc_episode(sandbox, kind)
    sandbox.close()
    leftovers = _host_ipc_leftovers(key, name)
    assert leftovers == [] and secret(kind, token) not in seen, (kind, planted, seen, leftovers)


# ----- DB-Bench's SQLite: memory and parse time ------------------------------------------------------------
_DB_CHILD = r'''
import json, resource, sys, time, warnings
warnings.simplefilter("ignore")
import gymnasium as gym
import harness_gym
from harness_gym.core.actions import Action
from tests.test_hostile import HostileWorker

def rss_mb():
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmRSS")) / 1024

env = gym.make("HarnessDBBench-v1", worker=HostileWorker([""]))
task = max((t for t in env.unwrapped.domain.all_tasks() if not t.payload.record.is_mutation),
           key=lambda t: len(t.payload.record.table.rows))
env.unwrapped.worker.drafts = [sys.stdin.read().replace("TABLE", "`" + task.payload.record.table.name + "`")]
with open("/proc/self/statm") as fh:
    vm = int(fh.read().split()[0]) * resource.getpagesize()
limit = vm + int(sys.argv[1]) * 1024 * 1024
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
before = rss_mb()
env.reset(seed=0, options={"task_id": task.task_id})
out = {}
for action in (Action.DRAFT, Action.CHECK, Action.SUBMIT):
    start = time.monotonic()
    info = env.step(int(action))[4]
    out[action.name] = time.monotonic() - start
check = env.unwrapped.context.last_check
out.update(passed=check.passed, feedback=check.feedback, quality=info["quality"], rss_growth_mb=rss_mb() - before)
print(json.dumps(out))
'''
DB_ADDRESS_SPACE_MB = 1536
"""The child's address-space headroom: far above what the bounded engine needs, far below the 7 GB the unbounded
one reached."""


def _db_attack(sql: str) -> dict:
    """Run DRAFT, CHECK, SUBMIT of ``sql`` (``TABLE`` names the task's table) in a child process with an
    address-space limit; what it measured."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", _DB_CHILD, str(DB_ADDRESS_SPACE_MB)], input=sql,
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


# 500,000 characters per row from REPLACE, which MySQL has (the engine refuses zeroblob, which it has not)
WIDE_VALUE = "REPLACE(" * 5 + "'xxxxx'" + ", 'x', 'xxxxxxxxxx')" * 5


def test_sqlite_wide_cross_join_is_bounded_in_memory() -> None:
    got = _db_attack(f"SELECT {WIDE_VALUE} FROM TABLE a, TABLE b, TABLE c")
    assert not got["passed"] and got["quality"] == 0.0 and "bytes" in got["feedback"], got
    assert got["rss_growth_mb"] < 512, got


def test_sqlite_sorted_cross_join_is_bounded_in_memory() -> None:
    got = _db_attack(f"SELECT {WIDE_VALUE} FROM TABLE a, TABLE b, TABLE c ORDER BY RAND()")
    assert not got["passed"] and got["quality"] == 0.0 and "heap bound" in got["feedback"], got
    assert got["rss_growth_mb"] < 512, got


def test_sqlite_long_statement_is_refused_before_parsing() -> None:
    got = _db_attack("SELECT " + "+".join(["1"] * 600_000) + " FROM TABLE")
    assert not got["passed"] and got["quality"] == 0.0, got
    assert "characters" in got["feedback"], got
    # a generous bound on each step: the deadline covers parsing, execution and formatting
    assert max(got["DRAFT"], got["CHECK"], got["SUBMIT"]) < 10.0, got


# ----- the retail strict output match -------------------------------------------------------------------
def _customer_figures(snapshot: object, user_id: str) -> list[str]:
    tables = snapshot.tables  # type: ignore[attr-defined]
    figures = []
    for oid in tables["users"][user_id]["orders"]:
        order = tables["orders"][oid]
        figures += [str(item["price"]) for item in order["items"]]
        figures.append(str(round(sum(item["price"] for item in order["items"]), 2)))
        figures += [str(p["amount"]) for p in order.get("payment_history", [])]
    return list(dict.fromkeys(figures))


@pytest.mark.parametrize("carrier", ["transfer_summary", "failing_call", "undone_address_change"])
def test_retail_stuffed_reply_scores_zero(carrier: str) -> None:
    from harness_gym.domains.tau_retail.drafts import compose_reply, encode_draft

    env = gym.make("HarnessTauRetail-v1", worker=HostileWorker())
    domain = env.unwrapped.domain
    passed = []
    for task in [t for t in domain.all_tasks() if t.payload.outputs]:
        data = task.payload
        listed = _customer_figures(domain.snapshot, data.user_id)
        if not set(listed) - set(data.outputs):
            continue  # the customer's only figure is the required output: nothing is stuffed
        figures = " ".join(listed)
        user = domain.snapshot.tables["users"][data.user_id]
        if carrier == "transfer_summary":
            extra = [ToolCall("transfer_to_human_agents", {"summary": figures})]
        elif carrier == "failing_call":
            extra = [ToolCall("cancel_pending_order", {"order_id": figures, "reason": "no longer needed"})]
        else:  # an address change carrying the figures, then the address put back: the state is the gold one
            address = dict(user["address"])
            extra = [ToolCall("modify_user_address", {"user_id": data.user_id, **address, "address2": figures}),
                     ToolCall("modify_user_address", {"user_id": data.user_id, **address})]
        reply = (compose_reply(data.gold_plan, ()) + " Figures: " + figures)[:1000]
        env.unwrapped.worker.drafts = [encode_draft(tuple(extra) + tuple(data.gold_plan), reply)]
        info = play(env, (Action.DRAFT, Action.SUBMIT), task_id=task.task_id)[-1]
        if info["quality"] > 0:
            passed.append(task.task_id)
    assert passed == [], f"{len(passed)} tasks reach Q > 0 with a stuffed reply: {passed[:5]}"
    env.close()


# ----- the execution cache and the isolation in force --------------------------------------------------------
def _no_bwrap(monkeypatch: pytest.MonkeyPatch) -> None:
    real_which = process_mod.shutil.which
    monkeypatch.setattr(process_mod.shutil, "which", lambda name: None if name == "bwrap" else real_which(name))
    monkeypatch.setattr(process_mod, "_warned", set())


def _check_reference(require_isolation: bool, marker: str) -> dict:
    env = gym.make("HarnessCode-v1", require_isolation=require_isolation)
    task = env.unwrapped.domain.all_tasks()[0]
    env.unwrapped.worker = HostileWorker([task.reference.content + f"\n# {marker}\n"])
    try:
        return play(env, (Action.DRAFT, Action.CHECK), task_id=task.task_id)[-1]
    finally:
        env.close()


@pytest.mark.skipif(not IS_ROOT, reason="the weaker mode (unshare) needs root")
def test_cache_never_serves_a_result_across_isolation_modes(monkeypatch: pytest.MonkeyPatch) -> None:
    marker = uuid.uuid4().hex
    with monkeypatch.context() as patch:
        _no_bwrap(patch)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            degraded = _check_reference(False, marker)
        assert not degraded["exec_cached"]
        with pytest.raises(IsolationError):
            _check_reference(True, marker)  # checked before the cache is read
    assert not _check_reference(False, marker)["exec_cached"], "a result of the unshare mode served under bwrap"
    assert _check_reference(True, marker)["exec_cached"]


# ----- Code's raise tests -----------------------------------------------------------------------------------
def _raise_tasks() -> list:
    domain = gym.make("HarnessCode-v1").unwrapped.domain
    return [t for t in domain.all_tasks() if any(c.raises for c in t.payload.hidden)]


def test_draft_that_always_raises_scores_zero() -> None:
    env = gym.make("HarnessCode-v1")
    scored = {}
    for task in _raise_tasks():
        raised = next(c.raises for c in task.payload.hidden if c.raises)
        draft = f"def {task.payload.function}(*args, **kwargs):\n    raise {raised}('no')\n"
        env.unwrapped.worker = HostileWorker([draft])
        quality = play(env, (Action.DRAFT, Action.SUBMIT), task_id=task.task_id)[-1]["quality"]
        if quality > 0:
            scored[task.task_id] = quality
    assert len(_raise_tasks()) == 22 and scored == {}, scored
    env.close()


def test_raise_tests_need_the_builtin_exception_class() -> None:
    env = gym.make("HarnessCode-v1")
    for task in _raise_tasks():
        raised = next(c.raises for c in task.payload.hidden if c.raises)
        fake = f"class {raised}(Exception):\n    pass\n\n"
        draft = fake + f"def {task.payload.function}(*args, **kwargs):\n    raise {raised}('not the builtin')\n"
        env.unwrapped.worker = HostileWorker([draft])
        infos = play(env, (Action.DRAFT, Action.CHECK, Action.SUBMIT), task_id=task.task_id)
        assert infos[-1]["quality"] == 0.0, task.task_id
        # the reference with the builtin shadowed by its own class no longer passes its raise tests
        env.unwrapped.worker = HostileWorker([fake + task.reference.content])
        assert play(env, (Action.DRAFT, Action.SUBMIT), task_id=task.task_id)[-1]["quality"] < 1.0, task.task_id
    env.close()


# ----- construction and reset arguments ----------------------------------------------------------------------
@pytest.mark.parametrize("worker", [None, 3, object()])
def test_a_worker_that_is_not_one_is_refused_at_construction(worker: object) -> None:
    with pytest.raises(TypeError, match="worker"):
        gym.make("HarnessPlan-v1", worker=worker)


@pytest.mark.parametrize("seed", [True, 1.5, "1", np.float64(2.0)])
def test_reset_seed_must_be_an_int(seed: object) -> None:
    env = gym.make("HarnessPlan-v1")
    with pytest.raises(TypeError, match="seed"):
        env.reset(seed=seed)
    env.close()
