"""SUBMIT for retail drafts: the benchmark's reward (the database state after the plan and the reply's outputs),
with the reply bounded in length and, by default, a strict match of the required outputs.

Two output matches are computed (:func:`rewards`); the domain grades with one (``output_match``, default
``"strict"``) and the env reports both at the end of an episode (``info["reward_strict"]``,
``info["reward_substring"]``):

``"substring"``
    the benchmark's comparison: each required output, lower-cased, is a substring of the reply lower-cased
    with its commas removed.
``"strict"``
    each required output appears as a whole token (not inside a longer number or word), and the reply states
    no other figure: every number of two or more digits in it is a required output or a value in the plan's
    own call arguments (order, item and payment ids, zip codes). A reply listing candidate figures (the
    customer's order totals, item prices, ...) in the hope that one is right therefore fails.

Why not the substring match alone: within :data:`MAX_REPLY_CHARS` a reply can still list dozens of the
customer's figures, and the substring match passes whenever the required one is among them
(``tests/test_redteam.py`` shows such a reply passing it); the strict match does not.

:data:`MAX_REPLY_CHARS` bounds every reply (a longer reply scores 0 under both matches): the longest reply
of a gold candidate (a confirmation of every plan call and the required outputs,
:func:`~harness_gym.domains.tau_retail.drafts.compose_reply`) is 248 characters over the 260 tasks of the
shipped store and 564 over the published τ-bench v1 and τ²-bench retail tasks; the bound, four times the
shipped maximum rounded up, leaves room for a realistic agent's wording and none for a dump of the
customer's records (several thousand characters) or of the catalogue.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from harness_gym.core.types import ToolCall
from harness_gym.domains.tau_retail.drafts import DraftFormatError, RetailTaskData, parse_draft, replay

MAX_REPLY_CHARS = 1000
"""The longest reply graded (characters); see the module docstring for how it was derived."""
OUTPUT_MATCHES: tuple[str, ...] = ("strict", "substring")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w]|\.\d)")


def missing_outputs(reply: str, outputs: Sequence[str]) -> list[str]:
    """The required outputs absent from the reply, compared as the benchmark does: the output lower-cased
    against the reply lower-cased with its commas removed."""
    text = reply.lower().replace(",", "")
    return [o for o in outputs if o.lower() not in text]


def _values(value: Any) -> Iterable[str]:
    if isinstance(value, dict):
        for v in value.values():
            yield from _values(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _values(v)
    else:
        yield str(value).lower().replace(",", "")


def strict_output_problem(reply: str, outputs: Sequence[str], plan: Sequence[ToolCall]) -> str:
    """Why the reply fails the strict output match ("" when it passes); see the module docstring.

    :param reply: the draft's reply
    :param outputs: the task's required outputs
    :param plan: the draft's plan calls (their argument values may appear in the reply)
    """
    text = reply.lower().replace(",", "")
    for output in outputs:
        want = output.lower().replace(",", "")
        if not re.search(r"(?<![\w.])" + re.escape(want) + r"(?![\w]|\.\d)", text):
            return f"required output {output!r} is not stated as a whole value"
    allowed = {o.lower().replace(",", "") for o in outputs}
    allowed |= {n for o in allowed for n in _NUMBER.findall(o)}
    plan_text = " ".join(v for call in plan for v in _values(dict(call.args)))
    allowed |= set(_NUMBER.findall(plan_text))
    extra = sorted({n for n in _NUMBER.findall(text) if len(n.replace(".", "")) >= 2} - allowed)
    if extra:
        return f"the reply states figures that are neither required outputs nor in the plan: {extra[:5]}"
    return ""


def rewards(data: RetailTaskData, content: str, max_reply_chars: int = MAX_REPLY_CHARS) -> dict[str, float]:
    """The reward of a draft under each output match (``{"strict": ..., "substring": ...}``): 1.0 when the
    database after its plan hashes like the database after the gold actions, the reply is at most
    ``max_reply_chars`` long and it contains every required output (as that match compares), else 0.0.

    :param data: the task's data
    :param content: the draft
    :param max_reply_chars: the reply bound
    """
    try:
        draft = parse_draft(content)
    except DraftFormatError:
        return dict.fromkeys(OUTPUT_MATCHES, 0.0)
    if len(draft.reply) > max_reply_chars or replay(data.snapshot, draft.calls).state_hash() != data.gold_hash:
        return dict.fromkeys(OUTPUT_MATCHES, 0.0)
    return {"strict": 0.0 if strict_output_problem(draft.reply, data.outputs, draft.calls) else 1.0,
            "substring": 0.0 if missing_outputs(draft.reply, data.outputs) else 1.0}


def reward(data: RetailTaskData, content: str, output_match: str = "strict") -> float:
    """The reward of a draft under ``output_match`` (see :func:`rewards`). Unparsable drafts get 0.

    :param data: the task's data
    :param content: the draft
    :param output_match: ``"strict"`` (default) or ``"substring"`` (the benchmark's own comparison)
    :raises ValueError: for an unknown ``output_match``
    """
    if output_match not in OUTPUT_MATCHES:
        raise ValueError(f"output_match must be one of {OUTPUT_MATCHES}, got {output_match!r}")
    return rewards(data, content)[output_match]
