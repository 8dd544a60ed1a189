"""(e) Kubernetes API requests per run: every HTTP request the client library makes
during one prebuilt reference run through the Runner, counted by verb and path; then
the same for a run that lasts LONG_RUN_SECONDS (the sleeper agent to its timeout), to
show what waiting for a run costs.

The baseline is what the kubectl commands that do the same by hand would send at
least: create the Secret, NetworkPolicy and Job; watch the pod to running and to the
task's exit; read the log; exec tar in the collector; delete the three objects.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from common import Figure, NotMeasured, Result, cluster_problem, main, publish_locally

# create x3, watch x2, log, exec, delete x3
HAND_WRITTEN_MINIMUM = 10


# The long run: the sleeper agent until its timeout, to show what waiting costs.
LONG_RUN_SECONDS = 60


def measure() -> list[Result]:
    problem = cluster_problem()
    if problem:
        return [NotMeasured("(e) Kubernetes API calls per run", problem)]
    from k8s_common import BENCH_REGISTRY, TASK, pilot_run

    from ssebench.backends import load_backend

    publish_locally(BENCH_REGISTRY, TASK, "reference", "sleeper")
    backend = load_backend("kubernetes")
    forget_image_checks()
    calls, status = counted(lambda results: pilot_run(backend, results))
    forget_image_checks(kept=True)  # as the next process finds them
    kept_calls, kept_status = counted(lambda results: pilot_run(backend, results))
    long_calls, long_status = counted(
        lambda results: pilot_run(backend, results, "sleeper", timeout=LONG_RUN_SECONDS)
    )
    return [
        Figure(
            "(e) Kubernetes API calls per run",
            f"one reference run ({status})",
            calls,
            "hand-written kubectl minimum",
            HAND_WRITTEN_MINIMUM,
            unit="calls",
        ),
        Figure(
            "(e) Kubernetes API calls per run, image check kept",
            f"one reference run, the image check's answer kept ({kept_status})",
            kept_calls,
            "hand-written kubectl minimum",
            HAND_WRITTEN_MINIMUM,
            unit="calls",
        ),
        Figure(
            f"(e) Kubernetes API calls, {LONG_RUN_SECONDS} s run",
            f"one sleeper run to its timeout ({long_status})",
            long_calls,
            "hand-written kubectl minimum",
            HAND_WRITTEN_MINIMUM,
            unit="calls",
        ),
    ]


def forget_image_checks(*, kept: bool = False) -> None:
    """The first run of an image in a process checks it with a pod, unless a node's
    answer is kept in the user's cache folder: drop this process's answers (and the
    reference patches its checks read out) and, unless kept, the kept answers about the
    bench's reference image, so that the run pays the check as the first run of an image
    does."""
    from k8s_common import BENCH_REGISTRY, TASK

    from ssebench.backends.kubernetes import backend, image_check

    backend._present_images.clear()
    if kept:
        return
    folder = image_check.answer_file("", backend.KubernetesBackend().settings, "").parent
    for answer in folder.glob("*.json"):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            image = json.loads(answer.read_text()).get("image", "")
            if image.startswith(f"{BENCH_REGISTRY}/agent-reference/{TASK}:"):
                answer.unlink()


def counted(run: Callable[[Path], str]) -> tuple[int, str]:
    """The API requests of run (listed by verb and path), and the run's status."""
    from k8s_common import counted_requests

    results = Path(tempfile.mkdtemp(prefix="ssebench-bench-k8s-"))
    try:
        with counted_requests() as (calls, _):
            status = run(results)
    finally:
        shutil.rmtree(results, ignore_errors=True)
    for call, count in calls.most_common():
        print(f"    {count:4d}  {call}")
    return sum(calls.values()), status


if __name__ == "__main__":
    main(measure)
