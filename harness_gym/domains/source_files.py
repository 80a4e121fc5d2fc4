"""The hand-written data files of the domains (task templates, notes, policy texts), kept in each domain's
``sources/`` folder next to its code and read by its generator or its loader.

JSONL notes use the corpus format of :func:`~harness_gym.core.taskfile.read_documents`; Markdown documents
are read by :func:`read_markdown_documents`; word lists (names, rooms, titles) by :func:`read_vocabulary`;
other JSON inputs by :func:`~harness_gym.core.taskfile.read_json` with
:func:`~harness_gym.core.taskfile.require` on every field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from harness_gym.core.taskfile import TaskFileError, read_json
from harness_gym.core.types import Document

_DOMAINS = Path(__file__).resolve().parent


def source_path(domain: str, name: str) -> Path:
    """The path of the file ``name`` in the ``sources/`` folder of ``domain``.

    :param domain: the domain's package name (``code``, ``plan``, ...)
    :param name: the file name inside that folder
    """
    return _DOMAINS / domain / "sources" / name


def read_markdown_documents(path: str | Path) -> list[Document]:
    """The documents of a Markdown file: each ``## doc-id: Title`` section is one document whose text is the
    section's paragraph lines joined by spaces. Text before the first section (a ``#`` title, an introduction)
    is not a document.

    :param path: the Markdown file
    """
    path = Path(path)
    if not path.is_file():
        raise TaskFileError(path, "file not found")
    docs: list[Document] = []
    heading: tuple[int, str, str] | None = None
    lines: list[str] = []

    def close() -> None:
        if heading is None:
            return
        line, doc_id, title = heading
        if not lines:
            raise TaskFileError(path, f"section {doc_id!r} has no text", line=line)
        docs.append(Document(doc_id, title, " ".join(lines)))

    seen: set[str] = set()
    for lineno, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        text = raw.strip()
        if text.startswith("## "):
            close()
            doc_id, sep, title = (part.strip() for part in text[3:].partition(": "))
            if not sep or not doc_id or not title:
                raise TaskFileError(path, f"a section heading must read '## doc-id: Title', got {text!r}",
                                    line=lineno)
            if doc_id in seen:
                raise TaskFileError(path, f"duplicate document id {doc_id!r}", line=lineno)
            seen.add(doc_id)
            heading, lines = (lineno, doc_id, title), []
        elif text and heading is not None:
            lines.append(text)
    close()
    if not docs:
        raise TaskFileError(path, "no '## doc-id: Title' section")
    return docs


def read_vocabulary(path: str | Path, keys: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """The word lists of a JSON object whose every value is a non-empty list of distinct strings (the names,
    rooms or titles a generator draws from), in file order.

    :param path: the JSON file
    :param keys: the lists the file holds, no more and no fewer
    """
    raw = read_json(path)
    if not isinstance(raw, dict):
        raise TaskFileError(path, f"expected a JSON object of word lists, got {type(raw).__name__}")
    if set(raw) != set(keys):
        missing, unknown = sorted(set(keys) - set(raw)), sorted(set(raw) - set(keys))
        raise TaskFileError(path, f"expected the lists {list(keys)}; missing {missing}, unknown {unknown}")
    words: dict[str, tuple[str, ...]] = {}
    for key, values in raw.items():
        if not isinstance(values, list) or not values or not all(isinstance(v, str) and v for v in values):
            raise TaskFileError(path, "expected a non-empty list of non-empty strings", field=key)
        if len(set(values)) != len(values):
            raise TaskFileError(path, f"repeated entries {sorted({v for v in values if values.count(v) > 1})}",
                                field=key)
        words[key] = tuple(values)
    return words


def fill_placeholders(text: str, values: Mapping[str, str]) -> str:
    """``text`` with every ``{name}`` of ``values`` replaced by its value; other braces stay as they are (the
    source texts quote JSON, so :meth:`str.format` would not do).

    :param text: a hand-written text with placeholders
    :param values: placeholder name -> its text
    """
    for name, value in values.items():
        text = text.replace("{" + name + "}", value)
    return text
