#!/usr/bin/env bash
# Start the docker engine DockerSandbox needs and build its image; idempotent (root).
#   - installs docker.io and debootstrap when missing;
#   - starts dockerd with no bridge, no iptables and no forwarding (containers get network "none" anyway)
#     when `docker info` does not answer, recording its PID in $HG_DOCKERD_PIDFILE for scripts/stop_docker.sh;
#     a dockerd that already answers is left alone (and not recorded, so stop_docker.sh leaves it too);
#   - builds the sandbox image when missing (docker/build_image.sh; about a minute).
# Prints the image tag on the last line of stdout.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PIDFILE="${HG_DOCKERD_PIDFILE:-/var/run/harness_gym_dockerd.pid}"
LOG="${HG_DOCKERD_LOG:-/var/log/harness_gym_dockerd.log}"

missing=()
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
if [ ${#missing[@]} -gt 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q "${missing[@]}" >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q "${missing[@]}" >/dev/null; }
fi

if ! docker info >/dev/null 2>&1; then
    setsid nohup dockerd --bridge=none --iptables=false --ip-forward=false --ip-masq=false \
        >"$LOG" 2>&1 </dev/null &
    echo $! >"$PIDFILE"
    for _ in $(seq 1 120); do
        docker info >/dev/null 2>&1 && break
        kill -0 "$(cat "$PIDFILE")" 2>/dev/null || break
        sleep 0.5
    done
    docker info >/dev/null 2>&1 || { echo "dockerd did not start; see $LOG" >&2; exit 1; }
fi

bash "$here/docker/build_image.sh"
