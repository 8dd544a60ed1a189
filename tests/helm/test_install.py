"""The chart installed on a real cluster (the one $KUBECONFIG names), with images built
from this checkout (`ssebench images build-services --registry ssebench-helmtest --tag
<version>`, which the test runs when they are missing) and imagePullPolicy Never.

Named gap on a machine without the internet (k8s-local): the proxy's database layer
cannot start (LiteLLM fetches its Prisma engine at start, and postgres:16 cannot be
pulled), so this test does not wait for the proxy or the database and checks
everything else; nothing else in the release waits for them either.
"""

from __future__ import annotations

import base64
import json
import os
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

from tests.cli import ssebench
from tests.helm.conftest import CHART, helm

pytestmark = pytest.mark.kubernetes

REGISTRY = "ssebench-helmtest"
VERSION = yaml.safe_load((CHART / "Chart.yaml").read_text())["appVersion"]


def kubectl(*arguments: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["kubectl", *arguments], capture_output=True, text=True, check=check, timeout=120
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


def _api(port: int, path: str, token: str | None) -> tuple[int, Any]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
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
    release_ns, runs_ns = namespaces
    values = {
        "image": {"registry": REGISTRY, "pullPolicy": "Never"},
        "runs": {"namespace": runs_ns, "imagePullPolicy": "Never"},
        "webui": {"hosted": False},
    }
    config = helm.Config(kubeconfig_path=os.environ.get("KUBECONFIG"), namespace=release_ns)
    release = "ssebench"
    config.install(CHART, release, values, namespace=release_ns, timeout=120)
    try:
        _wait_ready(release_ns, "ssebench-catalog")
        _wait_ready(release_ns, "ssebench-webui")
        secret = _secret(release_ns, "ssebench-auth")
        token = secret["SSEBENCH_WEBUI_TOKEN"]

        port = _free_port()
        forward = subprocess.Popen(
            ["kubectl", "-n", release_ns, "port-forward", "svc/ssebench-webui", f"{port}:3001"],
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
