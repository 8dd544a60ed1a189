"""The chart's Role for the read-only web UI (webui.hosted=true) on a real cluster.

The chart is rendered for the session's namespace and its ServiceAccount, Role and
RoleBinding are applied there as they are. As that account, the cluster allows reading
runs and port-forwarding to their pods, and refuses everything else (asked of the API
server itself with SelfSubjectAccessReviews, then tried). A hosted web UI that runs
with only that account's token lists a running run, follows its output and shows its
live phase and dialog, which it reads from the run's daemon through a port-forward: the
Role is all the viewer needs.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli import run_arguments, sleeper_started, ssebench, start_ssebench
from tests.conftest import PILOT_DATASET
from tests.helm.conftest import CHART, Rendered, helm
from tests.kubernetes.cluster import TASK, Cluster, new_run_id, service_account_kubeconfig
from tests.polling import wait_until
from tests.webui.conftest import TOKEN, start_server, stop_server

pytestmark = pytest.mark.kubernetes
K8S = ("--backend", "kubernetes")
# The release's name, and so the name of its ServiceAccount, Role and RoleBinding.
VIEWER = "ssebench-viewer"
RBAC_KINDS = ("ServiceAccount", "Role", "RoleBinding")

# (verb, resource, subresource) that the viewer may, and a selection of what it may not.
ALLOWED = [
    ("list", "jobs", ""),
    ("get", "pods", ""),
    ("list", "pods", ""),
    ("get", "pods", "log"),
    ("create", "pods", "portforward"),
    ("get", "pods", "portforward"),
]
DENIED = [
    ("create", "jobs", ""),
    ("delete", "jobs", ""),
    ("patch", "jobs", ""),
    ("watch", "jobs", ""),
    ("create", "pods", ""),
    ("delete", "pods", ""),
    ("watch", "pods", ""),
    ("create", "pods", "exec"),
    ("get", "pods", "exec"),
    ("create", "pods", "attach"),
    ("get", "secrets", ""),
    ("list", "secrets", ""),
    ("create", "secrets", ""),
    ("delete", "secrets", ""),
    ("create", "networkpolicies", ""),
    ("delete", "networkpolicies", ""),
]
GROUPS = {"jobs": "batch", "networkpolicies": "networking.k8s.io"}


@pytest.fixture(scope="module")
def viewer_kubeconfig(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A kubeconfig that is the chart's web UI account with its hosted-mode Role."""
    values = {"runs": {"namespace": cluster.namespace}}  # webui.hosted is true by default
    chart = helm.Chart.load(CHART)
    manifests = chart.render(values, name=VIEWER, namespace=cluster.namespace, is_install=True)
    objects = [item for item in Rendered(manifests).objects if item["kind"] in RBAC_KINDS]
    assert sorted(item["kind"] for item in objects) == sorted(RBAC_KINDS)
    for item in objects:
        item["metadata"]["namespace"] = cluster.namespace
    listed = json.dumps({"apiVersion": "v1", "kind": "List", "items": objects})
    applied = subprocess.run(
        ["kubectl", "--kubeconfig", cluster.admin_kubeconfig, "apply", "-f", "-"],
        input=listed,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert applied.returncode == 0, applied.stderr
    try:
        folder = tmp_path_factory.mktemp("viewer")
        yield str(
            service_account_kubeconfig(cluster.admin_kubeconfig, cluster.namespace, folder, VIEWER)
        )
    finally:
        subprocess.run(
            ["kubectl", "--kubeconfig", cluster.admin_kubeconfig, "delete", "-f", "-"],
            input=listed,
            capture_output=True,
            text=True,
            timeout=60,
        )


def _may(kubeconfig: str, namespace: str, verb: str, resource: str, subresource: str) -> bool:
    """The API server's answer to "may I?" for the identity of kubeconfig."""
    from kubernetes import client, config

    api = client.AuthorizationV1Api(config.new_client_from_config(config_file=kubeconfig))
    review = client.V1SelfSubjectAccessReview(
        spec=client.V1SelfSubjectAccessReviewSpec(
            resource_attributes=client.V1ResourceAttributes(
                namespace=namespace,
                verb=verb,
                group=GROUPS.get(resource, ""),
                resource=resource,
                subresource=subresource,
            )
        )
    )
    return bool(api.create_self_subject_access_review(review).status.allowed)


def test_the_viewer_may_read_runs_and_port_forward_and_nothing_else(
    cluster: Cluster, viewer_kubeconfig: str
) -> None:
    answers = {
        check: _may(viewer_kubeconfig, cluster.namespace, *check) for check in ALLOWED + DENIED
    }
    assert [check for check in ALLOWED if not answers[check]] == []
    assert [check for check in DENIED if answers[check]] == []
    # Nothing outside the runs' namespace.
    assert not _may(viewer_kubeconfig, "default", "list", "pods", "")
    assert not _may(viewer_kubeconfig, "kube-system", "list", "jobs", "")


@pytest.fixture
def kept_run(cluster: Cluster, tmp_path: Path) -> Iterator[str]:
    """A sleeper run held in its agent phase, started as the session's full Role."""
    run_id = new_run_id("viewed")
    arguments = run_arguments(
        PILOT_DATASET, TASK, "sleeper", run_id, tmp_path / "runner", *K8S, "--prebuilt"
    )
    process = start_ssebench(*arguments, "--keep-container", output=subprocess.DEVNULL)
    try:
        wait_until(lambda: sleeper_started(run_id, *K8S), "the sleeper agent to start")
        yield run_id
    finally:
        # Also ends this user's port-forwards to the run's pod, the viewer's included.
        ssebench("runs", "remove", run_id, *K8S)
        process.kill()
        process.wait()


def _answer(server: Any, path: str) -> Any:
    status, body = server.get(path, {"Authorization": f"Bearer {TOKEN}"})
    assert status == 200, (path, status, body)
    return body


def test_the_hosted_web_ui_works_with_the_viewer_role_alone(
    cluster: Cluster, viewer_kubeconfig: str, kept_run: str, tmp_path: Path
) -> None:
    run_id = kept_run
    as_viewer = {"KUBECONFIG": viewer_kubeconfig}
    (tmp_path / "viewer-results").mkdir()
    server = start_server(
        tmp_path / "viewer-results",
        tmp_path / "webui.log",
        SSEBENCH_WEBUI_HOSTED="1",
        SSEBENCH_BACKEND="kubernetes",
        **as_viewer,
    )
    try:
        health = _answer(server, "/api/health")
        assert (health["hosted"], health["backend"]) == (True, "kubernetes")
        listed = _answer(server, "/api/runs?state=live")
        assert listed["backend_error"] is None, listed
        assert [run["run_id"] for run in listed["runs"] if run["run_id"] == run_id] == [run_id]

        # The phase comes only from the daemon, reached through a port-forward.
        details: list[dict[str, Any]] = []

        def daemon_answered() -> bool:
            details.append(_answer(server, f"/api/runs/{run_id}"))
            return bool(details[-1]["phase"])

        wait_until(daemon_answered, "the viewer to reach the run's daemon", 60, interval=1)
        assert details[-1]["can_stop"] is False and details[-1]["terminal"] is False
        assert _answer(server, f"/api/runs/{run_id}/dialog?since=0")["live"] is True

        def output_followed() -> bool:
            lines = _answer(server, f"/api/runs/{run_id}/logs?since=0")["lines"]
            return any("sleeper" in line.lower() for line in lines)

        wait_until(output_followed, "the viewer to follow the run's output", 60, interval=1)
    finally:
        stop_server(server)
    log = (tmp_path / "webui.log").read_text(errors="replace")
    assert "forbidden" not in log.lower(), log[-3000:]

    # The backend's own finding of a run works as the viewer; acting on it does not.
    inspected = ssebench("runs", "inspect", run_id, "--json", *K8S, env=as_viewer)
    assert inspected.returncode == 0, inspected.stderr
    assert json.loads(inspected.stdout)["state"] == "running"
    executed = ssebench("runs", "exec", run_id, *K8S, "--", "true", env=as_viewer)
    assert executed.returncode != 0 and "forbidden" in executed.stderr.lower(), executed.stderr
    job = ["create", "job", f"{run_id}-x", "--image", cluster.images["sleeper"]]
    created = subprocess.run(
        ["kubectl", "--kubeconfig", viewer_kubeconfig, "-n", cluster.namespace, *job],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert created.returncode != 0 and "forbidden" in created.stderr.lower(), created.stderr
