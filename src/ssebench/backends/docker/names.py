"""The names of a Docker run's containers and volumes, and the details of its handle."""

from __future__ import annotations

import re

# A sidecar run's handle: the environment container's name, under the public key that
# the extension API's helpers (environment_container) read.
from ssebench.extensions import ENVIRONMENT_DETAIL as ENVIRONMENT_DETAIL

NAME = "docker"

# A sidecar run's handle: the pair's ID (and ENVIRONMENT_DETAIL, above).
PAIR_DETAIL = "pair"
# Every run's handle: its archive volume, and an image to make the copying helper of
# (and, for an unprivileged runner, the chown that gives the run directory back).
ARCHIVE_DETAIL = "archive"
IMAGE_DETAIL = "image"
# The run directory's owner to give it back to (uid:gid), and where it is.
OWNER_DETAIL = "results_owner"
RESULTS_DETAIL = "results"
_NAME_FORBIDDEN = re.compile(r"[^a-zA-Z0-9_.-]")


def container_name(run_id: str) -> str:
    """The container's name: ssebench-<run id>, within docker's name rules.

    In a sidecar run, the environment container's name, from the pair's ID."""
    return f"ssebench-{_NAME_FORBIDDEN.sub('-', run_id)}"


def archive_volume_name(run_id: str) -> str:
    """The volume the run's agent writes its archive to."""
    return f"{container_name(run_id)}-archive"


def agent_container_name(pair_id: str) -> str:
    """The agent container of a sidecar run: ssebench-<pair id>-agent."""
    return f"{container_name(pair_id)}-agent"
