"""The docker CLI as the Docker backend and the image builds call it: run a command with
its output captured, and turn "the daemon cannot be reached" or "docker is not
installed" into one clear UserError.

A module of its own, apart from the image package (ssebench.images), because `ssebench
runs list` needs it and must not import the image builds (docs/performance.md,
"Docker side: start-up and listing")."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence

from ssebench.errors import UserError
from ssebench.host.container_cli import ContainerCli, cli_failure

__all__ = [
    "DOCKER",
    "docker_missing",
    "docker_unreachable",
    "failure_reason",
    "raise_if_unreachable",
    "run_docker",
]

DOCKER = "docker"
_UNREACHABLE_MARKERS = (
    "Cannot connect to the Docker daemon",
    "error during connect",
    "while trying to connect to the Docker daemon",
)


def docker_unreachable(reason: str) -> UserError:
    """The one-line error for a docker CLI that is missing or cannot reach its daemon."""
    reason = reason.strip().removeprefix("docker: ")
    end = " " if reason.endswith((".", "?", "!")) else ". "
    return UserError(
        f"Docker is not reachable: {reason}{end}Start the Docker daemon "
        "(sudo dockerd, or systemctl start docker) or set DOCKER_HOST."
    )


def raise_if_unreachable(output: str) -> None:
    """Raise docker_unreachable when the output of a failed docker call says so.

    The real call's error is read instead of asking `docker info` before every call.
    """
    for line in output.splitlines():
        if any(marker in line for marker in _UNREACHABLE_MARKERS):
            raise docker_unreachable(line)


def docker_missing() -> UserError:
    return docker_unreachable("the docker command is not installed (not on PATH)")


def run_docker(
    args: Sequence[str], *, timeout: float | None = None, pass_fds: Sequence[int] = ()
) -> subprocess.CompletedProcess[str]:
    """Run `docker ARGS` with its output captured, and return it whatever its status.
    pass_fds: descriptors docker inherits (an env file that is a pipe).

    Raises UserError when docker is missing or its daemon unreachable; every other
    failure is the caller's to interpret (failure_reason gives its one-line reason).
    """
    return DOCKER_CLI.run(args, timeout=timeout, pass_fds=pass_fds)


DOCKER_CLI = ContainerCli(DOCKER, docker_missing, raise_if_unreachable)


def failure_reason(completed: subprocess.CompletedProcess[str]) -> str:
    """The last line docker wrote to stderr: the one that says what went wrong."""
    return cli_failure(completed)
