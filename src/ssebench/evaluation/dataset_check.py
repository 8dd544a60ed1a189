"""`ssebench dataset check`: is every task of a dataset sound?

A task is sound when the reference agent's run (which applies reference.patch) is
graded passed and the dummy agent's run (a harmless change) is graded failed. Each is
an ordinary run, made by an Evaluation (evaluation.py), so the check runs several at
once and keeps every run directory to look into. This module turns the two
evaluations' outcomes into the verdict per task.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ssebench.evaluation.matrix import TaskRun
from ssebench.results import files as run_files

# The agent whose run checks each side, and the grade that run must get.
EXPECTED = (("reference", "passed"), ("dummy", "failed"))


# result.json of a graded run is small; more than this is not read.
RESULT_LIMIT = 16 * 1024 * 1024
# The record's own defects, found at import (swebench/importer.py): in the task's file.
RECORD_FILE = "swebench.json"


@dataclass(frozen=True)
class TaskVerdict:
    task: str
    problems: tuple[str, ...]
    runs: dict[str, dict[str, Any]]
    # The tests the reference run failed that must pass, by kind (FAIL_TO_PASS,
    # PASS_TO_PASS): the exact reason of a reference run that is not resolved.
    failed_tests: dict[str, list[str]] = field(default_factory=dict)

    @property
    def sound(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "sound": self.sound,
            "problems": list(self.problems),
            "failed_tests": self.failed_tests,
            "runs": self.runs,
        }


def failed_tests(run: TaskRun) -> dict[str, list[str]]:
    """The tests that must pass and did not, from the run's result.json ("tests", written
    by a grader that reports tests, as the SWE-bench one does); {} without them."""
    if run.run_dir is None:
        return {}
    try:
        content = run_files.read_file(run.run_dir, "result.json", RESULT_LIMIT)
        tests = json.loads(content.data).get("tests")
    except (OSError, ValueError, AttributeError):
        return {}
    if not isinstance(tests, dict):
        return {}
    failed = {}
    for kind in ("FAIL_TO_PASS", "PASS_TO_PASS"):
        outcome = tests.get(kind)
        failures = outcome.get("failure") if isinstance(outcome, dict) else None
        if isinstance(failures, list) and failures:
            failed[kind] = [str(name) for name in failures]
    return failed


def record_defects(task_path: Path) -> dict[str, list[str]]:
    """Tests the task's record names that no environment can pass (found at import)."""
    try:
        data = json.loads((task_path / RECORD_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    defects = data.get("record_defects") if isinstance(data, dict) else None
    return defects if isinstance(defects, dict) else {}


def _failure_reasons(run: TaskRun, failed: dict[str, list[str]]) -> list[str]:
    """What the reference run's failed tests say: how many of them the record itself
    spoils (its defect, found at import), and how many of each kind failed besides."""
    if not failed:
        return []
    defective = set(record_defects(run.task.path).get("foreign_path_tests", []))
    spoiled = [name for names in failed.values() for name in names if name in defective]
    reasons = []
    if spoiled:
        reasons.append(
            f"the record's defect: {len(spoiled)} failed test IDs carry absolute paths of "
            "the machine that made the record, which no environment has"
        )
    for kind, names in failed.items():
        others = [name for name in names if name not in defective]
        if others:
            besides = " besides" if spoiled else ""
            reasons.append(f"{len(others)} {kind} failed{besides}")
    return reasons


def _problem(agent: str, expected: str, run: TaskRun) -> str | None:
    if run.status == expected:
        return None
    detail = f" ({run.error_msg})" if run.error_msg else ""
    return f"the {agent} run is {run.status or 'not run'}{detail}, not {expected}"


def verdicts(runs_by_agent: Mapping[str, Sequence[TaskRun]]) -> list[TaskVerdict]:
    """One verdict per task, in the order of the reference runs. runs_by_agent maps
    each agent of EXPECTED to its evaluation's runs."""
    by_task = {agent: {run.task.id: run for run in runs} for agent, runs in runs_by_agent.items()}
    results = []
    for run in runs_by_agent[EXPECTED[0][0]]:
        problems = []
        runs = {}
        failed: dict[str, list[str]] = {}
        for agent, expected in EXPECTED:
            task_run = by_task[agent][run.task.id]
            runs[agent] = {
                "status": task_run.status,
                "error_msg": task_run.error_msg,
                "run_dir": None if task_run.run_dir is None else str(task_run.run_dir),
            }
            problem = _problem(agent, expected, task_run)
            if problem is not None:
                problems.append(problem)
                if expected == "passed":
                    failed = failed_tests(task_run)
                    problems.extend(_failure_reasons(task_run, failed))
        results.append(TaskVerdict(run.task.id, tuple(problems), runs, failed))
    return results
