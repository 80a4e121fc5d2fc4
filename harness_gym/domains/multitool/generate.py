"""Generate the multi-tool domain's world (rate table, lookup tables), corpus and tasks.

Deterministic for a seed; run ``python -m harness_gym.domains.multitool.generate [--out DIR] [--seed N]``.
Writes ``world.json``, ``corpus.jsonl`` and ``tasks.jsonl`` to ``envs_data/multitool/``.

The hand-written inputs are in ``sources/``: the currencies' starting levels (``currencies.json``), the lookup
tables' descriptions (``tables.json``), the tool manuals and conventions (``manuals.jsonl``), the request types
with their wording and chain length (``requests.json``, read by :mod:`~harness_gym.domains.multitool.requests`)
and the unit conversions a 1-call task asks (``conversions.json``).

Each task is a chain of 1-5 tool calls made from a request type. Twelve types form train/val/test; six more
(about supplier invoices, and unit prices per pound) are held out as the ``ood`` split. Wrong candidates are
realistic plan perturbations (:mod:`~harness_gym.domains.multitool.mutations`): the wrong column, key or rate
date, swapped arguments, a missing step, the wrong unit, a slip in the calculator expression or in the final
number. Each wrong plan's answer is what executing it gives; a candidate is kept only when the grader's comparison
with the reference plan's value agrees with its label (a rate that did not move between two dates is dropped).

**Task mix** (every split, ``ood`` included, by :func:`~harness_gym.domains.generation.mix_counts` of
:data:`LENGTH_WEIGHTS`): the number of tool calls a task's answer chains, 1 to 5, in the proportions of the
gold action sequences of τ²-bench's retail domain (``tasks.json``, 114 tasks; reads and writes both count):
20 tasks take 1 call, 15 take 2, 9 take 3, 8 take 4 and 18 take 5 (the 2 tasks with no call and the 42 with more
than 5 left out), so 28.6% / 21.4% / 12.9% / 11.4% / 25.7%. The request types of one length take turns. The cue
is the prompt: its wording names the quantities the answer combines (a rate on a day: 1 call; a unit weight in
another unit: 2; an order's amount at its order date's rate: 4 ...). A longer chain needs more evidence (more table
schemas, manuals and lookups) and its check covers more steps; how much of the spec the check covers depends on
the request type (a wrong rate date or a near-miss id passes it, a unit slip does not).

Difficulty is 0.1 + 0.12 per call beyond two (so about 0 for one call) + the template's trickiness + U(-0.05,
0.05), + 0.15 on ``ood``.
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
from harness_gym.domains.generation import generator_main, mix_counts, pick
from harness_gym.domains.multitool import mutations
from harness_gym.domains.multitool.checker import run_plan
from harness_gym.domains.multitool.mutations import WEIGHT_UNITS, Plan, answer_slip, lookup, step
from harness_gym.domains.multitool.requests import REQUESTS_FILE, RequestType, read_requests
from harness_gym.domains.multitool.tools import TOOL_SPECS, UNITS, World, answer_close, format_unit
from harness_gym.domains.source_files import fill_placeholders, source_path

START = dt.date(2024, 1, 1)
DAYS = 182
CURRENCIES_FILE = source_path("multitool", "currencies.json")
TABLES_FILE = source_path("multitool", "tables.json")
MANUALS_FILE = source_path("multitool", "manuals.jsonl")
SPLIT_SIZES = {"train": 95, "val": 30, "test": 35}
"""In-distribution tasks per split."""
N_OOD = 40
TAU2_RETAIL_CALLS = {"1": 20, "2": 15, "3": 9, "4": 8, "5": 18}
"""τ²-bench retail tasks by the number of tool calls in their gold action sequence, 1 to 5 (module docstring)."""
LENGTH_WEIGHTS = TAU2_RETAIL_CALLS
"""The task mix: chain length -> weight in every split."""
CONVERSIONS_FILE = source_path("multitool", "conversions.json")

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


def read_conversions(path: Path = CONVERSIONS_FILE) -> list[dict[str, str]]:
    """The unit conversions a 1-call task asks: source and target unit, how the prompt names them, a confusable
    source unit and another target unit of the same dimension (the wrong plans).

    :param path: the conversions file
    """
    raw = read_json(path)
    if not isinstance(raw, list) or not raw:
        raise TaskFileError(path, "expected a non-empty list of conversions")
    out = []
    for i, rec in enumerate(raw):
        where = f"[{i}]"
        if not isinstance(rec, dict):
            raise TaskFileError(path, "expected an object", field=where)
        conv = {k: require(rec, k, str, path=path, task_id=where)
                for k in ("from", "to", "from_words", "to_words", "confusable", "other_to")}
        for k in ("from", "to", "confusable", "other_to"):
            if conv[k] not in UNITS:
                raise TaskFileError(path, f"unknown unit {conv[k]!r}", task_id=where, field=k)
        if len({UNITS[conv[k]].dimension for k in ("from", "to", "confusable", "other_to")}) != 1:
            raise TaskFileError(path, "the four units must share one dimension", task_id=where)
        out.append(conv)
    return out


COLUMN_TYPES = ("text", "quantity", "date")
CURRENCIES = read_currencies()
COLUMNS = read_tables()
CONVERSIONS = read_conversions()


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

    request: RequestType
    prompt: str
    answer_unit: str
    plan: Plan
    wrong: list[tuple[str, Plan]]
    tool_calls: list[dict[str, Any]]
    table: str | None
    """The table whose schema the task needs (``None``: the task reads no table)."""
    docs: list[str]
    extra: float = 0.0
    """Difficulty added for the template's trickiness."""


def _call(s: dict[str, Any]) -> dict[str, Any]:
    return {"name": s["tool"], "args": dict(s["args"])}


def _neighbour(keys: list[str], key: str) -> str:
    """The key after ``key`` (the first after the last): a near-miss id."""
    return keys[(keys.index(key) + 1) % len(keys)]


def _day_before(day: str) -> str:
    return (dt.date.fromisoformat(day) - dt.timedelta(days=1)).isoformat()


def order_amount(rng: np.random.Generator, w: World, req: RequestType) -> Spec:
    orders = list(w.tables["orders"]["rows"])
    o = pick(rng, orders)
    cur = w.tables["orders"]["rows"][o]["amount"][1]
    plan = [lookup("orders", o, "amount")]
    return Spec(req, req.prompt(order=o, currency=cur), cur, plan, mutations.order_amount(o, _neighbour(orders, o)),
                [_call(plan[0])], "orders", ["table-orders"])


def fx_rate(rng: np.random.Generator, w: World, req: RequestType) -> Spec:
    base = pick(rng, [c for c in CURRENCIES if c != "JPY"])
    quote = pick(rng, [c for c in CURRENCIES if c not in (base, "JPY")])
    day = _day(rng, 1).isoformat()
    plan = [step("exchange_rate", base=base, quote=quote, date=day)]
    return Spec(req, req.prompt(quote=quote, base=base, date=day), f"{quote}/{base}", plan,
                mutations.fx_rate(base, quote, day, _day_before(day)), [_call(plan[0])], None,
                ["tool-exchange_rate"])


def unit_conversion(rng: np.random.Generator, w: World, req: RequestType) -> Spec:
    conv = pick(rng, CONVERSIONS)
    value = round(float(rng.uniform(2, 400)), 1)
    plan = [step("convert_units", value=value, from_unit=conv["from"], to_unit=conv["to"])]
    wrong = mutations.unit_conversion(value, conv["from"], conv["to"], conv["confusable"], conv["other_to"])
    prompt = req.prompt(to_words=conv["to_words"], value=f"{value:g}", from_words=conv["from_words"],
                        to_unit=conv["to"])
    return Spec(req, prompt, conv["to"], plan, wrong, [_call(plan[0])], None,
                [f"units-{UNITS[conv['to']].dimension}"])


def unit_weight(rng: np.random.Generator, w: World, req: RequestType) -> Spec:
    rows = w.tables["products"]["rows"]
    sku = pick(rng, list(rows))
    weight, unit = rows[sku]["unit_weight"]
    target = pick(rng, [u for u in ("kg", "lb", "oz", "g") if u != unit])
    third = pick(rng, [u for u in WEIGHT_UNITS if u not in (unit, target)])
    neighbour = _neighbour(list(rows), sku)
    plan = [lookup("products", sku, "unit_weight"), step("convert_units", value="$1", from_unit=unit, to_unit=target)]
    wrong = mutations.unit_weight(plan, unit, target, third, neighbour, rows[neighbour]["unit_weight"][1])
    calls = [_call(plan[0]), _call(step("convert_units", value=weight, from_unit=unit, to_unit=target))]
    return Spec(req, req.prompt(sku=sku, target=target), target, plan, wrong, calls, "products",
                ["table-products", "units-mass"])


def route_distance(rng: np.random.Generator, w: World, req: RequestType) -> Spec:
    rows = w.tables["routes"]["rows"]
    r = pick(rng, list(rows))
    dist, unit = rows[r]["distance"]
    target = "mi" if unit == "km" else "km"
    neighbour = _neighbour(list(rows), r)
    plan = [lookup("routes", r, "distance"), step("convert_units", value="$1", from_unit=unit, to_unit=target)]
    wrong = mutations.route_distance(plan, unit, target, neighbour, rows[neighbour]["distance"][1])
    calls = [_call(plan[0]), _call(step("convert_units", value=dist, from_unit=unit, to_unit=target))]
    return Spec(req, req.prompt(route=r, target=target), target, plan, wrong, calls, "routes",
                ["table-routes", "units-length"])


def delivery_days(rng: np.random.Generator, w: World, req: RequestType) -> Spec:
    orders = list(w.tables["orders"]["rows"])
    o = pick(rng, orders)
    plan = [lookup("orders", o, "order_date"), lookup("orders", o, "delivery_date"),
            step("date_diff", start="$1", end="$2")]
    return Spec(req, req.prompt(order=o), "day", plan, mutations.delivery_days(plan, _neighbour(orders, o)),
                [_call(plan[0]), _call(plan[1])], "orders", ["table-orders", "tool-date_diff"])


def order_fx(rng: np.random.Generator, w: World, req: RequestType) -> Spec:
    o = pick(rng, list(w.tables["orders"]["rows"]))
    row = w.tables["orders"]["rows"][o]
    cur = row["amount"][1]
    target = pick(rng, [c for c in CURRENCIES if c not in (cur, "JPY")])
    plan = [lookup("orders", o, "amount"), lookup("orders", o, "order_date"),
            step("exchange_rate", base=cur, quote=target, date="$2"), step("calculate", expression="$1 * $3")]
    month_start = row["order_date"][:8] + "01"
    wrong = mutations.order_fx(plan, o, cur, target, month_start)
    calls = [_call(plan[1]), _call({"tool": "exchange_rate", "args": {"base": cur, "quote": target,
                                                                       "date": row["order_date"]}})]
    return Spec(req, req.prompt(order=o, target=target), target, plan, wrong, calls, "orders",
                ["table-orders", "tool-exchange_rate"])


def shipment_weight(rng: np.random.Generator, w: World, req: RequestType) -> Spec:
    o = pick(rng, list(w.tables["orders"]["rows"]))
    row = w.tables["orders"]["rows"][o]
    sku = row["sku"]
    unit = w.tables["products"]["rows"][sku]["unit_weight"][1]
    target = pick(rng, [u for u in ("kg", "lb", "oz", "g") if u != unit])
    qty = int(row["quantity"][0])
    plan = [lookup("orders", o, "sku"), lookup("products", "$1", "unit_weight"), lookup("orders", o, "quantity"),
            step("calculate", expression="$2 * $3"), step("convert_units", value="$4", from_unit=unit, to_unit=target)]
    wrong = mutations.shipment_weight(rng, plan, unit, target, qty)
    calls = [_call(plan[0]), _call(lookup("products", sku, "unit_weight"))]
    return Spec(req, req.prompt(order=o, target=target), target, plan, wrong, calls, "orders",
                ["table-orders", "table-products"], extra=0.1)


def _contract_end(rng: np.random.Generator, w: World, req: RequestType, term_unit: str) -> Spec:
    rows = w.tables["contracts"]["rows"]
    c = pick(rng, [k for k, v in rows.items() if v["term"][1] == term_unit])
    if term_unit == "week":
        plan = [lookup("contracts", c, "effective"), lookup("contracts", c, "term"),
                step("convert_units", value="$2", from_unit="week", to_unit="day"),
                step("date_add", date="$1", days="$3")]
    else:
        plan = [lookup("contracts", c, "effective"), lookup("contracts", c, "term"),
                step("date_add", date="$1", days="$2")]
    wrong = mutations.contract_end(plan, c, term_unit)
    return Spec(req, req.prompt(contract=c), "date", plan, wrong, [_call(plan[0]), _call(plan[1])], "contracts",
                ["table-contracts", "tool-date_add"])


def contract_end_days(rng: np.random.Generator, w: World, req: RequestType) -> Spec:
    return _contract_end(rng, w, req, "day")


def contract_end_weeks(rng: np.random.Generator, w: World, req: RequestType) -> Spec:
    return _contract_end(rng, w, req, "week")


def route_speed(rng: np.random.Generator, w: World, req: RequestType) -> Spec:
    r = pick(rng, list(w.tables["routes"]["rows"]))
    row = w.tables["routes"]["rows"][r]
    d_unit, t_unit = row["distance"][1], row["actual_duration"][1]
    target = "mi/h" if d_unit == "km" or rng.random() < 0.5 else "km/h"
    speed = f"{d_unit}/{t_unit}"
    misread = f"{d_unit}/h" if t_unit == "min" else f"{d_unit}/min"
    plan = [lookup("routes", r, "distance"), lookup("routes", r, "actual_duration"),
            step("calculate", expression="$1 / $2"), step("convert_units", value="$3", from_unit=speed, to_unit=target)]
    wrong = mutations.route_speed(plan, r, target, speed, misread)
    return Spec(req, req.prompt(route=r, target=target), target, plan, wrong, [_call(plan[1]), _call(plan[0])],
                "routes", ["table-routes", "units-speed"])


def stay_cost(rng: np.random.Generator, w: World, req: RequestType) -> Spec:
    b = pick(rng, list(w.tables["bookings"]["rows"]))
    row = w.tables["bookings"]["rows"][b]
    cur = row["nightly_rate"][1].split("/")[0]
    plan = [lookup("bookings", b, "check_in"), lookup("bookings", b, "check_out"),
            step("date_diff", start="$1", end="$2"), lookup("bookings", b, "nightly_rate"),
            step("calculate", expression="$3 * $4")]
    wrong = mutations.stay_cost(plan, b)
    calls = [_call(plan[3]), _call(step("date_diff", start=row["check_in"], end=row["check_out"]))]
    return Spec(req, req.prompt(booking=b, currency=cur), cur, plan, wrong, calls, "bookings",
                ["table-bookings", "tool-date_diff"])


def invoice_issued(rng: np.random.Generator, w: World, req: RequestType) -> Spec:
    invoices = list(w.tables["invoices"]["rows"])
    inv = pick(rng, invoices)
    plan = [lookup("invoices", inv, "issued")]
    return Spec(req, req.prompt(invoice=inv), "date", plan, mutations.invoice_issued(inv, _neighbour(invoices, inv)),
                [_call(plan[0])], "invoices", ["table-invoices"])


def invoice_due(rng: np.random.Generator, w: World, req: RequestType) -> Spec:
    inv = pick(rng, list(w.tables["invoices"]["rows"]))
    issued = w.tables["invoices"]["rows"][inv]["issued"]
    terms = int(rng.choice([14, 30, 45, 60]))
    plan = [lookup("invoices", inv, "issued"), step("date_add", date="$1", days=terms)]
    calls = [_call(plan[0]), _call(step("date_add", date=issued, days=terms))]
    return Spec(req, req.prompt(invoice=inv, terms=terms), "date", plan, mutations.invoice_due(plan, inv, terms), calls,
                "invoices", ["table-invoices", "guide-dates"])


def invoice_fx_on_day(rng: np.random.Generator, w: World, req: RequestType) -> Spec:
    inv = pick(rng, list(w.tables["invoices"]["rows"]))
    cur = w.tables["invoices"]["rows"][inv]["amount"][1]
    target = pick(rng, [c for c in CURRENCIES if c not in (cur, "JPY")])
    day = _day(rng, 1).isoformat()
    plan = [lookup("invoices", inv, "amount"), step("exchange_rate", base=cur, quote=target, date=day),
            step("calculate", expression="$1 * $2")]
    wrong = mutations.invoice_fx_on_day(plan, cur, target, _day_before(day))
    return Spec(req, req.prompt(invoice=inv, target=target, date=day), target, plan, wrong,
                [_call(plan[0]), _call(plan[1])], "invoices", ["table-invoices", "tool-exchange_rate"])


def price_per_weight_local(rng: np.random.Generator, w: World, req: RequestType) -> Spec:
    rows = w.tables["products"]["rows"]
    p = pick(rng, [k for k, v in rows.items() if v["unit_weight"][1] != "lb"])
    cur, unit = rows[p]["price"][1], rows[p]["unit_weight"][1]
    plan = [lookup("products", p, "price"), lookup("products", p, "unit_weight"),
            step("convert_units", value="$2", from_unit=unit, to_unit="lb"), step("calculate", expression="$1 / $3")]
    return Spec(req, req.prompt(sku=p, currency=cur), f"{cur}/lb", plan, mutations.price_per_weight_local(plan, unit),
                [_call(plan[0]), _call(plan[1])], "products", ["table-products", "units-mass"])


def invoice_due_fx(rng: np.random.Generator, w: World, req: RequestType) -> Spec:
    inv = pick(rng, list(w.tables["invoices"]["rows"]))
    row = w.tables["invoices"]["rows"][inv]
    cur = row["amount"][1]
    target = pick(rng, [c for c in CURRENCIES if c not in (cur, "JPY")])
    terms = int(rng.choice([14, 30, 45, 60]))
    plan = [lookup("invoices", inv, "issued"), step("date_add", date="$1", days=terms),
            step("exchange_rate", base=cur, quote=target, date="$2"), lookup("invoices", inv, "amount"),
            step("calculate", expression="$4 * $3")]
    wrong = mutations.invoice_due_fx(plan, inv, cur, target, terms)
    due = (dt.date.fromisoformat(row["issued"]) + dt.timedelta(days=terms)).isoformat()
    calls = [_call(plan[0]), _call(step("exchange_rate", base=cur, quote=target, date=due))]
    return Spec(req, req.prompt(invoice=inv, terms=terms, target=target), target, plan, wrong, calls, "invoices",
                ["table-invoices", "guide-dates"], extra=0.15)


def price_per_weight(rng: np.random.Generator, w: World, req: RequestType) -> Spec:
    p = pick(rng, [k for k, v in w.tables["products"]["rows"].items() if v["unit_weight"][1] != "lb"])
    row = w.tables["products"]["rows"][p]
    cur, unit = row["price"][1], row["unit_weight"][1]
    target = pick(rng, [c for c in CURRENCIES if c not in (cur, "JPY")])
    day = _day(rng).isoformat()
    plan = [lookup("products", p, "price"), lookup("products", p, "unit_weight"),
            step("convert_units", value="$2", from_unit=unit, to_unit="lb"),
            step("exchange_rate", base=cur, quote=target, date=day), step("calculate", expression="$1 * $4 / $3")]
    wrong = mutations.price_per_weight(plan, unit, cur, target, _day_before(day))
    return Spec(req, req.prompt(sku=p, target=target, date=day), f"{target}/lb", plan, wrong,
                [_call(plan[1]), _call(plan[3])], "products", ["table-products", "tool-exchange_rate"], extra=0.1)


Template = Callable[[np.random.Generator, World, RequestType], Spec]
TEMPLATES: dict[str, Template] = {f.__name__: f for f in (
    order_amount, fx_rate, unit_conversion, unit_weight, route_distance, delivery_days, contract_end_days,
    order_fx, route_speed, contract_end_weeks, shipment_weight, stay_cost,
    invoice_issued, invoice_due, invoice_fx_on_day, price_per_weight_local, invoice_due_fx, price_per_weight)}
"""Request family -> the function that makes one task of it (the families of ``sources/requests.json``)."""
IN_DIST, OOD = read_requests()
if set(TEMPLATES) != set(IN_DIST) | set(OOD):
    raise TaskFileError(REQUESTS_FILE, f"request types without a template: {sorted(set(IN_DIST) | set(OOD) - set(TEMPLATES))}; "
                        f"templates without a request type: {sorted(set(TEMPLATES) - set(IN_DIST) - set(OOD))}")


# ----- labelling -------------------------------------------------------------------------------------
def _answer(value: float | str) -> float | str:
    return value if isinstance(value, str) else round(float(value), 2)


def build_task(spec: Spec, task_id: str, split: str, rng: np.random.Generator, world: World,
               world_raw: dict[str, Any]) -> dict[str, Any]:
    """Label the candidates with the real checker and grader and assemble the task record."""
    ref_run = run_plan(world, TOOL_SPECS, spec.plan)
    assert ref_run.ok, (task_id, ref_run.error)
    assert len(spec.plan) == spec.request.steps, (task_id, len(spec.plan))
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
    observations = []
    if spec.table is not None:
        tab = world_raw["tables"][spec.table]
        schema = "; ".join(f"{c} ({v['type']}): {v['doc']}" for c, v in tab["columns"].items())
        observations.append(f"Table {spec.table} (key {tab['key']}): {schema}.")
    observations += [
        'Answer format: JSON {"plan": [...], "answer": ...}; the answer is '
        + ("an ISO date." if spec.answer_unit == "date" else f"a number in {spec.answer_unit}, 2 decimals."),
        f"Rates are published daily from {world.start} to {world.end} for {', '.join(world.per_usd)}.",
    ]
    n_steps = len(spec.plan)
    difficulty = 0.1 + 0.12 * (n_steps - 2) + spec.extra + float(rng.uniform(-0.05, 0.05))
    if split == "ood":
        difficulty += 0.15
    return {"task_id": task_id, "split": split, "family": spec.request.family,
            "difficulty": round(min(1.0, max(0.0, difficulty)), 3), "prompt": spec.prompt,
            "candidates": labelled, "observations": observations,
            "required_observations": [0] if spec.table is not None else [],
            "relevant_docs": spec.docs, "tool_calls": spec.tool_calls, "payload": payload}


def generate(out: Path, seed: int = 0) -> dict[str, int]:
    """Write world.json, corpus.jsonl and tasks.jsonl under ``out``; return the task count per split."""
    rng = np.random.default_rng(seed)
    world_raw = make_world(rng)
    world = World(world_raw["rates"], world_raw["tables"])
    records: list[dict[str, Any]] = []
    seen: set[str] = set()
    made: Counter[str] = Counter()
    for types, sizes in ((IN_DIST, SPLIT_SIZES), (OOD, {"ood": N_OOD})):
        for split, n in sizes.items():
            for steps, count in mix_counts(n, LENGTH_WEIGHTS).items():
                families = [t for t in types.values() if t.steps == int(steps)]
                for i in range(count):
                    request = families[i % len(families)]
                    spec = TEMPLATES[request.family](rng, world, request)
                    while spec.prompt in seen:
                        spec = TEMPLATES[request.family](rng, world, request)
                    seen.add(spec.prompt)
                    tid = f"mt-{request.family}-{made[request.family]:03d}"
                    made[request.family] += 1
                    records.append(build_task(spec, tid, split, rng, world, world_raw))
    write_jsonl(out / "corpus.jsonl", make_corpus(world_raw))
    write_jsonl(out / "tasks.jsonl", records)
    (out / "world.json").write_text(json.dumps(world_raw, indent=1) + "\n", encoding="utf-8")
    return dict(Counter(rec["split"] for rec in records))


def main() -> None:
    generator_main(__doc__, "multitool", generate)


if __name__ == "__main__":
    main()
