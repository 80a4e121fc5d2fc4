"""Wrong plans for a multi-tool task: the edits of a template's reference plan a model plausibly makes (the
wrong column or rate date, swapped arguments, a missing step, the wrong unit, a slip in the calculator
expression) and transcription slips in the final number.

One function per template of :mod:`~harness_gym.domains.multitool.generate` takes the reference plan and the
task values the edits need; :func:`step` and :func:`lookup` build the plan steps both sides write.
"""

from __future__ import annotations

import datetime as dt
import itertools
from typing import Any

import numpy as np

from harness_gym.domains.generation import pick

Plan = list[dict[str, Any]]
Wrong = list[tuple[str, Plan]]
"""(kind, plan) pairs."""
WEIGHT_UNITS = ("kg", "lb", "oz", "g")


def step(tool: str, **args: Any) -> dict[str, Any]:
    """One plan step: a tool call whose arguments may name earlier results (``"$n"``)."""
    return {"tool": tool, "args": args}


def lookup(table: str, key: str, field_: str) -> dict[str, Any]:
    """A ``lookup`` step of one table cell."""
    return step("lookup", table=table, key=key, field=field_)


def order_amount(order: str, neighbour: str) -> Wrong:
    """Wrong amounts: the next order's amount (right unit when it is in the same currency), the quantity."""
    return [("wrong_key", [lookup("orders", neighbour, "amount")]),
            ("wrong_field", [lookup("orders", order, "quantity")])]


def fx_rate(base: str, quote: str, day: str, day_before: str) -> Wrong:
    """Wrong rates: the inverse rate, the previous day's rate."""
    return [("swapped_args", [step("exchange_rate", base=quote, quote=base, date=day)]),
            ("wrong_rate_date", [step("exchange_rate", base=base, quote=quote, date=day_before)])]


def unit_conversion(value: float, from_unit: str, to_unit: str, confusable: str, other_to: str) -> Wrong:
    """Wrong conversions: a confusable source unit (miles for nautical miles), another target unit of the same
    dimension, the conversion the other way round."""
    return [("wrong_from_unit", [step("convert_units", value=value, from_unit=confusable, to_unit=to_unit)]),
            ("wrong_unit", [step("convert_units", value=value, from_unit=from_unit, to_unit=other_to)]),
            ("swapped_args", [step("convert_units", value=value, from_unit=to_unit, to_unit=from_unit)])]


def unit_weight(plan: Plan, unit: str, target: str, third: str, neighbour: str, neighbour_unit: str) -> Wrong:
    """Wrong unit weights: no conversion, the wrong source unit, another target unit, the next product's weight,
    a misspelt unit."""
    other = "lb" if unit != "lb" else "kg"
    return [
        ("missing_step", [plan[0]]),
        ("wrong_from_unit", [plan[0], step("convert_units", value="$1", from_unit=other, to_unit=target)]),
        ("wrong_unit", [plan[0], step("convert_units", value="$1", from_unit=unit, to_unit=third)]),
        ("wrong_key", [lookup("products", neighbour, "unit_weight"),
                       step("convert_units", value="$1", from_unit=neighbour_unit, to_unit=target)]),
        ("bad_unit_name", [plan[0], step("convert_units", value="$1", from_unit=unit, to_unit=target + "s")]),
    ]


def route_distance(plan: Plan, unit: str, target: str, neighbour: str, neighbour_unit: str) -> Wrong:
    """Wrong road distances: no conversion, nautical miles for miles, the next route's distance."""
    return [
        ("missing_step", [plan[0]]),
        ("wrong_unit", [plan[0], step("convert_units", value="$1", from_unit=unit, to_unit="nmi")]),
        ("wrong_key", [lookup("routes", neighbour, "distance"),
                       step("convert_units", value="$1", from_unit=neighbour_unit, to_unit=target)]),
    ]


def delivery_days(plan: Plan, neighbour: str) -> Wrong:
    """Wrong delivery times: the dates swapped, one day too many, the next order's dates."""
    return [
        ("swapped_args", [plan[0], plan[1], step("date_diff", start="$2", end="$1")]),
        ("off_by_one", [*plan, step("calculate", expression="$3 + 1[day]")]),
        ("wrong_key", [lookup("orders", neighbour, "order_date"), lookup("orders", neighbour, "delivery_date"),
                       plan[2]]),
    ]


def order_fx(plan: Plan, order: str, cur: str, target: str, month_start: str) -> Wrong:
    """Wrong conversions of an order amount: the delivery date's or the month start's rate, the inverse rate,
    no multiplication, a division."""
    return [
        ("wrong_rate_date", [plan[0], lookup("orders", order, "delivery_date"), *plan[2:]]),
        ("wrong_rate_date", [*plan[:2], step("exchange_rate", base=cur, quote=target, date=month_start), plan[3]]),
        ("swapped_args", [*plan[:2], step("exchange_rate", base=target, quote=cur, date="$2"), plan[3]]),
        ("missing_step", [plan[0], plan[1], step("exchange_rate", base=cur, quote=target, date="$2")]),
        ("wrong_operator", [*plan[:3], step("calculate", expression="$1 / $3")]),
    ]


def shipment_weight(rng: np.random.Generator, plan: Plan, unit: str, target: str, qty: int) -> Wrong:
    """Wrong shipping weights: one unit's weight, a miscounted quantity, the wrong source unit, another target
    unit (drawn from ``rng``), a misspelt unit."""
    other = "lb" if unit != "lb" else "kg"
    third = pick(rng, [u for u in WEIGHT_UNITS if u not in (unit, target)])
    return [
        ("missing_step", [plan[0], plan[1], step("convert_units", value="$2", from_unit=unit, to_unit=target)]),
        ("calc_slip", [plan[0], plan[1], plan[2], step("calculate", expression=f"$2 * {qty + 1}"), plan[4]]),
        ("wrong_from_unit", [*plan[:4], step("convert_units", value="$4", from_unit=other, to_unit=target)]),
        ("wrong_unit", [*plan[:4], step("convert_units", value="$4", from_unit=unit, to_unit=third)]),
        ("bad_unit_name", [*plan[:4], step("convert_units", value="$4", from_unit=unit, to_unit=target + "s")]),
    ]


def contract_end(plan: Plan, contract: str, term_unit: str) -> Wrong:
    """Wrong end dates: counted from the signing date, weeks taken for days, swapped arguments, a slip in
    the conversion (terms in weeks) or one day short (terms in days)."""
    if term_unit == "week":
        return [
            ("wrong_field", [lookup("contracts", contract, "signed"), *plan[1:]]),
            ("missing_step", [plan[0], plan[1], step("date_add", date="$1", days="$2")]),
            ("swapped_args", [*plan[:3], step("date_add", date="$3", days="$1")]),
            ("calc_slip", [*plan[:2], step("calculate", expression="$2 * 5"), plan[3]]),
        ]
    return [
        ("wrong_field", [lookup("contracts", contract, "signed"), *plan[1:]]),
        ("swapped_args", [*plan[:2], step("date_add", date="$2", days="$1")]),
        ("off_by_one", [*plan[:2], step("calculate", expression="$2 - 1[day]"),
                        step("date_add", date="$1", days="$3")]),
    ]


def route_speed(plan: Plan, route: str, target: str, speed: str, misread: str) -> Wrong:
    """Wrong speeds: the scheduled duration, time over distance, no conversion, a misread source unit, a unit
    name the converter does not know."""
    return [
        ("wrong_field", [plan[0], lookup("routes", route, "scheduled_duration"), *plan[2:]]),
        ("swapped_args", [plan[0], plan[1], step("calculate", expression="$2 / $1"), plan[3]]),
        ("missing_step", plan[:3]),
        ("wrong_from_unit", [*plan[:3], step("convert_units", value="$3", from_unit=misread, to_unit=target)]),
        ("bad_unit_name", [*plan[:3], step("convert_units", value="$3", from_unit=speed, to_unit="mph")]),
    ]


def stay_cost(plan: Plan, booking: str) -> Wrong:
    """Wrong room charges: swapped dates, one night too many, counted from the booking date, no
    multiplication, a sum."""
    return [
        ("swapped_args", [plan[0], plan[1], step("date_diff", start="$2", end="$1"), *plan[3:]]),
        ("off_by_one", [*plan[:4], step("calculate", expression="($3 + 1[day]) * $4")]),
        ("wrong_field", [lookup("bookings", booking, "booked_on"), *plan[1:]]),
        ("missing_step", [plan[0], plan[1], step("date_diff", start="$1", end="$2")]),
        ("wrong_operator", [*plan[:4], step("calculate", expression="$3 + $4")]),
    ]


def invoice_issued(invoice: str, neighbour: str) -> Wrong:
    """Wrong issue dates: the day the invoice was received, the next invoice's issue date."""
    return [("wrong_field", [lookup("invoices", invoice, "received")]),
            ("wrong_key", [lookup("invoices", neighbour, "issued")])]


def invoice_due(plan: Plan, invoice: str, terms: int) -> Wrong:
    """Wrong due dates: counted from the receipt date, one day short, the issue date itself."""
    return [("wrong_field", [lookup("invoices", invoice, "received"), plan[1]]),
            ("calc_slip", [plan[0], step("date_add", date="$1", days=terms - 1)]),
            ("missing_step", [plan[0]])]


def invoice_fx_on_day(plan: Plan, cur: str, target: str, day_before: str) -> Wrong:
    """Wrong conversions of an invoice at a given day's rate: the inverse rate, the previous day's rate, no
    multiplication, a division."""
    return [("swapped_args", [plan[0], step("exchange_rate", base=target, quote=cur, date=plan[1]["args"]["date"]),
                              plan[2]]),
            ("wrong_rate_date", [plan[0], step("exchange_rate", base=cur, quote=target, date=day_before), plan[2]]),
            ("missing_step", plan[:2]),
            ("wrong_operator", [*plan[:2], step("calculate", expression="$1 / $2")])]


def price_per_weight_local(plan: Plan, unit: str) -> Wrong:
    """Wrong unit prices in the supplier's currency: the weight unconverted, the ratio inverted, ounces for
    pounds."""
    return [("missing_step", [plan[0], plan[1], step("calculate", expression="$1 / $2")]),
            ("swapped_args", [*plan[:3], step("calculate", expression="$3 / $1")]),
            ("wrong_unit", [plan[0], plan[1], step("convert_units", value="$2", from_unit=unit, to_unit="oz"),
                            plan[3]])]


def invoice_due_fx(plan: Plan, invoice: str, cur: str, target: str, terms: int) -> Wrong:
    """Wrong settlements: the issue date's rate, counted from the receipt date, the inverse rate, one day
    short, no conversion."""
    return [
        ("wrong_rate_date", [plan[0], step("exchange_rate", base=cur, quote=target, date="$1"), plan[3],
                             step("calculate", expression="$3 * $2")]),
        ("wrong_field", [lookup("invoices", invoice, "received"), *plan[1:]]),
        ("swapped_args", [*plan[:2], step("exchange_rate", base=target, quote=cur, date="$2"), *plan[3:]]),
        ("calc_slip", [plan[0], step("date_add", date="$1", days=terms - 1), *plan[2:]]),
        ("missing_step", [plan[0], step("date_add", date="$1", days=terms), plan[3]]),
    ]


def price_per_weight(plan: Plan, unit: str, cur: str, target: str, day_before: str) -> Wrong:
    """Wrong unit prices: the weight unconverted, the ratio inverted, the previous day's rate, ounces for
    pounds."""
    return [
        ("missing_step", [plan[0], plan[1], plan[3], step("calculate", expression="$1 * $3 / $2")]),
        ("swapped_args", [*plan[:4], step("calculate", expression="$3 / ($1 * $4)")]),
        ("wrong_rate_date", [*plan[:3], step("exchange_rate", base=cur, quote=target, date=day_before), plan[4]]),
        ("wrong_unit", [plan[0], plan[1], step("convert_units", value="$2", from_unit=unit, to_unit="oz"),
                        *plan[3:]]),
    ]


def answer_slip(value: float | str, rng: np.random.Generator) -> float | str:
    """A transcription slip in the final number: transposed digits or a dropped/misplaced decimal (a date
    shifted by a day or a month).

    :param value: the right answer
    :param rng: the generator's random source
    """
    if isinstance(value, str):
        d = dt.date.fromisoformat(value)
        return (d + dt.timedelta(days=int(rng.choice([-1, 1, 30])))).isoformat()
    text = f"{value:.2f}"
    digits = [i for i, ch in enumerate(text) if ch.isdigit()]
    for a, b in itertools.pairwise(digits):
        if text[a] != text[b]:
            swapped = text[:a] + text[b] + text[a + 1:b] + text[a] + text[b + 1:]
            if abs(float(swapped) - value) > 0.05 * abs(value):
                return float(swapped)
    return round(value * 10, 2)
