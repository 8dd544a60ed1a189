"""Whole runs on Podman through the CLI: a pilot task's reference passes and its dummy
fails, in sandbox and sidecar mode; and `ssebench runs` on a kept Podman run."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.cli import (
    last_line_verdict,
    run_arguments,
    ssebench,
    ssebench_with_reader_gone,
    start_ssebench,
)
from tests.conftest import PILOT_DATASET
from tests.podman.conftest import leftovers, new_run_id

pytestmark = pytest.mark.podman
TASK = "py-semver-prerelease"
PODMAN = {"SSEBENCH_BACKEND": "podman"}


def podman_run(results: Path, agent: str, *extra: str) -> dict[str, object]:
    arguments = run_arguments(PILOT_DATASET, TASK, agent, new_run_id(agent), results, *extra)
    done = ssebench(*arguments, "--backend", "podman", timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    status, run_dir = last_line_verdict(done.stdout)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == status
    assert summary["config"]["backend"] == "podman"  # type: ignore[index]
    return summary


@pytest.mark.parametrize("mode", ["sandbox", "sidecar"])
def test_reference_passes(mode: str, tmp_path: Path) -> None:
    summary = podman_run(tmp_path, "reference", "--mode", mode)
    assert summary["status"] == "passed", summary
    assert summary["exit_code"] == 0
    assert summary["config"]["mode"] == mode  # type: ignore[index]


@pytest.mark.parametrize("mode", ["sandbox", "sidecar"])
def test_dummy_fails_on_the_hidden_tests(mode: str, tmp_path: Path) -> None:
    summary = podman_run(tmp_path, "dummy", "--mode", mode)
    assert summary["status"] == "failed", summary
    assert summary["error_msg"] == "Hidden test failed"


def test_a_run_whose_reader_is_gone_is_graded_and_exits_with_its_verdict(tmp_path: Path) -> None:
    """`ssebench run --require-pass ... | head` once head has quit: podman run exits 126
    ("write /dev/stdout: broken pipe") while the container runs on. That 126 used to be
    recorded as the container's status, and the run read out without waiting for it."""
    run_id = new_run_id("gone")
    arguments = run_arguments(PILOT_DATASET, TASK, "dummy", run_id, tmp_path, "--require-pass")
    assert ssebench_with_reader_gone(*arguments, "--backend", "podman", timeout=900) == 1
    summary_path = tmp_path / TASK / "none" / "dummy" / run_id / "summary.json"
    summary = json.loads(summary_path.read_text())
    assert (summary["status"], summary["exit_code"]) == ("failed", 0), summary
    assert leftovers() == []


def runs(*arguments: str) -> subprocess.CompletedProcess[str]:
    return ssebench("runs", *arguments, env=PODMAN, timeout=120)


@contextmanager
def sleeper_run(
    tmp_path: Path, name: str, *extra: str
) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """A sleeper's run, once its agent has started; removed afterwards."""
    run_id = new_run_id(name)
    arguments = run_arguments(PILOT_DATASET, TASK, "sleeper", run_id, tmp_path)
    process = start_ssebench(*arguments, *extra, env=PODMAN, output=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 300
        while "sleeper" not in runs("logs", run_id).stdout.lower():
            assert process.poll() is None, "the run ended before its agent started"
            assert time.monotonic() < deadline, "the sleeper did not start"
            time.sleep(1)
        yield run_id, process
    finally:
        runs("remove", run_id)
        try:
            process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture
def kept_run(tmp_path: Path) -> Iterator[str]:
    with sleeper_run(tmp_path, "kept", "--keep-container") as (run_id, _):
        yield run_id


def test_runs_stop_leaves_the_container_in_place(tmp_path: Path) -> None:
    """A run that is not kept, whose runner was killed: `runs stop` stops its container
    and leaves it (exited, 143) until `runs remove` (the contract's table)."""
    with sleeper_run(tmp_path, "stopin") as (run_id, process):
        process.kill()
        process.wait()
        assert runs("stop", run_id, "--grace", "10").returncode == 0
        stopped = json.loads(runs("inspect", run_id, "--json").stdout)
        assert stopped["state"] == "exited" and stopped["exit_code"] == 143
    assert runs("inspect", run_id).returncode == 3
    assert not [item for item in leftovers() if run_id in item]


def test_runs_commands_on_a_podman_run(kept_run: str) -> None:
    listed = json.loads(runs("list", "--json").stdout)
    assert listed["backend"] == "podman" and listed["supports_exec"] is True
    assert kept_run in [run["run_id"] for run in listed["runs"]]
    inspected = json.loads(runs("inspect", kept_run, "--json").stdout)
    assert inspected["state"] == "running"
    url = json.loads(runs("endpoint", kept_run, "4263", "--json").stdout)["url"]
    version = subprocess.run(
        ["curl", "--silent", "--max-time", "10", f"{url}/version"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert json.loads(version.stdout)["name"] == "ssebench-daemon", version.stderr
    secret = "podman-exec-secret-3b1f"
    done = ssebench(
        "runs",
        "exec",
        kept_run,
        "--env",
        "PROBE",
        "--",
        "sh",
        "-c",
        'echo "[$PROBE]"',
        env={**PODMAN, "PROBE": secret},
        timeout=120,
    )
    assert done.stdout.strip() == f"[{secret}]", done.stderr
    # Restricted egress: the run's network has no route out, not even to this host's
    # other addresses (here Docker's bridge gateway, which a default route would reach).
    probe = (
        "import socket\n"
        "try:\n socket.create_connection(('172.17.0.1', 22), timeout=5); print('connected')\n"
        "except OSError as error:\n print(type(error).__name__, error.errno)"
    )
    reached = ssebench("runs", "exec", kept_run, "--", "python3", "-c", probe, env=PODMAN)
    assert reached.stdout.strip() == "OSError 101", reached.stdout + reached.stderr
    assert runs("stop", kept_run, "--grace", "10").returncode == 0
    stopped = json.loads(runs("inspect", kept_run, "--json").stdout)
    assert stopped["state"] == "exited" and stopped["exit_code"] == 143
    # A kept run is the user's: prune leaves it, remove ends it.
    pruned = runs("prune")
    assert pruned.returncode == 0, pruned.stderr
    assert runs("inspect", kept_run, "--json").returncode == 0
    assert runs("remove", kept_run).returncode == 0
    assert runs("inspect", kept_run).returncode == 3
    assert not [item for item in leftovers() if kept_run in item]
