#!/usr/bin/env bash
# Stop the dockerd that scripts/start_docker.sh started (by the PID it recorded); any other dockerd is left
# running. Removes leftover DockerSandbox containers first. Idempotent.
set -euo pipefail
PIDFILE="${HG_DOCKERD_PIDFILE:-/var/run/harness_gym_dockerd.pid}"
[ -f "$PIDFILE" ] || exit 0
pid="$(cat "$PIDFILE")"
if kill -0 "$pid" 2>/dev/null && [ "$(cat /proc/"$pid"/comm 2>/dev/null)" = dockerd ]; then
    ids="$(docker ps -aq --filter label=harness_gym.sandbox=1 2>/dev/null || true)"
    [ -z "$ids" ] || docker rm -f $ids >/dev/null 2>&1 || true
    kill -TERM "$pid"
    for _ in $(seq 1 60); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.5
    done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
fi
rm -f "$PIDFILE"
