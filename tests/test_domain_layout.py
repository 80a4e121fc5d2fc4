"""The shared domain layout: every domain package (found with ``pkgutil``, never a hand-kept list) has one file
per role, its data, profile and prompt file; tools are registered once by a decorator; the hand-written sources
the generators and loaders read."""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import re
from pathlib import Path

import pytest

import harness_gym
import harness_gym.domains
from harness_gym.core.domain import Domain
from harness_gym.core.paths import data_root
from harness_gym.core.taskfile import TaskFileError
from harness_gym.core.types import ToolResult
from harness_gym.domains.code.problems import read_problems
from harness_gym.domains.source_files import fill_placeholders, read_markdown_documents, read_vocabulary, source_path
from harness_gym.domains.tool_table import ToolError, ToolTable, object_schema

DOMAINS = tuple(sorted(m.name for m in pkgutil.iter_modules(harness_gym.domains.__path__) if m.ispkg))
DOMAINS_DIR = Path(harness_gym.domains.__file__).resolve().parent
ROLE_MODULES = ("__init__", "domain", "env", "tools", "grader", "generate", "mutations")
"""The modules every domain has (docs/extending.md, "A new domain"); ``checker`` is one too, unless CHECK is the
worker's self-check."""


def domain_class(name: str) -> type[Domain]:
    """The :class:`Domain` subclass defined in the domain's ``domain.py``."""
    module = importlib.import_module(f"harness_gym.domains.{name}.domain")
    found = [c for c in vars(module).values()
             if inspect.isclass(c) and issubclass(c, Domain) and c.__module__ == module.__name__]
    assert len(found) == 1, (name, found)
    return found[0]


def layout_problems(domain_dir: Path, data: Path, has_checker: bool) -> list[str]:
    """What the domain in ``domain_dir`` lacks of the recipe's files (its data under ``data``).

    :param has_checker: whether its Domain runs a checker (then ``checker.py`` holds it; without one, CHECK
        is the worker's self-check and there is no ``checker.py``)
    """
    name = domain_dir.name
    problems = [f"{name}/{m}.py is missing" for m in ROLE_MODULES if not (domain_dir / f"{m}.py").is_file()]
    if has_checker != (domain_dir / "checker.py").is_file():
        problems.append(f"{name}/checker.py " + ("is missing" if has_checker else "exists but check() is not "
                                                 "overridden"))
    if not (domain_dir / "sources").is_dir() or not any((domain_dir / "sources").iterdir()):
        problems.append(f"{name}/sources/ is missing or empty")
    problems += [f"envs_data/{rel} is missing" for rel in (f"prompts/{name}.json", f"profiles/{name}.json")
                 if not (data / rel).is_file()]
    if not (data / name).is_dir() or not any((data / name).iterdir()):
        problems.append(f"envs_data/{name}/ is missing or empty")
    return problems


def test_the_domains_are_found_from_the_package():
    assert {"code", "data", "dbbench", "knowledge", "multitool", "plan", "research_qa", "tau_retail"} <= set(DOMAINS)


@pytest.mark.parametrize("domain", DOMAINS)
def test_every_domain_has_every_role_file_its_data_profile_and_prompts(domain):
    cls = domain_class(domain)
    assert cls.name == domain  # the profile, the prompts and the data folder are named after it
    assert layout_problems(DOMAINS_DIR / domain, data_root(), cls.check is not Domain.check) == []
    assert isinstance(importlib.import_module(f"harness_gym.domains.{domain}.tools").TOOLS, ToolTable)
    generate = importlib.import_module(f"harness_gym.domains.{domain}.generate")
    assert callable(generate.generate) and "generator_main(" in inspect.getsource(generate.main)
    entry_points = [e for e in harness_gym._ENTRY_POINTS.values() if e.startswith(f"harness_gym.domains.{domain}.env:")]
    assert entry_points, f"{domain} is not registered in harness_gym._ENTRY_POINTS"


def test_the_layout_check_names_each_missing_file(tmp_path):
    domain_dir, data = tmp_path / "fresh", tmp_path / "envs_data"
    domain_dir.mkdir()
    for module in ("__init__", "domain", "env", "tools", "grader", "generate", "checker"):
        (domain_dir / f"{module}.py").write_text('"""x"""\n')
    (data / "profiles").mkdir(parents=True)
    (data / "profiles" / "fresh.json").write_text("{}")
    assert layout_problems(domain_dir, data, has_checker=True) == [
        "fresh/mutations.py is missing", "fresh/sources/ is missing or empty", "envs_data/prompts/fresh.json is missing",
        "envs_data/fresh/ is missing or empty"]
    assert "fresh/checker.py exists but check() is not overridden" in layout_problems(domain_dir, data, False)


def test_no_domain_declares_a_tool_without_the_tool_table():
    raw = {str(p.relative_to(DOMAINS_DIR)) for p in DOMAINS_DIR.rglob("*.py")
           if p.name != "tool_table.py" and "ToolSpec(" in p.read_text(encoding="utf-8")}
    assert not raw


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


def test_table_call_always_returns_a_tool_result():
    """The one tool rule: a value is rendered, a ToolResult passes, a ToolError or an error hostile arguments provoke
    is an error result; a failure of the harness itself (RuntimeError, OSError) propagates."""
    table = ToolTable(render=lambda value: f"<{value}>")

    @table.tool("Look a key up.", object_schema({"key": {"type": "string"}}))
    def look(state, key):
        if key == "refuse":
            raise ToolError(f"no entry {key!r}")
        if key == "lost":
            raise OSError("database connection lost")
        return ToolResult(ok=True, output="own", ran_code=True) if key == "own" else state[key]

    state = {"a": 1}
    assert table.call("look", state, key="a") == ToolResult(ok=True, output="<1>")
    assert table.call("look", state, key="own") == ToolResult(ok=True, output="own", ran_code=True)
    assert table.call("look", state, key="refuse") == ToolResult(ok=False, output="", error="no entry 'refuse'")
    assert table.call("look", state, key="zz") == ToolResult(ok=False, output="", error="KeyError: 'zz'")
    with pytest.raises(OSError, match="connection lost"):
        table.call("look", state, key="lost")


@pytest.mark.parametrize("domain", DOMAINS)
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


def test_word_lists_and_placeholders(tmp_path):
    path = tmp_path / "words.json"
    path.write_text(json.dumps({"rooms": ["Oak", "Elm"], "people": ["Ana"]}), encoding="utf-8")
    assert read_vocabulary(path, ("people", "rooms")) == {"rooms": ("Oak", "Elm"), "people": ("Ana",)}
    with pytest.raises(TaskFileError, match=r"missing \['titles'\], unknown \['rooms'\]"):
        read_vocabulary(path, ("people", "titles"))
    for bad, what in (({"rooms": []}, "non-empty list"), ({"rooms": ["Oak", "Oak"]}, r"repeated entries \['Oak'\]"),
                      ({"rooms": ["Oak", 3]}, "non-empty strings")):
        path.write_text(json.dumps(bad), encoding="utf-8")
        with pytest.raises(TaskFileError, match=f"words.json, field 'rooms': .*{what}"):
            read_vocabulary(path, ("rooms",))
    text = 'covers {start} to {end}; a plan is {"plan": [...]}'
    assert fill_placeholders(text, {"start": "2024-01-01", "end": "2024-06-30"}) == (
        'covers 2024-01-01 to 2024-06-30; a plan is {"plan": [...]}')


def test_a_bad_source_file_names_the_file_and_the_field(tmp_path):
    from harness_gym.domains.research_qa.generate import QUESTIONS_FILE, read_templates

    raw = json.loads(QUESTIONS_FILE.read_text(encoding="utf-8"))
    raw["out_of_distribution"][1]["path"] = ["held_in", "in_regoin"]
    path = tmp_path / "questions.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    with pytest.raises(TaskFileError, match=r"questions.json, task 'out_of_distribution\[1\]', field 'path'.*"
                                            r"'in_regoin'"):
        read_templates(path)
