"""(d) Reading a run's results out of its pod (KubernetesBackend.collect_results, through
the API) vs `kubectl cp` of the same 500 MB.

A reference run goes through the Runner on the Kubernetes backend, with an image whose
agent first writes 500 MB of random data into its archive, then applies the reference
patch. Once the task container has exited, both read-outs copy the same files (the
results and the archive) out of the collector. Needs a cluster whose node uses the
local Docker image store (k8s-local, kind after `kind load`); without one it says why
it was not measured.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from common import Figure, NotMeasured, Result, cluster_problem, main

SIZE_MB = 500
BULK_FILE = "bench.bin"


def build_bulk_image() -> None:
    """The task's reference image, with an agent that first writes SIZE_MB into its
    archive; tagged with the name a prebuilt reference run under BENCH_REGISTRY uses."""
    import dataclasses

    from common import PILOT
    from k8s_common import BENCH_REGISTRY, TASK

    from ssebench.agents import load_agent
    from ssebench.backends.docker import DockerBackend
    from ssebench.extensions import prebuilt_images
    from ssebench.runner import image_request
    from ssebench.tasks import load_dataset

    request = image_request(load_dataset(PILOT).task(TASK), load_agent("reference"))
    base = DockerBackend(quiet_builds=True).prepare_images(request).run
    name = prebuilt_images(dataclasses.replace(request, registry=BENCH_REGISTRY, prebuilt=True)).run
    dockerfile = (
        f"FROM {base}\n"
        "RUN printf '#!/bin/sh\\n"
        f'head -c {SIZE_MB}M /dev/urandom > "$SSE_ARCHIVE/{BULK_FILE}"\\n'
        "exec /opt/ssebench/agent/run\\n' > /opt/ssebench/bulk-run"
        " && chmod 755 /opt/ssebench/bulk-run\n"
        'CMD ["/opt/ssebench/bulk-run"]\n'
    )
    subprocess.run(
        ["docker", "build", "-q", "-t", name, "-"],
        input=dockerfile,
        text=True,
        check=True,
        capture_output=True,
        timeout=600,
    )


def measure() -> list[Result]:
    problem = cluster_problem()
    if problem:
        return [NotMeasured(f"(d) Kubernetes read-out of {SIZE_MB} MB", problem)]
    from k8s_common import pilot_run

    from ssebench.backends import load_backend
    from ssebench.backends.kubernetes import manifests
    from ssebench.extensions import ARCHIVE_TARGET, RESULTS_TARGET, Backend, RunHandle

    inner = load_backend("kubernetes")
    timings: dict[str, float] = {}
    sizes: dict[str, int] = {}  # of the bulk file, as each read-out left it

    class Measured(type(inner)):  # type: ignore[misc]
        """The real backend; its read-out is timed against kubectl cp of the same data."""

        def collect_results(self, handle: RunHandle, dest: Path) -> None:
            namespace = handle.details.get("namespace") or self.namespace
            pod = self._pod(handle).metadata.name
            copy = Path(tempfile.mkdtemp(prefix="ssebench-bench-kcp-"))
            try:
                started = time.perf_counter()
                for source, target in ((RESULTS_TARGET, "results"), (ARCHIVE_TARGET, "archive")):
                    subprocess.run(
                        [
                            "kubectl",
                            "-n",
                            namespace,
                            "cp",
                            "-c",
                            manifests.COLLECTOR_CONTAINER,
                            f"{pod}:{source}",
                            str(copy / target),
                        ],
                        check=True,
                        capture_output=True,
                        timeout=1800,
                    )
                timings["kubectl"] = time.perf_counter() - started
                sizes["kubectl"] = (copy / "archive" / BULK_FILE).stat().st_size
            finally:
                shutil.rmtree(copy, ignore_errors=True)
            started = time.perf_counter()
            super().collect_results(handle, dest)
            timings["ssebench"] = time.perf_counter() - started
            sizes["ssebench"] = (dest / "archive" / BULK_FILE).stat().st_size

    build_bulk_image()
    backend: Backend = Measured()
    results = Path(tempfile.mkdtemp(prefix="ssebench-bench-k8s-"))
    try:
        pilot_run(backend, results)
    finally:
        shutil.rmtree(results, ignore_errors=True)
    if set(timings) != {"kubectl", "ssebench"}:
        return [NotMeasured(f"(d) Kubernetes read-out of {SIZE_MB} MB", "the run gave no results")]
    if set(sizes.values()) != {SIZE_MB << 20}:
        raise RuntimeError(f"a read-out is incomplete: {BULK_FILE} sizes {sizes}")
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
