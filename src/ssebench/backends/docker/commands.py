"""Small docker calls the other modules share: remove a container or volumes, ask
whether a container exists."""

from __future__ import annotations

import subprocess
import time
from urllib.parse import quote

from ssebench.backends.docker import engine
from ssebench.images import failure_reason, run_docker

# Creating a container is quick; this bounds a daemon that hangs.
CREATE_TIMEOUT_SECONDS = 300.0

# docker removes a --rm container a moment after `docker wait` returns; until then
# its volumes are in use.
VOLUME_REMOVE_SECONDS = 15.0
_GONE_MARKERS = ("No such container", "No such object", "is already in progress")


def is_gone(completed: subprocess.CompletedProcess[str]) -> bool:
    return any(marker in completed.stderr for marker in _GONE_MARKERS)


def remove_container(name: str) -> subprocess.CompletedProcess[str]:
    return run_docker(["rm", "--force", "--volumes", name])


def remove_volumes(selector: str) -> str | None:
    """Remove the volumes that selector (a docker filter) lists; the reason when some
    stay. docker removes a --rm container's volumes' users a moment after it exits."""
    deadline = time.monotonic() + VOLUME_REMOVE_SECONDS
    while True:
        volumes = run_docker(["volume", "ls", "--quiet", "--filter", selector]).stdout.split()
        if not volumes:
            return None
        completed = run_docker(["volume", "rm", "--force", *volumes])
        if completed.returncode == 0:
            return None
        if time.monotonic() > deadline:
            return failure_reason(completed)
        time.sleep(0.25)


def container_exists(name: str) -> bool:
    """Whether the container name exists: one Engine API request where the API is at
    hand (a start polls this until docker run has made its container), else `docker
    container inspect`."""
    try:
        status, _ = engine.request("GET", f"/containers/{quote(name, safe='')}/json")
    except engine.EngineUnavailable:
        status = 0
    if status in (200, 404):
        return status == 200
    return run_docker(["container", "inspect", "--format", "{{.Id}}", name]).returncode == 0
