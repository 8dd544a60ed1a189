"""Removing a run (its containers, volumes and network) and giving the run directory
back to an unprivileged runner; prune's removal of what runs that are gone left."""

from __future__ import annotations

import json
import os
import re
import threading
from pathlib import Path

from ssebench.backends.docker import network
from ssebench.backends.docker.children import end_follower, forget, own_process
from ssebench.backends.docker.commands import (
    CREATE_TIMEOUT_SECONDS,
    container_exists,
    container_ids,
    is_gone,
    remove_container,
    remove_volumes,
)
from ssebench.backends.docker.containers import mount_option
from ssebench.backends.docker.names import (
    ENVIRONMENT_DETAIL,
    IMAGE_DETAIL,
    NAME,
    OWNER_DETAIL,
    PAIR_DETAIL,
    RESULTS_DETAIL,
    agent_container_name,
    container_name,
)
from ssebench.errors import BackendError
from ssebench.extensions import (
    DEADLINE_LABEL,
    HELPER_LABEL,
    KEEP_LABEL,
    PAIR_LABEL,
    RUN_ID_LABEL,
    RUNNER_HOST_LABEL,
    RUNNER_PID_LABEL,
    Mount,
    RunHandle,
    end_process,
)
from ssebench.host.docker_cli import failure_reason, run_docker
from ssebench.host.processes import process_exists
from ssebench.labels import ARCHIVE_OF


def remove_run(handle: RunHandle) -> None:
    pair_id = handle.details.get(PAIR_DETAIL)
    environment = handle.details.get(ENVIRONMENT_DETAIL)
    if pair_id is not None and environment is not None:
        process = own_process(handle)
        if process is not None:
            end_process(process)
            forget(handle.name)
        end_follower(environment)
        try:
            remove_pair(pair_id)  # raises unless both containers are gone
            network.remove(handle.run_id, containers_gone=True)
        finally:
            give_back_results(handle)
        return
    with _REMOVALS_LOCK:
        begun = _removals.pop(handle.run_id, None)
    try:
        if begun is not None:
            begun.join()
        if begun is None or begun.error is not None:
            # What failed in the background is tried once more, and raises this time.
            _remove_container_and_network(handle)
    finally:
        give_back_results(handle)


class _Removal(threading.Thread):
    """A run's container and network, removed beside the runner's read-out."""

    def __init__(self, handle: RunHandle) -> None:
        super().__init__(name=f"ssebench-remove-{handle.run_id}")
        self.handle = handle
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            _remove_container_and_network(self.handle)
        except BaseException as error:  # remove_run tries again, and says why
            self.error = error


# The removals begun by wait in this process, by run ID, for remove_run to join.
_removals: dict[str, _Removal] = {}
_REMOVALS_LOCK = threading.Lock()


def begin_removal(handle: RunHandle) -> None:
    """Start removing the ended single-container run's container and network in the
    background: most of a clean-up is dockerd tearing the network's bridge down, which
    needs neither the archive's volume nor the run directory, so it goes on while the
    runner reads the archive out. remove_run waits for it, and does what it could not."""
    with _REMOVALS_LOCK:
        if handle.run_id in _removals:
            return
        removal = _removals[handle.run_id] = _Removal(handle)
    removal.start()


def _remove_container_and_network(handle: RunHandle) -> None:
    completed = remove_container(handle.name)
    process = own_process(handle)
    if process is not None:
        end_process(process)
        forget(handle.name)
    if completed.returncode != 0 and not is_gone(completed):
        raise BackendError(
            f"Cannot remove {handle.name}: {failure_reason(completed)}",
            backend=NAME,
            run_id=handle.run_id,
        )
    # After the container, which holds an endpoint on it.
    network.remove(handle.run_id, containers_gone=True)


def remove_pair(pair_id: str) -> None:
    """Remove a sidecar run's containers, the agent's first (it uses the
    environment's network namespace), then its volumes. Raises BackendError."""
    listed = container_ids(f"label={PAIR_LABEL}={pair_id}")
    failures = []
    names = [agent_container_name(pair_id), container_name(pair_id)]
    # By name first, in that order; then anything else that carries the label.
    for container in [*names, *listed]:
        completed = remove_container(container)
        if completed.returncode != 0 and not is_gone(completed):
            failures.append(failure_reason(completed))
    failure = remove_volumes(f"label={PAIR_LABEL}={pair_id}")
    if failure is not None:
        failures.append(failure)
    if failures:
        raise BackendError(
            f"Cannot remove all of the run {pair_id}: {failures[0]}",
            backend=NAME,
            run_id=pair_id,
        )


def remove_abandoned(now: float, host: str) -> list[str]:
    """What runs that are gone left: their networks and firewall rules
    (network.prune), and their archive volumes."""
    networks = network.prune(
        now=now,
        host=host,
        run_container_exists=lambda run_id: container_exists(container_name(run_id)),
    )
    return [
        *remove_abandoned_volumes(ARCHIVE_OF, now, host),
        # A sidecar pair's volumes, made before its environment container: a runner
        # killed in between leaves them and no container prune could find.
        *remove_abandoned_volumes(PAIR_LABEL, now, host),
        *(f"{entry['kind']} {entry['name']}" for entry in networks),
    ]


def remove_abandoned_volumes(label: str, now: float, host: str) -> list[str]:
    """Volumes carrying label (archive volumes, sidecar volumes) whose run is gone:
    its deadline passed, or its runner (on this host) no longer runs; never one of
    a kept run. A volume still in use stays."""
    names = run_docker(["volume", "ls", "--quiet", "--filter", f"label={label}"]).stdout.split()
    if not names:
        return []
    completed = run_docker(["volume", "inspect", *names])
    try:
        volumes = json.loads(completed.stdout or "[]")
    except ValueError:
        return []
    removed = []
    for volume in volumes:
        found = volume.get("Labels") or {}
        if found.get(KEEP_LABEL) == "true":
            continue
        deadline = str(found.get(DEADLINE_LABEL, ""))
        pid = str(found.get(RUNNER_PID_LABEL, ""))
        runner_gone = (
            found.get(RUNNER_HOST_LABEL) == host and pid.isdigit() and not process_exists(int(pid))
        )
        if not (runner_gone or (deadline.isdigit() and int(deadline) < now)):
            continue
        name = str(volume.get("Name", ""))
        run_id = str(found.get(ARCHIVE_OF, ""))
        if label == ARCHIVE_OF and run_id:
            # The helper that copies the archive out (never started) holds the volume
            # when the runner died while copying; no one else will use it.
            for helper in container_ids(f"label={ARCHIVE_OF}={run_id}"):
                remove_container(helper)
        # Not --force: docker refuses a volume a container still uses.
        if run_docker(["volume", "rm", name]).returncode == 0:
            removed.append(name)
    return removed


def give_back_results(handle: RunHandle) -> None:
    """Give the run directory back to an unprivileged runner, now that nothing of
    the run writes into it. The container does so itself when it ends; a run
    killed (a second signal, runs remove, prune after a SIGKILL) leaves it root's,
    and agent-owned below archive/. A chown in a container of the run's image, on
    no network, with that one capability, and without following links."""
    owner = handle.details.get(OWNER_DETAIL)
    results = handle.details.get(RESULTS_DETAIL)
    image = handle.details.get(IMAGE_DETAIL)
    if not owner or not results or not image or not re.fullmatch(r"\d+:\d+", owner):
        return
    path = Path(results)
    if not path.is_dir() or path.is_symlink() or owned_by(path, int(owner.split(":")[0])):
        return
    completed = run_docker(
        [
            "run", "--rm", "--pull", "never", "--network", "none",
            "--cap-drop", "ALL", "--cap-add", "CHOWN", "--cap-add", "DAC_READ_SEARCH",
            "--security-opt", "no-new-privileges", "--user", "0:0",
            "--label", f"{RUN_ID_LABEL}={handle.run_id}", "--label", f"{HELPER_LABEL}=chown",
            "--mount", mount_option(Mount(target="/results", source=str(path))),
            "--entrypoint", "chown", image, "-R", "--no-dereference", owner, "/results",
        ],
        timeout=CREATE_TIMEOUT_SECONDS,
    )  # fmt: skip
    if completed.returncode != 0:
        raise BackendError(
            f"Cannot give the run directory {path} back to {owner}: {failure_reason(completed)}",
            backend=NAME,
            run_id=handle.run_id,
        )


def owned_by(tree: Path, uid: int) -> bool:
    """True when everything in tree (links themselves, not followed) is uid's; False
    also when a part of it cannot be read, which only another owner can cause."""
    unreadable: list[OSError] = []
    try:
        if tree.lstat().st_uid != uid:
            return False
        for folder, folders, files in os.walk(tree, onerror=unreadable.append):
            for entry in (*folders, *files):
                if os.lstat(os.path.join(folder, entry)).st_uid != uid:
                    return False
    except OSError:
        return False
    return not unreadable
