"""The knowledge domain's tools: BM25 search over the sources, one source's full text, and the dated history
of one field of one entity.

All three stand for the operator's own document store (a search endpoint, a document endpoint and a field-history
endpoint) behind an API gateway: one ``api_call:internal`` per call (Amazon API Gateway's HTTP API price; the
store's own compute is not counted).
"""

from __future__ import annotations

import difflib

import numpy as np

from harness_gym.core.retrieval import BM25Index
from harness_gym.core.types import Document, ToolResult
from harness_gym.domains.knowledge.datamodel import SourceIndex
from harness_gym.domains.tool_table import ToolTable

TOOLS = ToolTable()
"""The knowledge tools; each takes the :class:`Library` of the domain before its call arguments."""
DOCUMENT_STORE_CALL = {"api_call:internal": 1}
"""One request to the operator's document store behind an API gateway."""


class Library:
    """What the tools read: the sources, and the corpus with its BM25 index.

    :param sources: the domain's sources
    :param corpus: the RETRIEVE documents (one per source)
    :param index: the BM25 index over ``corpus``
    """

    def __init__(self, sources: SourceIndex, corpus: list[Document], index: BM25Index) -> None:
        self.sources, self.corpus, self.index = sources, corpus, index


@TOOLS.tool("BM25 search over the source documents; returns doc ids, dates and titles.", {
    "type": "object", "additionalProperties": False, "required": ["query"],
    "properties": {"query": {"type": "string", "minLength": 1},
                   "k": {"type": "integer", "minimum": 1, "maximum": 10}}}, bills=DOCUMENT_STORE_CALL)
def search(library: Library, query: str, k: int = 5) -> ToolResult:
    """The ``k`` best sources for ``query`` (those with a positive score). Stands for the document store's search
    endpoint (an internal service): one ``api_call:internal``.

    :param library: the domain's sources and index
    :param query: the search text
    :param k: how many hits at most
    """
    order, scores = library.index.ranked(query)
    positive = int(np.count_nonzero(scores > 0))  # a prefix: the scores descend
    hits = list(zip(order[:positive].tolist(), scores[:positive].tolist()))[:k]
    if not hits:
        return ToolResult(ok=False, output="", error=f"no source matches {query!r}")
    return ToolResult(ok=True, output="\n".join(
        f"{library.corpus[i].doc_id} {library.corpus[i].title}" for i, _ in hits))


@TOOLS.tool("The full text, date and source kind of one source document.", {
    "type": "object", "additionalProperties": False, "required": ["doc_id"],
    "properties": {"doc_id": {"type": "string", "pattern": "^kn-s[0-9]{4}$"}}}, bills=DOCUMENT_STORE_CALL)
def lookup_source(library: Library, doc_id: str) -> ToolResult:
    """One source with its date, kind and authority. Stands for the document store's get-document endpoint: one
    ``api_call:internal``.

    :param library: the domain's sources and index
    :param doc_id: the source's id
    """
    src = library.sources.sources.get(doc_id)
    if src is None:
        return ToolResult(ok=False, output="", error=f"no source with id {doc_id!r}")
    status = "authoritative" if src.authoritative else "unofficial"
    return ToolResult(ok=True, output=f"[{src.doc_id}] {src.date} {src.source_kind} ({status}): {src.text}")


@TOOLS.tool("Every dated statement of one field of one entity across the sources, oldest first, with the source "
            "kind and whether it is authoritative.", {
                "type": "object", "additionalProperties": False, "required": ["entity", "field"],
                "properties": {"entity": {"type": "string", "minLength": 1},
                               "field": {"type": "string", "minLength": 1}}}, bills=DOCUMENT_STORE_CALL)
def get_field_history(library: Library, entity: str, field: str) -> ToolResult:
    """Every statement of ``field`` of ``entity``, oldest first; an unknown entity suggests near names. Stands for a
    query of the document store's statement index: one ``api_call:internal``.

    :param library: the domain's sources and index
    :param entity: the entity's name
    :param field: the field's name
    """
    sources = library.sources
    fields = sources.entity_fields.get(entity)
    if fields is None:
        near = difflib.get_close_matches(entity, list(sources.entity_fields), n=3)
        return ToolResult(ok=False, output="", error=f"unknown entity {entity!r}"
                          + (f"; did you mean {', '.join(map(repr, near))}?" if near else ""))
    if field not in fields:
        return ToolResult(ok=False, output="", error=f"{entity} has no field {field!r}; fields: "
                          + ", ".join(sorted(fields)))
    return ToolResult(ok=True, output="\n".join(
        f"{s.date} {s.doc_id} ({s.source_kind}, {'authoritative' if s.authoritative else 'unofficial'}): "
        f"{s.statements[field]!r}" for s in sources.history(entity, field)))
