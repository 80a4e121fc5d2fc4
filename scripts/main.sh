#!/usr/bin/env bash
# The main job: install, then reproduce both papers' tables and figures at the quick sizes (the README states its
# measured time): results/quick/report.html, table_*.md/.csv, fig_*.png, manifest.json (docs/reproduce.md).
# Runs in the virtualenv of scripts/env.sh without activating it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
# shellcheck source=scripts/env.sh
source scripts/env.sh
"$HG_PY" -m harness_gym_baselines.cli reproduce --quick --out "${OUT:-results/quick}"
