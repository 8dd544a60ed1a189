"""(e) Kubernetes API requests per run: every HTTP request the client library makes
during one prebuilt reference run through the Runner, counted by verb and path.

The baseline is what the kubectl commands that do the same by hand would send at
least: create the Secret, NetworkPolicy and Job; watch the pod to running and to the
task's exit; read the log; exec tar in the collector; delete the three objects.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from common import Figure, NotMeasured, Result, cluster_problem, main

# create x3, watch x2, log, exec, delete x3
HAND_WRITTEN_MINIMUM = 10


def measure() -> list[Result]:
    problem = cluster_problem()
    if problem:
        return [NotMeasured("(e) Kubernetes API calls per run", problem)]
    from k8s_common import reference_run
    from kubernetes.client import rest
    from kubernetes.stream import ws_client

    from ssebench.backends import load_backend

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
        status = reference_run(load_backend("kubernetes"), results)
    finally:
        rest.RESTClientObject.request = original_request
        ws_client.WSClient.__init__ = original_websocket
        shutil.rmtree(results, ignore_errors=True)
    total = sum(calls.values())
    for call, count in calls.most_common():
        print(f"    {count:4d}  {call}")
    return [
        Figure(
            "(e) Kubernetes API calls per run",
            f"one reference run ({status})",
            total,
            "hand-written kubectl minimum",
            HAND_WRITTEN_MINIMUM,
            unit="calls",
        )
    ]


if __name__ == "__main__":
    main(measure)
