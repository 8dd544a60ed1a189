"""The chart installed on a real cluster (the one $KUBECONFIG names), with images built
from this checkout by the project's own command (`ssebench images build-services
--registry ssebench-helmtest --tag <version> --no-database`: litellm, catalog, webui
and postgres) and imagePullPolicy Never.

Named gap on a machine without the internet (k8s-local): **LiteLLM's database layer**
cannot run. The proxy with a database needs LiteLLM's Prisma client, whose tools and
engines are downloaded from their publishers' servers (at build or start), so here
the proxy is built and installed without it (`--no-database`, litellm.database=false):
the test checks that proxy Ready, serving its models with the master key and refusing
without it, and its key endpoints answering "DB not connected" (no per-run keys, no
spend; a run of a model cannot get a key from this release). Everything else runs:
the chart's Postgres (the postgres image of build-services, on a volume the test
provides, since k8s-local has no provisioner) becomes Ready and takes the auth
Secret's password, the catalog and the web UI become Ready without waiting for the
proxy, and with webui.hosted false a reference run (which needs no model, so no
proxy) launched through the web UI's API reads its task from the catalog, runs as a
Job in the runs' namespace from the pilot task's reference image (built here and
tagged under runs.registry), and is graded passed.
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
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from ssebench import labels
from ssebench.proxy.models import ModelCatalog
from tests.cli import ssebench
from tests.conftest import CLUSTER_KUBECONFIG, PILOT_DATASET
from tests.helm.conftest import CHART, helm

pytestmark = pytest.mark.kubernetes

REGISTRY = "ssebench-helmtest"
VERSION = yaml.safe_load((CHART / "Chart.yaml").read_text())["appVersion"]
# The task of the run the web UI launches.
TASK = "py-semver-prerelease"
SERVICES = ("litellm", "catalog", "webui", "postgres")
RELEASE = "ssebench"
# The claim of the chart's Postgres, and where the test's volume for it lives.
CLAIM = f"data-{RELEASE}-postgres-0"
VOLUMES = Path("/var/tmp/ssebench-helm-volumes")


def kubectl(*arguments: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["kubectl", "--kubeconfig", CLUSTER_KUBECONFIG, *arguments],
        capture_output=True,
        text=True,
        check=check,
        timeout=120,
    )


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


@pytest.fixture
def database_volume(namespaces: tuple[str, str]) -> Iterator[str]:
    """A hostPath PersistentVolume bound in advance to the chart's Postgres claim (the
    cluster has no provisioner); removed with its folder afterwards."""
    release_ns, _ = namespaces
    name = f"{release_ns}-postgres"
    folder = VOLUMES / name
    folder.mkdir(parents=True)
    # The database runs as 999, and a hostPath volume does not get the pod's fsGroup.
    folder.chmod(0o777)
    volume = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "labels": {"ssebench.test": "helm-install"}},
        "spec": {
            "capacity": {"storage": "5Gi"},
            "accessModes": ["ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": "Retain",
            "claimRef": {"namespace": release_ns, "name": CLAIM},
            "hostPath": {"path": str(folder), "type": "Directory"},
        },
    }
    subprocess.run(
        ["kubectl", "--kubeconfig", CLUSTER_KUBECONFIG, "apply", "-f", "-"],
        input=json.dumps(volume),
        text=True,
        check=True,
        capture_output=True,
        timeout=60,
    )
    try:
        yield name
    finally:
        kubectl("delete", "persistentvolume", name, "--wait=false", check=False)
        subprocess.run(["rm", "-rf", str(folder)], check=False, timeout=60)
        if not any(VOLUMES.iterdir()):
            VOLUMES.rmdir()


def _wait_ready(namespace: str, workload: str, seconds: float = 240) -> None:
    """workload: deployment/NAME or statefulset/NAME."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = kubectl("get", workload, "-n", namespace, "-o", "json", check=False)
        if found.returncode == 0:
            status = json.loads(found.stdout).get("status", {})
            if status.get("readyReplicas", 0) >= 1:
                return
        time.sleep(2)
    pods = kubectl("get", "pods,pvc", "-n", namespace, "-o", "wide", check=False).stdout
    raise AssertionError(f"{workload} did not become Ready:\n{pods}")


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


@contextmanager
def _port_forward(namespace: str, service: str, remote: int, probe: str) -> Iterator[int]:
    """kubectl port-forward to svc/service on a free local port, once probe answers."""
    port = _free_port()
    forward = subprocess.Popen(
        [
            "kubectl",
            "--kubeconfig",
            CLUSTER_KUBECONFIG,
            "-n",
            namespace,
            "port-forward",
            f"svc/{service}",
            f"{port}:{remote}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}{probe}", timeout=5):
                    break
            except urllib.error.HTTPError:
                break  # it answers, if only with a refusal
            except (urllib.error.URLError, ConnectionError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(1)
        yield port
    finally:
        forward.terminate()
        forward.wait(10)


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


def test_install_upgrade_uninstall(namespaces: tuple[str, str], database_volume: str) -> None:
    # Built from this checkout, as a user would before installing (docs/helm.md); the
    # layers of an unchanged image are Docker's cache.
    built = ssebench(
        "images",
        "build-services",
        "--registry",
        REGISTRY,
        "--tag",
        VERSION,
        "--no-database",
        "--json",
        timeout=1800,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    assert json.loads(built.stdout)["images"] == [
        f"{REGISTRY}/{name}:{VERSION}" for name in SERVICES
    ]
    reference_image = _reference_image()
    release_ns, runs_ns = namespaces
    values = {
        "image": {"registry": REGISTRY, "pullPolicy": "Never"},
        "runs": {"namespace": runs_ns, "registry": REGISTRY, "imagePullPolicy": "Never"},
        "webui": {"hosted": False},
        # The named gap: the proxy without LiteLLM's database layer (see the docstring).
        "litellm": {"database": False},
        "postgres": {"image": f"{REGISTRY}/postgres:{VERSION}"},
    }
    config = helm.Config(kubeconfig_path=CLUSTER_KUBECONFIG, namespace=release_ns)
    config.install(CHART, RELEASE, values, namespace=release_ns, timeout=120)
    try:
        # Nothing here waits for the proxy: it is checked last.
        _wait_ready(release_ns, "deployment/ssebench-catalog")
        _wait_ready(release_ns, "deployment/ssebench-webui")
        secret = _secret(release_ns, "ssebench-auth")
        token = secret["SSEBENCH_WEBUI_TOKEN"]

        with _port_forward(release_ns, "ssebench-webui", 3001, "/api/runs") as port:
            status, body = _api(port, "/api/runs", token)
            assert status == 200, body
            assert _api(port, "/api/runs", None)[0] == 401
            assert _api(port, "/api/runs", "x" * 24)[0] == 401
            _launch_reference_run(port, token, reference_image, runs_ns, release_ns)

        _check_database(release_ns)
        _check_proxy(release_ns, secret["LITELLM_MASTER_KEY"])

        config.upgrade(
            CHART,
            RELEASE,
            {**values, "podAnnotations": {"upgraded": "1"}},
            namespace=release_ns,
            timeout=120,
        )
        assert _secret(release_ns, "ssebench-auth") == secret
    finally:
        config.uninstall(RELEASE, timeout=120)
    claims = kubectl("get", "pvc", "-n", release_ns, "-o", "name").stdout.split()
    assert f"persistentvolumeclaim/{CLAIM}" in claims
    assert kubectl("get", "secret", "ssebench-auth", "-n", release_ns, check=False).returncode != 0


def _check_database(release_ns: str) -> None:
    """The chart's Postgres, from the postgres image of build-services, is Ready on its
    volume and takes the auth Secret's password (read inside the pod from the
    variable the chart sets, so it is in no command line)."""
    _wait_ready(release_ns, "statefulset/ssebench-postgres")
    claim = json.loads(kubectl("get", "pvc", CLAIM, "-n", release_ns, "-o", "json").stdout)
    assert claim["status"]["phase"] == "Bound", claim["status"]
    psql = 'psql -h 127.0.0.1 -U litellm -d litellm -tAc "select current_user"'
    query = f'PGPASSWORD="$POSTGRES_PASSWORD" {psql}'
    answer = kubectl("exec", "-n", release_ns, "ssebench-postgres-0", "--", "sh", "-c", query)
    assert answer.stdout.strip() == "litellm", answer.stderr
    wrong = f"PGPASSWORD=wrong {psql}"
    refused = kubectl(
        "exec", "-n", release_ns, "ssebench-postgres-0", "--", "sh", "-c", wrong, check=False
    )
    assert refused.returncode != 0 and "password authentication failed" in refused.stderr


def _check_proxy(release_ns: str, master_key: str) -> None:
    """The proxy without its database layer (the named gap) becomes Ready and serves
    the models of models/ to the master key only; making a run's key needs the
    database, and it says so."""
    _wait_ready(release_ns, "deployment/ssebench-litellm")
    with _port_forward(release_ns, "ssebench-litellm", 4000, "/health/liveliness") as port:
        base = f"http://127.0.0.1:{port}"
        with urllib.request.urlopen(f"{base}/health/liveliness", timeout=10) as answer:
            assert answer.status == 200
        with urllib.request.urlopen(f"{base}/health/readiness", timeout=10) as answer:
            assert json.loads(answer.read())["db"] == "Not connected"
        models = urllib.request.Request(
            f"{base}/v1/models", headers={"Authorization": f"Bearer {master_key}"}
        )
        with urllib.request.urlopen(models, timeout=10) as answer:
            served = {item["id"] for item in json.loads(answer.read())["data"]}
        assert served == set(ModelCatalog.load(CHART.parents[2] / "models").names)
        with pytest.raises(urllib.error.HTTPError) as anonymous:
            urllib.request.urlopen(f"{base}/v1/models", timeout=10)
        assert anonymous.value.code == 401
        key = urllib.request.Request(
            f"{base}/key/generate",
            data=b"{}",
            headers={"Authorization": f"Bearer {master_key}", "Content-Type": "application/json"},
        )
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(key, timeout=10)
        assert "DB not connected" in refused.value.read().decode()


def _launch_reference_run(port: int, token: str, image: str, runs_ns: str, release_ns: str) -> None:
    """A reference run launched from the web UI (POST /api/runs) reads its task from the
    release's catalog (the web UI checks it there, the run it starts reads it with
    --catalog), runs as a Job in the runs' namespace, from the prebuilt image, and the
    web UI lists it graded passed once it is stopped there."""
    run_id = f"helm-{uuid.uuid4().hex[:8]}"
    launch = {"task": TASK, "agent": "reference", "run_id": run_id}
    catalog_reads = _catalog_reads(release_ns)
    status, body = _api(port, "/api/runs", token, launch)
    assert (status, body) == (202, {"run_id": run_id})
    selector = f"{labels.RUN_ID}={run_id}"
    jobs: list[str] = []
    detail: dict[str, Any] = {}
    stop_sent = False
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
            if found.get("phase") == "graded" and not stop_sent:
                # A web UI launch is kept: its task container waits after grading (the
                # terminal can reach it) until it is stopped there, which records it.
                assert _api(port, f"/api/runs/{run_id}/stop", token, {})[0] == 202
                stop_sent = True
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
    # The launcher's check and the run's own reading of the task, at least.
    assert _catalog_reads(release_ns) >= catalog_reads + 2, context


def _catalog_reads(release_ns: str) -> int:
    """How often the catalog has served its manifest (its log has a line per request)."""
    log = kubectl("logs", "-n", release_ns, "deploy/ssebench-catalog").stdout
    return log.count('"GET /manifest.json')
