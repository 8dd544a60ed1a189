"""Finding runs again: the containers that carry the labels asked for, as RunInfo."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping
from typing import Any

from ssebench.backends.docker import engine
from ssebench.backends.docker.names import (
    ENVIRONMENT_DETAIL,
    IMAGE_DETAIL,
    NAME,
    OWNER_DETAIL,
    PAIR_DETAIL,
    RESULTS_DETAIL,
    agent_container_name,
)
from ssebench.docker_cli import failure_reason, run_docker
from ssebench.errors import BackendError
from ssebench.extensions import (
    PAIR_LABEL,
    RESULTS_LABEL,
    RESULTS_OWNER_LABEL,
    RUN_ID_LABEL,
    RunHandle,
    RunInfo,
    RunState,
)

_STATES: dict[str, RunState] = {
    "created": "created",
    "running": "running",
    "paused": "running",
    "restarting": "running",
    "exited": "exited",
    "dead": "exited",
}


def list_runs(labels: Mapping[str, str]) -> list[RunInfo]:
    """The containers carrying labels: one Engine API request where the API is at hand
    (engine.py), else `docker ps` and one `docker container inspect` of them all."""
    try:
        listed = engine.get_json(engine.containers_path(dict(labels)))
    except engine.EngineUnavailable:
        return _list_runs_by_cli(labels)
    if not isinstance(listed, list):
        return _list_runs_by_cli(labels)
    return [run_info(_as_inspected(entry)) for entry in listed if isinstance(entry, dict)]


def _as_inspected(entry: Mapping[str, Any]) -> dict[str, Any]:
    """An entry of GET /containers/json in the shape of `docker container inspect`'s,
    which run_info reads: the exit status is only in its Status text ("Exited (3) ...")."""
    names = entry.get("Names") or [""]
    exited = _EXIT_STATUS.match(str(entry.get("Status", "")))
    created = entry.get("Created")
    return {
        "Name": str(names[0]),
        "Config": {"Labels": entry.get("Labels") or {}, "Image": entry.get("Image", "")},
        "State": {
            "Status": entry.get("State", ""),
            "ExitCode": int(exited.group(1)) if exited else None,
        },
        "Created": (
            # time, not datetime: its import would be a tenth of `runs list`'s own.
            time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(created))
            if isinstance(created, int)
            else None
        ),
    }


def _list_runs_by_cli(labels: Mapping[str, str]) -> list[RunInfo]:
    argv = ["ps", "--all", "--no-trunc", "--format", "{{.ID}}"]
    for key, value in labels.items():
        argv += ["--filter", f"label={key}={value}"]
    completed = run_docker(argv)
    if completed.returncode != 0:
        raise BackendError(f"Cannot list containers: {failure_reason(completed)}")
    ids = completed.stdout.split()
    if not ids:
        return []
    # One inspect of all of them: ps's own labels column is ambiguous ("k=v,k=v").
    inspected = run_docker(["container", "inspect", *ids])
    try:
        containers = json.loads(inspected.stdout or "[]")
    except json.JSONDecodeError:
        raise BackendError(f"Cannot inspect containers: {failure_reason(inspected)}") from None
    # A container removed between the two calls is simply not listed.
    return [run_info(container) for container in containers]


_EXIT_STATUS = re.compile(r"^Exited \((-?\d+)\)")


def run_info(container: Mapping[str, Any]) -> RunInfo:
    config = container.get("Config") or {}
    state = container.get("State") or {}
    run_labels = {str(key): str(value) for key, value in (config.get("Labels") or {}).items()}
    name = str(container.get("Name", "")).lstrip("/")
    run_id = run_labels.get(RUN_ID_LABEL, name.removeprefix("ssebench-"))
    run_state = _STATES.get(str(state.get("Status", "")), "unknown")
    exit_code = state.get("ExitCode")
    # No "keep" here: cleanup of a run found again removes it (ssebench runs remove).
    owner: dict[str, str] = {}
    if run_labels.get(RESULTS_OWNER_LABEL) and run_labels.get(RESULTS_LABEL):
        owner = {
            OWNER_DETAIL: run_labels[RESULTS_OWNER_LABEL],
            RESULTS_DETAIL: run_labels[RESULTS_LABEL],
            IMAGE_DETAIL: str(config.get("Image", "")),
        }
    handle = RunHandle(backend=NAME, run_id=run_id, name=name, details=owner)
    pair_id = run_labels.get(PAIR_LABEL)
    if pair_id is not None:
        # The environment container of a sidecar run: the handle names the pair.
        handle = RunHandle(
            backend=NAME,
            run_id=run_id,
            name=agent_container_name(pair_id),
            details={PAIR_DETAIL: pair_id, ENVIRONMENT_DETAIL: name, **owner},
        )
    return RunInfo(
        run_id=run_id,
        name=name,
        state=run_state,
        exit_code=int(exit_code) if run_state == "exited" and exit_code is not None else None,
        image=str(config.get("Image", "")),
        labels=run_labels,
        created_at=parse_created(container.get("Created")),
        handle=handle,
    )


def parse_created(value: Any) -> str | None:
    """docker's RFC 3339 time with nanoseconds -> ISO 8601 in seconds, UTC."""
    if not isinstance(value, str) or len(value) < 19:
        return None
    return value[:19] + "Z" if value.endswith("Z") else value[:19]
