# Sourced by the other scripts (never run): names the project's virtualenv and its interpreter, so that every
# script calls "$HG_PY" and nothing needs an activated environment or a `python` command.
#   HG_VENV  the virtualenv: given, else the active one ($VIRTUAL_ENV), else .venv in this checkout
#   HG_PY    its interpreter: given, else $HG_VENV/bin/python
# scripts/install.sh creates HG_VENV when it is missing; the other scripts call hg_require_venv first.
# shellcheck shell=bash
_hg_checkout="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
HG_VENV="${HG_VENV:-${VIRTUAL_ENV:-$_hg_checkout/.venv}}"
HG_PY="${HG_PY:-$HG_VENV/bin/python}"
export HG_VENV HG_PY
unset _hg_checkout

# Exit with one line naming what to run when the interpreter is not there yet.
hg_require_venv() {
  if [ ! -x "$HG_PY" ]; then
    echo "$(basename "$0"): no Python environment at $HG_PY: run bash scripts/install.sh first (or set HG_VENV)" >&2
    exit 1
  fi
}
