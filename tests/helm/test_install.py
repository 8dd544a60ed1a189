"""The chart installed on a real cluster (the one $KUBECONFIG names), with images built
from this checkout (`ssebench images build-services --registry ssebench-helmtest --tag
<version>`, which the test runs when they are missing) and imagePullPolicy Never.

Named gap on a machine without the internet (k8s-local): the proxy's database layer
cannot start (LiteLLM fetches its Prisma engine at start, and postgres:16 cannot be
pulled), so this test does not wait for the proxy or the database and checks
everything else; nothing else in the release waits for them either. With webui.hosted
false, a reference run (which needs no model, so no proxy) launched through the web UI's
API runs as a Job in the runs' namespace from the pilot task's reference image, built
here and tagged under runs.registry, and is graded passed.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import socket
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from ssebench import labels
from tests.cli import ssebench
from tests.conftest import CLUSTER_KUBECONFIG, PILOT_DATASET
from tests.helm.conftest import CHART, helm

pytestmark = pytest.mark.kubernetes

REGISTRY = "ssebench-helmtest"
VERSION = yaml.safe_load((CHART / "Chart.yaml").read_text())["appVersion"]
# The task of the run the web UI launches.
TASK = "py-semver-prerelease"


def kubectl(*arguments: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["kubectl", "--kubeconfig", CLUSTER_KUBECONFIG, *arguments],
        capture_output=True,
        text=True,
        check=check,
        timeout=120,
    )


def _image_present(name: str) -> bool:
    inspected = subprocess.run(["docker", "image", "inspect", name], capture_output=True)
    return inspected.returncode == 0


@pytest.fixture
def namespaces() -> Iterator[tuple[str, str]]:
    suffix = uuid.uuid4().hex[:6]
    release_ns, runs_ns = f"sse-helm-{suffix}", f"sse-helm-runs-{suffix}"
    for name in (release_ns, runs_ns):
        kubectl("create", "namespace", name)
    try:
        yield release_ns, runs_ns
    finally:
        for name in (release_ns, runs_ns):
            kubectl("delete", "namespace", name, "--wait=false", check=False)


def _wait_ready(namespace: str, deployment: str, seconds: float = 240) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = kubectl("get", "deployment", deployment, "-n", namespace, "-o", "json", check=False)
        if found.returncode == 0:
            status = json.loads(found.stdout).get("status", {})
            if status.get("readyReplicas", 0) >= 1:
                return
        time.sleep(2)
    pods = kubectl("get", "pods", "-n", namespace, "-o", "wide", check=False).stdout
    raise AssertionError(f"{deployment} did not become Ready:\n{pods}")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _secret(namespace: str, name: str) -> dict[str, str]:
    data = json.loads(kubectl("get", "secret", name, "-n", namespace, "-o", "json").stdout)["data"]
    return {key: base64.b64decode(value).decode() for key, value in data.items()}


def _reference_image() -> str:
    """The pilot task's reference image, built from this checkout with the Docker
    backend and tagged under the prebuilt name the release's runs use (runs.registry)."""
    from ssebench.agents import load_agent
    from ssebench.backends.docker import DockerBackend
    from ssebench.extensions import prebuilt_images
    from ssebench.runner import image_request
    from ssebench.tasks import load_dataset

    task = load_dataset(PILOT_DATASET).task(TASK)
    request = image_request(task, load_agent("reference"))
    built = DockerBackend(quiet_builds=True).prepare_images(request).run
    published = prebuilt_images(dataclasses.replace(request, registry=REGISTRY, prebuilt=True))
    subprocess.run(["docker", "tag", built, published.run], check=True, timeout=60)
    return published.run


def _api(
    port: int, path: str, token: str | None, body: dict[str, Any] | None = None
) -> tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, None


def test_install_upgrade_uninstall(namespaces: tuple[str, str]) -> None:
    missing = [
        service
        for service in ("catalog", "webui")
        if not _image_present(f"{REGISTRY}/{service}:{VERSION}")
    ]
    if missing:
        # Built from this checkout, as a user would before installing (docs/helm.md).
        only = [option for service in missing for option in ("--only", service)]
        built = ssebench(
            "images",
            "build-services",
            "--registry",
            REGISTRY,
            "--tag",
            VERSION,
            *only,
            timeout=1800,
        )
        assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    reference_image = _reference_image()
    release_ns, runs_ns = namespaces
    values = {
        "image": {"registry": REGISTRY, "pullPolicy": "Never"},
        "runs": {"namespace": runs_ns, "registry": REGISTRY, "imagePullPolicy": "Never"},
        "webui": {"hosted": False},
    }
    config = helm.Config(kubeconfig_path=CLUSTER_KUBECONFIG, namespace=release_ns)
    release = "ssebench"
    config.install(CHART, release, values, namespace=release_ns, timeout=120)
    try:
        _wait_ready(release_ns, "ssebench-catalog")
        _wait_ready(release_ns, "ssebench-webui")
        secret = _secret(release_ns, "ssebench-auth")
        token = secret["SSEBENCH_WEBUI_TOKEN"]

        port = _free_port()
        forward = subprocess.Popen(
            [
                "kubectl",
                "--kubeconfig",
                CLUSTER_KUBECONFIG,
                "-n",
                release_ns,
                "port-forward",
                "svc/ssebench-webui",
                f"{port}:3001",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    status, body = _api(port, "/api/runs", token)
                    break
                except (urllib.error.URLError, ConnectionError):
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(1)
            assert status == 200, body
            assert _api(port, "/api/runs", None)[0] == 401
            assert _api(port, "/api/runs", "x" * 24)[0] == 401
            _launch_reference_run(port, token, reference_image, runs_ns, release_ns)
        finally:
            forward.terminate()
            forward.wait(10)

        config.upgrade(
            CHART,
            release,
            {**values, "podAnnotations": {"upgraded": "1"}},
            namespace=release_ns,
            timeout=120,
        )
        assert _secret(release_ns, "ssebench-auth") == secret
    finally:
        config.uninstall(release, timeout=120)
    claims = kubectl("get", "pvc", "-n", release_ns, "-o", "name").stdout.split()
    assert "persistentvolumeclaim/data-ssebench-postgres-0" in claims
    assert kubectl("get", "secret", "ssebench-auth", "-n", release_ns, check=False).returncode != 0


def _launch_reference_run(port: int, token: str, image: str, runs_ns: str, release_ns: str) -> None:
    """A reference run launched from the web UI (POST /api/runs) runs as a Job in the
    runs' namespace, from the prebuilt image, and the web UI lists it graded passed."""
    run_id = f"helm-{uuid.uuid4().hex[:8]}"
    launch = {"task": TASK, "agent": "reference", "run_id": run_id}
    status, body = _api(port, "/api/runs", token, launch)
    assert (status, body) == (202, {"run_id": run_id})
    selector = f"{labels.RUN_ID}={run_id}"
    jobs: list[str] = []
    detail: dict[str, Any] = {}
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if not jobs:
            listed = kubectl(
                "get", "jobs", "-n", runs_ns, "-l", selector, "-o", "name", check=False
            )
            jobs = listed.stdout.split()
        status, found = _api(port, f"/api/runs/{run_id}", token)
        if status == 200 and found:
            detail = found
            if found.get("status") is not None:  # recorded: summary.json is written
                break
        time.sleep(3)
    runs = (_api(port, "/api/runs", token)[1] or {}).get("runs", [])
    context = (
        f"detail: {json.dumps(detail)[-4000:]}\n"
        + kubectl("get", "jobs,pods", "-n", runs_ns, "-o", "wide", check=False).stdout
        + kubectl(
            "logs", "-n", release_ns, "deploy/ssebench-webui", "--tail=40", check=False
        ).stdout
    )
    assert len(jobs) == 1, f"no Job labelled {selector} in {runs_ns}\n{context}"
    assert detail.get("status") == "passed", context
    assert (detail.get("grade") or {}).get("status") == "passed", context
    settings = detail.get("settings") or {}
    assert (settings.get("backend"), settings.get("prebuilt")) == ("kubernetes", True), context
    assert (detail.get("images") or {}).get("run") == image, context
    assert [item["status"] for item in runs if item["run_id"] == run_id] == ["passed"], context
