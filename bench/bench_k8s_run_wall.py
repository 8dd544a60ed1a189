"""(g) A Kubernetes run's wall time: `ssebench run --prebuilt --backend kubernetes` of the
reference agent on TASK vs the same work as a bare Job by hand, and the seconds from the
grade (result.json's finished_at, written in the container) to the runner's exit.

The bare Job is what a user would do with kubectl alone: a Secret with the reference
patch, a Job of the same image with the same environment and volumes whose container
prints result.json at its end, `kubectl wait` for the Job to complete, `kubectl logs` to
read the result, and `kubectl delete --wait=false` of both. It has none of the run's
isolation (no NetworkPolicy, no collector, no archive read-out), so the ratio is an upper
bound of what ssebench adds.

The contract's Job by hand is the work that spec/kubernetes.txt asks of a run, done with
kubectl one step after the other as a script would do it: a short pod of the image that
prints the reference patch ("a reference run takes the reference patch from the image it
runs"), watched to its end, its log read, deleted; a Secret with the run's environment
and the patch; a NetworkPolicy and a Job whose pod has the task container and the
collector; `kubectl wait` for the task container's end (without reading its log, which
`ssebench run` follows and prints); the results and the archive read out of the
collector (tar over exec, as kubectl cp does); and one delete of the three. kubectl
watches where ssebench may only look (the Role grants no watch), so this side waits less
than ssebench's. Runs and Jobs alternate, so the noise moves all.
"""

from __future__ import annotations

import json
import secrets
import shutil
import statistics
import subprocess
import tempfile
import time
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
from k8s_common import bare_job, graded_at, reference_volumes

from ssebench.backends.kubernetes.config import KubernetesSettings
from ssebench.backends.kubernetes.manifests import COLLECTOR_SCRIPT
from ssebench.extensions import (
    ARCHIVE_TARGET,
    IMAGE_REFERENCE_PATCH,
    RESULTS_TARGET,
)

ROUNDS = 3
SUBJECT = "ssebench run --prebuilt --backend kubernetes (reference)"
BASELINE = "bare Job by hand (kubectl create, wait, logs, delete --wait=false)"
CONTRACT = (
    "the contract's Job by hand (kubectl: patch pod, Secret, policy, Job with collector, "
    "wait, two read-outs, delete)"
)
# Asks of kubectl wait before the Job's pod exists (each a process, and 0.1 s apart).
POD_MADE_ATTEMPTS = 100
# How long the collector of the contract's Job stays up at most (it is deleted sooner).
COLLECTOR_SECONDS = 600


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


def contract_job(work: Path, name: str, image: str) -> float:
    """Wall seconds of the contract's work for a reference run done with kubectl (the
    module's docstring)."""
    settings = KubernetesSettings.from_environment()
    kubectl = ["kubectl", "-n", settings.namespace]
    env = reference_run_env(name)
    pod_labels = {"ssebench.bench": "contract-job", "ssebench.bench-run": name}
    mounts, volumes = reference_volumes(name)
    task = {
        "name": "task",
        "image": image,
        "imagePullPolicy": settings.image_pull_policy,
        "env": [
            {"name": key, "valueFrom": {"secretKeyRef": {"name": name, "key": key}}} for key in env
        ],
        "volumeMounts": mounts,
    }
    collector = {
        "name": "collector",
        "image": image,
        "imagePullPolicy": settings.image_pull_policy,
        "command": ["sh", "-c", COLLECTOR_SCRIPT, str(COLLECTOR_SECONDS)],
        "volumeMounts": [
            {**mount, "readOnly": True} for mount in mounts if mount["name"] != "reference"
        ],
    }
    objects = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            {
                "apiVersion": "networking.k8s.io/v1",
                "kind": "NetworkPolicy",
                "metadata": {"name": name},
                "spec": {
                    "podSelector": {"matchLabels": pod_labels},
                    "policyTypes": ["Ingress", "Egress"],
                    "ingress": [],
                    "egress": [],
                },
            },
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {"name": name, "labels": pod_labels},
                "spec": {
                    "backoffLimit": 0,
                    "template": {
                        "metadata": {"labels": pod_labels},
                        "spec": {
                            "restartPolicy": "Never",
                            "automountServiceAccountToken": False,
                            "containers": [task, collector],
                            "volumes": volumes,
                        },
                    },
                },
            },
        ],
    }
    manifest = work / f"{name}.json"
    manifest.write_text(json.dumps(objects))
    patch = work / f"{name}.patch"
    results = work / name
    check = f"{name}-check"
    started = time.time()
    try:
        run(
            [
                *(*kubectl, "run", check, f"--image={image}", "--restart=Never"),
                f"--image-pull-policy={settings.image_pull_policy}",
                "--labels=ssebench.bench=contract-job",
                *("--command", "--", "cat", IMAGE_REFERENCE_PATCH),
            ]
        )
        run(
            [
                *(*kubectl, "wait", "--for=jsonpath={.status.phase}=Succeeded"),
                *(f"pod/{check}", "--timeout=600s"),
            ]
        )
        patch.write_text(run([*kubectl, "logs", f"pod/{check}"]))
        run([*kubectl, "delete", f"pod/{check}", "--wait=false"])
        run(
            [
                *(*kubectl, "create", "secret", "generic", name, f"--from-file=patch={patch}"),
                *(f"--from-literal={key}={value}" for key, value in env.items()),
            ]
        )
        run([*kubectl, "create", "-f", str(manifest)])
        task_ended = '{.status.containerStatuses[?(@.name=="task")].state.terminated.reason}'
        wait_for_pod(kubectl, f"ssebench.bench-run={name}", f"--for=jsonpath={task_ended}")
        for source, target in ((RESULTS_TARGET, results), (ARCHIVE_TARGET, results / "archive")):
            target.mkdir(parents=True)
            read_out = [*kubectl, "exec", f"job/{name}", "-c", "collector", "--"]
            with subprocess.Popen(
                [*read_out, "tar", "-c", "-f", "-", "-C", source, "."], stdout=subprocess.PIPE
            ) as reader:
                subprocess.run(
                    ["tar", "-x", "-f", "-", "-C", str(target)], stdin=reader.stdout, check=True
                )
            assert reader.returncode == 0, f"the read-out of {source} failed"
    finally:
        subprocess.run(
            [*kubectl, "delete", "--wait=false", "--ignore-not-found"]
            + [f"{kind}/{name}" for kind in ("job", "secret", "networkpolicy")]
            + [f"pod/{check}"],
            capture_output=True,
            timeout=120,
        )
    ended = time.time()
    result = json.loads((results / "result.json").read_text())
    assert result["status"] == "passed", result
    return ended - started


def wait_for_pod(kubectl: list[str], selector: str, condition: str) -> None:
    """`kubectl wait` until the pod of selector meets condition. kubectl refuses to wait
    for a pod that does not exist yet, so it is asked again until the Job has made it."""
    for _ in range(POD_MADE_ATTEMPTS):
        done = subprocess.run(
            [*kubectl, "wait", condition, "pod", "-l", selector, "--timeout=600s"],
            capture_output=True,
            text=True,
            timeout=660,
        )
        if done.returncode == 0:
            return
        if "no matching resources" not in done.stderr:
            raise RuntimeError(f"kubectl wait for {selector}: {done.stderr.strip()}")
        time.sleep(0.1)
    raise RuntimeError(f"no pod of {selector} after {POD_MADE_ATTEMPTS} attempts")


def measure() -> list[Result]:
    problem = cluster_problem()
    if problem:
        return [NotMeasured("(g) Kubernetes run wall time", problem)]
    from k8s_common import BENCH_REGISTRY, TASK

    publish_locally(BENCH_REGISTRY, TASK, "reference")
    image = reference_image(TASK, BENCH_REGISTRY)
    work = Path(tempfile.mkdtemp(prefix="ssebench-bench-k8s-wall-"))
    prefix = f"bench-{secrets.token_hex(3)}"
    runs, jobs, contract_jobs, run_grade_to_exit, job_grade_to_exit = [], [], [], [], []
    try:
        ssebench_run(work, f"{prefix}-warm")  # the image check's answer, as a user has it
        for round_number in range(ROUNDS):
            wall, after_grade = ssebench_run(work, f"{prefix}-{round_number}")
            runs.append(wall)
            run_grade_to_exit.append(after_grade)
            wall, after_grade = bare_job(
                work, f"{prefix}-bare-{round_number}", image, PILOT / TASK / "reference.patch"
            )
            jobs.append(wall)
            job_grade_to_exit.append(after_grade)
            contract_jobs.append(contract_job(work, f"{prefix}-contract-{round_number}", image))
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
            "(g) Kubernetes run wall time vs the contract's Job by hand",
            SUBJECT,
            statistics.median(runs),
            CONTRACT,
            statistics.median(contract_jobs),
            note=f"{TASK}, median of {ROUNDS} in turns with the above",
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
