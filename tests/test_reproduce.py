"""`harness-gym reproduce --quick` writes every table and figure, and a rerun resumes to the same tables."""

from __future__ import annotations

import csv

from baselines.cli import main
from baselines.reproduce import ABLATION, CONTROLLERS

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_reproduce_quick_writes_tables_and_figures_and_resumes(tmp_path, monkeypatch):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    out = tmp_path / "paper"
    args = ["reproduce", "--quick", "--out", str(out), "--env", "HarnessMultiTool-v0"]
    assert main(args) == 0
    with open(out / "table1_quality.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["controller"] for r in rows] == list(CONTROLLERS)
    assert all(0.0 <= float(r["Q CI low"]) <= float(r["Q"]) <= float(r["Q CI high"]) <= 1.0 for r in rows)
    forced = next(r for r in rows if r["controller"] == "forced-check")
    assert float(forced["check_before_submit"]) == 1.0
    with open(out / "table2_ablation.csv") as fh:
        assert [r["learner"] for r in csv.DictReader(fh)] == list(ABLATION)
    assert "HarnessMultiTool-v0" in (out / "table3_reference.md").read_text()
    for fig in ("fig1_quality.png", "fig2_check_before_submit.png"):
        assert (out / fig).read_bytes()[:8] == PNG_MAGIC
    first = (out / "table1_quality.md").read_text()
    assert main(args) == 0
    assert (out / "table1_quality.md").read_text() == first
