"""What a run's pod says: its containers' states, and whether it still runs."""

from __future__ import annotations

from typing import Any

from ssebench.backends.kubernetes import client, manifests
from ssebench.extensions import RunState

# The waiting reasons of a container whose image cannot be had.
PULL_ERRORS = frozenset(
    {"ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull", "InvalidImageName"}
)


def container_status(pod: Any, container: str) -> Any | None:
    for status in (pod.status and pod.status.container_statuses) or []:
        if status.name == container:
            return status
    return None


def task_state(pod: Any | None) -> tuple[RunState, int | None]:
    status = container_status(pod, manifests.TASK_CONTAINER) if pod is not None else None
    if status is None or status.state is None:
        return "created", None
    if status.state.terminated is not None:
        return "exited", int(status.state.terminated.exit_code)
    if status.state.running is not None:
        return "running", None
    return "created", None


def pod_is_running(namespace: str, pod: str) -> bool:
    """True while the pod exists and its task container runs (the port-forward's life)."""
    found = client.call(
        f"Cannot read the pod {pod}",
        client.api().core.read_namespaced_pod,
        pod,
        namespace,
        missing_ok=True,
    )
    return found is not None and task_state(found)[0] == "running"
