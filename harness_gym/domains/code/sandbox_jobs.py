"""The scripts that run a draft in the sandbox, and the parsing of what they report.

A draft is written to the job's work dir as ``solution.py``; a small harness script (run as ``__main__``)
loads it, evaluates test expressions or one example call in its namespace, and prints one JSON line after
:data:`MARKER`. Whatever the draft itself prints goes to a discarded buffer, and the harness leaves with
``os._exit`` so that no ``atexit`` hook of the draft can print after it.

Each test gets :data:`TEST_CPU_LIMIT_S` seconds of CPU (``ITIMER_PROF``, so a loaded machine does not fail a
correct draft); after :data:`MAX_SLOW_TESTS` such time-outs the remaining tests fail unrun (as a judge stops
on repeated time limits); the whole job gets :data:`JOB_TIMEOUT_S` seconds of wall-clock time from the sandbox.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from harness_gym.sandbox.base import ExecResult, Sandbox

MARKER = "@@harness_gym.code.result@@"
TEST_CPU_LIMIT_S = 0.25
MAX_SLOW_TESTS = 2
"""After this many tests over the CPU limit, the remaining tests are failed without running them."""
JOB_TIMEOUT_S = 4.0
SOLUTION_FILE = "solution.py"
CALL_FILE = "call.txt"

_PRELUDE = r'''
import io, json, math, os, signal, sys, traceback
from ast import literal_eval

MARKER = %(marker)r


def _last_line(exc):
    return traceback.format_exception_only(type(exc), exc)[-1].strip()


def _emit(report):
    sys.__stdout__.write("\n" + MARKER + json.dumps(report) + "\n")
    sys.__stdout__.flush()
    os._exit(0)


def _short_repr(value):
    try:
        text = repr(value)
    except BaseException as exc:
        text = "<repr failed: " + _last_line(exc) + ">"
    return text if len(text) <= 300 else text[:297] + "..."


sys.stdout = io.StringIO()
namespace = {"__name__": "solution"}
try:
    with open(%(solution)r, encoding="utf-8") as fh:
        exec(compile(fh.read(), %(solution)r, "exec"), namespace)
except BaseException as exc:
    _emit({"load_error": _last_line(exc)})
'''

_TESTS_BODY = r'''

class _OverCpuLimit(Exception):
    pass


def _on_alarm(signum, frame):
    raise _OverCpuLimit()


def _same(got, want):
    if isinstance(got, float) or isinstance(want, float):
        numbers = (int, float)
        return (isinstance(got, numbers) and isinstance(want, numbers) and not isinstance(got, bool)
                and not isinstance(want, bool) and math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-9))
    if type(got) is not type(want):
        return False
    if isinstance(got, (list, tuple)):
        return len(got) == len(want) and all(map(_same, got, want))
    if isinstance(got, dict):
        return got.keys() == want.keys() and all(_same(got[k], want[k]) for k in got)
    return got == want


TESTS = %(tests)r
signal.signal(signal.SIGPROF, _on_alarm)
results = []
n_slow = 0
for expr, expect, raises in TESTS:
    if n_slow >= %(max_slow)r:
        results.append([0, "slow", "not run after repeated time-outs"])
        continue
    outcome = None
    try:
        signal.setitimer(signal.ITIMER_PROF, %(limit)r)
        try:
            got = eval(expr, namespace)
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0)
        if raises is not None:
            outcome = [0, "returned", _short_repr(got)]
        elif not _same(got, literal_eval(expect)):
            outcome = [0, "returned", _short_repr(got)]
    except _OverCpuLimit:
        n_slow += 1
        outcome = [0, "slow", ""]
    except BaseException as exc:
        if raises is None or type(exc).__name__ != raises:
            outcome = [0, "raised", _last_line(exc)]
    results.append(outcome or [1, "", ""])
_emit({"results": results})
'''

_CALL_BODY = r'''
with open(%(call)r, encoding="utf-8") as fh:
    call = fh.read()
try:
    value = eval(compile(call, "<call>", "eval"), namespace)
except BaseException as exc:
    _emit({"error": _last_line(exc), "printed": sys.stdout.getvalue()[-300:]})
_emit({"value": _short_repr(value), "printed": sys.stdout.getvalue()[-300:]})
'''


@dataclass(frozen=True)
class TestCase:
    """One test: an expression evaluated in the draft's namespace and what it must give.

    Exactly one of ``expect`` (the ``repr`` of the expected value, a Python literal) and ``raises`` (the name
    of the exception class the expression must raise) is set.
    """

    __test__ = False  # not a pytest test class

    expr: str
    expect: str | None = None
    raises: str | None = None

    def describe_expected(self) -> str:
        return f"raises {self.raises}" if self.raises is not None else self.expect or ""


@dataclass(frozen=True)
class TestOutcome:
    """The result of one test as the harness reported it."""

    __test__ = False

    passed: bool
    kind: str
    """``""`` (passed), ``"returned"`` (a wrong value), ``"raised"`` (an unexpected exception), ``"slow"``."""
    detail: str


@dataclass(frozen=True)
class RunReport:
    """What one harness job established: per-test outcomes, or why there are none (``error``)."""

    outcomes: tuple[TestOutcome, ...]
    error: str = ""
    error_kind: str = ""
    """``"load"`` (the draft failed to import), ``"timeout"``, ``"crash"`` (no result line)."""

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
    check_script: str
    grade_script: str


def _prelude() -> str:
    return _PRELUDE % {"marker": MARKER, "solution": SOLUTION_FILE}


def tests_script(tests: Sequence[TestCase]) -> str:
    """The harness that runs ``tests`` against ``solution.py`` and reports one outcome per test."""
    rows = [(t.expr, t.expect, t.raises) for t in tests]
    return _prelude() + _TESTS_BODY % {"tests": rows, "limit": TEST_CPU_LIMIT_S, "max_slow": MAX_SLOW_TESTS}


CALL_SCRIPT: str = _prelude() + _CALL_BODY % {"call": CALL_FILE}
"""The harness of the ``run_example`` tool: evaluates the expression in ``call.txt``."""


def _result_line(result: ExecResult) -> dict | None:
    at = result.stdout.rfind(MARKER)
    if at < 0:
        return None
    line = result.stdout[at + len(MARKER):].split("\n", 1)[0]
    try:
        report = json.loads(line)
    except json.JSONDecodeError:
        return None
    return report if isinstance(report, dict) else None


def job_failure(result: ExecResult) -> tuple[str, str]:
    """Why a job produced no result line: ``(kind, message)``."""
    if result.timed_out or result.reason == "timeout":
        return "timeout", f"timed out after {JOB_TIMEOUT_S:g} s"
    lines = [ln for ln in result.stderr.strip().splitlines() if ln.strip()]
    why = lines[-1].strip() if lines else f"exit code {result.exit_code}"
    if result.reason:
        why = f"{result.reason}: {why}"
    return "crash", f"the program stopped without a result ({why})"


def parse_tests(result: ExecResult, n_tests: int) -> RunReport:
    """Turn a :func:`tests_script` job into a :class:`RunReport` (never raises)."""
    report = _result_line(result)
    if report is None:
        kind, message = job_failure(result)
        return RunReport(outcomes=(), error=message, error_kind=kind)
    if "load_error" in report:
        return RunReport(outcomes=(), error=str(report["load_error"]), error_kind="load")
    rows = report.get("results")
    if not isinstance(rows, list) or len(rows) != n_tests:
        return RunReport(outcomes=(), error="malformed result line", error_kind="crash")
    return RunReport(outcomes=tuple(TestOutcome(bool(p), str(k), str(d)) for p, k, d in rows))


def run_tests(sandbox: Sandbox, script: str, source: str, n_tests: int) -> RunReport:
    """Run a :func:`tests_script` job on ``source`` (written to ``solution.py``) and parse its report.

    :param sandbox: where the job runs
    :param script: the harness script
    :param source: the Python source under test
    :param n_tests: how many tests the script runs (a report with another count is malformed)
    """
    result = sandbox.run(script, files={SOLUTION_FILE: source}, timeout_s=JOB_TIMEOUT_S)
    return parse_tests(result, n_tests)


def parse_call(result: ExecResult) -> tuple[bool, str]:
    """Turn a :data:`CALL_SCRIPT` job into ``(ok, text)``: the value's repr, or the error line."""
    report = _result_line(result)
    if report is None:
        return False, job_failure(result)[1]
    printed = str(report.get("printed") or "")
    suffix = f"\n(printed: {printed.strip()})" if printed.strip() else ""
    if "load_error" in report:
        return False, f"{SOLUTION_FILE} failed to load: {report['load_error']}"
    if "error" in report:
        return False, str(report["error"]) + suffix
    return True, str(report.get("value", "")) + suffix
