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
    no other figure: every number of two or more digits in it is a required output or a figure of the plan's
    effect, i.e. one in the arguments of a plan call that succeeded and changed the database: an argument the
    store checks (order, user, item and payment method ids), or text a tool stores as given (an address,
    :data:`~harness_gym.domains.tau_retail.tools.STORED_TEXT_ARGS`) when that field of the record the call
    wrote (the order or user it names) still holds it at the end; never free text the store neither checks nor
    keeps
    (:data:`~harness_gym.domains.tau_retail.tools.FREE_TEXT_ARGS`, such as a transfer's summary). A reply
    listing candidate figures (the customer's order totals, item prices, ...) in the hope that one is right
    therefore fails, whether the figures ride in a transfer summary, in a call that fails or changes nothing,
    or in an address change the plan undoes.

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
from harness_gym.domains.tau_retail.drafts import (
    DraftFormatError,
    DraftMemo,
    RetailTaskData,
    parse_draft,
    replay_effects,
)
from harness_gym.domains.tau_retail.store import RetailDB
from harness_gym.domains.tau_retail.tools import FREE_TEXT_ARGS, STORED_TEXT_ARGS

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


def _field_figures(value: Any, field: str) -> Iterable[str]:
    """Numbers in the values of every ``field`` key inside a record."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key == field:
                yield from (n for text in _values(item) for n in _NUMBER.findall(text))
            yield from _field_figures(item, field)
    elif isinstance(value, list):
        for item in value:
            yield from _field_figures(item, field)


_ID_TABLES: tuple[tuple[str, str], ...] = (("order_id", "orders"), ("user_id", "users"))
"""Which argument names the record a write call changes: an order it names, else the user."""


def _written_record(db: RetailDB, call: ToolCall) -> Any:
    """The record ``call`` wrote, as ``db`` holds it now (``None`` when the call names none)."""
    for arg, table in _ID_TABLES:
        key = call.args.get(arg)
        if isinstance(key, str):
            return db.get(table, key)
    return None


def effect_figures(db: RetailDB, effective: Sequence[ToolCall]) -> set[str]:
    """The figures of a plan's effect (see the module docstring, ``"strict"``).

    :param db: the database after the plan
    :param effective: the plan's calls that succeeded and changed the database, in order
    """
    figures: set[str] = set()
    for call in effective:
        for name, value in call.args.items():
            if (call.name, name) in FREE_TEXT_ARGS:
                continue
            found = {n for text in _values(value) for n in _NUMBER.findall(text)}
            if name in STORED_TEXT_ARGS:
                found &= set(_field_figures(_written_record(db, call), name))
            figures |= found
    return figures


def strict_output_problem(reply: str, outputs: Sequence[str], written: set[str]) -> str:
    """Why the reply fails the strict output match ("" when it passes); see the module docstring.

    :param reply: the draft's reply
    :param outputs: the task's required outputs
    :param written: the figures of the draft's plan's effect (:func:`effect_figures`)
    """
    text = reply.lower().replace(",", "")
    for output in outputs:
        want = output.lower().replace(",", "")
        if not re.search(r"(?<![\w.])" + re.escape(want) + r"(?![\w]|\.\d)", text):
            return f"required output {output!r} is not stated as a whole value"
    allowed = {o.lower().replace(",", "") for o in outputs}
    allowed |= {n for o in allowed for n in _NUMBER.findall(o)}
    allowed |= written
    extra = sorted({n for n in _NUMBER.findall(text) if len(n.replace(".", "")) >= 2} - allowed)
    if extra:
        return (f"the reply states figures that are neither required outputs nor of the plan's effect: "
                f"{extra[:5]}")
    return ""


REWARD_MEMO_BYTES = 16 * 2**20
"""Bound on the drafts whose rewards :func:`rewards` keeps (their characters)."""
_kept_rewards: DraftMemo[dict[str, float]] = DraftMemo(REWARD_MEMO_BYTES)


def rewards(data: RetailTaskData, content: str, max_reply_chars: int = MAX_REPLY_CHARS) -> dict[str, float]:
    """The reward of a draft under each output match (``{"strict": ..., "substring": ...}``): 1.0 when the
    database after its plan hashes like the database after the gold actions, the reply is at most
    ``max_reply_chars`` long and it contains every required output (as that match compares), else 0.0. Kept
    per task data and draft (at the default bound): loading a domain grades every candidate, steps reuse that.

    :param data: the task's data
    :param content: the draft
    :param max_reply_chars: the reply bound
    """
    if max_reply_chars != MAX_REPLY_CHARS or not isinstance(content, str):
        return _rewards(data, content, max_reply_chars)
    found = _kept_rewards.get(data, content)
    if found is None:
        found = _rewards(data, content, max_reply_chars)
        _kept_rewards.put(data, content, found)
    return dict(found)


def _rewards(data: RetailTaskData, content: str, max_reply_chars: int) -> dict[str, float]:
    try:
        draft = parse_draft(content)
    except DraftFormatError:
        return dict.fromkeys(OUTPUT_MATCHES, 0.0)
    if len(draft.reply) > max_reply_chars:
        return dict.fromkeys(OUTPUT_MATCHES, 0.0)
    db, effective = replay_effects(data.snapshot, draft.calls)
    if db.state_hash() != data.gold_hash:
        return dict.fromkeys(OUTPUT_MATCHES, 0.0)
    written = effect_figures(db, effective)
    return {"strict": 0.0 if strict_output_problem(draft.reply, data.outputs, written) else 1.0,
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
