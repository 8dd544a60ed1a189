from __future__ import annotations

import argparse
import dataclasses
import json
import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from ssebench import labels
from ssebench.cli import runs as runs_cli
from ssebench.cli.main import main
from ssebench.cli.runs import abandoned_reason
from ssebench.extensions import ProxyEndpoint, RunHandle, RunInfo
from ssebench.host.scratch import scratch_folder
from ssebench.proxy import MASTER_KEY_VARIABLE, ProxyClient
from tests.fixtures.litellm_admin_standin import litellm_standin


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


class PrunedBackend:
    """What prune calls of a backend: list_runs, stop, cleanup, remove_abandoned, proxy."""

    name = "stub"

    def __init__(self, runs: list[RunInfo], proxy: ProxyEndpoint | None) -> None:
        self.runs, self.endpoint = runs, proxy
        self.removed: list[str] = []

    def list_runs(self, selector: dict[str, str]) -> list[RunInfo]:
        return [run for run in self.runs if run.run_id not in self.removed]

    def stop(self, handle: RunHandle, grace: float) -> None:
        pass

    def cleanup(self, handle: RunHandle) -> None:
        self.removed.append(handle.run_id)

    def proxy(self) -> ProxyEndpoint | None:
        return self.endpoint

    def remove_abandoned(self, now: float, host: str) -> list[str]:
        return []


def prune(
    monkeypatch: pytest.MonkeyPatch, backend: PrunedBackend, capsys: pytest.CaptureFixture[str]
) -> tuple[int, dict[str, Any]]:
    monkeypatch.setattr(runs_cli, "_backend", lambda arguments: backend)
    # No results folder: the runs of killed runners are tests/unit/test_unrecorded_runs.py's.
    code = runs_cli.prune_command(
        argparse.Namespace(json=True, backend=None, dir="/nonexistent/ssebench-results")
    )
    return code, json.loads(capsys.readouterr().out)


def abandoned_run(run_id: str, **extra: str) -> RunInfo:
    """A run of this host whose runner is gone."""
    runner = {labels.RUNNER_HOST: socket.gethostname(), labels.RUNNER_PID: str(dead_pid())}
    return dataclasses.replace(
        run_with(**runner, **extra),
        run_id=run_id,
        handle=RunHandle(backend="stub", run_id=run_id, name=f"n-{run_id}"),
    )


MASTER = "sk-master-prune-0123"


def test_prune_revokes_the_key_of_a_run_whose_runner_died(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    with litellm_standin(MASTER, ["m"]) as proxy:
        key = ProxyClient(proxy.url, MASTER).generate_key("m", 1, "dead-1")
        endpoint = ProxyEndpoint(host_url=proxy.url, service_url="http://litellm:4000")
        backend = PrunedBackend(
            [
                abandoned_run("dead-1", **{labels.KEY_SHA256: key.hashed}),
                abandoned_run("dead-2", **{labels.KEY_SHA256: "0" * 64}),  # revoked already
                abandoned_run("dead-3"),  # no model
            ],
            endpoint,
        )
        monkeypatch.delenv(MASTER_KEY_VARIABLE, raising=False)
        code, report = prune(monkeypatch, backend, capsys)
        # Without the master key the runs with a key stay, so their key can still be found.
        assert code == 1 and backend.removed == ["dead-3"]
        assert {run["run_id"] for run in report["kept"]} == {"dead-1", "dead-2"}
        assert MASTER_KEY_VARIABLE in report["kept"][0]["reason"]
        assert proxy.keys, "the key is still there"
        monkeypatch.setenv(MASTER_KEY_VARIABLE, MASTER)
        code, report = prune(monkeypatch, backend, capsys)
        assert code == 0 and backend.removed == ["dead-3", "dead-1", "dead-2"]
        assert {run["run_id"]: run["key"] for run in report["removed"]} == {
            "dead-1": "revoked",
            "dead-2": "revoked already",
        }
        assert proxy.keys == {}, "the run's key is revoked"


def test_prune_removes_the_scratch_folders_of_dead_processes_only(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    dead = tmp_path / f"ssebench-case-pid{dead_pid()}-abc123"
    alive = tmp_path / f"ssebench-case-pid{os.getpid()}-def456"
    other = tmp_path / "ssebench-user-test-xyz"  # not a scratch folder
    for folder in (dead, alive, other):
        (folder / "sub").mkdir(parents=True)
    with scratch_folder("agent") as mine:
        assert mine.parent == tmp_path and mine.name.startswith(f"ssebench-agent-pid{os.getpid()}-")
        code, report = prune(monkeypatch, PrunedBackend([], None), capsys)
        assert mine.exists()
    assert code == 0 and report["folders"] == [str(dead)]
    assert not dead.exists() and alive.exists() and other.exists()


def test_prune_whose_reader_is_gone_removes_every_run_and_keeps_its_verdict(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`ssebench runs prune` in a terminal closed meanwhile: its first line used to raise
    BrokenPipeError, which left the other runs unpruned, and main said 0."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.delenv(MASTER_KEY_VARIABLE, raising=False)
    backend = PrunedBackend(
        [
            abandoned_run("dead-1", **{labels.KEY_SHA256: "0" * 64}),  # kept: no master key
            abandoned_run("dead-2"),
            abandoned_run("dead-3"),
        ],
        None,
    )
    monkeypatch.setattr(runs_cli, "_backend", lambda arguments: backend)
    reading, writing = os.pipe()
    os.close(reading)
    with os.fdopen(writing, "w", buffering=1) as terminal:  # line-buffered, as a terminal
        monkeypatch.setattr(sys, "stdout", terminal)
        monkeypatch.setattr(sys, "stderr", terminal)
        code = main(["runs", "prune"])
        assert sys.stdout is terminal and sys.stderr is terminal, "main gives them back"
    assert backend.removed == ["dead-2", "dead-3"]
    assert code == 1, "a kept run is still said by the exit status"
