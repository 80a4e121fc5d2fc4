"""Helpers for the malformed-task-file tests: copy a domain's shipped files, corrupt one line, check the error."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from harness_gym.core.paths import data_path
from harness_gym.core.taskfile import TaskFileError


class RawEdit(NamedTuple):
    """A change to a line's text rather than to its JSON record (e.g. to break the JSON in a particular way)."""

    edit: Callable[[str], str]


Change = Callable[[dict[str, Any]], Any] | RawEdit | None


def copy_data(domain: str, names: Sequence[str], dest: Path) -> Path:
    """Copy ``envs_data/<domain>/<name>`` for every name into ``dest``."""
    for name in names:
        shutil.copy(data_path(domain, name), dest / name)
    return dest


def corrupt_line(path: Path, lineno: int, change: Change) -> None:
    """Apply ``change`` to line ``lineno``: a function edits its JSON record, a :class:`RawEdit` its text,
    and ``None`` cuts the line short (invalid JSON)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    if change is None:
        lines[lineno - 1] = lines[lineno - 1][:-7]
    elif isinstance(change, RawEdit):
        lines[lineno - 1] = change.edit(lines[lineno - 1])
    else:
        rec = json.loads(lines[lineno - 1])
        change(rec)
        lines[lineno - 1] = json.dumps(rec)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def assert_names_location(err: TaskFileError, file: str, lineno: int, field: str | None) -> None:
    """The message names the file, the line and the field (``None``: a JSON syntax error)."""
    msg = str(err)
    assert file in msg and f"line {lineno}" in msg, msg
    assert (field is None and "invalid JSON" in msg) or f"field {field!r}" in msg, msg


def assert_rejects_corrupt_line(load: Callable[[Path], object], domain: str, names: Sequence[str], dest: Path,
                                file: str, lineno: int, change: Change, field: str | None) -> None:
    """Copy the domain's files into ``dest``, corrupt ``file`` at ``lineno``: ``load(dest)`` must raise a
    :class:`TaskFileError` that names the file, the line and the field."""
    root = copy_data(domain, names, dest)
    corrupt_line(root / file, lineno, change)
    with pytest.raises(TaskFileError) as err:
        load(root)
    assert_names_location(err.value, file, lineno, field)
