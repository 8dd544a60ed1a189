"""(c) `ssebench eval --jobs 2` vs `--jobs 1`, reference agent, images cached: the wall
time of the whole evaluation, over the pilot dataset (where the longest task alone is
most of it: the pilot at --jobs 2 is also measured against that task alone, the
critical path) and over a dataset of equal synthetic tasks (equal_tasks.py; twice as
many tasks as jobs), where the speed-up is not hidden by one long task. The equal
tasks' note carries the speed-up, --jobs 1's time over --jobs 2's (goal >= 1.8x)."""

from __future__ import annotations

import json
import secrets
import shutil
import tempfile
import time
from pathlib import Path

from common import (
    PILOT,
    SSEBENCH,
    Figure,
    NotMeasured,
    Result,
    alternate,
    docker_problem,
    main,
    run,
)
from equal_tasks import write_equal_tasks

ROUNDS = 3
JOBS = 2
EQUAL_TASKS = 2 * JOBS


def evaluate(results: Path, jobs: int, dataset: Path = PILOT, tasks: tuple[str, ...] = ()) -> float:
    started = time.perf_counter()
    out = run(
        [
            *SSEBENCH,
            "eval",
            "--dataset",
            str(dataset),
            "--agent",
            "reference",
            "--jobs",
            str(jobs),
            "--rerun",
            "--results",
            str(results),
            "--run-id-prefix",
            f"bench-{secrets.token_hex(3)}",
            *(["--tasks", *tasks] if tasks else []),
        ],
        timeout=3600,
    )
    seconds = time.perf_counter() - started
    report = json.loads(Path(out.strip().splitlines()[-1].removeprefix("report: ")).read_text())
    counts = report["counts"]
    assert counts["passed"] == counts["total"], counts
    return seconds


def measure() -> list[Result]:
    problem = docker_problem()
    if problem:
        return [NotMeasured("eval --jobs", problem)]
    work = Path(tempfile.mkdtemp(prefix="ssebench-bench-eval-"))
    try:
        two, one = jobs_against_one(work, PILOT)
        longest = longest_task(work / f"warm-{PILOT.name}")
        rounds = iter(range(100))
        pilot_two, alone = alternate(
            lambda: evaluate(work / f"pilot-again-{next(rounds)}", JOBS),
            lambda: evaluate(work / f"alone-{next(rounds)}", 1, PILOT, (longest,)),
            ROUNDS,
        )
        equal = write_equal_tasks(work / "equal", EQUAL_TASKS)
        equal_two, equal_one = jobs_against_one(work, equal)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return [
        Figure(
            "(c) eval over the pilot",
            f"ssebench eval --jobs {JOBS}",
            two,
            "ssebench eval --jobs 1",
            one,
            note=f"6 tasks, reference agent, median of {ROUNDS} in turns after a warm-up",
        ),
        Figure(
            "(c) eval over the pilot vs its longest task",
            f"ssebench eval --jobs {JOBS}",
            pilot_two,
            f"ssebench eval --tasks {longest}",
            alone,
            note=f"the critical path: the pilot's longest task ({longest}, by its run's "
            f"recorded time) alone (goal <= 1.10x); median of {ROUNDS} in turns",
        ),
        Figure(
            "(c) eval over equal tasks",
            f"ssebench eval --jobs {JOBS}",
            equal_two,
            "ssebench eval --jobs 1",
            equal_one,
            note=f"speed-up {equal_one / equal_two:.2f}x (goal >= 1.8x); {EQUAL_TASKS} equal "
            f"synthetic tasks ({equal.relative_to(work)} of bench/equal_tasks.py), reference "
            f"agent, median of {ROUNDS} in turns after a warm-up",
        ),
    ]


def longest_task(results: Path) -> str:
    """The task whose run took longest under results (summary.json's durations)."""
    summaries = [json.loads(path.read_text()) for path in results.rglob("summary.json")]
    return str(max(summaries, key=lambda summary: summary["durations"]["total"])["task"])


def jobs_against_one(work: Path, dataset: Path) -> tuple[float, float]:
    """Median seconds of `eval --jobs JOBS` and of `--jobs 1` over dataset, in turns."""
    evaluate(work / f"warm-{dataset.name}", JOBS, dataset)  # images and page cache warm
    rounds = iter(range(100))
    return alternate(
        lambda: evaluate(work / f"{dataset.name}-{next(rounds)}", JOBS, dataset),
        lambda: evaluate(work / f"{dataset.name}-{next(rounds)}", 1, dataset),
        ROUNDS,
    )


if __name__ == "__main__":
    main(measure)
