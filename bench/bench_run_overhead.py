"""(a) `ssebench run --prebuilt` of the reference agent vs a bare `docker run` of the same
image doing the same work (same mounts and environment, same grading), wall time.

Also vs the platform's work that the contract asks of a run, done by hand with the
docker CLI and iptables, one step after the other (common.reference_run_by_hand): the
pull attempt of a prebuilt image, the reference patch copied out of it, the archive's
volume, the run's own network and its rule, the bare run on them, the archive copied
out, and their removal. What ssebench takes beyond that is its own."""

from __future__ import annotations

import secrets
import shutil
import tempfile
from pathlib import Path

from common import (
    PILOT,
    SSEBENCH,
    Figure,
    Result,
    bare_reference_run,
    built_reference_image,
    docker_problem,
    in_turns,
    main,
    profiled_run,
    reference_image,
    reference_run_by_hand,
    run,
)

TASK = "py-semver-prerelease"
# The prebuilt name under registry "ssebench" (built-in agents: the ssebench version).
IMAGE = reference_image(TASK)
ROUNDS = 3


def measure() -> list[Result]:
    from common import NotMeasured

    problem = docker_problem()
    if problem:
        return [NotMeasured("run overhead", problem)]
    built_reference_image(TASK)
    work = Path(tempfile.mkdtemp(prefix="ssebench-bench-run-"))
    prefix = f"bench-{secrets.token_hex(3)}"
    counter = iter(range(1000))

    def run_arguments() -> list[str]:
        """`ssebench run`'s arguments for the next run."""
        return [
            *("--prebuilt", "--local", str(PILOT), "--task", TASK, "--agent", "reference"),
            *("--run-id", f"{prefix}-{next(counter)}", "--results", str(work / "ssebench")),
        ]

    def ssebench_run() -> None:
        out = run([*SSEBENCH, "run", *run_arguments()])
        assert out.strip().splitlines()[-1].startswith("passed\t"), out

    def bare_docker_run() -> None:
        run_dir = work / "bare" / f"{prefix}-{next(counter)}"
        bare_reference_run(IMAGE, PILOT / TASK / "reference.patch", run_dir)

    def platform_by_hand() -> None:
        run_dir = work / "by-hand" / f"{prefix}-{next(counter)}"
        reference_run_by_hand(IMAGE, run_dir)

    try:
        subject, baseline, by_hand = in_turns(
            [ssebench_run, bare_docker_run, platform_by_hand], ROUNDS
        )
        profile = profiled_run(
            "(a) where the time goes",
            run_arguments(),
            note="one more ssebench run, its backend's calls timed; the rest: the "
            "interpreter, imports, the command line and the run's record; the waits: "
            "its main thread's on the daemon's answers, on processes (docker, iptables), "
            "in its polls' sleeps and on the removal begun beside the read-out",
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return [
        Figure(
            "(a) run wall time",
            "ssebench run --prebuilt (reference)",
            subject,
            "bare docker run, same image and work",
            baseline,
            note=f"{TASK}, median of {ROUNDS}",
        ),
        Figure(
            "(a) run wall time vs the platform's work by hand",
            "ssebench run --prebuilt (reference)",
            subject,
            "the contract's work by hand: pull attempt, patch out of the image, volume, "
            "network and rule, the run, archive out, removals",
            by_hand,
            note=f"{TASK}, median of {ROUNDS} in turns with the above",
        ),
        profile,
    ]


if __name__ == "__main__":
    main(measure)
