#!/usr/bin/env bash
# The sandbox and red-team tests again, from a virtualenv under /tmp holding a wheel install of the package
# (so the package and its hidden data lie in site-packages, inside what the sandbox must mount), with full
# isolation required. Prints the isolation in force and shows that a degraded sandbox fails the run.
# Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
venv=$(mktemp -d /tmp/hg-venv.XXXXXX)
chmod 755 "$venv"   # as a virtualenv made by hand is: the jobs' uid must reach its interpreter
work=$(mktemp -d /tmp/hg-tests.XXXXXX)
trap 'rm -rf "$venv" "$work" "$root/build"' EXIT
python -m venv --system-site-packages "$venv"
"$venv/bin/pip" install -q --no-deps "$root"   # a real (non-editable) install: the data lands in site-packages
cp -r "$root/tests" "$work/tests"   # outside the checkout, so that the tests import the installed package
cd "$work"
export HG_REQUIRE_ISOLATION=1
"$venv/bin/python" -c 'import harness_gym; print("package under test:", harness_gym.__file__)'
"$venv/bin/python" -m harness_gym_baselines.cli doctor --require
if PATH=/nonexistent "$venv/bin/python" -c 'from harness_gym.sandbox import ProcessSandbox; ProcessSandbox().start()' \
    2>/dev/null; then
  echo "FAIL: without bubblewrap a degraded sandbox started although isolation is required" >&2
  exit 1
fi
echo "ok: without bubblewrap the sandbox refuses to start (HG_REQUIRE_ISOLATION=1)"
"$venv/bin/python" -m pytest -q -p no:cacheprovider tests/test_sandbox.py tests/test_redteam.py "$@"
