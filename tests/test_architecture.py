"""The layout's rules: ``harness_gym`` works without ``harness_gym_baselines``, no import circles, the rooms of
``harness_gym_baselines`` import only downwards, a trainer needs the registry shape, ``import harness_gym``
and ``harness-gym --help`` stay light, and no module is over 700 lines. (A trainer added by following
docs/extending.md: test_trainer_recipe.py.)"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness_gym_baselines.common import trainer_registry

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("harness_gym", "harness_gym_baselines")
HEAVY = ("torch", "stable_baselines3", "sb3_contrib", "minari", "matplotlib", "tensorboard", "h5py", "pandas",
         "sqlglot")

BLOCK_BASELINES = """
import importlib.abc, sys

class BlockBaselines(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "harness_gym_baselines" or name.startswith("harness_gym_baselines."):
            raise ImportError(f"harness_gym imported {name}")
        return None

sys.meta_path.insert(0, BlockBaselines())
"""


def run_python(code: str) -> str:
    """Run ``code`` in a fresh interpreter with this checkout first on the path; its stdout."""
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(Path.home())})
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


# ----- (a) the env library without harness_gym_baselines--------------------------------------------------------------
def test_every_env_makes_resets_and_steps_with_baselines_unimportable():
    out = run_python(BLOCK_BASELINES + """
import importlib, json, pkgutil
import gymnasium as gym
import numpy as np
import harness_gym
from harness_gym.running.rollout import episode_seed, play_episode

class FirstApplicable:
    name = "first-applicable"
    def reset(self, env, seed=None):
        pass
    def act(self, obs, env):
        return int(np.flatnonzero(env.unwrapped.action_masks())[0])

modules = [m.name for m in pkgutil.walk_packages(harness_gym.__path__, "harness_gym.")]
for name in modules:
    importlib.import_module(name)
steps = {}
for env_id in harness_gym.ENV_IDS:
    env = gym.make(env_id)
    episode = play_episode(env, FirstApplicable(), seed=episode_seed(0, 1), split="test")
    env.close()
    steps[env_id] = [len(episode.actions), episode.terminations[-1] or episode.truncations[-1]]
print(json.dumps({"modules": len(modules), "steps": steps,
                  "harness_gym_baselines": [m for m in sys.modules if m.split(".")[0] == "harness_gym_baselines"]}))
""")
    result = json.loads(out.splitlines()[-1])
    import harness_gym

    assert set(result["steps"]) == set(harness_gym.ENV_IDS)
    assert all(n >= 1 and ended for n, ended in result["steps"].values()), result["steps"]
    assert result["modules"] > 20 and result["harness_gym_baselines"] == []


def test_the_blocker_would_catch_an_import_of_baselines():
    proc = subprocess.run([sys.executable, "-c", BLOCK_BASELINES + "import harness_gym_baselines.policies.registry"], cwd=ROOT,
                          capture_output=True, text=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert proc.returncode != 0 and "harness_gym imported harness_gym_baselines" in proc.stderr


# ----- (b) no import circle ----------------------------------------------------------------------------------
def project_modules() -> dict[str, Path]:
    """Every module of the project packages: dotted name -> file."""
    out = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def is_main_guard(node: ast.stmt) -> bool:
    """Whether ``node`` is ``if __name__ == "__main__":``."""
    test = node.test if isinstance(node, ast.If) else None
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__"
            and len(test.comparators) == 1 and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value == "__main__")


def imported_modules(name: str, path: Path, modules: dict[str, Path], *, main_block: bool = False) -> set[str]:
    """The project modules that ``name`` imports, anywhere in the file (inside functions, ``if`` blocks and
    ``TYPE_CHECKING`` too); an ``if __name__ == "__main__":`` block only with ``main_block`` (it runs only when the
    file is executed as a program, never on import, but a program that runs the layer above it still ties the
    two together). ``from pkg import x`` counts as importing ``pkg.x`` when that is a module, else ``pkg``."""
    is_package = path.name == "__init__.py"
    targets: set[str] = set()
    tree = ast.parse(path.read_text(), filename=str(path))
    if not main_block:
        tree.body = [node for node in tree.body if not is_main_guard(node)]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[:len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            for alias in node.names:
                sub = f"{module}.{alias.name}"
                targets.add(sub if sub in modules else module)
    return {t for t in targets if t in modules and t != name}


def import_graph(*, main_block: bool = False, package: str = "") -> dict[str, set[str]]:
    """The import graph of the project modules (of ``package`` alone when given): module -> the modules it imports.

    :param main_block: count the imports of ``if __name__ == "__main__":`` blocks too
    :param package: only the modules of this top-level package, and their imports of each other
    """
    every = project_modules()
    names = {name for name in every if not package or name.split(".")[0] == package}
    return {name: {t for t in imported_modules(name, every[name], every, main_block=main_block) if t in names}
            for name in names}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of ``graph`` (as the list of modules, first repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: finished
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)) is not None:
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)) is not None:
            return cycle
    return None


def test_find_cycle_finds_one_hidden_in_a_function(tmp_path):
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert find_cycle(graph) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None
    src = tmp_path / "m.py"
    src.write_text("def f():\n    from harness_gym_baselines import evaluate\n    import harness_gym.running.rollout\n"
                   "if __name__ == '__main__':\n    from harness_gym_baselines.cli import run_trainer\n")
    assert imported_modules("harness_gym_baselines.x", src, project_modules()) == {"harness_gym_baselines.evaluate", "harness_gym.running.rollout"}
    assert imported_modules("harness_gym_baselines.x", src, project_modules(), main_block=True) == {
        "harness_gym_baselines.evaluate", "harness_gym.running.rollout", "harness_gym_baselines.cli"}


def test_no_import_circle_among_the_project_modules():
    graph = import_graph()
    assert "harness_gym_baselines.cli" in graph and "harness_gym.running.rollout" in graph["harness_gym_baselines.evaluate"]
    cycle = find_cycle(graph)
    assert cycle is None, "import circle: " + " -> ".join(cycle)


def test_no_import_circle_in_the_baselines_not_even_through_a_main_block():
    """A trainer's file run as a program goes through the trainer registry, never the command line above it, so
    the baselines hold no circle even when the imports of ``__main__`` blocks count."""
    graph = import_graph(main_block=True, package="harness_gym_baselines")
    cycle = find_cycle(graph)
    assert cycle is None, "import circle (counting __main__ blocks): " + " -> ".join(cycle)
    from_algos = {m: sorted(t for t in targets if t.split(".")[1] == "cli") for m, targets in graph.items()
                  if m.startswith("harness_gym_baselines.algos.")}
    assert not {m: t for m, t in from_algos.items() if t}, "an algorithm imports the command line"
    assert "harness_gym_baselines.common.trainer_registry" in graph["harness_gym_baselines.algos.bc"]


def test_harness_gym_never_imports_baselines_not_even_inside_a_function():
    graph = import_graph()
    offending = {m: sorted(t for t in targets if t.split(".")[0] == "harness_gym_baselines")
                 for m, targets in graph.items() if m.split(".")[0] == "harness_gym"}
    assert not {m: t for m, t in offending.items() if t}


# ----- (c) the rooms of harness_gym_baselines import only downwards -------------------------------------------
LAYERS = ("common", "policies", "evaluate", "algos", "experiments", "report", "cli")
"""the layers of harness_gym_baselines from the bottom up (its package docstring says what each holds): a
module imports from its own layer and the layers below, never above"""


def layer(module: str) -> int:
    """The layer index of a ``harness_gym_baselines`` module (its room, or itself for ``evaluate`` and ``cli``)."""
    room = module.split(".")[1]
    assert room in LAYERS, f"{module} is in no layer of {LAYERS}: put it in a room or add its room to LAYERS"
    return LAYERS.index(room)


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """``"a -> b"`` for every import of a ``harness_gym_baselines`` module from a higher layer."""
    found = []
    for a, targets in sorted(graph.items()):
        if a.startswith("harness_gym_baselines."):
            found += [f"{a} -> {b}" for b in sorted(targets)
                      if b.startswith("harness_gym_baselines.") and layer(b) > layer(a)]
            layer(a)  # a module outside every room fails even when it imports nothing of the package
    return found


def test_the_layer_check_catches_an_upward_import_and_a_module_outside_the_rooms():
    graph = {"harness_gym_baselines.policies.registry": {"harness_gym_baselines.common.options"},
             "harness_gym_baselines.algos.bc": {"harness_gym_baselines.policies.learned",
                                                "harness_gym_baselines.experiments.frontier"},
             "harness_gym_baselines.report.writer": {"harness_gym_baselines.experiments.frontier"}}
    assert upward_imports(graph) == ["harness_gym_baselines.algos.bc -> harness_gym_baselines.experiments.frontier"]
    with pytest.raises(AssertionError, match="harness_gym_baselines.utils is in no layer"):
        upward_imports({"harness_gym_baselines.utils": set()})


def test_the_rooms_of_the_baselines_import_only_downwards():
    graph = import_graph()
    baselines = [m for m in graph if m.startswith("harness_gym_baselines.")]
    assert {m.split(".")[1] for m in baselines} == set(LAYERS)  # every room holds modules, and no module is roomless
    assert upward_imports(graph) == []
    # a trainer's __main__ block runs harness-gym train through the registry below it, not the cli above it
    assert upward_imports(import_graph(main_block=True, package="harness_gym_baselines")) == []


def test_the_package_docstring_lists_the_layers_in_order():
    import harness_gym_baselines

    doc = harness_gym_baselines.__doc__
    positions = [doc.index(f"    {name}") for name in reversed(LAYERS)]
    assert positions == sorted(positions), "the package docstring lists the rooms from the top down"


# ----- (d) the trainer registry ---------------------------------------------------------------------------------
def test_a_trainer_module_without_the_trainer_shape_is_named(monkeypatch):
    monkeypatch.setitem(trainer_registry.TRAINERS, "broken", "tests.shared_data:shared_data_mark")
    with pytest.raises(TypeError, match=r"trainer 'broken' \(tests.shared_data:shared_data_mark\).*module:ConfigClass.*`load"):
        trainer_registry.load_trainer("broken")
    with pytest.raises(ValueError, match="unknown trainer 'nope'"):
        trainer_registry.load_trainer("nope")


@pytest.mark.parametrize("name", list(trainer_registry.TRAINERS))
def test_every_registered_trainer_has_one_config_name_and_a_loader(name):
    import importlib

    trainer = trainer_registry.load_trainer(name)
    module = importlib.import_module(trainer_registry.TRAINERS[name].partition(":")[0])
    aliases = [attr for attr, value in vars(module).items() if value is trainer.config]
    assert aliases == [trainer.config.__name__], f"{name}: the config has one name, not {aliases}"
    assert callable(trainer.load) and callable(trainer.train)


def test_train_flags_come_from_the_config_dataclass():
    import argparse
    import dataclasses

    from harness_gym_baselines.algos.awr import AWRConfig
    from harness_gym_baselines.common.dataclass_flags import add_dataclass_arguments, config_from_args

    parser = argparse.ArgumentParser()
    add_dataclass_arguments(parser, AWRConfig)
    flags = {a.dest for a in parser._actions} - {"help"}
    assert flags == {f.name for f in dataclasses.fields(AWRConfig)}
    cfg = config_from_args(AWRConfig, parser.parse_args(["--dataset", "x/y-v0", "--hidden-sizes", "8", "4",
                                                         "--beta", "inf", "--advantage", "q"]))
    assert cfg == AWRConfig(dataset_id="x/y-v0", hidden_sizes=(8, 4), beta=float("inf"), advantage="q")
    with pytest.raises(SystemExit):
        parser.parse_args(["--dataset", "x/y-v0", "--advantage", "z"])  # Literal["mc", "q"] gives the choices


# ----- (e) import harness_gym and harness-gym --help stay light ----------------------------------------------
def test_import_harness_gym_imports_nothing_heavy():
    out = run_python("import json, sys\nimport harness_gym, harness_gym.running.rollout\n"
                     f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))")
    assert json.loads(out) == []


def test_help_of_the_command_and_of_train_loads_no_training_stack():
    out = run_python("import contextlib, io, json, sys\nfrom harness_gym_baselines.cli import main\n"
                     "for argv in (['--help'], ['train', '--help'], ['eval', '--help']):\n"
                     "    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
                     "        main(argv)\n"
                     "print(json.dumps(sorted(m for m in ('torch', 'stable_baselines3', 'sb3_contrib', 'minari', "
                     "'tensorboard') if m in sys.modules)))")
    assert json.loads(out.splitlines()[-1]) == []


def test_the_distribution_installs_no_generic_top_level_package():
    """The wheel's top-level import names are this project's own (an older RL package owns ``baselines``)."""
    import configparser

    from setuptools import find_namespace_packages

    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    include = cfg["options.packages.find"]["include"].split()
    tops = {name.split(".")[0] for name in find_namespace_packages(where=str(ROOT), include=include)}
    assert tops == {"harness_gym", "harness_gym_baselines"}


CONFIG_FAMILIES = {"offline": ("bc", "awr", "iql", "cql"), "online": ("ppo-sparse", "ppo-dense", "ecpo", "ecpo-pb")}
"""trainers whose flat configs repeat the same settings (dataset and evaluation, or env and PPO)"""


@pytest.mark.parametrize("family", list(CONFIG_FAMILIES))
def test_a_setting_the_flat_configs_repeat_has_one_default_type_flag_and_help(family):
    """Each config is one flat dataclass (no config inherits another's fields, except a preset of it), so a
    setting every trainer of the family has is written in each: its default, type, flags and help must agree
    (``out``, the model file, is each trainer's own, and so is ``learning_rate``, of the policy in BC, AWR and IQL
    and of Q in CQL; a name only some algorithms use for their own parameter, such as AWR's and IQL's ``beta``,
    is not a shared setting)."""
    import dataclasses
    import typing

    from harness_gym_baselines.common.dataclass_flags import PRESET_OF, field_docs

    configs = {name: trainer_registry.load_trainer(name).config for name in CONFIG_FAMILIES[family]}
    for name, config in configs.items():
        flat = getattr(config, PRESET_OF, config)
        bases = [b for b in flat.__mro__[1:] if dataclasses.is_dataclass(b)]
        assert not bases, f"{name}: {flat.__name__} inherits fields from {bases}"
    shared = set.intersection(*({f.name for f in dataclasses.fields(c)} for c in configs.values())) - {"out", "learning_rate"}
    seen: dict[str, tuple[str, object]] = {}
    for name, config in configs.items():
        hints, docs = typing.get_type_hints(config), field_docs(config)
        for f in dataclasses.fields(config):
            if f.name not in shared:
                continue
            spelled = (f.default, f.default_factory, hints[f.name], dict(f.metadata), docs.get(f.name))
            first = seen.setdefault(f.name, (name, spelled))
            assert spelled == first[1], f"{f.name}: {name} has {spelled}, {first[0]} has {first[1]}"
    assert {"seed", "eval_episodes", "hidden_sizes"} <= set(seen)


@pytest.mark.parametrize(("name", "fixed", "out"), [("ppo-sparse", {"reward": "sparse"}, "models/ppo-sparse.zip"),
                                                    ("ppo-dense", {"reward": "dense"}, "models/ppo-dense.zip"),
                                                    ("ecpo-pb", {"shaping": "potential"}, "models/ecpo-pb.zip")])
def test_a_preset_fixes_its_fields_and_keeps_every_other_flag_of_its_config(name, fixed, out):
    import dataclasses

    from harness_gym_baselines.common.dataclass_flags import PRESET_OF

    trainer = trainer_registry.load_trainer(name)
    base = getattr(trainer.config, PRESET_OF)
    cfg = trainer.config(env_id="HarnessPlan-v2")
    assert {key: getattr(cfg, key) for key in fixed} == fixed and cfg.out == out
    with pytest.raises(TypeError):
        trainer.config(env_id="HarnessPlan-v2", **fixed)  # a fixed field is no argument (and no flag)
    flags = {f.name for f in dataclasses.fields(trainer.config) if f.init}
    assert flags == {f.name for f in dataclasses.fields(base)} - set(fixed)
    assert trainer.summary != trainer_registry.load_trainer("ppo-sparse" if name == "ppo-dense" else "ppo-dense").summary


# ----- (f) files a reader can take in -------------------------------------------------------------------------
def test_no_module_of_either_package_is_over_700_lines():
    long = {str(path.relative_to(ROOT)): n for path in project_modules().values()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > 700}
    assert not long
