#!/usr/bin/env bash
# Seeds dockerd's image store with debian:bookworm-slim, built offline from Debian
# packages. This build machine reaches Debian's package mirror but no container
# registry, so the image the Dockerfiles name (as a user would write them) is made
# here instead of pulled. The product never knows: it only sees the image name.
# The mirror is read from this machine's apt sources; no host name is written down.
set -euo pipefail
image=${1:-debian:bookworm-slim}
if docker image inspect "$image" >/dev/null 2>&1; then
  echo "seed-base-image: $image already present"
  exit 0
fi
sources=/etc/apt/sources.list.d/debian.sources
mirror=$(awk '/^URIs:/ {print $2; exit}' "$sources")
[ -n "$mirror" ] || { echo "seed-base-image: no URIs line in $sources" >&2; exit 1; }
echo "seed-base-image: building $image from Debian packages (mmdebstrap)"
mmdebstrap --quiet --variant=minbase --format=tar \
  --aptopt='Acquire::Check-Valid-Until "false"' \
  bookworm - "deb $mirror bookworm main" "deb $mirror bookworm-updates main" \
  | docker import --change 'CMD ["bash"]' - "$image" >/dev/null
echo "seed-base-image: $image ready"
