"""The result blocks of the docs, written from a run's outputs (``scripts/readme_tables.py RUN_DIR``), never by hand.

A block sits between two marker lines of a Markdown document (``docs/reproduce.md`` by default)::

    <!-- readme_tables:quick begin (scripts/readme_tables.py writes this block; do not edit) -->
    ...
    <!-- readme_tables:quick end -->

and holds what the run wrote: where it came from (its command), ``table_main.md``'s table as it is, how long
the run took with the load it ran under (``manifest.json``: ``wall_seconds`` and ``machine``, sampled by
:class:`harness_gym_baselines.report.reproduce.LoadSampler`) and its figures (:data:`FIGURES`, copied into the
``figures`` folder beside the document and linked relative to it): first the headline, the quality-cost frontier with the learned controllers on it, then Q and HMS per
env. Only a run
from an empty ``--out`` has a time to state: a run that resumed a stage is refused. Two runs with the same
settings write the same tables byte for byte (``tests/test_reproduce.py`` runs the pipeline twice).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

BLOCKS = {"quick": "The quick run's main table", "full": "The full run's main table"}
"""block name -> the sentence that opens it"""
FIGURES = (("fig_frontier.png", "figures/{name}_frontier.png",
            "Quality against cost, learned controllers among the fixed scripts, {name} run"),
           ("fig_quality_hms.png", "figures/{name}_quality_hms.png", "Q and HMS per env and controller, {name} run"))
"""(the run's figure, where the block's copy goes relative to the document that holds the block, its alt text),
in block order: the frontier heads the block, above the table; a run without a figure (one older than it) shows
the others"""


def figures(run_dir: Path, name: str) -> list[tuple[Path, str, str]]:
    """(the run's figure, its path relative to the document, its alt text) of each of :data:`FIGURES` that
    ``run_dir`` holds."""
    return [(run_dir / file, doc_path.format(name=name), alt.format(name=name))
            for file, doc_path, alt in FIGURES if (run_dir / file).is_file()]


def markers(name: str) -> tuple[str, str]:
    """The begin and end marker lines of block ``name``."""
    return (f"<!-- readme_tables:{name} begin (scripts/readme_tables.py writes this block; do not edit) -->",
            f"<!-- readme_tables:{name} end -->")


def table_lines(run_dir: Path) -> list[str]:
    """The Markdown table of the run's ``table_main.md`` (its rows, without the title).

    :param run_dir: a ``harness-gym reproduce`` output folder
    """
    path = run_dir / "table_main.md"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file; is {run_dir} the --out of a finished harness-gym reproduce?")
    return [line for line in path.read_text().splitlines() if line.startswith("|")]


def time_sentence(manifest: dict[str, Any], run: str) -> str:
    """How long the run took and under what load, from its manifest; a run that resumed stages is refused.

    :param manifest: the run's ``manifest.json``
    :param run: how the run is named in the sentence
    """
    resumed = [name for name, stage in manifest["stages"].items() if stage.get("resumed")]
    if resumed:
        raise ValueError(f"the run resumed {len(resumed)} stage(s) ({', '.join(resumed)}): its time is not the "
                         "pipeline's; the README states a time measured from an empty --out")
    machine = manifest.get("machine") or {}
    load = machine.get("load_average_1min")
    if "wall_seconds" not in manifest or not load:
        raise ValueError("manifest.json has no wall_seconds or machine.load_average_1min: the run predates "
                         "their recording; rerun it")
    minutes, seconds = divmod(round(manifest["wall_seconds"]), 60)
    stages = ", ".join(f"{name.removeprefix('harness:')} {stage['seconds']:.0f} s"
                       for name, stage in manifest["stages"].items())
    return (f"From an empty `--out` the {run} took {minutes} min {seconds} s wall on {machine.get('cpus')} CPU "
            f"cores under a 1-minute load average of {load['median']:.1f} (median of {load['samples']} samples "
            f"every {load['every_s']:g} s; {load['min']:.1f} to {load['max']:.1f}; the run's own processes "
            f"count in it). Stages: {stages}; report {_report_seconds(manifest):.0f} s.")


def _report_seconds(manifest: dict[str, Any]) -> float:
    return max(0.0, manifest["wall_seconds"] - manifest["seconds_this_invocation"])


def render_block(run_dir: Path, name: str, *, with_time: bool = True) -> str:
    """The lines between the markers of block ``name``, from the run in ``run_dir``.

    :param run_dir: a ``harness-gym reproduce`` output folder
    :param name: a key of :data:`BLOCKS`
    :param with_time: include the time sentence (two runs' blocks differ only there)
    """
    if name not in BLOCKS:
        raise ValueError(f"unknown block {name!r}: expected one of {', '.join(BLOCKS)}")
    manifest = json.loads((run_dir / "manifest.json").read_text())
    if manifest["quick"] != (name == "quick"):
        raise ValueError(f"{run_dir} is a {'quick' if manifest['quick'] else 'full'} run, not one for the {name} "
                         "block")
    sizes = manifest["settings"]["sizes"]
    command = " ".join(["harness-gym", *manifest["command"][1:]])
    shown = figures(run_dir, name)
    head = [f"![{alt}]({path})" for file, path, alt in shown if file.name == FIGURES[0][0]]
    lines = [*head, *([""] if head else []), f"{BLOCKS[name]} (`table_main.md` of `{command}`: Q on the test split, {sizes['seeds']} seed(s) x "
             f"{sizes['eval_episodes']} episodes, {sizes['buffer_episodes']}-episode buffers, "
             f"{sizes['online_steps']} online steps; `*` = not meaningful, `†` = budget-ended (the budget ends most episodes "
             "of a controller trained at a cost weight > 0), see the verdicts in `report.html`):", ""]
    lines += table_lines(run_dir)
    if with_time:
        lines += ["", time_sentence(manifest, f"{name} run")]
    lines += [line for file, path, alt in shown if file.name != FIGURES[0][0] for line in ("", f"![{alt}]({path})")]
    return "\n".join(lines)


def replace_block(text: str, name: str, block: str) -> str:
    """``text`` (a document) with the content of block ``name`` replaced by ``block``.

    :param text: the document's text
    :param name: the block
    :param block: its new content
    """
    begin, end = markers(name)
    pattern = re.compile(rf"^{re.escape(begin)}\n.*?^{re.escape(end)}$", re.S | re.M)
    if len(pattern.findall(text)) != 1:
        raise ValueError(f"the document needs exactly one block {name!r}: a line {begin!r}, then the block, then a "
                         f"line {end!r}")
    return pattern.sub(lambda _: f"{begin}\n{block}\n{end}", text)
