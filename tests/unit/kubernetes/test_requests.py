"""The Kubernetes API requests of one run (figure (e) of docs/performance.md), pinned
with a recording API client: start, wait, collect_results and cleanup of a run whose
pod starts on the backend's second look, and a whole reference run as the Runner makes
it (prepare_images' image check, the reference patch, the run). A request added to a
run fails here."""

from __future__ import annotations

import base64
import dataclasses
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
from ssebench.backends.kubernetes.image_check import READ_OUT_LOG_BYTES
from ssebench.errors import BackendError, ResultsGoneError
from ssebench.extensions import IMAGE_REFERENCE_PATCH, REFERENCE_PATCH_TARGET, Mount
from tests.unit.kubernetes.test_backend import install_api, request
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


def copy_pod() -> Any:
    """The short pod that copies a file out of an image, its container running."""
    return SimpleNamespace(
        metadata=SimpleNamespace(resource_version="1", deletion_timestamp=None),
        status=SimpleNamespace(phase="Running", container_statuses=[container("copy", "running")]),
    )


class RecordingApi:
    """Every request of the run, in order: the client's methods by name, and each exec
    (a websocket) as "exec <container> <command>". The pod starts on the second list;
    the task container has exited by the first read."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        self.bodies: dict[str, Any] = {}
        self.lists = 0
        self.pod_after_exit: Any | None = pod("exited")
        # What the image check's pod printed: the reference patch it read out, whole.
        self.check_log = base64.encodebytes(b"the patch") + b"ssebench: read out\n"
        self.api_client = SimpleNamespace(configuration=SimpleNamespace(host="https://k8s.invalid"))

    def __getattr__(self, method: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            self.requests.append(method)
            self.bodies[method] = args[-1] if args else None
            if method == "create_namespaced_job":
                return SimpleNamespace(metadata=SimpleNamespace(uid="job-uid-7"))
            if method == "list_namespaced_pod":
                self.lists += 1
                return SimpleNamespace(items=[pod("waiting" if self.lists == 1 else "running")])
            if method == "read_namespaced_pod" and str(args[0]).startswith("ssebench-copy-"):
                return copy_pod()
            if method == "read_namespaced_pod":
                return self.pod_after_exit
            if method == "read_namespaced_pod_log" and str(args[0]).startswith("ssebench-probe-"):
                # The API server's cut at limitBytes.
                data = self.check_log[: kwargs.get("limit_bytes")]
                return SimpleNamespace(data=data, release_conn=lambda: None)
            if method == "read_namespaced_pod_log":
                return SimpleNamespace(stream=lambda size: iter([b"ssebench: result: passed\n"]))
            return SimpleNamespace(items=[])

        return call


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> RecordingApi:
    api = RecordingApi()
    install_api(monkeypatch, api)
    monkeypatch.setattr(backend.time, "sleep", lambda seconds: None)
    monkeypatch.setattr(backend, "_present_images", {})
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))

    def exec_stream(
        self: KubernetesBackend, namespace: str, name: str, where: str, command: list[str]
    ) -> Iterator[bytes]:
        api.requests.append(f"exec {where} {command[0]}")
        if command[0] == "tar":
            yield empty_tar()
        if command[0] == "cat":
            yield b"the patch"

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


RUN = [
    # start: the three objects, then the Job's pod until its task container runs (found
    # by a list, then read by name)
    "create_namespaced_job",
    "create_namespaced_network_policy",
    "create_namespaced_secret",
    "list_namespaced_pod",
    "read_namespaced_pod",
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


def test_one_run_costs_ten_requests(api: RecordingApi, tmp_path: Path) -> None:
    one_run(tmp_path)
    assert api.requests == RUN


def reference_run(kubernetes: KubernetesBackend, tmp_path: Path) -> None:
    """What the Runner asks of the backend for a reference run: the images, the patch
    copied out of the run's image (with the run's labels), then the run with it."""
    images = kubernetes.prepare_images(request())
    spec = make_spec(tmp_path, image=images.run)
    patch = Path(spec.results.source) / "reference.patch"
    patch.parent.mkdir(parents=True, exist_ok=True)  # the Runner makes the run directory
    kubernetes.copy_from_image(images.run, IMAGE_REFERENCE_PATCH, patch, None, labels=spec.labels)
    spec = dataclasses.replace(
        spec, artifacts=(Mount(target=REFERENCE_PATCH_TARGET, source=str(patch), read_only=True),)
    )
    handle = kubernetes.start(spec)
    assert kubernetes.wait(handle, None) == 0
    dest = tmp_path / "dest"
    dest.mkdir(parents=True, exist_ok=True)
    kubernetes.collect_results(handle, dest)
    kubernetes.cleanup(handle)


# The reference patch, out of the run's image: a short pod of its own (create, one
# read after its first 2 s, exec cat, delete), then the patch goes in the Secret.
COPY = [
    "create_namespaced_pod",
    "read_namespaced_pod",
    "exec copy cat",
    "delete_namespaced_pod",
]


# The image check: a short pod (create, one read after its first 1.5 s, its log, delete).
CHECK = [
    "create_namespaced_pod",
    "read_namespaced_pod",
    "read_namespaced_pod_log",
    "delete_namespaced_pod",
]


def test_a_whole_reference_run_costs_fourteen_requests_checked_or_not(
    api: RecordingApi, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The image check is one short pod (create, one read after its first 1.5 s, its
    log, delete), which reads the reference patch out as well (the contract: the Secret
    carries the patch, the pod has two containers). The next process (the same image
    within the hour) has the check's answer kept, but the patch is not: it checks again,
    since the check's pod reads the patch out sooner than a copy pod would."""
    kubernetes = KubernetesBackend(KubernetesSettings(namespace="runs"))
    reference_run(kubernetes, tmp_path)
    assert api.requests == [*CHECK, *RUN]
    check = api.bodies["create_namespaced_pod"]["spec"]["containers"][0]
    assert check["command"][-1] == IMAGE_REFERENCE_PATCH
    assert (tmp_path / RUN_ID / "reference.patch").read_bytes() == b"the patch"
    job = api.bodies["create_namespaced_job"]
    pod_spec = job["spec"]["template"]["spec"]
    assert "initContainers" not in pod_spec
    assert [c["name"] for c in pod_spec["containers"]] == [
        manifests.TASK_CONTAINER,
        manifests.COLLECTOR_CONTAINER,
    ]
    secret = api.bodies["create_namespaced_secret"]
    assert base64.b64decode(secret["data"][manifests.REFERENCE_PATCH_KEY]) == b"the patch"

    api.requests.clear()
    api.lists = 0
    monkeypatch.setattr(backend, "_present_images", {})  # another process
    reference_run(kubernetes, tmp_path / "again")
    assert api.requests == [*CHECK, *RUN]
    assert api.bodies["create_namespaced_pod"]["spec"]["containers"][0] == check
    assert (tmp_path / "again" / RUN_ID / "reference.patch").read_bytes() == b"the patch"


@pytest.mark.parametrize(
    "log",
    [
        base64.encodebytes(b"the patch"),  # no end mark: not seen whole
        b"sh: base64: not found\n",  # an image without base64
        b"dGhlIHBhdGNo\nsh: 1: cannot open /ssebench/task/reference.patch\nssebench: read out\n",
        b"\xff\xfe\nssebench: read out\n",
        # whole, but longer than the log is read: the API server cuts the end mark off
        base64.encodebytes(b"x" * READ_OUT_LOG_BYTES) + b"ssebench: read out\n",
    ],
)
def test_a_check_log_without_the_whole_patch_leaves_the_copy_its_own_pod(
    api: RecordingApi, tmp_path: Path, log: bytes
) -> None:
    api.check_log = log
    reference_run(KubernetesBackend(KubernetesSettings(namespace="runs")), tmp_path)
    assert api.requests[4:8] == COPY
    assert (tmp_path / RUN_ID / "reference.patch").read_bytes() == b"the patch"


def test_copy_from_image_without_a_run_is_a_short_pod_too(
    api: RecordingApi, tmp_path: Path
) -> None:
    """copy_from_image without a run's labels reads the file out of a short pod of the
    image all the same: the four requests of COPY."""
    kubernetes = KubernetesBackend(KubernetesSettings(namespace="runs"))
    dest = tmp_path / "patch"
    kubernetes.copy_from_image("r/x:1", IMAGE_REFERENCE_PATCH, dest, None)
    assert dest.read_bytes() == b"the patch"
    assert api.requests == COPY
    assert api.bodies["create_namespaced_pod"]["spec"]["containers"][0]["image"] == "r/x:1"


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
