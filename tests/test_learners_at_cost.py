"""The learners-at-a-cost experiment: a tiny run gives every row and the summary lines, a rerun recomputes
nothing, and the summary counts follow their rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("minari")

from harness_gym_baselines.experiments import learners_at_cost as lac  # noqa: E402

ENV = "HarnessPlan-v2"
WEIGHTS = "0,0.1"
TINY = ["buffer_episodes=20", "offline_seeds=1", "online_seeds=1", "epochs=1", "value_steps=20", "online_steps=256",
        "ecpo_preference_episodes=10", "test_episodes=10", "search_rounds=[[4,2]]", "search_val_episodes=4",
        "probe_bc_episodes=4", "probe_cem_iterations=1", "probe_cem_population=3", "probe_cem_elite=2",
        "probe_cem_episodes=2"]


def _argv(out: Path, *more: str) -> list[str]:
    return ["--envs", ENV, "--cost-weights", WEIGHTS, "--out", str(out), "--quiet",
            *(a for pair in TINY for a in ("--size", pair)), *more]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("learners_at_cost")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MINARI_DATASETS_PATH", str(out / "minari"))
        assert lac.main(_argv(out)) == 0
        mtimes = {p: p.stat().st_mtime_ns for p in (out / "cells").rglob("*.json")}
        models = {p: p.stat().st_mtime_ns for p in (out / "models").rglob("*") if p.is_file()}
        assert lac.main(_argv(out, "--num-workers", "2")) == 0  # the rerun, through the process pool
    return out, mtimes, models


def test_the_tiny_run_has_every_controller_row_and_the_summary_lines(tiny_run):
    out, _, _ = tiny_run
    table = json.loads((out / "table.json").read_text())
    rows = table["rows"]
    for w in (0.0, 0.1):
        assert [r["controller"] for r in rows if r["cost_weight"] == w] == list(lac.CONTROLLERS)
    for r in rows:
        assert r["episodes"] == 10 and r["seeds"] == 1
        assert (r["minus_best_fixed"] is None) == (r["controller"] in ("forced-check", "static", "best-fixed"))
        # return = Q - w * cost on every row (each episode, so also the means)
        assert r["return"]["mean"] == pytest.approx(r["quality"]["mean"] - r["cost_weight"] * r["cost"]["mean"])
    assert table["summary"] == lac.summary_lines(rows)
    md = (out / "table.md").read_text()
    assert "learned beats best fixed with CI above 0 in" in md and "of 1 envs" in md
    assert "reaches forced-check's Q at no more than half its cost in" in md
    for name in lac.CONTROLLERS:
        assert f"| {name}" in md
    csv_lines = (out / "table.csv").read_text().splitlines()
    assert len(csv_lines) == 1 + 2 * len(lac.CONTROLLERS)


def test_a_fixed_script_plays_the_same_episodes_at_every_weight(tiny_run):
    out, _, _ = tiny_run
    at0, at01 = (json.loads(lac.cell_path(out, ENV, w, "forced-check", 0).read_text()) for w in (0.0, 0.1))
    assert [r["quality"] for r in at0["records"]] == [r["quality"] for r in at01["records"]]
    assert [r["cost"] for r in at0["records"]] == [r["cost"] for r in at01["records"]]
    assert [r["return"] for r in at0["records"]] != [r["return"] for r in at01["records"]]


def test_the_rerun_recomputes_no_cell_and_retrains_no_model(tiny_run):
    out, mtimes, models = tiny_run
    assert len(mtimes) == 2 * len(lac.CONTROLLERS) and models
    assert {p: p.stat().st_mtime_ns for p in (out / "cells").rglob("*.json")} == mtimes
    assert {p: p.stat().st_mtime_ns for p in (out / "models").rglob("*") if p.is_file()} == models


def test_a_rerun_with_other_sizes_is_refused(tiny_run, capsys):
    out, _, _ = tiny_run
    with pytest.raises(SystemExit):
        lac.main(_argv(out, "--size", "test_episodes=11"))
    assert "other sizes or prices" in capsys.readouterr().err


def _row(env: str, w: float, controller: str, *, q: float = 0.5, cost: float = 10.0,
         diff: tuple[float, float] | None = None, spread: float | None = None) -> dict:
    kind = "reference" if controller in lac.REFERENCES else "learned"
    ci = {"mean": 0.0, "ci95": [0.0, 0.0]}
    return {"env_id": env, "cost_weight": w, "controller": controller, "kind": kind,
            "seeds": 1 if spread is None else 2, "seed_spread": spread,
            "quality": {**ci, "mean": q}, "cost": {**ci, "mean": cost}, "return": ci,
            "minus_best_fixed": None if diff is None else {"mean": sum(diff) / 2, "ci95": list(diff)}}


def test_the_summary_counts_come_from_the_rows():
    rows = [
        _row("A", 0.0, "forced-check", q=0.8, cost=10.0),
        _row("A", 0.0, "bc", diff=(0.01, 0.2), spread=0.2),      # beats: CI above 0; mean 0.105 < spread 0.2
        _row("A", 0.1, "forced-check", q=0.8, cost=10.0),
        _row("A", 0.1, "iql", diff=(0.02, 0.3), spread=0.1),     # beats again: A counts once; 0.16 > 0.1
        _row("B", 0.0, "forced-check", q=0.6, cost=8.0),
        _row("B", 0.0, "ppo-sparse", q=0.6, cost=4.0, diff=(-0.1, 0.3)),  # straddles 0: no; Q equal, half cost: yes
        _row("B", 0.0, "ecpo", q=0.59, cost=1.0, diff=(0.0, 0.3)),        # CI touching 0: no; Q below: no
        _row("B", 0.0, "probe", q=0.9, cost=1.0, diff=(0.1, 0.3)),        # a reference: never counted
        _row("C", 0.0, "forced-check", q=0.6, cost=8.0),
        _row("C", 0.0, "cql", q=0.7, cost=4.1, diff=(-0.3, -0.1)),        # cost above half: no
    ]
    assert lac.beats_best_fixed(rows) == [("A", 0.0, "bc"), ("A", 0.1, "iql")]
    assert lac.half_cost_of_forced_check(rows) == [("B", 0.0, "ppo-sparse")]
    assert lac.beyond_seed_spread(rows) == [("A", 0.1, "iql")]
    assert lac.beyond_seed_spread([r for r in rows if r["controller"] != "iql"]) == []  # bc's spread is larger
    assert lac.beyond_seed_spread([{**r, "seed_spread": None} for r in rows]) == []  # one seed: no spread
    beats, half, beyond = lac.summary_lines(rows)
    assert beyond.endswith("exceeds the row's own seed spread in 1 of 3 envs: A w=0.1 iql")
    assert beats.startswith("learned beats best fixed with CI above 0 in 1 of 3 envs (at some w): ")
    assert "A w=0 bc; A w=0.1 iql" in beats
    assert half == "reaches forced-check's Q at no more than half its cost in 1 of 3 envs: B w=0 ppo-sparse"
    assert lac.summary_lines(rows[:1])[0].endswith("in 0 of 1 envs (at some w): none")


def test_bad_arguments_name_what_is_wrong(capsys):
    with pytest.raises(ValueError, match="did you mean buffer_episodes"):
        lac.with_sizes(lac.FULL, ["buffer_episode=3"])
    with pytest.raises(ValueError, match="expected FIELD=VALUE"):
        lac.with_sizes(lac.FULL, ["buffer_episodes"])
    with pytest.raises(ValueError, match="must be >= 1"):
        lac.with_sizes(lac.FULL, ["online_seeds=0"])
    with pytest.raises(ValueError, match="probe_cem_elite"):
        lac.with_sizes(lac.FULL, ["probe_cem_elite=100"])
    assert lac.with_sizes(lac.QUICK, ["search_rounds=[[4,2]]"]).search_rounds == ((4, 2),)
    with pytest.raises(ValueError, match="'x' is not a number"):
        lac.parse_weights("0,x")
    with pytest.raises(ValueError, match="listed twice"):
        lac.parse_weights("0,0")
    with pytest.raises(ValueError, match="unknown env id 'HarnessPlan-v9'; did you mean HarnessPlan-v"):
        lac.parse_envs("HarnessPlan-v9")
    with pytest.raises(SystemExit):
        lac.main(["--envs", "HarnessPlan-v2", "--cost-weights", "-1", "--out", "unused"])
    assert "must be a finite number >= 0" in capsys.readouterr().err


def test_a_run_at_another_price_profile_prices_every_cell_with_it(tiny_run, tmp_path, capsys):
    out, _, _ = tiny_run
    frontier = tmp_path / "frontier"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MINARI_DATASETS_PATH", str(frontier / "minari"))
        argv = ["--envs", ENV, "--cost-weights", "0.1", "--out", str(frontier), "--quiet", "--prices",
                "frontier-hosted", *(a for pair in TINY for a in ("--size", pair))]
        assert lac.main(argv) == 0
    cells = sorted((frontier / "cells").rglob("*.json"))
    assert len(cells) == len(lac.CONTROLLERS)
    assert all(json.loads(p.read_text())["settings"]["prices"] == "frontier-hosted" for p in cells)
    assert json.loads((frontier / "table.json").read_text())["prices"] == "frontier-hosted"
    assert "Price profile `frontier-hosted`" in (frontier / "table.md").read_text()
    # the same fixed script on the same episodes: same quality, every call billed at the frontier list prices
    cheap, dear = (json.loads(lac.cell_path(o, ENV, 0.1, "forced-check", 0).read_text())["records"]
                   for o in (out, frontier))
    assert [r["quality"] for r in cheap] == [r["quality"] for r in dear]
    assert all(d["cost"] > 5 * c["cost"] for c, d in zip(cheap, dear, strict=True))
    with pytest.raises(SystemExit):  # the folder holds a frontier-hosted run
        lac.main([*argv[:-len(TINY) * 2 - 2], *(a for pair in TINY for a in ("--size", pair))])
    assert "other sizes or prices" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        lac.main(["--envs", ENV, "--out", str(tmp_path / "x"), "--prices", "no-such-profile"])
    assert "--prices" in capsys.readouterr().err
