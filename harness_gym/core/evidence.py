"""Per-step evidence signals for ECPO (docs/harness_mdp.md, "Info").

Every step the env reports four raw signals in ``info["evidence"]``:

- ``env``: execution feedback: +0.05 when the step ran code or a tool without an exception, -0.1 when it
  raised one, the task quality Q on the final step, 0 otherwise;
- ``consistency``: a rule-based score in [0, 1] of how well the step fits the process so far (for example,
  revising after a failed check is consistent, submitting a draft whose check failed is not);
- ``knowledge``: +1 / -1 / 0 from the domain's knowledge base (:meth:`Domain.knowledge_signal`);
- ``self``: the change in the worker's confidence caused by the step.

They are evidence, not reward: the env's reward stays the terminal quality.
"""

from __future__ import annotations

from harness_gym.core.actions import Action

EVIDENCE_SOURCES: tuple[str, ...] = ("env", "consistency", "knowledge", "self")


def consistency(action: Action, *, valid: bool, checked_current: bool, last_check: int, any_evidence: bool,
                repeated_failed_tool: bool) -> float:
    """Rule-based process consistency of taking ``action`` in the state before the step.

    :param valid: whether the action was applicable
    :param checked_current: the current draft version had been checked before the step
    :param last_check: result of the most recent check (+1 pass, -1 fail, 0 none)
    :param any_evidence: some OBSERVE/RETRIEVE/TOOL succeeded before the step
    :param repeated_failed_tool: a TOOL step repeating the call that just failed
    """
    if not valid:
        return 0.0
    passed_current = checked_current and last_check > 0
    failed_current = checked_current and last_check < 0
    if action in (Action.OBSERVE, Action.RETRIEVE):
        return 0.6 if passed_current else 1.0
    if action == Action.TOOL:
        return 0.0 if repeated_failed_tool else 1.0
    if action == Action.DRAFT:
        if passed_current:
            return 0.3
        return 1.0 if any_evidence else 0.5
    if action == Action.CHECK:
        return 0.2 if checked_current else 1.0
    if action == Action.REVISE:
        return 1.0 if failed_current else 0.3
    # SUBMIT
    if failed_current:
        return 0.1
    return 1.0 if passed_current else 0.6
