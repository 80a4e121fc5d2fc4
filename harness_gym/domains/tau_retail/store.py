"""The retail database (users, orders, products) as an immutable snapshot plus cheap copy-on-write views.

Every episode, dry-run and grading replays write calls on a :class:`RetailDB` over the shared
:class:`RetailSnapshot`: a record is deep-copied only when a tool first changes it, so a view costs nothing
until it is written to, and the 2.8 MB τ²-bench database is never copied as a whole.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Iterator, Mapping
from typing import Any

TABLES: tuple[str, ...] = ("users", "orders", "products")
SEMANTICS: tuple[str, ...] = ("tau2", "v1")

Record = dict[str, Any]


def canonical(value: Any) -> str:
    """The canonical JSON text of a value (sorted keys, no spaces) that hashes are taken over."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def copy_json(value: Any) -> Any:
    """A deep copy of a plain JSON tree (:func:`is_plain_json_tree`), equal to what ``copy.deepcopy`` makes of it."""
    if type(value) is dict:
        return {key: copy_json(item) for key, item in value.items()}
    if type(value) is list:
        return [copy_json(item) for item in value]
    return value


_JSON_SCALARS: frozenset[type] = frozenset({str, int, float, bool, type(None)})


def is_plain_json_tree(value: Any) -> bool:
    """Whether ``value`` is made of dicts, lists and JSON scalars only, with no dict or list in it twice (a tree
    that :func:`copy_json` copies as ``copy.deepcopy`` does, which keeps such sharing)."""
    seen: set[int] = set()
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is dict or kind is list:
            if id(item) in seen:
                return False
            seen.add(id(item))
            stack.extend(item.values() if kind is dict else item)
        elif kind not in _JSON_SCALARS:
            return False
    return True


class RetailSnapshot:
    """The read-only initial state of a store.

    :param users: user id -> user record
    :param orders: order id -> order record
    :param products: product id -> product record
    :param semantics: whose tool semantics the store follows where the two public versions differ: ``"tau2"``
        (τ²-bench) or ``"v1"`` (τ-bench v1; see :mod:`~harness_gym.domains.tau_retail.tools`)
    """

    FINGERPRINT_ATTRIBUTES = ("semantics", "fingerprint")
    """what :func:`harness_gym.budget.fingerprint.fingerprint` reads: the tool semantics and the SHA-256 of the
    canonical tables, taken when the snapshot is made (the tables are never changed: edits copy records into
    the episode's store), which determine everything else the snapshot holds"""

    def __init__(self, users: Mapping[str, Record], orders: Mapping[str, Record],
                 products: Mapping[str, Record], semantics: str = "tau2") -> None:
        if semantics not in SEMANTICS:
            raise ValueError(f"unknown tool semantics {semantics!r}; expected one of {SEMANTICS}")
        self.semantics = semantics
        self.tables: dict[str, dict[str, Record]] = {
            "users": dict(users), "orders": dict(orders), "products": dict(products)}
        self.fingerprint = hashlib.sha256(canonical(self.tables).encode()).hexdigest()
        self.item_product: dict[str, str] = {
            item_id: pid for pid, prod in self.tables["products"].items() for item_id in prod["variants"]}
        """Item (variant) id -> product id, for ``get_item_details``."""
        self.plain_json_records: frozenset[tuple[str, str]] = frozenset(
            (table, key) for table, records in self.tables.items() for key, rec in records.items()
            if is_plain_json_tree(rec))
        """(table, key) of the records that :func:`copy_json` copies on edit (the others: ``copy.deepcopy``)."""
        self._record_texts: dict[tuple[str, str], str] = {}

    def record_json(self, table: str, key: str) -> str | None:
        """``json.dumps`` of a record (``None``: there is none), taken once per record of the snapshot."""
        text = self._record_texts.get((table, key))
        if text is None:
            rec = self.tables[table].get(key)
            if rec is None:
                return None
            text = self._record_texts[(table, key)] = json.dumps(rec)
        return text


class RetailDB:
    """A mutable view of a snapshot. Records returned by :meth:`get` must be treated as read-only; tools
    change records only through :meth:`edit`.

    :param snapshot: the initial state this view starts from
    """

    def __init__(self, snapshot: RetailSnapshot) -> None:
        self.snapshot = snapshot
        self._changed: dict[tuple[str, str], Record] = {}
        self._changed_texts: dict[tuple[str, str], str | None] = {}
        """(table, key) -> the canonical JSON of the copied record (``None``: equal to the snapshot's), taken
        since its last :meth:`edit` (a record changes only after an edit hands it out)"""
        self._hash: str | None = None
        """:meth:`state_hash` since the last :meth:`edit`"""

    def get(self, table: str, key: str) -> Record | None:
        """The current record, or ``None`` when there is none."""
        rec = self._changed.get((table, key))
        return rec if rec is not None else self.snapshot.tables[table].get(key)

    def record_json(self, table: str, key: str) -> str | None:
        """``json.dumps`` of the current record (``None``: there is none), what the read tools return."""
        rec = self._changed.get((table, key))
        return json.dumps(rec) if rec is not None else self.snapshot.record_json(table, key)

    def edit(self, table: str, key: str) -> Record:
        """A private, mutable copy of an existing record (copied on the first edit of this view)."""
        self._hash = None
        self._changed_texts.pop((table, key), None)
        rec = self._changed.get((table, key))
        if rec is None:
            original = self.snapshot.tables[table][key]
            plain = (table, key) in self.snapshot.plain_json_records
            rec = self._changed[(table, key)] = copy_json(original) if plain else copy.deepcopy(original)
        return rec

    def records(self, table: str) -> Iterator[tuple[str, Record]]:
        """``(key, record)`` for every record of a table, in the snapshot's order."""
        for key, rec in self.snapshot.tables[table].items():
            yield key, self._changed.get((table, key), rec)

    def changed_records(self) -> Iterator[tuple[str, str, Record]]:
        """``(table, key, record)`` for every record that differs from the snapshot, sorted by table and key."""
        for (table, key) in sorted(self._changed):
            rec = self._changed[(table, key)]
            if rec != self.snapshot.tables[table][key]:
                yield table, key, rec

    def state_hash(self) -> str:
        """A hash of the whole database content.

        It is taken over the snapshot's fingerprint and the canonical JSON of every record that differs from
        the snapshot, so two views of one snapshot have equal hashes exactly when their full contents are
        equal, which is what hashing the whole database decides, at the cost of the touched records only. Each
        record's text is taken once per :meth:`edit`, and the hash once per edit of any record.
        """
        if self._hash is None:
            h = hashlib.sha256(self.snapshot.fingerprint.encode())
            for table, key in sorted(self._changed):
                text = self._changed_text(table, key)
                if text is not None:
                    h.update(f"\n{table}/{key}=".encode())
                    h.update(text.encode())
            self._hash = h.hexdigest()
        return self._hash

    def _changed_text(self, table: str, key: str) -> str | None:
        """The canonical JSON of a copied record, ``None`` when it equals the snapshot's."""
        if (table, key) not in self._changed_texts:
            rec = self._changed[(table, key)]
            self._changed_texts[(table, key)] = (canonical(rec) if rec != self.snapshot.tables[table][key]
                                                 else None)
        return self._changed_texts[(table, key)]
