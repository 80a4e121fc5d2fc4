"""Write the synthetic retail store and its tickets to ``envs_data/tau_retail`` (this project's JSON store
format, see :mod:`~harness_gym.domains.tau_retail.upstream`).

The store has the public schema (users with payment methods, orders with items, fulfilments and payment
history, products with variants); the tickets are v1 task literals ``{user_id, instruction, actions: [{name,
kwargs}], outputs}``. Single-request tickets of every kind are shuffled into train / val (``tasks_dev.json``) /
test; compound tickets (two changes on two orders, a change plus a question) form ``tasks_ood.json``. Every
gold action is replayed with the domain's tools while generating and must succeed.

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
from pathlib import Path
from typing import Any

from harness_gym.core.taskfile import TaskFileError, read_json, require
from harness_gym.core.types import ToolCall
from harness_gym.domains.generation import generator_main
from harness_gym.domains.sources import read_vocabulary, source_path
from harness_gym.domains.tau_retail.store import RetailDB, RetailSnapshot
from harness_gym.domains.tau_retail.tools import call_once

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


class StoreBuilder:
    """Builds the synthetic store with one seeded random stream."""

    def __init__(self, seed: int, n_users: int = 150, n_orders: int = 400) -> None:
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

    def orders_with(self, status: str, family: str) -> list[dict[str, Any]]:
        return [o for oid, o in sorted(self.s.orders.items())
                if o["status"] == status and (family, oid) not in self.used]

    def other_variant(self, item: dict[str, Any]) -> dict[str, Any] | None:
        variants = self.s.products[item["product_id"]]["variants"]
        options = [v for vid, v in sorted(variants.items()) if v["available"] and vid != item["item_id"]]
        return self.rng.choice(options) if options else None

    def payer(self, uid: str, amount: float) -> dict[str, Any] | None:
        methods = [m for _, m in sorted(self.s.users[uid]["payment_methods"].items())
                   if m["source"] != "gift_card" or m["balance"] >= amount]
        return self.rng.choice(methods) if methods else None

    # ----- request kinds: each returns (request text, actions) or None -------------------------------
    def cancel(self, order: dict[str, Any]) -> tuple[str, list[ToolCall]] | None:
        reason = self.rng.choice(["no longer needed", "ordered by mistake"])
        why = "you no longer need it" if reason == "no longer needed" else "you ordered it by mistake"
        names = " and ".join(i["name"].lower() for i in order["items"])
        return (f"You want to cancel your pending order {order['order_id']} (the {names}) because {why}.",
                [ToolCall("get_order_details", {"order_id": order["order_id"]}),
                 ToolCall("cancel_pending_order", {"order_id": order["order_id"], "reason": reason})])

    def order_address(self, order: dict[str, Any]) -> tuple[str, list[ToolCall]] | None:
        addr = self.s.address()
        return (f"You moved: order {order['order_id']} should ship to {addr['address1']} {addr['address2']}, "
                f"{addr['city']}, {addr['state']} {addr['zip']}, USA. Only the order changes, not your profile.",
                [ToolCall("get_order_details", {"order_id": order["order_id"]}),
                 ToolCall("modify_pending_order_address", {"order_id": order["order_id"], **addr})])

    def payment(self, order: dict[str, Any]) -> tuple[str, list[ToolCall]] | None:
        uid, paid = order["user_id"], order["payment_history"][0]
        methods = [m for _, m in sorted(self.s.users[uid]["payment_methods"].items())
                   if m["id"] != paid["payment_method_id"] and (m["source"] != "gift_card" or m["balance"] >= paid["amount"])]
        if not methods:
            return None
        method = self.rng.choice(methods)
        return (f"You want to pay for order {order['order_id']} with your {_method_text(method)} instead.",
                [ToolCall("get_order_details", {"order_id": order["order_id"]}),
                 ToolCall("modify_pending_order_payment", {"order_id": order["order_id"],
                                                          "payment_method_id": method["id"]})])

    def _swap(self, order: dict[str, Any], tool: str, verb: str) -> tuple[str, list[ToolCall]] | None:
        item = self.rng.choice(order["items"])
        target = self.other_variant(item)
        if target is None:
            return None
        diff = round(target["price"] - item["price"], 2)
        method = self.payer(order["user_id"], diff)
        if method is None:
            return None
        return (f"You want to {verb} the {item['name'].lower()} ({_options_text(item['options'])}) in order "
                f"{order['order_id']} for the one with {_options_text(target['options'])}; settle any price "
                f"difference with your {_method_text(method)}.",
                [ToolCall("get_order_details", {"order_id": order["order_id"]}),
                 ToolCall("get_product_details", {"product_id": item["product_id"]}),
                 ToolCall(tool, {"order_id": order["order_id"], "item_ids": [item["item_id"]],
                                 "new_item_ids": [target["item_id"]], "payment_method_id": method["id"]})])

    def modify_items(self, order: dict[str, Any]) -> tuple[str, list[ToolCall]] | None:
        return self._swap(order, "modify_pending_order_items", "change")

    def exchange(self, order: dict[str, Any]) -> tuple[str, list[ToolCall]] | None:
        return self._swap(order, "exchange_delivered_order_items", "exchange")

    def return_items(self, order: dict[str, Any]) -> tuple[str, list[ToolCall]] | None:
        items = self.rng.sample(order["items"], self.rng.randint(1, len(order["items"])))
        original = order["payment_history"][0]["payment_method_id"]
        cards = [m for m, v in sorted(self.s.users[order["user_id"]]["payment_methods"].items())
                 if v["source"] == "gift_card" and m != original]
        to_card = bool(cards) and self.rng.random() < 0.4
        method = cards[0] if to_card else original
        where = "your gift card" if to_card else "the original payment method"
        names = " and ".join(f"the {i['name'].lower()}" for i in items)
        return (f"You want to return {names} from order {order['order_id']}, refunded to {where}.",
                [ToolCall("get_order_details", {"order_id": order["order_id"]}),
                 ToolCall("return_delivered_order_items", {"order_id": order["order_id"],
                                                          "item_ids": [i["item_id"] for i in items],
                                                          "payment_method_id": method})])

    def user_address(self, order: dict[str, Any]) -> tuple[str, list[ToolCall]] | None:
        addr = self.s.address()
        return (f"You want your default address changed to {addr['address1']} {addr['address2']}, {addr['city']}, "
                f"{addr['state']} {addr['zip']}, USA; your orders stay as they are.",
                [ToolCall("modify_user_address", {"user_id": order["user_id"], **addr})])

    def order_total(self, order: dict[str, Any]) -> tuple[str, list[ToolCall]] | None:
        expr = " + ".join(str(i["price"]) for i in order["items"])
        return (f"You want to know the total price of the items in order {order['order_id']}.",
                [ToolCall("get_order_details", {"order_id": order["order_id"]}),
                 ToolCall("calculate", {"expression": expr})])

    def tracking(self, order: dict[str, Any]) -> tuple[str, list[ToolCall]] | None:
        return (f"You want the tracking number of order {order['order_id']}.",
                [ToolCall("get_order_details", {"order_id": order["order_id"]})])

    def cheapest(self, order: dict[str, Any]) -> tuple[str, list[ToolCall]] | None:
        item = self.rng.choice(order["items"])
        return (f"You wonder how much the cheapest available {item['name'].lower()} costs now; no change needed.",
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
        "user_address": ("delivered", "user_address"), "order_total": ("delivered", "order_total"),
        "tracking": ("processed", "tracking"), "cheapest": ("pending", "cheapest"),
    }

    def _request(self, kind: str, order: dict[str, Any]) -> tuple[str, list[ToolCall], list[str]] | None:
        maker: Callable[[dict[str, Any]], tuple[str, list[ToolCall]] | None] = getattr(self, self.KINDS[kind][1])
        got = maker(order)
        if got is None:
            return None
        text, actions = got
        return text, actions, self.outputs(kind, order, actions)

    def ticket(self, parts: list[tuple[str, dict[str, Any]]]) -> dict[str, Any] | None:
        """One v1 task literal for requests about orders of one customer, or ``None`` if one does not apply."""
        uid = parts[0][1]["user_id"]
        intro, actions = self.identify(uid)
        texts, outputs = [intro], []
        for kind, order in parts:
            got = self._request(kind, order)
            if got is None:
                return None
            texts.append(got[0])
            actions += got[1]
            outputs += got[2]
        db = RetailDB(self.snapshot)
        for call in actions:
            ok, out = call_once(db, call)
            if not ok:
                return None
        for kind, order in parts:
            self.used.add((kind, order["order_id"]))
        if outputs:
            texts.append("Make sure you get the exact figures you asked for.")
        return {"user_id": uid, "instruction": " ".join(texts),
                "actions": [{"name": c.name, "kwargs": dict(c.args)} for c in actions], "outputs": outputs}

    def single(self, kind: str) -> dict[str, Any] | None:
        candidates = self.orders_with(self.KINDS[kind][0], kind)
        return self.ticket([(kind, self.rng.choice(candidates))]) if candidates else None

    def compound(self) -> dict[str, Any] | None:
        """Two requests on two orders of one customer (a kind the in-distribution splits never combine)."""
        pairs = [("exchange", "return"), ("cancel", "order_total"), ("modify_items", "return"),
                 ("cancel", "exchange"), ("payment", "tracking")]
        first, second = self.rng.choice(pairs)
        users = sorted(self.s.users)
        self.rng.shuffle(users)
        for uid in users:
            a = [self.s.orders[o] for o in self.s.users[uid]["orders"]
                 if self.s.orders[o]["status"] == self.KINDS[first][0] and (first, o) not in self.used]
            b = [self.s.orders[o] for o in self.s.users[uid]["orders"]
                 if self.s.orders[o]["status"] == self.KINDS[second][0] and (second, o) not in self.used]
            b = [o for o in b if not a or o["order_id"] != a[0]["order_id"]]
            if a and b:
                return self.ticket([(first, a[0]), (second, b[0])])
        return None


def build(seed: int = 0) -> tuple[StoreBuilder, dict[str, list[dict[str, Any]]]]:
    """The store and the task lists per split (``train``, ``val``, ``test``, ``ood``)."""
    store = StoreBuilder(seed)
    writer = TicketWriter(store, seed + 1)
    kinds = list(TicketWriter.KINDS)
    in_dist: list[dict[str, Any]] = []
    attempts = 0
    while len(in_dist) < sum(ID_SPLITS.values()):
        attempts += 1
        if attempts > 20 * sum(ID_SPLITS.values()):
            raise RuntimeError("the store is too small for the requested number of tickets")
        task = writer.single(kinds[len(in_dist) % len(kinds)] if attempts % 3 else writer.rng.choice(kinds))
        if task is not None:
            in_dist.append(task)
    writer.rng.shuffle(in_dist)
    splits: dict[str, list[dict[str, Any]]] = {}
    start = 0
    for split, n in ID_SPLITS.items():
        splits[split] = in_dist[start:start + n]
        start += n
    ood: list[dict[str, Any]] = []
    while len(ood) < N_OOD:
        task = writer.compound()
        if task is not None:
            ood.append(task)
    splits["ood"] = ood
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
