"""The shared domain layout: tools registered once by a decorator, the hand-written sources the generators and
loaders read, and the same module names in every domain."""

from __future__ import annotations

import importlib
import inspect
import json
import re
from pathlib import Path

import pytest

from harness_gym.core.taskfile import TaskFileError
from harness_gym.domains.code.problems import read_problems
from harness_gym.domains.sources import read_markdown_documents, source_path
from harness_gym.domains.tooling import ToolTable, object_schema

DOMAINS = ("code", "data", "dbbench", "knowledge", "multitool", "plan", "research_qa", "tau_retail")
DOMAINS_DIR = Path(__file__).resolve().parents[1] / "harness_gym" / "domains"
TOOL_MODULES = ("code", "data", "knowledge", "multitool", "plan", "research_qa", "tau_retail")
"""Domains whose tools live in ``tools.py`` (DB-Bench's one tool is still declared in its ``domain.py``)."""


def test_decorator_registers_spec_and_write_flag_in_order():
    table = ToolTable()

    @table.tool("Read a thing.", object_schema({"key": {"type": "string"}}))
    def read_thing(state, key):
        return state[key]

    @table.tool("Change a thing.", object_schema({"key": {"type": "string"}}), writes=True, name="change")
    def _change(state, key):
        state[key] = "changed"
        return "ok"

    assert list(table) == ["read_thing", "change"] and list(table.specs) == ["read_thing", "change"]
    assert table.write_tools == frozenset({"change"})
    assert table.specs["read_thing"].parameters == {"type": "object", "properties": {"key": {"type": "string"}},
                                                    "required": ["key"], "additionalProperties": False}
    assert not table.specs["read_thing"].writes and table.specs["change"].writes
    state = {"a": "b"}
    assert table.implementation("read_thing")(state, key="a") == "b"
    assert table.implementation("change")(state, key="a") == "ok" and state["a"] == "changed"
    assert read_thing(state, "a") == "changed"  # the decorator returns the function unchanged
    with pytest.raises(ValueError, match="'change' is registered twice"):
        table.tool("Again.", name="change")(_change)
    with pytest.raises(KeyError, match="unknown tool 'nope'; known: read_thing, change"):
        table.implementation("nope")


@pytest.mark.parametrize("domain", TOOL_MODULES)
def test_every_tool_function_takes_its_schema_arguments(domain):
    """Each registered function accepts every schema property as a keyword, and every required property is a
    parameter without a default (so a schema-valid call can never hit a missing or unknown argument)."""
    tools = importlib.import_module(f"harness_gym.domains.{domain}.tools").TOOLS
    assert len(tools) > 0
    for name, tool in tools.items():
        params = inspect.signature(tool.run).parameters
        props = tool.spec.parameters.get("properties", {})
        assert set(props) <= set(params), (domain, name, sorted(set(props) - set(params)))
        for prop in tool.spec.parameters.get("required", []):
            assert params[prop].default is inspect.Parameter.empty, (domain, name, prop)
        context = [p for p in params if p not in props]
        assert all(params[p].default is inspect.Parameter.empty for p in context), (domain, name, context)


def test_write_tools_are_derived_from_the_registration():
    from harness_gym.domains.tau_retail import tools

    writes = {n for n, t in tools.TOOLS.items() if t.spec.writes}
    assert writes == tools.WRITE_TOOLS and len(writes) == 7
    assert "transfer_to_human_agents" in tools.PLAN_TOOLS and "transfer_to_human_agents" not in writes
    assert set(tools.TOOLS) - tools.PLAN_TOOLS == tools.EVIDENCE_TOOLS
    assert tools.TOOLS.specs == tools.TOOL_SPECS


@pytest.mark.parametrize("domain", DOMAINS)
def test_every_domain_has_the_same_role_modules(domain):
    names = {p.stem for p in (DOMAINS_DIR / domain).glob("*.py")}
    assert {"domain", "env", "generate", "grader"} <= names, sorted(names)
    # research_qa has no structured checker (CHECK is the worker's self-check); DB-Bench's checker and tool
    # are in domain.py.
    if domain not in ("research_qa", "dbbench"):
        assert {"checker", "tools"} <= names, sorted(names)


def test_no_domain_module_is_over_700_lines():
    long = {str(p.relative_to(DOMAINS_DIR)): n for p in DOMAINS_DIR.rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 700}
    assert not long


def test_markdown_documents(tmp_path):
    docs = read_markdown_documents(source_path("tau_retail", "policy.md"))
    assert [d.doc_id for d in docs][:2] == ["policy-identity", "policy-information"] and len(docs) == 10
    assert docs[0].title == "Identify the customer" and docs[0].text.startswith("Before any change")
    path = tmp_path / "notes.md"
    path.write_text("# Notes\n\nintro\n\n## a: First\n\nline one\nline two\n\n## b: Second\n\ntext\n",
                    encoding="utf-8")
    assert [(d.doc_id, d.title, d.text) for d in read_markdown_documents(path)] == [
        ("a", "First", "line one line two"), ("b", "Second", "text")]
    for body, line, what in (("## a First\n\ntext\n", 1, "must read '## doc-id: Title'"),
                             ("## a: First\n\ntext\n\n## a: Again\n\ntext\n", 5, "duplicate document id 'a'"),
                             ("# Notes\n\n## a: First\n\n## b: Second\n\ntext\n", 3, "section 'a' has no text")):
        path.write_text(body, encoding="utf-8")
        with pytest.raises(TaskFileError, match=f"notes.md, line {line}: .*{what}"):
            read_markdown_documents(path)
    path.write_text("# Only a title\n", encoding="utf-8")
    with pytest.raises(TaskFileError, match="no '## doc-id: Title' section"):
        read_markdown_documents(path)


def test_problem_file_errors_name_the_field(tmp_path):
    raw = json.loads(source_path("code", "problems.json").read_text(encoding="utf-8"))
    assert len(read_problems()) == len(raw)
    path = tmp_path / "problems.json"
    for edit, field in ((lambda p: p[2]["ref"].__setitem__(1, 7), "problems[2].ref[1]"),
                        (lambda p: p[0].pop("sig"), "problems[0].sig"),
                        (lambda p: p[1]["variants"][0].__setitem__("hidden", "x"), "problems[1].variants[0].hidden"),
                        (lambda p: p[3].__setitem__("kind", "module"), "problems[3].kind"),
                        (lambda p: p[4].__setitem__("variants", []), "problems[4].variants")):
        broken = json.loads(json.dumps(raw))
        edit(broken)
        path.write_text(json.dumps(broken), encoding="utf-8")
        with pytest.raises(TaskFileError, match=re.escape(f"problems.json, field {field!r}")):
            read_problems(path)
