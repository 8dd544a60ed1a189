"""An imported SWE-bench-format instance runs on the Kubernetes backend like any task:
its images published (tagged as prebuilt_images names them; the local cluster's nodes
see this machine's image store), a reference run is resolved, graded on the host with
per-test outcomes in result.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ssebench.agents import load_agent
from ssebench.runner import image_request
from ssebench.tasks import load_dataset
from tests.cli import last_line_verdict, run_arguments, ssebench
from tests.kubernetes.cluster import Cluster, build_as_published, new_run_id
from tests.polling import wait_until
from tests.swebench_project import import_shapes

pytestmark = pytest.mark.kubernetes
TASK = "acme-shapes-1"


def test_an_imported_task_is_resolved_on_kubernetes(cluster: Cluster, tmp_path: Path) -> None:
    dataset = import_shapes(tmp_path, "acme__shapes-1")
    task = load_dataset(dataset).task(TASK)
    build_as_published(image_request(task, load_agent("reference")))
    arguments = run_arguments(
        dataset, TASK, "reference", new_run_id("swe"), tmp_path / "results",
        "--backend", "kubernetes", "--prebuilt",
    )  # fmt: skip
    done = ssebench(*arguments, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    status, run_dir = last_line_verdict(done.stdout)
    result = json.loads((run_dir / "result.json").read_text())
    assert status == "passed" and result["status"] == "passed", result.get("error_msg")
    assert result["tests"]["FAIL_TO_PASS"] == {
        "success": ["tests/test_geometry.py::test_perimeter_rect"],
        "failure": [],
    }
    assert result["config"]["backend"] == "kubernetes"
    # The Job is deleted when the run ends; its pod, Secret and policy go after it.
    selector = f"ssebench.run-id={result['run_id']}"
    wait_until(lambda: cluster.objects_of(selector) == [], "the run's objects to go", 60)
