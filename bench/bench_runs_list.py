"""(b) `ssebench runs list --json` vs `docker ps -a --filter label=...` with 200 and
1,000 labelled runs. The runs are created-not-started containers (cheap: no process),
labelled as the runner labels them, and removed afterwards."""

from __future__ import annotations

import json
import secrets
import subprocess
from concurrent.futures import ThreadPoolExecutor

from common import (
    SSEBENCH,
    Figure,
    NotMeasured,
    Result,
    alternate,
    built_reference_image,
    docker_problem,
    main,
    reference_image,
    run,
)

IMAGE = reference_image("py-semver-prerelease")
SIZES = (200, 1000)
ROUNDS = 3
BENCH_LABEL = "ssebench.bench"


def create(session: str, number: int) -> None:
    run_id = f"{session}-{number}"
    run(
        [
            "docker",
            "create",
            "--pull",
            "never",
            "--name",
            f"ssebench-{run_id}",
            "--label",
            f"{BENCH_LABEL}={session}",
            "--label",
            f"ssebench.run-id={run_id}",
            "--label",
            "ssebench.webui=true",
            "--label",
            "ssebench.task-id=bench",
            "--label",
            "ssebench.agent=reference",
            "--label",
            "ssebench.model=none",
            IMAGE,
            "true",
        ]
    )


def remove_all(session: str) -> None:
    ids = run(["docker", "ps", "-aq", "--filter", f"label={BENCH_LABEL}={session}"]).split()
    for start in range(0, len(ids), 200):
        subprocess.run(["docker", "rm", "-f", *ids[start : start + 200]], capture_output=True)


def measure() -> list[Result]:
    problem = docker_problem()
    if problem:
        return [NotMeasured("runs list", problem)]
    built_reference_image("py-semver-prerelease")
    session = f"bench-{secrets.token_hex(3)}"
    figures: list[Result] = []
    created = 0

    def ssebench_list() -> None:
        runs = json.loads(run([*SSEBENCH, "runs", "list", "--json"]))["runs"]
        mine = [item for item in runs if item["labels"].get(BENCH_LABEL) == session]
        assert len(mine) == created, (len(mine), created)

    def docker_ps() -> None:
        run(["docker", "ps", "-a", "--filter", "label=ssebench.webui=true"])

    try:
        with ThreadPoolExecutor(max_workers=8) as pool:
            for size in SIZES:
                list(pool.map(lambda number: create(session, number), range(created, size)))
                created = size
                subject, baseline = alternate(ssebench_list, docker_ps, ROUNDS)
                figures.append(
                    Figure(
                        f"(b) runs list, {size} runs",
                        "ssebench runs list --json",
                        subject,
                        "docker ps -a --filter label=ssebench.webui=true",
                        baseline,
                        note=f"median of {ROUNDS}",
                    )
                )
    finally:
        remove_all(session)
    return figures


if __name__ == "__main__":
    main(measure)
