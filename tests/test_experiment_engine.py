"""The experiment engine (one runner), the specs (experiments as data) and the one statistics module."""

from __future__ import annotations

import dataclasses
import importlib
import json
from pathlib import Path

import numpy as np
import pytest

import harness_gym
from harness_gym_baselines.experiments import statistics
from harness_gym_baselines.experiments.cells import CELL_KEYS, CELL_SCHEMA, cell_record, write_cell
from harness_gym_baselines.experiments.engine import Task, TaskRecords, run_tasks, settings_digest
from harness_gym_baselines.experiments.offline_comparison import run_cell
from harness_gym_baselines.experiments.specs import SPECS, provenance_line
from harness_gym_baselines.experiments.specs.reproduce import REPRODUCE


def count_call(counter: str, value: int) -> int:
    """A task that leaves one line in ``counter`` per call (so a test sees whether it ran) and returns ``value``."""
    with open(counter, "a") as fh:
        fh.write(f"{value}\n")
    return value * 2


def _plan(counter: Path) -> list[Task]:
    return [Task("a", count_call, {"counter": str(counter), "value": 1}, "a"),
            Task("b", count_call, {"counter": str(counter), "value": 2}, "b", needs=("a",)),
            Task("c:x+y", count_call, {"counter": str(counter), "value": 3}, "c", needs=("a",), priority=1)]


@pytest.mark.parametrize("workers", [1, 2])
def test_a_new_spec_runs_through_the_engine_once_and_resumes(tmp_path, workers):
    """A plan of three tasks: every record in the one schema, in plan order; a rerun runs nothing."""
    counter = tmp_path / "calls.txt"
    records = run_tasks(_plan(counter), tmp_path / "run", workers, records_dir="tasks", what="test task")
    assert list(records) == ["a", "b", "c:x+y"]
    assert [r["result"] for r in records.values()] == [2, 4, 6]
    assert all(set(r) == {"stage", "seconds", "command", "result", "finished_at"} for r in records.values())
    assert sorted(counter.read_text().split()) == ["1", "2", "3"]
    assert (tmp_path / "run" / "tasks" / "c__x_y.json").is_file()
    again = run_tasks(_plan(counter), tmp_path / "run", workers, records_dir="tasks")
    assert all(r["resumed"] for r in again.values()) and len(counter.read_text().split()) == 3
    assert TaskRecords(tmp_path / "run", "tasks").done("b")["result"] == 4


@dataclasses.dataclass(frozen=True)
class TinySpec:
    """A new experiment defined here, outside the package: a grid of (cost weight, controller, seed) cells."""

    env_id: str = "HarnessMultiTool-v2"
    cost_weights: tuple[float, ...] = (0.0, 0.1)
    controllers: tuple[str, ...] = ("static", "forced-check")
    seeds: tuple[int, ...] = (3,)
    episodes: int = 2


def tiny_cell(path: str, env_id: str, controller: str, seed: int, episodes: int, cost_weight: float) -> str:
    """One cell of :class:`TinySpec`: the controller evaluated on the test split into a cell file."""
    from harness_gym_baselines.policies.registry import make_policy

    run_cell(Path(path), env_id, make_policy(controller), controller, episodes=episodes, seed=seed,
             cost_weight=cost_weight, extra={"spec": "tiny"})
    return path


def tiny_plan(spec: TinySpec, out: Path) -> list[Task]:
    return [Task(f"tiny:{c}:w{w:g}:seed{s}:{settings_digest(dataclasses.asdict(spec))}", tiny_cell,
                 {"path": str(out / "cells" / f"{c}-w{w:g}-seed{s}.json"), "env_id": spec.env_id, "controller": c,
                  "seed": s, "episodes": spec.episodes, "cost_weight": w}, f"tiny {c} {w}")
            for w in spec.cost_weights for c in spec.controllers for s in spec.seeds]


@pytest.mark.parametrize("workers", [1, 2])
def test_a_custom_spec_writes_cells_in_the_one_schema_and_resumes(tmp_path, workers):
    """A spec defined in this test runs through the engine: one cell file per grid point, each in the schema every
    pipeline writes (env, settings, controller, seed, split, episodes, summary, records), on paired test seeds."""
    spec = TinySpec()
    records = run_tasks(tiny_plan(spec, tmp_path), tmp_path, workers, records_dir="tasks", what="tiny cell")
    cells = [json.loads(Path(r["result"]).read_text()) for r in records.values()]
    assert len(cells) == 4
    for cell in cells:
        assert set(CELL_KEYS) <= set(cell) and cell["schema"] == CELL_SCHEMA and cell["spec"] == "tiny"
        assert cell["env_id"] == spec.env_id and cell["split"] == "test" and cell["seed"] == 3
        assert cell["episodes"] == len(cell["records"]) == cell["summary"]["episodes"] == spec.episodes
        w = cell["settings"]["cost_weight"]
        assert cell["summary"]["policy"] == cell["controller"] and cell["summary"]["cost_weight"] == w
        for episode in cell["records"]:  # the return is Q - w * cost at the cell's own cost weight
            assert episode["return"] == pytest.approx(episode["quality"] - w * episode["cost"])
    tasks = {tuple(r["task_id"] for r in c["records"]) for c in cells}
    assert len(tasks) == 1  # every controller and weight saw the same test episodes
    stamps = sorted(p.stat().st_mtime_ns for p in (tmp_path / "cells").iterdir())
    again = run_tasks(tiny_plan(spec, tmp_path), tmp_path, workers, records_dir="tasks")
    assert all(r["resumed"] for r in again.values())
    assert sorted(p.stat().st_mtime_ns for p in (tmp_path / "cells").iterdir()) == stamps
    changed = run_tasks(tiny_plan(dataclasses.replace(spec, episodes=1), tmp_path / "other"), tmp_path, workers,
                       records_dir="tasks")
    assert not any(r.get("resumed") for r in changed.values())  # new settings: new task names, run again


def test_a_cell_record_keeps_its_schema_keys(tmp_path):
    with pytest.raises(ValueError, match=r"cell E/c/seed 0: extra keys \['seed'\]"):
        cell_record(env_id="E", controller="c", seed=0, split="test", records=[], summary=None, extra={"seed": 1})
    with pytest.raises(ValueError, match=r"lacks \['schema'"):
        write_cell(tmp_path / "x.json", {"summary": {}, "records": []})
    assert not (tmp_path / "x.json").exists()


def test_a_task_that_needs_a_later_one_is_refused_before_anything_runs(tmp_path):
    counter = tmp_path / "calls.txt"
    plan = [Task("b", count_call, {"counter": str(counter), "value": 2}, "b", needs=("a",)),
            Task("a", count_call, {"counter": str(counter), "value": 1}, "a")]
    with pytest.raises(ValueError, match=r"stage b: needs \['a'\]"):
        run_tasks(plan, tmp_path, 1)
    assert not counter.exists()


def test_every_spec_names_a_runner_and_settings_that_exist():
    for spec in SPECS.values():
        for target in (spec.runner, spec.settings):
            module, name = target.split(":")
            assert hasattr(importlib.import_module(module), name), (spec.name, target)
        assert spec.tables and spec.name in provenance_line(spec.name)
    line = provenance_line("reproduce")
    assert "harness_gym_baselines/experiments/specs/reproduce.py" in line and "`settings.json`" in line


def test_the_reproduce_spec_is_the_grid_the_run_records(tmp_path):
    from harness_gym_baselines.report import reproduce

    assert REPRODUCE.quick_envs == reproduce.QUICK_ENVS and REPRODUCE.quick == reproduce.QUICK
    assert REPRODUCE.train_cost_weight in REPRODUCE.cost_weights
    assert set(REPRODUCE.quick_envs) <= set(harness_gym.ENV_IDS)  # `reproduce --quick` without --envs runs
    assert set(REPRODUCE.ecpo_envs) <= set(REPRODUCE.quick_envs) and REPRODUCE.corruption_env in REPRODUCE.ecpo_envs
    settings = {"quick": True, "sizes": dataclasses.asdict(REPRODUCE.quick)}
    reproduce._keep_settings(tmp_path, settings)
    assert json.loads((tmp_path / "settings.json").read_text()) == settings
    with pytest.raises(ValueError, match=r"other settings \(sizes differ"):
        reproduce._keep_settings(tmp_path, {**settings, "sizes": {**settings["sizes"], "seeds": 9}})


def test_the_statistics_module_pairs_episodes_and_pools_seeds():
    rng = np.random.default_rng(0)
    ours = [rng.normal(0.6, 0.1, 50), rng.normal(0.7, 0.1, 50)]
    theirs = rng.normal(0.5, 0.1, 50)
    diff = statistics.paired_difference(ours, theirs, "x")
    assert diff["mean"] == pytest.approx(float(np.mean(np.concatenate(ours)) - theirs.mean()))
    assert diff["ci95"][0] < diff["mean"] < diff["ci95"][1] and diff["ci95"][0] > 0
    with pytest.raises(ValueError, match="env w=0 bc: its cells have other test episodes"):
        statistics.paired_difference([ours[0][:10]], theirs, "env w=0 bc")
    assert statistics.seed_spread(ours) == pytest.approx(abs(ours[1].mean() - ours[0].mean()))
    assert statistics.seed_spread(ours[:1]) is None
    one = statistics.mean_ci(theirs)
    assert one["ci95"] == list(statistics.bootstrap_ci(theirs)) and one["mean"] == pytest.approx(theirs.mean())
    pooled = statistics.mean_ci([theirs])  # one seed: the seed draw is always the same, then the episodes
    assert pooled["mean"] == pytest.approx(one["mean"]) and pooled["ci95"][0] < pooled["mean"] < pooled["ci95"][1]
    lo, hi = statistics.two_level_bootstrap(ours, np.mean)
    assert lo < float(np.mean(np.concatenate(ours))) < hi
