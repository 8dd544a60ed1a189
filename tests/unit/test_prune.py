from __future__ import annotations

import os
import subprocess

from ssebench import labels
from ssebench.cli.runs import abandoned_reason
from ssebench.extensions import RunHandle, RunInfo


def run_with(**extra: str) -> RunInfo:
    return RunInfo(
        run_id="r",
        name="n",
        state="running",
        exit_code=None,
        image="i",
        labels={labels.RUN_ID: "r", **extra},
        created_at=None,
        handle=RunHandle(backend="x", run_id="r", name="n"),
    )


def dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def test_deadline_passed() -> None:
    run = run_with(**{labels.DEADLINE: "1000"})
    assert abandoned_reason(run, now=2000, host="h") == "its deadline passed"
    assert abandoned_reason(run, now=500, host="h") is None


def test_runner_gone_only_on_the_same_host() -> None:
    pid = str(dead_pid())
    run = run_with(**{labels.RUNNER_HOST: "h", labels.RUNNER_PID: pid})
    assert abandoned_reason(run, now=0, host="h") == f"its runner (process {pid}) is gone"
    assert abandoned_reason(run, now=0, host="other") is None
    alive = run_with(**{labels.RUNNER_HOST: "h", labels.RUNNER_PID: str(os.getpid())})
    assert abandoned_reason(alive, now=0, host="h") is None


def test_kept_runs_are_never_pruned() -> None:
    run = run_with(**{labels.KEEP: "true", labels.DEADLINE: "1"})
    assert abandoned_reason(run, now=2000, host="h") is None
