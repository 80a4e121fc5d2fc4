"""The sim-to-real gap on a recording: the real model (replayed) against the simulator on its default and
on its fitted profile, for the same controllers on the same tasks (:mod:`harness_gym_baselines.experiments.sim_to_real`).

Writes the fitted profiles to ``OUT/<domain>.json`` and prints the table, then the fitted parameters beside
the defaults with their 95% intervals. ``harness-gym reproduce`` writes the same table as
``table_sim_to_real.md``.

Example::

    python benchmarks/sim_to_real.py --out /tmp/fitted_profiles
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from harness_gym_baselines.experiments.sim_to_real import markdown, sim_to_real


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--manifest", type=Path, default=None, help="default: envs_data/recordings/smollm2.json")
    parser.add_argument("--out", type=Path, required=True, help="folder for the fitted profiles")
    parser.add_argument("--sim-seeds", type=int, default=20)
    args = parser.parse_args(argv)
    rows, fits, _ = sim_to_real(args.manifest, sim_seeds=args.sim_seeds, profiles_out=args.out)
    print(markdown(rows, fits))
    return {"rows": [(r.env_id, r.controller, r.tasks, r.q_real, r.q_sim_default, r.q_sim_fitted, r.llm_calls_real)
                     for r in rows]}


if __name__ == "__main__":
    main()
