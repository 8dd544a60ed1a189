"""(c) `ssebench eval --jobs 2` vs `--jobs 1` over the pilot dataset, reference agent,
images cached: the wall time of the whole evaluation."""

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

ROUNDS = 3


def evaluate(results: Path, jobs: int) -> float:
    started = time.perf_counter()
    out = run(
        [
            *SSEBENCH,
            "eval",
            "--dataset",
            str(PILOT),
            "--agent",
            "reference",
            "--jobs",
            str(jobs),
            "--rerun",
            "--results",
            str(results),
            "--run-id-prefix",
            f"bench-{secrets.token_hex(3)}",
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
        evaluate(work / "warm", 2)  # images and page cache warm for both
        rounds = iter(range(100))
        two, one = alternate(
            lambda: evaluate(work / str(next(rounds)), 2),
            lambda: evaluate(work / str(next(rounds)), 1),
            ROUNDS,
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return [
        Figure(
            "(c) eval over the pilot",
            "ssebench eval --jobs 2",
            two,
            "ssebench eval --jobs 1",
            one,
            note=f"6 tasks, reference agent, median of {ROUNDS} in turns after a warm-up",
        )
    ]


if __name__ == "__main__":
    main(measure)
