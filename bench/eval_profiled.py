"""`ssebench eval` as the ssebench process of bench_scale.py, with its backend's calls
timed and, on Kubernetes, its API requests counted:

    python bench/eval_profiled.py OUT.json <ssebench eval arguments>

OUT.json gets, summed over the evaluation's runs: the seconds of each backend call
(prepare_images, copy_from_image, start, wait, collect_results, cleanup), how many
there were, and on Kubernetes the API requests by verb and path, the seconds of the
three creates of each run, and each run pod's scheduling and start (from the pod's own
timestamps, whole seconds) between the moments start() began to wait for it and saw it
started. The process is the evaluation itself (the CLI's main in
this process), so its peak memory is the evaluation's.
"""

from __future__ import annotations

import functools
import json
import sys
import threading
import time
from collections import Counter
from contextlib import ExitStack
from pathlib import Path
from typing import Any

PHASES = ("prepare_images", "copy_from_image", "start", "wait", "collect_results", "cleanup")


def profile(backend_class: type, seconds: dict[str, float], calls: Counter[str]) -> None:
    """Time every call of PHASES on backend_class (all threads)."""
    lock = threading.Lock()
    for name in PHASES:
        original = getattr(backend_class, name)

        def timed(*args: Any, __original: Any = original, __name: str = name, **kwargs: Any):
            started = time.perf_counter()
            try:
                return __original(*args, **kwargs)
            finally:
                with lock:
                    seconds[__name] = seconds.get(__name, 0.0) + time.perf_counter() - started
                    calls[__name] += 1

        setattr(backend_class, name, functools.wraps(original)(timed))


def pod_timestamps(pods: list[dict[str, float]]) -> None:
    """Keep each run pod's creation, scheduling and task start as the backend saw it
    when its task container had started, and when the backend began to wait for that
    (after the run's creates) and saw it (this machine's clock, as the cluster's is:
    the cluster runs on it)."""
    from ssebench.backends.kubernetes import manifests
    from ssebench.backends.kubernetes.backend import KubernetesBackend

    original = KubernetesBackend._wait_until_started

    def seen(self: Any, find_pod: Any, container: str, *args: Any, **kwargs: Any) -> Any:
        waited_from = time.time()
        pod = original(self, find_pod, container, *args, **kwargs)
        if container != manifests.TASK_CONTAINER:
            return pod
        seen_at = time.time()
        try:
            created = pod.metadata.creation_timestamp.timestamp()
            scheduled = next(
                c.last_transition_time.timestamp()
                for c in pod.status.conditions
                if c.type == "PodScheduled" and c.status == "True"
            )
            task = next(s for s in pod.status.container_statuses if s.name == container)
            state = task.state.running or task.state.terminated
            pods.append(
                {
                    "waited_from": waited_from,
                    "created": created,
                    "scheduled": scheduled,
                    "started": state.started_at.timestamp(),
                    "seen": seen_at,
                }
            )
        except (AttributeError, StopIteration, TypeError):
            pass
        return pod

    KubernetesBackend._wait_until_started = seen  # type: ignore[method-assign]


def main() -> int:
    out, arguments = Path(sys.argv[1]), sys.argv[2:]
    backend_name = arguments[arguments.index("--backend") + 1]
    seconds: dict[str, float] = {}
    calls: Counter[str] = Counter()
    pods: list[dict[str, float]] = []
    requests: Counter[str] = Counter()
    request_seconds: dict[str, float] = {}
    with ExitStack() as stack:
        if backend_name == "kubernetes":
            from k8s_common import counted_requests

            from ssebench.backends.kubernetes.backend import KubernetesBackend

            found, spent = stack.enter_context(counted_requests())
            requests, request_seconds = found, spent
            profile(KubernetesBackend, seconds, calls)
            pod_timestamps(pods)
        else:
            from ssebench.backends.docker.backend import DockerBackend

            profile(DockerBackend, seconds, calls)
        from ssebench.cli.main import main as ssebench

        code = ssebench(["eval", *arguments])
    out.write_text(
        json.dumps(
            {
                "exit_code": code,
                "seconds": seconds,
                "calls": dict(calls),
                "requests": dict(requests),
                "request_seconds": request_seconds,
                "pods": pods,
            }
        )
    )
    return code


if __name__ == "__main__":
    sys.exit(main())
