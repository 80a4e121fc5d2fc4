"""The seven harness actions of the Harness MDP and what each costs from the episode budget.

Action ids are part of the public API (docs/harness_mdp.md, "Actions and costs") and never change.
"""

from __future__ import annotations

from enum import IntEnum


class Action(IntEnum):
    """A structured harness action. The controller picks one per step."""

    OBSERVE = 0
    RETRIEVE = 1
    TOOL = 2
    DRAFT = 3
    CHECK = 4
    REVISE = 5
    SUBMIT = 6


N_ACTIONS: int = len(Action)

DEFAULT_ACTION_COST: dict[Action, int] = {
    Action.OBSERVE: 1,
    Action.RETRIEVE: 1,
    Action.TOOL: 2,
    Action.DRAFT: 3,
    Action.CHECK: 2,
    Action.REVISE: 3,
    Action.SUBMIT: 1,
}
"""Budget units an action consumes. Every action costs at least 1, so an episode with budget B ends
within B steps."""
