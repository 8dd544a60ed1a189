"""(g) A Kubernetes run's wall time: `ssebench run --prebuilt --backend kubernetes` of the
reference agent on TASK vs the same work as a bare Job by hand, and the seconds from the
grade (result.json's finished_at, written in the container) to the runner's exit.

The bare Job is what a user would do with kubectl alone: a Secret with the reference
patch, a Job of the same image with the same environment and volumes whose container
prints result.json at its end, `kubectl wait` for the Job to complete, `kubectl logs` to
read the result, and `kubectl delete --wait=false` of both. It has none of the run's
isolation (no NetworkPolicy, no collector, no archive read-out), so the ratio is an upper
bound of what ssebench adds. Runs and Jobs alternate, so the noise moves both.
"""

from __future__ import annotations

import json
import secrets
import shutil
import statistics
import subprocess
import tempfile
import time
from datetime import datetime
from pathlib import Path

from common import (
    PILOT,
    Figure,
    NotMeasured,
    Result,
    cluster_problem,
    main,
    profiled_run,
    publish_locally,
    reference_image,
    reference_run_env,
    run,
)

from ssebench.backends.kubernetes.config import KubernetesSettings
from ssebench.extensions import ARCHIVE_TARGET, REFERENCE_PATCH_TARGET, RESULTS_TARGET

ROUNDS = 3
SUBJECT = "ssebench run --prebuilt --backend kubernetes (reference)"
# The bare Job's container prints this line, then result.json.
RESULT_MARK = "--- result.json ---"
# The image's entrypoint and command, then the result for `kubectl logs`.
BARE_COMMAND = (
    "python3 /opt/ssebench/bin/ssebench-entrypoint /opt/ssebench/agent/run; "
    f"echo '{RESULT_MARK}'; cat {RESULTS_TARGET}/result.json"
)
BASELINE = "bare Job by hand (kubectl create, wait, logs, delete --wait=false)"


def run_arguments(work: Path, run_id: str) -> list[str]:
    """`ssebench run`'s arguments for the run run_id, its results under work."""
    from k8s_common import TASK

    return [
        *("--prebuilt", "--backend", "kubernetes"),
        *("--local", str(PILOT), "--task", TASK, "--agent", "reference"),
        *("--run-id", run_id, "--results", str(work / "ssebench")),
    ]


def ssebench_run(work: Path, run_id: str) -> tuple[float, float]:
    """Wall seconds of one run, and the seconds from its grade to the runner's exit."""
    from k8s_common import BENCH_REGISTRY, SSEBENCH

    results = work / "ssebench"
    started = time.time()
    out = run(
        [SSEBENCH, "run", *run_arguments(work, run_id)],
        env={"SSEBENCH_REGISTRY": BENCH_REGISTRY},
    )
    ended = time.time()
    assert out.strip().splitlines()[-1].startswith("passed\t"), out
    (result_file,) = results.glob(f"*/*/*/{run_id}/result.json")
    return ended - started, ended - graded_at(json.loads(result_file.read_text()))


def graded_at(result: dict[str, object]) -> float:
    """When the container wrote the grade (its clock is this machine's)."""
    return datetime.fromisoformat(str(result["finished_at"])).timestamp()


def bare_job(work: Path, name: str, image: str) -> tuple[float, float]:
    """Wall seconds of the same work as a Job made, watched and removed with kubectl,
    and the seconds from its grade to the end of that."""
    from k8s_common import TASK

    settings = KubernetesSettings.from_environment()
    kubectl = ["kubectl", "-n", settings.namespace]
    folder, _, patch_name = REFERENCE_PATCH_TARGET.rpartition("/")
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "labels": {"ssebench.bench": "bare-job"}},
        "spec": {
            "backoffLimit": 0,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "automountServiceAccountToken": False,
                    "containers": [
                        {
                            "name": "task",
                            "image": image,
                            "imagePullPolicy": settings.image_pull_policy,
                            "command": ["sh", "-c", BARE_COMMAND],
                            "env": [
                                {"name": key, "value": value}
                                for key, value in reference_run_env(name).items()
                            ],
                            "volumeMounts": [
                                {"name": "results", "mountPath": RESULTS_TARGET},
                                {"name": "archive", "mountPath": ARCHIVE_TARGET},
                                {"name": "reference", "mountPath": folder, "readOnly": True},
                            ],
                        }
                    ],
                    "volumes": [
                        {"name": "results", "emptyDir": {}},
                        {"name": "archive", "emptyDir": {}},
                        {
                            "name": "reference",
                            "secret": {
                                "secretName": name,
                                "items": [{"key": "patch", "path": patch_name}],
                            },
                        },
                    ],
                }
            },
        },
    }
    manifest = work / f"{name}.json"
    manifest.write_text(json.dumps(job))
    started = time.time()
    try:
        run(
            [
                *(*kubectl, "create", "secret", "generic", name),
                f"--from-file=patch={PILOT / TASK / 'reference.patch'}",
            ]
        )
        run([*kubectl, "create", "-f", str(manifest)])
        run([*kubectl, "wait", "--for=condition=complete", f"job/{name}", "--timeout=600s"])
        logs = run([*kubectl, "logs", f"job/{name}", "-c", "task"])
    finally:
        subprocess.run(
            [*kubectl, "delete", f"job/{name}", f"secret/{name}", "--wait=false"],
            capture_output=True,
            timeout=120,
        )
    ended = time.time()
    result = json.loads(logs.rpartition(f"{RESULT_MARK}\n")[2])
    assert result["status"] == "passed", result
    return ended - started, ended - graded_at(result)


def measure() -> list[Result]:
    problem = cluster_problem()
    if problem:
        return [NotMeasured("(g) Kubernetes run wall time", problem)]
    from k8s_common import BENCH_REGISTRY, TASK

    publish_locally(BENCH_REGISTRY, TASK, "reference")
    image = reference_image(TASK, BENCH_REGISTRY)
    work = Path(tempfile.mkdtemp(prefix="ssebench-bench-k8s-wall-"))
    prefix = f"bench-{secrets.token_hex(3)}"
    runs, jobs, run_grade_to_exit, job_grade_to_exit = [], [], [], []
    try:
        ssebench_run(work, f"{prefix}-warm")  # the image check's answer, as a user has it
        for round_number in range(ROUNDS):
            wall, after_grade = ssebench_run(work, f"{prefix}-{round_number}")
            runs.append(wall)
            run_grade_to_exit.append(after_grade)
            wall, after_grade = bare_job(work, f"{prefix}-bare-{round_number}", image)
            jobs.append(wall)
            job_grade_to_exit.append(after_grade)
        profile = profiled_run(
            "(g) where the time goes",
            run_arguments(work, f"{prefix}-profiled"),
            env={"SSEBENCH_REGISTRY": BENCH_REGISTRY},
            note="one more ssebench run, its backend's calls timed; the rest: the "
            "interpreter, imports, the command line and the run's record",
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return [
        Figure(
            "(g) Kubernetes run wall time",
            SUBJECT,
            statistics.median(runs),
            BASELINE,
            statistics.median(jobs),
            note=f"{TASK}, median of {ROUNDS} in turns; goal <= 1.2x",
        ),
        Figure(
            "(g) Kubernetes run, grade to exit",
            "from result.json's finished_at to the runner's exit",
            statistics.median(run_grade_to_exit),
            "to the bare Job's deletion",
            statistics.median(job_grade_to_exit),
            note=f"median of {ROUNDS}; goal <= 2 s",
        ),
        profile,
    ]


if __name__ == "__main__":
    main(measure)
