"""Drafts (a plan of write calls plus a reply): their format, the task data they are judged against, their
replay on the store and the reply an agent writes for a plan.

A draft's content is the JSON text ``{"plan": [{"name": TOOL, "arguments": {...}}, ...], "reply": TEXT}``.
Replaying a plan runs every call through the same tool code the gold actions run through
(:func:`~harness_gym.domains.tau_retail.tools.call_once`); a call that is unknown, has invalid arguments or is
refused by its tool is an error and changes nothing (as in the benchmark, where the agent sees the error and
the database stays as it was).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Generic, TypeVar

from harness_gym.core.intake import InputLimitError, loads_json
from harness_gym.core.lru import ByteLRU
from harness_gym.core.types import ToolCall
from harness_gym.domains.tau_retail.store import RetailDB, RetailSnapshot
from harness_gym.domains.tau_retail.tools import PLAN_TOOLS, call_once


class DraftFormatError(ValueError):
    """The draft content is not a plan-and-reply JSON object."""


@dataclass(frozen=True)
class PlanDraft:
    """A parsed draft: the ordered plan calls and the reply to the customer."""

    calls: tuple[ToolCall, ...]
    reply: str


@dataclass(frozen=True)
class RetailTaskData:
    """What the tools, checker and grader of one task need (the ``payload`` of its :class:`Task`).

    :param snapshot: the initial database (shared by every task of a store)
    :param user_id: the customer the ticket is about (``None`` when the gold actions do not tell)
    :param actions: every gold action, reads included, in order
    :param outputs: strings the reply must contain (v1 ``outputs``, τ² ``communicate_info``)
    :param gold_hash: hash of the database after replaying ``actions`` on a fresh copy
    """

    snapshot: RetailSnapshot
    user_id: str | None
    actions: tuple[ToolCall, ...]
    outputs: tuple[str, ...]
    gold_hash: str

    @cached_property
    def gold_plan(self) -> tuple[ToolCall, ...]:
        """The gold actions that belong to a plan (writes and transfers), in order, less those that fail when
        the gold actions are replayed (they change nothing, so the plan without them reaches the gold state)."""
        db = RetailDB(self.snapshot)
        return tuple(a for a in self.actions if call_once(db, a)[0] and a.name in PLAN_TOOLS)


V = TypeVar("V")


class DraftMemo(Generic[V]):
    """Results that are pure functions of a task's data and a draft's content (a verdict, a reward), kept per
    (data, content) while their drafts' total length stays within ``max_bytes``. The data is matched by identity
    and held by its entries, so an entry never answers for another task's data.

    :param max_bytes: bound on the kept drafts' characters (plus 256 per entry)
    """

    def __init__(self, max_bytes: int) -> None:
        self._entries: ByteLRU[tuple[int, str], tuple[RetailTaskData, V]] = ByteLRU(
            max_bytes, lambda key, entry: len(key[1]) + 256)

    def get(self, data: RetailTaskData, content: str) -> V | None:
        """The result kept for ``data`` and ``content``, or ``None``."""
        entry = self._entries.get((id(data), content))
        return entry[1] if entry is not None and entry[0] is data else None

    def put(self, data: RetailTaskData, content: str, result: V) -> None:
        """Keep ``result`` for ``data`` and ``content``."""
        self._entries.put((id(data), content), (data, result))


def encode_draft(calls: Sequence[ToolCall], reply: str) -> str:
    """The draft content for a plan and a reply."""
    return json.dumps({"plan": [{"name": c.name, "arguments": dict(c.args)} for c in calls], "reply": reply})


def parse_draft(content: str) -> PlanDraft:
    """Parse draft content (JSON within the bounds of :func:`~harness_gym.core.intake.loads_json`); raise
    :class:`DraftFormatError` naming what is wrong."""
    try:
        raw = loads_json(content)
    except json.JSONDecodeError as exc:
        raise DraftFormatError(f"draft is not JSON: {exc.msg}") from None
    except InputLimitError as exc:
        raise DraftFormatError(f"draft is not read: {exc}") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("plan"), list) or not isinstance(raw.get("reply"), str):
        raise DraftFormatError('draft must be a JSON object {"plan": [...], "reply": "..."}')
    calls = []
    for i, step in enumerate(raw["plan"]):
        if not isinstance(step, dict) or not isinstance(step.get("name"), str) or not isinstance(
                step.get("arguments", {}), dict):
            raise DraftFormatError(f"plan step {i} must be an object with a string 'name' and object 'arguments'")
        calls.append(ToolCall(name=step["name"], args=step.get("arguments", {})))
    return PlanDraft(calls=tuple(calls), reply=raw["reply"])


def replay(snapshot: RetailSnapshot, calls: Sequence[ToolCall]) -> RetailDB:
    """A fresh view of ``snapshot`` after running ``calls`` in order (failing calls are no-ops)."""
    return replay_effects(snapshot, calls)[0]


def replay_effects(snapshot: RetailSnapshot, calls: Sequence[ToolCall]) -> tuple[RetailDB, tuple[ToolCall, ...]]:
    """:func:`replay`, and the calls that succeeded and changed the database (each in the order it ran)."""
    db = RetailDB(snapshot)
    effective = []
    for call in calls:
        before = db.state_hash()
        if call_once(db, call)[0] and db.state_hash() != before:
            effective.append(call)
    return db, tuple(effective)


def _items(ids: Any) -> str:
    return ", ".join(map(str, ids)) if isinstance(ids, list) else str(ids)


def _address(args: dict[str, Any]) -> str:
    parts = [args.get(k, "") for k in ("address1", "address2", "city", "state", "zip", "country")]
    return " ".join(p for p in parts if p)


def describe_call(call: ToolCall) -> str:
    """How an agent confirms a plan call to the customer."""
    a = dict(call.args)
    oid = a.get("order_id", "")
    texts = {
        "cancel_pending_order": lambda: f"Order {oid} is cancelled ({a.get('reason')}); its payments are refunded.",
        "modify_pending_order_address": lambda: f"Order {oid} will ship to {_address(a)}.",
        "modify_pending_order_items": lambda: (f"In order {oid}, item(s) {_items(a.get('item_ids'))} become "
                                               f"{_items(a.get('new_item_ids'))}; the price difference goes to "
                                               f"{a.get('payment_method_id')}."),
        "modify_pending_order_payment": lambda: f"Order {oid} is now paid with {a.get('payment_method_id')}.",
        "modify_user_address": lambda: f"The default address of {a.get('user_id')} is now {_address(a)}.",
        "return_delivered_order_items": lambda: (f"A return of item(s) {_items(a.get('item_ids'))} of order {oid} "
                                                 f"is requested, refunded to {a.get('payment_method_id')}."),
        "exchange_delivered_order_items": lambda: (f"An exchange in order {oid} of item(s) "
                                                   f"{_items(a.get('item_ids'))} for {_items(a.get('new_item_ids'))} "
                                                   f"is requested; the price difference goes to "
                                                   f"{a.get('payment_method_id')}."),
        "transfer_to_human_agents": lambda: "I am transferring you to a human agent.",
    }
    text = texts.get(call.name)
    return text() if text is not None else f"I ran {call.name}."


def compose_reply(calls: Sequence[ToolCall], outputs: Sequence[str]) -> str:
    """The reply an agent writes for a plan: a confirmation of each call, then the requested information."""
    lines = [describe_call(c) for c in calls] or ["I looked into your request; nothing in your account needed to change."]
    if outputs:
        lines.append("The information you asked for: " + "; ".join(outputs) + ".")
    return " ".join(lines)
