#!/usr/bin/env bash
# Runs the README's commands on a fresh Debian and prints the transcript (commands, wall times, load, exit
# codes, pytest summary lines). Root; needs debootstrap, unshare and pivot_root (util-linux).
#
#   bash scripts/prove_fresh_machine.sh [ROOTFS]        (default /var/tmp/hg-fresh-rootfs)
#
# ROOTFS, when it holds no Debian yet, is made with `debootstrap --variant=minbase bookworm` plus Debian's
# python3 and git (to clone), nothing else: no python3-venv (scripts/install.sh installs it), no pip package.
# The script then enters it in new mount and PID namespaces with pivot_root (not chroot: the kernel refuses
# user namespaces, hence unprivileged bubblewrap, inside a chroot), with its own /proc, /run and /dev/shm,
# the host's /sys and /dev and the host's network, clones this checkout's branch (committed state) and runs,
# timed, the steps in HG_PROVE_STEPS (default: all four, in this order):
#   light-novenv  `bash scripts/test.sh --light` as a new non-root user before python3-venv is installed
#                 (it must stop at once with one line saying what to install)
#   main          `bash scripts/main.sh` as root in /src/harness_gym
#   light         `bash scripts/test.sh --light` as that non-root user, in a clone of their own
#   test          `bash scripts/test.sh` as root in /src/harness_gym
# Every process started inside dies with the PID namespace when the run ends.
#
# Brought in from this machine, read-only (each only if it exists):
#   HG_PROVE_WHEELS  a folder of wheels that pip may take (/etc/pip.conf find-links), default /opt/wheels:
#                    where this project's machines keep the torch CPU wheel; elsewhere pip gets torch from PyPI
#   HG_LLAMA_WHEELS  the wheel cache of scripts/install_llm.sh (default ~/.cache/harness-gym/wheels), so that
#                    test.sh installs the portable llama-cpp-python build instead of building it (10-20 min)
#   HG_SHARED_DATA   the public benchmark data (default ../shared/data beside this checkout), mounted at
#                    /src/shared/data, beside the root's clone, where the tests look for it
#   HG_PROVE_CA_BUNDLE  the host's CA bundle (default /etc/ssl/certs/ca-certificates.crt), copied in and named as
#                    pip's `cert`: needed where the host reaches PyPI through a TLS-intercepting proxy, as ours does
# Also written into ROOTFS: /etc/resolv.conf (the host's), /etc/hosts, and /usr/sbin/policy-rc.d exiting 101,
# so that installing docker.io and mariadb-server does not start them (a booted machine has an init; here the
# scripts start dockerd and MariaDB themselves). The network is the host's: MariaDB listens on HG_MYSQL_PORT
# (default 3307, beside a host server on 3306); dockerd keeps its state in ROOTFS (/var/lib/docker, /run).
set -euo pipefail

STEPS_DEFAULT="light-novenv main light test"
USER_NAME=newcomer

inside() {
  local transcript=/root/prove_transcript.txt
  : > "$transcript"
  note() { echo "$*" | tee -a "$transcript"; }
  step() {   # step NAME COMMAND...: run, log to /root/prove-NAME.log, append wall time, rc and summary
    local name=$1 t0=$SECONDS load0 rc
    shift
    load0=$(cut -d' ' -f1-3 /proc/loadavg)
    note "== $name: $*"
    set +e
    "$@" 2>&1 | tee "/root/prove-$name.log"
    rc=${PIPESTATUS[0]}
    set -e
    local wall=$((SECONDS - t0))
    note "== $name: exit $rc, wall $((wall / 60)) min $((wall % 60)) s, load average $load0 at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end"
    grep -aE '^(=+ )?[0-9]+ (passed|failed|error)|(passed|failed|skipped|errors?)[^ ]* in [0-9.]+s' \
      "/root/prove-$name.log" | sed 's/^/   pytest: /' | tee -a "$transcript" || true
    return 0
  }
  note "harness_gym fresh-machine run, $(date -u '+%Y-%m-%d %H:%M UTC'), branch $HG_PROVE_BRANCH ($HG_PROVE_COMMIT)"
  note "host: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo); root file system: Debian $(cat /etc/debian_version), $(python3 --version)"
  note "Debian packages beyond minbase: $(dpkg-query -W -f='${Package} ' python3 git 2>/dev/null)(python3-venv: $(dpkg-query -W -f='${db:Status-Status}' python3-venv 2>/dev/null || echo not-installed))"
  # a clone, or (when ROOTFS is reused for a later step) the same clone brought to the branch's head
  local fetch="git clone -q -b $HG_PROVE_BRANCH /mnt/repo.git harness_gym"
  local update="git -C harness_gym pull -q --ff-only origin $HG_PROVE_BRANCH"
  step clone bash -c "cd /src && if [ -d harness_gym ]; then $update; else $fetch; fi && git -C harness_gym log --oneline -1"
  id "$USER_NAME" >/dev/null 2>&1 || useradd -m -s /bin/bash "$USER_NAME"
  local as_user=(runuser -u "$USER_NAME" -- env "HOME=/home/$USER_NAME")
  # the user clones the root-owned repository, which git allows only when it is named safe
  "${as_user[@]}" git config --global --replace-all safe.directory /mnt/repo.git
  local user_clone="cd ~ && if [ -d harness_gym ]; then $update; else $fetch; fi && cd harness_gym"
  for name in $HG_PROVE_STEPS; do
    case "$name" in
      light-novenv|light) step "$name" "${as_user[@]}" bash -c "$user_clone && bash scripts/test.sh --light" ;;
      main) step main bash -c "cd /src/harness_gym && bash scripts/main.sh" ;;
      test) step test bash -c "cd /src/harness_gym && bash scripts/test.sh" ;;
      *) note "unknown step $name (known: $STEPS_DEFAULT)"; exit 2 ;;
    esac
  done
  mariadb-admin --protocol=socket shutdown >/dev/null 2>&1 || true
  echo
  echo "######## transcript (also in ROOTFS$transcript; full logs in ROOTFS/root/prove-STEP.log)"
  cat "$transcript"
}

outside() {
  [ "$(id -u)" = 0 ] || { echo "prove_fresh_machine.sh: needs root (debootstrap, mounts, namespaces)" >&2; exit 1; }
  ROOT="$(realpath -m "${1:-/var/tmp/hg-fresh-rootfs}")"
  checkout="$(cd "$(dirname "$0")/.." && pwd)"
  git_dir="$(cd "$checkout" && realpath "$(git rev-parse --git-common-dir)")"
  branch="$(git -C "$checkout" rev-parse --abbrev-ref HEAD)"
  commit="$(git -C "$checkout" rev-parse --short HEAD)"
  git -C "$checkout" diff --quiet HEAD || echo "prove_fresh_machine.sh: note: uncommitted changes are not part of the run (it clones $branch at $commit)" >&2
  wheels="${HG_PROVE_WHEELS:-/opt/wheels}"
  llama_wheels="${HG_LLAMA_WHEELS:-$HOME/.cache/harness-gym/wheels}"
  shared="${HG_SHARED_DATA:-$checkout/../shared/data}"
  ca_bundle="${HG_PROVE_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}"

  if [ ! -e "$ROOT/etc/debian_version" ]; then
    echo "prove_fresh_machine.sh: debootstrap bookworm into $ROOT"
    t0=$SECONDS
    debootstrap --variant=minbase --include=python3,git bookworm "$ROOT" "${MIRROR:-http://deb.debian.org/debian}" >/dev/null
    echo "prove_fresh_machine.sh: debootstrap took $((SECONDS - t0)) s"
  fi
  cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
  printf '127.0.0.1 localhost\n::1 localhost\n' > "$ROOT/etc/hosts"
  printf '#!/bin/sh\nexit 101\n' > "$ROOT/usr/sbin/policy-rc.d"
  chmod 755 "$ROOT/usr/sbin/policy-rc.d"
  mkdir -p "$ROOT/mnt/repo.git" "$ROOT/src" "$ROOT/run" "$ROOT/.oldroot"
  binds=("$git_dir:/mnt/repo.git")
  pip_conf="[global]"
  if [ -f "$ca_bundle" ]; then
    cp "$ca_bundle" "$ROOT/etc/host-ca-bundle.crt"
    pip_conf+=$'\ncert = /etc/host-ca-bundle.crt'
  fi
  if [ -d "$wheels" ]; then
    mkdir -p "$ROOT/opt/wheels"
    pip_conf+=$'\nfind-links = /opt/wheels'
    binds+=("$wheels:/opt/wheels")
  fi
  echo "$pip_conf" > "$ROOT/etc/pip.conf"
  if [ -d "$llama_wheels" ]; then
    mkdir -p "$ROOT/root/.cache/harness-gym/wheels"
    binds+=("$llama_wheels:/root/.cache/harness-gym/wheels")
  fi
  if [ -d "$shared" ]; then
    mkdir -p "$ROOT/src/shared/data"
    binds+=("$(realpath "$shared"):/src/shared/data")
  else
    echo "prove_fresh_machine.sh: note: no public data at $shared (HG_SHARED_DATA): its tests will skip" >&2
  fi
  cp "$0" "$ROOT/root/prove_fresh_machine.sh"
  echo "prove_fresh_machine.sh: entering $ROOT; read-only from the host: ${binds[*]}"

  export ROOT BINDS="${binds[*]}"
  unshare --mount --pid --fork --propagation private -- bash -euc '
    mount --bind "$ROOT" "$ROOT"
    mount -t proc proc "$ROOT/proc"
    for top in sys dev; do mount --rbind "/$top" "$ROOT/$top"; mount --make-rslave "$ROOT/$top"; done
    mount -t tmpfs -o mode=1777 tmpfs "$ROOT/dev/shm"
    mount -t tmpfs -o mode=755 tmpfs "$ROOT/run"
    for pair in $BINDS; do
      mount --bind "${pair%%:*}" "$ROOT${pair#*:}"
      mount -o remount,bind,ro "$ROOT${pair#*:}"
    done
    cd "$ROOT"
    pivot_root . .oldroot
    umount -l /.oldroot
    exec env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 TERM=dumb \
      HG_PROVE_BRANCH="'"$branch"'" HG_PROVE_COMMIT="'"$commit"'" HG_PROVE_STEPS="'"${HG_PROVE_STEPS:-$STEPS_DEFAULT}"'" \
      HG_MYSQL_PORT="'"${HG_MYSQL_PORT:-3307}"'" bash /root/prove_fresh_machine.sh --inside
  '
}

# one command, parsed whole before it runs: editing this file during a run cannot change the run
if [ "${1:-}" = --inside ]; then inside; else outside "$@"; fi; exit
