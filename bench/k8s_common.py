"""Runs on the Kubernetes backend, for the cluster benchmarks (d) and (e).

They need a cluster whose node uses this machine's Docker image store (k8s-local, or
kind after `kind load`), the kubernetes client, and `SSEBENCH_K8S_IMAGE_PULL_POLICY=Never`
where nothing can be pulled: the images are published into the local store under
BENCH_REGISTRY with `ssebench images publish --load local` (see docs/kubernetes.md).
"""

from __future__ import annotations

import os
import re
import secrets
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from common import PILOT

from ssebench.agents import load_agent
from ssebench.extensions import Backend
from ssebench.runner import Runner, RunSettings, StopRequest
from ssebench.tasks import load_dataset

TASK = os.environ.get("SSEBENCH_BENCH_K8S_TASK", "py-semver-prerelease")
# The benchmarks' prebuilt images are published under this registry, in the local store.
BENCH_REGISTRY = "ssebench-bench"
SSEBENCH = str(Path(sys.executable).with_name("ssebench"))


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
