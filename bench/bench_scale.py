"""Scale (issue 16, goal (h)): `ssebench eval` of N tiny equal tasks (equal_tasks.py,
the hidden test instant), reference agent, prebuilt images, on the local cluster with
--jobs 10 and on Docker with --jobs 2, for a smaller and a larger N (SCALE_SIZES, default 20 and 50;
SSEBENCH_BENCH_SCALE_SIZES=50,200 for more). Each evaluation is measured once, the
backends and sizes in turns (Kubernetes small, Docker small, Kubernetes large, Docker
large): wall time, runs per minute, peak memory of the ssebench process (its
ru_maxrss, by wait4), and on Kubernetes the API requests per run.

The figure is the larger N's wall time against the smaller N's scaled linearly
(wall(small) x large/small): 1.00x is linear growth, above it the runs get slower as
there are more of them. The per-phase profile (profiled.py: the backend's calls
timed, the pod's own timestamps; on Kubernetes also a watch of the pods, for when the
node reported each start) is printed for each evaluation. Each evaluation is a first
one of its images (a cache folder of its own), and the next begins once the cluster has
removed the last one's pods.

(h)'s goal asks the cluster for 3x Docker's runs per minute on this machine. The same
tasks' images are then run without ssebench as well, the larger N of them: bare Jobs by
hand (k8s_common.bare_job) 10 at a time, and bare `docker run`s 2 at a time. Their ratio
is what the platforms themselves give on this machine, whoever drives them.

The images are published once into the local store under BENCH_REGISTRY (`ssebench
images publish --load docker`), which both backends run with --prebuilt. It needs
what (d) and (e) need (see docs/performance.md), and Docker.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import subprocess
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from common import (
    PROFILED,
    ROOT,
    SSEBENCH,
    Figure,
    NotMeasured,
    Result,
    bare_reference_run,
    cluster_problem,
    docker_problem,
    main,
    reference_image,
    run,
)
from equal_tasks import TINY_ROUNDS, write_equal_tasks
from k8s_common import BENCH_REGISTRY, bare_job

SCALE_SIZES = tuple(
    int(size) for size in os.environ.get("SSEBENCH_BENCH_SCALE_SIZES", "20,50").split(",")
)
JOBS = {"kubernetes": 10, "docker": 2}
# The tasks' IDs and dataset: scale-01 and on, so their images are this bench's only.
PREFIX = "scale"
_IMAGE = re.compile(rf"^(ssebench|{re.escape(BENCH_REGISTRY)})/.*/{PREFIX}-\d+:")
# The task container's requests on the cluster, unless SSEBENCH_K8S_RESOURCES says
# otherwise: the default (1 CPU) fits one run at a time on this machine's node of 2
# allocatable CPUs, so the bench measured the scheduler's queue, not the harness. These
# tasks are tiny (their hidden test is instant); real tasks need the default.
TINY_RESOURCES = json.dumps(
    {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"cpu": "1", "memory": "1Gi"}}
)


@dataclass(frozen=True)
class Evaluation:
    backend: str
    runs: int
    wall: float
    max_rss_mib: float
    profile: dict

    @property
    def runs_per_minute(self) -> float:
        return self.runs / self.wall * 60

    @property
    def probe_requests(self) -> int:
        """The NetworkPolicy probe's (once per namespace and hour, not per run): its
        two pods' requests, and the create of its policy."""
        found = [
            number
            for request, number in self.profile["requests"].items()
            if "<probe-target>" in request or "<probe-client>" in request
        ]
        return sum(found) + 1 if found else 0

    @property
    def requests_per_run(self) -> float:
        return (sum(self.profile["requests"].values()) - self.probe_requests) / self.runs


def runs_namespace() -> str:
    """The namespace the backend runs in, by its own reading of the environment."""
    from ssebench.backends.kubernetes.config import KubernetesSettings

    return KubernetesSettings.from_environment().namespace


class StatusWatch:
    """When the API server first had each run pod's task container started (running or
    ended), by a watch of the namespace's pods (kubectl, with the bench's own rights: the
    backend's Role grants no watch). Against the container's own start, this is the
    node's report; against when start() saw it, the backend's looks."""

    def __init__(self, pod_prefix: str) -> None:
        self.pod_prefix = pod_prefix
        self.reported: dict[str, tuple[float, float]] = {}  # pod: (started, reported)
        self.process = subprocess.Popen(
            ["kubectl", "get", "pods", "-n", runs_namespace(), "--watch", "-o", "json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        lines: list[str] = []
        for line in self.process.stdout:
            lines.append(line)
            if line.rstrip() != "}":  # kubectl ends each object with "}" in column 0
                continue
            now = time.time()
            with contextlib.suppress(ValueError, KeyError, TypeError):
                self._note(json.loads("".join(lines)), now)
            lines = []

    def _note(self, pod: dict, now: float) -> None:
        name = pod["metadata"]["name"]
        if not name.startswith(self.pod_prefix) or name in self.reported:
            return
        for status in pod["status"].get("containerStatuses") or []:
            state = status["state"]
            began = (state.get("running") or state.get("terminated") or {}).get("startedAt")
            if status["name"] == "task" and began:
                started = datetime.fromisoformat(began.replace("Z", "+00:00")).timestamp()
                self.reported[name] = (started, now)

    def stop(self) -> float | None:
        """The mean seconds from a task container's start to its report (None: no pod)."""
        self.process.terminate()
        self.process.wait()
        self.reader.join(10)
        delays = [reported - started for started, reported in self.reported.values()]
        return sum(delays) / len(delays) if delays else None


def settle(pod_prefix: str, seconds: float = 300.0) -> None:
    """Wait until the cluster has removed the evaluation's pods (ssebench run returns
    once the Job's deletion is asked, and the rest goes on in the background): on this
    machine that work shares the cores with the next evaluation, Docker's included."""
    namespace = runs_namespace()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        listed = subprocess.run(
            ["kubectl", "get", "pods", "-n", namespace, "-o", "name"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.split()
        if not any(name.removeprefix("pod/").startswith(pod_prefix) for name in listed):
            return
        time.sleep(2)
    print(f"  (pods of {pod_prefix}* still there after {seconds:.0f} s)", flush=True)


def evaluate(backend: str, dataset: Path, tasks: list[str], results: Path) -> Evaluation:
    """One `ssebench eval` of tasks on backend, in a process of its own, as a first
    evaluation of its images: with a cache folder of its own, so no kept answer of an
    image check (or of the NetworkPolicy probe) from an earlier one spares it a pod."""
    out = results / "profile.json"
    prefix = f"scale-{secrets.token_hex(3)}"
    argv = [
        *PROFILED,
        str(out),
        "eval",
        *("--backend", backend, "--prebuilt", "--dataset", str(dataset)),
        *("--tasks", *tasks, "--agent", "reference", "--jobs", str(JOBS[backend])),
        *("--results", str(results), "--run-id-prefix", prefix),
    ]
    env = {
        **os.environ,
        "SSEBENCH_REGISTRY": BENCH_REGISTRY,
        "XDG_CACHE_HOME": str(results / "cache"),
    }
    if backend == "kubernetes":
        env.setdefault("SSEBENCH_K8S_RESOURCES", TINY_RESOURCES)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT / "bench"), *filter(None, [env.get("PYTHONPATH")])]
    )
    pod_prefix = f"ssebench-{prefix}-"  # the run pods' names: ssebench-<run id>-...
    watch = StatusWatch(pod_prefix) if backend == "kubernetes" else None
    started = time.perf_counter()
    process = subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    assert process.stdout is not None
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    reported = watch.stop() if watch is not None else None
    if backend == "kubernetes":
        settle(pod_prefix)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise RuntimeError(f"eval on {backend} exited {process.returncode}: {output[-1500:]}")
    said = [line for line in output.splitlines() if line.startswith("report: ")]
    report = json.loads(Path(said[-1].removeprefix("report: ")).read_text())
    counts = report["counts"]
    if counts["passed"] != counts["total"] or counts["total"] != len(tasks):
        raise RuntimeError(f"eval on {backend}: not every run passed: {counts}")
    profile = json.loads(out.read_text())
    profile["grade"], profile["container"] = grade_seconds(results)
    profile["reported"] = reported
    # ru_maxrss is in KiB on Linux.
    return Evaluation(backend, len(tasks), wall, usage.ru_maxrss / 1024, profile)


def grade_seconds(results: Path) -> tuple[float, float]:
    """The grading steps' seconds of every run, and the container's own (from its
    entrypoint's start to the result), summed (their result.json)."""
    grade = container = 0.0
    for result in results.rglob("result.json"):
        document = json.loads(result.read_text())
        grade += sum(float(step.get("seconds") or 0) for step in document.get("steps") or [])
        with contextlib.suppress(KeyError, TypeError, ValueError):
            container += (
                datetime.fromisoformat(document["finished_at"])
                - datetime.fromisoformat(document["started_at"])
            ).total_seconds()
    return grade, container


def phases(found: Evaluation) -> str:
    """Where the time goes, per run (mean seconds of the runs, which overlap)."""
    seconds, runs = found.profile["seconds"], found.runs
    parts = {"prepare (image check)": seconds.get("prepare_images", 0.0)}
    if found.backend == "kubernetes":
        creates = sum(
            spent
            for request, spent in found.profile["request_seconds"].items()
            if request.startswith("POST ") and "/pods" not in request
        )
        pods = found.profile["pods"]
        parts["create (3 objects)"] = creates
        # From start()'s first look on, a chain that adds up to its wait: the pod's
        # timestamps are whole seconds (cut, not rounded), so each of the three middle
        # links is off by up to a second, the chain's sum is not.
        parts["pod made (Job controller)"] = sum(
            pod["created"] - pod["waited_from"] for pod in pods
        )
        parts["schedule (pod timestamps)"] = sum(pod["scheduled"] - pod["created"] for pod in pods)
        parts["start (containers)"] = sum(pod["started"] - pod["scheduled"] for pod in pods)
        parts["until start() saw it"] = sum(pod["seen"] - pod["started"] for pod in pods)
        if found.profile["reported"] is not None:
            # A mean already: times runs, as the parts are divided by them below.
            parts["of it, until the node reported it (a watch)"] = found.profile["reported"] * runs
        parts["start(), in all"] = seconds.get("start", 0.0)
    else:
        parts["copy of the patch"] = seconds.get("copy_from_image", 0.0)
        parts["start()"] = seconds.get("start", 0.0)
    # The container's own time, not wait's: on Kubernetes a tiny run is mostly over by
    # the time start() sees its container running (it looks every 2 s).
    parts["agent (container minus grade)"] = found.profile["container"] - found.profile["grade"]
    parts["grade (result.json steps)"] = found.profile["grade"]
    parts["wait()"] = seconds.get("wait", 0.0)
    parts["read-out"] = seconds.get("collect_results", 0.0)
    parts["delete"] = seconds.get("cleanup", 0.0)
    return ", ".join(f"{name} {value / runs:.2f} s" for name, value in parts.items())


def describe(found: Evaluation) -> str:
    line = (
        f"{found.runs} runs, --jobs {JOBS[found.backend]}: {found.wall:.1f} s, "
        f"{found.runs_per_minute:.1f} runs/min, peak RSS {found.max_rss_mib:.0f} MiB"
    )
    if found.backend == "kubernetes":
        line += f", {found.requests_per_run:.1f} API requests per run"
        if found.probe_requests:
            line += f" (and {found.probe_requests} of the NetworkPolicy probe, once)"
    return line


def measure() -> list[Result]:
    problem = docker_problem() or cluster_problem()
    if problem:
        return [NotMeasured("scale", problem)]
    small, large = SCALE_SIZES
    work = Path(tempfile.mkdtemp(prefix="ssebench-bench-scale-"))
    try:
        dataset = write_equal_tasks(work / "tiny", large, rounds=TINY_ROUNDS, prefix=PREFIX)
        task_ids = sorted(path.parent.name for path in dataset.glob("*/task.yaml"))
        publish(dataset)
        found: dict[tuple[str, int], Evaluation] = {}
        for count in (small, large):
            for backend in ("kubernetes", "docker"):
                results = work / f"{backend}-{count}"
                results.mkdir()
                found[backend, count] = evaluation = evaluate(
                    backend, dataset, task_ids[:count], results
                )
                print(f"  {backend}: {describe(evaluation)}", flush=True)
                print(f"    per run: {phases(evaluation)}", flush=True)
                requests = Counter(evaluation.profile["requests"])
                for request, number in requests.most_common(12):
                    print(f"      {number / count:6.2f}/run  {request}", flush=True)
        bare_jobs, bare_runs = platforms_alone(dataset, task_ids[:large], work / "alone")
    finally:
        shutil.rmtree(work, ignore_errors=True)
        remove_images()
    growth = [
        Figure(
            f"scale on {backend}, {small} to {large} runs",
            f"eval of {large}: {describe(found[backend, large])}",
            found[backend, large].wall,
            f"eval of {small} x {large / small:g}: {describe(found[backend, small])}",
            found[backend, small].wall * large / small,
            note="1.00x is linear growth; tiny equal tasks, reference agent, once each",
        )
        for backend in ("kubernetes", "docker")
    ]
    cluster, local = found["kubernetes", large], found["docker", large]
    throughput = Figure(
        f"(h) runs per minute, Kubernetes vs Docker, {large} runs",
        "Kubernetes --jobs 10",
        cluster.runs_per_minute,
        "Docker --jobs 2",
        local.runs_per_minute,
        unit="runs/min",
        note="goal >= 3x; the cluster is one node on this machine's cores",
    )
    alone = Figure(
        f"(h) the platforms alone, {large} runs",
        f"bare Jobs, {JOBS['kubernetes']} at a time",
        bare_jobs,
        f"bare docker runs, {JOBS['docker']} at a time",
        bare_runs,
        unit="runs/min",
        note="the same tasks' images without ssebench: what the goal's ratio is on this "
        "machine whoever drives the platforms",
    )
    return [*growth, throughput, alone]


def platforms_alone(dataset: Path, task_ids: list[str], work: Path) -> tuple[float, float]:
    """Runs per minute of the platforms without ssebench over task_ids, the same images:
    bare Jobs by hand (k8s_common.bare_job, kubectl), JOBS["kubernetes"] at a time, then
    bare `docker run`s (common.bare_reference_run), JOBS["docker"] at a time."""
    prefix = f"bench-h-{secrets.token_hex(3)}"
    (work / "jobs").mkdir(parents=True)

    def bare_job_of(task: str) -> None:
        image = reference_image(task, BENCH_REGISTRY)
        bare_job(work / "jobs", f"{prefix}-{task}", image, dataset / task / "reference.patch")

    def bare_run_of(task: str) -> None:
        image = reference_image(task, BENCH_REGISTRY)
        bare_reference_run(image, dataset / task / "reference.patch", work / "runs" / task)

    def runs_per_minute(action: Callable[[str], None], jobs: int) -> float:
        started = time.perf_counter()
        with ThreadPoolExecutor(jobs) as pool:
            list(pool.map(action, task_ids))
        return len(task_ids) * 60 / (time.perf_counter() - started)

    of_jobs = runs_per_minute(bare_job_of, JOBS["kubernetes"])
    settle(prefix)  # the Jobs' pods go in the background, on the cores the runs use
    return of_jobs, runs_per_minute(bare_run_of, JOBS["docker"])


def remove_images(seconds: float = 120.0) -> None:
    """The layers and published names of the tasks' images, which no one else uses. An
    image is refused while a container of it is left, as a deleted pod's can be for a
    little while after the pod is gone from the API: asked again until none is left."""
    deadline = time.monotonic() + seconds
    while True:
        listed = subprocess.run(
            ["docker", "images", "--format", "{{.Repository}}:{{.Tag}}"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.split()
        ours = [name for name in listed if _IMAGE.match(name)]
        if not ours:
            return
        if time.monotonic() > deadline:
            print(f"  ({len(ours)} of the tasks' images still there, e.g. {ours[0]})", flush=True)
            return
        subprocess.run(["docker", "image", "rm", *ours], capture_output=True, check=False)
        time.sleep(2)


def publish(dataset: Path) -> None:
    """Every task's reference image under BENCH_REGISTRY, in the local store."""
    run(
        [
            *(*SSEBENCH, "images", "publish", "--registry", BENCH_REGISTRY),
            *("--local", str(dataset), "--tasks", "all", "--agents", "reference"),
            *("--mode", "sandbox", "--load", "docker"),
        ],
        timeout=7200,
    )


if __name__ == "__main__":
    main(measure)
