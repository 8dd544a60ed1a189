"""Small docker calls the other modules share: remove a container or volumes, ask
whether a container exists."""

from __future__ import annotations

import json
import subprocess
import time
from urllib.parse import quote

from ssebench.backends.docker import engine
from ssebench.docker_cli import failure_reason, run_docker

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


def _filters(selector: str) -> str:
    """A docker filter (key=value) as the Engine API's filters parameter."""
    key, _, value = selector.partition("=")
    return quote(json.dumps({key: [value]}), safe="")


def volume_names(selector: str) -> list[str]:
    """`docker volume ls --quiet --filter selector`: one Engine API request where the
    API is at hand (engine.py), else the CLI."""
    try:
        answer = engine.get_json(f"/volumes?filters={_filters(selector)}")
    except engine.EngineUnavailable:
        answer = None
    if isinstance(answer, dict) and isinstance(answer.get("Volumes") or [], list):
        return [
            str(volume["Name"])
            for volume in answer.get("Volumes") or []
            if isinstance(volume, dict) and volume.get("Name")
        ]
    return run_docker(["volume", "ls", "--quiet", "--filter", selector]).stdout.split()


def container_ids(selector: str) -> list[str]:
    """`docker ps --all --quiet --no-trunc --filter selector`: one Engine API request
    where the API is at hand, else the CLI."""
    try:
        answer = engine.get_json(f"/containers/json?all=1&filters={_filters(selector)}")
    except engine.EngineUnavailable:
        answer = None
    if isinstance(answer, list):
        return [str(item["Id"]) for item in answer if isinstance(item, dict) and item.get("Id")]
    argv = ["ps", "--all", "--quiet", "--filter", selector, "--no-trunc"]
    return run_docker(argv).stdout.split()


def remove_volumes(selector: str) -> str | None:
    """Remove the volumes that selector (a docker filter) lists; the reason when some
    stay. docker removes a --rm container's volumes' users a moment after it exits."""
    deadline = time.monotonic() + VOLUME_REMOVE_SECONDS
    while True:
        volumes = volume_names(selector)
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
