"""SUBMIT for retail drafts: the benchmark's reward (the database state after the plan and the reply's outputs)."""

from __future__ import annotations

from collections.abc import Sequence

from harness_gym.domains.tau_retail.drafts import DraftFormatError, RetailTaskData, parse_draft, replay


def missing_outputs(reply: str, outputs: Sequence[str]) -> list[str]:
    """The required outputs absent from the reply, compared as the benchmark does: the output lower-cased
    against the reply lower-cased with its commas removed."""
    text = reply.lower().replace(",", "")
    return [o for o in outputs if o.lower() not in text]


def reward(data: RetailTaskData, content: str) -> float:
    """The benchmark reward of a draft: 1.0 when the database after its plan hashes like the database after
    the gold actions and the reply contains every required output, else 0.0. Unparsable drafts get 0."""
    try:
        draft = parse_draft(content)
    except DraftFormatError:
        return 0.0
    if replay(data.snapshot, draft.calls).state_hash() != data.gold_hash:
        return 0.0
    return 0.0 if missing_outputs(draft.reply, data.outputs) else 1.0
