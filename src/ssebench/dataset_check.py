"""`ssebench dataset check`: is every task of a dataset sound?

A task is sound when the reference agent's run (which applies reference.patch) is
graded passed and the dummy agent's run (a harmless change) is graded failed. Each is
an ordinary run, made by an Evaluation (evaluation.py), so the check runs several at
once and keeps every run directory to look into. This module turns the two
evaluations' outcomes into the verdict per task.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ssebench.evaluation import TaskRun

# The agent whose run checks each side, and the grade that run must get.
EXPECTED = (("reference", "passed"), ("dummy", "failed"))


@dataclass(frozen=True)
class TaskVerdict:
    task: str
    problems: tuple[str, ...]
    runs: dict[str, dict[str, Any]]

    @property
    def sound(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "sound": self.sound,
            "problems": list(self.problems),
            "runs": self.runs,
        }


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
        results.append(TaskVerdict(run.task.id, tuple(problems), runs))
    return results
