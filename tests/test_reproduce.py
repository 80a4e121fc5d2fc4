"""`harness-gym reproduce` end to end on a tiny budget (one env, one seed), the report in headless Chromium,
the verdicts, the aggregate statistics and the episode viewer."""

from __future__ import annotations

import csv
import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from harness_gym_baselines.cli import main
from tests.recording import RECORDED_ENV_IDS
from tests.shared_data import SHARED_DATA, shared_data_mark

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
ENV = "HarnessMultiTool-v2"
TINY = ["--quick", "--envs", ENV, "--seeds", "1", "--size", "buffer_episodes=60", "--size", "eval_episodes=10",
        "--size", "online_steps=512", "--size", "ecpo_episodes=10", "--size", "corruption_steps=1024",
        "--size", "corrupt_from=512", "--size", "sim_seeds=1", "--size", "ref_score_episodes=5",
        "--size", "ref_val_episodes=10", "--size", "ref_cem_iterations=1", "--size", "examples=2"]
TABLES = ("table_harness", "table_aggregate", "table_ablation", "table_ecpo")
FIGURES = ("fig_frontier.png", "fig_quality_hms.png", "fig_patterns_awr.png", "fig_support_ceiling.png", "fig_ecpo_corruption.png",
           f"fig_frontier_{ENV}.png")
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """The tiny run with its stages in two worker processes (:func:`second_run` runs them one after another)."""
    out = tmp_path_factory.mktemp("reproduce") / "run"
    assert main(["reproduce", "--out", str(out), *TINY, "--num-workers", "2"]) == 0
    return out


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC, path
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def test_every_file_exists_parses_and_is_in_range(run_dir):
    for stem in TABLES:
        md = (run_dir / f"{stem}.md").read_text()
        assert "QUICK RUN" in md, stem
        assert re.search(r"^\|.*\|\s*$", md, re.M), f"{stem}.md holds no table"
        with open(run_dir / f"{stem}.csv") as fh:
            rows = list(csv.DictReader(fh))
        assert rows and all(r["run"] == "quick" for r in rows), stem
    assert "QUICK RUN" in (run_dir / "table_sim_to_real.md").read_text()
    sim_table = (run_dir / "table_sim_to_real.md").read_text()
    import gymnasium as gym

    if any(e not in gym.registry for e in RECORDED_ENV_IDS):  # its ids retired: the stage says so, no replay
        assert "Not run" in sim_table and "re-record" in sim_table
    else:  # replayed on the ids it was recorded on
        assert all(f"| {env_id} | static |" in sim_table for env_id in RECORDED_ENV_IDS)

    with open(run_dir / "table_harness.csv") as fh:
        rows = list(csv.DictReader(fh))
    by = {r["controller"]: r for r in rows}
    references = {f"{kind}-w{w}" for kind in ("best-fixed", "probe") for w in ("0", "0.01", "0.1")}
    online = ("ppo-sparse", "ecpo", "ecpo-pb")  # each greedy and sampling, from one model
    assert set(by) == {"static", "forced-check", "thorough", "bc", "awr", "awr-q", "iql", "cql", *online,
                       *(f"{name}-sampled" for name in online), *references}
    assert by["best-fixed-w0.01"]["verdict"] == "fixed script" and by["probe-w0.1"]["verdict"].startswith("reference")
    with open(run_dir / "table_ecpo.csv") as fh:
        ecpo = {r["method"]: r for r in csv.DictReader(fh) if r["policy_mode"] == "deterministic"}
    assert references <= set(ecpo) and ecpo["best-fixed-w0"]["verdict"] == "fixed script"
    frontier = json.loads((run_dir / "frontier" / ENV / "frontier.json").read_text())
    assert references <= {r["policy"] for r in frontier["rows"]}
    for r in rows:
        for key in ("Q", "success", "check_before_submit", "forced_submit"):
            assert r[key] in ("", "nan") or 0.0 <= float(r[key]) <= 1.0, (r["controller"], key, r[key])
        assert 0.0 <= float(r["Q_ci_lo"]) <= float(r["Q"]) <= float(r["Q_ci_hi"]) <= 1.0
        assert float(r["cost_ci_lo"]) <= float(r["cost"]) <= float(r["cost_ci_hi"])
        assert float(r["cost"]) > 0
    # forced-check checks every draft it submits itself; the cost budget (budget_units="auto") can force the
    # submit of a revision before its check
    forced_check = by["forced-check"]
    assert float(forced_check["check_before_submit"]) >= 1.0 - float(forced_check["forced_submit"]) - 1e-9
    assert float(forced_check["check_before_submit"]) >= 0.5
    assert float(by["static"]["check_before_submit"]) == 0.0
    assert by["static"]["verdict"] == "fixed script"
    # 512 PPO steps is below the documented minimum: every online row says so
    for name in (*online, *(f"{name}-sampled" for name in online)):
        assert by[name]["verdict"].startswith("not meaningful") and "512 steps" in by[name]["verdict"]
    assert -100 <= float(by["awr"]["awr_minus_static_points"]) <= 100
    assert 0.0 <= float(by["awr"]["p_improvement_vs_best_fixed"]) <= 1.0

    cells = run_dir / "offline" / "cells" / ENV
    for name in online:  # trained at the documented cost weight, evaluated greedy and sampling
        greedy, sampled = (json.loads((cells / f"{label}-seed0.json").read_text())
                           for label in (name, f"{name}-sampled"))
        assert greedy["model"] == sampled["model"] and (greedy["deterministic"], sampled["deterministic"]) == (
            True, False)
        assert greedy["train_cost_weight"] == sampled["train_cost_weight"] == 0.01
    frontier = json.loads((run_dir / "frontier" / ENV / "frontier.json").read_text())
    assert {r["policy"]: r.get("trained_at") for r in frontier["rows"]}["ppo-sparse"] == 0.01
    corruption = (run_dir / "table_corruption.md").read_text()
    assert all(f"| {m} | {arm} | 1 | 1024 (512) |" in corruption for m in ("ecpo", "ecpo-pb")
               for arm in ("adaptive", "frozen"))
    assert "at cost weight 0.01" in (run_dir / "table_harness.md").read_text()

    for fig in FIGURES:
        width, height = _png_size(run_dir / fig)
        assert width >= 600 and height >= 300, (fig, width, height)

    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["quick"] is True
    assert manifest["versions"]["numpy"] == np.__version__
    assert set(manifest["stages"]) == {f"harness:{ENV}", "ecpo", "corruption", "sim_to_real", "examples"}
    assert all(s["seconds"] >= 0 and s["command"] for s in manifest["stages"].values())
    assert set(manifest["worker_profile_hashes"]) >= {"multitool.json", "code.json"}
    assert all(re.fullmatch(r"[0-9a-f]{64}", h) for h in manifest["data_hashes"].values())
    assert any(k.endswith("recordings/smollm2.sqlite") for k in manifest["data_hashes"])
    assert manifest["seeds"]["offline"] == [0]

    report = (run_dir / "report.html").read_text()
    assert report.count('src="data:image/png;base64,') == len(FIGURES)
    assert "QUICK RUN" in report and "what agrees with the papers" in report
    examples = json.loads((run_dir / "examples.json").read_text())["episodes"]
    assert [ep["policy"] for ep in examples] == ["static", "forced-check"]
    assert all(s["cost"] is not None and s["text"] for ep in examples for s in ep["steps"])
    assert examples[0]["steps"][-1]["action"] == "SUBMIT" and "CHECK" in [s["action"] for s in examples[1]["steps"]]
    assert report.count('<div class="episode">') == 2


def test_the_papers_figures_and_claims_are_read_from_the_shipped_data_file(run_dir):
    import configparser
    import html

    from harness_gym_baselines.experiments import paper_claims

    cfg = configparser.ConfigParser()
    cfg.read(Path(__file__).resolve().parents[1] / "setup.cfg")
    assert cfg["options.package_data"]["harness_gym_baselines.experiments"].split() == ["paper_claims.json"]
    shipped = json.loads(paper_claims.CLAIMS_FILE.read_text())
    assert shipped["offline_rl_paper"]["awr_minus_static_points"]["per_env"] == paper_claims.PAPER_GAIN
    # keyed by env name: every version and data variant of an env carries the paper's figure for its benchmark
    import harness_gym
    from harness_gym_baselines.report.rows import env_name

    assert set(paper_claims.PAPER_GAIN) <= {env_name(e) for e in harness_gym.ENV_IDS}
    assert [paper_claims.PAPER_GAIN.get(env_name(label)) for label in
            ("HarnessCode-v2", "HarnessCode-v1", "HarnessTauRetail-v2+tau", "HarnessMultiTool-v2")] == [10.0, 10.0, 18.2, None]

    report = html.unescape((run_dir / "report.html").read_text())
    assert f"The seed's ordering is {paper_claims.seed_ordering()}." in report
    assert f"The seed reports that {shipped['ecpo_seed_blog']['claims']['corruption']};" in report
    offline = shipped["offline_rl_paper"]["claims"]
    assert f"The paper reports it {offline['check_before_submit_emerges']}." in report
    assert f"(the paper: {offline['awr_vs_forced_check']})" in report and f"The paper: {offline['awr_vs_bc']}" in report
    with open(run_dir / "table_ecpo.csv") as fh:
        rows = list(csv.DictReader(fh))
    seed_rows = [r for r in rows if r["method"] in shipped["ecpo_seed_blog"]["table"]]
    assert seed_rows and all(
        (r["seed_reported_success"], r["seed_reported_score"], r["seed_reported_ood"])
        == tuple(shipped["ecpo_seed_blog"]["table"][r["method"]][k] for k in ("success", "score", "ood_retention"))
        for r in seed_rows)


def test_a_claims_file_without_a_field_the_report_reads_is_named(tmp_path):
    from harness_gym_baselines.experiments import paper_claims

    claims = json.loads(paper_claims.CLAIMS_FILE.read_text())
    del claims["ecpo_seed_blog"]["table"]["bc"]["score"]
    path = tmp_path / "claims.json"
    path.write_text(json.dumps(claims))
    with pytest.raises(KeyError, match=r"claims.json: no field ecpo_seed_blog.table.bc.score"):
        paper_claims.read_claims(path)


@pytest.fixture(scope="module")
def second_run(tmp_path_factory):
    """The same tiny pipeline run again from an empty folder, its stages one after another in this process, with
    what it printed on the terminal."""
    import contextlib
    import io

    out = tmp_path_factory.mktemp("reproduce2") / "run"
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        assert main(["reproduce", "--out", str(out), *TINY, "--num-workers", "1"]) == 0
    return out, stdout.getvalue(), stderr.getvalue()


def test_two_runs_from_empty_folders_write_the_same_tables_byte_for_byte(run_dir, second_run):
    """Also parallel against sequential: ``run_dir`` ran its stages in two processes, ``second_run`` in one."""
    from harness_gym_baselines.report.readme import render_block, table_lines

    out, _, _ = second_run

    def without_times(path):  # table_ecpo.csv carries each cell's train_seconds, a wall-clock measurement
        with open(path, newline="") as fh:
            rows = list(csv.reader(fh))
        drop = [k for k, name in enumerate(rows[0]) if name.endswith("seconds")]
        return [[c for k, c in enumerate(row) if k not in drop] for row in rows]

    for name in (*(f"{stem}.csv" for stem in TABLES), "table_main.md", "table_harness.md"):
        if name == "table_ecpo.csv":
            assert without_times(out / name) == without_times(run_dir / name)
        else:
            assert (out / name).read_bytes() == (run_dir / name).read_bytes(), name
    assert table_lines(out) == table_lines(run_dir) and len(table_lines(out)) == 3  # header, rule, one env
    block = render_block(out, "quick")
    assert "\n".join(table_lines(out)) in block and "From an empty `--out` the quick run took" in block
    assert re.search(r"on \d+ CPU cores under a 1-minute load average of \d+\.\d \(median of \d+ samples", block)


def test_the_readme_block_is_rewritten_from_a_run_and_checked(second_run, tmp_path):
    out, _, _ = second_run
    readme = tmp_path / "docs" / "reproduce.md"
    readme.parent.mkdir()
    from harness_gym_baselines.report.readme import markers

    begin, end = markers("quick")
    readme.write_text(f"# title\n\n{begin}\nhand-written table\n{end}\n\nafter\n")
    script = [sys.executable, str(Path(__file__).resolve().parents[1] / "scripts" / "readme_tables.py"), str(out),
              "--doc", str(readme)]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    assert subprocess.run([*script, "--check"], env=env, capture_output=True).returncode == 1
    assert subprocess.run(script, env=env, capture_output=True).returncode == 0
    text = readme.read_text()
    assert "hand-written" not in text and text.startswith("# title") and text.endswith("after\n")
    assert "| env | Q static |" in text and f"`harness-gym reproduce --out {out}" in text
    block = text[text.index(begin):text.index(end)].splitlines()
    assert block[1].startswith("![Quality against cost") and block[1].endswith("(figures/quick_frontier.png)")
    assert block[-1] == "![Q and HMS per env and controller, quick run](figures/quick_quality_hms.png)"
    for figure in ("quick_frontier.png", "quick_quality_hms.png"):
        assert (tmp_path / "docs" / "figures" / figure).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert subprocess.run([*script, "--check"], env=env, capture_output=True).returncode == 0


def test_both_runs_record_their_workers_and_every_stage(run_dir, second_run):
    for out, workers in ((run_dir, 2), (second_run[0], 1)):
        manifest = json.loads((out / "manifest.json").read_text())
        assert manifest["num_workers"] == workers
        assert all(s["seconds"] > 0 and not s.get("resumed") for s in manifest["stages"].values())


def test_a_failing_stage_in_a_worker_names_the_stage_and_stops_what_needs_it(tmp_path):
    from harness_gym_baselines.experiments.engine import Task, run_tasks

    plan = [Task("good", json.loads, {"s": "[1]"}, "good"), Task("bad", json.loads, {"s": "not json"}, "bad"),
            Task("after-bad", json.loads, {"s": "[2]"}, "after", needs=("bad",))]
    with pytest.raises(RuntimeError, match=r"reproduce stage bad failed: JSONDecodeError"):
        run_tasks(plan, tmp_path, 2)
    written = {p.stem: json.loads(p.read_text())["result"] for p in (tmp_path / "stages").glob("*.json")}
    assert written == {"good": [1]}  # the running stage finished; the one that needs the failed one never ran
    with pytest.raises(ValueError, match=r"stage bad: needs \['late'\]"):
        run_tasks([Task("bad", json.loads, {"s": "[]"}, "bad", needs=("late",)),
                    Task("late", json.loads, {"s": "[]"}, "late")], tmp_path, 2)
    from harness_gym_baselines.report.reproduce import reproduce

    with pytest.raises(ValueError, match="--num-workers 0: must be at least 1"):
        reproduce(tmp_path / "run", num_workers=0)
    with pytest.raises(SystemExit):
        main(["reproduce", "--out", str(tmp_path / "run"), "--num-workers", "0"])


def test_ready_stages_start_by_priority_then_plan_order(tmp_path):
    from harness_gym_baselines.experiments.engine import Task, run_tasks

    plan = [Task(name, json.loads, {"s": "[]"}, name, priority=priority)
            for name, priority in (("low-a", 0), ("low-b", 0), ("high", 1), ("after", 2))]
    plan[3] = Task("after", json.loads, {"s": "[]"}, "after", needs=("low-b",), priority=2)
    starts: list[list[str]] = []
    records = run_tasks(plan, tmp_path, 2, started=lambda running: starts.append(list(running)))
    assert starts[:2] == [["high"], ["high", "low-a"]]  # the two workers: priority first, then plan order
    assert list(records) == ["low-a", "low-b", "high", "after"]  # records in plan order whatever ran first
    assert starts.index(next(s for s in starts if "after" in s)) > starts.index(next(s for s in starts if "low-b" in s))


def test_a_resumed_run_states_no_time(run_dir):
    from harness_gym_baselines.report.readme import time_sentence

    manifest = json.loads((run_dir / "manifest.json").read_text())
    manifest["stages"]["ecpo"]["resumed"] = True
    with pytest.raises(ValueError, match="resumed 1 stage"):
        time_sentence(manifest, "quick run")


def test_the_last_screen_fits_80_columns_and_names_the_report(second_run):
    out, stdout, stderr = second_run
    summary = stdout[stdout.rindex("Q on the test split (* not meaningful"):].splitlines()
    screen = (stderr + stdout).splitlines()[-24:]
    assert len(summary) <= 24 and screen[-len(summary):] == summary
    assert all(len(line) <= 80 for line in screen), max(screen, key=len)
    assert f"report: {out / 'report.html'}" in summary
    table = [line for line in summary if line.startswith("MultiTool")]
    assert table and all(re.search(r"\d\.\d\d", line) for line in table)  # rows of numbers, not folded text


def test_the_terminal_table_deals_wide_tables_into_blocks():
    from harness_gym_baselines.report.reproduce import text_table

    header = ["env", *(f"controller-{i}" for i in range(12))]
    rows = [["ResearchQA", *(f"0.{i:02d}*" for i in range(12))], ["Code", *("0.50 " for _ in range(12))]]
    lines = text_table(header, rows)
    assert all(len(line) <= 80 for line in lines)
    assert sum(line.startswith("env") for line in lines) >= 3  # three blocks, the env column in each
    assert " ".join(lines).count("controller-") == 12 and " ".join(lines).count("0.11*") == 1


def test_report_renders_markdown_and_states_each_verdict_once(run_dir):
    import html as html_lib

    from harness_gym_baselines.report.writer import _md_table_html

    report = (run_dir / "report.html").read_text()
    text = re.sub(r'src="data:image/png;base64,[^"]*"', "", report)
    assert "**" not in text and "<strong>" in text  # the best return per cost weight of each frontier table
    table = _md_table_html((run_dir / "table_harness.md").read_text())
    with open(run_dir / "table_harness.csv") as fh:
        rows = list(csv.DictReader(fh))
    long = {r["verdict"] for r in rows if ":" in r["verdict"]}
    assert long, "the tiny run has not-meaningful rows (512 online steps)"
    for verdict in long:  # one footnote each (one verdict may begin another: forced submits, then "; trained ...")
        assert len(re.findall(rf'value="\d+">{re.escape(verdict)}</li>', html_lib.unescape(table))) == 1, verdict
    assert table.count("<tr>") == len(rows) + 1 and table.count('class="bad"') >= len(
        [r for r in rows if r["verdict"].startswith("not")])
    assert re.search(r'not meaningful <a href="#t[0-9a-f]{8}-v(\d)">\[\1\]</a>', table)
    assert re.search(r'reference <a href="#t[0-9a-f]{8}-v1">\[1\]</a>', table)  # one note for every probe row


def test_every_marker_of_coinciding_controllers_is_visible(tmp_path):
    """BC clones the static script and lands on its point: with filled markers of one size, BC hid static."""
    import matplotlib.image

    from harness_gym_baselines.experiments.frontier import marker_styles, plot_frontier

    def row(name, q, cost):
        return {"policy": name, "quality_mean": q, "quality_ci95": [q - 0.01, q + 0.01], "cost_mean": cost,
                "cost_ci95": [cost - 0.1, cost + 0.1], "return_at": {"0": q}, "trained_at": None}

    def blue_pixels(rows):
        path = plot_frontier(rows, [0.0], tmp_path / "f.png", "t")
        rgb = matplotlib.image.imread(path)[..., :3]
        return int((np.abs(rgb - np.array([0x1F, 0x77, 0xB4]) / 255).max(axis=-1) < 0.08).sum())  # static's C0

    styles = marker_styles(11)
    assert [s["zorder"] for s in styles] == sorted({s["zorder"] for s in styles})
    assert all(a["markersize"] > b["markersize"] for a, b in zip(styles, styles[1:]))
    assert len({s["fmt"] for s in styles}) == 11 and all(s["markerfacecolor"] == "none" for s in styles)
    others = [row("bc", 0.6, 1.0), row("awr", 0.6, 1.0), row("oracle", 0.9, 3.0)]
    hidden = blue_pixels([row("static", 5.0, 1.0), *others])  # static out of view: its legend entry only
    together = blue_pixels([row("static", 0.6, 1.0), *others])
    assert together > hidden + 40, (together, hidden)


def test_rerun_resumes_every_stage_and_writes_the_same_tables(run_dir):
    before = {stem: (run_dir / f"{stem}.csv").read_text() for stem in TABLES}
    assert main(["reproduce", "--out", str(run_dir), *TINY]) == 0
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert all(s["resumed"] for s in manifest["stages"].values())
    assert {stem: (run_dir / f"{stem}.csv").read_text() for stem in TABLES} == before


def test_rerun_with_other_settings_is_refused(run_dir, capsys):
    assert main(["reproduce", "--out", str(run_dir), *TINY[:-2], "--size", "examples=1"]) == 2
    assert "other settings" in capsys.readouterr().err


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


CHECK_SCRIPT = """<script>
window.__errors = [];
window.addEventListener('error', e => window.__errors.push(String(e.message || e.target && e.target.src)), true);
const origError = console.error; console.error = (...a) => { window.__errors.push(a.join(' ')); origError(...a); };
window.addEventListener('load', () => {
  const imgs = Array.from(document.images);
  const loaded = imgs.filter(i => i.complete && i.naturalWidth > 0).length;
  const res = {images: imgs.length, loaded: loaded, widths: imgs.map(i => i.naturalWidth),
               errors: window.__errors, tables: document.querySelectorAll('table').length,
               bodyHeight: document.body.scrollHeight};
  const pre = document.createElement('pre'); pre.id = 'hg-check'; pre.textContent = JSON.stringify(res);
  document.body.appendChild(pre); document.title = 'HGCHECK ' + loaded + '/' + imgs.length;
});
</script>"""


@pytest.mark.skipif(_chromium() is None and os.environ.get("HG_REQUIRE_CHROMIUM") != "1",
                    reason="no chromium: apt-get install -y chromium (scripts/install.sh installs it for the test "
                           "command; HG_REQUIRE_CHROMIUM=1 turns this skip into a failure)")
def test_report_renders_in_headless_chromium(run_dir, tmp_path):
    assert _chromium() is not None, "HG_REQUIRE_CHROMIUM=1 but no chromium is installed"
    page = tmp_path / "report_checked.html"
    page.write_text((run_dir / "report.html").read_text().replace("<head>", "<head>" + CHECK_SCRIPT, 1))
    base = [_chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr",
            "--v=0", "--virtual-time-budget=10000"]
    proc = subprocess.run([*base, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    match = re.search(r'<pre id="hg-check">(.*?)</pre>', proc.stdout, re.S)
    assert match, proc.stdout[-2000:]
    result = json.loads(match.group(1).replace("&quot;", '"'))
    assert result["images"] == len(FIGURES) and result["loaded"] == len(FIGURES), result
    assert min(result["widths"]) >= 600, result
    assert result["errors"] == [], result
    assert result["tables"] >= 5
    # the report has no script of its own, so any console message (an uncaught error, a console.error) is a fault
    console = [line for line in proc.stderr.splitlines() if ":CONSOLE" in line]
    assert console == [], console
    shot = tmp_path / "report.png"
    subprocess.run([*base, "--window-size=1280,2200", f"--screenshot={shot}", (run_dir / "report.html").as_uri()],
                   capture_output=True, text=True, timeout=120, check=True)
    width, height = _png_size(shot)
    assert (width, height) == (1280, 2200)
    if os.environ.get("HG_KEEP_SCREENSHOT"):
        shutil.copyfile(shot, os.environ["HG_KEEP_SCREENSHOT"])


def test_verdict_marks_collapsed_and_undertrained_rows():
    from harness_gym_baselines.report.rows import mark, verdict

    sizes = {"online_steps": 50_000, "epochs": 30}
    assert verdict("static", {"forced_submit_rate": 1.0}, [], sizes) == "fixed script"
    assert verdict("awr-q", {"forced_submit_rate": 0.1}, [{}], sizes) == "meaningful"
    collapsed = verdict("awr-q", {"forced_submit_rate": 1.0}, [{}], sizes)
    assert collapsed.startswith("not meaningful") and "100%" in collapsed and "cost weight 0" in collapsed
    assert mark(collapsed) == "*"
    # trained at w > 0 the budget's units are charged: meaningful, marked budget-ended
    offline_priced = verdict("iql", {"forced_submit_rate": 0.6}, [{"summary": {"cost_weight": 0.01}}], sizes)
    online_priced = verdict("ecpo", {"forced_submit_rate": 1.0}, [{"train_cost_weight": 0.1}], sizes)
    for text in (offline_priced, online_priced):
        assert text.startswith("meaningful, budget-ended") and mark(text) == "†"
    assert "60%" in offline_priced and "0.01" in offline_priced and "cost weight 0.1" in online_priced
    assert mark("meaningful") == "" and mark(verdict("iql", {"forced_submit_rate": 0.4}, [{"summary": {"cost_weight": 0.01}}], sizes)) == ""
    assert verdict("ecpo", {"forced_submit_rate": 1.0}, [{"train_cost_weight": 0.1, "online_steps": 4096}],
                   sizes).startswith("not meaningful: trained 4096 steps")
    short = verdict("ecpo", {"forced_submit_rate": 0.0}, [{"online_steps": 4096}], sizes)
    assert "4096 steps" in short
    assert verdict("ecpo-pb-sampled", {"forced_submit_rate": 0.0}, [{"online_steps": 4096}], sizes) == short
    assert "epochs" in verdict("bc", {"forced_submit_rate": 0.0}, [{}], {**sizes, "epochs": 10})
    # IQL and CQL: their value learning counts; CQL has no policy fit, so epochs do not
    assert verdict("iql", {"forced_submit_rate": 0.0}, [{"value_steps": 5000}], sizes) == "meaningful"
    few = verdict("cql", {"forced_submit_rate": 0.0}, [{"value_steps": 5000}, {"value_steps": 200}], sizes)
    assert few.startswith("not meaningful") and "200 steps" in few
    assert verdict("cql", {"forced_submit_rate": 0.0}, [{"value_steps": 5000}], {**sizes, "epochs": 10}) == "meaningful"
    assert "epochs" in verdict("iql", {"forced_submit_rate": 0.0}, [{"value_steps": 5000}], {**sizes, "epochs": 10})


def test_probability_of_improvement_and_aggregate_iqm():
    from harness_gym_baselines.experiments.statistics import aggregate_iqm_ci, prob_greater, probability_of_improvement

    assert prob_greater(np.array([1.0, 1.0]), np.array([0.0, 0.0])) == 1.0
    assert prob_greater(np.array([0.5]), np.array([0.5])) == 0.5
    assert prob_greater(np.array([0.0, 1.0]), np.array([0.5])) == 0.5
    rng = np.random.default_rng(0)
    better = {"a": [rng.uniform(0.5, 1.0, 40) for _ in range(3)], "b": [rng.uniform(0.5, 1.0, 40) for _ in range(3)]}
    worse = {"a": [rng.uniform(0.0, 0.6, 40) for _ in range(3)], "b": [rng.uniform(0.0, 0.6, 40) for _ in range(3)]}
    p, (lo, hi) = probability_of_improvement(better, worse, n_boot=200)
    assert 0.9 < p <= 1.0 and lo <= p <= hi
    p_rev, _ = probability_of_improvement(worse, better, n_boot=50)
    assert math.isclose(p + p_rev, 1.0)
    value, (lo, hi) = aggregate_iqm_ci(better, n_boot=200)
    assert 0.6 < lo <= value <= hi < 0.9
    with pytest.raises(ValueError, match="envs differ"):
        probability_of_improvement(better, {"a": worse["a"]})


def test_eval_save_episodes_and_view(tmp_path, capsys):
    episodes = tmp_path / "ep.json"
    assert main(["eval", ENV, "--policy", "forced-check", "--episodes", "2", "--json",
                 "--save-episodes", str(episodes)]) == 0
    saved = json.loads(episodes.read_text())
    assert saved["format"] == "harness_gym.episodes/1" and len(saved["episodes"]) == 2
    steps = saved["episodes"][0]["steps"]
    assert any(s["action"] == "CHECK" and s["text"].startswith("CHECK:") for s in steps)
    assert any(s["action"] == "DRAFT" and s["draft"] for s in steps)
    assert math.isclose(saved["episodes"][0]["cost"], sum(s["cost"] for s in steps))
    page = tmp_path / "view.html"
    assert main(["view", str(episodes), "--out", str(page)]) == 0
    text = page.read_text()
    assert text.count('<div class="episode">') == 2 and "CHECK: " in text
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "other"}')
    assert main(["view", str(bad), "--out", str(page)]) == 2
    assert "not an episodes file" in capsys.readouterr().err


def test_view_renders_a_collected_dataset(tmp_path, monkeypatch):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    assert main(["collect", ENV, "--episodes", "3", "--out", "harness/view-test-v0", "--ref-episodes", "0"]) == 0
    page = tmp_path / "ds.html"
    assert main(["view", "harness/view-test-v0", "--out", str(page)]) == 0
    text = page.read_text()
    assert text.count('<div class="episode">') == 3 and "not recorded" in text and "SUBMIT" in text


def test_benchmark_script_and_cli_do_not_import_benchmarks():
    code = ("import sys, harness_gym_baselines.cli, harness_gym_baselines.report.reproduce, harness_gym_baselines.report.writer; "
            "print(any(m.startswith('benchmarks') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert out.stdout.strip() == "False"


@shared_data_mark("tau2-retail", "db.json")
@shared_data_mark("dbbench", "standard.jsonl")
def test_public_data_variants_get_their_own_rows(tmp_path):
    out = tmp_path / "run"
    args = [*TINY, "--tau-data", str(SHARED_DATA / "tau2-retail"),
            "--dbbench-data", str(SHARED_DATA / "dbbench" / "standard.jsonl")]
    assert main(["reproduce", "--out", str(out), *args]) == 0
    with open(out / "table_harness.csv") as fh:
        rows = list(csv.DictReader(fh))
    envs = {r["env"] for r in rows}
    assert envs == {ENV, "HarnessTauRetail-v2+tau", "HarnessDBBench-v2+dbbench"}
    tau = {r["controller"]: r for r in rows if r["env"] == "HarnessTauRetail-v2+tau"}
    references = {f"{kind}-w{w}" for kind in ("best-fixed", "probe") for w in ("0", "0.01", "0.1")}
    assert set(tau) == {"static", "forced-check", "thorough", "bc", "awr", "awr-q", "iql", "cql",
                        *references}  # no online rows on public data; the searched references on it
    assert float(tau["awr"]["paper_awr_minus_static"]) == 18.2
    cells = json.loads(next((out / "offline" / "cells" / "HarnessTauRetail-v2+tau").glob("static-seed0.json"))
                       .read_text())
    import gymnasium as gym

    def test_ids(**kwargs):
        env = gym.make("HarnessTauRetail-v2", **kwargs)
        ids = {t.task_id for t in env.unwrapped.domain.tasks("test")}
        env.close()
        return ids

    played = {r["task_id"] for r in cells["records"]}
    assert played <= test_ids(data_dir=str(SHARED_DATA / "tau2-retail")) and not played <= test_ids()
    manifest = json.loads((out / "manifest.json").read_text())
    assert any(k.endswith("tau2-retail/db.json") for k in manifest["data_hashes"])
    assert main(["reproduce", "--out", str(tmp_path / "bad"), *TINY, "--tau-data", str(tmp_path / "nope")]) == 2


@shared_data_mark("tau-v1-retail", "tasks_train.py")
def test_data_without_a_test_split_is_refused_before_any_stage(tmp_path, capsys):
    """τ-bench v1 ships train and dev tasks only: the run stops at once, naming the flag and the splits, and
    writes nothing (it used to fail at that variant's stage, after the harness stages of every env)."""
    out = tmp_path / "run"
    assert main(["reproduce", "--out", str(out), *TINY, "--tau-data", str(SHARED_DATA / "tau-v1-retail")]) == 2
    err = capsys.readouterr().err
    assert "--tau-data" in err and "no test-split tasks" in err and "train 455" in err
    assert not out.exists()


# ----- generated text from the run's own numbers (no run needed) ----------------------------------------------
def test_the_reading_s_cost_sentences_follow_the_run_s_numbers():
    from harness_gym_baselines.report.reading import reading

    def text(best: dict, trained_at: list[float]) -> str:
        return " ".join(reading([], [], [], {}, [], "meaningful", "meaningful", best, False, trained_at))

    best = {"0": {"fixed": {"thorough": 2, "static": 1}, "learned_wins": 1, "envs": 3},
            "0.1": {"fixed": {"static": 3}, "learned_wins": 0, "envs": 3}}
    first = text(best, [0.01])
    assert "thorough (2 of 3 env(s)) at w = 0 and static (3 of 3 env(s)) at w = 0.1" in first
    assert "this run agrees" in first and "trained at w = 0.01" in first and "trained at w = 0)" not in first
    best["0"]["fixed"] = {"forced-check": 2, "thorough": 1}
    second = text(best, [0.0, 0.1])
    assert "forced-check (2 of 3 env(s)) at w = 0" in second and "this run does not show that" in second
    assert "trained at w = 0 and 0.1" in second and "(thorough) is the best fixed script" not in second


def test_a_seed_spread_is_printed_only_with_two_seeds_or_more():
    from harness_gym_baselines.experiments.ecpo_comparison import corruption_lines

    def run(seed: int, success: float) -> dict:
        return {"method": "ecpo", "arm": "adaptive", "seed": seed, "test_success": success, "steps": 10,
                "steps_after_switch": 5, "history": [{"weight_knowledge": 0.5}]}

    one = "\n".join(corruption_lines({"a": run(0, 0.4)}, "HarnessCode-v1", 5))
    two = "\n".join(corruption_lines({"a": run(0, 0.4), "b": run(1, 0.6)}, "HarnessCode-v1", 5))
    assert "| 40.0% |" in one and "(0.0%)" not in one
    assert "| 50.0% (10.0%) |" in two


def test_a_figure_draws_at_most_eight_controllers_with_the_fixed_scripts_and_learned_ones_first():
    from harness_gym_baselines.experiments.frontier import series_to_draw
    from harness_gym_baselines.report.figures import MAX_SERIES, figure_controllers

    names = ["static", "forced-check", "thorough", "bc", "awr", "awr-q", "iql", "cql", "ppo-sparse", "ecpo",
             "ecpo-pb", *(f"best-fixed-w{w}" for w in (0, 0.01, 0.1)), *(f"probe-w{w}" for w in (0, 0.01, 0.1))]
    rows = [{"env_id": e, "policy": n, "quality_mean": (0.9 if n.startswith(("best", "probe")) else i / 40)}
            for e in ("A", "B") for i, n in enumerate(names)]
    drawn = figure_controllers(rows)
    assert len(drawn) == MAX_SERIES == 8 and drawn[:3] == ["static", "forced-check", "thorough"]
    assert drawn[3:] == ["ecpo-pb", "ecpo", "ppo-sparse", "cql", "iql"]  # learned first, by mean Q
    groups = {n: [{"return_at": {"0": (0.9 if n.startswith(("best", "probe")) else i / 40)}}]
              for i, n in enumerate([*names, "random", "oracle"])}
    kept = series_to_draw(groups)
    assert len(kept) == 8 and {"static", "forced-check", "thorough", "oracle"} <= set(kept)
    assert not any(n.startswith(("best-fixed", "probe")) for n in kept)
