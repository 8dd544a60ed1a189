"""Keeping, stopping and losing a run on a real cluster (spec: kubernetes.txt,
"Stopping and cleaning up", "The cluster must enforce NetworkPolicy", "Results"): a kept
run's task container waits after grading and is reached with the contract's kubectl
exec recipe; a second signal ends the runner at once and leaves the Job to the cluster;
stop honours the grace it is given and leaves the run's objects when the container stops
within it; a run whose pod is deleted is recorded without a grade."""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ssebench.errors import ResultsGoneError
from ssebench.extensions import (
    ARCHIVE_TARGET,
    RESULTS_TARGET,
    RUN_ID_LABEL,
    Mount,
    RunSpec,
)
from tests.cli import (
    SLEEPER_LINE,
    Output,
    last_line_verdict,
    run_arguments,
    signal_twice,
    sleeper_started,
    ssebench,
    start_ssebench,
)
from tests.conftest import PILOT_DATASET
from tests.kubernetes.cluster import TASK, Cluster, new_run_id
from tests.polling import wait_until

pytestmark = pytest.mark.kubernetes
K8S = ("--backend", "kubernetes")
# An image whose PID 1 ignores SIGTERM (sleep has no handler, and PID 1 gets no
# default action): a container that stop can end only by its grace running out.
DEAF_IMAGE = "ssebench-test.local/ignores-sigterm:1"


def kinds_of(cluster: Cluster, run_id: str) -> set[str]:
    return {name.split("/")[0] for name in cluster.objects_of(f"{RUN_ID_LABEL}={run_id}")}


def task_pod(cluster: Cluster, run_id: str) -> str:
    done = cluster.admin(
        "get", "pod", "-n", cluster.namespace, "-l", f"{RUN_ID_LABEL}={run_id}", "-o", "name"
    )
    return done.stdout.strip()


def started_sleeper(results: Path, run_id: str) -> subprocess.Popen[str]:
    """`ssebench run` of the sleeper agent on the cluster, once the agent runs."""
    process = start_ssebench(
        *run_arguments(PILOT_DATASET, TASK, "sleeper", run_id, results, *K8S, "--prebuilt")
    )
    try:
        wait_until(lambda: sleeper_started(run_id, *K8S), "the sleeper agent to start")
    except BaseException:
        process.kill()
        process.wait()
        raise
    return process


@contextlib.contextmanager
def removed_at_end(cluster: Cluster, run_id: str, process: subprocess.Popen[str]) -> Iterator[None]:
    """On leaving: kill the runner process and `runs remove` the run; then, when the
    body passed, wait for the run's objects to go."""
    try:
        yield
    finally:
        process.kill()
        process.wait()
        ssebench("runs", "remove", run_id, *K8S)
    wait_until(lambda: kinds_of(cluster, run_id) == set(), "the run's objects to go", 90)


def run_dir_of(results: Path, agent: str, run_id: str) -> Path:
    return results / TASK / "none" / agent / run_id


def test_a_kept_run_waits_after_grading_for_the_network_check(
    cluster: Cluster, tmp_path: Path
) -> None:
    """The contract's recipe: a kept reference run, kubectl exec into its task container
    once the log says it waits to be stopped, then kill -TERM 1 ends the run."""
    run_id = new_run_id("netcheck")
    output = tmp_path / "output.txt"
    with output.open("w") as file:
        process = start_ssebench(
            *run_arguments(
                PILOT_DATASET, TASK, "reference", run_id, tmp_path / "results",
                *K8S, "--prebuilt", "--keep-container",
            ),
            output=file,
        )  # fmt: skip
    with removed_at_end(cluster, run_id, process):
        wait_until(
            lambda: "waiting to be stopped" in output.read_text(),
            "the kept run to say it waits to be stopped",
            300,
        )
        assert process.poll() is None  # ssebench run waits with it
        pod = task_pod(cluster, run_id)
        assert pod.startswith("pod/")
        # What the recipe runs (curl where the image has it; the pilot image has python3):
        # a command in the running task container, after grading, as the Role allows.
        probe = (
            "import urllib.request;"
            "print(urllib.request.urlopen('http://127.0.0.1:4263/version', timeout=5).read())"
        )
        reached = subprocess.run(
            ["kubectl", "exec", "-n", cluster.namespace, pod, "-c", "task", "--",
             "python3", "-c", probe],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert reached.returncode == 0, reached.stderr
        assert "ssebench-daemon" in reached.stdout
        stopped = subprocess.run(
            ["kubectl", "exec", "-n", cluster.namespace, pod, "-c", "task", "--",
             "sh", "-c", "kill -TERM 1"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert stopped.returncode == 0, stopped.stderr
        assert process.wait(timeout=180) == 0, output.read_text()[-3000:]
        status, run_dir = last_line_verdict(output.read_text())
        assert status == "passed"
        summary = json.loads((run_dir / "summary.json").read_text())
        assert summary["exit_code"] == 0 and summary["config"]["keep"] is True
        # Kept: the Job, its pod, the Secret and the policy stay.
        assert kinds_of(cluster, run_id) == {
            "job.batch",
            "pod",
            "secret",
            "networkpolicy.networking.k8s.io",
        }


def test_a_second_signal_ends_the_runner_at_once_and_leaves_the_job(
    cluster: Cluster, tmp_path: Path
) -> None:
    """The second signal comes while the first stops the run (after its start: a second
    signal during start is tests/unit/kubernetes/test_backend.py's)."""
    run_id = new_run_id("twice")
    process = start_ssebench(
        *run_arguments(PILOT_DATASET, TASK, "sleeper", run_id, tmp_path, *K8S, "--prebuilt")
    )
    said = Output(process)
    with removed_at_end(cluster, run_id, process):
        assert said.wait_for(SLEEPER_LINE, 300), said.text()[-3000:]
        output, ended_after = signal_twice(process, said)
        assert process.returncode == 128 + signal.SIGTERM, output[-3000:]
        assert ended_after < 10, ended_after  # no 30 s wait for the cluster's cleanup
        assert "exiting now; the run is left to the backend" in output
        assert f"`ssebench runs remove {run_id} --backend kubernetes` removes it" in output
        # The verdict line (the pod's output, still followed, may come after it).
        assert any(line.startswith("error\t") for line in output.splitlines())
        summary = json.loads((run_dir_of(tmp_path, "sleeper", run_id) / "summary.json").read_text())
        assert summary["stopped"] is True and summary["status"] == "error"
        assert "second SIGTERM" in summary["error_msg"]
        # Left to the cluster: the Job (with its deadline and time to live) is still there.
        assert "job.batch" in kinds_of(cluster, run_id)
        job = json.loads(
            cluster.admin(
                "get",
                "job",
                "-n",
                cluster.namespace,
                "-l",
                f"{RUN_ID_LABEL}={run_id}",
                "-o",
                "json",
            ).stdout
        )["items"][0]
        assert (
            job["spec"]["activeDeadlineSeconds"] > 0 and job["spec"]["ttlSecondsAfterFinished"] > 0
        )


@pytest.fixture(scope="module")
def deaf_image() -> str:
    build = subprocess.run(
        ["docker", "build", "--quiet", "--tag", DEAF_IMAGE, "-"],
        input='FROM debian:bookworm-slim\nENTRYPOINT ["sleep", "infinity"]\n',
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert build.returncode == 0, build.stderr
    return DEAF_IMAGE


def deaf_spec(tmp_path: Path, image: str) -> RunSpec:
    run_id = new_run_id("deaf")
    run_dir = tmp_path / run_id
    (run_dir / "archive").mkdir(parents=True)
    return RunSpec(
        run_id=run_id,
        task_name=TASK,
        mode="sandbox",
        image=image,
        env={"SSE_RUN_ID": run_id},
        results=Mount(target=RESULTS_TARGET, source=str(run_dir)),
        archive=Mount(target=ARCHIVE_TARGET, source=str(run_dir / "archive")),
        labels={RUN_ID_LABEL: run_id},
        timeout=600,
    )


def test_stop_honours_a_grace_past_20_seconds_then_kills_with_the_job(
    cluster: Cluster, tmp_path: Path, deaf_image: str
) -> None:
    from ssebench.backends.kubernetes import KubernetesBackend

    backend = KubernetesBackend()
    spec = deaf_spec(tmp_path, deaf_image)
    handle = backend.start(spec)
    try:
        started = time.monotonic()
        backend.stop(handle, 24)
        took = time.monotonic() - started
        assert 23.5 <= took < 60, took  # the grace it was given, not 20 s
        # Killed: deleted with its Job (a pod deleted alone would be replaced).
        wait_until(lambda: "job.batch" not in kinds_of(cluster, spec.run_id), "the Job to go", 30)
        assert backend.wait(handle, 120) == 137
        with pytest.raises(ResultsGoneError):
            backend.collect_results(handle, tmp_path / spec.run_id)
    finally:
        backend.cleanup(handle)
    wait_until(lambda: kinds_of(cluster, spec.run_id) == set(), "the run's objects to go", 90)


def test_runs_stop_leaves_the_job_and_pod_in_place(cluster: Cluster, tmp_path: Path) -> None:
    """A run whose runner was killed: `runs stop` stops its task container (143) and
    leaves its objects, until `runs remove`."""
    run_id = new_run_id("stopin")
    process = started_sleeper(tmp_path, run_id)
    with removed_at_end(cluster, run_id, process):
        process.kill()
        process.wait()
        assert ssebench("runs", "stop", run_id, "--grace", "60", *K8S).returncode == 0
        inspected = json.loads(ssebench("runs", "inspect", run_id, "--json", *K8S).stdout)
        assert inspected["state"] == "exited" and inspected["exit_code"] == 143
        assert {"job.batch", "pod", "secret"} <= kinds_of(cluster, run_id)


def test_a_run_whose_pod_is_deleted_is_recorded_without_a_grade(
    cluster: Cluster, tmp_path: Path
) -> None:
    run_id = new_run_id("podgone")
    printed = tmp_path / "runner-output.txt"
    with printed.open("w") as runner_output:
        process = start_ssebench(
            *run_arguments(PILOT_DATASET, TASK, "sleeper", run_id, tmp_path, *K8S, "--prebuilt"),
            output=runner_output,
        )
    try:
        # The runner prints the task container's output once start() has the run's pod:
        # deleted sooner, the pod may be gone before start() looks, and a replacement
        # that a cluster before 1.26 makes would run the task again.
        wait_until(
            lambda: "sleeper: sleeping" in printed.read_text(), "the runner to follow the agent"
        )
        cluster.admin(
            "delete", "pod", "-n", cluster.namespace, "-l", f"{RUN_ID_LABEL}={run_id}",
            "--wait=false",
        )  # fmt: skip
        process.wait(timeout=180)
    finally:
        process.kill()
        process.wait()
    output = printed.read_text()
    assert process.returncode == 0, output[-3000:]  # as any run without a grade
    status, run_dir = last_line_verdict(output)
    assert status == "error"
    summary = json.loads((run_dir / "summary.json").read_text())
    # The kubelet's SIGTERM of the deleted pod (143), or its deletion seen first (137).
    assert summary["exit_code"] in (137, 143)
    assert summary["error_msg"].startswith("No result") and "pod" in summary["error_msg"]
    assert json.loads((run_dir / "result.json").read_text())["status"] == "error"
    wait_until(lambda: kinds_of(cluster, run_id) == set(), "the run's objects to go", 90)
