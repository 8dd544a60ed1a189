"""`eval --jobs 2` on the real daemon: while two runs run, their CPU limits together
stay within the machine's cores; once the short one has ended, the one left gets the
machine (backends/docker/cpu_shares.py; docs/evaluation.md, "CPUs")."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ssebench.backends.docker.containers import default_cpus
from ssebench.extensions import AGENT_LABEL, RUN_ID_LABEL
from tests.docker.conftest import new_run_id
from tests.docker.test_eval_matrix import eval_argv

pytestmark = pytest.mark.docker
TASK = "py-semver-prerelease"


def cpu_eval_argv(results: Path, prefix: str, timeout: int) -> list[str]:
    """`eval --jobs 2` of the reference agent and a sleeper on one task."""
    return eval_argv(
        results, prefix, "--tasks", TASK, "--agent", "reference", "--agent", "sleeper",
        "--rerun", "--timeout", str(timeout),
    )  # fmt: skip


def running_limits(prefix: str) -> dict[str, float]:
    """The CPU limit of each running container of the evaluation, by its agent."""
    names = subprocess.run(
        ["docker", "ps", "--filter", "label=ssebench.webui=true", "--format", "{{.Names}}"],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    if not names:
        return {}
    template = (
        f'{{{{index .Config.Labels "{RUN_ID_LABEL}"}}}} {{{{.State.Running}}}} '
        f'{{{{index .Config.Labels "{AGENT_LABEL}"}}}} {{{{.HostConfig.NanoCpus}}}}'
    )
    found = subprocess.run(
        ["docker", "inspect", "--format", template, *names], capture_output=True, text=True
    )  # a container may be gone between the two calls: what is left is still read
    limits = {}
    for line in found.stdout.splitlines():
        run_id, running, agent, nano_cpus = line.split()
        if run_id.startswith(prefix) and running == "true":
            limits[agent] = int(nano_cpus) / 1e9
    return limits


def test_the_run_left_alone_gets_the_machine(tmp_path: Path) -> None:
    cores = os.cpu_count() or 1
    alone, together = float(default_cpus(cores, 1)), float(default_cpus(cores, 2))
    assert alone > together, f"needs a machine of 2 cores or more, this one has {cores}"
    env = {**os.environ, "SSEBENCH_DOCKER_CPUS": ""}
    # First the images of both agents, so that both runs start at once below.
    warm = subprocess.run(
        cpu_eval_argv(tmp_path / "warm", new_run_id("cpuw"), 1),
        capture_output=True, text=True, timeout=900, env=env,
    )  # fmt: skip
    assert "report: " in warm.stdout, warm.stderr[-3000:]
    prefix = new_run_id("cpus")
    process = subprocess.Popen(
        cpu_eval_argv(tmp_path / "results", prefix, 30),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    seen: list[dict[str, float]] = []
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and process.poll() is None:
            limits = running_limits(prefix)
            seen.append(limits)
            if set(limits) == {"sleeper"} and limits["sleeper"] == alone:
                break
            time.sleep(0.3)
        both = [limits for limits in seen if len(limits) == 2]
        assert both, f"the two runs were never seen running together: {seen[-20:]}"
        # Together, within the cores: a share each, never the whole machine each.
        assert all(sum(limits.values()) <= cores + 0.01 for limits in both), both
        assert all(limits["sleeper"] == together for limits in both), both
        # The reference run has ended; the sleeper, still running, has the machine.
        assert seen[-1] == {"sleeper": alone}, seen[-20:]
        stdout, stderr = process.communicate(timeout=300)  # the sleeper's timeout
        assert "report: " in stdout, stderr[-3000:]
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
            subprocess.run(  # what the killed evaluation left
                [sys.executable, "-m", "ssebench.cli.main", "runs", "prune"], capture_output=True
            )
