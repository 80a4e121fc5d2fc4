"""The outputs of ``harness-gym reproduce`` (:mod:`harness_gym_baselines.report.reproduce`): tables,
``report.html`` and ``manifest.json``, all computed from the stage result files under the run folder; the one
table writer of the report (:func:`write_table`: Markdown and CSV). Its rows and verdicts come from
:mod:`harness_gym_baselines.report.rows`, its figures from :mod:`harness_gym_baselines.report.figures`, the
reading from :mod:`harness_gym_baselines.report.reading`.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import html
import importlib.metadata
import json
import math
import platform
import re
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness_gym_baselines.experiments import offline_comparison
from harness_gym_baselines.experiments.fixed_references import parse_reference_name
from harness_gym_baselines.experiments.paper_claims import (
    PAPER_GAIN,
    SEED_REPORTED,
)
from harness_gym_baselines.experiments.specs import provenance_line
from harness_gym_baselines.report.episode_view import STYLE as EPISODE_STYLE
from harness_gym_baselines.report.episode_view import episode_html, load_episodes
from harness_gym_baselines.report.figures import (
    best_returns,
    fig_patterns,
    fig_quality_hms,
    fig_support_ceiling,
    frontiers,
    trained_weights,
)
from harness_gym_baselines.report.reading import (
    reading,
)
from harness_gym_baselines.report.rows import (
    ABLATION,
    FIXED,
    MIN_ONLINE_STEPS,
    ONLINE,
    PACKAGES,
    aggregate_rows,
    controllers,
    env_name,
    harness_rows,
    load_cells,
    mark,
    short_label,
    verdict,
)


# ----- tables -------------------------------------------------------------------------------------------
def _f(value: Any, spec: str = ".3f") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return format(value, spec)


def _ci(value: Any, ci: Sequence[float] | None, spec: str = ".3f") -> str:
    if ci is None or value is None or (isinstance(value, float) and math.isnan(value)):
        return _f(value, spec)
    return f"{_f(value, spec)} [{_f(ci[0], spec)}, {_f(ci[1], spec)}]"


def write_table(path: Path, header: list[str], rows: list[list[Any]], title: str, run: str) -> None:
    """``path.md`` (title, then a Markdown table) and ``path.csv`` (a ``run`` column first: quick or full).

    :param path: the file stem
    :param header: column names
    :param rows: cells (strings or numbers)
    :param title: the text above the Markdown table
    :param run: ``quick`` or ``full``
    """
    with open(path.with_suffix(".csv"), "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["run", *header])
        writer.writerows([[run, *row] for row in rows])
    lines = [title, "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_f(c) if isinstance(c, float) else str(c) for c in row) + " |" for row in rows]
    path.with_suffix(".md").write_text("\n".join(lines) + "\n")


def harness_table(out: Path, rows: list[dict[str, Any]], per_env_poi: dict, banner: str, run: str) -> None:
    """``table_harness.{md,csv}``: the Markdown shows values with CIs, the CSV one number per column."""
    header = ["env", "controller", "Q [95% CI]", "IQM", "success [95% CI]", "HMS [95% CI]", "cost [95% CI]",
              "check_before_submit", "early_submit", "forced_submit", "AWR - static (points) [95% CI]",
              "paper: AWR - static", "P(> best fixed) [95% CI]", "verdict"]
    md_rows, csv_rows = [], []
    for r in rows:
        poi = per_env_poi.get((r["env_id"], r["policy"]))
        md_rows.append([r["env_id"], r["policy"], _ci(r["quality_mean"], r["quality_ci95"]), _f(r["quality_iqm"]),
                        _ci(r["success_rate"], r["success_ci95"]), _ci(r["hms_mean"], r["hms_ci95"]),
                        _ci(r["cost_mean"], r["cost_ci95"], ".2f"), _f(r["patterns"]["check_before_submit"]),
                        _f(r["patterns"]["early_submit"]), _f(r["forced_submit_rate"]),
                        _ci(r["gain_vs_static"], r["gain_vs_static_ci95"], "+.1f") if r["gain_vs_static"] is not None
                        else "", _f(r["paper_gain"], "+.1f") if r["paper_gain"] is not None else "",
                        _ci(poi[0], poi[1], ".2f") if poi else "", r["verdict"]])
        gain_ci = r["gain_vs_static_ci95"] or (None, None)
        csv_rows.append([r["env_id"], r["policy"], r["seeds"], r["episodes"], r["quality_mean"], *r["quality_ci95"],
                         r["quality_iqm"], r["success_rate"], *r["success_ci95"], r["hms_mean"], *r["hms_ci95"],
                         r["cost_mean"], *r["cost_ci95"], r["patterns"]["check_before_submit"],
                         r["patterns"]["early_submit"], r["forced_submit_rate"], r["gain_vs_static"], *gain_ci,
                         r["paper_gain"], poi[0] if poi else None, *(poi[1] if poi else (None, None)), r["verdict"]])
    write_table(out / "table_harness", header, md_rows, f"Harness controllers on the test split. {banner}", run)
    with open(out / "table_harness.csv", "w", newline="") as fh:  # one number per column in the CSV
        writer = csv.writer(fh)
        writer.writerow(["run", "env", "controller", "seeds", "episodes", "Q", "Q_ci_lo", "Q_ci_hi", "Q_iqm",
                         "success", "success_ci_lo", "success_ci_hi", "hms", "hms_ci_lo", "hms_ci_hi", "cost",
                         "cost_ci_lo", "cost_ci_hi", "check_before_submit", "early_submit", "forced_submit",
                         "awr_minus_static_points", "gain_ci_lo", "gain_ci_hi", "paper_awr_minus_static",
                         "p_improvement_vs_best_fixed", "poi_ci_lo", "poi_ci_hi", "verdict"])
        writer.writerows([[run, *row] for row in csv_rows])


def main_table(out: Path, rows: list[dict[str, Any]], banner: str) -> None:
    """``table_main.md``: one line per env, Q of every controller (``*``: not meaningful), check-before-submit
    of static and AWR-q, and AWR-q minus static beside the paper's figure (the README shows this table)."""
    by = {(r["env_id"], r["policy"]): r for r in rows}
    names = controllers({r["policy"] for r in rows})
    head = ["env", *(f"Q {n}" for n in names), "check<submit static / awr-q", "AWR-q - static (paper)"]
    lines = [f"Q per env and controller, test split (`*`: not meaningful; `†`: budget-ended, the budget ends most "
             f"episodes of a controller trained at a cost weight > 0; see table_harness.md). {banner}", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for label in dict.fromkeys(r["env_id"] for r in rows):
        cells = []
        for n in names:
            r = by.get((label, n))
            cells.append("" if r is None else f"{r['quality_mean']:.2f}" + mark(r["verdict"]))
        cbs = " / ".join(_f(by[(label, n)]["patterns"]["check_before_submit"], ".2f") if (label, n) in by else "n/a"
                         for n in ("static", "awr-q"))
        gain = by.get((label, "awr-q"), {}).get("gain_vs_static")
        paper = PAPER_GAIN.get(env_name(label))
        lines.append(f"| {short_label(label)} | " + " | ".join(cells) + f" | {cbs} | "
                     + ("" if gain is None else f"{gain:+.1f}") + (f" ({paper:+.1f})" if paper else "") + " |")
    (out / "table_main.md").write_text("\n".join(lines) + "\n")


# ----- report.html and the manifest -------------------------------------------------------------------------
_INLINE = re.compile(r"\*\*(?P<bold>[^*]+)\*\*|`(?P<code>[^`]+)`")


def inline_html(text: str) -> str:
    """Markdown's inline marks as HTML, the rest escaped: ``**bold**`` and ```code```, as the tables and
    titles of the run's ``.md`` files use them.

    :param text: one line or cell of Markdown
    """
    out, pos = [], 0
    for m in _INLINE.finditer(text):
        out.append(html.escape(text[pos:m.start()]))
        out.append(f"<strong>{html.escape(m['bold'])}</strong>" if m["bold"] is not None
                   else f"<code>{html.escape(m['code'])}</code>")
        pos = m.end()
    out.append(html.escape(text[pos:]))
    return "".join(out)


def _md_table_html(md: str, *, notes_id: str = "") -> str:
    """A Markdown table (and the text lines around it) as HTML, inline marks rendered (:func:`inline_html`).

    A ``verdict`` column states each distinct verdict once: a cell shows the verdict's head (``meaningful``,
    ``fixed script``, ``not meaningful``) with a numbered reference to the full text, listed once under the
    table.

    :param md: the Markdown
    :param notes_id: prefix of the verdict notes' anchors (unique per table in one page)
    """
    parts, table = [], []
    for line in md.splitlines() + [""]:
        if line.startswith("|"):
            table.append(line)
            continue
        if table:
            parts.append(_table_html(table, notes_id or "t" + hashlib.sha256("\n".join(table).encode()).hexdigest()[:8]))
            table = []
        if line.strip():
            parts.append(f"<p>{inline_html(line)}</p>")
    return "\n".join(parts)


def _table_html(lines: list[str], notes_id: str) -> str:
    head = [c.strip() for c in lines[0].strip().strip("|").split("|")]
    body = [[c.strip() for c in row.strip().strip("|").split("|")] for row in lines[2:]]
    verdict_col = head.index("verdict") if "verdict" in head else None
    notes: dict[str, int] = {}

    def cell(k: int, text: str) -> str:
        bad = ' class="bad"' if text.startswith("not meaningful") else ""
        if k != verdict_col or ":" not in text:
            return f"<td{bad}>{inline_html(text)}</td>"
        number = notes.setdefault(text, len(notes) + 1)
        return (f'<td{bad}>{html.escape(text.split(":", 1)[0])} '
                f'<a href="#{notes_id}-v{number}">[{number}]</a></td>')

    rows = "".join("<tr>" + "".join(cell(k, c) for k, c in enumerate(row)) + "</tr>" for row in body)
    out = ("<table><thead><tr>" + "".join(f"<th>{inline_html(h)}</th>" for h in head) + "</tr></thead><tbody>"
           + rows + "</tbody></table>")
    if notes:
        out += ('<ol class="verdicts">' + "".join(f'<li id="{notes_id}-v{n}" value="{n}">{inline_html(text)}</li>'
                                                   for text, n in notes.items()) + "</ol>")
    return out


def _img(path: Path, alt: str) -> str:
    data = base64.b64encode(path.read_bytes()).decode()
    return f'<figure><img alt="{html.escape(alt)}" src="data:image/png;base64,{data}"><figcaption>{html.escape(alt)}</figcaption></figure>'


def sha256(path: Path) -> str:
    """The SHA-256 of a file."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def data_hashes(settings: dict[str, Any]) -> dict[str, str]:
    """SHA-256 of the worker profiles, the shipped recording, the task banks and any public data given."""
    from harness_gym.core.paths import data_path

    root = Path(data_path("profiles")).parent
    files = sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    out = {str(p.relative_to(root.parent)): sha256(p) for p in files}
    for key in ("tau_data", "dbbench_data"):
        given = settings.get(key)
        if given:
            paths = sorted(p for p in Path(given).rglob("*") if p.is_file()) if Path(given).is_dir() else [Path(given)]
            out.update({str(p): sha256(p) for p in paths})
    return out


def write_report(out: Path, *, settings: dict[str, Any], stages: dict[str, dict[str, Any]], argv: list[str],
                 total_seconds: float, machine: dict[str, Any] | None = None) -> dict[str, Any]:
    """Write every table, figure, ``report.html`` and ``manifest.json`` from the stage results; every table ends
    with the line naming its spec (:func:`harness_gym_baselines.experiments.specs.provenance_line`).

    :param out: the run folder
    :param settings: the run's settings (:func:`harness_gym_baselines.report.reproduce.reproduce`)
    :param stages: stage name -> stage record
    :param argv: the command line
    :param total_seconds: wall time of the stages in this invocation
    :param machine: the CPUs and the load average sampled during the run
        (:class:`harness_gym_baselines.report.reproduce.LoadSampler`), for the manifest
    """
    quick, sizes = settings["quick"], settings["sizes"]
    run = "quick" if quick else "full"
    banner, text_banner = _banners(settings)
    cells = load_cells(stages)
    rows = harness_rows(cells, sizes)
    agg, ablation = _harness_tables(out, cells, rows, sizes, text_banner, run)
    ecpo_rows, online_verdict, corruption, sim = _ecpo_tables(out, stages, settings, banner, text_banner, run)
    fig_quality_hms(out / "fig_quality_hms.png", rows, banner)
    fig_patterns(out / "fig_patterns_awr.png", rows, banner)
    fig_support_ceiling(out / "fig_support_ceiling.png", ablation, banner)
    frontier_png = frontiers(out, cells, settings["cost_weights"], banner)
    for label, png in frontier_png.items():
        shutil.copyfile(png, out / f"fig_frontier_{label.replace('+', '_')}.png")
    sign_tables([*(out / name for name in TABLES), *(png.parent / "frontier.md" for png in frontier_png.values())])
    frontier_md = {label: (png.parent / "frontier.md").read_text() for label, png in frontier_png.items()}
    corruption_verdict = (f"not meaningful: trained {sizes['corruption_steps']} steps (< {MIN_ONLINE_STEPS})"
                          if sizes["corruption_steps"] < MIN_ONLINE_STEPS else "meaningful")
    cost_best = best_returns([json.loads((png.parent / "frontier.json").read_text()) for png in frontier_png.values()])
    lines = reading(rows, agg, ecpo_rows, corruption, sim["rows"], online_verdict, corruption_verdict, cost_best,
                    quick, trained_weights(cells))
    _write_html(out, lines, frontier_png, frontier_md, text_banner, argv, quick)
    return _write_manifest(out, settings, stages, argv, total_seconds, machine)


TABLES = ("table_main.md", "table_harness.md", "table_aggregate.md", "table_ablation.md", "table_ecpo.md",
          "table_corruption.md", "table_sim_to_real.md")
"""the Markdown tables of a run (besides each env's ``frontier/<env>/frontier.md``)"""


def sign_tables(paths: Sequence[Path]) -> None:
    """End each Markdown table with the line naming the spec that wrote it and where its settings are.

    :param paths: the tables of one reproduce run
    """
    line = provenance_line("reproduce")
    for path in paths:
        text = path.read_text()
        if not text.endswith(line + "\n"):
            path.write_text(text + ("" if text.endswith("\n") else "\n") + "\n" + line + "\n")


def _banners(settings: dict[str, Any]) -> tuple[str, str]:
    """The figures' banner and the tables' and report's text banner of a run."""
    sizes = settings["sizes"]
    quick = settings["quick"]
    banner = (f"\nQUICK RUN ({sizes['seeds']} offline seed(s), {sizes['buffer_episodes']}-episode buffers, "
              f"{sizes['online_steps']} online steps): not the paper numbers") if quick else ""
    trained_at = f"; every learned controller trained at cost weight {settings.get('train_cost_weight', 0.0):g}"
    text_banner = (f"QUICK RUN: {sizes['seeds']} offline seed(s) x {sizes['eval_episodes']} test episodes, "
                   f"{sizes['buffer_episodes']}-episode buffers, {sizes['online_seeds']} online seed(s) of "
                   f"{sizes['online_steps']} steps{trained_at}; not the paper numbers." if quick else
                   f"{sizes['seeds']} offline seeds x {sizes['eval_episodes']} test episodes, "
                   f"{sizes['buffer_episodes']}-episode buffers, {sizes['online_seeds']} online seeds of "
                   f"{sizes['online_steps']} steps{trained_at}.")
    return banner, text_banner


def _harness_tables(out: Path, cells: dict[str, dict[str, list[dict[str, Any]]]], rows: list[dict[str, Any]],
                    sizes: dict[str, Any], text_banner: str, run: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The harness, main, aggregate and ablation tables; returns the aggregate and the ablation rows."""
    base_labels = [label for label in cells if "+" not in label]
    agg, per_env_poi = aggregate_rows(rows, cells, base_labels)
    harness_table(out, rows, per_env_poi, text_banner + " 95% two-level bootstrap CIs (seeds, then episodes); "
                  "P(> best fixed): probability of improvement over the env's best fixed script.", run)
    main_table(out, rows, text_banner)
    write_table(out / "table_aggregate", ["controller", "envs", "IQM [95% CI]", "mean Q", "P(> best fixed) [95% CI]"],
                [[r["controller"], r["envs"], _ci(r["iqm"], r["iqm_ci95"]), r["mean_q"],
                  _ci(r.get("p_improvement"), r.get("p_improvement_ci95"), ".2f") if "p_improvement" in r else ""]
                 for r in agg],
                f"Aggregate over {len(base_labels)} envs: IQM of episode quality with stratified bootstrap CIs, and "
                f"the probability of improvement over each env's best fixed script (harness_gym_baselines/experiments/statistics.py). {text_banner}",
                run)
    ablation = [offline_comparison.pooled(label, name, cells[label][name]) for label in cells for name in ABLATION
                if name in cells[label]]
    write_table(out / "table_ablation", ["env", "learner", "Q [95% CI]", "check_before_submit",
                                         "episodes removed per seed"],
                [[r["env_id"], r["policy"], _ci(r["quality_mean"], r["quality_ci95"]),
                  _f(r["patterns"]["check_before_submit"]),
                  ", ".join(str(n) for n in r.get("removed_episodes_per_seed", []))] for r in ablation],
                "Support-ceiling ablation: the same learner on the buffer without the episodes holding a successful "
                f"revise (harness_gym_baselines/experiments/offline_comparison.py). {text_banner}", run)

    return agg, ablation


def _ecpo_tables(out: Path, stages: dict[str, dict[str, Any]], settings: dict[str, Any], banner: str,
                 text_banner: str, run: str) -> tuple[list[dict[str, Any]], str, dict[str, Any], dict[str, Any]]:
    """The ECPO, corruption and sim-to-real tables and the corruption figure; returns the ECPO rows, the online
    rows' verdict, the corruption runs and the sim-to-real result."""
    from harness_gym_baselines.experiments.ecpo_comparison import corruption_lines, plot_corruption

    sizes = settings["sizes"]
    # the ECPO table, as ecpo_comparison wrote it
    online = out / "online"
    ecpo_rows = stages["ecpo"]["result"]["rows"]
    online_verdict = (f"not meaningful: trained {sizes['online_steps']} steps (< {MIN_ONLINE_STEPS}, the budget of "
                      "docs/ecpo.md)" if sizes["online_steps"] < MIN_ONLINE_STEPS else "meaningful")
    (out / "table_ecpo.md").write_text(f"ECPO comparison (harness_gym_baselines/experiments/ecpo_comparison.py). {text_banner}\n\n"
                                       f"Verdict of the ppo-sparse, ppo-dense and ECPO rows: {online_verdict}.\n\n"
                                       + (online / "table.md").read_text())
    with open(online / "table.csv") as src, open(out / "table_ecpo.csv", "w", newline="") as dst:
        reader = csv.reader(src)
        writer = csv.writer(dst)
        writer.writerow(["run", *next(reader), "seed_reported_success", "seed_reported_score", "seed_reported_ood",
                         "verdict"])
        for row in reader:
            method = row[2]
            writer.writerow([run, *row, *SEED_REPORTED.get(method, ("", "", "")),
                             online_verdict if method in ONLINE else
                             verdict(method, {"forced_submit_rate": 0.0}, [], sizes) if method in FIXED
                             or parse_reference_name(method) else "meaningful"])
    corruption = stages["corruption"]["result"]["runs"]
    plot_corruption(corruption, settings["corruption_env"], sizes["corrupt_from"], out / "fig_ecpo_corruption.png",
                    title_suffix=banner)
    (out / "table_corruption.md").write_text(
        "\n".join(corruption_lines(corruption, settings["corruption_env"], sizes["corrupt_from"]))
        + f"\n\n{text_banner} Corruption runs: {sizes['corruption_seeds']} seed(s) of {sizes['corruption_steps']} "
        f"steps, {sizes['corruption_steps'] - sizes['corrupt_from']} of them after the switch.\n")
    sim = stages["sim_to_real"]["result"]
    (out / "table_sim_to_real.md").write_text(
        f"Sim-to-real: {sim['model']} replayed from the shipped recording ({sim['recording']}), no server; the "
        f"simulated worker on the same tasks with its default and its fitted profile ({sizes['sim_seeds']} seeds per "
        f"recorded episode). {text_banner}\n\n{sim['markdown']}\n")
    return ecpo_rows, online_verdict, corruption, sim


def _write_html(out: Path, lines: list[str], frontier_png: dict[str, Path], frontier_md: dict[str, str],
                text_banner: str, argv: list[str], quick: bool) -> None:
    """``report.html``: the reading, every table and figure, the example episodes."""
    examples = load_episodes(out / "examples.json") if (out / "examples.json").exists() else []
    figures = [("fig_quality_hms.png", "Q and HMS per env and controller with 95% CIs"),
               ("fig_patterns_awr.png", "Pattern rates before and after AWR"),
               ("fig_support_ceiling.png", "Support-ceiling ablation"),
               ("fig_ecpo_corruption.png", "ECPO knowledge-corruption experiment: adaptive vs frozen trust weights")]
    css = ("body{font-family:sans-serif;max-width:1250px;margin:1em auto;padding:0 1em;background:#fafafa;color:#222}"
           "table{border-collapse:collapse;font-size:.8em;margin:.5em 0;background:#fff}"
           "td,th{border:1px solid #ccc;padding:.2em .4em;text-align:left}th{background:#eee}"
           "td.bad{color:#a00}ol.verdicts{font-size:.85em;margin:.2em 0 1em 0}figure{margin:1em 0}img{max-width:100%;border:1px solid #ddd;background:#fff}"
           ".banner{background:#fff3cd;border:1px solid #e0c060;padding:.6em;border-radius:4px}" + EPISODE_STYLE)
    sections = [f"<h1>harness_gym: reproduction report{' (quick run)' if quick else ''}</h1>",
                f'<p class="banner">{html.escape(text_banner)} Generated {time.strftime("%Y-%m-%d %H:%M")} by '
                f'<code>{html.escape(" ".join(argv))}</code>.</p>',
                "<h2>Quality against cost: the learned controllers on the frontier</h2>",
                _img(out / "fig_frontier.png", "Every env: the learned controllers (colour) among the named and "
                     "searched scripts, the probes and the random and oracle references (grey; black diamonds: the "
                     "best searched script at each cost weight); 95% CIs. Per env, with the iso-return lines, in "
                     "'Quality-cost frontier per env' below"),
                "<h2>Reading: what agrees with the papers and what does not</h2><ul>"
                + "".join(f"<li>{html.escape(s)}</li>" for s in lines) + "</ul>",
                "<h2>Harness controllers (offline-RL paper)</h2>", _md_table_html((out / "table_main.md").read_text()),
                _md_table_html((out / "table_harness.md").read_text()),
                "<h2>Aggregate statistics</h2>", _md_table_html((out / "table_aggregate.md").read_text()),
                _img(out / figures[0][0], figures[0][1]), _img(out / figures[1][0], figures[1][1]),
                "<h2>Support-ceiling ablation</h2>", _md_table_html((out / "table_ablation.md").read_text()),
                _img(out / figures[2][0], figures[2][1]),
                "<h2>Quality-cost frontier per env</h2>"]
    for label, png in frontier_png.items():
        sections += [_md_table_html(frontier_md[label]), _img(png, f"{label}: quality against cost")]
    sections += ["<h2>ECPO (second paper)</h2>", _md_table_html((out / "table_ecpo.md").read_text()),
                 _img(out / figures[3][0], figures[3][1]),
                 _md_table_html((out / "table_corruption.md").read_text()),
                 "<h2>Sim-to-real</h2>", _md_table_html((out / "table_sim_to_real.md").read_text()),
                 "<h2>Example episodes</h2>", "".join(episode_html(ep) for ep in examples)]
    (out / "report.html").write_text(f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>harness_gym '
                                     f'reproduction report</title><style>{css}</style></head><body>'
                                     + "\n".join(sections) + "</body></html>")



def _write_manifest(out: Path, settings: dict[str, Any], stages: dict[str, dict[str, Any]], argv: list[str],
                    total_seconds: float, machine: dict[str, Any] | None) -> dict[str, Any]:
    """``manifest.json``: the settings, seeds, versions, stage times, machine, hashes and outputs of the run."""
    from harness_gym.core.paths import data_path

    quick, sizes = settings["quick"], settings["sizes"]
    outputs = sorted(str(p.relative_to(out)) for p in out.iterdir() if p.is_file() and p.name != "manifest.json")
    profiles = Path(data_path("profiles"))
    manifest = {"quick": quick, "generated": time.strftime("%Y-%m-%dT%H:%M:%S"), "command": argv,
                "settings": settings, "seeds": {"offline": list(range(sizes["seeds"])),
                                                "online": list(range(sizes["online_seeds"])),
                                                "corruption": list(range(sizes["corruption_seeds"])),
                                                "episode_seed_rule": "seed * 1000003 + episode index"},
                "versions": _versions(), "platform": platform.platform(),
                "stages": {name: {"seconds": r["seconds"], "command": r["command"],
                                  "finished_at": r.get("finished_at"), "resumed": bool(r.get("resumed"))}
                           for name, r in stages.items()},
                "seconds_this_invocation": total_seconds, "machine": machine or {},
                "worker_profile_hashes": {p.name: sha256(p) for p in sorted(profiles.glob("*.json"))},
                "data_hashes": data_hashes(settings), "outputs": outputs}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1, default=str))
    return manifest
