#!/usr/bin/env bash
# Makes ssebench/python:X.Y from the Debian release that carries Python X.Y (3.9:
# bullseye, 3.11: bookworm, 3.13: trixie), offline from Debian packages, for a machine
# that cannot pull the official python:X.Y-slim. Imported SWE-bench tasks use it with
# `--python-images debian` (docs/datasets.md).
set -euo pipefail
version=${1:?usage: seed-python-image.sh 3.9|3.11|3.13}
case "$version" in
  3.9) release=bullseye ;;
  3.11) release=bookworm ;;
  3.13) release=trixie ;;
  *) echo "seed-python-image: no Debian release carries Python $version (3.9, 3.11, 3.13 do)" >&2; exit 1 ;;
esac
exec "$(dirname "$0")/seed-base-image.sh" "ssebench/python:$version" "$release" \
  python3,python3-venv,python3-pip,git,ca-certificates python3
