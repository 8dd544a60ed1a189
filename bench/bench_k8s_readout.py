"""(d) Reading a run's results out of its pod (KubernetesBackend.collect_results, through
the API) vs `kubectl cp` of the same 500 MB.

A reference run goes through the Runner on the Kubernetes backend; when its task
container has exited, 500 MB of random data is written next to the results in the
run's results volume (by an ephemeral container), then both read-outs copy the same
files. Needs a cluster; without
one it says why it was not measured.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from common import Figure, NotMeasured, Result, cluster_problem, main

SIZE_MB = 500


def fill_results(namespace: str, pod: Any) -> None:
    """Write SIZE_MB of random data into the run's results volume.

    The collector mounts it read-only and the task container has exited, so an
    ephemeral container of the run's own image (on the node already) mounts it
    writable, writes the file and exits.
    """
    from kubernetes import client
    from ssebench.backends.kubernetes import manifests
    from ssebench.extensions import RESULTS_TARGET

    api = client.CoreV1Api()
    name = f"bench-fill-{int(time.time())}"
    image = pod.spec.containers[0].image
    body = {
        "spec": {
            "ephemeralContainers": [
                {
                    "name": name,
                    "image": image,
                    "command": [
                        "sh",
                        "-c",
                        f"head -c {SIZE_MB}M /dev/urandom > {RESULTS_TARGET}/bench.bin",
                    ],
                    "securityContext": {"runAsUser": 0},
                    "volumeMounts": [
                        {"name": manifests.RESULTS_VOLUME, "mountPath": RESULTS_TARGET}
                    ],
                }
            ]
        }
    }
    api.patch_namespaced_pod_ephemeralcontainers(pod.metadata.name, namespace, body)
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline:
        current = api.read_namespaced_pod(pod.metadata.name, namespace)
        for status in current.status.ephemeral_container_statuses or []:
            if status.name == name and status.state.terminated is not None:
                if status.state.terminated.exit_code != 0:
                    raise RuntimeError(f"writing the data failed: {status.state.terminated}")
                return
        time.sleep(1)
    raise RuntimeError("writing the data did not finish in 900 s")


def measure() -> list[Result]:
    problem = cluster_problem()
    if problem:
        return [NotMeasured(f"(d) Kubernetes read-out of {SIZE_MB} MB", problem)]
    from k8s_common import reference_run

    from ssebench.backends import load_backend
    from ssebench.backends.kubernetes import manifests
    from ssebench.extensions import RESULTS_TARGET, Backend, RunHandle

    inner = load_backend("kubernetes")
    timings: dict[str, float] = {}

    class Measured(type(inner)):  # type: ignore[misc]
        """The real backend; its read-out is timed against kubectl cp of the same data."""

        def collect_results(self, handle: RunHandle, dest: Path) -> None:
            namespace = handle.details.get("namespace") or self.namespace
            pod = self._pod(handle).metadata.name
            fill_results(namespace, self._pod(handle))
            copy = Path(tempfile.mkdtemp(prefix="ssebench-bench-kcp-"))
            try:
                started = time.perf_counter()
                subprocess.run(
                    [
                        "kubectl",
                        "-n",
                        namespace,
                        "cp",
                        "-c",
                        manifests.COLLECTOR_CONTAINER,
                        f"{pod}:{RESULTS_TARGET}",
                        str(copy / "results"),
                    ],
                    check=True,
                    capture_output=True,
                    timeout=1800,
                )
                timings["kubectl"] = time.perf_counter() - started
            finally:
                shutil.rmtree(copy, ignore_errors=True)
            started = time.perf_counter()
            super().collect_results(handle, dest)
            timings["ssebench"] = time.perf_counter() - started

    backend: Backend = Measured()
    results = Path(tempfile.mkdtemp(prefix="ssebench-bench-k8s-"))
    try:
        reference_run(backend, results)
    finally:
        shutil.rmtree(results, ignore_errors=True)
    if set(timings) != {"kubectl", "ssebench"}:
        return [NotMeasured(f"(d) Kubernetes read-out of {SIZE_MB} MB", "the run gave no results")]
    return [
        Figure(
            f"(d) Kubernetes read-out of {SIZE_MB} MB",
            "KubernetesBackend.collect_results",
            timings["ssebench"],
            "kubectl cp",
            timings["kubectl"],
        )
    ]


if __name__ == "__main__":
    main(measure)
