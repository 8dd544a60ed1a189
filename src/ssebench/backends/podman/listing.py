"""Finding Podman runs again by their labels: `podman ps` as RunInfo."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from ssebench.backends.podman.cli import BACKEND_NAME, failure_reason, run_podman
from ssebench.backends.podman.options import agent_container_name, container_name
from ssebench.extensions import (
    ENVIRONMENT_DETAIL,
    PAIR_LABEL,
    RUN_ID_LABEL,
    BackendError,
    RunHandle,
    RunInfo,
    RunState,
)

# The handle's detail that names a sidecar run's pair (backend.py starts the pairs).
PAIR_DETAIL = "pair"
_STATES: dict[str, RunState] = {
    "created": "created",
    "configured": "created",
    "initialized": "created",
    "running": "running",
    "paused": "running",
    "stopping": "running",
    "exited": "exited",
    "stopped": "exited",
}


def list_runs(labels: Mapping[str, str]) -> list[RunInfo]:
    """The runs whose containers have labels, running or not."""
    argv = ["ps", "--all", "--format", "json"]
    for key, value in labels.items():
        argv += ["--filter", f"label={key}={value}"]
    completed = run_podman(argv)
    if completed.returncode != 0:
        raise BackendError(f"Cannot list containers: {failure_reason(completed)}")
    try:
        containers = json.loads(completed.stdout or "[]") or []
    except json.JSONDecodeError:
        raise BackendError("podman ps gave output that is not JSON") from None
    return [run_info(container) for container in containers]


def run_info(container: Mapping[str, Any]) -> RunInfo:
    """A run as `podman ps --format json` describes its container; a sidecar pair's
    environment container stands for the pair."""
    run_labels = {str(k): str(v) for k, v in (container.get("Labels") or {}).items()}
    names = container.get("Names") or [""]
    name = str(names[0])
    run_id = run_labels.get(RUN_ID_LABEL, name.removeprefix("ssebench-"))
    state = _STATES.get(str(container.get("State", "")).lower(), "unknown")
    exit_code = container.get("ExitCode")
    # No "keep" in the handle: cleanup of a run found again removes it.
    handle = RunHandle(backend=BACKEND_NAME, run_id=run_id, name=name)
    pair_id = run_labels.get(PAIR_LABEL)
    if pair_id is not None and name == container_name(pair_id):
        handle = RunHandle(
            backend=BACKEND_NAME,
            run_id=run_id,
            name=agent_container_name(pair_id),
            details={PAIR_DETAIL: pair_id, ENVIRONMENT_DETAIL: name},
        )
    created = container.get("Created")
    return RunInfo(
        run_id=run_id,
        name=name,
        state=state,
        exit_code=int(exit_code) if state == "exited" and exit_code is not None else None,
        image=str(container.get("Image", "")),
        labels=run_labels,
        created_at=(
            time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(created))
            if isinstance(created, int)
            else None
        ),
        handle=handle,
    )
