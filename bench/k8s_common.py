"""Runs on the Kubernetes backend, for the cluster benchmarks (d) and (e), and the bare
Job by hand that (g) and the scale bench compare with.

They need a cluster whose node uses this machine's Docker image store (k8s-local, or
kind after `kind load`), the kubernetes client, and `SSEBENCH_K8S_IMAGE_PULL_POLICY=Never`
where nothing can be pulled: the images are published into the local store under
BENCH_REGISTRY with `ssebench images publish --load local` (see docs/kubernetes.md).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from common import PILOT, reference_run_env, run

from ssebench.agents import load_agent
from ssebench.backends.kubernetes.config import KubernetesSettings
from ssebench.extensions import (
    ARCHIVE_TARGET,
    REFERENCE_PATCH_TARGET,
    RESULTS_TARGET,
    Backend,
)
from ssebench.runner import Runner, RunSettings
from ssebench.stopping import StopRequest
from ssebench.tasks import load_dataset

TASK = os.environ.get("SSEBENCH_BENCH_K8S_TASK", "py-semver-prerelease")
# The benchmarks' prebuilt images are published under this registry, in the local store.
BENCH_REGISTRY = "ssebench-bench"
SSEBENCH = str(Path(sys.executable).with_name("ssebench"))
# The bare Job's container prints this line, then result.json.
RESULT_MARK = "--- result.json ---"
# The image's entrypoint and command, then the result for `kubectl logs`.
BARE_COMMAND = (
    "python3 /opt/ssebench/bin/ssebench-entrypoint /opt/ssebench/agent/run; "
    f"echo '{RESULT_MARK}'; cat {RESULTS_TARGET}/result.json"
)


@contextmanager
def bench_registry() -> Iterator[None]:
    """SSEBENCH_REGISTRY is BENCH_REGISTRY within, as the backend reads it."""
    before = os.environ.get("SSEBENCH_REGISTRY")
    os.environ["SSEBENCH_REGISTRY"] = BENCH_REGISTRY
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("SSEBENCH_REGISTRY", None)
        else:
            os.environ["SSEBENCH_REGISTRY"] = before


def pilot_run(
    backend: Backend, results: Path, agent: str = "reference", timeout: int = 3600
) -> str:
    """Carry out one prebuilt run of TASK through the Runner; return its status."""
    settings = RunSettings(
        task=load_dataset(PILOT).task(TASK),
        agent=load_agent(agent),
        model=None,
        run_id=f"bench-{secrets.token_hex(4)}",
        results_root=results,
        backend=backend.name,
        timeout=timeout,
        prebuilt=True,
        registry=BENCH_REGISTRY,
    )
    runner = Runner(backend)
    with bench_registry():
        outcome = runner.run(settings, runner.prepare(settings), StopRequest())
    return outcome.status


@contextmanager
def counted_requests() -> Iterator[tuple[Counter[str], dict[str, float]]]:
    """Every Kubernetes API request of the client library within, by verb and path (run
    names as <run>): HTTP requests and exec websockets; and the seconds of the HTTP
    requests by verb and path, summed."""
    from kubernetes.client import rest
    from kubernetes.stream import ws_client

    calls: Counter[str] = Counter()
    seconds: dict[str, float] = {}
    lock = threading.Lock()
    original_request = rest.RESTClientObject.request
    original_websocket = ws_client.WSClient.__init__

    def key(method: str, url: str) -> str:
        path = re.sub(r"/ssebench-probe-[0-9a-f]+-(\w+)", r"/<probe-\1>", url.split("?")[0])
        return f"{method} {re.sub(r'/ssebench-[^/?]+', '/<run>', path)}"

    def counted_request(self: Any, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return original_request(self, method, url, *args, **kwargs)
        finally:
            with lock:
                calls[key(method, url)] += 1
                spent = time.perf_counter() - started
                seconds[key(method, url)] = seconds.get(key(method, url), 0.0) + spent

    def counted_websocket(self: Any, configuration: Any, url: str, *args: Any, **kwargs: Any):
        with lock:
            calls[key("WEBSOCKET", url)] += 1
        original_websocket(self, configuration, url, *args, **kwargs)

    rest.RESTClientObject.request = counted_request
    ws_client.WSClient.__init__ = counted_websocket
    try:
        yield calls, seconds
    finally:
        rest.RESTClientObject.request = original_request
        ws_client.WSClient.__init__ = original_websocket


def graded_at(result: dict[str, object]) -> float:
    """When the container wrote the grade (its clock is this machine's)."""
    return datetime.fromisoformat(str(result["finished_at"])).timestamp()


def reference_volumes(secret: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The task container's mounts and the pod's volumes of a reference run's Job by
    hand: the results and the archive in emptyDirs, as the runner's Job has them, and
    the reference patch from the Secret secret (its key "patch")."""
    folder, _, patch_name = REFERENCE_PATCH_TARGET.rpartition("/")
    mounts = [
        {"name": "results", "mountPath": RESULTS_TARGET},
        {"name": "archive", "mountPath": ARCHIVE_TARGET},
        {"name": "reference", "mountPath": folder, "readOnly": True},
    ]
    reference = {"secretName": secret, "items": [{"key": "patch", "path": patch_name}]}
    volumes = [
        {"name": "results", "emptyDir": {}},
        {"name": "archive", "emptyDir": {}},
        {"name": "reference", "secret": reference},
    ]
    return mounts, volumes


def bare_job(work: Path, name: str, image: str, patch: Path) -> tuple[float, float]:
    """Wall seconds of a reference run's work (patch its reference patch) as a bare Job
    made, watched and removed with kubectl, and the seconds from its grade to the end of
    that: a Secret with the patch, a Job of image with the environment and volumes the
    runner gives a run, whose container prints result.json at its end, `kubectl wait`
    for the Job to complete, `kubectl logs` to read the result, and `kubectl delete
    --wait=false` of both."""
    settings = KubernetesSettings.from_environment()
    kubectl = ["kubectl", "-n", settings.namespace]
    mounts, volumes = reference_volumes(name)
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
                            "volumeMounts": mounts,
                        }
                    ],
                    "volumes": volumes,
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
                f"--from-file=patch={patch}",
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
