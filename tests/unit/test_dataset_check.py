"""`ssebench dataset check`'s verdict per task from the reference and dummy runs."""

from __future__ import annotations

from pathlib import Path

from ssebench.dataset_check import verdicts
from ssebench.evaluation import TaskRun
from ssebench.tasks import load_dataset
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
