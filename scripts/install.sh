#!/usr/bin/env bash
# Installs everything harness_gym and its tests need on a fresh Debian machine (idempotent):
#   - as root with apt-get: bubblewrap (and chromium with HG_WITH_CHROMIUM=1, which scripts/test.sh sets);
#     python3-venv when `python3 -m venv` cannot work (Debian ships ensurepip in that package);
#   - the virtualenv of scripts/env.sh: the active one ($VIRTUAL_ENV), else .venv in this checkout (HG_VENV
#     overrides), made with `python3 -m venv` when missing; nothing needs a `python` command or activation;
#   - into it: pip install -c constraints.txt -e ".[test]".
# HG_NO_APT=1 skips apt-get even as root (scripts/test.sh --light sets it).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/env.sh
source scripts/env.sh

can_apt=0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null && [ "${HG_NO_APT:-0}" != 1 ]; then can_apt=1; fi
apt_install() {
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

need=()
command -v bwrap >/dev/null || need+=(bubblewrap)
# headless Chromium for tests/test_reproduce.py, which renders report.html in it
if [ "${HG_WITH_CHROMIUM:-0}" = 1 ]; then command -v chromium >/dev/null || need+=(chromium); fi
if [ ${#need[@]} -gt 0 ]; then
  if [ "$can_apt" = 1 ]; then
    apt_install "${need[@]}"
  else
    for pkg in "${need[@]}"; do
      case "$pkg" in
        bubblewrap) echo "install.sh: note: bubblewrap is not installed; the process sandbox runs with reduced isolation" >&2 ;;
        chromium) echo "install.sh: note: chromium is not installed; the report rendering test is skipped" >&2 ;;
      esac
    done
  fi
fi

if ! "$HG_PY" -m pip --version >/dev/null 2>&1; then
  command -v python3 >/dev/null || {
    echo "install.sh: no python3 on PATH: install Python >= 3.10 (Debian: apt-get install python3 python3-venv)" >&2; exit 1; }
  python3 -c 'import sys; sys.exit(sys.version_info < (3, 10))' || {
    echo "install.sh: $(command -v python3) is Python $(python3 -c 'import platform; print(platform.python_version())'); harness_gym needs >= 3.10" >&2
    exit 1; }
  # Debian's python3 has the venv module but not ensurepip (package python3-venv); without it venv fails
  # half-way, leaving a folder with no pip
  if ! python3 -c 'import ensurepip' 2>/dev/null; then
    if [ "$can_apt" = 1 ]; then
      apt_install python3-venv
    else
      echo "install.sh: python3 cannot make a virtualenv (no ensurepip): as root run apt-get install python3-venv, or activate a virtualenv and rerun" >&2
      exit 1
    fi
  fi
  echo "install.sh: creating the virtualenv $HG_VENV"
  python3 -m venv "$HG_VENV"   # on an existing folder (an earlier failed try) this only adds what is missing
fi
echo "install.sh: installing harness-gym[test] into $HG_VENV"
"$HG_PY" -m pip install -q -c constraints.txt -e ".[test]"
