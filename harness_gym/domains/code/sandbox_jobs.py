"""The code domain's sandbox job, and the judging of what it returns, which happens on the host.

The job only evaluates. It receives the draft (``solution.py``) and the call expressions (``calls.json``),
never an expected value, and answers with the *values* the calls gave; the host decodes each value with a
strict literal grammar (:func:`decode_literal`) and compares it with the expected value it kept to itself
(:func:`same`). A draft therefore scores exactly when its calls return the right values: patching builtins,
the serialiser or the job's own functions, walking frames, reading ``linecache`` or exiting early can at
best change the values reported, which the draft could as well have returned.

Inside the job, the harness script (run as ``__main__``) never executes draft code itself. It makes itself
non-dumpable (a draft process of the same uid can neither ptrace it nor open its ``/proc`` files), keeps the
job's stdout for itself, and forks a child that

1. keeps one descriptor: a pipe the harness made for it (stdout, stderr and stdin are ``/dev/null``,
   everything else is closed, so no draft code and no process it forks can write to the job's stdout);
2. loads ``solution.py`` and evaluates the calls in order in its namespace (as the generator computed the
   expected values), each with :data:`TEST_CPU_LIMIT_S` seconds of CPU (``ITIMER_PROF`` with its default
   action: the child is killed) and :data:`TEST_WALL_LIMIT_S` seconds of wall-clock time (the harness kills
   the child's process group);
3. writes one JSON line per call to the pipe: ``{"value": LITERAL}``, ``{"raised": [names of the builtin
   exception classes the exception's type derives from], "error": LAST_TRACEBACK_LINE}`` or
   ``{"unencodable": TYPE_NAME}``, each with ``"printed"`` (the end of what the draft printed), or once
   ``{"load_error": ...}``. The builtin classes are the objects ``builtins`` held before the draft loaded,
   so a draft's own class called ``ValueError`` (or a rebound ``builtins.ValueError``) derives from none of
   them but ``Exception`` and ``BaseException``.

A child stopped on a call (over a limit, or dead without its line) fails that call, and a new child
continues with the next one; after :data:`MAX_SLOW_TESTS` calls over a limit the remaining ones are not run
(as a judge stops on repeated time limits). The harness then prints one JSON line, ``{"results": [...]}``
with per call ``{"status": "exited" | "slow" | "unrun", "exit": CODE, "message": LINE}``, and leaves with
``os._exit``. The whole job gets :data:`JOB_TIMEOUT_S` seconds of wall-clock time from the sandbox.

Values travel as Python literal text made of ``None``, ``bool``, ``int``, ``float`` (``nan``, ``inf`` and
``-inf`` included), ``str``, ``bytes``, ``list``, ``tuple``, ``dict``, ``set`` and ``frozenset``, with exact
types: an instance of a subclass (or of any other class) is reported as unencodable and fails its test.
Comparison rule (:func:`same`): ``bool`` is never a number (``True`` does not match ``1``); when either side
is a ``float``, two numbers match when :func:`math.isclose` within 1e-9 (so ``1`` matches ``1.0``); any other
value matches only a value of exactly the same type and equal contents (a ``tuple`` never matches a
``list``); an integer beyond a float's range matches no float. An expected exception matches when the raised
exception's type derives from the builtin class of that name, and only when no test of the same job that expects
a value raised that class too (a draft that raises it everywhere has not told the bad inputs from the good).

The host reads a reported value with :func:`decode_literal` within the bounds of
:func:`~harness_gym.core.intake.parse_expression` (at most :data:`MAX_MESSAGE_BYTES` characters, nested at
most 100 levels, integers of at most :data:`~harness_gym.core.intake.MAX_INT_BITS` bits), so a report a draft
forged on its descriptor is a failed test, never an exception on the host.
"""

from __future__ import annotations

import ast
import binascii
import importlib.util
import json
import marshal
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from harness_gym.core.intake import InputLimitError, parse_expression
from harness_gym.core.sandbox import ExecResult, Sandbox

TEST_CPU_LIMIT_S = 0.25
"""CPU seconds of one call (and of loading the draft)."""
TEST_WALL_LIMIT_S = 1.0
"""Wall-clock seconds of one call (a draft that sleeps uses no CPU)."""
MAX_SLOW_TESTS = 2
"""After this many calls over a limit, the remaining tests are failed without running them."""
JOB_TIMEOUT_S = 4.0
MAX_MESSAGE_BYTES = 64 * 1024
"""The most one call may report; a longer report fails the call."""
SOLUTION_FILE = "solution.py"
CALLS_FILE = "calls.json"

HARNESS_SCRIPT = r'''
import ast, builtins, ctypes, io, json, os, select, signal, sys, time, traceback

SOLUTION = %(solution)r
CPU_LIMIT_S = %(cpu)r
WALL_LIMIT_S = %(wall)r
MAX_SLOW = %(max_slow)r
MAX_MESSAGE = %(max_message)r
NO_PREIMPORT = frozenset({"antigravity", "this", "idlelib", "tkinter", "turtle", "turtledemo", "webbrowser"})

ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 0
BUILTIN_EXCEPTIONS = tuple((name, cls) for name, cls in vars(builtins).items()
                           if isinstance(cls, type) and issubclass(cls, BaseException))
REPORT_FD = os.dup(1)
os.set_inheritable(REPORT_FD, False)
_null = os.open(os.devnull, os.O_RDWR)
os.dup2(_null, 0)
os.dup2(_null, 1)
with open(%(calls)r, encoding="utf-8") as fh:
    CALLS = json.load(fh)
with open(SOLUTION, encoding="utf-8") as fh:
    SOURCE = fh.read()


def preimport():
    """Import the standard-library modules the draft names, once, so that each call's child finds them loaded."""
    try:
        tree = ast.parse(SOURCE)
    except (SyntaxError, ValueError):
        return
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    here = os.getcwd()
    saved = sys.path[:]
    sys.path[:] = [p for p in sys.path if p not in ("", here)]
    for name in sorted(names):
        if name.split(".")[0] in sys.stdlib_module_names and name.split(".")[0] not in NO_PREIMPORT:
            try:
                __import__(name)
            except BaseException:
                pass
    sys.path[:] = saved


def last_line(exc):
    try:
        return traceback.format_exception_only(type(exc), exc)[-1].strip()[:300]
    except BaseException:
        return type(exc).__name__


class Unencodable(Exception):
    pass


def encode(value):
    kind = type(value)
    if value is None or kind is bool or kind is int or kind is float or kind is str or kind is bytes:
        return repr(value)
    if kind is list:
        return "[" + ", ".join(map(encode, value)) + "]"
    if kind is tuple:
        return "(" + ", ".join(map(encode, value)) + ("," if len(value) == 1 else "") + ")"
    if kind is dict:
        return "{" + ", ".join(encode(k) + ": " + encode(v) for k, v in value.items()) + "}"
    if kind is set or kind is frozenset:
        inner = "{" + ", ".join(map(encode, value)) + "}" if value else ""
        return kind.__name__ + "(" + inner + ")"
    raise Unencodable(kind.__module__ + "." + kind.__qualname__)


def report(msg, printed):
    try:
        msg["printed"] = printed.getvalue()[-300:]
        printed.seek(0)
        printed.truncate()
    except BaseException:
        msg["printed"] = ""
    view = memoryview((json.dumps(msg) + "\n").encode("utf-8")[: MAX_MESSAGE])
    while view:
        view = view[os.write(3, view):]


def evaluate(expr, namespace):
    try:
        value = eval(compile(expr, "<call>", "eval"), namespace)
    except BaseException as exc:
        kind = type(exc)
        return {"raised": [name for name, cls in BUILTIN_EXCEPTIONS if issubclass(kind, cls)],
                "error": last_line(exc)}
    try:
        return {"value": encode(value)}
    except Unencodable as exc:
        return {"unencodable": str(exc)}
    except BaseException as exc:
        return {"unencodable": last_line(exc)}


def child(calls, fd):
    """Load the draft, evaluate ``calls`` in order and report one line per call on ``fd``. Never returns."""
    os.setpgid(0, 0)
    os.dup2(fd, 3)
    os.closerange(4, 1 << 16)
    os.dup2(0, 2)
    signal.signal(signal.SIGPROF, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    printed = io.StringIO()
    sys.stdout = sys.stderr = sys.__stdout__ = sys.__stderr__ = printed
    namespace = {"__name__": "solution", "__file__": SOLUTION, "__builtins__": builtins}
    signal.setitimer(signal.ITIMER_PROF, CPU_LIMIT_S)
    try:
        exec(compile(SOURCE, SOLUTION, "exec"), namespace)
    except BaseException as exc:
        signal.setitimer(signal.ITIMER_PROF, 0)
        report({"load_error": last_line(exc)}, printed)
        return
    signal.setitimer(signal.ITIMER_PROF, 0)
    for expr in calls:
        signal.setitimer(signal.ITIMER_PROF, CPU_LIMIT_S)
        msg = evaluate(expr, namespace)
        signal.setitimer(signal.ITIMER_PROF, 0)
        report(msg, printed)


def run_from(first):
    """Fork a child for ``CALLS[first:]``; the rows of the calls it reported, then of the one it stopped on."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_fd)
            child(CALLS[first:], write_fd)
        finally:
            os._exit(0)
    os.close(write_fd)
    try:
        os.setpgid(pid, pid)
    except OSError:
        pass
    pidfd = os.pidfd_open(pid)
    rows, buf = [], bytearray()
    n_left = len(CALLS) - first
    deadline = time.monotonic() + WALL_LIMIT_S
    late = False
    try:
        while len(rows) < n_left:
            left = deadline - time.monotonic()
            if left <= 0:
                late = True
                break
            ready, _, _ = select.select([read_fd, pidfd], [], [], left)
            if read_fd in ready:
                chunk = os.read(read_fd, 65536)
                if not chunk:
                    break
                buf += chunk
                while b"\n" in buf and len(rows) < n_left:
                    line, _, rest = bytes(buf).partition(b"\n")
                    buf = bytearray(rest)
                    rows.append({"status": "exited", "exit": 0, "message": line.decode("utf-8", "replace")})
                    deadline = time.monotonic() + WALL_LIMIT_S
                    if load_failed(rows[-1]["message"]):
                        rows.extend(dict(UNRUN) for _ in range(n_left - len(rows)))
                if len(buf) > MAX_MESSAGE:
                    break
            elif pidfd in ready:
                break
    finally:
        for kill in (os.killpg, os.kill):
            try:
                kill(pid, signal.SIGKILL)
            except OSError:
                pass
        _, status = os.waitpid(pid, 0)
        os.close(pidfd)
        os.close(read_fd)
    if len(rows) < n_left:
        code = os.waitstatus_to_exitcode(status)
        slow = late or code in (-signal.SIGPROF, -signal.SIGXCPU)
        rows.append({"status": "slow" if slow else "exited", "exit": code, "message": None})
    return rows


def load_failed(message):
    try:
        return "load_error" in json.loads(message)
    except BaseException:
        return False


UNRUN = {"status": "unrun", "exit": 0, "message": None}
preimport()
results = []
n_slow = 0
while len(results) < len(CALLS):
    if n_slow >= MAX_SLOW:
        results.append(dict(UNRUN))
        continue
    rows = run_from(len(results))
    results.extend(rows)
    n_slow += rows[-1]["status"] == "slow"
view = memoryview((json.dumps({"results": results[: len(CALLS)]}) + "\n").encode("utf-8"))
while view:
    view = view[os.write(REPORT_FD, view):]
os._exit(0)
''' % {"solution": SOLUTION_FILE, "calls": CALLS_FILE, "cpu": TEST_CPU_LIMIT_S, "wall": TEST_WALL_LIMIT_S,
       "max_slow": MAX_SLOW_TESTS, "max_message": MAX_MESSAGE_BYTES}
"""The job's ``__main__``: evaluates the calls of ``calls.json`` in a forked child and prints what each returned."""

HARNESS_PRELOAD = ("ast",)
"""The modules the harness imports that a job server does not hold already: the code domain's sandbox preloads
them (:attr:`~harness_gym.domains.code.domain.CodeDomain.sandbox_options`), so that a job finds them imported.
The harness imports them before any draft code runs, so a draft sees the same modules either way."""

_LOADER = """import binascii, marshal, sys
_magic = getattr(sys.modules.get("_frozen_importlib_external"), "MAGIC_NUMBER", None)
exec(marshal.loads(binascii.a2b_base64(%r)) if _magic == %r else compile(%r, "main.py", "exec"))
"""


def job_code(script: str) -> str:
    """What a job runs to execute ``script``: its code object compiled here and marshalled, which the job loads
    when its interpreter reads this one's bytecode (the same magic number), else the source, compiled there.

    Compiling the harness took ~4 ms of each job's CPU time (a forked job starts with cold caches); loading its
    code object takes ~0.1 ms. The job executes the same code object either way.

    :param script: Python source, run as the job's ``__main__`` (compiled as ``main.py``)
    """
    blob = binascii.b2a_base64(marshal.dumps(compile(script, "main.py", "exec")), newline=False).decode("ascii")
    return _LOADER % (blob, importlib.util.MAGIC_NUMBER, script)


HARNESS_JOB = job_code(HARNESS_SCRIPT)
"""The job code of :data:`HARNESS_SCRIPT` (see :func:`job_code`): what :func:`run_calls` sends."""


@dataclass(frozen=True)
class TestCase:
    """One test: an expression evaluated in the draft's namespace and what it must give.

    Exactly one of ``expect`` (the ``repr`` of the expected value, a literal :func:`decode_literal` reads)
    and ``raises`` (the name of the exception class the expression must raise) is set. The job only ever
    sees ``expr``.
    """

    __test__ = False  # not a pytest test class

    expr: str
    expect: str | None = None
    raises: str | None = None

    def describe_expected(self) -> str:
        return f"raises {self.raises}" if self.raises is not None else self.expect or ""


@dataclass(frozen=True)
class TestOutcome:
    """The host's verdict on one test."""

    __test__ = False

    passed: bool
    kind: str
    """``""`` (passed), ``"returned"`` (a wrong value), ``"raised"`` (an unexpected exception), ``"slow"``
    (over a limit, or not run after repeated time-outs), ``"crash"`` (the call's process died without
    a report, or reported something malformed)."""
    detail: str


@dataclass(frozen=True)
class RunReport:
    """What one job established: per-test outcomes, or why there are none (``error``)."""

    outcomes: tuple[TestOutcome, ...]
    error: str = ""
    error_kind: str = ""
    """``"load"`` (the draft failed to import), ``"timeout"``, ``"crash"`` (no well-formed report)."""

    @property
    def n_passed(self) -> int:
        return sum(o.passed for o in self.outcomes)


@dataclass(frozen=True)
class CodePayload:
    """What the checker, grader and tool of one task need, prepared at load time."""

    function: str
    kind: str
    visible: tuple[TestCase, ...]
    hidden: tuple[TestCase, ...]


# ----- the strict literal grammar -----------------------------------------------------------------------
_NAMED_FLOATS = {"nan": math.nan, "inf": math.inf}
_MAX_DEPTH = 100


def _literal(node: ast.AST, depth: int) -> Any:
    if depth > _MAX_DEPTH:
        raise ValueError("nested too deeply")
    if isinstance(node, ast.Constant) and type(node.value) in (int, float, str, bytes, bool, type(None)):
        return node.value
    if isinstance(node, ast.Name) and node.id in _NAMED_FLOATS:
        return _NAMED_FLOATS[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _literal(node.operand, depth + 1)
        if type(value) not in (int, float):
            raise ValueError("a sign applies to numbers only")
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.List):
        return [_literal(e, depth + 1) for e in node.elts]
    if isinstance(node, ast.Tuple):
        return tuple(_literal(e, depth + 1) for e in node.elts)
    if isinstance(node, ast.Dict) and None not in node.keys:
        return {_literal(k, depth + 1): _literal(v, depth + 1) for k, v in zip(node.keys, node.values)}
    if isinstance(node, ast.Set):
        return {_literal(e, depth + 1) for e in node.elts}
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("set", "frozenset")
            and not node.keywords and len(node.args) <= 1):
        items = _literal(node.args[0], depth + 1) if node.args else set()
        if type(items) is not set:
            raise ValueError(f"{node.func.id}() takes a set display")
        return items if node.func.id == "set" else frozenset(items)
    raise ValueError(f"not a plain literal: {ast.dump(node)[:80]}")


def decode_literal(text: str) -> Any:
    """The value of ``text``, a literal of the grammar in this module's docstring.

    :param text: the literal (an expected value from a task file, or a value a job reported)
    :raises ValueError: for anything else (names, calls, operators, comprehensions, ...)
    """
    if not isinstance(text, str):
        raise ValueError(f"expected literal text, got {type(text).__name__}")
    try:
        tree = parse_expression(text, max_chars=MAX_MESSAGE_BYTES, max_depth=_MAX_DEPTH)
    except (SyntaxError, InputLimitError) as exc:
        raise ValueError(f"not a Python literal: {exc}") from None
    try:
        return _literal(tree, 0)
    except TypeError as exc:  # an unhashable set member or dict key
        raise ValueError(f"not a Python literal: {exc}") from None


_decode_short = lru_cache(maxsize=16384)(decode_literal)


_PLAIN_WORDS = {"True": True, "False": False, "None": None}
_PLAIN_ITEM = (r"-?[0-9]+(?:\.[0-9]+(?:e[+-][0-9]+)?|e[+-][0-9]+)"  # a float as repr writes it
               r"|-?(?:0|[1-9][0-9]{0,17})"  # an int of at most 18 digits
               r"|'[ -&(-\[\]-~]*'")  # a str of printable ASCII without quotes or backslashes
_PLAIN_SCALAR = re.compile(_PLAIN_ITEM)
_PLAIN_LIST = re.compile(rf"\[(?:(?:{_PLAIN_ITEM})(?:, (?:{_PLAIN_ITEM}))*)?\]")
_PLAIN_TUPLE = re.compile(rf"\((?:(?:{_PLAIN_ITEM}),|(?:{_PLAIN_ITEM})(?:, (?:{_PLAIN_ITEM}))+)?\)")


def _plain_item(token: str) -> int | float | str:
    if token[0] == "'":
        return token[1:-1]
    return float(token) if "." in token or "e" in token else int(token)


def _plain_items(text: str) -> list[Any]:
    return [_plain_item(m.group()) for m in _PLAIN_SCALAR.finditer(text, 1, len(text) - 1)]


def read_literal(text: str) -> Any:
    """What :func:`decode_literal` gives for ``text``. Most values are plain (``True``, ``False``, ``None``, a
    float, an int of at most 18 digits, a str of printable ASCII without quotes or backslashes, or a flat list or
    tuple of those, as ``repr`` writes them): those are read directly, since parsing and checking their syntax
    tree costs ~10-40 us each; other values of at most 256 characters go through a bounded cache.

    :param text: a reported value or an expected value
    :raises ValueError: as :func:`decode_literal`
    """
    if len(text) > MAX_MESSAGE_BYTES:
        return decode_literal(text)  # refused there, whatever the text looks like
    if text in _PLAIN_WORDS:
        return _PLAIN_WORDS[text]
    if _PLAIN_SCALAR.fullmatch(text):
        return _plain_item(text)
    if _PLAIN_LIST.fullmatch(text):
        return _plain_items(text)
    if _PLAIN_TUPLE.fullmatch(text):
        return tuple(_plain_items(text))
    return _decode_short(text) if len(text) <= 256 else decode_literal(text)


@lru_cache(maxsize=8192)
def expected_value(expect: str) -> Any:
    """The decoded expected value of a test (cached: the texts come from the task files, a bounded set).

    :param expect: the test's ``expect`` text
    """
    return read_literal(expect)


def same(got: Any, want: Any) -> bool:
    """Whether value ``got`` matches expected value ``want`` under the rule of this module's docstring."""
    if type(got) is bool or type(want) is bool:
        return type(got) is type(want) and got == want
    if type(got) is float or type(want) is float:
        numbers = (int, float)
        if type(got) not in numbers or type(want) not in numbers or not (_fits_float(got) and _fits_float(want)):
            return False
        return math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-9) or (
            type(got) is float and type(want) is float and math.isnan(got) and math.isnan(want))
    if type(got) is not type(want):
        return False
    if type(got) in (list, tuple):
        return len(got) == len(want) and all(map(same, got, want))
    if type(got) is dict:
        return got.keys() == want.keys() and all(same(got[k], want[k]) for k in got)
    return bool(got == want)


def _fits_float(value: int | float) -> bool:
    """Whether ``value`` is a float or an int a float can hold (:func:`math.isclose` converts ints)."""
    return type(value) is float or value.bit_length() <= 1023


# ----- running and judging -----------------------------------------------------------------------------
def run_calls(sandbox: Sandbox, source: str, calls: Sequence[str]) -> ExecResult:
    """Run the harness job: ``source`` as ``solution.py``, one child per call expression.

    :param sandbox: where the job runs
    :param source: the draft's Python source
    :param calls: the expressions to evaluate (nothing else about the tests enters the job)
    """
    files = {SOLUTION_FILE: source, CALLS_FILE: _calls_json(tuple(calls))}
    return sandbox.run(HARNESS_JOB, files=files, timeout_s=JOB_TIMEOUT_S)


@lru_cache(maxsize=1024)
def _calls_json(calls: tuple[str, ...]) -> str:
    return json.dumps(list(calls))


def job_failure(result: ExecResult) -> tuple[str, str]:
    """Why a job produced no well-formed report: ``(kind, message)``."""
    if result.timed_out or result.reason == "timeout":
        return "timeout", f"timed out after {JOB_TIMEOUT_S:g} s"
    lines = [ln for ln in result.stderr.strip().splitlines() if ln.strip()]
    why = lines[-1].strip() if lines else f"exit code {result.exit_code}"
    if result.reason:
        why = f"{result.reason}: {why}"
    return "crash", f"the program stopped without a result ({why})"


def _rows(stdout: str, n_calls: int) -> list[dict[str, Any]] | None:
    """The harness's per-call rows: its report must be the job's whole stdout, one JSON object."""
    try:
        report = json.loads(stdout)
    except (json.JSONDecodeError, RecursionError):
        return None
    rows = report.get("results") if isinstance(report, dict) else None
    if not isinstance(rows, list) or len(rows) != n_calls or not all(isinstance(r, dict) for r in rows):
        return None
    return rows


def _message(row: dict[str, Any]) -> dict[str, Any] | None:
    """What one call's child reported (None when it died first or wrote something malformed)."""
    text = row.get("message")
    if row.get("status") != "exited" or not isinstance(text, str) or len(text) > MAX_MESSAGE_BYTES:
        return None
    try:
        msg = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return None
    return msg if isinstance(msg, dict) else None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 300 else text[:297] + "..."


def judge(test: TestCase, msg: dict[str, Any], raised_where_values: frozenset[str] = frozenset()) -> TestOutcome:
    """The host's verdict on one test from its call's report.

    :param test: the test, with its expectation
    :param msg: the call's report (see this module's docstring)
    :param raised_where_values: the builtin exception classes (by name) the draft raised on tests of the same job
        that expect a value; a test expecting one of them fails (see this module's docstring)
    """
    if "raised" in msg:
        raised, error = msg.get("raised"), str(msg.get("error", ""))[:300]
        if test.raises is not None and isinstance(raised, list) and test.raises in raised:
            if test.raises in raised_where_values:
                return TestOutcome(False, "raised", f"{error} (it also raises {test.raises} where a value is "
                                                    "expected)")
            return TestOutcome(True, "", "")
        return TestOutcome(False, "raised", error)
    if "unencodable" in msg:
        return TestOutcome(False, "returned", f"an instance of {str(msg['unencodable'])[:200]} (not a plain value)")
    if "value" not in msg or not isinstance(msg["value"], str):
        return TestOutcome(False, "crash", "malformed report")
    try:
        got = read_literal(msg["value"])
    except ValueError:
        return TestOutcome(False, "crash", "malformed value")
    if test.raises is not None or not same(got, expected_value(test.expect or "")):
        return TestOutcome(False, "returned", _short(got))
    return TestOutcome(True, "", "")


@lru_cache(maxsize=1024)
def _exprs(tests: tuple[TestCase, ...]) -> tuple[str, ...]:
    return tuple(t.expr for t in tests)


def run_tests(sandbox: Sandbox, tests: Sequence[TestCase], source: str) -> RunReport:
    """Run ``source`` on the expressions of ``tests`` in the sandbox and judge the values on the host.

    :param sandbox: where the job runs
    :param tests: the tests (only their expressions enter the job)
    :param source: the Python source under test
    """
    tests = tuple(tests)
    result = run_calls(sandbox, source, _exprs(tests))
    report = None
    if result.ok:
        stdout = result.stdout
        report = _judge_cached(tests, stdout) if len(stdout) <= 4096 else judge_report(tests, stdout)
    if report is None:
        kind, message = job_failure(result)
        return RunReport(outcomes=(), error=message, error_kind=kind)
    return report


def judge_report(tests: tuple[TestCase, ...], stdout: str) -> RunReport | None:
    """The host's verdicts on every test from the harness's report (None when the report is malformed).

    :param tests: the tests, with their expectations
    :param stdout: the job's whole standard output (the harness's one JSON line)
    """
    rows = _rows(stdout, len(tests))
    if rows is None:
        return None
    messages = [_message(row) if row.get("status") not in ("slow", "unrun") else None for row in rows]
    for msg in messages:
        if msg is not None and "load_error" in msg:
            return RunReport(outcomes=(), error=str(msg["load_error"])[:300], error_kind="load")
    raised_where_values = frozenset(
        name for test, msg in zip(tests, messages) if test.raises is None and msg is not None
        and isinstance(msg.get("raised"), list) for name in msg["raised"] if isinstance(name, str))
    outcomes = []
    for test, row, msg in zip(tests, rows, messages):
        if row.get("status") in ("slow", "unrun"):
            detail = "" if row.get("status") == "slow" else "not run after repeated time-outs"
            outcomes.append(TestOutcome(False, "slow", detail))
        elif msg is None:
            outcomes.append(TestOutcome(False, "crash", f"the call's process stopped without a report "
                                                         f"(exit code {row.get('exit')})"))
        else:
            outcomes.append(judge(test, msg, raised_where_values))
    return RunReport(outcomes=tuple(outcomes))


_judge_cached = lru_cache(maxsize=4096)(judge_report)
"""Verdicts on reports of at most 4 KiB are cached (a job served from the execution cache is judged once)."""


def call_once(sandbox: Sandbox, source: str, call: str) -> tuple[bool, str]:
    """Evaluate one call on the draft: ``(ok, text)`` with the value's repr, or the error line.

    :param sandbox: where the job runs
    :param source: the draft's Python source
    :param call: the expression
    """
    result = run_calls(sandbox, source, [call])
    rows = _rows(result.stdout, 1) if result.ok else None
    if rows is None:
        return False, job_failure(result)[1]
    if rows[0].get("status") != "exited":
        return False, f"did not finish within {TEST_CPU_LIMIT_S:g} s of CPU time"
    msg = _message(rows[0])
    if msg is None:
        return False, f"the call's process stopped without a report (exit code {rows[0].get('exit')})"
    printed = str(msg.get("printed") or "")
    suffix = f"\n(printed: {printed.strip()})" if printed.strip() else ""
    if "load_error" in msg:
        return False, f"{SOLUTION_FILE} failed to load: {msg['load_error']}"
    if "raised" in msg:
        return False, str(msg.get("error", "")) + suffix
    if "unencodable" in msg:
        return True, f"<an instance of {msg['unencodable']}>" + suffix
    try:
        return True, _short(decode_literal(str(msg.get("value"))))[:300] + suffix
    except ValueError:
        return False, "malformed value" + suffix
