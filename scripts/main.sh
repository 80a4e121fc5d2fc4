#!/usr/bin/env bash
# The main job: install, then compare the static and forced-CHECK harnesses on HarnessCode-v0.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
harness-gym compare HarnessCode-v0 --policy static --policy forced-check --policy oracle \
  --episodes "${EPISODES:-500}" --split test --seed 0
