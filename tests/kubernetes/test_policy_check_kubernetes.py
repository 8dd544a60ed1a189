"""The NetworkPolicy probe on the local cluster, which accepts policies and does not
enforce them (no policy plugin runs there), so the truth it must tell is "not enforced".
Its pods reach only each other. What it made is gone when it answers, and prune removes
what a probe killed half-way left."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from ssebench.backends.kubernetes import policy_check
from tests.cli import ssebench
from tests.kubernetes.cluster import Cluster
from tests.polling import wait_until

pytestmark = pytest.mark.kubernetes
PROBE_KINDS = "pods,networkpolicies"


def probe_objects(cluster: Cluster) -> list[str]:
    done = cluster.admin(
        "get", PROBE_KINDS, "-n", cluster.namespace, "-l", policy_check.PROBE_LABEL, "-o", "name"
    )
    return done.stdout.split()


def test_doctor_says_the_local_cluster_does_not_enforce_network_policy(cluster: Cluster) -> None:
    started = time.monotonic()
    done = ssebench(
        "doctor",
        "--backend",
        "kubernetes",
        "--probe-image",
        cluster.images["sleeper"],
        "--json",
        timeout=120,
    )
    seconds = time.monotonic() - started
    report = json.loads(done.stdout)
    (check,) = [item for item in report["checks"] if item["name"] == "network policy"]
    assert check["ok"] is False and check["required"] is False, check
    assert check["detail"].startswith(f"namespace {cluster.namespace}: not enforced"), check
    assert "network plugin" in check["fix"]
    assert seconds < 60, f"the probe took {seconds:.1f} s"
    # Its pods and policy are deleted before it answers (the policy with its owner).
    wait_until(lambda: probe_objects(cluster) == [], "the probe's objects to go", 30)


# A process that runs the probe and is killed once its target pod exists (fresh: an
# answer kept from an earlier probe would spare it the probe).
KILLED_PROBE = """
from ssebench.backends.kubernetes import policy_check
from ssebench.backends.kubernetes.config import KubernetesSettings
policy_check.cluster_enforces(KubernetesSettings.from_environment(), {image!r}, fresh=True)
"""


def test_prune_removes_what_a_killed_probe_left(cluster: Cluster) -> None:
    process = subprocess.Popen(
        [sys.executable, "-c", KILLED_PROBE.format(image=cluster.images["sleeper"])],
        env=os.environ.copy(),
    )
    try:
        wait_until(
            lambda: any("pod/" in name for name in probe_objects(cluster)),
            "the probe's target pod",
            60,
        )
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    assert probe_objects(cluster), "the killed probe left nothing to prune"
    pruned = ssebench("runs", "prune", "--backend", "kubernetes", "--json")
    assert pruned.returncode == 0, pruned.stderr
    removed = [item["name"] for item in json.loads(pruned.stdout)["removed"]]
    assert any(name.startswith("probe pod ssebench-probe-") for name in removed), removed
    wait_until(lambda: probe_objects(cluster) == [], "the killed probe's objects to go", 60)
