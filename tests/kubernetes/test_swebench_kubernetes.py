"""An imported SWE-bench-format instance runs on the Kubernetes backend like any task:
its images published (tagged as prebuilt_images names them; the local cluster's nodes
see this machine's image store), a reference run is resolved, graded on the host with
per-test outcomes in result.json."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.kubernetes.cluster import Cluster, reference_run_published
from tests.polling import wait_until
from tests.swebench_project import import_shapes

pytestmark = pytest.mark.kubernetes
TASK = "acme-shapes-1"


def test_an_imported_task_is_resolved_on_kubernetes(cluster: Cluster, tmp_path: Path) -> None:
    dataset = import_shapes(tmp_path, "acme__shapes-1")
    status, _, result = reference_run_published(dataset, TASK, tmp_path / "results", "swe")
    assert status == "passed" and result["status"] == "passed", result.get("error_msg")
    assert result["tests"]["FAIL_TO_PASS"] == {
        "success": ["tests/test_geometry.py::test_perimeter_rect"],
        "failure": [],
    }
    assert result["config"]["backend"] == "kubernetes"
    # The Job is deleted when the run ends; its pod, Secret and policy go after it.
    selector = f"ssebench.run-id={result['run_id']}"
    wait_until(lambda: cluster.objects_of(selector) == [], "the run's objects to go", 60)
