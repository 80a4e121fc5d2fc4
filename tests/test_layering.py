"""The floors of ``harness_gym``: ``core`` is the ground floor and imports nothing else of the package, no domain
imports another, sandbox and workers import no domain and not the env above them, the rooms (``running``,
``budget``, ...) and the subpackages form no import cycle, and nothing imports a program (``python -m`` module). The graph is derived from the source with :mod:`ast` (every import, inside functions too)."""

from __future__ import annotations

import pkgutil

import pytest

import harness_gym.domains
from tests.test_architecture import find_cycle, import_graph

DOMAIN_PACKAGES = tuple(sorted(m.name for m in pkgutil.iter_modules(harness_gym.domains.__path__) if m.ispkg))


def unit(module: str) -> str:
    """The floor a module of ``harness_gym`` belongs to: ``core``, ``workers``, ``sandbox``, ``running``,
    ``budget``, ``domains.<name>`` for a domain package, ``domains`` for the modules the domains share, a top-level
    module's own name (``env``, ``datasets``), ``harness_gym`` for the package's ``__init__``, or, for a program
    (``<room>.__main__``, what ``python -m harness_gym.<room>`` runs), the program itself: a floor above its room
    that nothing imports (test_nothing_imports_a_program)."""
    parts = module.split(".")
    if len(parts) == 1:
        return "harness_gym"
    if parts[-1] == "__main__":
        return ".".join(parts[1:])
    if parts[1] == "domains" and len(parts) > 2 and parts[2] in DOMAIN_PACKAGES:
        return f"domains.{parts[2]}"
    return parts[1]


def package_graph(modules: dict[str, set[str]]) -> dict[str, set[str]]:
    """The unit-level graph of a module-level import graph restricted to ``harness_gym``: unit -> the other units
    its modules import."""
    graph: dict[str, set[str]] = {}
    for module, targets in modules.items():
        if module.split(".")[0] != "harness_gym":
            continue
        graph.setdefault(unit(module), set())
        graph[unit(module)] |= {unit(t) for t in targets if t.split(".")[0] == "harness_gym"} - {unit(module)}
    for targets in list(graph.values()):
        for target in targets:
            graph.setdefault(target, set())
    return graph


@pytest.fixture(scope="module")
def modules() -> dict[str, set[str]]:
    return {m: t for m, t in import_graph().items() if m.split(".")[0] == "harness_gym"}


def imports_of(modules: dict[str, set[str]], floor: str) -> dict[str, list[str]]:
    """Module of ``floor`` -> the ``harness_gym`` modules outside that floor it imports."""
    return {m: sorted(t for t in targets if unit(t) != floor)
            for m, targets in modules.items() if unit(m) == floor}


def test_the_domain_packages_are_found_from_the_package():
    assert {"code", "data", "dbbench", "knowledge", "multitool", "plan", "research_qa", "tau_retail"} <= set(
        DOMAIN_PACKAGES)
    assert unit("harness_gym.domains.dbbench.tools") == "domains.dbbench"
    assert unit("harness_gym.domains.tool_table") == "domains" and unit("harness_gym.env") == "env"
    assert unit("harness_gym.running.parallel") == "running" and unit("harness_gym.budget.rule") == "budget"
    assert unit("harness_gym.budget.__main__") == "budget.__main__"


def test_core_imports_only_core(modules):
    outside = imports_of(modules, "core")
    assert outside and "harness_gym.core.domain" in outside  # the floor is not empty
    assert not {m: t for m, t in outside.items() if t}


def test_no_domain_imports_another_domain(modules):
    offending = {}
    for name in DOMAIN_PACKAGES:
        for module, targets in imports_of(modules, f"domains.{name}").items():
            other = [t for t in targets if unit(t).startswith("domains.")]
            if other:
                offending[module] = other
    assert not offending
    # and the modules the domains share import no domain
    assert not {m: [t for t in targets if unit(t).startswith("domains.")]
                for m, targets in imports_of(modules, "domains").items()
                if any(unit(t).startswith("domains.") for t in targets)}


@pytest.mark.parametrize("floor", ["sandbox", "workers"])
def test_sandbox_and_workers_import_no_domain_and_not_the_env(modules, floor):
    outside = imports_of(modules, floor)
    assert outside
    reached = {unit(t) for targets in outside.values() for t in targets}
    assert not {u for u in reached if u == "domains" or u.startswith("domains.") or u in ("env", "harness_gym")}


def test_the_subpackages_form_no_cycle(modules):
    graph = package_graph(modules)
    assert {"core", "workers", "sandbox", "env", "domains", "domains.code", "running", "budget",
            "budget.__main__"} <= set(graph)
    assert "core" in graph["env"] and "workers" in graph["env"] and "sandbox" in graph["env"]
    # the budget rule sits below the env and the running room above it; the budget command is a program on top
    assert "budget" in graph["env"] and "env" in graph["running"] and "harness_gym" in graph["budget.__main__"]
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle between floors: " + " -> ".join(cycle)


def test_nothing_imports_a_program(modules):
    programs = {m for m in modules if m.endswith(".__main__")}
    assert "harness_gym.budget.__main__" in programs
    assert not {m: sorted(targets & programs) for m, targets in modules.items() if targets & programs}


def test_a_two_floor_cycle_is_found_even_when_no_module_cycle_exists():
    """The shape this layout had before: ``core.domain`` imported ``sandbox.base`` while ``sandbox.cache``
    imported ``core.lru``. No module imports itself through the chain, yet the floors form a loop."""
    modules = {"harness_gym.core.domain": {"harness_gym.sandbox.base"}, "harness_gym.core.lru": set(),
               "harness_gym.sandbox.base": set(), "harness_gym.sandbox.cache": {"harness_gym.core.lru"}}
    assert find_cycle(modules | {"harness_gym.sandbox.base": set()}) is None
    assert find_cycle(package_graph(modules)) == ["core", "sandbox", "core"]
