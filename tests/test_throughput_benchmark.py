"""benchmarks/throughput.py's repeats: every figure measured --repeats times, the tables from the medians."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys

from tests.benchmark_scripts import BENCHMARKS, load_benchmark

SCRIPT = BENCHMARKS / "throughput.py"


def _module():
    return load_benchmark("throughput")


def _run(rate: float, cpu: float) -> dict:
    return {"seconds": 100 / rate, "cpu_seconds": cpu * 100 / 1e6, "steps_per_s": rate, "cpu_us_per_step": cpu,
            "episodes": 7, "job_steps": 3, "exec_cached_steps": 1, "sandbox_jobs": 3, "make_s": 0.1}


def test_a_figure_is_the_median_of_its_repeats_field_by_field_and_keeps_every_repeat():
    tp = _module()
    runs = [_run(100.0, 50.0), _run(300.0, 10.0), _run(200.0, 40.0)]
    merged = tp.median_run(runs)
    assert merged["steps_per_s"] == 200.0 and merged["cpu_us_per_step"] == 40.0
    assert merged["repeats_steps_per_s"] == [100.0, 300.0, 200.0]
    assert merged["episodes"] == 7 and merged["sandbox_jobs"] == 3  # counts: the seeds make them equal


def test_ratios_come_from_the_medians_with_the_range_of_the_per_repeat_ratios():
    tp = _module()
    base = tp.combine_repeats([{"random": {"cold": _run(r, 10.0), "warm": _run(r, 10.0)}} for r in (1000.0, 2000.0, 1500.0)])
    env = tp.combine_repeats([{"random": {"cold": _run(r, 90.0), "warm": _run(r, 90.0)}} for r in (100.0, 100.0, 300.0)])
    tp._add_ratios(base, base)
    tp._add_ratios(env, base)
    assert env["random"]["warm_ratio"] == 1500.0 / 100.0
    assert env["random"]["warm_ratio_range"] == [5.0, 20.0]  # 1500/300 and 2000/100
    assert env["random"]["warm_cpu_ratio"] == 9.0 and not env["random"]["warm_ok"]
    assert base["random"]["warm_ratio_range"] == [1.0, 1.0]


def test_the_script_measures_each_figure_repeats_times(tmp_path):
    out = tmp_path / "throughput.json"
    proc = subprocess.run([sys.executable, str(SCRIPT), "--env", "HarnessPlan-v1", "--steps", "40", "--baseline-steps",
                           "200", "--ppo-steps", "0", "--jobs", "3", "--repeats", "2", "--json", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = json.loads(out.read_text())
    assert results["repeats"] == 2 and len(results["cold_job"]["repeats_median_ms"]) == 2
    for env_id in ("CartPole-v1", "HarnessPlan-v1"):
        for phase in ("cold", "warm"):
            run = results["envs"][env_id]["random"][phase]
            assert len(run["repeats_steps_per_s"]) == 2
            assert run["steps_per_s"] == statistics.median(run["repeats_steps_per_s"])
    assert "Medians of 2 repeat(s)" in proc.stdout and proc.stderr.count("repeat 2/2:") == 2
    bad = subprocess.run([sys.executable, str(SCRIPT), "--repeats", "0"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "--repeats" in bad.stderr
