"""The docker processes this process started: each run's `docker run` in the
foreground (kept so wait can reap it) and the `docker logs --follow` of a detached
container. With cleanup's removals that wait begins, the backend's only state, and only
within one process."""

from __future__ import annotations

import contextlib
import subprocess
import threading

from ssebench.backends.docker import network
from ssebench.backends.docker.commands import remove_container
from ssebench.errors import BackendError, UserError
from ssebench.extensions import RunHandle, end_process
from ssebench.host import docker_cli
from ssebench.host.docker_cli import DOCKER

# The `docker run` processes started by this process, by container name.
_processes: dict[str, subprocess.Popen[bytes]] = {}
# The `docker logs --follow` processes of detached containers, by container name.
_followers: dict[str, subprocess.Popen[bytes]] = {}
PROCESSES_LOCK = threading.Lock()


def remember(name: str, process: subprocess.Popen[bytes]) -> None:
    """Keep the `docker run` process of the container name, for wait to reap."""
    with PROCESSES_LOCK:
        _processes[name] = process


def own_process(handle: RunHandle) -> subprocess.Popen[bytes] | None:
    """The docker run process of handle, if this process started it."""
    with PROCESSES_LOCK:
        process = _processes.get(handle.name)
    if process is None or str(process.pid) != handle.details.get("pid"):
        return None
    return process


def forget(name: str) -> None:
    with PROCESSES_LOCK:
        _processes.pop(name, None)


def follow_output(name: str) -> None:
    """Copy a detached container's output onto this process's, as it is written."""
    try:
        follower = subprocess.Popen(
            [DOCKER, "logs", "--follow", name], stdin=subprocess.DEVNULL, start_new_session=True
        )
    except FileNotFoundError:
        raise docker_cli.docker_missing() from None
    with PROCESSES_LOCK:
        _followers[name] = follower


def end_follower(name: str) -> None:
    """Let the output follower of name finish (its container has exited), then reap it."""
    with PROCESSES_LOCK:
        follower = _followers.pop(name, None)
    if follower is not None:
        end_process(follower, finish_within=5)


def discard(process: subprocess.Popen[bytes] | None, name: str) -> None:
    """Leave nothing of a start that failed: the docker run (or start) process and any
    container made for it. Best effort: the start's own error is the one to report."""
    if process is not None:
        end_process(process)
    with contextlib.suppress(UserError, OSError):
        remove_container(name)


def discard_network(run_id: str) -> None:
    """Remove the network made for a start that failed. Best effort, as discard."""
    with contextlib.suppress(UserError, OSError, BackendError):
        network.remove(run_id)
