"""The podman command: run it, and say in one line why it failed."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence

from ssebench.extensions import UserError

PODMAN = "podman"
_GONE_MARKERS = ("no such container", "no such object", "no container with name or id")


def podman_missing() -> UserError:
    return UserError(
        "Podman is not installed (no podman command on PATH): install it "
        "(apt-get install podman) or choose another backend with --backend"
    )


def run_podman(
    args: Sequence[str], *, timeout: float | None = None
) -> subprocess.CompletedProcess[str]:
    """`podman ARGS` with its output captured, whatever its status. Raises UserError
    when podman is missing."""
    try:
        return subprocess.run(
            [PODMAN, *args],
            capture_output=True,
            text=True,
            errors="replace",
            stdin=subprocess.DEVNULL,
            timeout=timeout,
            check=False,
        )
    except FileNotFoundError:
        raise podman_missing() from None


def failure_reason(completed: subprocess.CompletedProcess[str]) -> str:
    lines = [line.strip() for line in completed.stderr.splitlines() if line.strip()]
    if not lines:
        return f"podman exited with status {completed.returncode}"
    return lines[-1].removeprefix("Error: ")


def is_gone(completed: subprocess.CompletedProcess[str]) -> bool:
    return any(marker in completed.stderr.lower() for marker in _GONE_MARKERS)
