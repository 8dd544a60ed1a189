#!/usr/bin/env bash
# Starts dockerd in the background when no Docker daemon answers (machines without
# systemd), and waits until it does. Its log goes to /var/log/dockerd.log.
set -euo pipefail
if docker version --format '{{.Server.Version}}' >/dev/null 2>&1; then
  exit 0
fi
echo "start-docker: starting dockerd"
setsid dockerd >/var/log/dockerd.log 2>&1 < /dev/null &
for _ in $(seq 1 60); do
  if docker version --format '{{.Server.Version}}' >/dev/null 2>&1; then
    echo "start-docker: dockerd is up"
    exit 0
  fi
  sleep 1
done
echo "start-docker: dockerd did not answer within 60 s; see /var/log/dockerd.log" >&2
tail -n 20 /var/log/dockerd.log >&2 || true
exit 1
