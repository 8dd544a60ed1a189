"""The grades already recorded under a results folder: what an evaluation counts as
attempts made (so running it again runs nothing twice), and the times that order the
next runs longest first."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ssebench.evaluation.matrix import TaskRun
from ssebench.results.directory import NO_MODEL, iter_summaries

GRADED = ("passed", "failed")


def spend_of(summary: Mapping[str, Any]) -> float | None:
    """The run's spend in USD from its summary.json: a number, or {"usd": number}."""
    spend = summary.get("spend")
    if isinstance(spend, Mapping):
        spend = spend.get("usd")
    if isinstance(spend, (int, float)) and not isinstance(spend, bool):
        return float(spend)
    return None


# At most this many keys of a run's reward are taken (a map written by the task's tests).
REWARD_KEYS = 32


def reward_of(summary: Mapping[str, Any]) -> dict[str, float] | None:
    """The reward of a run of a task graded by one (its grade's `reward`: a map of names
    to finite numbers), or None."""
    grade = summary.get("grade")
    reward = grade.get("reward") if isinstance(grade, Mapping) else None
    if not isinstance(reward, Mapping) or not 0 < len(reward) <= REWARD_KEYS:
        return None
    taken = {}
    for key, value in reward.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
        if not math.isfinite(value):
            return None
        taken[str(key)] = float(value)
    return taken


# Recorded grades: by (agent, model label), then by task ID, oldest first.
Grades = dict[tuple[str, str], dict[str, list[tuple[Path, dict[str, Any]]]]]


# Whether a recorded grade (task ID, its summary) counts for the evaluation.
RecordedFilter = Callable[[str, Mapping[str, Any]], bool]


def all_recorded_grades(results_root: Path) -> Grades:
    """The graded runs under results_root, by agent and model, then task, oldest first.

    Graded: summary.json says passed or failed and the run was not stopped (a stopped
    run is graded as far as it got, which is no verdict on the agent).
    """
    found: Grades = {}
    for run_dir, summary in iter_summaries(results_root):
        config = summary.get("config") or {}
        if summary.get("status") in GRADED and not summary.get("stopped"):
            pair = (str(config.get("agent")), str(config.get("model")))
            by_task = found.setdefault(pair, {})
            by_task.setdefault(str(summary.get("task")), []).append((run_dir, summary))
    return found


def recorded_grades(
    results_root: Path, *, agent: str, model: str | None
) -> dict[str, list[tuple[Path, dict[str, Any]]]]:
    """The graded runs of every task for this agent and model, by task ID, oldest first."""
    return all_recorded_grades(results_root).get((agent, model or NO_MODEL), {})


def remembered_seconds(results_root: Path) -> dict[str, float]:
    """The longest time each task's container took in the earlier runs under
    results_root (any agent, any outcome): what longest-first scheduling goes by."""
    found: dict[str, float] = {}
    for _run_dir, summary in iter_summaries(results_root):
        durations = summary.get("durations")
        seconds = durations.get("container") if isinstance(durations, dict) else None
        task = summary.get("task")
        if isinstance(seconds, int | float) and not isinstance(seconds, bool) and task:
            found[str(task)] = max(found.get(str(task), 0.0), float(seconds))
    return found


def longest_first(runs: Sequence[TaskRun], seconds: Mapping[str, float]) -> list[TaskRun]:
    """runs in the order to start them: attempt by attempt (every attempt n before any
    n + 1), and within an attempt the tasks never run before first (their time is
    unknown, so they may be long), then the others by their remembered time, longest
    first. Ties keep the given order."""
    return sorted(
        runs,
        key=lambda run: (
            run.attempt,
            run.task.id in seconds,
            -seconds.get(run.task.id, 0.0),
        ),
    )


def count_recorded_attempts(
    runs: Sequence[TaskRun], results_root: Path, counts_as_recorded: RecordedFilter | None
) -> None:
    """Mark done the runs whose attempt a grade recorded under results_root stands for:
    per matrix entry and task, its newest grades are its first attempts (only those
    counts_as_recorded keeps, if given)."""
    recorded = all_recorded_grades(results_root)
    attempts = max((run.attempt for run in runs), default=0)
    for entry in dict.fromkeys(run.entry for run in runs):
        by_task = recorded.get((entry.agent, entry.model_label), {})
        if counts_as_recorded is not None:
            by_task = {
                task: [grade for grade in grades if counts_as_recorded(task, grade[1])]
                for task, grades in by_task.items()
            }
        kept = {task: grades[-attempts:] for task, grades in by_task.items()}
        for run in runs:
            grades = kept.get(run.task.id, []) if run.entry == entry else []
            if run.attempt <= len(grades):
                mark_recorded(run, *grades[run.attempt - 1])


def mark_recorded(run: TaskRun, run_dir: Path, summary: Mapping[str, Any]) -> None:
    """The run is done: its recorded grade stands for it."""
    run.state, run.skipped, run.run_dir = "done", True, run_dir
    run.status = "passed" if summary.get("status") == "passed" else "failed"
    run.run_id = str(summary.get("run_id"))
    run.error_msg = summary.get("error_msg")
    run.spend = spend_of(summary)
    run.reward = reward_of(summary)
