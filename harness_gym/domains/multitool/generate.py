"""Generate the multi-tool domain's world (rate table, lookup tables), corpus and tasks.

Deterministic for a seed; run ``python -m harness_gym.domains.multitool.generate [--out DIR] [--seed N]``.
Writes ``world.json``, ``corpus.jsonl`` and ``tasks.jsonl`` to ``envs_data/multitool/``.

The hand-written inputs are in ``sources/``: the currencies' starting levels (``currencies.json``), the lookup
tables' descriptions (``tables.json``) and the tool manuals and conventions (``manuals.jsonl``).

Each task is a chain of 2-5 tool calls made from a template. Five templates form train/val/test; two more
(invoice due-date conversion, price per weight in another currency) are held out as the ``ood`` split.
Wrong candidates are realistic plan perturbations (:mod:`~harness_gym.domains.multitool.mutations`): the wrong
column or rate date, swapped arguments, a missing step, the wrong target unit, a slip in the calculator
expression or in the final number. Each
wrong plan's answer is what executing it gives; a candidate is kept only when the grader's comparison with the
reference plan's value agrees with its label (a rate that did not move between two dates is dropped).
"""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from harness_gym.core.taskfile import TaskFileError, read_documents, read_json, require, write_jsonl
from harness_gym.domains.generation import family_splits, generator_main, pick
from harness_gym.domains.multitool import mutations
from harness_gym.domains.multitool.checker import run_plan
from harness_gym.domains.multitool.mutations import Plan, answer_slip, lookup, step
from harness_gym.domains.multitool.tools import TOOL_SPECS, UNITS, World, answer_close, format_unit
from harness_gym.domains.sources import fill_placeholders, source_path

START = dt.date(2024, 1, 1)
DAYS = 182
CURRENCIES_FILE = source_path("multitool", "currencies.json")
TABLES_FILE = source_path("multitool", "tables.json")
MANUALS_FILE = source_path("multitool", "manuals.jsonl")
OOD_PER_FAMILY = 20
SPLIT_SHARES = (("train", 19), ("val", 6), ("test", 7))  # tasks per in-distribution family, by split

# ----- world -----------------------------------------------------------------------------------------
def read_currencies(path: Path = CURRENCIES_FILE) -> dict[str, float]:
    """Currency code -> units of it one US dollar buys at the start of the rate table (``USD`` first, 1.0).

    :param path: the currencies file
    """
    raw = read_json(path)
    if not isinstance(raw, dict) or next(iter(raw), None) != "USD":
        raise TaskFileError(path, "expected an object of currency code -> level, starting with USD")
    return {code: require(raw, code, float, path=path) for code in raw}


def read_tables(path: Path = TABLES_FILE) -> dict[str, dict[str, Any]]:
    """The lookup tables' descriptions: table -> ``{"key", "doc", "columns": {column: {"type", "doc"}}}``.

    :param path: the tables file
    """
    raw = read_json(path)
    if not isinstance(raw, dict):
        raise TaskFileError(path, "expected an object: table name -> description")
    for name, spec in raw.items():
        if not isinstance(spec, dict):
            raise TaskFileError(path, "expected an object", field=name)
        require(spec, "key", str, path=path, task_id=name)
        require(spec, "doc", str, path=path, task_id=name)
        for column, col in require(spec, "columns", dict, path=path, task_id=name).items():
            if not isinstance(col, dict) or require(col, "type", str, path=path, task_id=name) not in COLUMN_TYPES:
                raise TaskFileError(path, f"a column's type is one of {COLUMN_TYPES}", task_id=name, field=column)
            require(col, "doc", str, path=path, task_id=name)
    return raw


COLUMN_TYPES = ("text", "quantity", "date")
CURRENCIES = read_currencies()
COLUMNS = read_tables()


def _day(rng: np.random.Generator, lo: int = 0, hi: int = DAYS) -> dt.date:
    return START + dt.timedelta(days=int(rng.integers(lo, hi)))


def make_world(rng: np.random.Generator) -> dict[str, Any]:
    """The rate table (a seeded random walk per currency) and the six lookup tables."""
    per_usd: dict[str, list[float]] = {}
    for code, level in CURRENCIES.items():
        if code == "USD":
            per_usd[code] = [1.0] * DAYS
            continue
        walk = np.exp(np.cumsum(rng.normal(0.0, 0.005, DAYS)))
        per_usd[code] = [round(float(level * w), 6 if level < 10 else 4) for w in walk]
    codes = [c for c in CURRENCIES if c != "JPY"]

    def money(lo: float, hi: float, code: str) -> list[Any]:
        scale = CURRENCIES[code]
        return [round(float(rng.uniform(lo, hi)) * scale, 2 if scale < 10 else 0), code]

    rows: dict[str, dict[str, dict[str, Any]]] = {t: {} for t in COLUMNS}
    for i in range(40):
        d = _day(rng, 0, DAYS - 20)
        rows["products"][f"P-{i + 1:02d}"] = {
            "name": f"item {i + 1}",
            "unit_weight": [round(float(rng.uniform(0.2, 30.0)), 2), str(rng.choice(["kg", "kg", "lb", "g"]))],
            "price": money(5, 400, str(rng.choice(codes)))}
        if rows["products"][f"P-{i + 1:02d}"]["unit_weight"][1] == "g":
            rows["products"][f"P-{i + 1:02d}"]["unit_weight"][0] = round(float(rng.uniform(50, 900)), 0)
        rows["orders"][f"O-{1001 + i}"] = {
            "sku": f"P-{int(rng.integers(1, 41)):02d}", "quantity": [int(rng.integers(2, 60)), ""],
            "amount": money(80, 5000, str(rng.choice([c for c in codes if c != "USD"] + ["JPY"]))),
            "order_date": d.isoformat(),
            "delivery_date": (d + dt.timedelta(days=int(rng.integers(3, 18)))).isoformat()}
        signed = _day(rng, 0, 120)
        rows["contracts"][f"C-{201 + i}"] = {
            "signed": signed.isoformat(),
            "effective": (signed + dt.timedelta(days=int(rng.integers(5, 40)))).isoformat(),
            "term": [int(rng.integers(4, 40)), "week"] if rng.random() < 0.6 else [int(rng.integers(30, 400)), "day"]}
        dist_unit = str(rng.choice(["km", "mi"]))
        dist = float(rng.uniform(40, 900)) / (1.609344 if dist_unit == "mi" else 1.0)
        hours = dist * (1.609344 if dist_unit == "mi" else 1.0) / float(rng.uniform(45, 95))
        dur_unit = str(rng.choice(["h", "min"]))

        def dur(h: float, unit: str = dur_unit) -> list[Any]:
            return [round(h * 60) if unit == "min" else round(h, 2), unit]

        rows["routes"][f"R-{31 + i}"] = {
            "distance": [round(dist, 1), dist_unit], "scheduled_duration": dur(hours),
            "actual_duration": dur(hours * float(rng.uniform(1.08, 1.5)))}
        check_in = _day(rng, 10, DAYS - 20)
        rows["bookings"][f"B-{501 + i}"] = {
            "check_in": check_in.isoformat(),
            "check_out": (check_in + dt.timedelta(days=int(rng.integers(2, 15)))).isoformat(),
            "booked_on": (check_in - dt.timedelta(days=int(rng.integers(3, 60)))).isoformat()}
        code = str(rng.choice(codes))
        rows["bookings"][f"B-{501 + i}"]["nightly_rate"] = [money(60, 400, code)[0], f"{code}/day"]
        issued = _day(rng, 0, DAYS - 95)
        rows["invoices"][f"INV-{7001 + i}"] = {
            "issued": issued.isoformat(),
            "received": (issued + dt.timedelta(days=int(rng.integers(2, 12)))).isoformat(),
            "amount": money(200, 9000, str(rng.choice([c for c in codes if c != "USD"])))}
    tables = {name: {"key": spec["key"], "doc": spec["doc"],
                     "columns": {c: {"type": col["type"], "doc": col["doc"]} for c, col in spec["columns"].items()},
                     "rows": rows[name]} for name, spec in COLUMNS.items()}
    return {"rates": {"start": START.isoformat(), "per_usd": per_usd}, "tables": tables}


# ----- corpus ----------------------------------------------------------------------------------------
def make_corpus(world: dict[str, Any]) -> list[dict[str, str]]:
    """Tool manuals and conventions (``sources/manuals.jsonl``, with the rate table's dates, currencies and
    tables filled in), then a description of each table and the unit names per dimension: what RETRIEVE ranks
    with BM25."""
    values = {"start": str(START), "end": str(START + dt.timedelta(days=DAYS - 1)),
              "currencies": ", ".join(CURRENCIES), "tables": ", ".join(world["tables"])}
    docs = [(d.doc_id, d.title, fill_placeholders(d.text, values)) for d in read_documents(MANUALS_FILE)]
    for name, tab in world["tables"].items():
        cols = "; ".join(f"{c} ({v['type']}): {v['doc']}" for c, v in tab["columns"].items())
        docs.append((f"table-{name}", f"Table {name}", f"Key: {tab['key']}. {tab['doc']} Columns: {cols}."))
    by_dim: dict[str, list[str]] = {}
    for unit, d in UNITS.items():
        by_dim.setdefault(d.dimension, []).append(unit)
    for dim, units in by_dim.items():
        docs.append((f"units-{dim}", f"Units of {dim}",
                     f"convert_units knows these {dim} units: {', '.join(units)}. Use exactly these names "
                     f"(e.g. lb not lbs, h not hr, mi/h for miles per hour)."))
    return [{"doc_id": i, "title": t, "text": x} for i, t, x in docs]


# ----- templates -------------------------------------------------------------------------------------
@dataclass
class Spec:
    """One task before labelling: the reference plan and the wrong plans a model plausibly writes."""

    family: str
    prompt: str
    answer_unit: str
    plan: Plan
    wrong: list[tuple[str, Plan]]
    tool_calls: list[dict[str, Any]]
    table: str
    docs: list[str]
    extra: float = 0.0
    """Difficulty added for the template's trickiness."""


def _call(s: dict[str, Any]) -> dict[str, Any]:
    return {"name": s["tool"], "args": dict(s["args"])}


def order_fx(rng: np.random.Generator, w: World) -> Spec:
    o = pick(rng, list(w.tables["orders"]["rows"]))
    row = w.tables["orders"]["rows"][o]
    cur = row["amount"][1]
    target = pick(rng, [c for c in CURRENCIES if c not in (cur, "JPY")])
    plan = [lookup("orders", o, "amount"), lookup("orders", o, "order_date"),
            step("exchange_rate", base=cur, quote=target, date="$2"), step("calculate", expression="$1 * $3")]
    month_start = row["order_date"][:8] + "01"
    wrong = mutations.order_fx(plan, o, cur, target, month_start)
    prompt = (f"Order {o} was invoiced in the customer's currency. What is the order amount in {target}, "
              f"converted at the exchange rate finance uses for orders? Answer in {target}.")
    calls = [_call(plan[1]), _call({"tool": "exchange_rate", "args": {"base": cur, "quote": target,
                                                                       "date": row["order_date"]}})]
    return Spec("order_fx", prompt, target, plan, wrong, calls, "orders", ["table-orders", "tool-exchange_rate"])


def shipment_weight(rng: np.random.Generator, w: World) -> Spec:
    o = pick(rng, list(w.tables["orders"]["rows"]))
    row = w.tables["orders"]["rows"][o]
    sku = row["sku"]
    unit = w.tables["products"]["rows"][sku]["unit_weight"][1]
    target = pick(rng, [u for u in ("kg", "lb", "oz", "g") if u != unit])
    qty = int(row["quantity"][0])
    plan = [lookup("orders", o, "sku"), lookup("products", "$1", "unit_weight"), lookup("orders", o, "quantity"),
            step("calculate", expression="$2 * $3"), step("convert_units", value="$4", from_unit=unit, to_unit=target)]
    wrong = mutations.shipment_weight(rng, plan, unit, target, qty)
    prompt = (f"What is the total shipping weight of order {o} (all units of the product it contains)? "
              f"Answer in {target}.")
    calls = [_call(plan[0]), _call(lookup("products", sku, "unit_weight"))]
    return Spec("shipment_weight", prompt, target, plan, wrong, calls, "orders",
                ["table-orders", "table-products"], extra=0.1)


def contract_end(rng: np.random.Generator, w: World) -> Spec:
    c = pick(rng, list(w.tables["contracts"]["rows"]))
    row = w.tables["contracts"]["rows"][c]
    term, unit = row["term"]
    if unit == "week":
        plan = [lookup("contracts", c, "effective"), lookup("contracts", c, "term"),
                step("convert_units", value="$2", from_unit="week", to_unit="day"),
                step("date_add", date="$1", days="$3")]
    else:
        plan = [lookup("contracts", c, "effective"), lookup("contracts", c, "term"),
                step("date_add", date="$1", days="$2")]
    wrong = mutations.contract_end(plan, c, unit)
    prompt = f"On which date does contract {c} end, given its term? Answer with an ISO date."
    calls = [_call(plan[0]), _call(plan[1])]
    return Spec("contract_end", prompt, "date", plan, wrong, calls, "contracts", ["table-contracts", "tool-date_add"])


def route_speed(rng: np.random.Generator, w: World) -> Spec:
    r = pick(rng, list(w.tables["routes"]["rows"]))
    row = w.tables["routes"]["rows"][r]
    d_unit, t_unit = row["distance"][1], row["actual_duration"][1]
    target = "mi/h" if d_unit == "km" or rng.random() < 0.5 else "km/h"
    speed = f"{d_unit}/{t_unit}"
    misread = f"{d_unit}/h" if t_unit == "min" else f"{d_unit}/min"
    plan = [lookup("routes", r, "distance"), lookup("routes", r, "actual_duration"),
            step("calculate", expression="$1 / $2"), step("convert_units", value="$3", from_unit=speed, to_unit=target)]
    wrong = mutations.route_speed(plan, r, target, speed, misread)
    prompt = (f"What was the average speed on the last trip of route {r}, from the driver's measured time? "
              f"Answer in {target}.")
    calls = [_call(plan[1]), _call(plan[0])]
    return Spec("route_speed", prompt, target, plan, wrong, calls, "routes", ["table-routes", "units-speed"])


def stay_cost(rng: np.random.Generator, w: World) -> Spec:
    b = pick(rng, list(w.tables["bookings"]["rows"]))
    row = w.tables["bookings"]["rows"][b]
    cur = row["nightly_rate"][1].split("/")[0]
    plan = [lookup("bookings", b, "check_in"), lookup("bookings", b, "check_out"),
            step("date_diff", start="$1", end="$2"), lookup("bookings", b, "nightly_rate"),
            step("calculate", expression="$3 * $4")]
    wrong = mutations.stay_cost(plan, b)
    prompt = f"What is the total room charge of booking {b} for the whole stay? Answer in {cur}."
    calls = [_call(plan[3]), _call(step("date_diff", start=row["check_in"], end=row["check_out"]))]
    return Spec("stay_cost", prompt, cur, plan, wrong, calls, "bookings", ["table-bookings", "tool-date_diff"])


def invoice_due_fx(rng: np.random.Generator, w: World) -> Spec:
    inv = pick(rng, list(w.tables["invoices"]["rows"]))
    row = w.tables["invoices"]["rows"][inv]
    cur = row["amount"][1]
    target = pick(rng, [c for c in CURRENCIES if c not in (cur, "JPY")])
    terms = int(rng.choice([14, 30, 45, 60]))
    plan = [lookup("invoices", inv, "issued"), step("date_add", date="$1", days=terms),
            step("exchange_rate", base=cur, quote=target, date="$2"), lookup("invoices", inv, "amount"),
            step("calculate", expression="$4 * $3")]
    wrong = mutations.invoice_due_fx(plan, inv, cur, target, terms)
    prompt = (f"Invoice {inv} has net {terms} payment terms. How much is it in {target} at the rate on which it "
              f"is settled? Answer in {target}.")
    due = (dt.date.fromisoformat(row["issued"]) + dt.timedelta(days=terms)).isoformat()
    calls = [_call(plan[0]), _call(step("exchange_rate", base=cur, quote=target, date=due))]
    return Spec("invoice_due_fx", prompt, target, plan, wrong, calls, "invoices",
                ["table-invoices", "guide-dates"], extra=0.15)


def price_per_weight(rng: np.random.Generator, w: World) -> Spec:
    p = pick(rng, [k for k, v in w.tables["products"]["rows"].items() if v["unit_weight"][1] != "lb"])
    row = w.tables["products"]["rows"][p]
    cur, unit = row["price"][1], row["unit_weight"][1]
    target = pick(rng, [c for c in CURRENCIES if c not in (cur, "JPY")])
    day = _day(rng).isoformat()
    day_before = (dt.date.fromisoformat(day) - dt.timedelta(days=1)).isoformat()
    plan = [lookup("products", p, "price"), lookup("products", p, "unit_weight"),
            step("convert_units", value="$2", from_unit=unit, to_unit="lb"),
            step("exchange_rate", base=cur, quote=target, date=day), step("calculate", expression="$1 * $4 / $3")]
    wrong = mutations.price_per_weight(plan, unit, cur, target, day_before)
    prompt = (f"Quote the list price of product {p} per pound of weight in {target}, using the rate of {day}. "
              f"Answer in {target}/lb.")
    calls = [_call(plan[1]), _call(plan[3])]
    return Spec("price_per_weight", prompt, f"{target}/lb", plan, wrong, calls, "products",
                ["table-products", "tool-exchange_rate"], extra=0.1)


IN_DIST: tuple[Callable[[np.random.Generator, World], Spec], ...] = (order_fx, shipment_weight, contract_end,
                                                                      route_speed, stay_cost)
OOD: tuple[Callable[[np.random.Generator, World], Spec], ...] = (invoice_due_fx, price_per_weight)


# ----- labelling -------------------------------------------------------------------------------------
def _answer(value: float | str) -> float | str:
    return value if isinstance(value, str) else round(float(value), 2)


def build_task(spec: Spec, task_id: str, split: str, rng: np.random.Generator, world: World,
               world_raw: dict[str, Any]) -> dict[str, Any]:
    """Label the candidates with the real checker and grader and assemble the task record."""
    ref_run = run_plan(world, TOOL_SPECS, spec.plan)
    assert ref_run.ok, (task_id, ref_run.error)
    exact = ref_run.result.as_json()
    gold = _answer(exact)
    assert format_unit(ref_run.result.unit) == spec.answer_unit or spec.answer_unit == "date", (task_id, ref_run.result)
    payload = {"answer_unit": spec.answer_unit, "reference_plan": spec.plan}
    candidates = [{"content": json.dumps({"plan": spec.plan, "answer": gold}), "kind": "reference", "correct": True}]
    for kind, plan in spec.wrong:
        run = run_plan(world, TOOL_SPECS, plan, check_units=False)
        value = _answer(run.result.as_json()) if run.ok else answer_slip(gold, rng)
        candidates.append({"content": json.dumps({"plan": plan, "answer": value}), "kind": kind, "correct": False})
    candidates.append({"content": json.dumps({"plan": spec.plan, "answer": answer_slip(gold, rng)}),
                       "kind": "answer_slip", "correct": False})
    # Keep only wrong candidates the grader really rejects (a rate that did not move would be correct).
    labelled, contents = [], set()
    for cand in candidates:
        graded_correct = answer_close(json.loads(cand["content"])["answer"], exact)
        if cand["content"] not in contents and graded_correct == cand["correct"]:
            contents.add(cand["content"])
            labelled.append(cand)
    tab = world_raw["tables"][spec.table]
    schema = "; ".join(f"{c} ({v['type']}): {v['doc']}" for c, v in tab["columns"].items())
    observations = [
        f"Table {spec.table} (key {tab['key']}): {schema}.",
        'Answer format: JSON {"plan": [...], "answer": ...}; the answer is '
        + ("an ISO date." if spec.answer_unit == "date" else f"a number in {spec.answer_unit}, 2 decimals."),
        f"Rates are published daily from {world.start} to {world.end} for {', '.join(world.per_usd)}.",
    ]
    n_steps = len(spec.plan)
    difficulty = 0.1 + 0.12 * (n_steps - 2) + spec.extra + float(rng.uniform(-0.05, 0.05))
    if split == "ood":
        difficulty += 0.15
    return {"task_id": task_id, "split": split, "family": spec.family,
            "difficulty": round(min(1.0, max(0.0, difficulty)), 3), "prompt": spec.prompt,
            "candidates": labelled, "observations": observations, "required_observations": [0],
            "relevant_docs": spec.docs, "tool_calls": spec.tool_calls, "payload": payload}


def generate(out: Path, seed: int = 0) -> dict[str, int]:
    """Write world.json, corpus.jsonl and tasks.jsonl under ``out``; return the task count per split."""
    rng = np.random.default_rng(seed)
    world_raw = make_world(rng)
    world = World(world_raw["rates"], world_raw["tables"])
    records: list[dict[str, Any]] = []
    seen: set[str] = set()
    for make, splits in family_splits(rng, IN_DIST, SPLIT_SHARES, OOD, OOD_PER_FAMILY):
        made = 0
        while made < len(splits):
            spec = make(rng, world)
            if spec.prompt in seen:
                continue
            seen.add(spec.prompt)
            tid = f"mt-{spec.family}-{made:03d}"
            records.append(build_task(spec, tid, splits[made], rng, world, world_raw))
            made += 1
    write_jsonl(out / "corpus.jsonl", make_corpus(world_raw))
    write_jsonl(out / "tasks.jsonl", records)
    (out / "world.json").write_text(json.dumps(world_raw, indent=1) + "\n", encoding="utf-8")
    return dict(Counter(rec["split"] for rec in records))


def main() -> None:
    generator_main(__doc__, "multitool", generate)


if __name__ == "__main__":
    main()
