"""The best searched script and the closed-loop probe as references beside the learned rows: the cache, the
choices they record, and their rows in the harness, main, frontier and ECPO tables."""

from __future__ import annotations

import argparse
import json

import gymnasium as gym
import pytest

from harness_gym.running.rollout import episode_seed, play_episode
from harness_gym_baselines.experiments import ecpo_comparison, fixed_references, offline_comparison
from harness_gym_baselines.experiments.cells import CELL_KEYS
from harness_gym_baselines.experiments.fixed_references import (
    ReferenceSizes,
    cache_path,
    parse_reference_name,
    reference_name,
    reference_names,
)
from harness_gym_baselines.policies.registry import make_policy
from harness_gym_baselines.report import figures, writer
from harness_gym_baselines.report import rows as rows_of_report

ENV = "HarnessResearchQA-v1"
TINY = ReferenceSizes(rounds=((1, 3), (2, 2)), val_episodes=6, bc_episodes=4, cem_iterations=2, cem_population=4,
                      cem_elite=2, cem_episodes=3)
WEIGHTS = (0.0, 0.1)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    folder = tmp_path_factory.mktemp("references")
    refs = fixed_references.fixed_references(ENV, WEIGHTS, cache_dir=folder, sizes=TINY)
    return folder, refs


def _actions(env: gym.Env, policy, episodes: int = 6) -> list[list[int]]:
    return [play_episode(env, policy, seed=episode_seed(3, i), split="test").actions for i in range(episodes)]


def test_the_cache_gives_back_policies_that_act_the_same_without_searching(cache, monkeypatch):
    folder, first = cache
    assert sorted(p.name for p in folder.iterdir()) == sorted(cache_path(folder, ENV, w, 0).name for w in WEIGHTS)

    def no_search(*args, **kwargs):
        raise AssertionError("searched again although the cache holds every weight")

    monkeypatch.setattr(fixed_references, "choose_winners", no_search)
    monkeypatch.setattr(fixed_references, "fit_probe", no_search)
    again = fixed_references.fixed_references(ENV, WEIGHTS, cache_dir=folder, sizes=TINY)
    env = gym.make(ENV)
    try:
        for w in WEIGHTS:
            assert again[w].script.name == first[w].script.name == reference_name("best-fixed", w)
            assert again[w].probe.name == reference_name("probe", w)
            assert _actions(env, again[w].script) == _actions(env, first[w].script)
            assert _actions(env, again[w].probe) == _actions(env, first[w].probe)
    finally:
        env.close()


def test_other_sizes_or_seed_are_not_served_from_the_cache(cache, monkeypatch):
    folder, _ = cache
    calls = []

    def counting(cfg, **kwargs):
        calls.append(cfg.cost_weights)
        raise RuntimeError("stop")

    monkeypatch.setattr(fixed_references, "choose_winners", counting)
    for kwargs in ({"sizes": ReferenceSizes(**{**TINY.__dict__, "val_episodes": 7})}, {"sizes": TINY, "seed": 1}):
        with pytest.raises(RuntimeError, match="stop"):
            fixed_references.fixed_references(ENV, WEIGHTS, cache_dir=folder, **kwargs)
    assert calls == [WEIGHTS, WEIGHTS]


def test_the_winner_has_the_best_val_return_among_the_finalists_at_its_weight(cache):
    _, refs = cache
    for w, found in refs.items():
        record = found.record
        finalists = record["finalist_val_returns"]
        assert len(finalists) >= 2 and record["script"] in finalists
        assert record["script_val_return"] == max(finalists.values()) == finalists[record["script"]]
        assert record["settings"]["cost_weight"] == w and record["searched_with_weights"] == list(WEIGHTS)


def test_the_probe_keeps_the_better_of_imitation_and_cem_on_val(cache):
    _, refs = cache
    for found in refs.values():
        val = found.record["probe_val_return"]
        assert set(val) == {"imitation", "cem"}
        assert val[found.record["probe_chosen"]] == max(val.values())
        assert len(found.record["probe_cem"]) == TINY.cem_iterations


def test_bad_inputs_are_named():
    with pytest.raises(ValueError, match="must not hold cost_weight"):
        fixed_references.fixed_references(ENV, [0.0], cache_dir="unused", env_kwargs={"cost_weight": 0.1})
    with pytest.raises(ValueError, match="finite and >= 0"):
        fixed_references.fixed_references(ENV, [-0.1], cache_dir="unused")
    with pytest.raises(ValueError, match="cem_elite"):
        ReferenceSizes(**{**TINY.__dict__, "cem_elite": 9})
    with pytest.raises(ValueError, match="reference kind"):
        reference_name("oracle", 0.0)


def test_names_survive_file_names_and_sort_by_weight():
    names = [reference_name(k, w) for w in (0.1, 0.0, 0.01) for k in ("probe", "best-fixed")]
    assert all(set(n) <= set("abcdefghijklmnopqrstuvwxyz0123456789.-") for n in names)
    assert [parse_reference_name(n) for n in names[:2]] == [("probe", 0.1), ("best-fixed", 0.1)]
    assert parse_reference_name("ppo-sparse") is None and parse_reference_name("static") is None
    assert reference_names(["bc", *names, "static"]) == ["best-fixed-w0", "probe-w0", "best-fixed-w0.01",
                                                         "probe-w0.01", "best-fixed-w0.1", "probe-w0.1"]
    assert ReferenceSizes.FULL.val_episodes == 300 and ReferenceSizes.QUICK.val_episodes < 300


def test_the_references_are_rows_of_the_harness_main_and_frontier_tables(cache, tmp_path):
    _, refs = cache
    cell_dir = tmp_path / "cells"
    policies = {"static": make_policy("static")}
    for found in refs.values():
        policies.update(found.policies())
    cells = {ENV: {name: [offline_comparison.run_cell(cell_dir / f"{name}-seed{seed}.json", ENV, policy, name,
                                                       episodes=4, seed=seed) for seed in range(2)]
                   for name, policy in policies.items()}}
    sizes = {"online_steps": 20_000, "epochs": 30}
    rows = rows_of_report.harness_rows(cells, sizes)
    assert [r["policy"] for r in rows] == ["static", "best-fixed-w0", "probe-w0", "best-fixed-w0.1", "probe-w0.1"]
    by = {r["policy"]: r for r in rows}
    assert by["best-fixed-w0.1"]["verdict"] == "fixed script" and by["best-fixed-w0.1"]["seeds"] == 2
    assert by["probe-w0"]["verdict"].startswith("reference: ") and by["probe-w0"]["verdict"] == by["probe-w0.1"]["verdict"]
    assert rows_of_report.best_fixed(rows, ENV) in ("static", "best-fixed-w0", "best-fixed-w0.1")
    assert rows_of_report.best_fixed(rows, ENV) != "probe-w0"

    writer.harness_table(tmp_path, rows, {}, "", "quick")
    md = (tmp_path / "table_harness.md").read_text()
    for name in ("best-fixed-w0.1", "probe-w0.1"):
        line = next(line for line in md.splitlines() if f"| {name} |" in line)
        assert "[" in line  # the Q column carries its CI
    writer.main_table(tmp_path, rows, "")
    assert "Q best-fixed-w0 | Q probe-w0 |" in (tmp_path / "table_main.md").read_text()
    png = figures.frontiers(tmp_path, cells, list(WEIGHTS), "")[ENV]
    frontier = json.loads((png.parent / "frontier.json").read_text())
    assert {"best-fixed-w0.1", "probe-w0.1"} <= {r["policy"] for r in frontier["rows"]}
    assert "| probe-w0.1 |" in (png.parent / "frontier.md").read_text()


def test_the_ecpo_table_has_the_references_of_its_env(cache, tmp_path, monkeypatch):
    folder, _ = cache
    monkeypatch.setattr(ecpo_comparison, "TRAINED", ())  # no training here: the fixed rows only
    args = argparse.Namespace(out=tmp_path, env=[ENV], seeds=1, episodes=3, buffer_episodes=10, quiet=True,
                              reference_weights=WEIGHTS, reference_sizes=TINY, references_dir=folder)
    rows = ecpo_comparison.table(args)
    assert [r["method"] for r in rows][-4:] == ["best-fixed-w0", "probe-w0", "best-fixed-w0.1", "probe-w0.1"]
    table = (tmp_path / "table.md").read_text()
    assert f"| {ENV} | best-fixed-w0.1 | 1 x 3 |" in table and f"| {ENV} | probe-w0 | 1 x 3 |" in table
    for key, cell in json.loads((tmp_path / f"cells_{ENV}.json").read_text()).items():  # the one cell schema
        assert set(CELL_KEYS) <= set(cell) and key == f"{ENV}|{cell['controller']}|{cell['seed']}"
        assert cell["episodes"] == len(cell["records"]) == len(cell["ood"]) == 3 and cell["split"] == "test"
