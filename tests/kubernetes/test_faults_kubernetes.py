"""A runner SIGKILLed in the narrow windows of a Kubernetes start: after the Job is
made and before the Secret, and right after the Secret. What is left is a Job that
`runs list` and prune see, and objects it owns: never a Secret that nothing owns (the
Role cannot list Secrets, so prune could never find one). Prune removes all of it.

The windows are reached with tests/kubernetes/slow_start.py, which runs ssebench with
one API call followed by a pause: no hook in ssebench itself.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ssebench.results.unrecorded import KILLED_REASON
from tests.cli import run_arguments, ssebench
from tests.conftest import PILOT_DATASET
from tests.kubernetes.cluster import TASK, Cluster, new_run_id
from tests.polling import wait_until

pytestmark = pytest.mark.kubernetes
K8S = ("--backend", "kubernetes")
SLOW_START = Path(__file__).with_name("slow_start.py")


def objects(cluster: Cluster, run_id: str) -> list[dict[str, object]]:
    done = cluster.admin(
        "get", "jobs,secrets,networkpolicies", "-n", cluster.namespace,
        "-l", f"ssebench.run-id={run_id}", "-o", "json",
    )  # fmt: skip
    items: list[dict[str, object]] = json.loads(done.stdout)["items"]
    return items


@pytest.mark.parametrize(
    ("after", "kinds"),
    [
        ("Cannot create the Job", {"Job"}),
        ("Cannot create the Secret", {"Job", "NetworkPolicy", "Secret"}),
    ],
)
def test_a_runner_killed_during_start_leaves_no_secret_without_its_job(
    cluster: Cluster, tmp_path: Path, after: str, kinds: set[str]
) -> None:
    run_id = new_run_id("startkill")
    markers = tmp_path / "markers"
    markers.mkdir()
    arguments = run_arguments(
        PILOT_DATASET, TASK, "sleeper", run_id, tmp_path / "results", *K8S, "--prebuilt"
    )
    process = subprocess.Popen(
        [sys.executable, str(SLOW_START), str(markers), after, "60", *arguments],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until(lambda: any(markers.iterdir()), what=f"the call after {after!r}", seconds=120)
    finally:
        process.kill()
        process.wait()
    made = objects(cluster, run_id)
    assert {item["kind"] for item in made} == kinds
    job = next(item for item in made if item["kind"] == "Job")
    job_uid = job["metadata"]["uid"]  # type: ignore[index]
    for item in made:
        if item["kind"] != "Job":
            owners = item["metadata"].get("ownerReferences")  # type: ignore[union-attr]
            assert owners and owners[0]["uid"] == job_uid, item["kind"]
    listed = json.loads(ssebench("runs", "list", "--json", *K8S).stdout)["runs"]
    assert run_id in [run["run_id"] for run in listed]
    results = tmp_path / "results"
    pruned = json.loads(ssebench("runs", "prune", "--json", "--results", str(results), *K8S).stdout)
    assert run_id in [run["run_id"] for run in pruned["removed"]]
    # Killed before it could record the run: the prune records it, with the reason.
    run_dir = results / TASK / "none" / "sleeper" / run_id
    assert pruned["recorded"] == [str(run_dir)]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert (summary["status"], summary["error_msg"]) == ("error", KILLED_REASON)
    wait_until(lambda: objects(cluster, run_id) == [], what="the run's objects to go", seconds=90)
