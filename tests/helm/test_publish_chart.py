"""`ssebench images publish-chart` for real: the chart and its service images pushed to
a registry on 127.0.0.1 (Debian's docker-registry, tests/registry.py), checked through
the registry's API, then installed with Helm from oci://127.0.0.1:PORT/... on the
cluster $KUBECONFIG names, with no image value set: the pods pull the images from that
registry, through the packaged chart's image.registry.

What is real here: k8s-local's kubelet uses this machine's dockerd, which pulls from a
registry on 127.0.0.1 over plain HTTP (Docker treats 127.0.0.0/8 as insecure), so the
local copies are untagged before the install and the pods' images come from the
registry. The proxy runs without its database (litellm.database=false, no Postgres), as
in test_install.py: LiteLLM's database layer cannot be built offline.
"""

from __future__ import annotations

import json
import uuid

import pytest

from tests.cli import ssebench
from tests.conftest import CLUSTER_KUBECONFIG
from tests.helm.conftest import helm
from tests.helm.test_install import REGISTRY, SERVICES, VERSION, _wait_ready, kubectl
from tests.registry import MANIFEST_TYPES, docker, local_registry, registry_get

pytestmark = pytest.mark.kubernetes

CONFIG_MEDIA_TYPE = "application/vnd.cncf.helm.config.v1+json"


def test_the_chart_is_published_and_installs_from_the_registry() -> None:
    built = ssebench(
        "images", "build-services", "--registry", REGISTRY, "--tag", VERSION,
        "--no-database", "--json", timeout=1800,
    )  # fmt: skip
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    with local_registry() as port:
        release_registry = f"127.0.0.1:{port}/sse"
        published = ssebench(
            "images", "publish-chart", "--registry", release_registry,
            "--images-from", REGISTRY, "--plain-http", "--json", timeout=900,
        )  # fmt: skip
        assert published.returncode == 0, published.stdout[-3000:] + published.stderr[-3000:]
        answer = json.loads(published.stdout)
        chart = f"oci://{release_registry}/charts/ssebench"
        images = [f"{release_registry}/{name}:{VERSION}" for name in SERVICES]
        assert answer == {"chart": chart, "version": VERSION, "images": images}
        try:
            # The registry holds the chart as a Helm OCI artifact, and each image.
            catalog = registry_get(port, "/v2/_catalog")["repositories"]
            assert sorted(catalog) == sorted(
                ["sse/charts/ssebench", *(f"sse/{name}" for name in SERVICES)]
            )
            tags = registry_get(port, "/v2/sse/charts/ssebench/tags/list")["tags"]
            assert tags == [VERSION]
            manifest = registry_get(
                port, f"/v2/sse/charts/ssebench/manifests/{VERSION}", MANIFEST_TYPES
            )
            assert manifest["config"]["mediaType"] == CONFIG_MEDIA_TYPE
            # Only the names under the test's registry go (the build's stay), so the
            # pods cannot find them on the node: they pull them from the registry.
            for name in images:
                removed = docker("image", "rm", name)
                assert removed.returncode == 0, removed.stderr
            _install_from_the_registry(chart, release_registry)
        finally:
            for name in images:
                docker("image", "rm", name)


def _install_from_the_registry(chart: str, release_registry: str) -> None:
    namespace = f"sse-helm-oci-{uuid.uuid4().hex[:6]}"
    kubectl("create", "namespace", namespace)
    config = helm.Config(kubeconfig_path=CLUSTER_KUBECONFIG, namespace=namespace)
    try:
        values = {
            "runs": {"namespace": namespace},
            "litellm": {"database": False},
            "postgres": {"enabled": False},
        }
        config.install(
            chart, "ssebench", values, namespace=namespace, timeout=120,
            chart_version=VERSION, plain_http=True,
        )  # fmt: skip
        try:
            for workload in ("catalog", "webui", "litellm"):
                _wait_ready(namespace, f"deployment/ssebench-{workload}")
            pods = json.loads(kubectl("get", "pods", "-n", namespace, "-o", "json").stdout)
            running = {
                container["image"]
                for pod in pods["items"]
                for container in pod["spec"]["containers"]
            }
            assert running == {
                f"{release_registry}/{name}:{VERSION}" for name in ("catalog", "webui", "litellm")
            }
        finally:
            config.uninstall("ssebench", timeout=120)
    finally:
        kubectl("delete", "namespace", namespace, "--wait=false", check=False)
