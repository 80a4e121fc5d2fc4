"""Command-line flags from a dataclass: one flag per field, typed and documented by the field itself.

A field ``batch_size: int = 256`` followed by the docstring ``transitions per gradient step`` becomes
``--batch-size INT`` with that help text and default. Supported field types: ``int``, ``float``, ``str``,
``bool`` (``--flag`` / ``--no-flag``), ``Literal[...]`` (choices) and ``tuple[T, ...]`` (one or more values); a field
of any other type names its parser in ``metadata["type"]`` (an argparse ``type``, e.g. ``"auto"``, ``"none"``
or a number for a ``float | str | None`` field). A field's ``metadata`` may set ``help`` (instead of the
docstring), ``flags`` (other spellings, e.g.
``("--dataset",)``), ``required`` (the flag must be given even though the dataclass has a default) and, for a
``tuple[T, ...]`` field, ``metavar`` (the value's name in the help) and ``repeat`` (one value per occurrence of a repeated flag, ``--env-kwarg A=1
--env-kwarg B=2``, as every ``harness-gym`` command takes ``--env-kwarg``, instead of one flag with several
values). :func:`doc_summary` makes a help text of a module's docstring: its whole first paragraph.
:func:`preset_config` makes a preset of a config: some fields fixed (no flag), some defaults changed.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import re
import textwrap
import typing
from typing import Any, TypeVar

ConfigT = TypeVar("ConfigT")

PRESET_OF = "preset_of"
"""the class attribute of a :func:`preset_config` that names the config it presets"""

_ROLE = re.compile(r":[a-z]+:`~?([^`]+)`")


def doc_summary(doc: str | None, default: str = "") -> str:
    """The first paragraph of a docstring as one line of plain text, for a ``--help`` description: every line up to
    the first blank one (a sentence that goes on to the next line is never cut), Sphinx roles reduced to their
    target (``:mod:`a.b``` -> ``a.b``) and double backquotes to plain text.

    :param doc: a docstring
    :param default: what to return for an empty docstring
    """
    paragraph = (doc or "").strip().split("\n\n", 1)[0]
    text = " ".join(paragraph.split())
    return _ROLE.sub(r"\1", text).replace("``", "") or default


def field_docs(cls: type) -> dict[str, str]:
    """The attribute docstrings of a dataclass and its bases (the string literal right after each field).

    :param cls: a dataclass
    """
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if not dataclasses.is_dataclass(klass):
            continue
        try:
            source = textwrap.dedent(inspect.getsource(klass))
        except (OSError, TypeError):  # defined where no source is available (e.g. an interactive session)
            continue
        body = ast.parse(source).body[0]
        assert isinstance(body, ast.ClassDef)
        for stmt, following in zip(body.body, body.body[1:]):
            if (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
                    and isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant)
                    and isinstance(following.value.value, str)):
                docs[stmt.target.id] = " ".join(following.value.value.split())
    return docs


def _argument(cls: type, f: dataclasses.Field, hint: Any) -> dict[str, Any]:
    """argparse keywords for one field (type, nargs, choices or action)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if "type" in f.metadata:
        return {"type": f.metadata["type"]}
    if hint is bool:
        return {"action": argparse.BooleanOptionalAction}
    if hint in (int, float, str):
        return {"type": hint}
    if origin is typing.Literal:
        return {"type": type(args[0]), "choices": args}
    if origin in (tuple, list) and args and args[0] in (int, float, str) and (origin is list or args[1:] == (...,)):
        return {"type": args[0], "nargs": "+"}
    raise TypeError(f"{cls.__name__}.{f.name}: field type {hint!r} has no command-line form "
                    "(supported: int, float, str, bool, Literal[...], tuple[T, ...], or a metadata 'type')")


def _default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


def add_dataclass_arguments(parser: argparse.ArgumentParser, cls: type) -> None:
    """Add one flag per field of ``cls`` to ``parser`` (the destination is the field name).

    :param parser: the parser (or sub-parser) to extend
    :param cls: a dataclass whose fields all have a supported type
    """
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls!r} is not a dataclass")
    hints = typing.get_type_hints(cls)
    docs = field_docs(cls)
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        kwargs = _argument(cls, f, hints[f.name])
        if f.metadata.get("repeat"):
            if kwargs.get("nargs") != "+":
                raise TypeError(f"{cls.__name__}.{f.name}: 'repeat' needs a tuple[T, ...] field")
            kwargs = {"type": kwargs["type"], "action": "append"}
        default = _default(f)
        required = bool(f.metadata.get("required", default is dataclasses.MISSING))
        text = f.metadata.get("help", docs.get(f.name, ""))
        if not required:
            shown = " ".join(map(str, default)) if isinstance(default, (tuple, list)) else default
            if isinstance(default, bool):
                shown = "on" if default else "off"
            elif isinstance(default, (tuple, list)) and not default:
                shown = "none"
            elif default == "":
                shown = "empty"
            text = f"{text} (default: {shown})" if text else f"default: {shown}"
            kwargs["default"] = list(default) if f.metadata.get("repeat") else default
        if "metavar" in f.metadata:
            kwargs["metavar"] = f.metadata["metavar"]
        flags = (*f.metadata.get("flags", ()), f"--{f.name.replace('_', '-')}")
        parser.add_argument(*flags, dest=f.name, required=required, help=text.replace("%", "%%"), **kwargs)


def config_from_args(cls: type[ConfigT], namespace: argparse.Namespace) -> ConfigT:
    """Build ``cls`` from parsed flags (:func:`add_dataclass_arguments`); lists become tuples for tuple fields.

    :param cls: the dataclass
    :param namespace: what ``parse_args`` returned
    """
    hints = typing.get_type_hints(cls)
    values = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if not f.init or not hasattr(namespace, f.name):
            continue
        value = getattr(namespace, f.name)
        values[f.name] = tuple(value) if typing.get_origin(hints[f.name]) is tuple else value
    return cls(**values)



def preset_config(base: type, name: str, *, fixed: dict[str, Any], summary: str, **defaults: Any) -> type:
    """A preset of the config dataclass ``base``: a subclass named ``name`` whose ``fixed`` fields keep the given
    value and are no flag (``init=False``) and whose ``defaults`` fields get another default; every other field
    (its flag, default and help) is ``base``'s. Its docstring is ``summary``, the ``--help`` description of a
    trainer registered under it (:mod:`harness_gym_baselines.common.trainer_registry`).

    :param base: the config dataclass
    :param name: the preset's class name (the name it is bound to in its module)
    :param fixed: field name -> its value in every run of the preset
    :param summary: what the preset trains, one paragraph
    :param defaults: field name -> its default in the preset
    """
    names = {f.name for f in dataclasses.fields(base)}
    unknown = sorted((set(fixed) | set(defaults)) - names)
    if unknown:
        raise TypeError(f"preset {name} of {base.__name__}: no field {', '.join(unknown)}")
    hints = typing.get_type_hints(base)
    fields = [(key, hints[key], dataclasses.field(default=value, init=False)) for key, value in fixed.items()]
    fields += [(key, hints[key], dataclasses.field(default=value)) for key, value in defaults.items()]
    preset = dataclasses.make_dataclass(name, fields, bases=(base,), namespace={PRESET_OF: base})
    preset.__module__, preset.__doc__ = base.__module__, summary
    return preset
