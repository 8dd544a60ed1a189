"""The Kubernetes tests' cluster, the session fixture `cluster` (shared through
tests/conftest.py): a real cluster (the one $KUBECONFIG names), real images, real runs.

The session makes a namespace of its own, applies deploy/k8s/rbac.yaml in it, and then
runs everything as that ServiceAccount, not as the cluster's admin: $KUBECONFIG points at
a kubeconfig with the account's token for the rest of the session, so ssebench and
kubectl in the tests have exactly the Role's rights. The images of the pilot task are
built with the Docker backend's builder and tagged under the prebuilt names of
REGISTRY; the nodes must see the local image store (k8s-local and kind after `kind
load` do), so pods use imagePullPolicy Never. At the end nothing of the session may be
left in the namespace, which is then deleted.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import os
import secrets
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.conftest import PILOT_DATASET, ROOT, kubernetes_problem

if TYPE_CHECKING:
    from ssebench.extensions import ImageRequest

SESSION_PREFIX = f"k{secrets.token_hex(3)}"
NAMESPACE = f"ssebench-test-{SESSION_PREFIX}"
REGISTRY = "ssebench-test.local"
TASK = "py-semver-prerelease"
AGENTS = ("reference", "dummy", "sleeper")
SERVICE_ACCOUNT = "ssebench"
RUN_KINDS = "jobs,pods,secrets,networkpolicies"


def new_run_id(name: str) -> str:
    return f"{SESSION_PREFIX}-{name}-{secrets.token_hex(2)}"


@dataclasses.dataclass(frozen=True)
class Cluster:
    admin_kubeconfig: str
    kubeconfig: str
    namespace: str
    images: dict[str, str]

    def admin(self, *arguments: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """kubectl as the cluster's admin, for set-up and for checking what is left."""
        done = subprocess.run(
            ["kubectl", "--kubeconfig", self.admin_kubeconfig, *arguments],
            capture_output=True,
            text=True,
            timeout=120,
        )
        if check:
            assert done.returncode == 0, done.stderr
        return done

    def objects_of(self, selector: str) -> list[str]:
        done = self.admin("get", RUN_KINDS, "-n", self.namespace, "-l", selector, "-o", "name")
        return [line for line in done.stdout.splitlines() if line.strip()]


def _service_account_token(admin_kubeconfig: str, namespace: str, account: str) -> str:
    """A token of the ServiceAccount: TokenRequest where the server has it, else the
    token Secret that clusters before 1.24 make for every account."""
    requested = subprocess.run(
        [
            "kubectl",
            "--kubeconfig",
            admin_kubeconfig,
            "create",
            "token",
            account,
            "-n",
            namespace,
            "--duration",
            "4h",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if requested.returncode == 0 and requested.stdout.strip():
        return requested.stdout.strip()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        listed = subprocess.run(
            [
                "kubectl",
                "--kubeconfig",
                admin_kubeconfig,
                "get",
                "secrets",
                "-n",
                namespace,
                "-o",
                "json",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        for item in json.loads(listed.stdout or "{}").get("items", []):
            annotations = item["metadata"].get("annotations") or {}
            if (
                item.get("type") == "kubernetes.io/service-account-token"
                and annotations.get("kubernetes.io/service-account.name") == account
                and item.get("data", {}).get("token")
            ):
                return base64.b64decode(item["data"]["token"]).decode()
        time.sleep(1)
    raise AssertionError(f"no token for the ServiceAccount: {requested.stderr.strip()}")


def service_account_kubeconfig(
    admin_kubeconfig: str, namespace: str, folder: Path, account: str = SERVICE_ACCOUNT
) -> Path:
    """A kubeconfig (mode 0600, in folder) that is the ServiceAccount account of
    namespace, by its token, on the cluster of admin_kubeconfig."""
    view = subprocess.run(
        [
            "kubectl",
            "--kubeconfig",
            admin_kubeconfig,
            "config",
            "view",
            "--raw",
            "--minify",
            "--flatten",
            "-o",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    cluster = json.loads(view.stdout)["clusters"][0]["cluster"]
    token = _service_account_token(admin_kubeconfig, namespace, account)
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "test", "cluster": cluster}],
        "users": [{"name": account, "user": {"token": token}}],
        "contexts": [
            {
                "name": "test",
                "context": {"cluster": "test", "user": account, "namespace": namespace},
            }
        ],
        "current-context": "test",
    }
    path = folder / f"{account}.kubeconfig"
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as file:
        json.dump(config, file)
    return path


def build_as_published(request: ImageRequest) -> str:
    """Build the run image here with the Docker backend's builder and tag it with the
    name prebuilt_images gives it under REGISTRY; that name."""
    from ssebench.backends.docker import DockerBackend
    from ssebench.extensions import prebuilt_images

    built = DockerBackend(quiet_builds=True).prepare_images(request).run
    published = prebuilt_images(dataclasses.replace(request, registry=REGISTRY, prebuilt=True)).run
    subprocess.run(["docker", "tag", built, published], check=True, timeout=60)
    return published


def reference_run_published(
    dataset: Path, task_id: str, results: Path, name: str
) -> tuple[str, Path, dict[str, Any]]:
    """Publish the reference agent's image of a task of dataset (build_as_published) and
    run it on the cluster with --prebuilt, to its end: (verdict, run directory, its
    result.json)."""
    from ssebench.agents import load_agent
    from ssebench.runner import image_request
    from ssebench.tasks import load_dataset
    from tests.cli import last_line_verdict, run_arguments, ssebench

    task = load_dataset(dataset).task(task_id)
    build_as_published(image_request(task, load_agent("reference")))
    arguments = run_arguments(
        dataset, task_id, "reference", new_run_id(name), results,
        "--backend", "kubernetes", "--prebuilt",
    )  # fmt: skip
    done = ssebench(*arguments, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    status, run_dir = last_line_verdict(done.stdout)
    return status, run_dir, json.loads((run_dir / "result.json").read_text())


def _build_images() -> dict[str, str]:
    """The pilot task's images for each agent, tagged as prebuilt_images names them."""
    from ssebench.agents import load_agent
    from ssebench.runner import image_request
    from ssebench.tasks import load_dataset

    task = load_dataset(PILOT_DATASET).task(TASK)
    return {
        agent_name: build_as_published(image_request(task, load_agent(agent_name)))
        for agent_name in AGENTS
    }


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    if kubernetes_problem() is not None:
        pytest.skip(kubernetes_problem() or "")  # the marker check has failed the test in CI
    admin_kubeconfig = os.environ["KUBECONFIG"]
    images = _build_images()
    folder = tmp_path_factory.mktemp("kubernetes")
    setup = Cluster(admin_kubeconfig, admin_kubeconfig, NAMESPACE, images)
    setup.admin("create", "namespace", NAMESPACE)
    try:
        setup.admin("apply", "-n", NAMESPACE, "-f", str(ROOT / "deploy" / "k8s" / "rbac.yaml"))
        kubeconfig = str(service_account_kubeconfig(admin_kubeconfig, NAMESPACE, folder))
        saved = {
            name: os.environ.get(name)
            for name in (
                "KUBECONFIG",
                "SSEBENCH_K8S_NAMESPACE",
                "SSEBENCH_REGISTRY",
                "SSEBENCH_K8S_IMAGE_PULL_POLICY",
            )
        }
        os.environ.update(
            {
                "KUBECONFIG": kubeconfig,
                "SSEBENCH_K8S_NAMESPACE": NAMESPACE,
                "SSEBENCH_REGISTRY": REGISTRY,
                "SSEBENCH_K8S_IMAGE_PULL_POLICY": "Never",
            }
        )
        from ssebench.backends.kubernetes import client

        client.api.cache_clear()  # the admin's client must not serve the tests
        try:
            yield Cluster(admin_kubeconfig, kubeconfig, NAMESPACE, images)
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
            client.api.cache_clear()
        left = setup.objects_of("app.kubernetes.io/managed-by=ssebench")
        # A run's pod, Secret and policy go after its Job, in the background (the runner
        # does not wait on it), and a pod takes its grace period and the kubelet's time.
        deadline = time.monotonic() + 180
        while left and time.monotonic() < deadline:
            time.sleep(2)
            left = setup.objects_of("app.kubernetes.io/managed-by=ssebench")
        assert left == [], f"the Kubernetes tests left these behind: {left}"
    finally:
        setup.admin("delete", "namespace", NAMESPACE, "--wait=false", check=False)
