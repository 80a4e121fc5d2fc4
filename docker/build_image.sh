#!/usr/bin/env bash
# Builds the DockerSandbox image locally (no registry is reachable): debootstrap a minimal Debian with
# python3 and pandas, then `docker import` it. The tag is the hash of this file, so the image is rebuilt
# only when the recipe changes; harness_gym.sandbox.docker.default_image() computes the same tag.
# Needs root, dockerd and debootstrap (scripts/start_docker.sh provides all three). Prints the tag.
set -euo pipefail
SUITE=bookworm
MIRROR=${MIRROR:-http://deb.debian.org/debian}
PACKAGES=python3,python3-pandas
tag="harness-gym-sandbox:$(sha256sum "${BASH_SOURCE[0]}" | cut -c1-12)"
if docker image inspect "$tag" >/dev/null 2>&1; then
  echo "$tag"
  exit 0
fi
command -v debootstrap >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null; }
root=$(mktemp -d /var/tmp/hg-rootfs.XXXXXX)
trap 'rm -rf "$root"' EXIT
debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$root" "$MIRROR" >&2
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/usr/share/doc/* "$root"/usr/share/man/*
tar -C "$root" -c . | docker import --change 'CMD ["/usr/bin/python3"]' \
  --change 'LABEL harness_gym.sandbox.image=1' - "$tag" >&2
echo "$tag"
