#!/usr/bin/env bash
# Starts dockerd in the background when no Docker daemon answers (machines without
# systemd), and waits until it does. Its log goes to /var/log/dockerd.log.
set -euo pipefail
if docker version --format '{{.Server.Version}}' >/dev/null 2>&1; then
  exit 0
fi
# dockerd refuses to start while its pid file names a live process. After a machine's
# restart the file survives and its number may now be another process's.
pidfile=/var/run/docker.pid
pid=$(cat "$pidfile" 2>/dev/null || true)
if [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null || true)" = dockerd ]; then
  echo "start-docker: dockerd (process $pid) is starting; waiting for it"
else
  if [ -e "$pidfile" ]; then
    echo "start-docker: removing $pidfile, left by a dockerd that is gone"
    rm -f "$pidfile"
  fi
  echo "start-docker: starting dockerd"
  setsid dockerd >/var/log/dockerd.log 2>&1 < /dev/null &
fi
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
