"""Runs whose runner was killed outright: recorded once by the next reader, never while
their runner lives, never over a summary that exists."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ssebench.results.unrecorded import (
    KILLED_REASON,
    RUNNER_FILE,
    record_killed_runs,
    write_runner_file,
)
from tests.cli import ssebench

GRADE = {
    "schema": 1,
    "status": "passed",
    "error_msg": None,
    "steps": [{"name": "apply", "ok": True, "exit_code": 0, "seconds": 0.1}],
    "started_at": "2026-01-01T00:00:00Z",
    "finished_at": "2026-01-01T00:01:00Z",
}


def dead_pid() -> int:
    """The ID of a process that has ended."""
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def make_run(
    results: Path, run_id: str, runner: dict[str, Any] | None, grade: dict[str, Any] | None
) -> Path:
    run_dir = results / "py-semver-prerelease" / "none" / "reference" / run_id
    (run_dir / "archive").mkdir(parents=True)
    (run_dir / "result.json").write_text(json.dumps(grade) if grade else "")
    if runner is not None:
        (run_dir / RUNNER_FILE).write_text(json.dumps(runner))
    return run_dir


def runner_of(pid: int, *, host: str | None = None, deadline: int | None = None) -> dict[str, Any]:
    return {
        "pid": pid,
        "host": host or socket.gethostname(),
        "started_at": "2026-01-01T00:00:00Z",
        "deadline": deadline if deadline is not None else int(time.time()) + 3600,
        "config": {"task": "py-semver-prerelease", "agent": "reference", "model": "none"},
    }


def summary_of(run_dir: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run_dir / "summary.json").read_text())
    return data


def test_a_killed_runners_run_is_recorded_with_its_grade(tmp_path: Path) -> None:
    graded = make_run(tmp_path, "graded", runner_of(dead_pid()), GRADE)
    ungraded = make_run(tmp_path, "ungraded", runner_of(dead_pid()), None)
    assert sorted(record_killed_runs(tmp_path)) == sorted([graded, ungraded])
    summary = summary_of(graded)
    assert (summary["status"], summary["error_msg"]) == ("error", KILLED_REASON)
    assert summary["grade"]["status"] == "passed"  # the container's grade, kept
    assert summary["config"]["agent"] == "reference" and summary["run_id"] == "graded"
    assert summary_of(ungraded)["grade"] is None
    assert record_killed_runs(tmp_path) == []  # once


def test_a_live_runners_run_is_left_alone(tmp_path: Path) -> None:
    mine = make_run(tmp_path, "mine", runner_of(os.getpid()), GRADE)
    elsewhere = make_run(tmp_path, "elsewhere", runner_of(1, host="another-host"), None)
    assert record_killed_runs(tmp_path) == []
    assert not (mine / "summary.json").exists() and not (elsewhere / "summary.json").exists()
    # Another host's runner is taken to be gone once its deadline passed.
    past = make_run(tmp_path, "past", runner_of(1, host="another-host", deadline=1), None)
    assert record_killed_runs(tmp_path) == [past]


def test_a_summary_that_exists_is_never_replaced(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path, "recorded", runner_of(dead_pid()), GRADE)
    (run_dir / "summary.json").write_text('{"status": "passed"}')
    assert record_killed_runs(tmp_path) == []
    assert summary_of(run_dir) == {"status": "passed"}


def test_the_runner_file_names_this_process(tmp_path: Path) -> None:
    write_runner_file(tmp_path, timeout=60, config={"agent": "dummy"})
    runner = json.loads((tmp_path / RUNNER_FILE).read_text())
    assert runner["pid"] == os.getpid() and runner["host"] == socket.gethostname()
    assert runner["deadline"] > time.time() + 60 and runner["config"] == {"agent": "dummy"}


@pytest.mark.parametrize("command", [("runs", "results", "--json"), ("runs", "prune", "--json")])
def test_runs_results_and_prune_record_and_show_them(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    run_dir = make_run(tmp_path / "results", "killed", runner_of(dead_pid()), GRADE)
    done = ssebench(
        *command, "--results", str(tmp_path / "results"), env={"SSEBENCH_BACKEND": "fake"}
    )
    assert done.returncode == 0, done.stderr
    assert summary_of(run_dir)["error_msg"] == KILLED_REASON
    if command[1] == "results":
        (run,) = json.loads(done.stdout)["runs"]
        assert (run["run_id"], run["status"], run["error_msg"]) == (
            "killed",
            "error",
            KILLED_REASON,
        )
    else:
        assert json.loads(done.stdout)["recorded"] == [str(run_dir)]


def test_an_evaluation_records_a_killed_run_and_runs_its_task_again(tmp_path: Path) -> None:
    from ssebench.evaluation.matrix import Limits
    from ssebench.testing.fake import FakeBackend
    from tests.unit.test_eval import evaluation, many_tasks

    (task,) = many_tasks(1)
    killed = tmp_path / task.id / "none" / "reference" / "killed"
    (killed / "archive").mkdir(parents=True)
    (killed / "result.json").write_text(json.dumps(GRADE))
    (killed / RUNNER_FILE).write_text(json.dumps(runner_of(dead_pid())))
    job = evaluation(FakeBackend(), [task], tmp_path, Limits.for_jobs(1))
    assert summary_of(killed)["error_msg"] == KILLED_REASON
    # Its container's grade was passed, but the run is an error: the task runs again.
    assert [run.skipped for run in job.runs] == [False]
    job.start()
    assert job.wait(120)
    assert [run.status for run in job.runs] == ["passed"]


def test_the_web_ui_lists_a_killed_run_with_the_reason(tmp_path: Path) -> None:
    from ssebench.webui.catalog import ResultsIndex

    run_dir = make_run(tmp_path, "killed", runner_of(dead_pid()), None)
    runs = ResultsIndex(tmp_path).runs()
    assert runs["killed"][0] == run_dir
    assert runs["killed"][1]["error_msg"] == KILLED_REASON
