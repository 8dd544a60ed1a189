"""(e) Kubernetes API requests per run: every HTTP request the client library makes
during one prebuilt reference run through the Runner, counted by verb and path; then
the same for a run that lasts LONG_RUN_SECONDS (the sleeper agent to its timeout), to
show what waiting for a run costs.

The baseline is what the kubectl commands that do the same by hand would send at
least: create the Secret, NetworkPolicy and Job; watch the pod to running and to the
task's exit; read the log; exec tar in the collector; delete the three objects.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common import Figure, NotMeasured, Result, cluster_problem, main

# create x3, watch x2, log, exec, delete x3
HAND_WRITTEN_MINIMUM = 10


# The long run: the sleeper agent until its timeout, to show what waiting costs.
LONG_RUN_SECONDS = 60


def measure() -> list[Result]:
    problem = cluster_problem()
    if problem:
        return [NotMeasured("(e) Kubernetes API calls per run", problem)]
    from k8s_common import pilot_run, publish_locally

    from ssebench.backends import load_backend

    publish_locally("reference", "sleeper")
    backend = load_backend("kubernetes")
    calls, status = counted(lambda results: pilot_run(backend, results))
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
            f"(e) Kubernetes API calls, {LONG_RUN_SECONDS} s run",
            f"one sleeper run to its timeout ({long_status})",
            long_calls,
            "hand-written kubectl minimum",
            HAND_WRITTEN_MINIMUM,
            unit="calls",
        ),
    ]


def counted(run: Callable[[Path], str]) -> tuple[int, str]:
    """The API requests of run (listed by verb and path), and the run's status."""
    from kubernetes.client import rest
    from kubernetes.stream import ws_client

    calls: Counter[str] = Counter()
    original_request = rest.RESTClientObject.request
    original_websocket = ws_client.WSClient.__init__

    def counted_request(self: Any, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        calls[f"{method} {re.sub(r'/ssebench-[^/?]+', '/<run>', url.split('?')[0])}"] += 1
        return original_request(self, method, url, *args, **kwargs)

    def counted_websocket(self: Any, configuration: Any, url: str, *args: Any, **kwargs: Any):
        calls[f"WEBSOCKET {re.sub(r'/ssebench-[^/?]+', '/<run>', url.split('?')[0])}"] += 1
        original_websocket(self, configuration, url, *args, **kwargs)

    rest.RESTClientObject.request = counted_request
    ws_client.WSClient.__init__ = counted_websocket
    results = Path(tempfile.mkdtemp(prefix="ssebench-bench-k8s-"))
    try:
        status = run(results)
    finally:
        rest.RESTClientObject.request = original_request
        ws_client.WSClient.__init__ = original_websocket
        shutil.rmtree(results, ignore_errors=True)
    for call, count in calls.most_common():
        print(f"    {count:4d}  {call}")
    return sum(calls.values()), status


if __name__ == "__main__":
    main(measure)
