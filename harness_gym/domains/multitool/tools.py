"""The multi-tool domain's tools: typed values with units, the calculator, the world's tables and the tool table.

Six pure-Python tools work on typed values (a number with a unit, a date, or a text):

- ``calculate(expression)``: arithmetic with unit algebra, evaluated over a whitelisted syntax tree (never
  ``eval``); ``$n`` refers to the result of plan step n and ``12.5[EUR/day]`` is a literal with a unit;
- ``convert_units(value, from_unit, to_unit)``: length, mass, volume, time, speed and temperature;
- ``date_add(date, days)`` and ``date_diff(start, end)``: calendar arithmetic on ISO dates;
- ``exchange_rate(base, quote, date)``: the dated rate table (units of ``quote`` per one ``base``);
- ``lookup(table, key, field)``: a cell of one of the world's tables.

A *plan* is a list of calls whose arguments may be ``"$n"`` references to earlier results; the checker's
:func:`~harness_gym.domains.multitool.checker.run_plan` re-executes it.

What one call costs in a deployment (``bills``): ``exchange_rate`` stands for a paid currency-rate API
(``api_call:fx_rates``), ``lookup`` for the operator's own tables service behind an API gateway
(``api_call:internal``); ``calculate``, ``convert_units``, ``date_add`` and ``date_diff`` run locally and are free
(``api_call:free``).
"""

from __future__ import annotations

import ast
import datetime as dt
import math
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness_gym.core.intake import InputLimitError, parse_expression
from harness_gym.core.tool_calls import ToolSpec
from harness_gym.domains.tool_table import ToolError, ToolTable, object_schema

Unit = tuple[tuple[str, int], ...]
"""A unit as sorted (atom, exponent) pairs; ``()`` is a plain number."""
DATE: Unit = (("date", 1),)
TEXT: Unit = (("text", 1),)


# ----- units -----------------------------------------------------------------------------------------
def make_unit(counts: Mapping[str, int]) -> Unit:
    return tuple(sorted((a, e) for a, e in counts.items() if e))


def parse_unit(text: str) -> Unit:
    """``"EUR/day"`` -> ``(("EUR", 1), ("day", -1))``; ``"kg*m/s^2"`` and ``"a/(b*c)"`` are understood."""
    counts: Counter[str] = Counter()
    text = text.strip()
    if not text:
        return ()
    for i, part in enumerate(text.split("/")):
        sign = 1 if i == 0 else -1
        for atom in part.strip().strip("()").split("*"):
            name, _, power = atom.strip().partition("^")
            if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", name) or (power and not re.fullmatch(r"-?\d{1,3}", power)):
                raise ToolError(f"cannot read unit {text!r}")
            counts[name] += sign * (int(power) if power else 1)
    return make_unit(counts)


def format_unit(unit: Unit) -> str:
    """The canonical spelling of a unit: ``EUR/day``, ``km/h``, ``USD^2/EUR``; ``""`` for a plain number."""
    def atoms(pairs: list[tuple[str, int]]) -> str:
        return "*".join(a if e == 1 else f"{a}^{e}" for a, e in pairs)

    num = [(a, e) for a, e in unit if e > 0]
    den = [(a, -e) for a, e in unit if e < 0]
    if not den:
        return atoms(num)
    den_text = atoms(den) if len(den) == 1 else f"({atoms(den)})"
    return f"{atoms(num) or '1'}/{den_text}"


@dataclass(frozen=True)
class UnitDef:
    dimension: str
    factor: float
    """Size of one unit in the dimension's base unit."""
    offset: float = 0.0
    """Added after scaling (temperatures: base is kelvin)."""


UNITS: dict[str, UnitDef] = {
    **{u: UnitDef("length", f) for u, f in {"m": 1.0, "km": 1000.0, "cm": 0.01, "mm": 0.001, "mi": 1609.344,
                                            "ft": 0.3048, "in": 0.0254, "yd": 0.9144, "nmi": 1852.0}.items()},
    **{u: UnitDef("mass", f) for u, f in {"kg": 1.0, "g": 0.001, "t": 1000.0, "lb": 0.45359237,
                                          "oz": 0.028349523125}.items()},
    **{u: UnitDef("volume", f) for u, f in {"l": 1.0, "ml": 0.001, "m^3": 1000.0, "gal": 3.785411784,
                                            "qt": 0.946352946, "floz": 0.0295735295625}.items()},
    **{u: UnitDef("time", f) for u, f in {"s": 1.0, "min": 60.0, "h": 3600.0, "day": 86400.0,
                                          "week": 604800.0}.items()},
    **{u: UnitDef("speed", f) for u, f in {"m/s": 1.0, "km/h": 1 / 3.6, "mi/h": 0.44704, "km/min": 1000 / 60,
                                           "mi/min": 1609.344 / 60, "kn": 1852 / 3600}.items()},
    "C": UnitDef("temperature", 1.0, 273.15),
    "K": UnitDef("temperature", 1.0),
    "F": UnitDef("temperature", 5 / 9, 273.15 - 32 * 5 / 9),
}


def unit_def(name: str) -> UnitDef:
    try:
        return UNITS[name]
    except KeyError:
        raise ToolError(f"unknown unit {name!r}; known units: {', '.join(UNITS)}") from None


def convert(value: float, from_unit: str, to_unit: str) -> float:
    src, dst = unit_def(from_unit), unit_def(to_unit)
    if src.dimension != dst.dimension:
        raise ToolError(f"cannot convert {src.dimension} ({from_unit}) to {dst.dimension} ({to_unit})")
    return (value * src.factor + src.offset - dst.offset) / dst.factor


# ----- typed values ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Value:
    """A tool result: a number with a unit, an ISO date (unit :data:`DATE`) or a text (unit :data:`TEXT`)."""

    value: float | str
    unit: Unit = ()

    @property
    def is_number(self) -> bool:
        return self.unit not in (DATE, TEXT)

    def as_json(self) -> float | str:
        return self.value

    def render(self) -> str:
        if not self.is_number:
            return str(self.value)
        unit = format_unit(self.unit)
        return f"{self.value:.10g} {unit}".strip()


def answer_close(answer: Any, gold: float | str) -> bool:
    """Whether a final answer matches the gold value: the same ISO date, or a number within 0.1% (at least
    0.0051 absolute, so that the 2-decimal rounding the tasks ask for is accepted)."""
    if isinstance(gold, str):
        return isinstance(answer, str) and answer.strip() == gold
    if isinstance(answer, bool) or not isinstance(answer, (int, float)) or not math.isfinite(answer):
        return False
    return abs(float(answer) - gold) <= max(1e-3 * abs(gold), 0.0051)


# ----- calculator ------------------------------------------------------------------------------------
_REF = re.compile(r"\$(\d{1,3})(?!\d)")
_UNIT_LITERAL = re.compile(r"(\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)\s*\[([^\]]*)\]")
_MAX_MAGNITUDE = 1e15
_MAX_DIGITS = 15
"""``log10`` of :data:`_MAX_MAGNITUDE`."""
_NAME = re.compile(r"(ref|lit)_(\d{1,3})")
_RESERVED_NAME = re.compile(r"\b(?:ref|lit)_")


def _q(value: float, unit: Unit) -> Value:
    if not math.isfinite(value) or abs(value) > _MAX_MAGNITUDE:
        raise ToolError("result out of range")
    return Value(value, unit)


def _combine(a: Unit, b: Unit, sign: int) -> Unit:
    counts: Counter[str] = Counter(dict(a))
    for atom, exp in b:
        counts[atom] += sign * exp
    return make_unit(counts)


class _Calculator:
    """Evaluates a parsed expression over :class:`Value` with unit algebra; rejects every other node."""

    def __init__(self, refs: Sequence[Value | None], literals: Sequence[Value]) -> None:
        self.refs, self.literals = refs, literals

    def eval(self, node: ast.AST) -> Value:
        method: Callable[[Any], Value] | None = getattr(self, "_" + type(node).__name__, None)
        if method is None:
            raise ToolError(f"unsupported syntax: {type(node).__name__}")
        return method(node)

    def _Constant(self, node: ast.Constant) -> Value:
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
            raise ToolError(f"unsupported constant {str(node.value)[:40]!r}")
        return _q(float(node.value), ())

    def _Name(self, node: ast.Name) -> Value:
        match = _NAME.fullmatch(node.id)
        kind, n = (match.group(1), int(match.group(2))) if match else ("", 0)
        if kind == "ref":
            if not 1 <= n <= len(self.refs) or self.refs[n - 1] is None:
                raise ToolError(f"${n} does not name an earlier step")
            value = self.refs[n - 1]
            assert value is not None
            if not value.is_number:
                raise ToolError(f"${n} is a {'date' if value.unit == DATE else 'text'} ({value.value}), not a number")
            return value
        if kind == "lit" and n < len(self.literals):
            return self.literals[n]
        raise ToolError(f"unknown name {node.id[:40]!r}")

    def _UnaryOp(self, node: ast.UnaryOp) -> Value:
        v = self.eval(node.operand)
        if isinstance(node.op, ast.USub):
            return _q(-float(v.value), v.unit)
        if isinstance(node.op, ast.UAdd):
            return v
        raise ToolError(f"unsupported operator {type(node.op).__name__}")

    def _BinOp(self, node: ast.BinOp) -> Value:
        a, b = self.eval(node.left), self.eval(node.right)
        x, y = float(a.value), float(b.value)
        op = node.op
        if isinstance(op, (ast.Add, ast.Sub)):
            if a.unit != b.unit:
                raise ToolError(f"cannot add or subtract {format_unit(a.unit) or 'a plain number'} and "
                                f"{format_unit(b.unit) or 'a plain number'}")
            return _q(x + y if isinstance(op, ast.Add) else x - y, a.unit)
        if isinstance(op, ast.Mult):
            return _q(x * y, _combine(a.unit, b.unit, 1))
        if isinstance(op, ast.Div):
            if y == 0:
                raise ToolError("division by zero")
            return _q(x / y, _combine(a.unit, b.unit, -1))
        if isinstance(op, ast.Pow):
            if b.unit or y != int(y) or abs(y) > 6:
                raise ToolError("exponents must be plain integers between -6 and 6")
            if x == 0 and y < 0:
                raise ToolError("division by zero")
            if x != 0 and y * math.log10(abs(x)) > _MAX_DIGITS + 1:  # refused before it can overflow
                raise ToolError("result out of range")
            return _q(x ** int(y), tuple((atom, e * int(y)) for atom, e in a.unit))
        raise ToolError(f"unsupported operator {type(op).__name__}")

    def _Call(self, node: ast.Call) -> Value:
        name = node.func.id if isinstance(node.func, ast.Name) else ""
        if node.keywords or name not in ("round", "abs", "min", "max"):
            raise ToolError(f"unsupported function {name or '?'}; allowed: round, abs, min, max")
        args = [self.eval(a) for a in node.args]
        if name == "abs" and len(args) == 1:
            return _q(abs(float(args[0].value)), args[0].unit)
        if name == "round" and len(args) in (1, 2):
            digits = 0
            if len(args) == 2:
                if args[1].unit or float(args[1].value) != int(float(args[1].value)):
                    raise ToolError("round(x, n) needs a plain integer n")
                digits = int(float(args[1].value))
            return _q(round(float(args[0].value), digits), args[0].unit)
        if name in ("min", "max") and args:
            if len({a.unit for a in args}) != 1:
                raise ToolError(f"{name} of values with different units")
            pick = min if name == "min" else max
            return _q(pick(float(a.value) for a in args), args[0].unit)
        raise ToolError(f"wrong number of arguments to {name}")


def calculate(expression: str, refs: Sequence[Value | None] = ()) -> Value:
    """Evaluate ``expression``; ``$n`` is ``refs[n-1]`` (``None`` entries are steps that are not available)."""
    if len(expression) > 300:
        raise ToolError("expression longer than 300 characters")
    if _RESERVED_NAME.search(expression):
        raise ToolError("names are not allowed in expressions; write $n for the result of step n")
    literals: list[Value] = []

    def literal(m: re.Match[str]) -> str:
        literals.append(_q(float(m.group(1)), parse_unit(m.group(2))))
        return f" lit_{len(literals) - 1} "

    text = _UNIT_LITERAL.sub(literal, expression)
    text = _REF.sub(lambda m: f" ref_{int(m.group(1))} ", text)
    if "$" in text or "[" in text:
        raise ToolError("a '$' must be followed by a step number and '[unit]' must follow a number")
    try:
        tree = parse_expression(text, max_bits=1000)  # nested at most MAX_NESTING deep, every integer a float
    except SyntaxError as exc:
        raise ToolError(f"cannot parse expression: {exc.msg}") from None
    except InputLimitError as exc:
        raise ToolError(f"cannot parse expression: {exc}") from None
    return _Calculator(refs, literals).eval(tree)


def _finite(value: float, name: str) -> float:
    """``value`` as a finite float; :class:`ToolError` for an infinite, NaN or too large one."""
    try:
        number = float(value)
    except OverflowError:
        raise ToolError(f"{name} out of range") from None
    if not math.isfinite(number):
        raise ToolError(f"{name} out of range")
    return number


# ----- dates -----------------------------------------------------------------------------------------
def parse_date(text: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text)
    except ValueError as exc:
        raise ToolError(f"bad date {text!r}: {exc}") from None


def date_add(date: str, days: float) -> Value:
    try:
        return Value((parse_date(date) + dt.timedelta(days=int(days))).isoformat(), DATE)
    except (OverflowError, ValueError):  # past the calendar, or days infinite or NaN
        raise ToolError(f"date out of range: {date} + {days} days") from None


def date_diff(start: str, end: str) -> Value:
    return Value(float((parse_date(end) - parse_date(start)).days), (("day", 1),))


# ----- the world: rates and tables -------------------------------------------------------------------
class World:
    """The rate table and the lookup tables the tools read.

    :param rates: ``{"start": ISO date, "per_usd": {currency: [units of currency per USD, one per day]}}``
    :param tables: ``{table: {"key": column, "columns": {name: {"type", "doc"}}, "rows": {key: {col: cell}}}}``;
        a quantity cell is ``[number, unit]``, a date or text cell a string
    """

    def __init__(self, rates: Mapping[str, Any], tables: Mapping[str, Any]) -> None:
        self.start = dt.date.fromisoformat(rates["start"])
        self.per_usd: dict[str, list[float]] = {c: list(v) for c, v in rates["per_usd"].items()}
        self.days = len(next(iter(self.per_usd.values())))
        self.end = self.start + dt.timedelta(days=self.days - 1)
        self.tables = tables

    def exchange_rate(self, base: str, quote: str, date: str) -> Value:
        for code in (base, quote):
            if code not in self.per_usd:
                raise ToolError(f"unknown currency {code!r}; known: {', '.join(sorted(self.per_usd))}")
        day = parse_date(date)
        i = (day - self.start).days
        if not 0 <= i < self.days:
            raise ToolError(f"no rate for {date}: the table covers {self.start} to {self.end}")
        rate = round(self.per_usd[quote][i] / self.per_usd[base][i], 6)
        return Value(rate, make_unit({quote: 1, base: -1}))

    def lookup(self, table: str, key: str, field: str) -> Value:
        tab = self.tables.get(table)
        if tab is None:
            raise ToolError(f"unknown table {table!r}; tables: {', '.join(sorted(self.tables))}")
        row = tab["rows"].get(key)
        if row is None:
            raise ToolError(f"no row {key!r} in table {table}")
        if field not in tab["columns"]:
            raise ToolError(f"table {table} has no column {field!r}; columns: {', '.join(tab['columns'])}")
        cell = row.get(field)
        if cell is None:
            raise ToolError(f"{table}[{key}].{field} is empty")
        kind = tab["columns"][field]["type"]
        if kind == "quantity":
            return Value(float(cell[0]), parse_unit(cell[1]))
        return Value(cell, DATE if kind == "date" else TEXT)


# ----- tools ------------------------------------------------------------------------------------------
_DATE_SCHEMA = {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"}
_CODE_SCHEMA = {"type": "string", "pattern": r"^[A-Z]{3}$"}
_NAME_SCHEMA = {"type": "string", "minLength": 1, "maxLength": 40}

LOCAL_CALL = {"api_call:free": 1}
"""Arithmetic, unit and date conversion done in the harness's own process: free."""
TABLES_SERVICE_CALL = {"api_call:internal": 1}
"""One request to the operator's tables service (orders, products, contracts ...) behind an API gateway."""
FX_API_CALL = {"api_call:fx_rates": 1}
"""One request to a paid currency exchange-rate API."""

TOOLS = ToolTable(render=Value.render)
"""The multi-tool tools. Each takes the :class:`World`, the values of earlier plan steps (``refs``) and the units
of the arguments that came from ``$n`` references (``units``) before its call arguments, returns a :class:`Value`
(the output of a TOOL step is its :meth:`Value.render`) and refuses with :class:`ToolError` (unknown unit, bad
date, no such row, unit mismatch)."""


@TOOLS.tool("Arithmetic on numbers with units: + - * / ** round abs min max. Inside a plan $n is the result of "
            "step n; 12.5[EUR/day] is a number with a unit.",
            object_schema({"expression": {"type": "string", "minLength": 1, "maxLength": 300}}), name="calculate",
            bills=LOCAL_CALL)
def _calculate_tool(world: World, refs: Sequence[Value | None], units: Mapping[str, Unit], expression: str) -> Value:
    """The calculator; runs locally (free)."""
    return calculate(expression, refs)


@TOOLS.tool("Convert a value between units of the same dimension (length, mass, volume, time, speed, "
            "temperature).",
            object_schema({"value": {"type": "number"}, "from_unit": _NAME_SCHEMA, "to_unit": _NAME_SCHEMA}),
            bills=LOCAL_CALL)
def convert_units(world: World, refs: Sequence[Value | None], units: Mapping[str, Unit], value: float,
                  from_unit: str, to_unit: str) -> Value:
    """Unit conversion; runs locally (free)."""
    got = units.get("value")
    if got is not None and got != parse_unit(from_unit):
        raise ToolError(f"value is in {format_unit(got) or 'no unit'} but from_unit is {from_unit!r}")
    converted = convert(_finite(value, "value"), from_unit, to_unit)
    if not math.isfinite(converted):
        raise ToolError("result out of range")
    return Value(converted, parse_unit(to_unit))


@TOOLS.tool("The ISO date `days` days after `date` (negative days go back).",
            object_schema({"date": _DATE_SCHEMA, "days": {"type": "integer", "minimum": -36500, "maximum": 36500}}),
            name="date_add", bills=LOCAL_CALL)
def _date_add_tool(world: World, refs: Sequence[Value | None], units: Mapping[str, Unit], date: str,
                   days: int) -> Value:
    """Calendar arithmetic; runs locally (free)."""
    got = units.get("days")
    if got is not None and got not in ((), (("day", 1),)):
        raise ToolError(f"days is in {format_unit(got)}, not day; convert it first")
    return date_add(date, days)


@TOOLS.tool("Days from `start` to `end` (negative when end is earlier).",
            object_schema({"start": _DATE_SCHEMA, "end": _DATE_SCHEMA}), name="date_diff", bills=LOCAL_CALL)
def _date_diff_tool(world: World, refs: Sequence[Value | None], units: Mapping[str, Unit], start: str,
                    end: str) -> Value:
    """Calendar arithmetic; runs locally (free)."""
    return date_diff(start, end)


@TOOLS.tool("Units of `quote` currency per one unit of `base` currency on `date`.",
            object_schema({"base": _CODE_SCHEMA, "quote": _CODE_SCHEMA, "date": _DATE_SCHEMA}), bills=FX_API_CALL)
def exchange_rate(world: World, refs: Sequence[Value | None], units: Mapping[str, Unit], base: str, quote: str,
                  date: str) -> Value:
    """A dated rate; stands for a paid currency exchange-rate API (one ``api_call:fx_rates`` per request)."""
    return world.exchange_rate(base, quote, date)


@TOOLS.tool("One cell of a table: the `field` column of the row whose key is `key`.",
            object_schema({"table": _NAME_SCHEMA, "key": _NAME_SCHEMA, "field": _NAME_SCHEMA}),
            bills=TABLES_SERVICE_CALL)
def lookup(world: World, refs: Sequence[Value | None], units: Mapping[str, Unit], table: str, key: str,
           field: str) -> Value:
    """One table cell; stands for the operator's tables service behind an API gateway (``api_call:internal``)."""
    return world.lookup(table, key, field)


TOOL_SPECS: dict[str, ToolSpec] = TOOLS.specs


def execute(world: World, name: str, args: Mapping[str, Any], refs: Sequence[Value | None] = (),
            arg_units: Mapping[str, Unit] | None = None) -> Value:
    """Run one schema-valid call of a plan, for its typed value (TOOL runs a call through ``TOOLS.call``, which
    turns the :class:`ToolError` this raises into an error result). ``arg_units`` gives the units of arguments that came from ``$n`` references,
    so that a step that claims a value is in ``lb`` while the referenced value is in ``kg`` is refused.

    :param world: the rate and lookup tables
    :param name: the tool's name
    :param args: the call's arguments
    :param refs: the values of the earlier plan steps
    :param arg_units: argument name -> unit of the referenced value it came from
    """
    if name not in TOOLS:
        raise ToolError(f"unknown tool {name!r}")
    try:
        return TOOLS.implementation(name)(world, refs, arg_units or {}, **args)
    except ArithmeticError as exc:  # every operand is bounded before use; this keeps any other case a ToolError
        raise ToolError(f"arithmetic error: {type(exc).__name__}: {exc}") from None
