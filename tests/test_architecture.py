"""The layout's rules: ``harness_gym`` works without ``harness_gym_baselines``, no import circles, a trainer is one file
plus one registry line, and ``import harness_gym`` stays light."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from harness_gym_baselines import trainers
from harness_gym_baselines.cli import main

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
from harness_gym.rollout import episode_seed, play_episode

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
    proc = subprocess.run([sys.executable, "-c", BLOCK_BASELINES + "import harness_gym_baselines.registry"], cwd=ROOT,
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


def imported_modules(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules that ``name`` imports, anywhere in the file (inside functions, ``if`` blocks and
    ``TYPE_CHECKING`` too). ``from pkg import x`` counts as importing ``pkg.x`` when that is a module, else
    ``pkg``."""
    is_package = path.name == "__init__.py"
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
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


def import_graph() -> dict[str, set[str]]:
    modules = project_modules()
    return {name: imported_modules(name, path, modules) for name, path in modules.items()}


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
    src.write_text("def f():\n    from harness_gym_baselines import evaluate\n    import harness_gym.rollout\n")
    assert imported_modules("harness_gym_baselines.x", src, project_modules()) == {"harness_gym_baselines.evaluate", "harness_gym.rollout"}


def test_no_import_circle_among_the_project_modules():
    graph = import_graph()
    assert "harness_gym_baselines.cli" in graph and "harness_gym.rollout" in graph["harness_gym_baselines.evaluate"]
    cycle = find_cycle(graph)
    assert cycle is None, "import circle: " + " -> ".join(cycle)


def test_harness_gym_never_imports_baselines_not_even_inside_a_function():
    graph = import_graph()
    offending = {m: sorted(t for t in targets if t.split(".")[0] == "harness_gym_baselines")
                 for m, targets in graph.items() if m.split(".")[0] == "harness_gym"}
    assert not {m: t for m, t in offending.items() if t}


# ----- (c) a trainer is one file plus one registry line ------------------------------------------------------
@pytest.fixture
def small_dataset(tmp_path, monkeypatch):
    import gymnasium as gym

    from harness_gym import datasets
    from harness_gym_baselines.registry import make_policy

    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    if "HarnessToy-v1" not in gym.registry:
        gym.register(id="HarnessToy-v1", entry_point="examples.toy_domain.env:HarnessToyEnv", max_episode_steps=100)
    return datasets.collect("HarnessToy-v1", make_policy("behaviour"), "harness/toy-majority-v0", episodes=12,
                            seed=5, ref_policies=None, progress=False)


def test_a_trainer_added_with_its_file_and_one_registry_line_runs_through_the_cli(small_dataset, tmp_path,
                                                                                  monkeypatch, capsys):
    from harness_gym.datasets import load_transitions

    monkeypatch.setitem(trainers.TRAINERS, "majority", "tests.majority_trainer")  # the one registry line
    with pytest.raises(SystemExit):
        main(["train", "majority", "--help"])
    help_text = capsys.readouterr().out
    assert "--skip-first SKIP_FIRST" in help_text and "ignore this many transitions" in help_text
    assert "(default: 0)" in help_text

    out = tmp_path / "majority.json"
    assert main(["train", "majority", "--dataset", small_dataset.id, "--out", str(out), "--skip-first", "2"]) == 0
    assert f"wrote {out} (majority, trained on {small_dataset.id}, seed 0)" in capsys.readouterr().out
    data = load_transitions(small_dataset)
    first_steps = {int(e): int(np.flatnonzero(data.episode == e)[0]) for e in np.unique(data.episode)}
    kept = [a for i, (a, e) in enumerate(zip(data.actions, data.episode)) if i - first_steps[int(e)] >= 2]
    assert json.loads(out.read_text())["counts"] == np.bincount(kept, minlength=7).tolist()

    with pytest.raises(SystemExit):
        main(["train", "majority", "--dataset", small_dataset.id, "--beta", "1"])
    assert "unrecognized arguments: --beta" in capsys.readouterr().err


def test_a_trainer_module_without_the_trainer_shape_is_named(monkeypatch):
    monkeypatch.setitem(trainers.TRAINERS, "broken", "tests.shared_data")
    with pytest.raises(TypeError, match=r"trainer 'broken' \(tests.shared_data\).*dataclass `Config`"):
        trainers.load_trainer("broken")
    with pytest.raises(ValueError, match="unknown trainer 'nope'"):
        trainers.load_trainer("nope")


def test_train_flags_come_from_the_config_dataclass():
    import argparse
    import dataclasses

    from harness_gym_baselines.awr import AWRConfig
    from harness_gym_baselines.dataclass_args import add_dataclass_arguments, config_from_args

    parser = argparse.ArgumentParser()
    add_dataclass_arguments(parser, AWRConfig)
    flags = {a.dest for a in parser._actions} - {"help"}
    assert flags == {f.name for f in dataclasses.fields(AWRConfig)}
    cfg = config_from_args(AWRConfig, parser.parse_args(["--dataset", "x/y-v0", "--hidden-sizes", "8", "4",
                                                         "--beta", "inf", "--advantage", "q"]))
    assert cfg == AWRConfig(dataset_id="x/y-v0", hidden_sizes=(8, 4), beta=float("inf"), advantage="q")
    with pytest.raises(SystemExit):
        parser.parse_args(["--dataset", "x/y-v0", "--advantage", "z"])  # Literal["mc", "q"] gives the choices


# ----- (d) import harness_gym stays light ---------------------------------------------------------------------
def test_import_harness_gym_imports_nothing_heavy():
    out = run_python("import json, sys\nimport harness_gym, harness_gym.rollout\n"
                     f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))")
    assert json.loads(out) == []


def test_the_distribution_installs_no_generic_top_level_package():
    """The wheel's top-level import names are this project's own (an older RL package owns ``baselines``)."""
    import configparser

    from setuptools import find_namespace_packages

    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    include = cfg["options.packages.find"]["include"].split()
    tops = {name.split(".")[0] for name in find_namespace_packages(where=str(ROOT), include=include)}
    assert tops == {"harness_gym", "harness_gym_baselines"}
