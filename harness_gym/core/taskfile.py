"""Reading task files (JSON / JSONL) with errors that name the file, the line, the task and the field."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from harness_gym.core.types import SPLITS, Candidate, Document, Task, ToolCall


class TaskFileError(ValueError):
    """A task or data file is malformed. The message names the file, line, task id and field."""

    def __init__(self, path: str | Path, message: str, *, line: int | None = None,
                 task_id: str | None = None, field: str | None = None) -> None:
        where = str(path)
        if line is not None:
            where += f", line {line}"
        if task_id is not None:
            where += f", task {task_id!r}"
        if field is not None:
            where += f", field {field!r}"
        super().__init__(f"{where}: {message}")
        self.path, self.line, self.task_id, self.field = str(path), line, task_id, field


def read_jsonl(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, record)`` for every non-blank line; each record must be a JSON object."""
    path = Path(path)
    if not path.is_file():
        raise TaskFileError(path, "file not found")
    with path.open("rb") as fh:
        for lineno, raw_bytes in enumerate(fh, start=1):
            try:
                raw = raw_bytes.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise TaskFileError(path, f"not UTF-8 text ({exc.reason} at byte {exc.start} of the line)",
                                    line=lineno) from None
            if not raw.strip():
                continue
            try:
                rec = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise TaskFileError(path, f"invalid JSON: {exc.msg} (column {exc.colno})", line=lineno) from None
            if not isinstance(rec, dict):
                raise TaskFileError(path, f"expected a JSON object, got {type(rec).__name__}", line=lineno)
            yield lineno, rec


def write_jsonl(path: str | Path, rows: Iterable[dict[str, Any]]) -> int:
    """Write one JSON object per line (UTF-8, non-ASCII kept), creating parent folders; returns the row count."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            n += 1
    return n


def read_json(path: str | Path) -> Any:
    """Load a whole JSON file; a syntax error names the file and line, and nesting or an integer past the parser's
    limits is a :class:`TaskFileError` too."""
    path = Path(path)
    if not path.is_file():
        raise TaskFileError(path, "file not found")
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise TaskFileError(path, f"not UTF-8 text ({exc.reason} at byte {exc.start})", line=line) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise TaskFileError(path, f"invalid JSON: {exc.msg} (column {exc.colno})", line=exc.lineno) from None
    except (ValueError, RecursionError) as exc:  # an integer or a nesting past the parser's limits
        raise TaskFileError(path, f"not read: {type(exc).__name__}: {str(exc)[:200]}") from None


_TYPE_NAMES = {str: "string", int: "integer", float: "number", bool: "boolean", list: "list", dict: "object"}


def require(rec: dict[str, Any], field: str, typ: type | tuple[type, ...], *, path: str | Path,
            line: int | None = None, task_id: str | None = None, default: Any = ...) -> Any:
    """``rec[field]`` checked against ``typ``; raise :class:`TaskFileError` naming where it is wrong.

    ``int`` is accepted where ``float`` is asked; ``bool`` is never accepted as a number.
    """
    if field not in rec:
        if default is not ...:
            return default
        raise TaskFileError(path, "missing required field", line=line, task_id=task_id, field=field)
    value = rec[field]
    types = typ if isinstance(typ, tuple) else (typ,)
    if float in types and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, bool) and bool not in types:
        ok = False
    else:
        ok = isinstance(value, types)
    if not ok:
        want = " or ".join(_TYPE_NAMES.get(t, t.__name__) for t in types)
        raise TaskFileError(path, f"expected {want}, got {type(value).__name__} {value!r:.60}",
                            line=line, task_id=task_id, field=field)
    return value


def parse_task(rec: dict[str, Any], *, path: str | Path, line: int | None = None, payload: Any = None) -> Task:
    """Build a :class:`~harness_gym.core.types.Task` from the fields every domain's task record shares.

    The record holds ``task_id``, ``split``, ``family``, ``difficulty``, ``prompt``, ``candidates`` (objects
    with ``content``, ``kind``, ``correct``) and optionally ``observations``, ``required_observations``,
    ``relevant_docs`` and ``tool_calls`` (objects with ``name`` and ``args``). Errors name the file, line,
    task id and field (nested fields as ``candidates[2].content``).
    """
    task_id = require(rec, "task_id", str, path=path, line=line)
    where = {"path": path, "line": line, "task_id": task_id}
    split = require(rec, "split", str, **where)
    if split not in SPLITS:
        raise TaskFileError(path, f"unknown split {split!r}; expected one of {SPLITS}", line=line,
                            task_id=task_id, field="split")
    difficulty = require(rec, "difficulty", float, **where)
    if not 0.0 <= difficulty <= 1.0:
        raise TaskFileError(path, f"must lie in [0, 1], got {difficulty}", line=line, task_id=task_id,
                            field="difficulty")

    def items(name: str, typ: type) -> list[Any]:
        values = require(rec, name, list, default=[], **where)
        for i, value in enumerate(values):
            require({f"{name}[{i}]": value}, f"{name}[{i}]", typ, **where)
        return values

    def member(obj: dict[str, Any], label: str, f: str, typ: type, default: Any = ...) -> Any:
        if f not in obj and default is ...:
            raise TaskFileError(path, "missing required field", line=line, task_id=task_id, field=f"{label}.{f}")
        return require({f"{label}.{f}": obj.get(f, default)}, f"{label}.{f}", typ, **where)

    require(rec, "candidates", list, **where)
    candidates = [Candidate(content=member(raw, f"candidates[{i}]", "content", str),
                            kind=member(raw, f"candidates[{i}]", "kind", str),
                            correct=member(raw, f"candidates[{i}]", "correct", bool))
                  for i, raw in enumerate(items("candidates", dict))]
    if not any(c.correct for c in candidates):
        raise TaskFileError(path, "no candidate has correct=true", line=line, task_id=task_id, field="candidates")
    calls = [ToolCall(name=member(raw, f"tool_calls[{i}]", "name", str),
                      args=member(raw, f"tool_calls[{i}]", "args", dict, default={}))
             for i, raw in enumerate(items("tool_calls", dict))]
    observations = items("observations", str)
    required = items("required_observations", int)
    bad = [i for i in required if not 0 <= i < len(observations)]
    if bad:
        raise TaskFileError(path, f"indices {bad} out of range for {len(observations)} observations", line=line,
                            task_id=task_id, field="required_observations")
    return Task(task_id=task_id, split=split, family=require(rec, "family", str, **where),
                difficulty=difficulty, prompt=require(rec, "prompt", str, **where),
                candidates=tuple(candidates), observations=tuple(observations),
                required_observations=frozenset(required), relevant_docs=frozenset(items("relevant_docs", str)),
                tool_calls=tuple(calls), payload=payload, source=(str(path), line))


def read_documents(path: str | Path) -> list[Document]:
    """A retrieval corpus: one ``{"doc_id", "title", "text"}`` object per line; ids must be unique."""
    docs: list[Document] = []
    seen: set[str] = set()
    for line, rec in read_jsonl(path):
        doc = Document(*(require(rec, f, str, path=path, line=line) for f in ("doc_id", "title", "text")))
        if doc.doc_id in seen:
            raise TaskFileError(path, f"duplicate document id {doc.doc_id!r}", line=line, field="doc_id")
        seen.add(doc.doc_id)
        docs.append(doc)
    return docs
