#!/usr/bin/env bash
# Seeds dockerd's image store with debian:bookworm-slim, built offline from Debian
# packages. This build machine reaches Debian's package mirror but no container
# registry, so the image the Dockerfiles name (as a user would write them) is made
# here instead of pulled. The product never knows: it only sees the image name.
# The mirror is read from this machine's apt sources; no host name is written down.
# Usage: seed-base-image.sh [IMAGE [RELEASE [PACKAGES [CMD]]]] (seed-python-image.sh
# passes another release and packages).
set -euo pipefail
image=${1:-debian:bookworm-slim}
release=${2:-bookworm}
packages=${3:-}
command=${4:-bash}
if docker image inspect "$image" >/dev/null 2>&1; then
  echo "seed-base-image: $image already present"
  exit 0
fi
sources=/etc/apt/sources.list.d/debian.sources
mirror=$(awk '/^URIs:/ {print $2; exit}' "$sources")
[ -n "$mirror" ] || { echo "seed-base-image: no URIs line in $sources" >&2; exit 1; }
suites=("deb $mirror $release main")
# bookworm's updates suite; older releases' suites have moved, the release suffices.
[ "$release" = bookworm ] && suites+=("deb $mirror bookworm-updates main")
echo "seed-base-image: building $image from Debian $release (mmdebstrap)"
mmdebstrap --quiet --variant=minbase --format=tar ${packages:+--include="$packages"} \
  --aptopt='Acquire::Check-Valid-Until "false"' \
  "$release" - "${suites[@]}" \
  | docker import --change "CMD [\"$command\"]" - "$image" >/dev/null
echo "seed-base-image: $image ready"
