"""The hand-written data files of the domains (task templates, notes, policy texts), kept in each domain's
``sources/`` folder next to its code and read by its generator or its loader.

JSONL notes use the corpus format of :func:`~harness_gym.core.taskfile.read_documents`; Markdown documents
are read by :func:`read_markdown_documents`.
"""

from __future__ import annotations

from pathlib import Path

from harness_gym.core.taskfile import TaskFileError
from harness_gym.core.types import Document

_DOMAINS = Path(__file__).resolve().parent


def source_path(domain: str, name: str) -> Path:
    """The path of the file ``name`` in the ``sources/`` folder of ``domain``.

    :param domain: the domain's package name (``code``, ``data``, ``dbbench``, ``tau_retail``)
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
