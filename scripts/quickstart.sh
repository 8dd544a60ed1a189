#!/usr/bin/env bash
# One command from a fresh Debian 12 machine to a graded run: installs Docker and
# ssebench, then runs the reference agent on a pilot task. Run as root, from the
# repository's root. TASK and AGENT override the defaults.
set -euo pipefail
cd "$(dirname "$0")/.."
task=${TASK:-py-semver-prerelease}
agent=${AGENT:-reference}

if ! command -v dockerd >/dev/null || ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
  echo "quickstart: installing docker.io and python3-venv"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io python3-venv >/dev/null
fi
scripts/start-docker.sh
if ! docker image inspect debian:bookworm-slim >/dev/null 2>&1 \
  && ! docker pull -q debian:bookworm-slim >/dev/null 2>&1; then
  echo "quickstart: no registry reachable; making debian:bookworm-slim from Debian packages"
  command -v mmdebstrap >/dev/null \
    || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mmdebstrap >/dev/null
  scripts/seed-base-image.sh
fi
[ -x .venv/bin/ssebench ] || { python3 -m venv .venv && .venv/bin/pip install -q .; }
exec .venv/bin/ssebench run --task "$task" --agent "$agent"
