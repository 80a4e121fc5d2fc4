#!/usr/bin/env bash
# Installs everything harness_gym and its tests need on a fresh Debian machine (idempotent).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  need=()
  command -v bwrap >/dev/null || need+=(bubblewrap)
  # headless Chromium for the test command (HG_WITH_CHROMIUM=1, set by scripts/test.sh):
  # tests/test_reproduce.py renders report.html in it
  if [ "${HG_WITH_CHROMIUM:-0}" = 1 ]; then command -v chromium >/dev/null || need+=(chromium); fi
  if [ ${#need[@]} -gt 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  fi
else
  command -v bwrap >/dev/null || echo "note: bubblewrap is not installed; the process sandbox runs with reduced isolation" >&2
  if [ "${HG_WITH_CHROMIUM:-0}" = 1 ]; then
    command -v chromium >/dev/null || echo "note: chromium is not installed; the report rendering test is skipped" >&2
  fi
fi

python -m pip install -q -c constraints.txt -e ".[test]"
