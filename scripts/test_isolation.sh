#!/usr/bin/env bash
# The sandbox and red-team tests again, from a virtualenv under /tmp holding a wheel install of the package
# (so the package and its hidden data lie in site-packages, inside what the sandbox must mount), with full
# isolation required. Prints the isolation in force and shows that a degraded sandbox fails the run.
# Extra arguments go to pytest.
#
# The /tmp virtualenv is made by the project virtualenv's base interpreter ("$HG_PY" -m venv) and gets the
# package as a user gets it: pip builds the wheel and installs it with the dependencies it declares
# ([docker,mysql] and pytest), at the versions the project virtualenv holds (its `pip freeze` is the
# constraint, so pip's cache serves them). It cannot borrow the project virtualenv's packages (a .pth file, or
# --system-site-packages, which means the base interpreter's packages, not the virtualenv's): the sandbox
# mounts only the interpreter's own installation and site-packages, so the jobs would not see them.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/env.sh
source scripts/env.sh
hg_require_venv
root=$PWD
venv=$(mktemp -d /tmp/hg-venv.XXXXXX)
chmod 755 "$venv"   # as a virtualenv made by hand is: the jobs' uid must reach its interpreter
work=$(mktemp -d /tmp/hg-tests.XXXXXX)
trap 'rm -rf "$venv" "$work" "$root/build"' EXIT
"$HG_PY" -m venv "$venv"
# the project virtualenv's versions, less editable installs and direct references (pip refuses them as constraints)
"$HG_PY" -m pip freeze --exclude-editable | grep -v ' @ ' > "$work/versions.txt"
"$venv/bin/python" -m pip install -q -c constraints.txt -c "$work/versions.txt" "$root[docker,mysql]" pytest
cp -r "$root/tests" "$work/tests"   # outside the checkout, so that the tests import the installed package
cd "$work"
export HG_REQUIRE_ISOLATION=1
"$venv/bin/python" - "$venv" <<'PY'
import sys
import harness_gym
from harness_gym.core.paths import data_path

venv = sys.argv[1]
for what, path in (("package", harness_gym.__file__), ("data", str(data_path()))):
    print(f"{what} under test: {path}")
    if not path.startswith(venv + "/"):
        sys.exit(f"FAIL: the {what} under test is not the wheel install in {venv}")
PY
"$venv/bin/python" -m harness_gym_baselines.cli doctor --require
if PATH=/nonexistent "$venv/bin/python" -c 'from harness_gym.sandbox import ProcessSandbox; ProcessSandbox().start()' \
    2>/dev/null; then
  echo "FAIL: without bubblewrap a degraded sandbox started although isolation is required" >&2
  exit 1
fi
echo "ok: without bubblewrap the sandbox refuses to start (HG_REQUIRE_ISOLATION=1)"
"$venv/bin/python" -m pytest -q -p no:cacheprovider tests/test_sandbox.py tests/test_redteam.py "$@"
