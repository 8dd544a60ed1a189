"""Docker tests: real dockerd, real images, real runs.

Every run a test starts has a run ID that begins with this session's prefix; at the
end of the session nothing carrying such an ID may be left in Docker.
"""

from __future__ import annotations

import json
import secrets
import subprocess
from collections.abc import Iterator

import pytest

SESSION_PREFIX = f"t{secrets.token_hex(3)}"


def new_run_id(name: str) -> str:
    return f"{SESSION_PREFIX}-{name}-{secrets.token_hex(2)}"


def docker_lines(*arguments: str) -> list[str]:
    done = subprocess.run(["docker", *arguments], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return [line for line in done.stdout.splitlines() if line.strip()]


def archive_objects(run_id: str) -> list[str]:
    """The archive volume and copying helper of a Docker run that still exist."""
    selector = f"label=ssebench.archive-of={run_id}"
    return [
        *docker_lines("ps", "--all", "--quiet", "--filter", selector),
        *docker_lines("volume", "ls", "--quiet", "--filter", selector),
    ]


def leftovers() -> list[str]:
    """Containers, volumes and networks of this session's runs that still exist, the
    archive volumes and their copying helpers included."""
    found = []
    for line in docker_lines(
        "ps", "-a", "--filter", "label=ssebench.run-id", "--format", "{{json .}}"
    ):
        container = json.loads(line)
        if f"ssebench.run-id={SESSION_PREFIX}" in container.get("Labels", ""):
            found.append(f"container {container['Names']}")
    for kind in ("volume", "network"):
        for label in ("ssebench.run", "ssebench.archive-of"):
            for line in docker_lines(
                kind, "ls", "--filter", f"label={label}", "--format", "{{.Name}}"
            ):
                if SESSION_PREFIX in line:
                    found.append(f"{kind} {line}")
    # The helper that copies an archive out (ssebench-<run id>-archive-copy).
    for line in docker_lines(
        "ps", "-a", "--filter", "label=ssebench.archive-of", "--format", "{{.Names}}"
    ):
        if SESSION_PREFIX in line:
            found.append(f"container {line}")
    return found


@pytest.fixture(scope="session", autouse=True)
def nothing_left_behind() -> Iterator[None]:
    yield
    from tests.conftest import docker_problem

    if docker_problem() is None:
        assert leftovers() == [], "the Docker tests left these behind"
