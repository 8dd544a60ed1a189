"""The Docker backend under real conditions: kept runs reached from the host, stop and
kill of the runner, capabilities inside a run, and a stress loop (networks and egress:
test_run_networks.py)."""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from ssebench.backends.docker.containers import default_cpus
from ssebench.extensions import PARALLEL_RUNS_VARIABLE
from tests.cli import (
    SLEEPER_LINE,
    Output,
    run_arguments,
    signal_twice,
    sleeper_started,
    ssebench,
    ssebench_with_reader_gone,
    start_ssebench,
)
from tests.conftest import PILOT_DATASET
from tests.docker.conftest import (
    archive_objects,
    docker_lines,
    leftovers,
    new_run_id,
)
from tests.polling import wait_until

pytestmark = pytest.mark.docker
TASK = "py-semver-prerelease"
# CHOWN, DAC_OVERRIDE, FOWNER, KILL, SETGID, SETUID: bits 0, 1, 3, 5, 6, 7.
ENTRYPOINT_CAPABILITIES = 0b1110_1011


def start_run(
    results: Path,
    run_id: str,
    *extra: str,
    agent: str = "sleeper",
    env: dict[str, str] | None = None,
) -> subprocess.Popen[str]:
    arguments = run_arguments(PILOT_DATASET, TASK, agent, run_id, results, *extra)
    return start_ssebench(*arguments, env=env)


def listed(run_id: str) -> dict[str, object] | None:
    runs = json.loads(ssebench("runs", "list", "--json").stdout)["runs"]
    return next((run for run in runs if run["run_id"] == run_id), None)


def summary_of(results: Path, run_id: str, agent: str = "sleeper") -> dict[str, object]:
    path = results / TASK / "none" / agent / run_id / "summary.json"
    data: dict[str, object] = json.loads(path.read_text())
    return data


@pytest.fixture
def kept_run(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    run_id = new_run_id("kept")
    process = start_run(tmp_path, run_id, "--keep-container")
    try:
        wait_until(lambda: sleeper_started(run_id), what="the sleeper agent to start")
        yield run_id, process
    finally:
        ssebench("runs", "remove", run_id)
        process.kill()
        process.wait()


def test_a_kept_run_is_reachable_from_the_host(kept_run: tuple[str, object]) -> None:
    run_id, _ = kept_run
    run = listed(run_id)
    assert run is not None and run["state"] == "running"
    url = ssebench("runs", "endpoint", run_id, "4263").stdout.strip()
    assert url.startswith("http://") and url.endswith(":4263")
    with urllib.request.urlopen(f"{url}/version", timeout=10) as response:
        assert json.load(response)["name"] == "ssebench-daemon"
    whoami = ssebench("runs", "exec", run_id, "--user", "model", "--", "id", "-un")
    assert whoami.returncode == 0 and whoami.stdout.strip() == "model"


def test_exec_env_passes_values_by_name_only(kept_run: tuple[str, object]) -> None:
    run_id, _ = kept_run
    secret = f"sse-exec-secret-{os.getpid()}-{time.monotonic_ns()}"
    seen_in_cmdline: list[str] = []
    stop = threading.Event()

    def scan() -> None:
        while not stop.is_set():
            for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
                try:
                    if secret.encode() in cmdline.read_bytes():
                        seen_in_cmdline.append(str(cmdline))
                except OSError:
                    pass
            time.sleep(0.05)

    scanner = threading.Thread(target=scan)
    scanner.start()
    try:
        done = ssebench(
            "runs",
            "exec",
            run_id,
            "--env",
            "SECRET_NAME",
            "--",
            "sh",
            "-c",
            'test -n "$SECRET_NAME" && sleep 2',
            env={"SECRET_NAME": secret},
        )
    finally:
        stop.set()
        scanner.join()
    assert done.returncode == 0, done.stderr
    assert seen_in_cmdline == []


def test_capabilities_inside_a_run(kept_run: tuple[str, object]) -> None:
    """PID 1 keeps the six capabilities it needs; the agent's processes have none."""
    run_id, _ = kept_run
    probe = (
        "import pathlib\n"
        "for status in pathlib.Path('/proc').glob('[0-9]*/status'):\n"
        "    fields = dict(line.split(':', 1) for line in status.read_text().splitlines())\n"
        "    print(status.parent.name, fields['Uid'].split()[0], int(fields['CapEff'], 16),"
        " fields['NoNewPrivs'].strip())\n"
    )
    done = ssebench("runs", "exec", run_id, "--", "python3", "-c", probe)
    assert done.returncode == 0, done.stderr
    processes = [line.split() for line in done.stdout.splitlines()]
    by_pid = {pid: (uid, int(caps), nnp) for pid, uid, caps, nnp in processes}
    assert by_pid["1"][1] == ENTRYPOINT_CAPABILITIES
    agent = [entry for entry in by_pid.values() if entry[0] == "1000"]
    assert agent, "no process of the agent's user"
    assert all(caps == 0 and nnp == "1" for _, caps, nnp in agent)


@pytest.mark.parametrize(
    ("agent", "status", "exit_status"), [("reference", "passed", 0), ("dummy", "failed", 1)]
)
def test_a_run_whose_reader_is_gone_is_graded_and_exits_with_its_verdict(
    tmp_path: Path, agent: str, status: str, exit_status: int
) -> None:
    """`ssebench run --require-pass ... | head` once head has quit: docker run exits 1 at
    its first write of the container's output ("write /dev/stdout: broken pipe") while
    the container runs on. That 1 used to be taken for the container's status, and the
    run was read out before it had graded: an error, and exit status 0."""
    run_id = new_run_id("gone")
    arguments = run_arguments(PILOT_DATASET, TASK, agent, run_id, tmp_path, "--require-pass")
    assert ssebench_with_reader_gone(*arguments) == exit_status
    summary = summary_of(tmp_path, run_id, agent)
    assert (summary["status"], summary["exit_code"]) == (status, 0)
    assert listed(run_id) is None
    assert archive_objects(run_id) == []


def test_runs_stop_then_remove_leave_nothing(tmp_path: Path) -> None:
    run_id = new_run_id("stop")
    process = start_run(tmp_path, run_id, "--keep-container")
    wait_until(lambda: sleeper_started(run_id), what="the sleeper agent to start")
    assert ssebench("runs", "stop", run_id, "--grace", "10").returncode == 0
    process.wait(timeout=120)
    summary = summary_of(tmp_path, run_id)
    assert summary["exit_code"] == 143
    # Stopped by another process: the summary says so, as the grade does.
    assert summary["stopped"] is True and summary["grade"]["stopped"] is True  # type: ignore[index]
    run = listed(run_id)
    assert run is not None and run["state"] == "exited" and run["exit_code"] == 143
    assert ssebench("runs", "remove", run_id).returncode == 0
    assert listed(run_id) is None
    assert ssebench("runs", "inspect", run_id).returncode == 3


def test_sigterm_to_the_runner_records_143_and_leaves_nothing(tmp_path: Path) -> None:
    run_id = new_run_id("term")
    process = start_run(tmp_path, run_id)
    wait_until(lambda: sleeper_started(run_id), what="the sleeper agent to start")
    process.send_signal(signal.SIGTERM)
    output, _ = process.communicate(timeout=120)
    assert process.returncode == 0, output
    summary = summary_of(tmp_path, run_id)
    assert summary["exit_code"] == 143 and summary["stopped"] is True
    assert listed(run_id) is None
    # The archive was copied out of its volume after the stop, then the volume removed.
    dialog = tmp_path / TASK / "none" / "sleeper" / run_id / "archive" / "dialog.jsonl"
    assert dialog.is_file() and not dialog.is_symlink()
    assert '"type":"agent_started"' in dialog.read_text()
    assert archive_objects(run_id) == []


def test_kill_9_of_the_runner_then_prune_leaves_nothing(tmp_path: Path) -> None:
    run_id = new_run_id("kill")
    process = start_run(tmp_path, run_id)
    wait_until(lambda: sleeper_started(run_id), what="the sleeper agent to start")
    process.kill()
    process.wait()
    assert listed(run_id) is not None  # the container outlives its runner...
    pruned = json.loads(ssebench("runs", "prune", "--json").stdout)
    assert run_id in [run["run_id"] for run in pruned["removed"]]
    assert listed(run_id) is None  # ...until prune removes it
    assert archive_objects(run_id) == []  # its archive volume too


def test_random_stops_and_kills_leave_nothing(tmp_path: Path) -> None:
    """Twenty short runs, each interrupted at a random moment, in a random way."""
    generator = random.Random(4263)
    for index in range(20):
        run_id = new_run_id(f"chaos{index}")
        process = start_run(tmp_path, run_id, "--timeout", "20")
        time.sleep(generator.uniform(0.0, 4.0))
        way = generator.choice(["sigterm", "sigint", "kill", "runs-stop", "runs-remove"])
        if way == "sigterm":
            process.send_signal(signal.SIGTERM)
        elif way == "sigint":
            process.send_signal(signal.SIGINT)
        elif way == "kill":
            process.kill()
        elif way == "runs-stop":
            ssebench("runs", "stop", run_id, "--grace", "5")
        else:
            ssebench("runs", "remove", run_id)
        try:
            process.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
    time.sleep(3)  # a docker run orphaned by a kill may still be creating its container
    ssebench("runs", "prune")
    mine = [entry for entry in leftovers() if "chaos" in entry]
    assert mine == []


def test_prune_removes_an_archive_volume_whose_runner_is_gone() -> None:
    """The window prune must cover: the runner killed after its container was gone
    (--rm) and before the archive was copied and its volume removed."""
    ended = subprocess.Popen(["true"])
    ended.wait()
    volumes = {}
    for name, pid in (("orphan", ended.pid), ("live", os.getpid())):
        run_id = new_run_id(name)
        volumes[name] = f"ssebench-{run_id}-archive"
        docker_lines(
            "volume", "create",
            "--label", f"ssebench.archive-of={run_id}",
            "--label", f"ssebench.runner-host={socket.gethostname()}",
            "--label", f"ssebench.runner-pid={pid}",
            "--label", f"ssebench.deadline={int(time.time()) + 3600}",
            "--label", "ssebench.keep=false",
            volumes[name],
        )  # fmt: skip
    try:
        pruned = json.loads(ssebench("runs", "prune", "--json").stdout)
        names = [entry["name"] for entry in pruned["removed"]]
        assert volumes["orphan"] in names and volumes["live"] not in names
        left = docker_lines("volume", "ls", "--quiet")
        assert volumes["orphan"] not in left and volumes["live"] in left
    finally:
        docker_lines("volume", "rm", "--force", *volumes.values())


def test_a_kubernetes_pods_container_is_neither_listed_nor_pruned() -> None:
    """A Kubernetes node whose runtime is this dockerd (dockershim) gives a run's pod's
    sandbox container the pod's labels. Here one is made by hand, as dockershim makes
    it, for a run whose runner is gone: Docker's `runs list` and prune leave it alone."""
    ended = subprocess.Popen(["true"])
    ended.wait()
    run_id = new_run_id("pod")
    name = f"k8s_POD_ssebench-{run_id}_ns_0000_0"
    docker_lines(
        "container", "create", "--name", name,
        "--label", f"ssebench.run-id={run_id}",
        "--label", "ssebench.webui=true",
        "--label", f"ssebench.runner-host={socket.gethostname()}",
        "--label", f"ssebench.runner-pid={ended.pid}",
        "--label", f"ssebench.deadline={int(time.time()) - 60}",
        "--label", "io.kubernetes.pod.uid=0000",
        "--label", "io.kubernetes.docker.type=podsandbox",
        "debian:bookworm-slim", "true",
    )  # fmt: skip
    try:
        assert listed(run_id) is None
        pruned = json.loads(ssebench("runs", "prune", "--json").stdout)
        assert run_id not in [entry["run_id"] for entry in pruned["removed"]]
        assert docker_lines("container", "ls", "--all", "--quiet", "--filter", f"name={name}")
    finally:
        docker_lines("container", "rm", "--force", name)


def test_a_second_signal_ends_the_runner_at_once_and_records_the_run(tmp_path: Path) -> None:
    """The first SIGTERM stops the run; the second ends ssebench now, without removing
    the container (that is left to prune), and the run is recorded all the same."""
    run_id = new_run_id("twice")
    process = start_run(tmp_path, run_id)
    said = Output(process)
    try:
        assert said.wait_for(SLEEPER_LINE, 180), said.text()[-3000:]
        output, ended_after = signal_twice(process, said)
    finally:
        process.kill()
        process.wait()
    try:
        assert process.returncode == 128 + signal.SIGTERM, output[-3000:]
        assert "exiting now; the run is left to the backend" in output
        assert f"`ssebench runs remove {run_id} --backend docker` removes it" in output
        assert ended_after < 10, ended_after
        summary = summary_of(tmp_path, run_id)
        assert summary["stopped"] is True and summary["status"] == "error"
        assert "second SIGTERM" in str(summary["error_msg"])
        # The verdict line (the container, left running, may write after it).
        assert any(line.startswith("error\t") for line in output.splitlines())
        # Not removed by the runner: prune removes it, its runner being gone.
        assert listed(run_id) is not None
    finally:
        ssebench("runs", "remove", run_id)
    assert listed(run_id) is None


def test_runs_stop_leaves_the_container_in_place(tmp_path: Path) -> None:
    """A run that is not kept, whose runner was killed: `runs stop` stops its container
    and leaves it (exited, 143) until `runs remove`."""
    run_id = new_run_id("stopin")
    process = start_run(tmp_path, run_id)
    try:
        wait_until(lambda: sleeper_started(run_id), what="the sleeper agent to start")
        process.kill()
        process.wait()
        assert ssebench("runs", "stop", run_id, "--grace", "10").returncode == 0
        run = listed(run_id)
        assert run is not None and run["state"] == "exited" and run["exit_code"] == 143
    finally:
        process.kill()
        process.wait()
        ssebench("runs", "remove", run_id)
    assert listed(run_id) is None
    assert archive_objects(run_id) == []


def test_the_cpu_limit_is_the_runs_share_at_parallel_runs(tmp_path: Path) -> None:
    """SSEBENCH_PARALLEL_RUNS (what `eval --jobs` sets) divides the machine's cores
    among the runs: the container's --cpus is its share (docs/docker.md)."""
    run_id = new_run_id("cpus")
    process = start_run(
        tmp_path,
        run_id,
        "--keep-container",
        env={PARALLEL_RUNS_VARIABLE: "2", "SSEBENCH_DOCKER_CPUS": ""},
    )
    try:
        wait_until(lambda: sleeper_started(run_id), what="the sleeper agent to start")
        run = listed(run_id)
        assert run is not None
        name = str(run["name"])
        nano_cpus = docker_lines("inspect", "--format", "{{.HostConfig.NanoCpus}}", name)
        expected = float(default_cpus(os.cpu_count(), 2))
        assert nano_cpus == [str(int(expected * 1e9))]
    finally:
        ssebench("runs", "remove", run_id)
        process.kill()
        process.wait()
