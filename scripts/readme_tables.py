"""Rewrite a result block of docs/reproduce.md from a ``harness-gym reproduce`` run: ``python scripts/readme_tables.py RUN_DIR``.

The block (``quick`` for a ``--quick`` run, ``full`` otherwise) is the run's ``table_main.md`` with its command,
time and load, and its figures, copied into ``figures/`` beside the document (``docs/figures``;
:mod:`harness_gym_baselines.report.readme`). ``--doc FILE`` writes into another document that holds the block.
``--check`` changes nothing and exits 1 when the document's block differs from what the run would write. Run it with the virtualenv's interpreter
(``.venv/bin/python scripts/readme_tables.py results/quick``).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from harness_gym_baselines.report.readme import figures, markers, render_block, replace_block

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path, help="the --out folder of a finished harness-gym reproduce")
    parser.add_argument("--doc", "--readme", dest="doc", type=Path, default=ROOT / "docs" / "reproduce.md",
                        help="the document that holds the block (default: the checkout's docs/reproduce.md)")
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 when the block differs")
    args = parser.parse_args(argv)
    try:
        manifest = json.loads((args.run_dir / "manifest.json").read_text())
        name = "quick" if manifest["quick"] else "full"
        text = args.doc.read_text()
        new = replace_block(text, name, render_block(args.run_dir, name))
    except (OSError, ValueError, KeyError) as exc:
        print(f"readme_tables: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    if args.check:
        same = new == text
        print(f"{args.doc}: block {name!r} {'matches' if same else 'differs from'} {args.run_dir}")
        return 0 if same else 1
    if new != text:
        args.doc.write_text(new)
    for source, doc_path, _ in figures(args.run_dir, name):
        figure = args.doc.parent / doc_path
        figure.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, figure)
    print(f"{args.doc}: block {name!r} ({markers(name)[0][:30]}...) {'rewritten' if new != text else 'unchanged'} "
          f"from {args.run_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
