"""An AST mutation engine: realistic wrong versions of a reference solution.

Each operator finds the sites where it applies and rewrites one site per mutant; the mutant is the
``ast.unparse`` of the rewritten tree. Operators model the slips a code model makes:

- ``comparison_flip``: ``<`` / ``<=``, ``>`` / ``>=``, ``==`` / ``!=``, ``in`` / ``not in``, ``is`` / ``is not``
- ``off_by_one``: an integer constant +-1, a ``range()`` bound or a slice bound +-1
- ``arithmetic_swap``: ``+`` / ``-``, ``*`` -> ``+``, ``/`` / ``//``, ``%`` -> ``//``, ``**`` -> ``*``, a
  dropped unary minus
- ``boolean_swap``: ``and`` / ``or``, a dropped ``not``, ``True`` / ``False``
- ``dropped_branch``: an ``if`` without ``else`` removed, an ``if``'s body removed (its ``else`` kept), an
  ``else`` removed
- ``wrong_constant``: a string constant changed (empty -> space, one character -> the next, else shortened)
- ``wrong_return``: a returned variable replaced by another local, a returned expression by the first argument
- ``swapped_arguments``: the first two positional arguments of a call, or the operands of ``-``, ``/``,
  ``//``, ``%``, ``**``
- ``dropped_call``: a forgotten normalisation: ``abs(x)``, ``sorted(x)``, ``reversed(x)``, ``set(x)``,
  ``round(x)``, ``int(x)``, ``str(x)`` become ``x``; ``s.lower()``, ``s.strip()`` and the like become ``s``
- ``api_swap``: a look-alike builtin or method (``min``/``max``, ``any``/``all``, ``lstrip``/``rstrip``,
  ``startswith``/``endswith``, ``isalpha``/``isalnum``, ``upper``/``lower``), ``reverse=`` negated

Whether a mutant is actually wrong is decided by running it, never assumed here.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable, Iterator
from dataclasses import dataclass

Rewrite = Callable[[ast.AST], None]
"""Applies one mutation in place to the node it was planned on (in a copy of the tree)."""


@dataclass(frozen=True)
class Mutant:
    """A mutated program: its source, the operator that made it and a note on what changed."""

    source: str
    operator: str
    line: int
    description: str


_CMP_FLIP: dict[type, type] = {
    ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq,
    ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is,
}
_ARITH_SWAP: dict[type, type] = {
    ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Add, ast.Div: ast.FloorDiv, ast.FloorDiv: ast.Div,
    ast.Mod: ast.FloorDiv, ast.Pow: ast.Mult,
}
_NON_COMMUTATIVE = (ast.Sub, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)
_LOOKALIKES: dict[str, str] = {
    "min": "max", "max": "min", "any": "all", "all": "any", "lstrip": "rstrip", "rstrip": "lstrip",
    "startswith": "endswith", "endswith": "startswith", "isalpha": "isalnum", "isalnum": "isalpha",
    "upper": "lower", "lower": "upper",
}


_DROPPABLE_FUNCS = frozenset({"abs", "sorted", "reversed", "set", "round", "int", "float", "str"})
_DROPPABLE_METHODS = frozenset({"lower", "upper", "strip", "lstrip", "rstrip", "capitalize", "casefold"})


def _slots(node: ast.AST) -> Iterator[tuple[str, int | None, ast.AST]]:
    """Each child expression of ``node`` with where it sits: (field, list index or None, child)."""
    for field, value in ast.iter_fields(node):
        if isinstance(value, ast.AST):
            yield field, None, value
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, ast.AST):
                    yield field, i, item


def _replace_child(field: str, index: int | None, make: Callable[[ast.AST], ast.AST]) -> Rewrite:
    """A rewrite that replaces the child at (field, index) by ``make(child)``."""
    def rewrite(node: ast.AST) -> None:
        if index is None:
            setattr(node, field, make(getattr(node, field)))
        else:
            getattr(node, field)[index] = make(getattr(node, field)[index])
    return rewrite


def _set_attr(field: str, value: object) -> Rewrite:
    def rewrite(node: ast.AST) -> None:
        setattr(node, field, copy.deepcopy(value))
    return rewrite


def _comparison_flip(node: ast.AST) -> Iterator[tuple[str, Rewrite]]:
    if isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            new = _CMP_FLIP.get(type(op))
            if new is not None:
                def rewrite(n: ast.AST, i: int = i, new: type = new) -> None:
                    n.ops[i] = new()  # type: ignore[attr-defined]
                yield f"{type(op).__name__} -> {new.__name__}", rewrite


def _plus(expr: ast.expr, delta: int) -> ast.expr:
    op = ast.Add() if delta > 0 else ast.Sub()
    return ast.BinOp(left=copy.deepcopy(expr), op=op, right=ast.Constant(abs(delta)))


def _off_by_one(node: ast.AST) -> Iterator[tuple[str, Rewrite]]:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        for delta in (1, -1):
            yield f"{node.value} -> {node.value + delta}", _set_attr("value", node.value + delta)
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range":
        for i, arg in enumerate(node.args[:2]):
            if isinstance(arg, ast.Constant):
                continue  # a constant bound is already covered by the constant rule
            for delta in (1, -1):
                def rewrite(n: ast.AST, i: int = i, delta: int = delta) -> None:
                    n.args[i] = _plus(n.args[i], delta)  # type: ignore[attr-defined]
                yield f"range bound {i} {delta:+d}", rewrite
    elif isinstance(node, ast.Slice):
        for field in ("lower", "upper"):
            bound = getattr(node, field)
            if bound is not None and not isinstance(bound, ast.Constant):
                for delta in (1, -1):
                    def rewrite(n: ast.AST, field: str = field, delta: int = delta) -> None:
                        setattr(n, field, _plus(getattr(n, field), delta))
                    yield f"slice {field} {delta:+d}", rewrite


def _arithmetic_swap(node: ast.AST) -> Iterator[tuple[str, Rewrite]]:
    if isinstance(node, (ast.BinOp, ast.AugAssign)):
        new = _ARITH_SWAP.get(type(node.op))
        if new is not None:
            yield f"{type(node.op).__name__} -> {new.__name__}", _set_attr("op", new())
    for field, index, child in _slots(node):
        negated = isinstance(child, ast.UnaryOp) and isinstance(child.op, ast.USub)
        if negated and not isinstance(child.operand, ast.Constant):
            yield f"dropped unary minus in {field}", _replace_child(field, index, lambda c: c.operand)


def _boolean_swap(node: ast.AST) -> Iterator[tuple[str, Rewrite]]:
    if isinstance(node, ast.BoolOp):
        new = ast.Or if isinstance(node.op, ast.And) else ast.And
        yield f"{type(node.op).__name__} -> {new.__name__}", _set_attr("op", new())
    elif isinstance(node, ast.Constant) and isinstance(node.value, bool):
        yield f"{node.value} -> {not node.value}", _set_attr("value", not node.value)
    for field, index, child in _slots(node):
        if isinstance(child, ast.UnaryOp) and isinstance(child.op, ast.Not):
            yield f"dropped not in {field}", _replace_child(field, index, lambda c: c.operand)


def _dropped_call(node: ast.AST) -> Iterator[tuple[str, Rewrite]]:
    for field, index, child in _slots(node):
        if not isinstance(child, ast.Call):
            continue
        func = child.func
        if isinstance(func, ast.Name) and func.id in _DROPPABLE_FUNCS and len(child.args) == 1:
            yield f"{func.id}() dropped", _replace_child(field, index, lambda c: c.args[0])
        elif isinstance(func, ast.Attribute) and func.attr in _DROPPABLE_METHODS and not child.args:
            yield f".{func.attr}() dropped", _replace_child(field, index, lambda c: c.func.value)


def _dropped_branch(node: ast.AST) -> Iterator[tuple[str, Rewrite]]:
    for field in ("body", "orelse"):
        stmts = getattr(node, field, None)
        if not isinstance(stmts, list):
            continue
        for j, stmt in enumerate(stmts):
            if not isinstance(stmt, ast.If):
                continue
            if stmt.orelse:
                def keep_else(n: ast.AST, field: str = field, j: int = j) -> None:
                    body = getattr(n, field)
                    body[j:j + 1] = body[j].orelse
                yield f"if body removed (line {stmt.lineno})", keep_else

                def drop_else(n: ast.AST, field: str = field, j: int = j) -> None:
                    getattr(n, field)[j].orelse = []
                yield f"else removed (line {stmt.lineno})", drop_else
            elif len(stmts) > 1:
                def drop_if(n: ast.AST, field: str = field, j: int = j) -> None:
                    del getattr(n, field)[j]
                yield f"if removed (line {stmt.lineno})", drop_if


def _changed_string(value: str) -> str:
    if value == "":
        return " "
    if len(value) == 1:
        return chr(ord(value) + 1)
    return value[:-1]


def _wrong_constant(node: ast.AST) -> Iterator[tuple[str, Rewrite]]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        new = _changed_string(node.value)
        yield f"{node.value!r} -> {new!r}", _set_attr("value", new)


def _locals(func: ast.FunctionDef) -> list[str]:
    """Argument and assigned names of a function, in first-appearance order."""
    names = [a.arg for a in func.args.args if a.arg != "self"]
    for node in ast.walk(func):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id not in names:
            names.append(node.id)
    return names


def _wrong_return(node: ast.AST) -> Iterator[tuple[str, Rewrite]]:
    if not isinstance(node, ast.FunctionDef):
        return
    names = _locals(node)
    own = [n for n in ast.walk(node) if isinstance(n, ast.Return) and n.value is not None]
    for ret in own:
        value = ret.value
        if isinstance(value, ast.Name):
            options = [n for n in names if n != value.id][:2]
        elif isinstance(value, ast.Constant):
            continue
        else:
            options = names[:1]
        for name in options:
            index = own.index(ret)

            def rewrite(n: ast.AST, index: int = index, name: str = name) -> None:
                rets = [r for r in ast.walk(n) if isinstance(r, ast.Return) and r.value is not None]
                rets[index].value = ast.Name(id=name, ctx=ast.Load())
            yield f"returns {name} (line {ret.lineno})", rewrite


def _swapped_arguments(node: ast.AST) -> Iterator[tuple[str, Rewrite]]:
    starred = isinstance(node, ast.Call) and any(isinstance(a, ast.Starred) for a in node.args[:2])
    if isinstance(node, ast.Call) and len(node.args) >= 2 and not starred:
        def swap_call(n: ast.AST) -> None:
            n.args[0], n.args[1] = n.args[1], n.args[0]  # type: ignore[attr-defined]
        yield "first two arguments swapped", swap_call
    elif isinstance(node, ast.BinOp) and isinstance(node.op, _NON_COMMUTATIVE):
        def swap_operands(n: ast.AST) -> None:
            n.left, n.right = n.right, n.left  # type: ignore[attr-defined]
        yield "operands swapped", swap_operands


def _api_swap(node: ast.AST) -> Iterator[tuple[str, Rewrite]]:
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Name) and func.id in _LOOKALIKES:
            new = _LOOKALIKES[func.id]

            def rename(n: ast.AST, new: str = new) -> None:
                n.func.id = new  # type: ignore[attr-defined]
            yield f"{func.id}() -> {new}()", rename
        elif isinstance(func, ast.Attribute) and func.attr in _LOOKALIKES:
            new = _LOOKALIKES[func.attr]

            def reattr(n: ast.AST, new: str = new) -> None:
                n.func.attr = new  # type: ignore[attr-defined]
            yield f".{func.attr}() -> .{new}()", reattr
    elif isinstance(node, ast.keyword) and node.arg == "reverse":
        yield "reverse= negated", _set_attr("value", ast.UnaryOp(op=ast.Not(), operand=node.value))


OPERATORS: dict[str, Callable[[ast.AST], Iterator[tuple[str, Rewrite]]]] = {
    "comparison_flip": _comparison_flip,
    "off_by_one": _off_by_one,
    "arithmetic_swap": _arithmetic_swap,
    "boolean_swap": _boolean_swap,
    "dropped_branch": _dropped_branch,
    "wrong_constant": _wrong_constant,
    "wrong_return": _wrong_return,
    "swapped_arguments": _swapped_arguments,
    "dropped_call": _dropped_call,
    "api_swap": _api_swap,
}


def _skip(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    """Sites that are not program logic: imports and docstrings."""
    parent = parents.get(node)
    while parent is not None:
        if isinstance(parent, (ast.Import, ast.ImportFrom)):
            return True
        parent = parents.get(parent)
    return isinstance(node, ast.Constant) and isinstance(parents.get(node), ast.Expr)


def mutants(source: str) -> list[Mutant]:
    """Every distinct single-site mutant of ``source`` (syntax-valid; behaviour unchecked), in a fixed order."""
    tree = ast.parse(source)
    nodes = list(ast.walk(tree))
    parents = {child: node for node in nodes for child in ast.iter_child_nodes(node)}
    seen = {ast.unparse(tree)}
    out: list[Mutant] = []
    for index, node in enumerate(nodes):
        if _skip(node, parents):
            continue
        for operator, find in OPERATORS.items():
            for description, rewrite in find(node):
                new_tree = copy.deepcopy(tree)
                rewrite(list(ast.walk(new_tree))[index])
                ast.fix_missing_locations(new_tree)
                try:
                    new_source = ast.unparse(new_tree)
                    compile(new_source, "<mutant>", "exec")
                except (SyntaxError, ValueError, TypeError):
                    continue
                if new_source not in seen:
                    seen.add(new_source)
                    out.append(Mutant(new_source, operator, getattr(node, "lineno", 0), description))
    return out
