"""Realistic wrong drafts for DB-Bench tasks: SQL mutants of the reference statement and perturbed answers.

Each operator makes one mistake that models make on DB-Bench: a wrong constant in the WHERE clause, the
wrong column, an off-by-one comparison (``>`` for ``>=``), a dropped condition, the wrong aggregate, the
wrong ORDER direction or LIMIT, a text column ordered without a numeric cast, a mistyped value, an
unquoted multi-word name or a guessed table name. Whether a mutant is actually wrong is decided by grading
it, never assumed: some mutants are equivalent to the reference on the given table.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from sqlglot import exp

from harness_gym.domains.dbbench.collation import fold_text
from harness_gym.domains.dbbench.engines import SQLError, TableSpec
from harness_gym.domains.dbbench.statements import parse_mysql

Mutant = tuple[str, str]
"""(operator name, MySQL statement)."""

_STRICT_SWAP: dict[type, type] = {exp.GT: exp.GTE, exp.GTE: exp.GT, exp.LT: exp.LTE, exp.LTE: exp.LT}
_AGG_SWAP: dict[type, type] = {exp.Sum: exp.Avg, exp.Avg: exp.Sum, exp.Max: exp.Min, exp.Min: exp.Max}
_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)


def _column_index(table: TableSpec, name: str) -> int | None:
    folded = name.lower()
    return next((i for i, c in enumerate(table.columns) if c.lower() == folded), None)


def other_value(table: TableSpec, col: int, value: str) -> str | None:
    """The next distinct value of column ``col`` after ``value`` (case/accent-folded), cyclically."""
    distinct: dict[str, str] = {}
    for row in table.rows:
        distinct.setdefault(fold_text(row[col]).strip(), row[col])
    keys = sorted(distinct)
    if len(keys) < 2:
        return None
    current = fold_text(value).strip()
    later = [k for k in keys if k > current]
    pick = later[0] if later else keys[0]
    if pick == current:
        pick = keys[1] if keys[0] == current else keys[0]
    return distinct[pick]


def _number_plus_one(text: str) -> str:
    value = float(text)
    return str(int(value) + 1) if value.is_integer() else repr(round(value + 1, 6))


def _comparison_literals(where: exp.Expression) -> Iterator[tuple[exp.Column, exp.Literal]]:
    for node in where.find_all(*_COMPARISONS):
        left, right = node.left, node.right
        if isinstance(left, exp.Column) and isinstance(right, exp.Literal):
            yield left, right
        elif isinstance(right, exp.Column) and isinstance(left, exp.Literal):
            yield right, left


def _where_constant(tree: exp.Expression, table: TableSpec) -> bool:
    where = tree.args.get("where")
    if where is None:
        return False
    for column, literal in _comparison_literals(where):
        if not literal.is_string:
            literal.replace(exp.Literal.number(_number_plus_one(literal.this)))
            return True
        idx = _column_index(table, column.name)
        alt = other_value(table, idx, literal.this) if idx is not None else None
        if alt is not None:
            literal.replace(exp.Literal.string(alt))
            return True
    return False


def _off_by_one(tree: exp.Expression, table: TableSpec) -> bool:
    for node in tree.find_all(*_STRICT_SWAP):
        node.replace(_STRICT_SWAP[type(node)](this=node.left.copy(), expression=node.right.copy()))
        return True
    return False


def _missing_condition(tree: exp.Expression, table: TableSpec) -> bool:
    where = tree.args.get("where")
    if where is None:
        return False
    conj = where.this
    if isinstance(conj, exp.And):
        conj.replace(conj.left.copy())
    else:
        where.pop()
    return True


def _wrong_column(tree: exp.Expression, table: TableSpec) -> bool:
    if len(table.columns) < 2:
        return False
    if isinstance(tree, exp.Update):
        targets = [e.left for e in tree.expressions if isinstance(e.left, exp.Column)]
    elif isinstance(tree, exp.Select):
        targets = [c for p in tree.expressions for c in p.find_all(exp.Column)]
    else:
        targets = []
    for column in targets:
        idx = _column_index(table, column.name)
        if idx is not None:
            other = table.columns[(idx + 1) % len(table.columns)]
            column.replace(exp.column(exp.to_identifier(other, quoted=True)))
            return True
    return False


def _wrong_aggregate(tree: exp.Expression, table: TableSpec) -> bool:
    for node in tree.find_all(*_AGG_SWAP):
        node.replace(_AGG_SWAP[type(node)](this=node.this.copy()))
        return True
    return False


def _order_direction(tree: exp.Expression, table: TableSpec) -> bool:
    for node in tree.find_all(exp.Ordered):
        node.set("desc", not node.args.get("desc"))
        return True
    return False


def _limit_plus_one(tree: exp.Expression, table: TableSpec) -> bool:
    limit = tree.args.get("limit")
    if isinstance(limit, exp.Limit) and isinstance(limit.expression, exp.Literal) and not limit.expression.is_string:
        limit.set("expression", exp.Literal.number(int(limit.expression.this) + 1))
        return True
    return False


def _drop_numeric_cast(tree: exp.Expression, table: TableSpec) -> bool:
    """``ORDER BY x + 0`` / ``MAX(CAST(x AS ...))`` -> compare the text column as text."""
    for node in tree.find_all(exp.Add, exp.Cast):
        inner = node.this
        if isinstance(node, exp.Add) and not (isinstance(node.expression, exp.Literal) and node.expression.this == "0"):
            continue
        if isinstance(inner, exp.Column):
            node.replace(inner.copy())
            return True
    return False


def _value_typo(tree: exp.Expression, table: TableSpec) -> bool:
    """A written value with the wrong case (a different row to the hash) or a dropped last character."""
    scope = tree.expression if isinstance(tree, exp.Insert) else None
    if isinstance(tree, exp.Update):
        literals = [e.right for e in tree.expressions if isinstance(e.right, exp.Literal)]
    elif scope is not None:
        literals = list(scope.find_all(exp.Literal))
    else:
        literals = []
    for literal in literals:
        if literal.is_string and len(literal.this) > 1:
            text = literal.this
            typo = text.lower() if text.lower() != text else text[:-1]
            literal.replace(exp.Literal.string(typo))
            return True
    return False


def _swap_values(tree: exp.Expression, table: TableSpec) -> bool:
    values = tree.expression if isinstance(tree, exp.Insert) else None
    if not isinstance(values, exp.Values) or not values.expressions:
        return False
    row = values.expressions[0]
    items = row.expressions
    for i in range(len(items) - 1):
        if items[i].sql() != items[i + 1].sql():
            a, b = items[i].copy(), items[i + 1].copy()
            items[i].replace(b)
            items[i + 1].replace(a)
            return True
    return False


_TREE_OPERATORS: tuple[tuple[str, Callable[[exp.Expression, TableSpec], bool]], ...] = (
    ("where_constant", _where_constant),
    ("off_by_one", _off_by_one),
    ("missing_condition", _missing_condition),
    ("wrong_column", _wrong_column),
    ("wrong_aggregate", _wrong_aggregate),
    ("order_direction", _order_direction),
    ("limit_plus_one", _limit_plus_one),
    ("text_order", _drop_numeric_cast),
    ("value_typo", _value_typo),
    ("swap_values", _swap_values),
)


def _text_mutants(sql: str, table: TableSpec) -> Iterator[Mutant]:
    """Mistakes in how the table is named: unquoted multi-word name, guessed snake_case name."""
    name = table.name
    for quoted in (f"`{name}`", f'"{name}"'):
        if quoted in sql and not name.replace("_", "").isalnum():
            yield "unquoted_name", sql.replace(quoted, name)
            break
    guess = "_".join("".join(ch if ch.isalnum() else " " for ch in name).split()).lower()
    if guess and guess != name.lower():
        for form in (f"`{name}`", f'"{name}"', name):
            if form in sql:
                yield "guessed_table_name", sql.replace(form, f"`{guess}`")
                break


def sql_mutants(sql: str, table: TableSpec) -> list[Mutant]:
    """Every applicable mutant of a reference statement, in operator order, without duplicates."""
    try:
        tree = parse_mysql(sql)
    except SQLError:
        return []
    out: list[Mutant] = []
    seen = {sql.strip()}
    for kind, op in _TREE_OPERATORS:
        mutant = tree.copy()
        if op(mutant, table):
            text = mutant.sql(dialect="mysql", copy=False)
            if text not in seen:
                seen.add(text)
                out.append((kind, text))
    for kind, text in _text_mutants(sql, table):
        if text not in seen:
            seen.add(text)
            out.append((kind, text))
    return out


def answer_mutants(label: tuple[str, ...], table: TableSpec) -> list[Mutant]:
    """Perturbed answers for a label: a neighbouring number, another value of the same column, a value not in
    the table, one value too few or too many, no value."""
    out: list[Mutant] = []
    first = label[0]
    try:
        float(first.replace(",", "").rstrip("%"))
        numeric = True
    except ValueError:
        numeric = False
    if numeric:
        base = first.replace(",", "").rstrip("%")
        out.append(("number_plus_one", str([_number_plus_one(base), *label[1:]])))
        out.append(("number_times_ten", str([_number_plus_one(str(float(base) * 10 - 1)), *label[1:]])))
    located = [(j, row[j]) for row in table.rows for j in range(len(table.columns)) if fold_text(row[j]) == fold_text(first)]
    if located:
        col, value = located[0]
        alt = other_value(table, col, value)
        if alt is not None and fold_text(alt) != fold_text(first):
            out.append(("same_column_value", str([alt, *label[1:]])))
            if len(label) == 1:
                out.append(("extra_value", str([first, alt])))
    if not numeric:
        out.append(("not_in_table", str([first[::-1].title(), *label[1:]])))
    if len(label) > 1:
        out.append(("missing_value", str(list(label[:-1]))))
    out.append(("no_answer", "[]"))
    seen: set[str] = {str(list(label))}
    unique = []
    for kind, text in out:
        if text not in seen:
            seen.add(text)
            unique.append((kind, text))
    return unique
