"""An imported Harbor task (hello-user of tests/docker/harbor_dataset.py) runs on the
Kubernetes backend like any task: its images published (the local cluster's nodes see
this machine's image store), the reference's solution run as the task's own user, and
the task's tests grade the pod's final state with a reward of 1."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.kubernetes.cluster import Cluster, reference_run_published
from tests.polling import wait_until

pytestmark = pytest.mark.kubernetes
TASK = "hello-user"


def test_an_imported_harbor_task_is_graded_by_its_reward_on_kubernetes(
    cluster: Cluster, harbor_dataset: Path, tmp_path: Path
) -> None:
    status, run_dir, result = reference_run_published(
        harbor_dataset, TASK, tmp_path / "results", "harbor"
    )
    assert (status, result["status"], result["reward"]) == ("passed", "passed", {"reward": 1.0})
    assert result["config"]["backend"] == "kubernetes"
    # The solution ran as the task's user (its tests check whoami.txt says so).
    entrypoint = (run_dir / "entrypoint.log").read_text()
    assert "starting the agent as agent:" in entrypoint
    # Its [environment] cpus = 1 and memory_mb = 2048 are the pod's limits.
    assert "container limits: 1 CPU, 2048 MiB of memory" in entrypoint
    selector = f"ssebench.run-id={result['run_id']}"
    wait_until(lambda: cluster.objects_of(selector) == [], "the run's objects to go", 60)
