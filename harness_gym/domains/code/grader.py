"""SUBMIT for code drafts: the fraction of the hidden tests passed; the job returns the values of the calls, the
host compares them with the expected values (which never enter the job)."""

from __future__ import annotations

from harness_gym.core.sandbox import Sandbox
from harness_gym.core.types import Draft
from harness_gym.domains.code.sandbox_jobs import CodePayload, run_tests


def grade_draft(payload: CodePayload, draft: Draft, sandbox: Sandbox) -> float:
    """The fraction of hidden tests passed (0 when the draft does not load or the job fails).

    :param payload: the task's tests
    :param draft: the draft to grade
    :param sandbox: where the draft runs
    """
    report = run_tests(sandbox, payload.hidden, draft.content)
    if report.error_kind:
        return 0.0
    return report.n_passed / len(payload.hidden)
