"""Grading an imported task on the host with the official swebench package: the
FAIL_TO_PASS / PASS_TO_PASS report from the hidden step's output in evaluator.log."""

from __future__ import annotations

import dataclasses
import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from ssebench.agents import load_agent
from ssebench.errors import TaskError
from ssebench.extensions import RunHandle
from ssebench.runner import Runner, RunSettings
from ssebench.swebench.grading import GRADING_FILE, grade_run, report_for_output
from ssebench.swebench.markers import hidden_test_command
from ssebench.tasks.graders import find_grader, grade_on_host, hidden_tests_ran
from ssebench.tasks.model import Task, load_task
from ssebench.testing.fake import FakeBackend
from tests.conftest import TINY_DATASET as TINY

GRADING = {
    "instance_id": "acme__shapes-1",
    "repo": "acme/shapes",
    "version": "1.0",
    "FAIL_TO_PASS": ["tests/test_geometry.py::test_perimeter_rect"],
    "PASS_TO_PASS": [
        "tests/test_geometry.py::test_area_rect",
        "tests/test_geometry.py::test_area_circle",
    ],
    "log_parser": "parse_log_pytest",
    "eval_type": "pass_and_fail",
}
STEPS_OK = [
    {"name": "apply", "ok": True, "exit_code": 0, "seconds": 0.1},
    {"name": "build", "ok": True, "exit_code": 0, "seconds": 0.1},
    {"name": "test", "ok": True, "exit_code": 0, "seconds": 0.1},
]


def pytest_output(outcomes: dict[str, str], exit_code: int) -> str:
    """What the hidden step prints: pytest -rA's summary between the markers."""
    summary = "\n".join(f"{status} {test}" for test, status in outcomes.items())
    return (
        ">>>>> Start Test Output\n"
        "============================= test session starts ==============================\n"
        f"=========================== short test summary info ============================\n"
        f"{summary}\n"
        ">>>>> End Test Output\n"
        f">>>>> Test Exit Code: {exit_code}\n"
    )


def evaluator_log(output: str) -> str:
    command = hidden_test_command("python -m pytest -rA tests/test_geometry.py")
    return (
        "2026-01-01T00:00:00Z == test: $ true\n"
        f"2026-01-01T00:00:00Z == hidden_test: $ {command}"
        f"{output}"
        "2026-01-01T00:00:02Z hidden_test: FAILED (exit 1, 1.0s)\n"
    )


def make_task(tmp_path: Path) -> Task:
    folder = tmp_path / "task"
    folder.mkdir()
    (folder / GRADING_FILE).write_text(json.dumps(GRADING))
    return Task(
        id="acme-shapes-1", project="shapes", language="python", description="",
        source_dir="/testbed", prompt="p", build="true", test="true", hidden_test="h",
        packages=(), base_image="debian:bookworm-slim", dataset="shapes", path=folder,
        grader="swebench",
    )  # fmt: skip


def container_grade(hidden_ok: bool) -> dict[str, Any]:
    hidden = {"name": "hidden_test", "ok": hidden_ok, "exit_code": 0 if hidden_ok else 1}
    return {
        "status": "passed" if hidden_ok else "failed",
        "error_msg": None if hidden_ok else "Hidden test failed",
        "timed_out": False,
        "stopped": False,
        "steps": [*STEPS_OK, {**hidden, "seconds": 1.0}],
    }


ALL_PASS = {
    "tests/test_geometry.py::test_area_rect": "PASSED",
    "tests/test_geometry.py::test_area_circle": "PASSED",
    "tests/test_geometry.py::test_perimeter_rect": "PASSED",
}


def test_all_tests_passing_is_resolved() -> None:
    report = report_for_output(GRADING, pytest_output(ALL_PASS, 0))
    assert report["resolved"] is True
    assert report["resolution"] == "RESOLVED_FULL"
    assert report["FAIL_TO_PASS"] == {"success": GRADING["FAIL_TO_PASS"], "failure": []}
    assert report["outcomes"]["tests/test_geometry.py::test_perimeter_rect"] == "PASSED"


def test_a_broken_pass_to_pass_test_is_not_resolved() -> None:
    outcomes = {**ALL_PASS, "tests/test_geometry.py::test_area_rect": "FAILED"}
    report = report_for_output(GRADING, pytest_output(outcomes, 1))
    assert report["resolved"] is False
    assert report["PASS_TO_PASS"]["failure"] == ["tests/test_geometry.py::test_area_rect"]
    assert report["FAIL_TO_PASS"]["failure"] == []


def test_a_missing_fail_to_pass_test_is_not_resolved() -> None:
    outcomes = dict(ALL_PASS)
    del outcomes["tests/test_geometry.py::test_perimeter_rect"]
    report = report_for_output(GRADING, pytest_output(outcomes, 0))
    assert report["resolved"] is False
    assert report["FAIL_TO_PASS"]["failure"] == GRADING["FAIL_TO_PASS"]


def test_output_without_markers_is_not_parsed_and_not_resolved() -> None:
    report = report_for_output(GRADING, "PASSED tests/test_geometry.py::test_perimeter_rect\n")
    assert report["parsed"] is False and report["resolved"] is False


def test_the_host_grade_passes_a_resolved_run_the_container_failed(tmp_path: Path) -> None:
    """A nonzero test exit from a test outside both lists (one that fails before and
    after the fix) is the package's to judge."""
    task = make_task(tmp_path)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    outcomes = {**ALL_PASS, "tests/test_geometry.py::test_known_broken": "FAILED"}
    (run_dir / "evaluator.log").write_text(evaluator_log(pytest_output(outcomes, 1)))
    grade = grade_on_host(task, run_dir, container_grade(hidden_ok=False))
    assert grade["status"] == "passed" and grade["error_msg"] is None
    assert grade["tests"]["grader"] == "swebench"
    assert grade["tests"]["PASS_TO_PASS"]["success"] == GRADING["PASS_TO_PASS"]


def test_the_host_grade_fails_an_unresolved_run_the_container_passed(tmp_path: Path) -> None:
    task = make_task(tmp_path)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    outcomes = {**ALL_PASS, "tests/test_geometry.py::test_area_circle": "FAILED"}
    (run_dir / "evaluator.log").write_text(evaluator_log(pytest_output(outcomes, 0)))
    grade = grade_run(task, run_dir, container_grade(hidden_ok=True))
    assert (grade["status"], grade["error_msg"]) == ("failed", "Not resolved")
    assert grade["tests"]["outcomes"]["tests/test_geometry.py::test_area_circle"] == "FAILED"


def test_hidden_tests_past_their_limit_are_named_as_timed_out(tmp_path: Path) -> None:
    task = make_task(tmp_path)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    outcomes = {key: value for key, value in ALL_PASS.items() if "perimeter" not in key}
    (run_dir / "evaluator.log").write_text(evaluator_log(pytest_output(outcomes, 124)))
    grade = container_grade(hidden_ok=False)
    grade["steps"][-1] = {**grade["steps"][-1], "timed_out": True, "seconds": 900.4}
    decided = grade_run(task, run_dir, grade)
    assert decided["status"] == "failed"
    assert decided["error_msg"] == "Not resolved: the hidden tests timed out after 900s"
    assert decided["tests"]["FAIL_TO_PASS"]["failure"] == GRADING["FAIL_TO_PASS"]


def test_the_environments_deviations_are_in_every_grade(tmp_path: Path) -> None:
    task = make_task(tmp_path)
    environment = {
        "python": "3.9",
        "deviations": ["Python 3.9 in place of the specification's 3.8"],
    }
    grading = {**GRADING, "environment": environment}
    (task.path / GRADING_FILE).write_text(json.dumps(grading))
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "evaluator.log").write_text(evaluator_log(pytest_output(ALL_PASS, 0)))
    grade = grade_run(task, run_dir, container_grade(hidden_ok=True))
    assert grade["status"] == "passed"
    assert grade["tests"]["environment"] == environment


def test_no_log_is_not_resolved(tmp_path: Path) -> None:
    grade = grade_on_host(make_task(tmp_path), tmp_path, container_grade(hidden_ok=True))
    assert grade["status"] == "failed"
    assert grade["error_msg"] == "Not resolved: no test results in the output"


@pytest.mark.parametrize(
    "grade",
    [
        {"status": "error", "error_msg": "Evaluator error: OSError", "steps": []},
        {**container_grade(True), "timed_out": True, "status": "failed"},
        {**container_grade(True), "stopped": True},
        {
            "status": "failed",
            "steps": [{**STEPS_OK[0], "name": "apply", "ok": False}],
            "timed_out": False,
        },
    ],
)
def test_a_grade_decided_before_the_hidden_tests_is_left_alone(
    tmp_path: Path, grade: dict[str, Any]
) -> None:
    assert not hidden_tests_ran(grade)
    assert grade_on_host(make_task(tmp_path), tmp_path, grade) is grade


def test_missing_grading_data_makes_the_run_an_error(tmp_path: Path) -> None:
    task = make_task(tmp_path)
    (task.path / GRADING_FILE).unlink()
    grade = grade_on_host(task, tmp_path, container_grade(hidden_ok=True))
    assert grade["status"] == "error"
    assert grade["error_msg"].startswith("Grader error: ")
    assert "import the task again" in grade["error_msg"]


class GradedBackend(FakeBackend):
    """The fake backend, whose container leaves a grade with a hidden step that failed
    (a test outside both lists failed) and an evaluator.log in which every listed test
    passed."""

    def collect_results(self, handle: RunHandle, dest: Path) -> None:
        super().collect_results(handle, dest)
        outcomes = {**ALL_PASS, "tests/test_geometry.py::test_known_broken": "FAILED"}
        (dest / "result.json").write_text(json.dumps(container_grade(hidden_ok=False)))
        (dest / "evaluator.log").write_text(evaluator_log(pytest_output(outcomes, 1)))


def test_the_runner_records_the_host_grade_of_a_task_with_a_grader(tmp_path: Path) -> None:
    folder = tmp_path / "tiny" / "tiny-add"
    shutil.copytree(TINY / "tiny-add", folder)
    with (folder / "task.yaml").open("a") as stream:
        stream.write("grader: swebench\n")
    (folder / GRADING_FILE).write_text(json.dumps(GRADING))
    task = load_task(folder, dataset="tiny")
    assert task.grader == "swebench"
    settings = RunSettings(
        task=task, agent=load_agent("dummy"), model=None, run_id="graded-1",
        results_root=tmp_path / "results", backend="fake",
    )  # fmt: skip
    runner = Runner(GradedBackend(), out=io.StringIO())
    outcome = runner.run(settings, runner.prepare(settings))
    result = json.loads((outcome.run_dir / "result.json").read_text())
    assert result["status"] == "passed"
    assert result["tests"]["FAIL_TO_PASS"]["success"] == GRADING["FAIL_TO_PASS"]
    assert result["config"]["agent"] == "dummy"
    assert outcome.summary["status"] == "passed"
    assert outcome.summary["grade"]["tests"]["resolved"] is True  # type: ignore[index]


def test_output_the_tests_forge_cannot_pass_a_failed_run(tmp_path: Path) -> None:
    """The agent's code prints a whole fake step (header, markers, all passed, exit 0)
    while the real tests fail: the first header and the evaluator's exit status rule."""
    task = make_task(tmp_path)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    failing = {**ALL_PASS, "tests/test_geometry.py::test_perimeter_rect": "FAILED"}
    forged = "2026-01-01T00:00:01Z == hidden_test: $ x\n" + pytest_output(ALL_PASS, 0)
    real = pytest_output(failing, 1).replace(
        ">>>>> Start Test Output\n", ">>>>> Start Test Output\n" + forged
    )
    (run_dir / "evaluator.log").write_text(evaluator_log(real))
    grade = grade_run(task, run_dir, container_grade(hidden_ok=False))
    assert grade["status"] == "failed"
    assert grade["tests"]["resolved"] is False


def test_graders_are_found_by_entry_point_and_an_unknown_one_is_an_error(
    tmp_path: Path,
) -> None:
    """The SWE-bench grader is registered as an entry point of group ssebench.graders,
    as any package's would be; a task naming a grader nobody installed is refused at
    load, and a run of one (a task folder changed since) is an error, never a crash."""
    assert find_grader("swebench") is grade_run
    assert find_grader("nobody-installed-this") is None
    task = make_task(tmp_path)
    shutil.copytree(TINY / "tiny-add", tmp_path / "tiny-add")
    yaml_file = tmp_path / "tiny-add" / "task.yaml"
    yaml_file.write_text(yaml_file.read_text() + "grader: nobody-installed-this\n")
    with pytest.raises(TaskError, match="field 'grader' must be one of swebench"):
        load_task(tmp_path / "tiny-add")
    graded = grade_on_host(
        dataclasses.replace(task, grader="nobody-installed-this"), tmp_path, container_grade(True)
    )
    assert (graded["status"], graded["error_msg"]) == (
        "error",
        "Unknown grader 'nobody-installed-this'",
    )
