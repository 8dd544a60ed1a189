"""`ssebench dataset check`'s verdict per task from the reference and dummy runs."""

from __future__ import annotations

import json
from pathlib import Path

from ssebench.dataset_check import verdicts
from ssebench.evaluation import TaskRun
from ssebench.tasks import load_dataset
from tests.cli import ssebench
from tests.conftest import TINY_DATASET


def runs(**statuses: tuple[str, str | None]) -> list[TaskRun]:
    task = load_dataset(TINY_DATASET).tasks[0]
    agent_runs = []
    for _, (status, message) in statuses.items():
        run = TaskRun(task=task, status=status, error_msg=message)  # type: ignore[arg-type]
        run.run_dir = Path("/results") / status
        agent_runs.append(run)
    return agent_runs


def test_reference_passed_and_dummy_failed_is_sound() -> None:
    (verdict,) = verdicts(
        {
            "reference": runs(one=("passed", None)),
            "dummy": runs(one=("failed", "Hidden test failed")),
        }
    )
    assert verdict.sound and verdict.problems == ()
    assert verdict.to_json()["runs"]["dummy"] == {
        "status": "failed",
        "error_msg": "Hidden test failed",
        "run_dir": "/results/failed",
    }


def test_each_wrong_outcome_is_a_problem_saying_why() -> None:
    (verdict,) = verdicts(
        {
            "reference": runs(one=("failed", "Not resolved")),
            "dummy": runs(one=("passed", None)),
        }
    )
    assert not verdict.sound
    assert verdict.problems == (
        "the reference run is failed (Not resolved), not passed",
        "the dummy run is passed, not failed",
    )


def test_check_command_runs_both_agents_and_reports_per_task(tmp_path: Path) -> None:
    report = tmp_path / "check.json"
    done = ssebench(
        "dataset", "check", str(TINY_DATASET), "--backend", "fake", "--jobs", "2",
        "--results", str(tmp_path / "results"), "--report", str(report),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1].startswith("2 sound, 0 broken; report: ")
    data = json.loads(report.read_text())
    assert (data["sound"], data["broken"], data["jobs"]) == (2, 0, 2)
    for task in data["tasks"]:
        assert task["runs"]["reference"]["status"] == "passed"
        assert task["runs"]["dummy"]["status"] == "failed"
        assert Path(task["runs"]["dummy"]["run_dir"], "summary.json").is_file()
    assert "ssebench dataset check: started" in done.stderr
