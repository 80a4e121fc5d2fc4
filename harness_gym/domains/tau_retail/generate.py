"""Write the synthetic retail store and its tickets to ``envs_data/tau_retail`` (this project's JSON store
format, see :mod:`~harness_gym.domains.tau_retail.upstream`).

The store has the public schema (users with payment methods, orders with items, fulfilments and payment
history, products with variants; 150 users, 600 orders); the tickets are v1 task literals ``{user_id,
instruction, actions: [{name, kwargs}], outputs}``, one sentence per request. Every gold action is replayed
with the domain's tools while generating and must succeed.

**The task mix** (docs/domains.md, "Task mixes"), dealt in fixed shares within every split:

- *Changes per ticket* follow τ²-bench retail's gold write actions per task (114 tasks: none 10, one 60, two
  23, three 15, four 5, five 1), rounded (:data:`WRITES_CYCLE`): 10% of the tickets ask for no change and
  only a figure (an order total, a tracking number, the cheapest variant), 50% one change, 20% two, 15%
  three, 5% four. (τ-bench v1's 520 train and dev tasks: one write 351, two 103, three 40, four or more 25.)
  The changes of one ticket are to the customer's pending orders (cancel, ship elsewhere, pay otherwise,
  change items; several may share one order) or to their delivered ones (exchange, return), plus possibly
  the profile address.
- *Questions*: 30% of the tickets with changes also ask for a figure (:data:`QUESTION_CYCLE`; τ²: 32 of its
  104 tasks with writes have outputs to communicate).
- *Naming* (the cue for the evidence a ticket needs): half the tickets name their orders by id, half describe
  them by their items ("your pending order with the desk lamp", :data:`NAMED_CYCLE`; the two public versions
  disagree: v1's tickets name the order in 510 of 519 tasks with writes, τ²'s in 9 of 101). The domain
  derives the evidence from this: a ticket stating every value its plan writes (the order id, the cancel
  reason, the new address) and asking for nothing needs none; one describing an order needs that order's
  record; every other needs the profile and the gold reads (1 to 4).
- *ood* (``tasks_ood.json``): tickets with two or three changes spanning a pending and a delivered order, a
  combination the in-distribution splits never make (τ² has it in 13 of 114 tasks, v1 in 74 of 520).

The hand-written inputs are in ``sources/``: the product catalogue (``catalogue.json``), the customers' cities
(``cities.json``) and names, streets and card brands (``vocabulary.json``); ``policy.md`` is the policy text
RETRIEVE ranks.

Run ``python -m harness_gym.domains.tau_retail.generate [--out DIR] [--seed N]``; the output is deterministic.
"""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness_gym.core.taskfile import TaskFileError, read_json, require
from harness_gym.core.types import ToolCall
from harness_gym.domains.generation import deal, generator_main
from harness_gym.domains.source_files import read_vocabulary, source_path
from harness_gym.domains.tau_retail.store import RetailDB, RetailSnapshot
from harness_gym.domains.tau_retail.tools import CANCEL_REASONS, call_once

CATALOGUE_FILE = source_path("tau_retail", "catalogue.json")
CITIES_FILE = source_path("tau_retail", "cities.json")


def read_catalogue(path: Path = CATALOGUE_FILE) -> dict[str, tuple[tuple[float, float], dict[str, list[str]]]]:
    """Product name -> ((lowest, highest) variant price, option name -> its values), from ``sources/``.

    :param path: the catalogue file
    """
    raw = read_json(path)
    if not isinstance(raw, dict):
        raise TaskFileError(path, "expected an object: product name -> {price_range, options}")
    catalogue = {}
    for name, rec in raw.items():
        if not isinstance(rec, dict):
            raise TaskFileError(path, "expected an object", field=name)
        price_range = require(rec, "price_range", list, path=path, task_id=name)
        if len(price_range) != 2 or not all(isinstance(x, (int, float)) for x in price_range):
            raise TaskFileError(path, f"expected [lowest, highest], got {price_range!r}", task_id=name,
                                field="price_range")
        lo, hi = price_range
        options = require(rec, "options", dict, path=path, task_id=name)
        if not options or not all(isinstance(v, list) and v for v in options.values()):
            raise TaskFileError(path, "every option needs a non-empty list of values", task_id=name, field="options")
        catalogue[name] = ((lo, hi), options)
    return catalogue


def read_cities(path: Path = CITIES_FILE) -> list[tuple[str, str, str]]:
    """The (city, state, first three zip digits) customers live in, from ``sources/``.

    :param path: the cities file
    """
    raw = read_json(path)
    if not isinstance(raw, list) or not all(isinstance(r, dict) for r in raw):
        raise TaskFileError(path, "expected a list of {city, state, zip_prefix} objects")
    return [tuple(require(r, f, str, path=path, task_id=f"[{i}]") for f in ("city", "state", "zip_prefix"))
            for i, r in enumerate(raw)]


CATALOGUE = read_catalogue()
CITIES = read_cities()
VOCABULARY = read_vocabulary(source_path("tau_retail", "vocabulary.json"),
                             ("first_names", "last_names", "streets", "card_brands"))
FIRST, LAST, STREETS, BRANDS = (VOCABULARY[k] for k in ("first_names", "last_names", "streets", "card_brands"))
STATUS_WEIGHTS = {"pending": 0.32, "processed": 0.14, "delivered": 0.42, "cancelled": 0.12}
ID_SPLITS = {"train": 140, "val": 40, "test": 50}
N_OOD = 30
WRITES_CYCLE: tuple[int, ...] = (0, 0) + (1,) * 10 + (2,) * 4 + (3,) * 3 + (4,)
"""Changes per in-distribution ticket, one round of 20: 10% none, 50% one, 20% two, 15% three, 5% four (the
τ²-bench retail tasks' write actions per task, rounded; module doc)."""
OOD_WRITES_CYCLE: tuple[int, ...] = (2, 3)
"""Changes per ood ticket: two or three, on a pending and a delivered order."""
QUESTION_CYCLE: tuple[bool, ...] = (True, True, True) + (False,) * 7
"""30% of the tickets with changes also ask for information (τ²: 32 of its 104 tasks with writes)."""
NAMED_CYCLE: tuple[bool, ...] = (True, False)
"""Half the tickets name their orders by id, half describe them by their items."""


class StoreBuilder:
    """Builds the synthetic store with one seeded random stream."""

    def __init__(self, seed: int, n_users: int = 150, n_orders: int = 600) -> None:
        self.rng = random.Random(seed)
        self._used: set[str] = set()
        self.products = self._products()
        self.users = self._users(n_users)
        self.orders: dict[str, dict[str, Any]] = {}
        for _ in range(n_orders):
            self._order(self.rng.choice(sorted(self.users)))

    def _id(self, digits: int, prefix: str = "") -> str:
        while True:
            value = prefix + "".join(self.rng.choice("0123456789") for _ in range(digits))
            if value not in self._used and not value.startswith("0"):
                self._used.add(value)
                return value

    def address(self) -> dict[str, str]:
        city, state, zip_prefix = self.rng.choice(CITIES)
        return {"address1": f"{self.rng.randint(100, 999)} {self.rng.choice(STREETS)}",
                "address2": self.rng.choice(["", f"Suite {self.rng.randint(100, 999)}"]), "city": city,
                "country": "USA", "state": state, "zip": zip_prefix + f"{self.rng.randint(0, 99):02d}"}

    def _products(self) -> dict[str, dict[str, Any]]:
        products = {}
        for name, ((lo, hi), dims) in CATALOGUE.items():
            pid = self._id(10)
            combos = list(itertools.product(*dims.values()))
            self.rng.shuffle(combos)
            variants = {}
            for combo in combos[:self.rng.randint(6, 10)]:
                vid = self._id(10)
                variants[vid] = {"item_id": vid, "options": dict(zip(dims, combo)),
                                 "available": self.rng.random() < 0.8, "price": round(self.rng.uniform(lo, hi), 2)}
            products[pid] = {"name": name, "product_id": pid, "variants": variants}
        return products

    def _users(self, n: int) -> dict[str, dict[str, Any]]:
        users = {}
        for _ in range(n):
            first, last = self.rng.choice(FIRST), self.rng.choice(LAST)
            uid = f"{first.lower()}_{last.lower()}_{self.rng.randint(1000, 9999)}"
            if uid in users:
                continue
            methods: dict[str, dict[str, Any]] = {}
            for source in self.rng.sample(["credit_card", "paypal", "gift_card"], self.rng.randint(1, 3)):
                mid = f"{source}_{self._id(7)}"
                method: dict[str, Any] = {"source": source, "id": mid}
                if source == "credit_card":
                    method.update(brand=self.rng.choice(BRANDS), last_four=f"{self.rng.randint(0, 9999):04d}")
                elif source == "gift_card":
                    method["balance"] = float(self.rng.randint(0, 300))
                methods[mid] = method
            users[uid] = {"user_id": uid, "name": {"first_name": first, "last_name": last},
                          "address": self.address(), "email": f"{first.lower()}.{last.lower()}{self.rng.randint(1000, 9999)}@example.com",
                          "payment_methods": methods, "orders": []}
        return users

    def _order(self, uid: str) -> None:
        user = self.users[uid]
        oid = "#W" + self._id(7)
        items = []
        for pid in self.rng.sample(sorted(self.products), self.rng.randint(1, 4)):
            vid = self.rng.choice(sorted(self.products[pid]["variants"]))
            var = self.products[pid]["variants"][vid]
            items.append({"name": self.products[pid]["name"], "product_id": pid, "item_id": vid,
                          "price": var["price"], "options": dict(var["options"])})
        status = self.rng.choices(list(STATUS_WEIGHTS), weights=list(STATUS_WEIGHTS.values()))[0]
        method = self.rng.choice(sorted(user["payment_methods"]))
        total = round(sum(i["price"] for i in items), 2)
        order: dict[str, Any] = {
            "order_id": oid, "user_id": uid, "address": dict(user["address"]), "items": items, "status": status,
            "fulfillments": [], "payment_history": [{"transaction_type": "payment", "amount": total,
                                                     "payment_method_id": method}]}
        if status in ("processed", "delivered"):
            order["fulfillments"] = [{"tracking_id": [self._id(12)], "item_ids": [i["item_id"] for i in items]}]
        if status == "cancelled":
            order["payment_history"].append({"transaction_type": "refund", "amount": total, "payment_method_id": method})
            order["cancel_reason"] = self.rng.choice(["no longer needed", "ordered by mistake"])
        self.orders[oid] = order
        user["orders"].append(oid)


def _options_text(options: dict[str, str]) -> str:
    return ", ".join(f"{k} {v}" for k, v in options.items())


def _method_text(method: dict[str, Any]) -> str:
    if method["source"] == "credit_card":
        return f"{method['brand']} credit card ending in {method['last_four']}"
    return "PayPal account" if method["source"] == "paypal" else "gift card"


@dataclass(frozen=True)
class TicketSpec:
    """What one ticket holds: how many changes, whether it also asks a question, whether it names its orders by
    id, and (ood) whether its changes span a pending and a delivered order."""

    writes: int
    question: bool
    named: bool
    mixed: bool = False


@dataclass(frozen=True)
class Request:
    """One request of a ticket: its kind and the order it is about (``None`` for the profile)."""

    kind: str
    order: dict[str, Any] | None


class TicketWriter:
    """Writes v1 task literals whose gold actions succeed on the store.

    :param store: the store the tickets are about
    :param seed: seeds the choices
    """

    def __init__(self, store: StoreBuilder, seed: int) -> None:
        self.s = store
        self.rng = random.Random(seed)
        self.snapshot = RetailSnapshot(store.users, store.orders, store.products)
        self.used: set[tuple[str, str]] = set()

    # ----- pieces ------------------------------------------------------------------------------------
    def identify(self, uid: str) -> tuple[str, list[ToolCall]]:
        user = self.s.users[uid]
        first, last = user["name"]["first_name"], user["name"]["last_name"]
        if self.rng.random() < 0.5:
            text = f"You are {first} {last}; your email is {user['email']}."
            lookup = ToolCall("find_user_id_by_email", {"email": user["email"]})
        else:
            text = f"You are {first} {last} and live in zip code {user['address']['zip']}; you forgot your email."
            lookup = ToolCall("find_user_id_by_name_zip", {"first_name": first, "last_name": last,
                                                           "zip": user["address"]["zip"]})
        return text, [lookup, ToolCall("get_user_details", {"user_id": uid})]

    def other_variant(self, item: dict[str, Any]) -> dict[str, Any] | None:
        variants = self.s.products[item["product_id"]]["variants"]
        options = [v for vid, v in sorted(variants.items()) if v["available"] and vid != item["item_id"]]
        return self.rng.choice(options) if options else None

    def payer(self, uid: str, amount: float) -> dict[str, Any] | None:
        methods = [m for _, m in sorted(self.s.users[uid]["payment_methods"].items())
                   if m["source"] != "gift_card" or m["balance"] >= amount]
        return self.rng.choice(methods) if methods else None

    def reference(self, order: dict[str, Any], named: bool) -> str:
        """How the ticket refers to an order: by its id, or by its items (when no other order of the customer
        holds the same items)."""
        oid, status = order["order_id"], order["status"]
        names = " and ".join(f"the {n}" for n in sorted({i["name"].lower() for i in order["items"]}))
        others = [self.s.orders[o] for o in self.s.users[order["user_id"]]["orders"] if o != oid]
        unique = all({i["name"] for i in o["items"]} != {i["name"] for i in order["items"]} for o in others)
        if named or not unique:
            return f"your pending order {oid}" if status == "pending" else f"order {oid}"
        if status == "pending":
            return f"your pending order with {names}"
        if status == "delivered":
            return f"the order with {names} you received"
        return f"the order with {names} that is on its way"

    # ----- request kinds: each returns (request text, actions) or None -------------------------------
    def cancel(self, order: dict[str, Any], ref: str) -> tuple[str, list[ToolCall]] | None:
        reason = self.rng.choice(CANCEL_REASONS)
        why = "it is no longer needed" if reason == "no longer needed" else "it was ordered by mistake"
        return (f"You want to cancel {ref} because {why}.",
                [ToolCall("get_order_details", {"order_id": order["order_id"]}),
                 ToolCall("cancel_pending_order", {"order_id": order["order_id"], "reason": reason})])

    def order_address(self, order: dict[str, Any], ref: str) -> tuple[str, list[ToolCall]] | None:
        addr = self.s.address()
        return (f"You moved: {ref} should ship to {addr['address1']} {addr['address2']}, {addr['city']}, "
                f"{addr['state']} {addr['zip']}, USA, while your profile keeps its address.",
                [ToolCall("get_order_details", {"order_id": order["order_id"]}),
                 ToolCall("modify_pending_order_address", {"order_id": order["order_id"], **addr})])

    def payment(self, order: dict[str, Any], ref: str) -> tuple[str, list[ToolCall]] | None:
        uid, paid = order["user_id"], order["payment_history"][0]
        methods = [m for _, m in sorted(self.s.users[uid]["payment_methods"].items())
                   if m["id"] != paid["payment_method_id"] and (m["source"] != "gift_card" or m["balance"] >= paid["amount"])]
        if not methods:
            return None
        method = self.rng.choice(methods)
        return (f"You want to pay for {ref} with your {_method_text(method)} instead.",
                [ToolCall("get_order_details", {"order_id": order["order_id"]}),
                 ToolCall("modify_pending_order_payment", {"order_id": order["order_id"],
                                                          "payment_method_id": method["id"]})])

    def _swap(self, order: dict[str, Any], ref: str, tool: str, verb: str) -> tuple[str, list[ToolCall]] | None:
        item = self.rng.choice(order["items"])
        target = self.other_variant(item)
        if target is None:
            return None
        diff = round(target["price"] - item["price"], 2)
        method = self.payer(order["user_id"], diff)
        if method is None:
            return None
        return (f"You want to {verb} the {item['name'].lower()} ({_options_text(item['options'])}) in {ref} for "
                f"the one with {_options_text(target['options'])}; settle any price difference with your "
                f"{_method_text(method)}.",
                [ToolCall("get_order_details", {"order_id": order["order_id"]}),
                 ToolCall("get_product_details", {"product_id": item["product_id"]}),
                 ToolCall(tool, {"order_id": order["order_id"], "item_ids": [item["item_id"]],
                                 "new_item_ids": [target["item_id"]], "payment_method_id": method["id"]})])

    def modify_items(self, order: dict[str, Any], ref: str) -> tuple[str, list[ToolCall]] | None:
        return self._swap(order, ref, "modify_pending_order_items", "change")

    def exchange(self, order: dict[str, Any], ref: str) -> tuple[str, list[ToolCall]] | None:
        return self._swap(order, ref, "exchange_delivered_order_items", "exchange")

    def return_items(self, order: dict[str, Any], ref: str) -> tuple[str, list[ToolCall]] | None:
        items = self.rng.sample(order["items"], self.rng.randint(1, len(order["items"])))
        original = order["payment_history"][0]["payment_method_id"]
        cards = [m for m, v in sorted(self.s.users[order["user_id"]]["payment_methods"].items())
                 if v["source"] == "gift_card" and m != original]
        to_card = bool(cards) and self.rng.random() < 0.4
        method = cards[0] if to_card else original
        where = "your gift card" if to_card else "the original payment method"
        names = " and ".join(f"the {i['name'].lower()}" for i in items)
        return (f"You want to return {names} from {ref}, refunded to {where}.",
                [ToolCall("get_order_details", {"order_id": order["order_id"]}),
                 ToolCall("return_delivered_order_items", {"order_id": order["order_id"],
                                                          "item_ids": [i["item_id"] for i in items],
                                                          "payment_method_id": method})])

    def user_address(self, uid: str) -> tuple[str, list[ToolCall]]:
        addr = self.s.address()
        return (f"You want your default address changed to {addr['address1']} {addr['address2']}, {addr['city']}, "
                f"{addr['state']} {addr['zip']}, USA; your orders keep theirs.",
                [ToolCall("modify_user_address", {"user_id": uid, **addr})])

    def order_total(self, order: dict[str, Any], ref: str) -> tuple[str, list[ToolCall]] | None:
        expr = " + ".join(str(i["price"]) for i in order["items"])
        return (f"You want to know the total price of the items in {ref}.",
                [ToolCall("get_order_details", {"order_id": order["order_id"]}),
                 ToolCall("calculate", {"expression": expr})])

    def tracking(self, order: dict[str, Any], ref: str) -> tuple[str, list[ToolCall]] | None:
        return (f"You want the tracking number of {ref}.",
                [ToolCall("get_order_details", {"order_id": order["order_id"]})])

    def cheapest(self, order: dict[str, Any], ref: str) -> tuple[str, list[ToolCall]] | None:
        item = self.rng.choice(order["items"])
        return (f"You wonder how much the cheapest available {item['name'].lower()} costs at the moment.",
                [ToolCall("list_all_product_types", {}),
                 ToolCall("get_product_details", {"product_id": item["product_id"]})])

    def outputs(self, kind: str, order: dict[str, Any], actions: list[ToolCall]) -> list[str]:
        """The information a question-kind request must be answered with."""
        if kind == "order_total":
            return [call_once(RetailDB(self.snapshot), actions[-1])[1]]
        if kind == "tracking":
            return [order["fulfillments"][0]["tracking_id"][0]]
        if kind == "cheapest":
            pid = actions[-1].args["product_id"]
            prices = [v["price"] for v in self.s.products[pid]["variants"].values() if v["available"]]
            return [str(min(prices))] if prices else []
        return []

    # ----- tickets -----------------------------------------------------------------------------------
    KINDS: dict[str, tuple[str, str]] = {
        "cancel": ("pending", "cancel"), "order_address": ("pending", "order_address"),
        "payment": ("pending", "payment"), "modify_items": ("pending", "modify_items"),
        "exchange": ("delivered", "exchange"), "return": ("delivered", "return_items"),
        "order_total": ("delivered", "order_total"), "tracking": ("processed", "tracking"),
        "cheapest": ("pending", "cheapest"),
    }
    """Order kinds: the status of the order each is about, and the method that writes it."""
    CHANGES: dict[str, tuple[str, ...]] = {"pending": ("cancel", "order_address", "payment", "modify_items"),
                                           "delivered": ("exchange", "return")}
    """The changes to an order of each status; ``user_address`` changes the profile and joins either."""
    QUESTIONS: tuple[str, ...] = ("order_total", "tracking", "cheapest")
    SAME_ORDER_RANK: dict[str, int] = {"order_address": 0, "payment": 1, "modify_items": 2}
    """Changes that can share a pending order, in the order they run (a payment change needs the order's single
    payment, which an item modification adds to)."""

    def _plan_requests(self, uid: str, spec: TicketSpec) -> list[Request] | None:
        """The requests of a ticket for customer ``uid``, or ``None`` when their orders cannot carry them."""
        orders = [self.s.orders[o] for o in self.s.users[uid]["orders"]]
        groups = ["pending", "delivered"] if spec.mixed else [self.rng.choice(["pending", "delivered"])]
        kinds: list[str] = [self.rng.choice(self.CHANGES[g]) for g in groups]
        while len(kinds) < spec.writes:
            pool = [k for g in groups for k in self.CHANGES[g]] + (["user_address"] if "user_address" not in kinds else [])
            kinds.append(self.rng.choice(pool))
        kinds = kinds[:spec.writes]
        taken: dict[str, list[str]] = {}
        requests: list[Request] = []
        for kind in kinds:
            if kind == "user_address":
                requests.append(Request(kind, None))
                continue
            status = self.KINDS[kind][0]
            fits = [o for o in orders if o["status"] == status and (kind, o["order_id"]) not in self.used
                    and self._can_share(kind, taken.get(o["order_id"], []))]
            if not fits:
                return None
            order = self.rng.choice(fits)
            taken.setdefault(order["order_id"], []).append(kind)
            requests.append(Request(kind, order))
        first = {}
        for i, req in enumerate(requests):
            first.setdefault(id(req.order), i)
        requests = sorted(requests, key=lambda r: (first[id(r.order)], self.SAME_ORDER_RANK.get(r.kind, 0)))
        if spec.question or spec.writes == 0:
            kind = self.rng.choice(self.QUESTIONS)
            fits = [o for o in orders if o["status"] == self.KINDS[kind][0] and (kind, o["order_id"]) not in self.used]
            if not fits:
                return None
            requests.append(Request(kind, self.rng.choice(fits)))
        return requests

    def _can_share(self, kind: str, on_order: list[str]) -> bool:
        """Whether ``kind`` can join the changes already asked for on one order."""
        if not on_order:
            return True
        return kind in self.SAME_ORDER_RANK and kind not in on_order and \
            all(k in self.SAME_ORDER_RANK for k in on_order)

    def ticket(self, uid: str, spec: TicketSpec) -> dict[str, Any] | None:
        """One v1 task literal for customer ``uid`` shaped by ``spec``, or ``None`` if it cannot be written."""
        requests = self._plan_requests(uid, spec)
        if requests is None:
            return None
        intro, actions = self.identify(uid)
        texts, outputs = [intro], []
        for req in requests:
            if req.order is None:
                got = self.user_address(uid)
            else:
                maker: Callable[[dict[str, Any], str], tuple[str, list[ToolCall]] | None] = getattr(
                    self, self.KINDS[req.kind][1])
                got = maker(req.order, self.reference(req.order, spec.named))
            if got is None:
                return None
            texts.append(got[0])
            actions += got[1]
            if req.order is not None:
                outputs += self.outputs(req.kind, req.order, got[1])
        db = RetailDB(self.snapshot)
        for call in actions:
            ok, out = call_once(db, call)
            if not ok:
                return None
        for req in requests:
            if req.order is not None:
                self.used.add((req.kind, req.order["order_id"]))
        if outputs:
            texts.append("Make sure you get the exact figures you asked for.")
        return {"user_id": uid, "instruction": " ".join(texts),
                "actions": [{"name": c.name, "kwargs": dict(c.args)} for c in actions], "outputs": outputs}

    def write(self, spec: TicketSpec, attempts: int = 400) -> dict[str, Any]:
        """A ticket shaped by ``spec`` for some customer (tried in a random order)."""
        users = sorted(self.s.users)
        for _ in range(attempts):
            task = self.ticket(self.rng.choice(users), spec)
            if task is not None:
                return task
        raise RuntimeError(f"the store holds no customer for a ticket of {spec}; enlarge the store")


def ticket_specs(n: int, rng: random.Random, mixed: bool = False) -> list[TicketSpec]:
    """The shapes of ``n`` tickets of one split: changes per ticket from :data:`WRITES_CYCLE` (ood:
    :data:`OOD_WRITES_CYCLE`), a question on :data:`QUESTION_CYCLE`'s share of the tickets with changes (and on
    every ticket without), orders named by id on half (:data:`NAMED_CYCLE`)."""
    writes = deal(n, OOD_WRITES_CYCLE if mixed else WRITES_CYCLE, rng)
    questions = deal(n, QUESTION_CYCLE, rng)
    named = deal(n, NAMED_CYCLE, rng)
    return [TicketSpec(w, q or w == 0, nm, mixed) for w, q, nm in zip(writes, questions, named)]


def build(seed: int = 0) -> tuple[StoreBuilder, dict[str, list[dict[str, Any]]]]:
    """The store and the task lists per split (``train``, ``val``, ``test``, ``ood``)."""
    store = StoreBuilder(seed)
    writer = TicketWriter(store, seed + 1)
    splits: dict[str, list[dict[str, Any]]] = {}
    for split, n in (*ID_SPLITS.items(), ("ood", N_OOD)):
        splits[split] = [writer.write(spec) for spec in ticket_specs(n, writer.rng, mixed=split == "ood")]
    return store, splits


def generate(out: Path, seed: int = 0) -> dict[str, int]:
    """Write the store and task files to ``out``; return the task count per split."""
    store, splits = build(seed)
    out.mkdir(parents=True, exist_ok=True)
    files = {"users.json": store.users, "orders.json": store.orders, "products.json": store.products,
             "tasks_train.json": splits["train"], "tasks_dev.json": splits["val"],
             "tasks_test.json": splits["test"], "tasks_ood.json": splits["ood"]}
    for name, value in files.items():
        (out / name).write_text(json.dumps(value, indent=1) + "\n", encoding="utf-8")
    return {split: len(tasks) for split, tasks in splits.items()}


def main(argv: list[str] | None = None) -> None:
    generator_main(__doc__, "tau_retail", generate, 0, lambda counts, out: json.dumps(counts), argv)


if __name__ == "__main__":
    main()
