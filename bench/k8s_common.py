"""A reference run on the Kubernetes backend, for the cluster benchmarks (d) and (e).

It needs a cluster (KUBECONFIG), the kubernetes client, and the prebuilt image of the
task under $SSEBENCH_REGISTRY where the nodes can pull it (see docs/kubernetes.md).
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from common import PILOT

from ssebench.agents import load_agent
from ssebench.extensions import Backend
from ssebench.runner import Runner, RunSettings, StopRequest
from ssebench.tasks import load_dataset

TASK = os.environ.get("SSEBENCH_BENCH_K8S_TASK", "py-semver-prerelease")


def reference_run(backend: Backend, results: Path) -> str:
    """Carry out one prebuilt reference run through the Runner; return its status."""
    settings = RunSettings(
        task=load_dataset(PILOT).task(TASK),
        agent=load_agent("reference"),
        model=None,
        run_id=f"bench-{secrets.token_hex(4)}",
        results_root=results,
        backend=backend.name,
        prebuilt=True,
        registry=os.environ.get("SSEBENCH_REGISTRY") or "ssebench",
    )
    runner = Runner(backend)
    outcome = runner.run(settings, runner.prepare(settings), StopRequest())
    return outcome.status
