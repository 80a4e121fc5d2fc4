"""Loaders for the two public τ-bench retail layouts and this project's own store, producing one
:class:`RetailDataset`.

- **τ²-bench layout** (``layout="tau2"``): ``db.json`` (``{"users", "orders", "products"}``), ``tasks.json`` (a
  list of tasks with ``id``, ``user_scenario.instructions`` and ``evaluation_criteria.{actions,
  communicate_info}``, each action ``{name, arguments}``) and ``split_tasks.json`` (split name -> task ids).
- **τ-bench v1 layout** (``layout="v1"``), the published ``tau_bench/envs/retail`` folder as it is:
  ``data/users.json``, ``data/orders.json``, ``data/products.json`` (id -> record; a user record has no
  ``user_id`` field, its key is the id) and the task lists ``tasks_train.py`` / ``tasks_dev.py`` /
  ``tasks_test.py`` (whichever exist), read by parsing their literals, never by running them
  (:mod:`~harness_gym.domains.tau_retail.v1_tasks`). Task ids are ``<file split>-<index in its list>``
  (``train-0``, ``dev-3``, ``test-7``), the index upstream's ``--task-ids`` takes; ``tasks_dev.py`` is the
  val split. Tools follow v1's semantics (:mod:`~harness_gym.domains.tau_retail.tools`).
- **This project's JSON store** (``layout="json"``), the format of the synthetic store in
  ``envs_data/tau_retail`` (no public benchmark uses it): ``users.json``, ``orders.json``, ``products.json``
  at the top (user records carry ``user_id``) and ``tasks_train.json`` / ``tasks_dev.json`` /
  ``tasks_test.json`` / ``tasks_ood.json``, each a list of ``{user_id, instruction, actions: [{name, kwargs}],
  outputs}``. Tools follow τ²'s semantics, which the store was generated with.

**The ood split.** Where the data names no ood split (``split_tasks.json`` without ``ood``, no
``tasks_ood.json``; the published v1 and τ² data have none), it is defined from the data: the train and val
tasks whose gold actions include :data:`OOD_HELD_OUT_TOOL` (changing a pending order's shipping address)
form ``ood``, so that intent never appears in train or val. The test split is left as published, so test
numbers stay comparable with upstream's.

Malformed files raise :class:`~harness_gym.core.taskfile.TaskFileError` naming the file, the line where known,
the task id and the field.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from harness_gym.core.taskfile import TaskFileError, read_json, require
from harness_gym.core.tool_calls import validate_call
from harness_gym.core.types import ToolCall
from harness_gym.domains.tau_retail.store import TABLES, RetailDB, RetailSnapshot
from harness_gym.domains.tau_retail.tools import TOOLS, call_once, tool_specs
from harness_gym.domains.tau_retail.v1_tasks import read_v1_task_list

V1_TASK_FILES: dict[str, tuple[str, str]] = {"train": ("tasks_train.py", "train"), "val": ("tasks_dev.py", "dev"),
                                             "test": ("tasks_test.py", "test")}
"""Published v1 layout: split -> (task-list module, the prefix of its task ids)."""
V1_DATA_FOLDER = "data"
JSON_TASK_FILES: dict[str, str] = {"train": "tasks_train.json", "val": "tasks_dev.json", "test": "tasks_test.json",
                                   "ood": "tasks_ood.json"}
"""This project's JSON store: task file per split."""
OOD_HELD_OUT_TOOL = "modify_pending_order_address"
"""The intent held out of train and val to form the ood split where the data names none (see the module doc)."""

TAU2_SPLIT_NAMES: dict[str, str] = {"train": "train", "val": "val", "dev": "val", "test": "test", "ood": "ood"}
"""``split_tasks.json`` keys read, and the split each maps to; other keys (``base``: all tasks) are ignored."""

TAU2_FAILING_GOLD_WRITES: dict[str, str] = {
    "64": "exchange_delivered_order_items on #W7464385, which is pending (the gold's next call, "
          "modify_pending_order_items, makes the change)",
    "105": "exchange_delivered_order_items on #W4316152 needs 21.1 from gift_card_7245904, which holds 17.0; the "
           "gold state is the initial state, so a plan that changes nothing also earns reward 1",
}
"""Tasks of the public τ² retail data whose gold actions include a write that fails on the fresh database.
As in the benchmark, the failing call is a no-op on the gold side too, so replaying the gold actions still
earns reward 1; the gold plan the worker drafts leaves these calls out."""

VAL_FRACTION_DENOMINATOR = 5
"""Without a val split, one train task in five (chosen by a hash of its id) moves to val."""


@dataclass(frozen=True)
class RawTask:
    """One benchmark task as read from its file, before the domain turns it into a :class:`Task`."""

    task_id: str
    split: str
    prompt: str
    user_id: str | None
    actions: tuple[ToolCall, ...]
    outputs: tuple[str, ...]
    source: str
    """The file the task came from (for error messages)."""


@dataclass(frozen=True)
class RetailDataset:
    """A store and its tasks."""

    snapshot: RetailSnapshot
    tasks: tuple[RawTask, ...]
    layout: str
    """``"tau2"``, ``"v1"`` or ``"json"`` (this project's store)."""
    root: str


# ----- database --------------------------------------------------------------------------------------

_RECORD_FIELDS: dict[str, dict[str, type | tuple[type, ...]]] = {
    "users": {"user_id": str, "name": dict, "address": dict, "email": str, "payment_methods": dict, "orders": list},
    "orders": {"order_id": str, "user_id": str, "address": dict, "items": list, "status": str,
               "payment_history": list},
    "products": {"product_id": str, "name": str, "variants": dict},
}


def _check_table(table: str, records: Any, path: Path, where: str,
                 key_is_id: bool = False) -> dict[str, dict[str, Any]]:
    """Check every record's required fields; ``key_is_id``: user records have no ``user_id`` (v1)."""
    if not isinstance(records, dict):
        raise TaskFileError(path, f"expected an object of {table} by id, got {type(records).__name__}", field=where)
    for key, rec in records.items():
        if not isinstance(rec, dict):
            raise TaskFileError(path, f"expected an object, got {type(rec).__name__}", field=f"{where}[{key!r}]")
        for name, typ in _RECORD_FIELDS[table].items():
            if key_is_id and table == "users" and name == "user_id":
                continue
            if name not in rec:
                raise TaskFileError(path, "missing required field", field=f"{where}[{key!r}].{name}")
            if not isinstance(rec[name], typ):
                raise TaskFileError(path, f"expected {getattr(typ, '__name__', typ)}, got {type(rec[name]).__name__}",
                                    field=f"{where}[{key!r}].{name}")
    return records


def _snapshot(tables: dict[str, Any], paths: dict[str, Path], prefix: str, semantics: str = "tau2") -> RetailSnapshot:
    checked = {t: _check_table(t, tables[t], paths[t], f"{prefix}{t}", key_is_id=semantics == "v1") for t in TABLES}
    return RetailSnapshot(**checked, semantics=semantics)


# ----- tasks -----------------------------------------------------------------------------------------

def _actions(raw: Any, path: Path, task_id: str, field: str, args_key: str) -> tuple[ToolCall, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise TaskFileError(path, f"expected a list, got {type(raw).__name__}", task_id=task_id, field=field)
    calls = []
    for j, act in enumerate(raw):
        where = f"{field}[{j}]"
        if not isinstance(act, dict):
            raise TaskFileError(path, "expected an object", task_id=task_id, field=where)
        name = require(act, "name", str, path=path, task_id=task_id)
        if name not in TOOLS:
            raise TaskFileError(path, f"unknown tool {name!r}; known: {', '.join(sorted(TOOLS))}",
                                task_id=task_id, field=f"{where}.name")
        if args_key not in act:
            raise TaskFileError(path, "missing required field", task_id=task_id, field=f"{where}.{args_key}")
        args = act[args_key]
        if not isinstance(args, dict):
            raise TaskFileError(path, f"expected an object, got {type(args).__name__}", task_id=task_id,
                                field=f"{where}.{args_key}")
        calls.append(ToolCall(name=name, args=args))
    return tuple(calls)


def _outputs(raw: Any, path: Path, task_id: str, field: str) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(o, str) for o in raw):
        raise TaskFileError(path, "expected a list of strings", task_id=task_id, field=field)
    return tuple(raw)


def infer_user(snapshot: RetailSnapshot, actions: tuple[ToolCall, ...]) -> str | None:
    """The customer a gold trajectory is about: whom it looks up, reads or changes, or whose order it touches."""
    db = RetailDB(snapshot)
    for call in actions:
        if "user_id" in call.args and snapshot.tables["users"].get(call.args["user_id"]) is not None:
            return str(call.args["user_id"])
        if call.name.startswith("find_user_id"):
            ok, out = call_once(db, call)
            if ok:
                return out
        order = snapshot.tables["orders"].get(call.args.get("order_id", ""))
        if order is not None:
            return str(order["user_id"])
    return None


def user_in_ticket(snapshot: RetailSnapshot, ticket: str) -> str | None:
    """The customer a ticket names: by user id, or by first name, last name and zip code together."""
    for user_id, user in snapshot.tables["users"].items():
        if user_id in ticket:
            return user_id
    for user_id, user in snapshot.tables["users"].items():
        name = user["name"]
        if name.get("first_name", "?") in ticket and name.get("last_name", "?") in ticket and \
                user["address"].get("zip", "?") in ticket:
            return user_id
    return None


def _ticket(instructions: Any, path: Path, task_id: str) -> str:
    """The τ² user scenario as a ticket: what the customer wants, what they know, how they behave."""
    if isinstance(instructions, str):
        return instructions
    if not isinstance(instructions, dict):
        raise TaskFileError(path, "expected an object or a string", task_id=task_id,
                            field="user_scenario.instructions")
    labels = (("reason_for_call", "Request"), ("known_info", "Known"), ("unknown_info", "Unknown"),
              ("task_instructions", "Customer notes"))
    parts = [f"{label}: {instructions[key]}" for key, label in labels if instructions.get(key)]
    if not parts:
        raise TaskFileError(path, "missing required field", task_id=task_id,
                            field="user_scenario.instructions.reason_for_call")
    return "\n".join(parts)


def _with_derived_ood(tasks: list[RawTask]) -> list[RawTask]:
    """Move the train and val tasks whose gold actions use :data:`OOD_HELD_OUT_TOOL` to ``ood``."""
    return [replace(t, split="ood") if t.split in ("train", "val") and any(a.name == OOD_HELD_OUT_TOOL
                                                                            for a in t.actions) else t
            for t in tasks]


def _derived_val(task_id: str) -> bool:
    return int(hashlib.sha256(task_id.encode()).hexdigest(), 16) % VAL_FRACTION_DENOMINATOR == 0


def _tau2_splits(root: Path, ids: list[str]) -> dict[str, str]:
    """Task id -> split from ``split_tasks.json``; val is derived from train when the file has none."""
    path = root / "split_tasks.json"
    raw = read_json(path)
    if not isinstance(raw, dict):
        raise TaskFileError(path, "expected an object of split name -> task ids")
    known = set(ids)
    split_of: dict[str, str] = {}
    for name, members in raw.items():
        if name not in TAU2_SPLIT_NAMES:
            continue
        if not isinstance(members, list):
            raise TaskFileError(path, "expected a list of task ids", field=name)
        for tid in members:
            if str(tid) not in known:
                raise TaskFileError(path, "no such task in tasks.json", task_id=str(tid), field=name)
            split_of.setdefault(str(tid), TAU2_SPLIT_NAMES[name])
    if "val" not in split_of.values():
        for tid, split in split_of.items():
            if split == "train" and _derived_val(tid):
                split_of[tid] = "val"
    return split_of


def load_tau2(root: Path) -> RetailDataset:
    """Read a τ²-bench retail folder (``db.json``, ``tasks.json``, ``split_tasks.json``).

    Mapping: ``id`` -> task id; ``user_scenario.instructions`` -> the ticket; ``evaluation_criteria.actions``
    (``name``, ``arguments``) -> gold actions; ``communicate_info`` -> required outputs. Tasks that no split
    names are not loaded. ``initial_state`` other than null is refused (this adapter replays from ``db.json``).
    """
    db_path, tasks_path = root / "db.json", root / "tasks.json"
    db = read_json(db_path)
    if not isinstance(db, dict):
        raise TaskFileError(db_path, "expected an object with users, orders and products")
    for table in TABLES:
        if table not in db:
            raise TaskFileError(db_path, "missing required field", field=table)
    snapshot = _snapshot(db, dict.fromkeys(TABLES, db_path), "")
    raw_tasks = read_json(tasks_path)
    if not isinstance(raw_tasks, list):
        raise TaskFileError(tasks_path, "expected a list of tasks")
    ids = []
    for i, rec in enumerate(raw_tasks):
        if not isinstance(rec, dict):
            raise TaskFileError(tasks_path, "expected an object", task_id=f"#{i}")
        ids.append(str(require(rec, "id", (str, int), path=tasks_path, task_id=f"#{i}")))
    split_of = _tau2_splits(root, ids)
    tasks = []
    for tid, rec in zip(ids, raw_tasks):
        if tid not in split_of:
            continue
        if rec.get("initial_state") is not None:
            raise TaskFileError(tasks_path, "a non-null initial_state is not supported", task_id=tid,
                                field="initial_state")
        scenario = require(rec, "user_scenario", dict, path=tasks_path, task_id=tid)
        if "instructions" not in scenario:
            raise TaskFileError(tasks_path, "missing required field", task_id=tid, field="user_scenario.instructions")
        criteria = require(rec, "evaluation_criteria", dict, path=tasks_path, task_id=tid)
        if "actions" not in criteria:
            raise TaskFileError(tasks_path, "missing required field", task_id=tid, field="evaluation_criteria.actions")
        actions = _actions(criteria["actions"], tasks_path, tid, "evaluation_criteria.actions", "arguments")
        ticket = _ticket(scenario["instructions"], tasks_path, tid)
        tasks.append(RawTask(
            task_id=tid, split=split_of[tid], prompt=ticket,
            user_id=infer_user(snapshot, actions) or user_in_ticket(snapshot, ticket), actions=actions,
            outputs=_outputs(criteria.get("communicate_info"), tasks_path, tid, "evaluation_criteria.communicate_info"),
            source=str(tasks_path)))
    if "ood" not in split_of.values():
        tasks = _with_derived_ood(tasks)
    return RetailDataset(snapshot=snapshot, tasks=tuple(tasks), layout="tau2", root=str(root))


def load_json_store(root: Path) -> RetailDataset:
    """Read this project's JSON store (``users.json``, ``orders.json``, ``products.json``, ``tasks_*.json``).

    Task ids are ``<split>-<index in its file>``; ``instruction`` is the ticket.
    """
    paths = {t: root / f"{t}.json" for t in TABLES}
    snapshot = _snapshot({t: read_json(p) for t, p in paths.items()}, paths, "")
    users = snapshot.tables["users"]
    tasks = []
    for split, name in JSON_TASK_FILES.items():
        path = root / name
        if not path.is_file():
            continue
        raw = read_json(path)
        if not isinstance(raw, list):
            raise TaskFileError(path, "expected a list of tasks")
        for i, rec in enumerate(raw):
            tid = f"{split}-{i}"
            if not isinstance(rec, dict):
                raise TaskFileError(path, "expected an object", task_id=tid)
            user_id = require(rec, "user_id", str, path=path, task_id=tid)
            if user_id not in users:
                raise TaskFileError(path, f"no user {user_id!r} in users.json", task_id=tid, field="user_id")
            if "actions" not in rec:
                raise TaskFileError(path, "missing required field", task_id=tid, field="actions")
            tasks.append(RawTask(
                task_id=tid, split=split, prompt=require(rec, "instruction", str, path=path, task_id=tid),
                user_id=user_id, actions=_actions(rec["actions"], path, tid, "actions", "kwargs"),
                outputs=_outputs(rec.get("outputs", []), path, tid, "outputs"), source=str(path)))
    if not tasks:
        raise TaskFileError(root, f"no task file; expected one of {', '.join(JSON_TASK_FILES.values())}")
    if not any(t.split == "ood" for t in tasks):
        tasks = _with_derived_ood(tasks)
    return RetailDataset(snapshot=snapshot, tasks=tuple(tasks), layout="json", root=str(root))


def load_v1(root: Path) -> RetailDataset:
    """Read a published τ-bench v1 retail folder (``data/*.json`` and whichever ``tasks_*.py`` exist).

    Every action must name a v1 tool and carry keyword arguments its schema accepts; every task's
    ``user_id`` must be a key of ``users.json``.
    """
    data = root / V1_DATA_FOLDER
    paths = {t: data / f"{t}.json" for t in TABLES}
    snapshot = _snapshot({t: read_json(p) for t, p in paths.items()}, paths, "", semantics="v1")
    users = snapshot.tables["users"]
    v1_tools = tool_specs("v1")
    tasks = []
    for split, (name, prefix) in V1_TASK_FILES.items():
        path = root / name
        if not path.is_file():
            continue
        for task in read_v1_task_list(path, prefix):
            tid = f"{prefix}-{task.index}"
            if task.user_id not in users:
                raise TaskFileError(path, f"no user {task.user_id!r} in {paths['users']}", line=task.line,
                                    task_id=tid, field="user_id")
            calls = []
            for j, act in enumerate(task.actions):
                if act.name not in v1_tools:
                    raise TaskFileError(path, f"unknown tool {act.name!r}; tau-bench v1 retail tools: "
                                        f"{', '.join(sorted(v1_tools))}", line=act.line, task_id=tid,
                                        field=f"actions[{j}].name")
                call = ToolCall(name=act.name, args=act.kwargs)
                problem = validate_call(v1_tools, call)
                if problem:
                    raise TaskFileError(path, problem, line=act.line, task_id=tid, field=f"actions[{j}].kwargs")
                calls.append(call)
            tasks.append(RawTask(task_id=tid, split=split, prompt=task.instruction, user_id=task.user_id,
                                 actions=tuple(calls), outputs=task.outputs, source=str(path)))
    if not tasks:
        raise TaskFileError(root, "no task list; expected one of "
                            + ", ".join(name for name, _ in V1_TASK_FILES.values()))
    return RetailDataset(snapshot=snapshot, tasks=tuple(_with_derived_ood(tasks)), layout="v1", root=str(root))


def load_dataset(data_dir: str | Path) -> RetailDataset:
    """Load whichever layout ``data_dir`` holds (``db.json``: τ², ``data/users.json``: published v1,
    ``users.json``: this project's JSON store)."""
    root = Path(data_dir)
    if (root / "db.json").is_file():
        return load_tau2(root)
    if (root / V1_DATA_FOLDER / "users.json").is_file():
        return load_v1(root)
    if (root / "users.json").is_file():
        return load_json_store(root)
    raise TaskFileError(root, "not a retail data folder: expected db.json (tau2 layout), data/users.json (tau-bench "
                        "v1 layout: the tau_bench/envs/retail folder) or users.json (this project's JSON store)")
