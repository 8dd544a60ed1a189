"""Longest tasks first (issue 16 (c)): an evaluation starts the tasks whose earlier
runs took longest first, so the longest is not left to run alone at the end."""

from __future__ import annotations

import json
from pathlib import Path

from ssebench.evaluation.matrix import Limits, MatrixEntry, TaskRun
from ssebench.evaluation.recorded import longest_first, remembered_seconds
from tests.unit.test_eval import CountingBackend, evaluation, many_tasks


def record(results: Path, run_id: str, task: str, seconds: object, agent: str = "x") -> None:
    folder = results / "dataset" / task / agent / run_id
    folder.mkdir(parents=True)
    summary = {"task": task, "status": "passed", "durations": {"container": seconds}}
    (folder / "summary.json").write_text(json.dumps({**summary, "started_at": run_id}))


def test_remembered_seconds_is_each_tasks_longest_container_time(tmp_path: Path) -> None:
    record(tmp_path, "r1", "task-0", 3.0)
    record(tmp_path, "r2", "task-0", 5.5, agent="other")
    record(tmp_path, "r3", "task-1", 1)
    record(tmp_path, "r4", "task-2", "long")  # not a number: not remembered
    record(tmp_path, "r5", "task-3", True)
    assert remembered_seconds(tmp_path) == {"task-0": 5.5, "task-1": 1.0}
    assert remembered_seconds(tmp_path / "none") == {}


def test_longest_first_keeps_attempts_apart_and_unknown_tasks_first() -> None:
    tasks = many_tasks(4)
    runs = [TaskRun(task=task, attempt=attempt) for attempt in (1, 2) for task in tasks]
    seconds = {"task-0": 1.0, "task-1": 30.0, "task-3": 5.0}
    order = [(run.attempt, run.task.id) for run in longest_first(runs, seconds)]
    assert order == [
        (1, "task-2"),
        (1, "task-1"),
        (1, "task-3"),
        (1, "task-0"),
        (2, "task-2"),
        (2, "task-1"),
        (2, "task-3"),
        (2, "task-0"),
    ]
    # Nothing remembered: the given order.
    assert longest_first(runs, {}) == runs


def test_an_evaluation_prepares_the_longest_task_first(tmp_path: Path) -> None:
    results = tmp_path / "results"
    for number, seconds in enumerate((2.0, 9.0, 0.5, 4.0)):
        record(results, f"old-{number}", f"task-{number}", seconds, agent="earlier")
    backend = CountingBackend()
    job = evaluation(
        backend,
        many_tasks(4),
        results,
        Limits.for_jobs(1, preparing=1),
        entries=[MatrixEntry("reference")],
        rerun=True,
    )
    job.run()
    assert [run.status for run in job.runs] == ["passed"] * 4
    assert backend.prepared == ["task-1", "task-3", "task-0", "task-2"]
