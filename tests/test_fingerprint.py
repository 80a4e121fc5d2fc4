"""The reference-budget fingerprint (harness_gym.budget.fingerprint.fingerprint): a function of the data's values alone,
which every change of a value moves."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import NamedTuple

import pytest

from harness_gym.budget.fingerprint import fingerprint
from harness_gym.core.types import Candidate, Document, Task, ToolCall


@dataclass(frozen=True)
class Payload:
    table: dict
    tags: frozenset
    note: str = field(default="", compare=False)


class Store:
    CACHE_ATTRIBUTES = ("_memo",)

    def __init__(self, rows: dict) -> None:
        self.rows = rows
        self.by_pair = {(k, str(v)): v for k, v in rows.items()}  # tuple keys, as a domain's index may have
        self._memo: dict = {}


class Pair(NamedTuple):
    left: int
    right: str


def make_task(store: Store, *, task_id: str = "t1", table: dict | None = None, tags=frozenset({"b", "a"})) -> Task:
    return Task(task_id=task_id, split="train", family="f", difficulty=0.5, prompt="Find Ada's 3 cats",
                candidates=(Candidate("x", "reference", True), Candidate("y", "slip", False)),
                observations=("o1",), relevant_docs=frozenset({"d1", "d2"}),
                tool_calls=(ToolCall("lookup", {"id": 3, "q": [1.5, None, True]}),),
                payload=(Payload(table if table is not None else {"k": [1, 2], 3: "three"}, tags), store,
                         MappingProxyType({"m": Pair(1, "x")}), {frozenset({1, 2}), frozenset({"z"})}))


def data(**changes):
    store = Store(changes.pop("rows", {"r1": 1, "r2": 2}))
    tasks = [make_task(store, **changes), make_task(store, task_id="t2")]
    return tasks, [Document("d1", "Title", "text")]


def test_equal_values_give_equal_fingerprints_whatever_is_shared_or_the_order_of_sets_and_keys():
    base = fingerprint(*data())
    assert fingerprint(*data()) == base
    _, corpus = data()
    unshared = [make_task(Store({"r1": 1, "r2": 2})), make_task(Store({"r1": 1, "r2": 2}), task_id="t2")]
    assert fingerprint(unshared, corpus) == base  # each task with a store of its own
    reordered = data(table={3: "three", "k": [1, 2]}, tags=frozenset({"a", "b"}))
    assert fingerprint(*reordered) == base


@pytest.mark.parametrize("changes", [{"task_id": "t9"}, {"table": {"k": [1, 3], 3: "three"}},
                                     {"table": {"k": [1, 2], 4: "three"}}, {"tags": frozenset({"a"})},
                                     {"rows": {"r1": 1, "r2": 3}}, {"rows": {"r1": 1, "r3": 2}}])
def test_every_change_of_a_value_moves_it(changes):
    assert fingerprint(*data(**changes)) != fingerprint(*data())


def test_kept_results_and_fields_left_out_of_comparison_do_not_count():
    tasks, corpus = data()
    before = fingerprint(tasks, corpus)
    tasks[0].payload[1]._memo["filled"] = 1  # a CACHE_ATTRIBUTES attribute
    object.__setattr__(tasks[0].payload[0], "note", "another note")  # compare=False
    assert fingerprint(tasks, corpus) == before
    tasks[0].payload[1].rows["r9"] = 9
    assert fingerprint(tasks, corpus) != before


def test_types_that_cannot_be_fingerprinted_raise():
    with pytest.raises(TypeError, match="cannot fingerprint"):
        fingerprint([object()])


def test_data_that_holds_itself_is_refused():
    loop: list = []
    loop.append(loop)
    with pytest.raises(RecursionError):
        fingerprint(loop)


class Hashed:
    """An object whose data carries its own content hash, taken when it is made."""

    FINGERPRINT_ATTRIBUTES = ("kind", "digest")

    def __init__(self, rows: dict, kind: str = "a") -> None:
        self.kind = kind
        self.rows = rows
        self.digest = str(sorted(rows.items()))
        self.index = {v: k for k, v in rows.items()}  # derived from rows


def test_an_object_naming_its_fingerprint_attributes_is_read_through_those_alone():
    base = fingerprint(Hashed({"r1": 1}))
    assert fingerprint(Hashed({"r1": 1})) == base
    assert fingerprint(Hashed({"r1": 2})) != base  # through the digest
    assert fingerprint(Hashed({"r1": 1}, kind="b")) != base
    derived_changed = Hashed({"r1": 1})
    derived_changed.index["x"] = "y"
    assert fingerprint(derived_changed) == base


def test_the_retail_snapshot_is_fingerprinted_by_its_semantics_and_its_tables_hash():
    from harness_gym.domains.tau_retail.store import RetailSnapshot

    users = {"u1": {"name": "Ada", "orders": ["#1"]}}
    orders = {"#1": {"user_id": "u1", "items": [{"item_id": "i1", "price": 3.5}]}}
    products = {"p1": {"name": "Lamp", "variants": {"i1": {"price": 3.5}}}}
    base = fingerprint(RetailSnapshot(users, orders, products))
    assert fingerprint(RetailSnapshot(users, orders, products)) == base
    assert fingerprint(RetailSnapshot(users, orders, products, semantics="v1")) != base
    cheaper = {"#1": {"user_id": "u1", "items": [{"item_id": "i1", "price": 3.0}]}}
    assert fingerprint(RetailSnapshot(users, cheaper, products)) != base
