"""CHECK for code drafts: the visible tests' calls in one sandbox job, judged on the host; the feedback names
the first failing case, and the result counts the visible tests passed. A task without visible tests gets a
load check: the draft must import and bind the name the spec asks for."""

from __future__ import annotations

from harness_gym.core.sandbox import Sandbox
from harness_gym.core.types import CheckResult, Draft
from harness_gym.domains.code.sandbox_jobs import (
    SOLUTION_FILE,
    TEST_CPU_LIMIT_S,
    TEST_WALL_LIMIT_S,
    CodePayload,
    TestCase,
    run_tests,
)

SPECIFICITY = {"returned": 0.9, "raised": 0.7, "load": 0.6, "slow": 0.4, "timeout": 0.2, "crash": 0.2,
               "undefined": 0.6}
"""How precisely CHECK feedback names the fault, by what went wrong: a wrong value names the case, the
expected and the actual value; an exception names the case and the exception; a load error gives the last
traceback line; a missing name says which name; a slow case names only the case; a timed-out or crashed job
says nothing about the fault."""


def load_probe(payload: CodePayload) -> TestCase:
    """The one call of the load check: the spec's name is bound to something callable."""
    return TestCase(f"callable({payload.function})", expect="True")


def check_draft(payload: CodePayload, draft: Draft, sandbox: Sandbox) -> CheckResult:
    """Run the visible tests (or, when the task has none, the load check); the feedback names the first
    failing case. ``n_passed`` / ``n_total`` count the visible tests (``None`` for the load check, which runs
    no test of the spec).

    :param payload: the task's tests
    :param draft: the draft to check
    :param sandbox: where the draft runs
    """
    if not payload.visible:
        return _load_check(payload, draft, sandbox)
    n = len(payload.visible)
    report = run_tests(sandbox, payload.visible, draft.content)
    if report.error_kind == "load":
        return CheckResult(False, f"{SOLUTION_FILE} failed to load: {report.error}", SPECIFICITY["load"], 0, n)
    if report.error_kind:
        return CheckResult(False, report.error, SPECIFICITY[report.error_kind], 0, n)
    failed = [(t, o) for t, o in zip(payload.visible, report.outcomes) if not o.passed]
    if not failed:
        return CheckResult(True, f"all {n} visible tests passed", 1.0, n, n)
    test, outcome = failed[0]
    if outcome.kind == "returned":
        what = f"{test.expr} returned {outcome.detail}; expected {test.describe_expected()}"
    elif outcome.kind == "raised":
        what = f"{test.expr} raised {outcome.detail}; expected {test.describe_expected()}"
    elif outcome.kind == "crash":
        what = f"{test.expr}: {outcome.detail}"
    else:
        what = (f"{test.expr} did not finish within {TEST_CPU_LIMIT_S:g} s of CPU time "
                f"({TEST_WALL_LIMIT_S:g} s of wall-clock time)")
    return CheckResult(False, f"{len(failed)} of {n} visible tests failed; first: {what}",
                       SPECIFICITY[outcome.kind], n - len(failed), n)


def _load_check(payload: CodePayload, draft: Draft, sandbox: Sandbox) -> CheckResult:
    """The check of a task whose prompt shows no example: import the draft and look up the spec's name."""
    report = run_tests(sandbox, (load_probe(payload),), draft.content)
    if report.error_kind == "load":
        return CheckResult(False, f"{SOLUTION_FILE} failed to load: {report.error}", SPECIFICITY["load"])
    if report.error_kind:
        return CheckResult(False, report.error, SPECIFICITY[report.error_kind])
    outcome = report.outcomes[0]
    if outcome.kind in ("returned", "raised"):
        return CheckResult(False, f"{SOLUTION_FILE} loads but does not define a callable {payload.function}",
                           SPECIFICITY["undefined"])
    if not outcome.passed:
        return CheckResult(False, f"looking up {payload.function} in {SOLUTION_FILE} did not finish "
                                  f"({outcome.kind}{': ' + outcome.detail if outcome.detail else ''})",
                           SPECIFICITY[outcome.kind])
    return CheckResult(True, f"{SOLUTION_FILE} loads and defines {payload.function}; the task shows no example "
                             f"to test", 0.0)
