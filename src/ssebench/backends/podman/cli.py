"""The podman command: run it, and say in one line why it failed."""

from __future__ import annotations

import getpass
import os
import subprocess
from collections.abc import Mapping, Sequence

from ssebench.extensions import ContainerCli, UserError, cli_failure

PODMAN = "podman"
# The backend's name (its entry point, RunHandle.backend).
BACKEND_NAME = "podman"
_GONE_MARKERS = ("no such container", "no such object", "no container with name or id")
# What rootless Podman says when this user has no subordinate UIDs and GIDs (it then maps
# one UID only, and an image with files of other owners cannot be stored or built).
_NO_SUBORDINATE_IDS = ("insufficient uids or gids", "no subuid ranges found")
_NO_NEWUIDMAP = ("newuidmap", "newgidmap")
_NO_USER_NAMESPACES = ("user namespaces are not enabled", "cannot clone: operation not permitted")


def podman_missing() -> UserError:
    return UserError(
        "Podman is not installed (no podman command on PATH): install it "
        "(apt-get install podman) or choose another backend with --backend"
    )


def rootless_problem(output: str) -> UserError | None:
    """The one-line error for podman output that says rootless Podman cannot work for
    this user (no subordinate IDs, no newuidmap, no user namespaces), else None."""
    if os.geteuid() == 0:
        return None
    text = output.lower()
    user = getpass.getuser()
    if any(marker in text for marker in _NO_SUBORDINATE_IDS):
        return UserError(
            f"Rootless Podman has no subordinate UIDs/GIDs for the user {user}: add a range "
            f"(as root: usermod --add-subuids 100000-165535 --add-subgids 100000-165535 "
            f'{user}), then run `podman system migrate` (docs/podman.md, "Rootless")'
        )
    if any(marker in text for marker in _NO_NEWUIDMAP) and "not found" in text:
        return UserError(
            "Rootless Podman needs newuidmap and newgidmap: install them "
            '(apt-get install uidmap; docs/podman.md, "Rootless")'
        )
    if any(marker in text for marker in _NO_USER_NAMESPACES):
        return UserError(
            "Rootless Podman needs user namespaces, which this kernel refuses to this user "
            '(sysctl user.max_user_namespaces; docs/podman.md, "Rootless")'
        )
    return None


def raise_if_rootless_unusable(output: Sequence[str] | str) -> None:
    """Raise rootless_problem's error when output (a failed call's) names one."""
    problem = rootless_problem(output if isinstance(output, str) else "\n".join(output))
    if problem is not None:
        raise problem


def run_podman(
    args: Sequence[str], *, timeout: float | None = None, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`podman ARGS` with its output captured, whatever its status. Raises UserError
    when podman is missing, or when rootless Podman cannot work for this user."""
    return PODMAN_CLI.run(args, timeout=timeout, env=env)


PODMAN_CLI = ContainerCli(PODMAN, podman_missing, raise_if_rootless_unusable)


def failure_reason(completed: subprocess.CompletedProcess[str]) -> str:
    return cli_failure(completed)


def is_gone(completed: subprocess.CompletedProcess[str]) -> bool:
    return any(marker in completed.stderr.lower() for marker in _GONE_MARKERS)
