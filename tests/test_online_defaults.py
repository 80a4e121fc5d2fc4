"""The selection rule of benchmarks/online_defaults.py, which chose the online trainers' default settings."""

from __future__ import annotations

from tests.benchmark_scripts import load_benchmark


def _module():
    return load_benchmark("online_defaults")


def test_the_rule_picks_the_best_cell_at_the_largest_budget_then_its_smallest_budget_within_tolerance():
    choose = _module().choose
    table = {(128, 4): {10_000: 0.40, 20_000: 0.50, 40_000: 0.55},
             (512, 4): {10_000: 0.30, 20_000: 0.595, 40_000: 0.60},
             (512, 10): {10_000: 0.70, 20_000: 0.40, 40_000: 0.58}}  # the best early, not at the largest budget
    assert choose(table) == (512, 4, 20_000)  # 0.595 is within 0.01 of 0.60
    table[(512, 4)][20_000] = 0.58
    assert choose(table) == (512, 4, 40_000)
    table[(512, 4)][10_000] = 0.65  # a cell's earlier budget that beats its largest one wins within the cell
    assert choose(table) == (512, 4, 10_000)
