"""Finding runs again: the containers that carry the labels asked for, as the runs
that `ssebench runs list` prints (listed) or as RunInfo (list_runs).

listed imports neither the extension API nor the rest of the backend, and `runs list`
on Docker calls it alone (cli/runs.py): the extension API's dataclasses are a third of
that command's start-up (docs/performance.md, "`runs list` without the extension API")."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping

from ssebench import labels as label_keys
from ssebench.backends.docker import engine
from ssebench.errors import BackendError

# typing.TYPE_CHECKING without importing typing: see cli/main.py.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ssebench.extensions import RunHandle, RunInfo, RunState

# DockerBackend.supports_exec is this: `runs list` says it without loading the backend.
SUPPORTS_EXEC = True

_STATES: dict[str, RunState] = {
    "created": "created",
    "running": "running",
    "paused": "running",
    "restarting": "running",
    "exited": "exited",
    "dead": "exited",
}


def listed(labels: Mapping[str, str]) -> list[dict[str, Any]]:
    """The containers carrying labels, each as `ssebench runs list --json` shows a run
    (RunInfo's fields but the handle)."""
    return [run_fields(container) for container in _containers(labels)]


def list_runs(labels: Mapping[str, str]) -> list[RunInfo]:
    from ssebench.extensions import RunInfo

    runs = []
    for container in _containers(labels):
        fields = run_fields(container)
        runs.append(RunInfo(**fields, handle=_handle(fields)))
    return runs


def _containers(labels: Mapping[str, str]) -> list[Mapping[str, Any]]:
    """The containers carrying labels, in the shape of `docker container inspect`'s: one
    Engine API request where the API is at hand (engine.py), else `docker ps` and one
    `docker container inspect` of them all."""
    try:
        found = engine.get_json(engine.containers_path(dict(labels)))
    except engine.EngineUnavailable:
        found = None
    if isinstance(found, list):
        containers: list[Mapping[str, Any]] = [
            _as_inspected(entry) for entry in found if isinstance(entry, dict)
        ]
    else:
        containers = _inspected_by_cli(labels)
    return [container for container in containers if not _of_a_kubernetes_pod(container)]


# A Kubernetes node whose runtime is this dockerd (dockershim, cri-dockerd) gives each
# pod's sandbox container the pod's labels, so a Kubernetes run's pod would be listed,
# and pruned, as a Docker run. The runtime marks every container it makes with this.
_KUBERNETES_POD_LABEL = "io.kubernetes.pod.uid"


def _of_a_kubernetes_pod(container: Mapping[str, Any]) -> bool:
    config = container.get("Config") or {}
    return _KUBERNETES_POD_LABEL in (config.get("Labels") or {})


def _as_inspected(entry: Mapping[str, Any]) -> dict[str, Any]:
    """An entry of GET /containers/json in the shape of `docker container inspect`'s,
    which run_fields reads: the exit status is only in its Status text ("Exited (3) ...")."""
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


def _inspected_by_cli(labels: Mapping[str, str]) -> list[Mapping[str, Any]]:
    from ssebench.host.docker_cli import failure_reason, run_docker

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
    return [container for container in containers if isinstance(container, dict)]


_EXIT_STATUS = re.compile(r"^Exited \((-?\d+)\)")


def run_fields(container: Mapping[str, Any]) -> dict[str, Any]:
    """A container, inspected, as the fields of its RunInfo but the handle."""
    config = container.get("Config") or {}
    state = container.get("State") or {}
    run_labels = {str(key): str(value) for key, value in (config.get("Labels") or {}).items()}
    name = str(container.get("Name", "")).lstrip("/")
    run_state = _STATES.get(str(state.get("Status", "")), "unknown")
    exit_code = state.get("ExitCode")
    return {
        "run_id": run_labels.get(label_keys.RUN_ID, name.removeprefix("ssebench-")),
        "name": name,
        "state": run_state,
        "exit_code": (int(exit_code) if run_state == "exited" and exit_code is not None else None),
        "image": str(config.get("Image", "")),
        "labels": run_labels,
        "created_at": parse_created(container.get("Created")),
    }


def _handle(run: Mapping[str, Any]) -> RunHandle:
    from ssebench.backends.docker import names
    from ssebench.extensions import RunHandle

    run_labels, run_id, name = run["labels"], run["run_id"], run["name"]
    # No "keep" here: cleanup of a run found again removes it (ssebench runs remove).
    owner: dict[str, str] = {}
    if run_labels.get(label_keys.RESULTS_OWNER) and run_labels.get(label_keys.RESULTS):
        owner = {
            names.OWNER_DETAIL: run_labels[label_keys.RESULTS_OWNER],
            names.RESULTS_DETAIL: run_labels[label_keys.RESULTS],
            names.IMAGE_DETAIL: run["image"],
        }
    pair_id = run_labels.get(label_keys.PAIR)
    if pair_id is None:
        return RunHandle(backend=names.NAME, run_id=run_id, name=name, details=owner)
    # The environment container of a sidecar run: the handle names the pair.
    return RunHandle(
        backend=names.NAME,
        run_id=run_id,
        name=names.agent_container_name(pair_id),
        details={names.PAIR_DETAIL: pair_id, names.ENVIRONMENT_DETAIL: name, **owner},
    )


def parse_created(value: Any) -> str | None:
    """docker's RFC 3339 time with nanoseconds -> ISO 8601 in seconds, UTC."""
    if not isinstance(value, str) or len(value) < 19:
        return None
    return value[:19] + "Z" if value.endswith("Z") else value[:19]
