"""Start-up: `ssebench --help` vs `python -c pass` (the same interpreter), and
`ssebench runs list --json` vs `docker ps -a` (both list the daemon's containers; the
first reads them through the Engine API, see backends/docker/engine.py). Each pair is
timed in turns, so the noise of a shared machine moves both."""

from __future__ import annotations

import json
import subprocess
import sys

from common import SSEBENCH, Figure, Result, alternate, docker_problem, main, run

ROUNDS = 15
FLOOR_IMPORTS = "import argparse, json, socket"


def quiet(argv: list[str]) -> None:
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)


def measure() -> list[Result]:
    subject, baseline = alternate(
        lambda: quiet([*SSEBENCH, "--help"]), lambda: quiet([sys.executable, "-c", "pass"]), ROUNDS
    )
    figures: list[Result] = [
        Figure(
            "start-up: ssebench --help",
            "ssebench --help",
            subject,
            "python -c pass",
            baseline,
            note=f"median of {ROUNDS} in turns; goal <= 3x",
        )
    ]
    problem = docker_problem()
    if problem:
        from common import NotMeasured

        return [*figures, NotMeasured("start-up: runs list", problem)]
    listed = len(json.loads(run([*SSEBENCH, "runs", "list", "--json"]))["runs"])
    subject, baseline = alternate(
        lambda: quiet([*SSEBENCH, "runs", "list", "--json"]),
        lambda: quiet(["docker", "ps", "-a"]),
        ROUNDS,
    )
    figures.append(
        Figure(
            "start-up: runs list --json",
            "ssebench runs list --json",
            subject,
            "docker ps -a",
            baseline,
            note=f"{listed} runs listed; median of {ROUNDS} in turns; goal <= 3x",
        )
    )
    # Python's own floor beside docker's: the interpreter and the standard library a
    # listing over the Engine API needs at least (its options, the socket, the JSON).
    floor, baseline = alternate(
        lambda: quiet([sys.executable, "-c", FLOOR_IMPORTS]),
        lambda: quiet(["docker", "ps", "-a"]),
        ROUNDS,
    )
    figures.append(
        Figure(
            "start-up: Python's floor for a listing",
            f"python -c '{FLOOR_IMPORTS}'",
            floor,
            "docker ps -a",
            baseline,
            note=f"median of {ROUNDS} in turns; what no Python listing goes below",
        )
    )
    return figures


if __name__ == "__main__":
    main(measure)
