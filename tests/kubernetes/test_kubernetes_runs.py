"""The Kubernetes backend under real conditions, through the CLI, as the RBAC role's
ServiceAccount: a reference run that passes with the same files as on Docker, a dummy
run that fails, SIGTERM to the runner, and a kept run reached from this machine."""

from __future__ import annotations

import json
import signal
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from ssebench.agents import load_agent
from ssebench.runner import image_request
from ssebench.tasks import load_dataset
from tests.cli import (
    grading_tests,
    last_line_verdict,
    prune_records_the_killed_run,
    run_arguments,
    sleeper_started,
    ssebench,
    start_ssebench,
)
from tests.conftest import PILOT_DATASET, SLOW_GRADING
from tests.kubernetes.cluster import TASK, Cluster, build_as_published, new_run_id
from tests.polling import wait_until

pytestmark = pytest.mark.kubernetes
K8S = ("--backend", "kubernetes")


def finished_run(results: Path, agent: str, *extra: str) -> tuple[Path, dict[str, object], str]:
    """The run directory, summary and what ssebench said (stderr) of a run."""
    arguments = run_arguments(PILOT_DATASET, TASK, agent, new_run_id(agent), results, *extra)
    done = ssebench(*arguments, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    status, run_dir = last_line_verdict(done.stdout)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == status
    return run_dir, summary, done.stderr


def relative_files(folder: Path) -> set[str]:
    return {str(path.relative_to(folder)) for path in folder.rglob("*")}


def nothing_left(cluster: Cluster, run_id: str) -> bool:
    return cluster.objects_of(f"ssebench.run-id={run_id}") == []


def test_the_suite_runs_as_the_service_account(cluster: Cluster) -> None:
    """Not the cluster's admin: the role cannot read Secrets or reach other namespaces."""
    for verb, resource, namespace in (
        ("get", "secrets", cluster.namespace),
        ("list", "pods", "kube-system"),
        ("create", "jobs", "default"),
    ):
        done = subprocess.run(
            ["kubectl", "auth", "can-i", verb, resource, "-n", namespace],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.stdout.strip() == "no", (verb, resource, namespace, done.stdout)
    allowed = subprocess.run(
        ["kubectl", "auth", "can-i", "create", "pods/exec", "-n", cluster.namespace],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert allowed.stdout.strip() == "yes"


def test_reference_run_passes_with_the_same_files_as_on_docker(
    cluster: Cluster, tmp_path: Path
) -> None:
    run_dir, summary, said = finished_run(tmp_path / "k8s", "reference", *K8S, "--prebuilt")
    assert summary["status"] == "passed", summary
    # The local cluster does not enforce NetworkPolicy: the run says so before it
    # starts, and records it (the probe itself: test_policy_check_kubernetes.py).
    assert summary["config"]["egress_enforced"] is False  # type: ignore[index]
    warning = "does not enforce network policies, so this run's egress (restricted)"
    assert warning in said and said.index(warning) < said.index(f"run {summary['run_id']}: passed")
    assert summary["exit_code"] == 0
    assert (run_dir / "final.patch").read_text() == (run_dir / "reference.patch").read_text()
    dialog = (run_dir / "archive" / "dialog.jsonl").read_text().splitlines()
    assert dialog and all({"seq", "ts", "type"} <= set(json.loads(line)) for line in dialog)
    # The Job is gone when the run ends; its pod, Secret and policy go after it.
    run_id = str(summary["run_id"])
    assert (
        cluster.admin(
            "get", "job", "-n", cluster.namespace, "-l", f"ssebench.run-id={run_id}", "-o", "name"
        ).stdout.strip()
        == ""
    )
    wait_until(lambda: nothing_left(cluster, run_id), "the run's objects to go", 60)
    docker_dir, docker_summary, said = finished_run(tmp_path / "docker", "reference")
    assert docker_summary["status"] == "passed"
    assert docker_summary["config"]["egress_enforced"] is True  # type: ignore[index]
    assert "network policies" not in said
    assert relative_files(run_dir) == relative_files(docker_dir)


def test_dummy_run_fails(cluster: Cluster, tmp_path: Path) -> None:
    _, summary, _ = finished_run(tmp_path, "dummy", *K8S, "--prebuilt")
    assert summary["status"] == "failed"
    assert summary["error_msg"] == "Hidden test failed"


def test_sigterm_to_the_runner_records_143_and_removes_the_job(
    cluster: Cluster, tmp_path: Path
) -> None:
    run_id = new_run_id("term")
    process = start_ssebench(
        *run_arguments(PILOT_DATASET, TASK, "sleeper", run_id, tmp_path, *K8S, "--prebuilt")
    )
    try:
        wait_until(lambda: sleeper_started(run_id, *K8S), "the sleeper agent to start")
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=180)
    finally:
        process.kill()
    assert process.returncode == 0, output[-3000:]
    summary = json.loads(
        (tmp_path / TASK / "none" / "sleeper" / run_id / "summary.json").read_text()
    )
    assert summary["exit_code"] == 143 and summary["stopped"] is True
    assert (tmp_path / TASK / "none" / "sleeper" / run_id / "result.json").is_file()
    wait_until(lambda: nothing_left(cluster, run_id), "the run's objects to go", 60)


def test_a_runner_killed_during_the_agent_leaves_a_recorded_run_after_prune(
    cluster: Cluster, tmp_path: Path
) -> None:
    """SIGKILL, which no runner can answer: the next prune removes the Job and records
    the run (results/unrecorded.py), which `runs results` then shows with the reason."""
    run_id = new_run_id("killed")
    process = start_ssebench(
        *run_arguments(PILOT_DATASET, TASK, "sleeper", run_id, tmp_path, *K8S, "--prebuilt")
    )
    try:
        wait_until(lambda: sleeper_started(run_id, *K8S), "the sleeper agent to start")
    finally:
        process.kill()
        process.communicate(timeout=60)
    run_dir = tmp_path / TASK / "none" / "sleeper" / run_id
    prune_records_the_killed_run(run_dir, tmp_path, *K8S)
    wait_until(lambda: nothing_left(cluster, run_id), "the run's objects to go", 60)


def test_a_runner_killed_during_grading_leaves_a_recorded_run_after_prune(
    cluster: Cluster, tmp_path: Path
) -> None:
    """The same SIGKILL inside the Job's grading: the slow-grading agent's patch makes
    the test steps sleep, and the runner dies there."""
    agents_dir = ("--agents-dir", str(SLOW_GRADING))
    task = load_dataset(PILOT_DATASET).task(TASK)
    build_as_published(image_request(task, load_agent("slow-grading", [SLOW_GRADING])))
    run_id = new_run_id("gradekill")
    process = start_ssebench(
        *run_arguments(
            PILOT_DATASET, TASK, "slow-grading", run_id, tmp_path, *K8S, *agents_dir, "--prebuilt"
        )
    )
    try:
        wait_until(lambda: grading_tests(run_id, *K8S), "grading's tests", 300)
    finally:
        process.kill()
        process.communicate(timeout=60)
    run_dir = tmp_path / TASK / "none" / "slow-grading" / run_id
    prune_records_the_killed_run(run_dir, tmp_path, *K8S)
    wait_until(lambda: nothing_left(cluster, run_id), "the run's objects to go", 60)


@pytest.fixture
def kept_run(cluster: Cluster, tmp_path: Path) -> Iterator[str]:
    run_id = new_run_id("kept")
    arguments = run_arguments(
        PILOT_DATASET, TASK, "sleeper", run_id, tmp_path, *K8S, "--prebuilt", "--keep-container"
    )
    process = start_ssebench(*arguments, output=subprocess.DEVNULL)
    try:
        wait_until(lambda: sleeper_started(run_id, *K8S), "the sleeper agent to start")
        yield run_id
    finally:
        ssebench("runs", "remove", run_id, *K8S)
        process.kill()
        process.wait()


def test_a_kept_run_is_listed_inspected_reached_and_removed(
    cluster: Cluster, kept_run: str
) -> None:
    run_id = kept_run
    listed = json.loads(ssebench("runs", "list", "--json", *K8S).stdout)
    assert listed["backend"] == "kubernetes" and listed["supports_exec"] is True
    run = next(run for run in listed["runs"] if run["run_id"] == run_id)
    assert run["state"] == "running" and run["created_at"].endswith("Z")
    assert run["labels"]["ssebench.results"].endswith(run_id)  # an annotation, listed as a label
    inspected = ssebench("runs", "inspect", run_id, "--json", *K8S)
    assert inspected.returncode == 0 and json.loads(inspected.stdout)["run_id"] == run_id
    assert "sleeper" in ssebench("runs", "logs", run_id, *K8S).stdout.lower()

    url = ssebench("runs", "endpoint", run_id, "4263", *K8S).stdout.strip()
    assert url.startswith("http://127.0.0.1:"), url
    with urllib.request.urlopen(f"{url}/version", timeout=10) as response:
        assert json.load(response)["name"] == "ssebench-daemon"
    again = ssebench("runs", "endpoint", run_id, "4263", *K8S).stdout.strip()
    assert again == url  # the same forward, reused

    whoami = ssebench("runs", "exec", run_id, *K8S, "--user", "model", "--", "id", "-un")
    assert whoami.returncode == 0, whoami.stderr
    assert whoami.stdout.strip() == "model"
    where = ssebench("runs", "exec", run_id, *K8S, "--workdir", "/tmp", "--", "pwd")
    assert where.stdout.strip() == "/tmp"
    refused = ssebench("runs", "exec", run_id, *K8S, "--env", "HOME", "--", "true")
    assert refused.returncode != 0 and "--env" in refused.stderr

    assert ssebench("runs", "remove", run_id, *K8S).returncode == 0
    wait_until(lambda: nothing_left(cluster, run_id), "the kept run's objects to go", 60)
    assert ssebench("runs", "inspect", run_id, *K8S).returncode == 3
    with pytest.raises(OSError):
        urllib.request.urlopen(f"{url}/version", timeout=5)  # the forward ended with it
