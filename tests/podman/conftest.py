"""Podman tests: real Podman, real images (built once, then found current by their
cache-key labels), real runs. Every run ID begins with this session's prefix; at the end
of the session nothing carrying such an ID may be left in Podman."""

from __future__ import annotations

import secrets
import subprocess
from collections.abc import Iterator

import pytest

SESSION_PREFIX = f"p{secrets.token_hex(3)}"
# The conformance suite names its runs conf-<hex>; only the tests use Podman here.
MARKERS = (SESSION_PREFIX, "ssebench-conf-")


def new_run_id(name: str) -> str:
    return f"{SESSION_PREFIX}-{name}-{secrets.token_hex(2)}"


def podman_lines(*arguments: str) -> list[str]:
    done = subprocess.run(["podman", *arguments], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return [line for line in done.stdout.splitlines() if line.strip()]


def leftovers() -> list[str]:
    """Containers, volumes and networks of this session's runs (and of conformance
    runs) that still exist."""
    found = [
        f"container {name}"
        for name in podman_lines("ps", "--all", "--format", "{{.Names}}")
        if any(marker in name for marker in MARKERS)
    ]
    for kind in ("volume", "network"):
        found += [
            f"{kind} {name}"
            for name in podman_lines(kind, "ls", "--format", "{{.Name}}")
            if any(marker in name for marker in MARKERS)
        ]
    return found


@pytest.fixture(scope="session", autouse=True)
def nothing_left_behind() -> Iterator[None]:
    yield
    from tests.conftest import podman_problem

    if podman_problem() is None:
        assert leftovers() == [], "the Podman tests left these behind"
