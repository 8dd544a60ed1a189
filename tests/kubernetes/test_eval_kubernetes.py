"""`ssebench eval` over the pilot dataset as Jobs on the real cluster, reference agent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ssebench.agents import load_agent
from ssebench.runner import image_request
from ssebench.tasks import load_dataset
from tests.cli import ssebench
from tests.conftest import PILOT_DATASET
from tests.kubernetes.cluster import Cluster, build_as_published, new_run_id

pytestmark = pytest.mark.kubernetes
PILOT = load_dataset(PILOT_DATASET)


@pytest.fixture(scope="module")
def pilot_reference_images(cluster: Cluster) -> list[str]:
    """Every pilot task's reference image, built locally and tagged with its published
    name: the cluster's node uses the local image store and pulls nothing."""
    agent = load_agent("reference")
    return [build_as_published(image_request(task, agent)) for task in PILOT.tasks]


def test_eval_over_the_pilot_as_jobs(
    cluster: Cluster, pilot_reference_images: list[str], tmp_path: Path
) -> None:
    assert len(pilot_reference_images) == len(PILOT.tasks)
    done = ssebench(
        "eval",
        "--backend",
        "kubernetes",
        "--prebuilt",
        "--dataset",
        str(PILOT_DATASET),
        "--agent",
        "reference",
        "--jobs",
        "4",
        "--results",
        str(tmp_path / "results"),
        "--run-id-prefix",
        new_run_id("eval"),
        timeout=2400,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    last = done.stdout.strip().splitlines()[-1]
    report = json.loads(Path(last.removeprefix("report: ")).read_text())
    assert report["backend"] == "kubernetes" and report["limits"]["jobs"] == 4
    assert report["counts"]["passed"] == len(PILOT.tasks), report["counts"]
    for task in report["runs"]:
        summary = json.loads((Path(task["run_dir"]) / "summary.json").read_text())
        assert summary["config"]["backend"] == "kubernetes"
        assert summary["status"] == "passed", summary
