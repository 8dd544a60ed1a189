"""`ssebench eval` over the pilot dataset on the real Docker daemon, reference agent."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ssebench.tasks import load_dataset
from tests.conftest import PILOT_DATASET
from tests.docker.conftest import leftovers, new_run_id

pytestmark = pytest.mark.docker
PILOT_TASKS = [task.id for task in load_dataset(PILOT_DATASET).tasks]


def eval_argv(results: Path, prefix: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "ssebench.cli.main",
        "eval",
        "--dataset",
        str(PILOT_DATASET),
        "--agent",
        "reference",
        "--jobs",
        "2",
        "--results",
        str(results),
        # The session's prefix, so the leak check sees these runs.
        "--run-id-prefix",
        prefix,
    ]


def report_from(stdout: str) -> dict[str, Any]:
    last = stdout.strip().splitlines()[-1]
    assert last.startswith("report: "), stdout
    report: dict[str, Any] = json.loads(Path(last.removeprefix("report: ")).read_text())
    return report


def run_eval(results: Path, prefix: str) -> dict[str, Any]:
    done = subprocess.run(
        eval_argv(results, prefix), capture_output=True, text=True, timeout=1800, env=os.environ
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return report_from(done.stdout)


def test_eval_pilot_passes_every_task_then_skips_them(tmp_path: Path) -> None:
    results = tmp_path / "results"
    report = run_eval(results, new_run_id("eval"))
    assert [task["task"] for task in report["runs"]] == PILOT_TASKS
    assert report["counts"]["passed"] == len(PILOT_TASKS), report
    assert report["backend"] == "docker" and report["limits"]["jobs"] == 2
    for task in report["runs"]:
        summary = json.loads((Path(task["run_dir"]) / "summary.json").read_text())
        assert summary["status"] == "passed" and summary["exit_code"] == 0, summary
        assert (Path(task["run_dir"]) / "final.patch").read_text().strip()
    assert leftovers() == []

    again = run_eval(results, new_run_id("eval"))
    assert again["counts"]["skipped"] == len(PILOT_TASKS)
    assert again["counts"]["passed"] == len(PILOT_TASKS)
    assert [task["run_id"] for task in again["runs"]] == [task["run_id"] for task in report["runs"]]


def test_sigint_leaves_nothing_and_a_second_invocation_finishes(tmp_path: Path) -> None:
    results = tmp_path / "results"
    process = subprocess.Popen(
        eval_argv(results, new_run_id("evalint")),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ,
    )
    # In the middle: once the first run is recorded, while others run or wait.
    deadline = time.monotonic() + 600
    while not list(results.glob("*/none/reference/*/summary.json")):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "no run finished"
        time.sleep(0.1)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=600)
    assert process.returncode == 130, stderr[-3000:]
    first = report_from(stdout)
    assert first["interrupted"] is True
    statuses = [task["status"] for task in first["runs"]]
    assert set(statuses) <= {"passed", "stopped", "not_run"}, first
    assert "passed" in statuses and statuses.count("passed") < len(PILOT_TASKS), statuses
    assert leftovers() == []

    second = run_eval(results, new_run_id("evalrest"))
    assert second["counts"]["passed"] == len(PILOT_TASKS), second
    assert second["counts"]["skipped"] == statuses.count("passed")
    rerun = {task["task"] for task in second["runs"] if not task["skipped"]}
    assert rerun == {task["task"] for task in first["runs"] if task["status"] != "passed"}
    assert leftovers() == []
