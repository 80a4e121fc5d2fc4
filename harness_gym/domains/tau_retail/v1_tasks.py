"""Reading τ-bench v1 task lists (``tasks_train.py``, ``tasks_dev.py``, ``tasks_test.py``) without running them.

Upstream ships each split as a Python module: an import of ``Task`` and ``Action``, then one assignment of a
list of ``Task(user_id=..., instruction=..., actions=[Action(name=..., kwargs={...}), ...], outputs=[...])``
calls whose arguments are literals. This module parses the file with :mod:`ast` and reads only those
literals (:func:`ast.literal_eval` on each argument); nothing in the file is imported or executed. Anything
else (another statement, a positional argument, an unknown keyword, a computed value, a call other than
``Task`` / ``Action``) is refused with a :class:`~harness_gym.core.taskfile.TaskFileError` naming the file,
the line, the task and the field.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness_gym.core.taskfile import TaskFileError

TASK_FIELDS: frozenset[str] = frozenset({"user_id", "instruction", "actions", "outputs", "annotator"})
"""Keywords a ``Task(...)`` call may have (``annotator`` is read and ignored)."""
REQUIRED_TASK_FIELDS: tuple[str, ...] = ("user_id", "instruction", "actions")
ACTION_FIELDS: frozenset[str] = frozenset({"name", "kwargs"})
MAX_TASK_FILE_BYTES = 32 * 1024 * 1024
"""The largest task-list file read (upstream's largest, ``tasks_train.py``, has 472 KB)."""


@dataclass(frozen=True)
class V1Action:
    """One ``Action(name=..., kwargs=...)`` of a task, with the line it is on."""

    name: str
    kwargs: dict[str, Any]
    line: int


@dataclass(frozen=True)
class V1Task:
    """One ``Task(...)`` of a task list: its position in the list, its line and its literal fields."""

    index: int
    line: int
    user_id: str
    instruction: str
    actions: tuple[V1Action, ...]
    outputs: tuple[str, ...]


def _literal(node: ast.expr, path: Path, task_id: str, field: str) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise TaskFileError(path, f"not a literal value ({type(node).__name__} expression)", line=node.lineno,
                            task_id=task_id, field=field) from None


def _callee_text(func: ast.expr) -> str:
    """The source text of a call's callee, cut at 60 characters (``<expression>`` past the unparser's limits)."""
    try:
        return ast.unparse(func)[:60]
    except (RecursionError, MemoryError, ValueError):
        return "<expression>"


def _call_keywords(node: ast.expr, callee: str, allowed: frozenset[str], path: Path, task_id: str,
                   field: str) -> dict[str, ast.expr]:
    """The keyword arguments of a ``callee(...)`` call, refusing any other form."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == callee):
        found = _callee_text(node.func) + "(...)" if isinstance(node, ast.Call) else type(node).__name__
        raise TaskFileError(path, f"expected a {callee}(...) call, got {found}", line=node.lineno, task_id=task_id,
                            field=field)
    if node.args:
        raise TaskFileError(path, f"{callee}(...) takes keyword arguments only", line=node.lineno, task_id=task_id,
                            field=field)
    keywords: dict[str, ast.expr] = {}
    for kw in node.keywords:
        if kw.arg is None:
            raise TaskFileError(path, f"**-unpacking in {callee}(...) is not a literal", line=kw.value.lineno,
                                task_id=task_id, field=field)
        if kw.arg not in allowed:
            raise TaskFileError(path, f"unknown {callee} field; expected one of {', '.join(sorted(allowed))}",
                                line=kw.value.lineno, task_id=task_id, field=f"{field}.{kw.arg}")
        if kw.arg in keywords:
            raise TaskFileError(path, "given twice", line=kw.value.lineno, task_id=task_id, field=f"{field}.{kw.arg}")
        keywords[kw.arg] = kw.value
    return keywords


def _string(value: Any, node: ast.expr, path: Path, task_id: str, field: str) -> str:
    if not isinstance(value, str):
        raise TaskFileError(path, f"expected a string, got {type(value).__name__}", line=node.lineno,
                            task_id=task_id, field=field)
    return value


def _action(node: ast.expr, path: Path, task_id: str, field: str) -> V1Action:
    keywords = _call_keywords(node, "Action", ACTION_FIELDS, path, task_id, field)
    for name in ("name", "kwargs"):
        if name not in keywords:
            raise TaskFileError(path, "missing required field", line=node.lineno, task_id=task_id,
                                field=f"{field}.{name}")
    name = _string(_literal(keywords["name"], path, task_id, f"{field}.name"), keywords["name"], path, task_id,
                   f"{field}.name")
    kwargs = _literal(keywords["kwargs"], path, task_id, f"{field}.kwargs")
    if not isinstance(kwargs, dict) or not all(isinstance(k, str) for k in kwargs):
        raise TaskFileError(path, f"expected a dict with string keys, got {type(kwargs).__name__}",
                            line=keywords["kwargs"].lineno, task_id=task_id, field=f"{field}.kwargs")
    return V1Action(name=name, kwargs=kwargs, line=node.lineno)


def _task(node: ast.expr, index: int, path: Path, task_id: str) -> V1Task:
    keywords = _call_keywords(node, "Task", TASK_FIELDS, path, task_id, "Task")
    for name in REQUIRED_TASK_FIELDS:
        if name not in keywords:
            raise TaskFileError(path, "missing required field", line=node.lineno, task_id=task_id, field=name)
    user_id = _string(_literal(keywords["user_id"], path, task_id, "user_id"), keywords["user_id"], path, task_id,
                      "user_id")
    instruction = _string(_literal(keywords["instruction"], path, task_id, "instruction"), keywords["instruction"],
                          path, task_id, "instruction")
    actions_node = keywords["actions"]
    if not isinstance(actions_node, (ast.List, ast.Tuple)):
        raise TaskFileError(path, f"expected a list of Action(...) calls, got {type(actions_node).__name__}",
                            line=actions_node.lineno, task_id=task_id, field="actions")
    actions = tuple(_action(a, path, task_id, f"actions[{j}]") for j, a in enumerate(actions_node.elts))
    outputs: tuple[str, ...] = ()
    if "outputs" in keywords:
        raw = _literal(keywords["outputs"], path, task_id, "outputs")
        if not isinstance(raw, (list, tuple)) or not all(isinstance(o, str) for o in raw):
            raise TaskFileError(path, "expected a list of strings", line=keywords["outputs"].lineno, task_id=task_id,
                                field="outputs")
        outputs = tuple(raw)
    if "annotator" in keywords:
        _literal(keywords["annotator"], path, task_id, "annotator")
    return V1Task(index=index, line=node.lineno, user_id=user_id, instruction=instruction, actions=actions,
                  outputs=outputs)


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def read_v1_task_list(path: str | Path, id_prefix: str) -> list[V1Task]:
    """The tasks of one v1 task-list module, in file order.

    :param path: a ``tasks_<split>.py`` file
    :param id_prefix: prefix of the task ids used in error messages (``"<id_prefix>-<index>"``)
    :raises TaskFileError: for a file past :data:`MAX_TASK_FILE_BYTES`, bytes that are not UTF-8, a syntax error,
        the parser's limits (deep nesting, long operator chains), or anything that is not a literal ``Task(...)``
        list
    """
    path = Path(path)
    if not path.is_file():
        raise TaskFileError(path, "file not found")
    size = path.stat().st_size
    if size > MAX_TASK_FILE_BYTES:
        raise TaskFileError(path, f"the file has {size} bytes; at most {MAX_TASK_FILE_BYTES} are read")
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TaskFileError(path, f"not UTF-8 text ({exc.reason} at byte {exc.start})",
                            line=data.count(b"\n", 0, exc.start) + 1) from None
    try:
        tree = ast.parse(text, filename=str(path))
    except SyntaxError as exc:
        raise TaskFileError(path, f"not valid Python: {exc.msg}", line=exc.lineno) from None
    except (MemoryError, RecursionError, ValueError) as exc:  # the parser's own limits (nesting, NUL bytes)
        raise TaskFileError(path, f"not read: the Python parser gave up ({type(exc).__name__}: "
                            f"{str(exc)[:120] or 'nested too deeply'})") from None
    lists: list[ast.Assign | ast.AnnAssign] = []
    for stmt in tree.body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)) or _is_docstring(stmt):
            continue
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and isinstance(stmt.value, (ast.List, ast.Tuple)):
            lists.append(stmt)
            continue
        raise TaskFileError(path, f"unexpected {type(stmt).__name__} statement; a task list holds imports and one "
                            "assignment of a list of Task(...) calls", line=stmt.lineno)
    if len(lists) != 1:
        raise TaskFileError(path, f"expected one assignment of a list of Task(...) calls, found {len(lists)}",
                            line=lists[1].lineno if len(lists) > 1 else None)
    elements = lists[0].value.elts  # type: ignore[union-attr]
    return [_task(node, i, path, f"{id_prefix}-{i}") for i, node in enumerate(elements)]
