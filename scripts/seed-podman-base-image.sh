#!/usr/bin/env bash
# Seeds Podman's image store with the base image the Dockerfiles name
# (debian:bookworm-slim), copied from dockerd's store, where scripts/seed-base-image.sh
# made it: Podman reaches no container registry on this machine either.
set -euo pipefail
image=${1:-debian:bookworm-slim}
if podman image exists "$image"; then
  echo "seed-podman-base-image: $image already present"
  exit 0
fi
docker image inspect "$image" >/dev/null 2>&1 || scripts/seed-base-image.sh "$image"
echo "seed-podman-base-image: copying $image from Docker into Podman"
docker save "$image" | podman load --quiet >/dev/null
podman image exists "$image"
echo "seed-podman-base-image: $image ready"
