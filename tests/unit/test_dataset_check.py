"""`ssebench dataset check`'s verdict per task from the reference and dummy runs."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from ssebench.evaluation.dataset_check import verdicts
from ssebench.evaluation.matrix import TaskRun
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


def test_a_reference_run_that_is_not_resolved_names_its_failed_tests(tmp_path: Path) -> None:
    (reference,) = runs(one=("failed", "Not resolved"))
    reference.run_dir = tmp_path / "reference-run"
    reference.run_dir.mkdir()
    tests = {
        "FAIL_TO_PASS": {"success": [], "failure": ["t.py::fixed"]},
        "PASS_TO_PASS": {"success": ["t.py::a"], "failure": ["t.py::b", "t.py::c"]},
    }
    (reference.run_dir / "result.json").write_text(json.dumps({"tests": tests}))
    (verdict,) = verdicts({"reference": [reference], "dummy": runs(one=("failed", None))})
    assert verdict.failed_tests == {
        "FAIL_TO_PASS": ["t.py::fixed"],
        "PASS_TO_PASS": ["t.py::b", "t.py::c"],
    }
    assert verdict.problems[1:] == ("1 FAIL_TO_PASS failed", "2 PASS_TO_PASS failed")
    assert verdict.to_json()["failed_tests"] == verdict.failed_tests


def test_failed_tests_the_record_spoils_are_named_as_its_defect(tmp_path: Path) -> None:
    (reference,) = runs(one=("failed", "Not resolved"))
    task_folder = tmp_path / "task"
    task_folder.mkdir()
    spoiled = ["t.py::x[/n/fs/build/data/a.dcm-data0]", "t.py::x[/n/fs/build/data/b.dcm-data1]"]
    (task_folder / "swebench.json").write_text(
        json.dumps({"record_defects": {"foreign_path_tests": spoiled}})
    )
    reference.task = dataclasses.replace(reference.task, path=task_folder)
    reference.run_dir = tmp_path / "run"
    reference.run_dir.mkdir()
    tests = {"PASS_TO_PASS": {"success": [], "failure": spoiled}}
    (reference.run_dir / "result.json").write_text(json.dumps({"tests": tests}))
    (verdict,) = verdicts({"reference": [reference], "dummy": runs(one=("failed", None))})
    assert verdict.problems[1] == (
        "the record's defect: 2 failed test IDs carry absolute paths of the machine that "
        "made the record, which no environment has"
    )
    assert verdict.failed_tests == {"PASS_TO_PASS": spoiled}
    # Failed tests besides the spoiled ones are counted apart.
    tests["FAIL_TO_PASS"] = {"success": [], "failure": ["t.py::fixed"]}
    (reference.run_dir / "result.json").write_text(json.dumps({"tests": tests}))
    (verdict,) = verdicts({"reference": [reference], "dummy": runs(one=("failed", None))})
    assert verdict.problems[1:] == (
        "the record's defect: 2 failed test IDs carry absolute paths of the machine that "
        "made the record, which no environment has",
        "1 FAIL_TO_PASS failed besides",
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
