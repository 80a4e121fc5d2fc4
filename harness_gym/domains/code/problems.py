"""The hand-written source of the code task bank: base problems and their variants, read from
``sources/problems.json``.

A :class:`Problem` is a template (``$name``-style placeholders, :class:`string.Template`) of a spec, a
reference solution, test inputs and spec details; each variant fills the placeholders (and may replace whole
fields) to make one task. Test entries are argument lists (``"[1, 2], 3"`` becomes ``name([1, 2], 3)``) for
functions and whole expressions for classes. Expected values are never written here: the generator computes
them by running the reference.

Spec details (``details``) are what OBSERVE reveals; a leading ``!`` marks a detail the hidden tests depend on
and the visible tests do not show (a required observation).

``problems.json`` is a list of problem objects with the fields of :class:`Problem`; ``ref`` (in a problem or
a variant) is written as a list of source lines, and ``kind`` and ``example`` may be left out.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from string import Template
from typing import Any

from harness_gym.core.taskfile import TaskFileError, read_json, require
from harness_gym.domains.source_files import source_path

PROBLEMS_FILE = source_path("code", "problems.json")
OOD_FAMILIES: tuple[str, ...] = ("dates", "classes")
"""Families held out entirely as the ``ood`` split."""


@dataclass(frozen=True)
class Problem:
    """A base problem. ``variants`` are dicts of placeholder values; a key naming a field replaces it."""

    family: str
    sig: str
    desc: str
    ref: str
    visible: tuple[str, ...]
    hidden: tuple[str, ...]
    details: tuple[str, ...]
    docs: tuple[str, ...]
    variants: tuple[dict[str, Any], ...]
    example: str = ""
    """Argument list (or expression, for classes) of the ``run_example`` call; default the first hidden test."""
    kind: str = "function"


@dataclass(frozen=True)
class TaskSpec:
    """One concrete task before its tests are run: everything the generator needs."""

    task_id: str
    family: str
    problem: str
    """The base problem's id: variants of one problem always share a split."""
    name: str
    kind: str
    prompt: str
    reference: str
    visible: tuple[str, ...]
    hidden: tuple[str, ...]
    details: tuple[str, ...]
    required: tuple[int, ...]
    docs: tuple[str, ...]
    example: str


_OVERRIDABLE = frozenset({"sig", "desc", "ref", "visible", "hidden", "details", "docs", "example"})
"""The fields of a :class:`Problem` a variant may replace."""


def _fill(value: Any, params: dict[str, Any]) -> Any:
    if isinstance(value, str):
        return Template(value).substitute(params)
    if isinstance(value, tuple):
        return tuple(_fill(v, params) for v in value)
    return value


def _call(kind: str, name: str, entry: str) -> str:
    return entry if kind == "class" else f"{name}({entry})"


def expand(problem: Problem) -> list[TaskSpec]:
    """The tasks of one problem, one per variant."""
    fields = _OVERRIDABLE
    specs: list[TaskSpec] = []
    problem_id = f"{problem.family}-{problem.variants[0]['name']}"
    for variant in problem.variants:
        params = {k: v for k, v in variant.items() if k not in fields}
        merged = {f: variant.get(f, getattr(problem, f)) for f in fields}
        filled = {f: _fill(v, params) for f, v in merged.items()}
        name = params["name"]
        details = tuple(d.lstrip("!") for d in filled["details"])
        required = tuple(i for i, d in enumerate(filled["details"]) if d.startswith("!"))
        what = "class" if problem.kind == "class" else "function"
        prompt = f"Write a Python {what} `{name}`.\n\n{filled['sig']}\n\n{filled['desc']}"
        visible = tuple(_call(problem.kind, name, e) for e in filled["visible"])
        hidden = tuple(_call(problem.kind, name, e) for e in filled["hidden"])
        example = _call(problem.kind, name, filled["example"]) if filled["example"] else hidden[0]
        specs.append(TaskSpec(
            task_id=f"code-{problem.family}-{name}", family=problem.family, problem=problem_id, name=name,
            kind=problem.kind,
            prompt=prompt, reference=filled["ref"].strip() + "\n", visible=visible, hidden=hidden,
            details=details, required=required, docs=filled["docs"], example=example,
        ))
    return specs


_LIST_FIELDS = ("visible", "hidden", "details", "docs")


def _field(rec: dict[str, Any], key: str, label: str, path: Path, default: Any = ...) -> Any:
    """``rec[key]`` as :class:`Problem` holds it (``ref`` lines joined, lists as tuples); errors name
    ``label.key`` as the field."""
    name = f"{label}.{key}"
    view = {name: rec[key]} if key in rec else {}
    if key not in ("ref", *_LIST_FIELDS):
        return require(view, name, str, path=path, default=default)
    items = require(view, name, list, path=path)
    for i, item in enumerate(items):
        require({f"{name}[{i}]": item}, f"{name}[{i}]", str, path=path)
    return "\n" + "\n".join(items) + "\n" if key == "ref" else tuple(items)


def read_problems(path: str | Path = PROBLEMS_FILE) -> tuple[Problem, ...]:
    """The problems of a ``problems.json`` file; errors name the file and the field (``problems[3].ref``).

    :param path: the file (default the shipped ``sources/problems.json``)
    """
    path = Path(path)
    raw = read_json(path)
    if not isinstance(raw, list):
        raise TaskFileError(path, f"expected a list of problems, got {type(raw).__name__}")
    problems = []
    for i, rec in enumerate(raw):
        label = f"problems[{i}]"
        if not isinstance(rec, dict):
            raise TaskFileError(path, f"expected an object, got {type(rec).__name__}", field=label)
        variants = require({f"{label}.variants": rec.get("variants")} if "variants" in rec else {},
                           f"{label}.variants", list, path=path)
        if not variants:
            raise TaskFileError(path, "needs at least one variant", field=f"{label}.variants")
        filled = []
        for j, variant in enumerate(variants):
            vlabel = f"{label}.variants[{j}]"
            if not isinstance(variant, dict) or not isinstance(variant.get("name"), str):
                raise TaskFileError(path, "a variant is an object with a string 'name'", field=vlabel)
            filled.append({k: _field(variant, k, vlabel, path) if k in _OVERRIDABLE else v
                           for k, v in variant.items()})
        kind = _field(rec, "kind", label, path, default="function")
        if kind not in ("function", "class"):
            raise TaskFileError(path, f"expected 'function' or 'class', got {kind!r}", field=f"{label}.kind")
        problems.append(Problem(
            family=_field(rec, "family", label, path), sig=_field(rec, "sig", label, path),
            desc=_field(rec, "desc", label, path), ref=_field(rec, "ref", label, path),
            visible=_field(rec, "visible", label, path), hidden=_field(rec, "hidden", label, path),
            details=_field(rec, "details", label, path), docs=_field(rec, "docs", label, path),
            variants=tuple(filled), example=_field(rec, "example", label, path, default=""), kind=kind))
    return tuple(problems)


def all_specs() -> list[TaskSpec]:
    """Every task of the bank, in a fixed order."""
    return [spec for problem in read_problems() for spec in expand(problem)]
