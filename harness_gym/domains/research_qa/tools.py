"""The research-QA tools: an entity's infobox and one relation of an entity, read from the encyclopedia's
world graph.

Both stand for a public knowledge-graph API (Wikidata's REST API for an item's statements, its query service for
one property of an item), which charges nothing: every call bills one ``api_call:free``.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from harness_gym.core.types import ToolResult
from harness_gym.domains.tool_table import ToolTable

TOOLS = ToolTable()
"""The research-QA tools; each takes the :class:`Encyclopedia` before its call arguments."""


class Encyclopedia:
    """The world graph the tools read: every entity's relations and attributes, and its kind.

    :param facts: entity name -> relation or attribute -> value
    :param kinds: entity name -> kind (person, organisation, place, ...)
    """

    def __init__(self, facts: Mapping[str, Mapping[str, Any]], kinds: Mapping[str, str]) -> None:
        self.facts, self.kinds = facts, kinds

    def unknown(self, name: str) -> ToolResult:
        """The error for a name with no entry, suggesting close names."""
        near = difflib.get_close_matches(name, list(self.facts), n=3)
        hint = f"; did you mean {', '.join(map(repr, near))}?" if near else ""
        return ToolResult(ok=False, output="", error=f"no encyclopedia entry named {name!r}{hint}")


FREE_KG_CALL = {"api_call:free": 1}
"""One request to a public knowledge-graph API: free (Wikidata's APIs charge nothing)."""


@TOOLS.tool("The encyclopedia's infobox for an entity: its kind, relations and attributes.", {
    "type": "object", "additionalProperties": False, "required": ["name"],
    "properties": {"name": {"type": "string", "minLength": 1}}}, bills=FREE_KG_CALL)
def lookup_entity(encyclopedia: Encyclopedia, name: str) -> ToolResult:
    """Every relation and attribute of the entity ``name``. Stands for a knowledge graph's item endpoint
    (Wikidata's REST API ``/entities/items/{id}``): free.

    :param encyclopedia: the world graph
    :param name: the entity's exact name
    """
    facts = encyclopedia.facts.get(name)
    if facts is None:
        return encyclopedia.unknown(name)
    body = "; ".join(f"{k}: {v}" for k, v in facts.items())
    return ToolResult(ok=True, output=f"{name} ({encyclopedia.kinds[name]}): {body}")


@TOOLS.tool("The object of one relation (or the value of one attribute) of an entity in the world graph, e.g. "
            "query_relation('Acme Labs', 'founded_by').", {
                "type": "object", "additionalProperties": False, "required": ["entity", "relation"],
                "properties": {"entity": {"type": "string", "minLength": 1},
                               "relation": {"type": "string", "pattern": "^[a-z_]+$"}}}, bills=FREE_KG_CALL)
def query_relation(encyclopedia: Encyclopedia, entity: str, relation: str) -> ToolResult:
    """The value of ``relation`` of ``entity``. Stands for one property of one item from a knowledge graph's
    query service (a one-triple SPARQL query on Wikidata's query service): free.

    :param encyclopedia: the world graph
    :param entity: the entity's exact name
    :param relation: a relation or attribute name
    """
    facts = encyclopedia.facts.get(entity)
    if facts is None:
        return encyclopedia.unknown(entity)
    if relation not in facts:
        return ToolResult(ok=False, output="", error=f"{entity} ({encyclopedia.kinds[entity]}) has no {relation!r}; "
                          f"recorded: {', '.join(facts)}")
    return ToolResult(ok=True, output=f"{entity} {relation} {facts[relation]}")
