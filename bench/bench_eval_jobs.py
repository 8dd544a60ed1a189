"""(c) `ssebench eval --jobs 2` vs `--jobs 1`, reference agent, images cached: the wall
time of the whole evaluation, over the pilot dataset (where the longest task alone is
most of it: the pilot at --jobs 2 is also measured against that task alone, the
critical path) and over a dataset of equal synthetic tasks (equal_tasks.py; twice as
many tasks as jobs), where the speed-up is not hidden by one long task. The equal
tasks' note carries the speed-up, --jobs 1's time over --jobs 2's (goal >= 1.8x).

The platform's own speed-up on the same tasks is the baseline of that goal, measured in
turns with the evaluations, two runs at a time against one at a time: bare `docker
run`s of the same images doing the same work (as (a)'s baseline), and the same with the
platform's work the contract adds to each run (as (a)'s "by hand"). On a machine of few
cores every run's start and end costs CPU that does not divide by the jobs, with or
without ssebench. The pilot's critical path is measured without ssebench too: bare runs
of its tasks 2 at a time, the longest first, against the longest task's bare run alone,
and the same with the contract's work by hand."""

from __future__ import annotations

import json
import secrets
import shutil
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from common import (
    PILOT,
    SSEBENCH,
    Figure,
    NotMeasured,
    Result,
    alternate,
    bare_reference_run,
    docker_problem,
    in_turns,
    main,
    reference_image,
    reference_run_by_hand,
    run,
)
from equal_tasks import write_equal_tasks

ROUNDS = 3
# The equal tasks' rounds are short (10 s or so) and their speed-ups noisy.
EQUAL_ROUNDS = 5
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
        # The platform's own over the same tasks, longest first (as eval orders them).
        others = sorted(path.parent.name for path in PILOT.glob("*/reference.patch"))
        pilot_order = [longest, *(task for task in others if task != longest)]
        rounds = iter(range(100))

        def on_platform(order: list[str], jobs: int, by_hand: bool) -> Callable[[], None]:
            return lambda: platform_runs(
                work / f"platform-{next(rounds)}", PILOT, jobs, by_hand=by_hand, order=order
            )

        pilot_two, alone, bare_pilot_two, bare_alone, hand_pilot_two, hand_alone = in_turns(
            [
                lambda: evaluate(work / f"pilot-again-{next(rounds)}", JOBS),
                lambda: evaluate(work / f"alone-{next(rounds)}", 1, PILOT, (longest,)),
                on_platform(pilot_order, JOBS, by_hand=False),
                on_platform([longest], 1, by_hand=False),
                on_platform(pilot_order, JOBS, by_hand=True),
                on_platform([longest], 1, by_hand=True),
            ],
            ROUNDS,
        )
        equal = write_equal_tasks(work / "equal", EQUAL_TASKS)
        evaluate(work / "warm-equal", JOBS, equal)  # builds the images the bare runs use
        rounds = iter(range(100))
        equal_two, equal_one, bare_two, bare_one, hand_two, hand_one = in_turns(
            [
                lambda: evaluate(work / f"equal-{next(rounds)}", JOBS, equal),
                lambda: evaluate(work / f"equal-{next(rounds)}", 1, equal),
                lambda: platform_runs(work / f"bare-{next(rounds)}", equal, JOBS),
                lambda: platform_runs(work / f"bare-{next(rounds)}", equal, 1),
                lambda: platform_runs(work / f"hand-{next(rounds)}", equal, JOBS, by_hand=True),
                lambda: platform_runs(work / f"hand-{next(rounds)}", equal, 1, by_hand=True),
            ],
            EQUAL_ROUNDS,
        )
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
            "(c) the platform over the pilot vs its longest task",
            f"bare docker runs of the pilot, {JOBS} at a time, longest first",
            bare_pilot_two,
            f"the bare run of {longest} alone",
            bare_alone,
            note="the same critical path without ssebench (each run as (a)'s baseline); "
            f"median of {ROUNDS} in turns with the above",
        ),
        Figure(
            "(c) the platform over the pilot vs its longest task, the contract's work by hand",
            f"the contract's work by hand, {JOBS} at a time, longest first",
            hand_pilot_two,
            f"the same for {longest} alone",
            hand_alone,
            note=f"(a)'s work by hand on the pilot; median of {ROUNDS} in turns with the above",
        ),
        Figure(
            "(c) eval over equal tasks",
            f"ssebench eval --jobs {JOBS}",
            equal_two,
            "ssebench eval --jobs 1",
            equal_one,
            note=f"speed-up {equal_one / equal_two:.2f}x (goal >= 1.8x); {EQUAL_TASKS} equal "
            f"synthetic tasks ({equal.relative_to(work)} of bench/equal_tasks.py), reference "
            f"agent, median of {EQUAL_ROUNDS} in turns after a warm-up",
        ),
        Figure(
            "(c) the platform over equal tasks",
            f"bare docker runs, {JOBS} at a time",
            bare_two,
            "one at a time",
            bare_one,
            note=f"speed-up {bare_one / bare_two:.2f}x; the same {EQUAL_TASKS} images and work "
            f"without ssebench (each run as (a)'s baseline), median of {EQUAL_ROUNDS} in turns "
            "with the evaluations",
        ),
        Figure(
            "(c) the platform over equal tasks, the contract's work by hand",
            f"the contract's work by hand (common.reference_run_by_hand), {JOBS} at a time",
            hand_two,
            "one at a time",
            hand_one,
            note=f"speed-up {hand_one / hand_two:.2f}x; (a)'s work by hand on the same "
            f"{EQUAL_TASKS} images, median of {EQUAL_ROUNDS} in turns with the evaluations",
        ),
        Figure(
            "(c) equal tasks, speed-up against the platform's",
            f"ssebench eval --jobs {JOBS} over --jobs 1",
            equal_one / equal_two,
            f"bare docker runs, {JOBS} at a time over one",
            bare_one / bare_two,
            unit="x",
            note="1.00x: ssebench's evaluation scales as the bare platform does on this machine",
        ),
        Figure(
            "(c) equal tasks, speed-up against the contract's work by hand",
            f"ssebench eval --jobs {JOBS} over --jobs 1",
            equal_one / equal_two,
            f"the same by hand, {JOBS} at a time over one",
            hand_one / hand_two,
            unit="x",
            note="1.00x: ssebench scales as the platform doing the same work does",
        ),
    ]


def platform_runs(
    work: Path, dataset: Path, jobs: int, *, by_hand: bool = False, order: list[str] | None = None
) -> None:
    """A bare reference run of each task of dataset (its image as eval builds it), jobs
    at a time; by_hand: with the contract's work (reference_run_by_hand); order: these
    tasks only, started in this order (else all of them)."""
    tasks = (
        [dataset / task for task in order]
        if order
        else sorted(path.parent for path in dataset.glob("*/reference.patch"))
    )

    def run_of(task: Path) -> None:
        image, run_dir = reference_image(task.name), work / task.name
        if by_hand:
            reference_run_by_hand(image, run_dir)
        else:
            bare_reference_run(image, task / "reference.patch", run_dir)

    with ThreadPoolExecutor(jobs) as pool:
        list(pool.map(run_of, tasks))


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
