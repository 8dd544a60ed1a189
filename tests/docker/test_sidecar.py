"""Sidecar runs on the real Docker backend: an agent container beside the task's
environment container, two run-scoped volumes, and nothing left behind."""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ssebench import labels
from ssebench.agents import release_version
from ssebench.extensions import ARCHIVE_TARGET, RESULTS_TARGET, SOCKETS_TARGET
from tests.cli import run_arguments, ssebench
from tests.conftest import PILOT_DATASET
from tests.docker.conftest import docker_lines, new_run_id
from tests.docker.test_docker_backend_runs import TASK, listed, start_run, summary_of
from tests.polling import wait_until

pytestmark = pytest.mark.docker
SOURCE_DIR = "/src/semver"


def pair_objects(run_id: str) -> list[str]:
    """Every container and volume that carries the pair's label."""
    selector = f"label={labels.PAIR}={run_id}"
    containers = docker_lines("ps", "--all", "--filter", selector, "--format", "{{.Names}}")
    volumes = docker_lines("volume", "ls", "--filter", selector, "--format", "{{.Name}}")
    return sorted(containers + volumes)


def expected_objects(run_id: str) -> list[str]:
    return sorted(
        [
            f"ssebench-{run_id}",
            f"ssebench-{run_id}-agent",
            f"ssebench-{run_id}-source",
            f"ssebench-{run_id}-sockets",
        ]
    )


def sidecar_run(results: Path, run_id: str, agent: str, *extra: str) -> subprocess.Popen[str]:
    return start_run(results, run_id, "--mode", "sidecar", *extra, agent=agent)


def agent_container_running(run_id: str) -> bool:
    done = subprocess.run(
        ["docker", "logs", f"ssebench-{run_id}-agent"], capture_output=True, text=True
    )
    return "sleeper: sleeping" in done.stdout + done.stderr


def inspect(name: str) -> dict[str, Any]:
    data: list[dict[str, Any]] = json.loads("\n".join(docker_lines("container", "inspect", name)))
    return data[0]


@pytest.mark.parametrize(("agent", "status"), [("reference", "passed"), ("dummy", "failed")])
def test_a_sidecar_run_is_graded_and_leaves_nothing(
    tmp_path: Path, agent: str, status: str
) -> None:
    run_id = new_run_id(f"side-{agent}")
    arguments = run_arguments(PILOT_DATASET, TASK, agent, run_id, tmp_path, "--mode", "sidecar")
    done = ssebench(*arguments, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    summary = summary_of(tmp_path, run_id, agent=agent)
    assert summary["status"] == status, summary
    assert summary["exit_code"] == 0
    assert summary["config"]["mode"] == "sidecar"  # type: ignore[index]
    assert str(summary["images"]["run"]).endswith(f"agent-{agent}/sidecar:{release_version()}")  # type: ignore[index]
    run_dir = tmp_path / TASK / "none" / agent / run_id
    assert (run_dir / "agent.log").is_file() and (run_dir / "agent-entrypoint.log").is_file()
    # The environment container graded what the agent container wrote in the shared tree.
    patch = (run_dir / "final.patch").read_text()
    assert ("semver/version.py" if agent == "reference" else "NOTES.txt") in patch
    events = [json.loads(line)["type"] for line in (run_dir / "archive" / "dialog.jsonl").open()]
    assert events == ["agent_started", "message", "agent_exited", "graded"]
    # Both containers' output reached the terminal.
    output = done.stdout + done.stderr
    assert "ssebench: agent container: the agent exited with status 0" in output
    assert f"ssebench: result: {status}" in output
    assert pair_objects(run_id) == []


def test_sigterm_to_the_runner_records_143_and_leaves_nothing(tmp_path: Path) -> None:
    run_id = new_run_id("side-term")
    process = sidecar_run(tmp_path, run_id, "sleeper")
    try:
        wait_until(lambda: agent_container_running(run_id), what="the sleeper agent to start")
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=180)
    finally:
        if process.poll() is None:
            process.kill()
            ssebench("runs", "remove", run_id)
    assert process.returncode == 0, output
    summary = summary_of(tmp_path, run_id)
    assert summary["exit_code"] == 143 and summary["stopped"] is True
    assert summary["grade"]["stopped"] is True  # type: ignore[index]
    assert pair_objects(run_id) == []


@pytest.fixture
def kept_pair(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    run_id = new_run_id("side-kept")
    process = sidecar_run(tmp_path, run_id, "sleeper", "--keep-container")
    try:
        wait_until(lambda: agent_container_running(run_id), what="the sleeper agent to start")
        yield run_id, process
    finally:
        ssebench("runs", "remove", run_id)
        try:
            process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_the_agent_container_cannot_read_the_task(kept_pair: tuple[str, object]) -> None:
    run_id, _ = kept_pair
    agent = f"ssebench-{run_id}-agent"

    def in_agent(*command: str, user: str = "model") -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["docker", "exec", "--user", user, agent, *command],
            capture_output=True,
            text=True,
            timeout=60,
        )

    # Not there at all: not in the image, and not mounted, not even for root.
    assert in_agent("test", "-e", "/ssebench/task", user="root").returncode == 1
    assert in_agent("cat", "/ssebench/task/task.json").returncode != 0
    mounts = {mount["Destination"] for mount in inspect(agent)["Mounts"]}
    assert mounts == {SOURCE_DIR, SOCKETS_TARGET, RESULTS_TARGET, ARCHIVE_TARGET}
    # What the agent does get: the shared tree, owned by its uid, and the daemon.
    tree = in_agent("stat", "-c", "%u", f"{SOURCE_DIR}/semver/version.py")
    assert tree.stdout.strip() == "1000", tree.stderr
    version = in_agent(
        "python3",
        "-c",
        "import json, urllib.request; print(json.load(urllib.request.urlopen("
        "'http://127.0.0.1:4263/version'))['name'])",
    )
    assert version.stdout.strip() == "ssebench-daemon", version.stderr
    # ...but neither the grade, nor the root-only sockets.
    assert in_agent("ls", RESULTS_TARGET).returncode != 0
    for name in ("admin.sock", "sidecar.sock"):
        connect = (
            "import socket; s = socket.socket(socket.AF_UNIX); "
            f"s.connect('{SOCKETS_TARGET}/{name}')"
        )
        assert in_agent("python3", "-c", connect).returncode != 0, name


def test_keep_then_stop_then_remove(kept_pair: tuple[str, subprocess.Popen[str]]) -> None:
    run_id, process = kept_pair
    assert pair_objects(run_id) == expected_objects(run_id)
    environment = inspect(f"ssebench-{run_id}")["Config"]["Labels"]
    assert environment[labels.RUN_ID] == run_id and environment[labels.WEBUI] == "true"
    agent = inspect(f"ssebench-{run_id}-agent")["Config"]
    image_labels = json.loads(
        docker_lines("image", "inspect", "--format", "{{json .Config.Labels}}", agent["Image"])[0]
    )
    # The agent container's own labels, beside those of its image: the pair's only.
    assert set(agent["Labels"].items()) - set(image_labels.items()) == {(labels.PAIR, run_id)}
    run = listed(run_id)
    assert run is not None and run["name"] == f"ssebench-{run_id}"
    logs = ssebench("runs", "logs", run_id).stdout
    assert "sleeper: sleeping" in logs and "waiting for the agent container" in logs

    assert ssebench("runs", "stop", run_id, "--grace", "10").returncode == 0
    process.wait(timeout=180)
    assert pair_objects(run_id) == expected_objects(run_id), "kept, so still there"
    run = listed(run_id)
    assert run is not None and run["state"] == "exited" and run["exit_code"] == 143

    assert ssebench("runs", "remove", run_id).returncode == 0
    assert pair_objects(run_id) == []
    assert ssebench("runs", "inspect", run_id).returncode == 3
