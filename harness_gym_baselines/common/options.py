"""Checks of what a user types on the ``harness-gym`` command line, each failing with one :class:`UsageError`
line that names the bad value and the accepted ones (closest matches first).

``harness-gym`` prints a :class:`UsageError` as ``harness-gym: error: MESSAGE`` and exits with status 2; the
traceback is shown only with ``--debug``. The checks run before anything slow starts: env ids against
Gymnasium's registry, ``--env-kwarg`` keys against the env constructor's signature (the env's own keywords
and those of :class:`~harness_gym.HarnessEnv`) and their values against its annotations, ``--policy``
values against the registry, the file system and ``module:callable``, dataset ids against the local Minari
datasets, task ids against the env's tasks.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import inspect
import json
import math
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
from gymnasium.envs.registration import load_env_creator

import harness_gym
from harness_gym import HarnessEnv
from harness_gym.core.prices import price_table
from harness_gym.workers import OPENAI_OPTIONS

GYM_MAKE_KEYWORDS = ("max_episode_steps", "disable_env_checker")
"""keywords of ``gym.make`` itself that ``--env-kwarg`` may pass as well"""


class UsageError(ValueError):
    """A mistake in what the user asked for (not a bug): the command line prints it as one line and exits
    with status 2."""


def closest(value: str, accepted: Iterable[str], *, n: int = 3) -> str:
    """``" (did you mean 'x'?)"`` for the accepted values closest to ``value`` (ignoring case; only those
    about as close as the best one), or ``""`` when none is close.

    :param value: what was given
    :param accepted: the values that would have been accepted
    :param n: at most this many suggestions
    """
    scored = sorted(((difflib.SequenceMatcher(None, value.lower(), a.lower()).ratio(), a) for a in accepted),
                    key=lambda pair: -pair[0])
    if not scored or scored[0][0] < 0.6:
        return ""
    best = scored[0][0]
    matches = [a for ratio, a in scored[:n] if ratio >= best - 0.05]
    return f" (did you mean {' or '.join(repr(m) for m in matches)}?)"


def one_of(values: Iterable[str]) -> str:
    """The accepted values as a short list for a message."""
    return ", ".join(str(v) for v in values)


# ----- env ids and constructor keywords ---------------------------------------------------------------------
def check_env_id(env_id: str) -> str:
    """``env_id`` if Gymnasium knows it (after ``import harness_gym``), else a :class:`UsageError`.

    :param env_id: the env id given on the command line
    """
    if env_id in gym.registry:
        return env_id
    name, _, version = env_id.rpartition("-v")
    if version.isdigit() and f"{name}-v1" in harness_gym.ALL_ENV_IDS:
        raise UsageError(f"{env_id} is no longer registered: the Harness MDP changed in -v1 (real prices, a cost "
                         f"budget, the harness signals; docs/cost.md); use {name}-v2 (or {name}-v1)")
    raise UsageError(f"unknown env id {env_id!r}{closest(env_id, gym.registry)}; "
                     f"the harness_gym envs are {one_of(harness_gym.ENV_IDS)} (harness-gym list shows them all)")


def env_keywords(env_id: str) -> dict[str, inspect.Parameter]:
    """The keyword arguments ``gym.make(env_id, ...)`` passes on to the env's constructor: the parameters with
    a default of every ``__init__`` along the class hierarchy, as far as each passes ``**kwargs`` on.

    :param env_id: a registered env id
    """
    creator = load_env_creator(gym.spec(env_id).entry_point)
    classes = [c for c in creator.__mro__ if "__init__" in vars(c)] if isinstance(creator, type) else [creator]
    params: dict[str, inspect.Parameter] = {}
    for owner in classes:
        init = owner.__init__ if isinstance(owner, type) else owner
        signature = inspect.signature(init)
        for name, param in signature.parameters.items():
            if param.kind in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY) and param.default is not param.empty:
                params.setdefault(name, param)
        if not any(p.kind == p.VAR_KEYWORD for p in signature.parameters.values()) or owner is gym.Env:
            break
    return params


_SIMPLE_TYPES: dict[str, tuple[type, ...]] = {"int": (int,), "float": (int, float), "bool": (bool,), "str": (str,),
                                              "None": (type(None),)}


def _type_error(name: str, value: Any, annotation: Any) -> str | None:
    """Why ``value`` does not fit ``annotation`` (``None`` when it fits or the annotation is not simple)."""
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", str(annotation))
    alternatives = [t.strip() for t in str(text).split("|")]
    if not alternatives or any(t not in _SIMPLE_TYPES for t in alternatives):
        return None  # a type the command line cannot judge (a Path, a Worker, a mapping): the env checks it
    for t in alternatives:
        allowed = _SIMPLE_TYPES[t]
        if isinstance(value, allowed) and not (t in ("int", "float") and isinstance(value, bool)):
            return None
    given = "text" if isinstance(value, str) else type(value).__name__
    return f"{name} expects {' or '.join(alternatives)}, got {given} {json.dumps(value)}"


def parse_key_values(pairs: Sequence[str], flag: str = "--env-kwarg") -> dict[str, Any]:
    """``KEY=VALUE`` pairs as a dict; VALUE is parsed as JSON when it parses, else kept as text.

    :param pairs: the values given to ``flag``
    :param flag: the flag, for the error message
    """
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"{flag} expects KEY=VALUE, got {pair!r}")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def check_env_kwargs(env_id: str, kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """``kwargs`` if every key is a keyword of the env (:func:`env_keywords`) and every value fits its
    annotation where that is a simple type (``int``, ``float``, ``bool``, ``str``, ``None``).

    :param env_id: a registered env id
    :param kwargs: the parsed ``--env-kwarg`` pairs (and ``--worker`` / ``--sandbox``)
    """
    params = env_keywords(env_id)
    accepted = [*params, *GYM_MAKE_KEYWORDS]
    if kwargs.get("worker") == "openai":  # the env passes these on to the worker (**worker_options)
        accepted += OPENAI_OPTIONS
    for key, value in kwargs.items():
        if key not in accepted:
            raise UsageError(f"--env-kwarg {key}=...: {env_id} has no keyword {key!r}{closest(key, accepted)}; "
                             f"its keywords are {one_of(params)}")
        if key in params:
            problem = _type_error(key, value, params[key].annotation)
            if problem is not None:
                raise UsageError(f"--env-kwarg {key}={value}: {problem}")
    return dict(kwargs)


def make_env(env_id: str, kwargs: Mapping[str, Any], **extra: Any) -> gym.Env:
    """``gym.make(env_id, **kwargs, **extra)`` after :func:`check_env_kwargs`; a rejected value (the env's own
    ``ValueError`` / ``TypeError`` / ``KeyError``, a missing file) becomes a :class:`UsageError` naming the env
    and its keywords.

    :param env_id: a registered env id
    :param kwargs: the parsed ``--env-kwarg`` pairs
    :param extra: keywords the command adds itself (e.g. ``render_mode``)
    """
    check_env_kwargs(env_id, kwargs)
    try:
        return gym.make(env_id, **kwargs, **extra)
    except (ValueError, TypeError, KeyError, OSError) as exc:
        given = " ".join(f"{k}={json.dumps(v) if not isinstance(v, str) else v}" for k, v in kwargs.items())
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        raise UsageError(f"cannot make {env_id}{' with ' + given if given else ''}: {message}") from exc


def check_task_id(env: gym.Env, task_id: str) -> str:
    """``task_id`` if the env has that task, else a :class:`UsageError` with the closest task ids.

    :param env: a harness env
    :param task_id: the ``--task-id`` given
    """
    base = env.unwrapped
    assert isinstance(base, HarnessEnv)
    ids = [t.task_id for split in ("train", "val", "test", "ood") for t in base.domain.tasks(split)]
    if task_id in ids:
        return task_id
    raise UsageError(f"--task-id {task_id}: {env.spec.id if env.spec else base.domain.name} has no such task"
                     f"{closest(task_id, ids)}; it has {len(ids)} tasks, e.g. {one_of(ids[:5])}")


# ----- policies ---------------------------------------------------------------------------------------------
def resolve_callable(spec: str) -> Any:
    """The object named by ``module:attribute`` (the attribute may be dotted), with a :class:`UsageError`
    naming what could not be imported or found. The module is imported from ``sys.path`` and, when it is not
    found there, from the current folder (added at the end of ``sys.path``, so an installed package of the same
    name wins): the ``harness-gym`` script's own folder is first on its path, not the current one.

    :param spec: ``"package.module:name"``
    """
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise UsageError(f"--policy {spec}: expected module:callable, e.g. my_agents:make_policy")
    try:
        module = _import_here_too(module_name)
    except ImportError as exc:
        raise UsageError(f"--policy {spec}: cannot import module {module_name!r} ({exc}); it is looked for on "
                         f"PYTHONPATH and in the current folder {os.getcwd()}") from exc
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            names = [n for n in dir(obj) if not n.startswith("_")]
            raise UsageError(f"--policy {spec}: {getattr(obj, '__name__', module_name)!r} has no attribute "
                             f"{part!r}{closest(part, names)}")
        obj = getattr(obj, part)
    return obj


def _import_here_too(module_name: str) -> Any:
    """``importlib.import_module``, retried with the current folder appended to ``sys.path`` when the module's
    top-level package is not found."""
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        here = os.getcwd()
        if exc.name != module_name.split(".")[0] or here in sys.path or "" in sys.path:
            raise
        sys.path.append(here)
        importlib.invalidate_caches()
        return importlib.import_module(module_name)


def looks_like_path(value: str) -> bool:
    """Whether a ``--policy`` value was meant as a file (it has a folder or a model-file suffix)."""
    return "/" in value or "\\" in value or Path(value).suffix in (".pt", ".zip", ".pth")


def check_policy_value(value: str, names: Sequence[str]) -> str:
    """``value`` if it is a registered policy name, an existing file or an importable ``module:callable``;
    otherwise a :class:`UsageError`: a missing file is named as such, an unknown name gets the closest names.

    :param value: the ``--policy`` value
    :param names: the registered policy names
    """
    if value in names or Path(value).is_file():
        return value
    if ":" in value and not looks_like_path(value.partition(":")[0]):
        resolve_callable(value)
        return value
    if looks_like_path(value):
        raise UsageError(f"--policy {value}: no such model file ({Path(value).resolve()})")
    raise UsageError(f"--policy {value}: unknown policy{closest(value, names)}; expected one of {one_of(names)}, "
                     "the path of a model file, or module:callable (docs/evaluate.md)")


# ----- datasets and counts ----------------------------------------------------------------------------------
def check_dataset(dataset_id: str) -> str:
    """``dataset_id`` if a Minari dataset with that id is on this machine, else a :class:`UsageError` naming the
    datasets root, the closest local ids and how to collect one (Minari itself would suggest a download from
    its server, which has no harness_gym datasets).

    :param dataset_id: the ``--dataset`` given
    """
    from minari.storage.datasets_root_dir import get_dataset_path

    if (get_dataset_path(dataset_id) / "data").exists():
        return dataset_id
    root = get_dataset_path()
    local = sorted(str(p.parent.relative_to(root)) for p in root.glob("**/data") if p.is_dir()
                   and not any(part.startswith(".") for part in p.relative_to(root).parts))
    have = f"; local datasets: {one_of(local)}" if local else "; there are no local datasets"
    raise UsageError(f"--dataset {dataset_id}: no such dataset under {root}{closest(dataset_id, local)}{have}. "
                     f"Collect it with: harness-gym collect ENV_ID --episodes N --out {dataset_id}")


def positive_int(value: str) -> int:
    """An ``argparse`` type: an integer >= 1 (``--episodes``).

    :param value: the text given
    """
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {value!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {number}")
    return number


# ----- price profiles and cost budgets (--prices, --budget-units) -------------------------------------------
def prices_name(value: str) -> str:
    """``--prices`` values: a price profile ``BASE[+OVERLAY...]`` of ``envs_data/prices`` (argparse ``type``).

    :param value: what was given on the command line
    """
    try:
        price_table(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return value


def budget_units_value(value: str) -> float | str | None:
    """``--budget-units`` values: ``auto``, ``none`` or a number of cost units > 0 (argparse ``type``).

    :param value: what was given on the command line
    """
    if value.lower() in ("auto", "none"):
        return None if value.lower() == "none" else "auto"
    try:
        units = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r}: expected auto, none or a number of cost units") from None
    if not math.isfinite(units) or units <= 0:
        raise argparse.ArgumentTypeError(f"{value!r}: a budget is a finite number of cost units > 0")
    return units


ONLINE_CONFIG_KEYWORDS = {"cost_weight": "--cost-weight", "prices": "--prices", "budget_units": "--budget-units"}
"""the env keywords an online trainer takes as fields of its config (and their flags), never as ``--env-kwarg``"""


def refuse_config_keywords(env_kwargs: Mapping[str, Any]) -> None:
    """A :class:`UsageError` naming the flag when an online trainer's ``--env-kwarg`` keywords hold one of
    :data:`ONLINE_CONFIG_KEYWORDS`.

    :param env_kwargs: the ``--env-kwarg`` keywords
    """
    for key, flag in ONLINE_CONFIG_KEYWORDS.items():
        if key in env_kwargs:
            raise UsageError(f"--env-kwarg {key}=...: the trainers take {flag}")


RECORDED_ENV_KEYWORDS: frozenset[str] = frozenset({"budget_units", "prices"})
"""The env keywords a recording manifest may name for its episodes (``env_kwargs``): the settings that decide
what the recorded MDP billed and observed. Nothing else (a sandbox, an isolation flag, a worker option) is taken
from a file a user is handed."""


def recorded_env_kwargs(manifest: Mapping[str, Any], env_id: str, where: str) -> dict[str, Any]:
    """The env keywords a recording's episodes on ``env_id`` were recorded under (its ``env_kwargs``), checked: a
    mapping per env id of :data:`RECORDED_ENV_KEYWORDS` only, ``budget_units`` a finite number > 0 or ``None``,
    ``prices`` a profile name. ``{}`` when the manifest names none.

    :param manifest: the recording's manifest (parsed JSON)
    :param env_id: the env the episodes are replayed on
    :param where: the manifest's path, for the error
    :raises UsageError: one line naming the file, the env id and the bad entry
    """
    per_env = manifest.get("env_kwargs", {})
    if not isinstance(per_env, Mapping) or not isinstance(per_env.get(env_id, {}), Mapping):
        raise UsageError(f"{where}: env_kwargs must map env ids to objects of keywords")
    given = dict(per_env.get(env_id, {}))
    unknown = sorted(set(given) - RECORDED_ENV_KEYWORDS)
    if unknown:
        raise UsageError(f"{where}: env_kwargs.{env_id}: {', '.join(unknown)} cannot come from a recording (only "
                         f"{', '.join(sorted(RECORDED_ENV_KEYWORDS))})")
    units = given.get("budget_units")
    if "budget_units" in given and units is not None and (
            isinstance(units, bool) or not isinstance(units, (int, float)) or not math.isfinite(units) or units <= 0):
        raise UsageError(f"{where}: env_kwargs.{env_id}.budget_units: a finite number > 0 or null, got {units!r}")
    if "prices" in given:
        if not isinstance(given["prices"], str):
            raise UsageError(f"{where}: env_kwargs.{env_id}.prices: a profile name, got {given['prices']!r}")
        try:
            price_table(given["prices"])
        except ValueError as exc:
            raise UsageError(f"{where}: env_kwargs.{env_id}.prices: {exc}") from None
    return given
