#!/usr/bin/env bash
# Install (Debian's mariadb-server) and start MariaDB bound to the loopback interface only, then create the
# account the HarnessDBBench-v1 MySQL engine administers episodes with: it may create the episode schemas
# (${PREFIX}_<hex>) and, per episode, an account that reaches only that episode's schema (granted SELECT,
# INSERT, UPDATE, DELETE there, with a MAX_STATEMENT_TIME), through which every statement of the episode runs.
# Idempotent: a server that already answers is left running.
# Prints the DSN on the last line of stdout, e.g.
#   export HG_MYSQL_DSN="$(scripts/start_mariadb.sh | tail -n 1)"
# A throwaway test server: durability is traded for speed (no doublewrite, log flushed once a second, one
# shared tablespace), since every episode creates and drops a schema.
# Stop it with:  mariadb-admin --protocol=socket shutdown   (mariadbd-safe exits with it)
set -euo pipefail

PORT="${HG_MYSQL_PORT:-3306}"
USER_NAME="${HG_MYSQL_USER:-harness_gym}"
PASSWORD="${HG_MYSQL_PASSWORD:-harness_gym}"
PREFIX="${HG_MYSQL_PREFIX:-hgdb}"   # episode schemas are named ${PREFIX}_<hex>; the user may only touch those

if ! command -v mariadbd-safe >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q mariadb-server >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q mariadb-server >/dev/null; }
fi

if ! mariadb-admin --protocol=socket ping >/dev/null 2>&1; then
    mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld
    if [ ! -d /var/lib/mysql/mysql ]; then
        mariadb-install-db --user=mysql --datadir=/var/lib/mysql >/dev/null
    fi
    setsid nohup mariadbd-safe --user=mysql --bind-address=127.0.0.1 --port="$PORT" --skip-name-resolve \
        --character-set-server=utf8mb4 --collation-server=utf8mb4_general_ci \
        --innodb-flush-log-at-trx-commit=2 --innodb-doublewrite=0 --innodb-file-per-table=0 \
        >/var/log/harness_gym_mariadb.log 2>&1 < /dev/null &
    for _ in $(seq 1 60); do
        mariadb-admin --protocol=socket ping >/dev/null 2>&1 && break
        sleep 0.5
    done
    mariadb-admin --protocol=socket ping >/dev/null 2>&1 || { echo "MariaDB did not start; see /var/log/harness_gym_mariadb.log" >&2; exit 1; }
fi

mariadb --protocol=socket <<SQL
CREATE USER IF NOT EXISTS '${USER_NAME}'@'127.0.0.1' IDENTIFIED BY '${PASSWORD}';
CREATE USER IF NOT EXISTS '${USER_NAME}'@'localhost' IDENTIFIED BY '${PASSWORD}';
GRANT ALL PRIVILEGES ON \`${PREFIX}\\_%\`.* TO '${USER_NAME}'@'127.0.0.1' WITH GRANT OPTION;
GRANT ALL PRIVILEGES ON \`${PREFIX}\\_%\`.* TO '${USER_NAME}'@'localhost' WITH GRANT OPTION;
GRANT CREATE USER ON *.* TO '${USER_NAME}'@'127.0.0.1';
GRANT CREATE USER ON *.* TO '${USER_NAME}'@'localhost';
FLUSH PRIVILEGES;
SQL

echo "mysql://${USER_NAME}:${PASSWORD}@127.0.0.1:${PORT}/${PREFIX}"
