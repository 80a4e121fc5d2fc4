"""The retail tools with the public τ-bench semantics, one function per tool plus its JSON schema.

Read tools (``find_user_id_by_*``, ``get_*_details``, ``list_all_product_types``) and the generic
``calculate`` / ``think`` serve TOOL; write tools change a :class:`RetailDB` and form a draft's plan;
``transfer_to_human_agents`` changes nothing but belongs to the plan (it ends the conversation).

Rules implemented (from the benchmark's published tool descriptions): cancelling needs status ``pending``
and a reason of ``no longer needed`` / ``ordered by mistake`` and refunds every payment (gift cards at once);
address and payment changes need a status containing ``pending``; item modification needs status exactly
``pending``, happens once (the status becomes ``pending (item modified)``), keeps each item's product and
settles the price difference on one payment method; returns and exchanges need status ``delivered`` and
happen once; a return is refunded to the original payment method or a gift card; exchanged items stay
within their product; a gift card must cover what it pays; item id lists may repeat ids (counted), and the
stored lists are sorted; money is rounded to cents. Every tool checks everything before it changes anything,
so a failing call leaves the database as it was.

Where τ-bench v1 and τ²-bench differ, a store follows the version its data comes from
(``RetailSnapshot.semantics``); the differences, as the two upstream tool codes have them:

- ``modify_pending_order_address`` and ``modify_pending_order_payment``: v1 needs status exactly
  ``pending``; τ² accepts any status containing ``pending`` (so also ``pending (item modified)``).
- ``modify_pending_order_items``: τ² refuses an item changed to itself; v1 accepts it (the order is then
  marked ``pending (item modified)`` with a zero refund).
- ``find_user_id_by_email`` / ``find_user_id_by_name_zip``: v1 compares lower-cased text; τ² also folds
  accents (``Vázquez`` finds ``Vazquez``).
- ``get_item_details`` exists in τ² only; in v1 it is an unknown tool.

v1 also tells gift cards by their id (``"gift_card" in payment_method_id``) where τ² reads the method's
``source``; in the published v1 store both agree for every payment method, so this adapter reads ``source``.
"""

from __future__ import annotations

import ast
import json
import math
import operator
import unicodedata
from collections.abc import Callable, Mapping
from typing import Any

from harness_gym.core.intake import InputLimitError, parse_expression
from harness_gym.core.tool_calls import ToolSpec, validate_call
from harness_gym.core.types import ToolCall
from harness_gym.domains.tau_retail.store import Record, RetailDB
from harness_gym.domains.tool_table import ToolError, ToolTable, object_schema

_STR = {"type": "string"}
_IDS = {"type": "array", "items": {"type": "string"}}


def _schema(**props: Mapping[str, Any]) -> dict[str, Any]:
    return object_schema(props)


ADDRESS_FIELDS: tuple[str, ...] = ("address1", "address2", "city", "state", "country", "zip")
_ADDRESS = dict.fromkeys(ADDRESS_FIELDS, _STR)
_ORDER = {"order_id": _STR}
_ITEMS_CHANGE = {"order_id": _STR, "item_ids": _IDS, "new_item_ids": _IDS, "payment_method_id": _STR}

ORDER_SERVICE: dict[str, float] = {"api_call:internal": 1}
"""What one call of a retail tool costs: a request to the operator's own order-management service behind its API
gateway (the reads, the writes, the hand-over). Its own compute is the service's, not counted."""
FREE_LOCAL: dict[str, float] = {"api_call:free": 1}
"""``calculate``: arithmetic done locally, free in reality."""

TOOLS = ToolTable()
"""Every retail tool, registered by the decorator on its function below, with what one call costs. Each takes the
:class:`RetailDB` first, returns its answer text and refuses with :class:`ToolError`."""

# ----- lookups ---------------------------------------------------------------------------------------


def _order(db: RetailDB, order_id: str) -> Record:
    rec = db.get("orders", order_id)
    if rec is None:
        raise ToolError("order not found")
    return rec


def _user(db: RetailDB, user_id: str) -> Record:
    rec = db.get("users", user_id)
    if rec is None:
        raise ToolError("user not found")
    return rec


def _payment_method(db: RetailDB, user_id: str, payment_method_id: str) -> Record:
    method = _user(db, user_id)["payment_methods"].get(payment_method_id)
    if method is None:
        raise ToolError("payment method not found")
    return method


def is_gift_card(method: Mapping[str, Any]) -> bool:
    return method.get("source") == "gift_card"


def _check_item_counts(order: Record, item_ids: list[str]) -> None:
    held = [item["item_id"] for item in order["items"]]
    for item_id in item_ids:
        if item_ids.count(item_id) > held.count(item_id):
            raise ToolError(f"item {item_id} not found in order {order['order_id']} (as many times as listed)")


def _new_variants(db: RetailDB, order: Record, item_ids: list[str], new_item_ids: list[str]) -> list[Record]:
    """The available variants the items are changed to, each of the same product as the item it replaces."""
    if len(item_ids) != len(new_item_ids):
        raise ToolError("the number of items to be exchanged should match the number of new items")
    variants = []
    for item_id, new_id in zip(item_ids, new_item_ids):
        item = next(i for i in order["items"] if i["item_id"] == item_id)
        product = db.get("products", item["product_id"])
        variant = product["variants"].get(new_id) if product is not None else None
        if variant is None:
            raise ToolError(f"new item {new_id} is not a variant of product {item['product_id']} ({item['name']})")
        if not variant["available"]:
            raise ToolError(f"new item {new_id} is not available")
        variants.append(variant)
    return variants


def _price_difference(order: Record, item_ids: list[str], variants: list[Record]) -> float:
    old = {i["item_id"]: i["price"] for i in order["items"]}
    return round(sum(v["price"] - old[item_id] for item_id, v in zip(item_ids, variants)), 2)


def _check_covers(method: Record, amount: float) -> None:
    if is_gift_card(method) and method["balance"] < amount:
        raise ToolError(f"gift card balance {method['balance']} is insufficient for {amount}")


def _fold(db: RetailDB, text: str) -> str:
    """The form a name or email is compared in: lower-cased (v1), or case- and accent-insensitive (τ²)."""
    if db.snapshot.semantics == "v1":
        return text.lower()
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c)).casefold().strip()


def _check_pending(db: RetailDB, order: Record) -> None:
    """Address and payment changes: status ``pending`` (v1), or any status containing ``pending`` (τ²)."""
    status = order["status"]
    pending = status == "pending" if db.snapshot.semantics == "v1" else "pending" in status
    if not pending:
        raise ToolError(f"order {order['order_id']} is {status!r}; only a pending order can be modified")


def _dump(rec: Any) -> str:
    return json.dumps(rec)


def _address_record(address1: str, address2: str, city: str, state: str, country: str, zip: str) -> Record:
    return {"address1": address1, "address2": address2, "city": city, "country": country, "state": state, "zip": zip}


# ----- read and generic tools ------------------------------------------------------------------------

_OPS: dict[type, Callable[..., float]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.USub: operator.neg, ast.UAdd: operator.pos,
}


MAX_EXPRESSION_CHARS = 1000
"""The longest expression ``calculate`` evaluates (its tree nests at most
:data:`~harness_gym.core.intake.MAX_NESTING` levels and its integers fit a float)."""


def _evaluate(node: ast.AST) -> float:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_evaluate(node.left), _evaluate(node.right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_evaluate(node.operand))
    raise ToolError("invalid expression")


@TOOLS.tool("Evaluate an arithmetic expression (numbers, + - * /, parentheses); result rounded to "
            "2 decimals.", _schema(expression=_STR), bills=FREE_LOCAL)
def calculate(db: RetailDB, expression: str) -> str:
    """Local arithmetic, free in reality (``api_call:free``)."""
    if not expression.strip() or any(c not in "0123456789+-*/(). " for c in expression):
        raise ToolError("invalid characters in expression")
    try:
        value = _evaluate(parse_expression(expression, max_chars=MAX_EXPRESSION_CHARS, max_bits=1000))
    except (SyntaxError, ZeroDivisionError, InputLimitError) as exc:
        raise ToolError(f"invalid expression: {exc}") from None
    return str(round(value, 2)) if math.isfinite(value) else str(value)


@TOOLS.tool("Write down a thought; changes nothing and returns nothing.", _schema(thought=_STR))
def think(db: RetailDB, thought: str) -> str:
    """A note to itself: no service is called, nothing is billed."""
    return ""


@TOOLS.tool("Find a user id by email.", _schema(email=_STR), bills=ORDER_SERVICE)
def find_user_id_by_email(db: RetailDB, email: str) -> str:
    """A customer lookup in the operator's order service (``api_call:internal``)."""
    wanted = _fold(db, email)
    for user_id, user in db.records("users"):
        if _fold(db, user["email"]) == wanted:
            return user_id
    raise ToolError("user not found")


@TOOLS.tool("Find a user id by first name, last name and zip code.",
            _schema(first_name=_STR, last_name=_STR, zip=_STR), bills=ORDER_SERVICE)
def find_user_id_by_name_zip(db: RetailDB, first_name: str, last_name: str, zip: str) -> str:
    """A customer lookup in the operator's order service (``api_call:internal``)."""
    first, last = _fold(db, first_name), _fold(db, last_name)
    for user_id, user in db.records("users"):
        if (_fold(db, user["name"]["first_name"]) == first and _fold(db, user["name"]["last_name"]) == last
                and user["address"]["zip"] == zip):
            return user_id
    raise ToolError("user not found")


@TOOLS.tool("A user's profile: name, address, email, payment methods, order ids.",
            _schema(user_id=_STR), bills=ORDER_SERVICE)
def get_user_details(db: RetailDB, user_id: str) -> str:
    """A profile read from the operator's order service (``api_call:internal``)."""
    text = db.record_json("users", user_id)
    if text is None:
        raise ToolError("user not found")
    return text


@TOOLS.tool("An order's status, items, address, fulfilments and payments.",
            _schema(**_ORDER), bills=ORDER_SERVICE)
def get_order_details(db: RetailDB, order_id: str) -> str:
    """An order read from the operator's order service (``api_call:internal``)."""
    text = db.record_json("orders", order_id)
    if text is None:
        raise ToolError("order not found")
    return text


@TOOLS.tool("A product's variants (item ids, options, availability, price).",
            _schema(product_id=_STR), bills=ORDER_SERVICE)
def get_product_details(db: RetailDB, product_id: str) -> str:
    """A catalogue read from the operator's order service (``api_call:internal``)."""
    text = db.record_json("products", product_id)
    if text is None:
        raise ToolError("product not found")
    return text


@TOOLS.tool("One item (variant) of a product by item id.", _schema(item_id=_STR), bills=ORDER_SERVICE)
def get_item_details(db: RetailDB, item_id: str) -> str:
    """A catalogue read from the operator's order service (``api_call:internal``)."""
    if db.snapshot.semantics == "v1":
        raise ToolError("Unknown action get_item_details (tau-bench v1 has no such tool)")
    product_id = db.snapshot.item_product.get(item_id)
    if product_id is None:
        raise ToolError("item not found")
    return _dump(db.get("products", product_id)["variants"][item_id])


@TOOLS.tool("Product names mapped to product ids, sorted by name.", _schema(), bills=ORDER_SERVICE)
def list_all_product_types(db: RetailDB) -> str:
    """A catalogue read from the operator's order service (``api_call:internal``)."""
    return json.dumps({p["name"]: pid for pid, p in db.records("products")}, sort_keys=True)


@TOOLS.tool("Hand the conversation to a human agent with a summary; changes no data.",
            _schema(summary=_STR), bills=ORDER_SERVICE)
def transfer_to_human_agents(db: RetailDB, summary: str) -> str:
    """A hand-over through the operator's support system (``api_call:internal``)."""
    return "Transfer successful"


# ----- write tools -----------------------------------------------------------------------------------

CANCEL_REASONS = ("no longer needed", "ordered by mistake")


@TOOLS.tool("Cancel a pending order ('no longer needed' or 'ordered by mistake'); "
            "payments are refunded, to gift cards at once.", _schema(order_id=_STR, reason=_STR), writes=True, bills=ORDER_SERVICE)
def cancel_pending_order(db: RetailDB, order_id: str, reason: str) -> str:
    """A write to the operator's order service (``api_call:internal``)."""
    order = _order(db, order_id)
    if order["status"] != "pending":
        raise ToolError(f"order {order_id} is {order['status']!r}; only a pending order can be cancelled")
    if reason not in CANCEL_REASONS:
        raise ToolError(f"invalid reason {reason!r}; expected one of {list(CANCEL_REASONS)}")
    methods = [_payment_method(db, order["user_id"], p["payment_method_id"]) for p in order["payment_history"]]
    order = db.edit("orders", order_id)
    for payment, method in zip(list(order["payment_history"]), methods):
        order["payment_history"].append({"transaction_type": "refund", "amount": payment["amount"],
                                         "payment_method_id": payment["payment_method_id"]})
        if is_gift_card(method):
            card = db.edit("users", order["user_id"])["payment_methods"][payment["payment_method_id"]]
            card["balance"] = round(card["balance"] + payment["amount"], 2)
    order["status"] = "cancelled"
    order["cancel_reason"] = reason
    return _dump(order)


@TOOLS.tool("Change the shipping address of a pending order.",
            _schema(**_ORDER, **_ADDRESS), writes=True, bills=ORDER_SERVICE)
def modify_pending_order_address(db: RetailDB, order_id: str, address1: str, address2: str, city: str,
                                 state: str, country: str, zip: str) -> str:
    """A write to the operator's order service (``api_call:internal``)."""
    order = _order(db, order_id)
    _check_pending(db, order)
    order = db.edit("orders", order_id)
    order["address"] = _address_record(address1, address2, city, state, country, zip)
    return _dump(order)


@TOOLS.tool("Change items of a pending order to other available variants of the "
            "same products, once; the price difference is paid or refunded with one payment method.",
            _schema(**_ITEMS_CHANGE), writes=True, bills=ORDER_SERVICE)
def modify_pending_order_items(db: RetailDB, order_id: str, item_ids: list[str], new_item_ids: list[str],
                               payment_method_id: str) -> str:
    """A write to the operator's order service (``api_call:internal``)."""
    order = _order(db, order_id)
    if order["status"] != "pending":
        raise ToolError(f"order {order_id} is {order['status']!r}; items of an order can be modified only "
                              "while it is pending, and only once")
    _check_item_counts(order, item_ids)
    for item_id, new_id in zip(item_ids, new_item_ids):
        if item_id == new_id and db.snapshot.semantics != "v1":
            raise ToolError(f"new item {new_id} is the same as the old item")
    variants = _new_variants(db, order, item_ids, new_item_ids)
    diff = _price_difference(order, item_ids, variants)
    method = _payment_method(db, order["user_id"], payment_method_id)
    _check_covers(method, diff)
    order = db.edit("orders", order_id)
    order["payment_history"].append({"transaction_type": "payment" if diff > 0 else "refund",
                                     "amount": abs(diff), "payment_method_id": payment_method_id})
    if is_gift_card(method):
        card = db.edit("users", order["user_id"])["payment_methods"][payment_method_id]
        card["balance"] = round(card["balance"] - diff, 2)
    for item_id, new_id, variant in zip(item_ids, new_item_ids, variants):
        item = next(i for i in order["items"] if i["item_id"] == item_id)
        item.update(item_id=new_id, price=variant["price"], options=dict(variant["options"]))
    order["status"] = "pending (item modified)"
    return _dump(order)


@TOOLS.tool("Pay a pending order with another of the user's payment methods.",
            _schema(order_id=_STR, payment_method_id=_STR), writes=True, bills=ORDER_SERVICE)
def modify_pending_order_payment(db: RetailDB, order_id: str, payment_method_id: str) -> str:
    """A write to the operator's order service (``api_call:internal``)."""
    order = _order(db, order_id)
    _check_pending(db, order)
    method = _payment_method(db, order["user_id"], payment_method_id)
    history = order["payment_history"]
    if len(history) != 1 or history[0]["transaction_type"] != "payment":
        raise ToolError("there should be exactly one payment for a pending order")
    old_id, amount = history[0]["payment_method_id"], history[0]["amount"]
    if old_id == payment_method_id:
        raise ToolError("the new payment method should be different from the current one")
    _check_covers(method, amount)
    old_method = _payment_method(db, order["user_id"], old_id)
    order = db.edit("orders", order_id)
    order["payment_history"].extend([
        {"transaction_type": "payment", "amount": amount, "payment_method_id": payment_method_id},
        {"transaction_type": "refund", "amount": amount, "payment_method_id": old_id}])
    if is_gift_card(method) or is_gift_card(old_method):
        methods = db.edit("users", order["user_id"])["payment_methods"]
        if is_gift_card(method):
            methods[payment_method_id]["balance"] = round(methods[payment_method_id]["balance"] - amount, 2)
        if is_gift_card(old_method):
            methods[old_id]["balance"] = round(methods[old_id]["balance"] + amount, 2)
    return _dump(order)


@TOOLS.tool("Change a user's default address.", _schema(user_id=_STR, **_ADDRESS),
            writes=True, bills=ORDER_SERVICE)
def modify_user_address(db: RetailDB, user_id: str, address1: str, address2: str, city: str, state: str,
                        country: str, zip: str) -> str:
    """A write to the operator's order service (``api_call:internal``)."""
    _user(db, user_id)
    user = db.edit("users", user_id)
    user["address"] = _address_record(address1, address2, city, state, country, zip)
    return _dump(user)


@TOOLS.tool("Request a return of items of a delivered order, refunded to the "
            "original payment method or a gift card.",
            _schema(order_id=_STR, item_ids=_IDS, payment_method_id=_STR), writes=True, bills=ORDER_SERVICE)
def return_delivered_order_items(db: RetailDB, order_id: str, item_ids: list[str], payment_method_id: str) -> str:
    """A write to the operator's order service (``api_call:internal``)."""
    order = _order(db, order_id)
    if order["status"] != "delivered":
        raise ToolError(f"order {order_id} is {order['status']!r}; only a delivered order can be returned, once")
    method = _payment_method(db, order["user_id"], payment_method_id)
    if not is_gift_card(method) and payment_method_id != order["payment_history"][0]["payment_method_id"]:
        raise ToolError("the refund must go to the original payment method or a gift card")
    _check_item_counts(order, item_ids)
    order = db.edit("orders", order_id)
    order["status"] = "return requested"
    order["return_items"] = sorted(item_ids)
    order["return_payment_method_id"] = payment_method_id
    return _dump(order)


@TOOLS.tool("Request an exchange of items of a delivered order for available "
            "variants of the same products; the price difference uses one payment method.",
            _schema(**_ITEMS_CHANGE), writes=True, bills=ORDER_SERVICE)
def exchange_delivered_order_items(db: RetailDB, order_id: str, item_ids: list[str], new_item_ids: list[str],
                                   payment_method_id: str) -> str:
    """A write to the operator's order service (``api_call:internal``)."""
    order = _order(db, order_id)
    if order["status"] != "delivered":
        raise ToolError(f"order {order_id} is {order['status']!r}; only a delivered order can be exchanged, once")
    _check_item_counts(order, item_ids)
    variants = _new_variants(db, order, item_ids, new_item_ids)
    diff = _price_difference(order, item_ids, variants)
    _check_covers(_payment_method(db, order["user_id"], payment_method_id), diff)
    order = db.edit("orders", order_id)
    order["status"] = "exchange requested"
    order["exchange_items"] = sorted(item_ids)
    order["exchange_new_items"] = sorted(new_item_ids)
    order["exchange_payment_method_id"] = payment_method_id
    order["exchange_price_difference"] = diff
    return _dump(order)


# ----- derived tables --------------------------------------------------------------------------------

TOOL_SPECS: dict[str, ToolSpec] = TOOLS.specs
WRITE_TOOLS: frozenset[str] = TOOLS.write_tools
"""Tools that change the database."""
FREE_TEXT_ARGS: frozenset[tuple[str, str]] = frozenset({("transfer_to_human_agents", "summary"), ("think", "thought"),
                                                       ("calculate", "expression")})
"""``(tool, argument)`` pairs whose value is free text the store neither checks nor keeps: nothing said there is a
fact a reply may restate (the grader's strict output match never takes figures from them)."""
STORED_TEXT_ARGS: frozenset[str] = frozenset(ADDRESS_FIELDS)
"""Arguments a write tool stores as given, unchecked (the address fields); every other argument of a write tool
names something the store checks (an order, user, item or payment method id, a cancellation reason)."""
PLAN_TOOLS: frozenset[str] = WRITE_TOOLS | {"transfer_to_human_agents"}
"""Tools that belong to a draft's plan rather than to evidence gathering."""
EVIDENCE_TOOLS: frozenset[str] = frozenset(TOOLS) - PLAN_TOOLS
"""Tools TOOL may run: reads plus ``calculate`` and ``think``."""
V1_ABSENT_TOOLS: frozenset[str] = frozenset({"get_item_details"})
"""Tools of this module that τ-bench v1 does not have."""


def tool_specs(semantics: str) -> dict[str, ToolSpec]:
    """The tools a store with these semantics offers (``"v1"`` lacks :data:`V1_ABSENT_TOOLS`)."""
    return {name: spec for name, spec in TOOL_SPECS.items() if semantics != "v1" or name not in V1_ABSENT_TOOLS}


def call_once(db: RetailDB, call: ToolCall) -> tuple[bool, str]:
    """Run one call through :meth:`~harness_gym.domains.tool_table.ToolTable.call`: ``(True, output)`` or
    ``(False, error)`` (its schema problem or the tool's refusal); an error leaves ``db`` unchanged."""
    problem = validate_call(TOOL_SPECS, call)
    if problem:
        return False, problem
    result = TOOLS.call(call.name, db, **call.args)
    return (True, result.output) if result.ok else (False, result.error)
