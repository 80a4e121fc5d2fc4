"""Realistic wrong plans for a task, made by perturbing its gold plan the way agents get retail tickets wrong.

Each perturbation returns the perturbed plan (or ``None`` where it does not apply to the task); the domain
writes the reply for it and grades the result for real, so a candidate's ``correct`` flag is the grader's.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

from harness_gym.core.types import ToolCall
from harness_gym.domains.tau_retail.store import RetailSnapshot
from harness_gym.domains.tau_retail.tools import ADDRESS_FIELDS, CANCEL_REASONS, WRITE_TOOLS

Plan = tuple[ToolCall, ...]


def _with(plan: Plan, i: int, **changes: Any) -> Plan:
    call = plan[i]
    return plan[:i] + (ToolCall(call.name, {**call.args, **changes}),) + plan[i + 1:]


def _item(snapshot: RetailSnapshot, order_id: str, item_id: str) -> dict[str, Any] | None:
    order = snapshot.tables["orders"].get(order_id)
    if order is None:
        return None
    return next((it for it in order["items"] if it["item_id"] == item_id), None)


class Perturber:
    """Makes the wrong plans of one task.

    :param snapshot: the initial database
    :param user_id: the ticket's customer
    :param plan: the gold plan
    :param seed: seeds the choices (derived from the task id, so the bank is deterministic)
    """

    def __init__(self, snapshot: RetailSnapshot, user_id: str | None, plan: Plan, seed: int) -> None:
        self.snapshot, self.user_id, self.plan = snapshot, user_id, plan
        self.rng = random.Random(seed)
        user = snapshot.tables["users"].get(user_id or "")
        self.user_orders: list[str] = [o for o in (user or {}).get("orders", []) if o in snapshot.tables["orders"]]
        self.methods: list[str] = sorted((user or {}).get("payment_methods", {}))

    def _choice(self, options: Sequence[Any]) -> Any:
        return options[self.rng.randrange(len(options))] if options else None

    def _first(self, key: str) -> int | None:
        return next((i for i, c in enumerate(self.plan) if key in c.args and c.name in WRITE_TOOLS), None)

    def _variant_swap(self, same_product: bool) -> Plan | None:
        i = self._first("new_item_ids")
        if i is None:
            return None
        args = self.plan[i].args
        for j, (old, new) in enumerate(zip(args["item_ids"], args["new_item_ids"])):
            item = _item(self.snapshot, args["order_id"], old)
            if item is None:
                continue
            products = self.snapshot.tables["products"]
            pids = [item["product_id"]] if same_product else sorted(p for p in products if p != item["product_id"])
            options = [vid for pid in pids if pid in products for vid, v in sorted(products[pid]["variants"].items())
                       if v["available"] and vid not in (old, new)]
            if options:
                new_ids = list(args["new_item_ids"])
                new_ids[j] = self._choice(options)
                return _with(self.plan, i, new_item_ids=new_ids)
        return None

    def wrong_variant(self) -> Plan | None:
        """Another available variant of the same product (the wrong size, colour, ...)."""
        return self._variant_swap(same_product=True)

    def wrong_product(self) -> Plan | None:
        """A variant of a different product (a product mix-up)."""
        return self._variant_swap(same_product=False)

    def wrong_item(self) -> Plan | None:
        """Another item of the same order in place of one the customer named."""
        i = self._first("item_ids")
        if i is None:
            return None
        args = self.plan[i].args
        order = self.snapshot.tables["orders"].get(args["order_id"])
        others = sorted({it["item_id"] for it in (order or {}).get("items", [])} - set(args["item_ids"]))
        if not others or not args["item_ids"]:
            return None
        ids = list(args["item_ids"])
        ids[self.rng.randrange(len(ids))] = self._choice(others)
        return _with(self.plan, i, item_ids=ids)

    def wrong_payment(self) -> Plan | None:
        """Another of the customer's payment methods."""
        i = self._first("payment_method_id")
        if i is None:
            return None
        others = [m for m in self.methods if m != self.plan[i].args["payment_method_id"]]
        return _with(self.plan, i, payment_method_id=self._choice(others)) if others else None

    def wrong_order(self) -> Plan | None:
        """Another order of the customer (one with the same status when there is one)."""
        i = self._first("order_id")
        if i is None:
            return None
        gold = self.plan[i].args["order_id"]
        orders = self.snapshot.tables["orders"]
        status = orders[gold]["status"] if gold in orders else None
        others = [o for o in self.user_orders if o != gold]
        same = [o for o in others if orders[o]["status"] == status]
        pick = self._choice(same or others)
        return _with(self.plan, i, order_id=pick) if pick else None

    def wrong_reason(self) -> Plan | None:
        """The other cancellation reason than the customer gave."""
        i = next((i for i, c in enumerate(self.plan) if c.name == "cancel_pending_order"), None)
        if i is None:
            return None
        others = [r for r in CANCEL_REASONS if r != self.plan[i].args.get("reason")]
        return _with(self.plan, i, reason=others[0])

    def wrong_address(self) -> Plan | None:
        """A mistyped zip code in a new address."""
        i = next((i for i, c in enumerate(self.plan) if "address1" in c.args), None)
        if i is None:
            return None
        zip_code = str(self.plan[i].args.get("zip", ""))
        if not zip_code or not zip_code[-1].isdigit():
            return None
        return _with(self.plan, i, zip=zip_code[:-1] + str((int(zip_code[-1]) + 1) % 10))

    def missing_write(self) -> Plan | None:
        """One write of the gold plan left out."""
        writes = [i for i, c in enumerate(self.plan) if c.name in WRITE_TOOLS]
        if not writes:
            return None
        i = self._choice(writes)
        return self.plan[:i] + self.plan[i + 1:]

    def extra_write(self) -> Plan | None:
        """A write nobody asked for: the profile address changed along with an order's, another pending
        order cancelled, or another delivered order's item returned."""
        names = {c.name for c in self.plan}
        orders = self.snapshot.tables["orders"]
        if "modify_pending_order_address" in names and "modify_user_address" not in names and self.user_id:
            src = next(c for c in self.plan if c.name == "modify_pending_order_address").args
            addr = {k: src[k] for k in ADDRESS_FIELDS if k in src}
            return self.plan + (ToolCall("modify_user_address", {"user_id": self.user_id, **addr}),)
        touched = {c.args.get("order_id") for c in self.plan}
        untouched = [o for o in self.user_orders if o not in touched]
        pending = [o for o in untouched if orders[o]["status"] == "pending"]
        if pending:
            return self.plan + (ToolCall("cancel_pending_order",
                                         {"order_id": self._choice(pending), "reason": "no longer needed"}),)
        delivered = [o for o in untouched if orders[o]["status"] == "delivered" and orders[o]["items"]]
        if delivered:
            order = orders[self._choice(delivered)]
            return self.plan + (ToolCall("return_delivered_order_items", {
                "order_id": order["order_id"], "item_ids": [order["items"][0]["item_id"]],
                "payment_method_id": order["payment_history"][0]["payment_method_id"]}),)
        return None

    def all(self) -> list[tuple[str, Plan]]:
        """Every applicable plan perturbation as ``(kind, plan)``."""
        makers: tuple[Callable[[], Plan | None], ...] = (
            self.wrong_variant, self.wrong_product, self.wrong_item, self.wrong_payment, self.wrong_order,
            self.wrong_reason, self.wrong_address, self.missing_write, self.extra_write)
        out = []
        for make in makers:
            plan = make()
            if plan is not None and plan != self.plan:
                out.append((make.__name__, plan))
        return out
