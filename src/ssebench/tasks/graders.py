"""Graders that decide a run on the host, from the test output its evaluator logged.

A task without `grader` is decided in the container alone: every step must exit 0. A
task with one (task.yaml `grader: swebench`) is graded in the container as usual, and
then, when its hidden-test step ran, the runner hands the grade to the named grader,
which reads that step's output from evaluator.log and decides passed or failed with
per-test outcomes (result.json `tests`). A grade that is already an error, stopped,
timed out or failed before the hidden tests is left as it is.

A grader is found by its name among the entry points of group `ssebench.graders`
(`grade(task, run_dir, grade) -> grade`): ssebench's own SWE-bench grader registers
there as any other would, so the task format does not know the graders' packages.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ssebench.host.entry_points import entry_points
from ssebench.tasks.model import GRADERS_GROUP, Task

Grader = Callable[[Task, Path, dict[str, Any]], dict[str, Any]]


def find_grader(name: str) -> Grader | None:
    """The grader so named, loaded; None when no installed package registers it."""
    for entry in entry_points(GRADERS_GROUP):
        if entry.name == name:
            grader: Grader = entry.load()
            return grader
    return None


def grade_on_host(task: Task, run_dir: Path, grade: dict[str, Any]) -> dict[str, Any]:
    """The grade of a run of task after its grader (the same grade without one).

    Never raises: a grader that cannot decide makes the run an error, saying why.
    """
    if task.grader is None or not hidden_tests_ran(grade):
        return grade
    try:
        grader = find_grader(task.grader)
        if grader is None:
            return {**grade, "status": "error", "error_msg": f"Unknown grader {task.grader!r}"}
        return grader(task, run_dir, grade)
    except Exception as error:  # a grader's failure is the run's error, not the runner's
        return {**grade, "status": "error", "error_msg": f"Grader error: {error}"}


def hidden_tests_ran(grade: dict[str, Any]) -> bool:
    """True when the container graded the run up to its hidden-test step and nothing
    (an evaluator error, a model error, a timeout, a stop) already decided it."""
    if grade.get("status") not in ("passed", "failed"):
        return False
    if grade.get("timed_out") or grade.get("stopped"):
        return False
    steps = grade.get("steps")
    if not isinstance(steps, list) or not steps:
        return False
    last = steps[-1]
    if not isinstance(last, dict) or last.get("name") != "hidden_test":
        return False
    return all(isinstance(step, dict) and step.get("ok") for step in steps[:-1])
