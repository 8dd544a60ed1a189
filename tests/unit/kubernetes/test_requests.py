"""The Kubernetes API requests of one run (figure (e) of docs/performance.md), pinned
with a recording API client: start, wait, collect_results and cleanup of a run whose
pod starts on the backend's second look. A request added to a run fails here."""

from __future__ import annotations

import io
import tarfile
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from ssebench.backends.kubernetes import backend, manifests
from ssebench.backends.kubernetes.backend import KubernetesBackend
from ssebench.backends.kubernetes.config import KubernetesSettings
from ssebench.errors import BackendError, ResultsGoneError
from tests.unit.kubernetes.test_backend import install_api
from tests.unit.kubernetes.test_manifests import RUN_ID, make_spec

POD = "ssebench-run-1-abcde"


def container(name: str, state: str, exit_code: int = 0) -> Any:
    return SimpleNamespace(
        name=name,
        state=SimpleNamespace(
            waiting=SimpleNamespace(reason="ContainerCreating", message="")
            if state == "waiting"
            else None,
            running=SimpleNamespace() if state == "running" else None,
            terminated=SimpleNamespace(exit_code=exit_code) if state == "exited" else None,
        ),
    )


def pod(task: str, collector: str = "running") -> Any:
    return SimpleNamespace(
        metadata=SimpleNamespace(
            name=POD,
            labels={"job-name": manifests.object_name(RUN_ID)},
            resource_version=task,
            deletion_timestamp=None,
            creation_timestamp=None,
        ),
        status=SimpleNamespace(
            phase="Running",
            reason=None,
            conditions=[],
            container_statuses=[
                container(manifests.TASK_CONTAINER, task),
                container(manifests.COLLECTOR_CONTAINER, collector),
            ],
        ),
    )


def empty_tar() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo("./result.json")
        data = b'{"status": "passed"}'
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


class RecordingApi:
    """Every request of the run, in order: the client's methods by name, and each exec
    (a websocket) as "exec <container> <command>". The pod starts on the second list;
    the task container has exited by the first read."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        self.lists = 0
        self.pod_after_exit: Any | None = pod("exited")

    def __getattr__(self, method: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            self.requests.append(method)
            if method == "create_namespaced_job":
                return SimpleNamespace(metadata=SimpleNamespace(uid="job-uid-7"))
            if method == "list_namespaced_pod":
                self.lists += 1
                return SimpleNamespace(items=[pod("waiting" if self.lists == 1 else "running")])
            if method == "read_namespaced_pod":
                return self.pod_after_exit
            if method == "read_namespaced_pod_log":
                return SimpleNamespace(stream=lambda size: iter([b"ssebench: result: passed\n"]))
            return SimpleNamespace(items=[])

        return call


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> RecordingApi:
    api = RecordingApi()
    install_api(monkeypatch, api)
    monkeypatch.setattr(backend.time, "sleep", lambda seconds: None)

    def exec_stream(
        self: KubernetesBackend, namespace: str, name: str, where: str, command: list[str]
    ) -> Iterator[bytes]:
        api.requests.append(f"exec {where} {command[0]}")
        if command[0] == "tar":
            yield empty_tar()

    monkeypatch.setattr(KubernetesBackend, "_exec_stream", exec_stream)
    return api


def one_run(tmp_path: Path, *, keep: bool = False) -> KubernetesBackend:
    kubernetes = KubernetesBackend(KubernetesSettings(namespace="runs"))
    spec = make_spec(tmp_path, keep=keep)
    handle = kubernetes.start(spec)
    assert kubernetes.wait(handle, None) == 0
    dest = tmp_path / "dest"
    dest.mkdir()
    kubernetes.collect_results(handle, dest)
    assert (dest / "result.json").is_file()
    kubernetes.cleanup(handle)
    return kubernetes


def test_one_run_costs_ten_requests(api: RecordingApi, tmp_path: Path) -> None:
    one_run(tmp_path)
    assert api.requests == [
        # start: the three objects, then the pod until its task container runs
        "create_namespaced_job",
        "create_namespaced_network_policy",
        "create_namespaced_secret",
        "list_namespaced_pod",
        "list_namespaced_pod",
        # the output, followed to its end
        "read_namespaced_pod_log",
        # wait: one read of the pod, which has exited (collect_results reuses it)
        "read_namespaced_pod",
        # the read-out: results, then the archive
        f"exec {manifests.COLLECTOR_CONTAINER} tar",
        f"exec {manifests.COLLECTOR_CONTAINER} tar",
        # cleanup: the Job alone; its pod, Secret and policy go with it, unwaited
        "delete_namespaced_job",
    ]


def test_a_kept_run_stops_its_collector_and_deletes_nothing(
    api: RecordingApi, tmp_path: Path
) -> None:
    one_run(tmp_path, keep=True)
    assert api.requests[-1] == f"exec {manifests.COLLECTOR_CONTAINER} sh"
    assert not [request for request in api.requests if request.startswith("delete")]


def test_results_gone_since_wait_saw_the_pod_are_reported_gone(
    api: RecordingApi, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The read-out fails on the pod wait saw; read again, the pod is gone: the run has
    no results (ResultsGoneError), not a failed read-out."""
    kubernetes = KubernetesBackend(KubernetesSettings(namespace="runs"))
    handle = kubernetes.start(make_spec(tmp_path))
    assert kubernetes.wait(handle, None) == 0

    def broken(*args: Any) -> Iterator[bytes]:
        raise BackendError("Cannot run tar: 404 Not Found", backend="kubernetes")
        yield b""

    monkeypatch.setattr(KubernetesBackend, "_exec_stream", broken)
    api.pod_after_exit = None  # gone
    with pytest.raises(ResultsGoneError, match="are gone"):
        kubernetes.collect_results(handle, tmp_path)
