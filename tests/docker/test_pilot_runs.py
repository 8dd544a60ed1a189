"""Every pilot task, run for real on Docker: reference passes, dummy fails."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ssebench.tasks import load_dataset
from tests.cli import last_line_verdict, run_arguments, ssebench
from tests.conftest import PILOT_DATASET
from tests.docker.conftest import new_run_id

pytestmark = pytest.mark.docker
PILOT_TASKS = [task.id for task in load_dataset(PILOT_DATASET).tasks]
LOG_FILES = ("agent.log", "daemon.log", "evaluator.log", "entrypoint.log")


def ssebench_run(
    results: Path, task: str, agent: str, *extra: str, timeout: float = 900
) -> tuple[Path, dict[str, object]]:
    """A whole pilot run through the CLI; its run directory and summary.json."""
    arguments = run_arguments(PILOT_DATASET, task, agent, new_run_id(agent), results, *extra)
    done = ssebench(*arguments, timeout=timeout)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    status, run_dir = last_line_verdict(done.stdout)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == status
    return run_dir, summary


def steps(summary: dict[str, object]) -> dict[str, bool]:
    grade = summary["grade"]
    assert isinstance(grade, dict)
    return {step["name"]: step["ok"] for step in grade["steps"]}


@pytest.mark.parametrize("task", PILOT_TASKS)
def test_reference_passes(task: str, tmp_path: Path) -> None:
    run_dir, summary = ssebench_run(tmp_path, task, "reference")
    assert summary["status"] == "passed", summary
    assert summary["exit_code"] == 0
    assert steps(summary) == {"apply": True, "build": True, "test": True, "hidden_test": True}
    assert run_dir == tmp_path / task / "none" / "reference" / run_dir.name
    assert (run_dir.parent / "latest").resolve() == run_dir
    patch = (run_dir / "final.patch").read_text()
    assert patch.strip() and patch == (run_dir / "reference.patch").read_text()
    for log in LOG_FILES:
        assert (run_dir / log).is_file(), log
    dialog = [json.loads(line) for line in (run_dir / "archive" / "dialog.jsonl").open()]
    assert dialog and all({"seq", "ts", "type"} <= set(event) for event in dialog)
    result = json.loads((run_dir / "result.json").read_text())
    assert result["config"]["reference_run"] is True
    for field in (
        "run_id",
        "task",
        "config",
        "status",
        "exit_code",
        "started_at",
        "finished_at",
        "durations",
    ):
        assert summary[field] is not None, field


@pytest.mark.parametrize("task", PILOT_TASKS)
def test_dummy_fails_on_the_hidden_tests(task: str, tmp_path: Path) -> None:
    """The unpatched behaviour builds and passes the project's own tests, and the hidden
    fail-to-pass tests fail: the dummy's change fixes nothing."""
    run_dir, summary = ssebench_run(tmp_path, task, "dummy")
    assert summary["status"] == "failed"
    assert summary["error_msg"] == "Hidden test failed"
    assert steps(summary) == {"apply": True, "build": True, "test": True, "hidden_test": False}
    assert (run_dir / "final.patch").read_text().strip()


def test_agent_past_its_timeout_is_recorded_with_the_timeout(tmp_path: Path) -> None:
    run_dir, summary = ssebench_run(tmp_path, PILOT_TASKS[0], "sleeper", "--timeout", "5")
    assert summary["status"] == "failed"
    assert summary["error_msg"] == "Timeout (5s)"
    assert summary["exit_code"] == 124
    assert json.loads((run_dir / "result.json").read_text())["timed_out"] is True
