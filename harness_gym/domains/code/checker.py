"""CHECK for code drafts: the visible tests' calls in one sandbox job, judged on the host; the feedback names
the first failing case."""

from __future__ import annotations

from harness_gym.core.sandbox import Sandbox
from harness_gym.core.types import CheckResult, Draft
from harness_gym.domains.code.sandbox_jobs import (
    SOLUTION_FILE,
    TEST_CPU_LIMIT_S,
    TEST_WALL_LIMIT_S,
    CodePayload,
    run_tests,
)

SPECIFICITY = {"returned": 0.9, "raised": 0.7, "load": 0.6, "slow": 0.4, "timeout": 0.2, "crash": 0.2}
"""How precisely CHECK feedback names the fault, by what went wrong: a wrong value names the case, the
expected and the actual value; an exception names the case and the exception; a load error gives the last
traceback line; a slow case names only the case; a timed-out or crashed job says nothing about the fault."""


def check_draft(payload: CodePayload, draft: Draft, sandbox: Sandbox) -> CheckResult:
    """Run the visible tests; the feedback names the first failing case.

    :param payload: the task's tests
    :param draft: the draft to check
    :param sandbox: where the draft runs
    """
    report = run_tests(sandbox, payload.visible, draft.content)
    if report.error_kind == "load":
        return CheckResult(False, f"{SOLUTION_FILE} failed to load: {report.error}", SPECIFICITY["load"])
    if report.error_kind:
        return CheckResult(False, report.error, SPECIFICITY[report.error_kind])
    failed = [(t, o) for t, o in zip(payload.visible, report.outcomes) if not o.passed]
    n = len(payload.visible)
    if not failed:
        return CheckResult(True, f"all {n} visible tests passed", 1.0)
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
                       SPECIFICITY[outcome.kind])
