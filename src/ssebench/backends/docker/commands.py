"""Small docker calls the other modules share: remove a container or volumes, ask
whether a container exists; each is an Engine API request where the API is at hand
(engine.py), the CLI otherwise."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from ssebench.backends.docker import engine
from ssebench.host.docker_cli import failure_reason, run_docker

# Creating a container is quick; this bounds a daemon that hangs.
CREATE_TIMEOUT_SECONDS = 300.0

# docker removes a --rm container a moment after `docker wait` returns; until then
# its volumes are in use.
VOLUME_REMOVE_SECONDS = 15.0
_GONE_MARKERS = ("No such container", "No such object", "is already in progress")


def is_gone(completed: subprocess.CompletedProcess[str]) -> bool:
    return any(marker in completed.stderr for marker in _GONE_MARKERS)


def docker_call(
    method: str,
    path: str,
    argv: list[str],
    *,
    body: Any = None,
    output: Callable[[bytes], str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """`docker argv` as one Engine API request (method, path, JSON body) where the API is
    at hand, read back as the CLI's would be: status 0 and on stdout what output makes
    of the answer (the CLI's output for argv; the answer itself without it) for a
    success, else 1 and the daemon's message on stderr as the CLI words it (so
    failure_reason and is_gone read both alike). Else the CLI itself."""
    try:
        status, answer = engine.request(method, path, body=body)
    except engine.EngineUnavailable:
        return run_docker(argv)
    return _as_completed(argv, status, answer, output)


def _as_completed(
    argv: list[str], status: int, answer: bytes, output: Callable[[bytes], str] | None = None
) -> subprocess.CompletedProcess[str]:
    args = ["docker", *argv]
    if 200 <= status < 300:
        stdout = answer.decode("utf-8", "replace") if output is None else output(answer)
        return subprocess.CompletedProcess(args, 0, stdout, "")
    message = f"Error response from daemon: {engine.error_message(answer)}\n"
    return subprocess.CompletedProcess(args, 1, "", message)


def remove_container(name: str) -> subprocess.CompletedProcess[str]:
    return docker_call(
        "DELETE",
        f"/containers/{quote(name, safe='')}?force=1&v=1",
        ["rm", "--force", "--volumes", name],
    )


def update_cpus(name: str, cpus: str) -> bool:
    """Set the CPU limit of the container name; False when it did not take (no such
    container yet, or any other refusal: the caller decides what that means)."""
    nano_cpus = round(float(cpus) * 1e9)
    return (
        docker_call(
            "POST",
            f"/containers/{quote(name, safe='')}/update",
            ["update", "--cpus", cpus, name],
            body={"NanoCpus": nano_cpus},
        ).returncode
        == 0
    )


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
        completed = _remove_listed_volumes(volumes)
        if completed.returncode == 0:
            return None
        if time.monotonic() > deadline:
            return failure_reason(completed)
        time.sleep(0.25)


def _remove_listed_volumes(volumes: list[str]) -> subprocess.CompletedProcess[str]:
    """`docker volume rm --force volumes...`: a request per volume where the API is at
    hand (the last failure, if any, as the CLI's), else the one CLI process."""
    argv = ["volume", "rm", "--force", *volumes]
    try:
        answers = [
            engine.request("DELETE", f"/volumes/{quote(volume, safe='')}?force=1")
            for volume in volumes
        ]
    except engine.EngineUnavailable:
        return run_docker(argv)
    failed = [(status, answer) for status, answer in answers if not 200 <= status < 300]
    return _as_completed(argv, *(failed[-1] if failed else answers[-1]))


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
