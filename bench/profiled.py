"""An ssebench command (`run` or `eval`) with its backend's calls timed: the profile of
a figure (bench_scale.py's evaluations, the one more run of (a) and (g)):

    python bench/profiled.py OUT.json run|eval <its arguments>

OUT.json gets, summed over the command's runs: the seconds of each backend call
(prepare_images, copy_from_image, start, wait, collect_results, cleanup) and how many
there were. On Kubernetes also the seconds of the client's import and kubeconfig load
(as "client", inside the first call that needs the client), each run pod's scheduling
and start (from the pod's own timestamps, whole seconds) between the moments start()
began to wait for it and saw it started, and for `eval` the API requests by verb and
path and the seconds of the three creates of each run. (Counting the requests imports
the client before the command, so a run's profile does without: its client loads
where a run's does.) On Docker also the seconds the main thread waited on the platform,
by kind (MainThreadWaits), so that what is left of a run's wall time is ssebench's own
Python. The process is the command itself (the CLI's main in this process), so its
peak memory is the command's.
"""

from __future__ import annotations

import contextlib
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


class MainThreadWaits:
    """The seconds the main thread (the runner's path, the critical one of a `run`) spends
    waiting on the platform, by kind: the Engine API's answers ("requests", a streamed
    answer's chunks included, not the unpacking between them), processes ("processes":
    each started, written to and waited for: docker, iptables), the sleeps of its polls
    ("polls"), and threads it joins ("joins": Docker's removal begun beside the read-out).
    The rest of a run's wall time is ssebench's own Python. A call inside another timed
    one (subprocess.run's wait) counts once."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._depth = 0

    def timed(self, kind: str, function: Any) -> Any:
        @functools.wraps(function)
        def waiting(*args: Any, **kwargs: Any) -> Any:
            if threading.current_thread() is not threading.main_thread() or self._depth:
                return function(*args, **kwargs)
            self._depth += 1
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self._depth -= 1
                self.seconds[kind] = self.seconds.get(kind, 0.0) + time.perf_counter() - started

        return waiting

    def install(self) -> None:
        import subprocess

        from ssebench.backends.docker import engine

        engine.request = self.timed("requests", engine.request)
        engine.stream = self._stream(engine.stream)
        for method in ("__init__", "wait", "communicate"):
            original = getattr(subprocess.Popen, method)
            setattr(subprocess.Popen, method, self.timed("processes", original))
        threading.Thread.join = self.timed("joins", threading.Thread.join)  # type: ignore[method-assign]
        time.sleep = self.timed("polls", time.sleep)

    def _stream(self, stream: Any) -> Any:
        """engine.stream with its head's wait and each chunk's counted as requests."""

        @contextlib.contextmanager
        def timed_stream(*args: Any, **kwargs: Any) -> Any:
            with ExitStack() as stack:
                status, chunks = self.timed("requests", stack.enter_context)(
                    stream(*args, **kwargs)
                )
                yield status, self._timed_chunks(chunks)

        return timed_stream

    def _timed_chunks(self, chunks: Any) -> Any:
        next_chunk = self.timed("requests", next)
        while True:
            try:
                chunk = next_chunk(chunks)
            except StopIteration:
                return
            yield chunk


def client_loads(seconds: dict[str, float]) -> None:
    """Time the Kubernetes backend's client (its first use imports the `kubernetes`
    package and loads the kubeconfig) as "client", inside the call that first needs it."""
    from ssebench.backends.kubernetes import backend

    original = backend._api  # cached: only its first call loads anything

    def timed() -> Any:
        started = time.perf_counter()
        try:
            return original()
        finally:
            seconds["client"] = seconds.get("client", 0.0) + time.perf_counter() - started

    # The backend's modules look the function up by name when they call it.
    backend._api = timed  # type: ignore[assignment]


def main() -> int:
    out, arguments = Path(sys.argv[1]), sys.argv[2:]
    # Without --backend, Docker's, the default (SSEBENCH_BACKEND is not set by the bench).
    backend_name = "docker"
    if "--backend" in arguments:
        backend_name = arguments[arguments.index("--backend") + 1]
    seconds: dict[str, float] = {}
    calls: Counter[str] = Counter()
    pods: list[dict[str, float]] = []
    requests: Counter[str] = Counter()
    request_seconds: dict[str, float] = {}
    waits = MainThreadWaits()
    with ExitStack() as stack:
        if backend_name == "kubernetes":
            from ssebench.backends.kubernetes.backend import KubernetesBackend

            if arguments[0] == "eval":
                from k8s_common import counted_requests

                requests, request_seconds = stack.enter_context(counted_requests())
            profile(KubernetesBackend, seconds, calls)
            client_loads(seconds)
            pod_timestamps(pods)
        else:
            from ssebench.backends.docker.backend import DockerBackend

            profile(DockerBackend, seconds, calls)
            if arguments[0] == "run":  # an evaluation's runs are its workers' threads
                waits.install()
        from ssebench.cli.main import main as ssebench

        code = ssebench(arguments)
    out.write_text(
        json.dumps(
            {
                "exit_code": code,
                "seconds": seconds,
                "calls": dict(calls),
                "requests": dict(requests),
                "request_seconds": request_seconds,
                "pods": pods,
                "waits": waits.seconds,
            }
        )
    )
    return code


if __name__ == "__main__":
    sys.exit(main())
