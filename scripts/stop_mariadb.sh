#!/usr/bin/env bash
# Stop the MariaDB server scripts/start_mariadb.sh started (scripts/test.sh calls this at its end only when no
# server answered before the run, so a server that was already up, e.g. a user's own, stays up). Idempotent.
set -euo pipefail
command -v mariadb-admin >/dev/null 2>&1 || exit 0
mariadb-admin --protocol=socket ping >/dev/null 2>&1 || exit 0
mariadb-admin --protocol=socket shutdown
