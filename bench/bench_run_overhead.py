"""(a) `ssebench run --prebuilt` of the reference agent vs a bare `docker run` of the same
image doing the same work (same mounts and environment, same grading), wall time.

Also vs the platform's work that the contract asks of a run, done by hand with the
docker CLI: the bare run, plus the pull attempt of a prebuilt image (spec: the Docker
backend pulls it) and a network of the run's own (`docker network create --internal`,
the run on it, `docker network rm`). What ssebench takes beyond that is its own."""

from __future__ import annotations

import json
import secrets
import shutil
import subprocess
import tempfile
from pathlib import Path

from common import (
    PILOT,
    SSEBENCH,
    Figure,
    Result,
    docker_problem,
    in_turns,
    main,
    reference_run_env,
    run,
)

from ssebench.agents import release_version

TASK = "py-semver-prerelease"
# The prebuilt name under registry "ssebench" (built-in agents: the ssebench version).
IMAGE = f"ssebench/agent-reference/{TASK}:{release_version()}"
ROUNDS = 3


def measure() -> list[Result]:
    from common import NotMeasured

    problem = docker_problem()
    if problem:
        return [NotMeasured("run overhead", problem)]
    work = Path(tempfile.mkdtemp(prefix="ssebench-bench-run-"))
    prefix = f"bench-{secrets.token_hex(3)}"
    counter = iter(range(1000))

    def ssebench_run() -> None:
        run_id = f"{prefix}-{next(counter)}"
        out = run(
            [
                *SSEBENCH,
                "run",
                "--prebuilt",
                "--local",
                str(PILOT),
                "--task",
                TASK,
                "--agent",
                "reference",
                "--run-id",
                run_id,
                "--results",
                str(work / "ssebench"),
            ]
        )
        assert out.strip().splitlines()[-1].startswith("passed\t"), out

    def bare_docker_run(network: str = "none") -> None:
        run_dir = work / "bare" / f"{prefix}-{next(counter)}"
        (run_dir / "archive").mkdir(parents=True)
        (run_dir / "result.json").touch()
        patch = run_dir / "reference.patch"
        shutil.copy(PILOT / TASK / "reference.patch", patch)
        run(
            [
                "docker",
                "run",
                "--rm",
                "--pull",
                "never",
                "--network",
                network,
                "--label",
                f"ssebench.bench={prefix}",
                "--mount",
                f"type=bind,source={run_dir},target=/var/lib/ssebench/results",
                "--mount",
                f"type=bind,source={run_dir / 'archive'},target=/tmp/sse-archive",
                "--mount",
                f"type=bind,source={patch},target=/reference/patch.diff,readonly",
                *(
                    argument
                    for key, value in reference_run_env(run_dir.name).items()
                    for argument in ("-e", f"{key}={value}")
                ),
                IMAGE,
            ]
        )
        result = json.loads((run_dir / "result.json").read_text())
        assert result["status"] == "passed", result

    def platform_by_hand() -> None:
        network = f"{prefix}-net-{next(counter)}"
        # No registry answers here: the pull fails, as ssebench's attempt does.
        subprocess.run(["docker", "pull", "-q", IMAGE], capture_output=True, check=False)
        run(["docker", "network", "create", "--internal", network])
        try:
            bare_docker_run(network)
        finally:
            run(["docker", "network", "rm", network])

    try:
        subject, baseline, by_hand = in_turns(
            [ssebench_run, bare_docker_run, platform_by_hand], ROUNDS
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
            "docker pull attempt, network create, docker run on it, network rm",
            by_hand,
            note=f"{TASK}, median of {ROUNDS} in turns with the above",
        ),
    ]


if __name__ == "__main__":
    main(measure)
