"""Recorded truth (issue 14, item 6): a run whose read-out failed is an error, never a
grade, for the runner, `runs results`, eval and the web UI's catalog; a run stopped by
anyone (this runner's signal, `runs stop`, docker stop) is recorded as stopped."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from ssebench.agents import load_agent
from ssebench.errors import BackendError
from ssebench.evaluation.matrix import Limits, MatrixEntry
from ssebench.evaluation.recorded import recorded_grades
from ssebench.evaluation.scheduled_backend import RetryPolicy
from ssebench.evaluation.scheduler import Evaluation
from ssebench.extensions import RunHandle
from ssebench.runner import READOUT_FAILED, Runner, RunSettings
from ssebench.tasks import load_dataset
from ssebench.testing.fake import FakeBackend
from ssebench.webui.catalog import row
from tests.cli import ssebench
from tests.conftest import TINY_DATASET
from tests.polling import wait_until

READOUT_ERROR = "The archive of run-1 was not copied: more than 200000 entries"


class FailingReadout(FakeBackend):
    """The fake backend, whose container grades the run, and whose read-out then fails
    as the Docker archive copy or the Kubernetes collection can."""

    def collect_results(self, handle: RunHandle, dest: Path) -> None:
        raise BackendError(READOUT_ERROR, backend=self.name, run_id=handle.run_id)


class StoppedByAnother(FakeBackend):
    """The fake backend, whose run someone else stops while it runs, as `ssebench runs
    stop` does from another process: this runner's StopRequest never hears of it."""

    def wait(self, handle: RunHandle, timeout: float | None) -> int:
        # Once the container handles signals, as a run's entrypoint does from its start.
        wait_until(
            lambda: any("agent running" in line for line in self.logs(handle)),
            what="the fake agent to run",
        )
        self.stop(handle, 10)
        return super().wait(handle, timeout)


def settings(results: Path, agent: str = "dummy", run_id: str = "run-1") -> RunSettings:
    return RunSettings(
        task=load_dataset(TINY_DATASET).task("tiny-add"),
        agent=load_agent(agent),
        model=None,
        run_id=run_id,
        results_root=results,
        backend="fake",
    )


def read(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def test_a_failed_read_out_is_recorded_as_an_error_with_its_reason(tmp_path: Path) -> None:
    runner = Runner(FailingReadout(), out=io.StringIO())
    run_settings = settings(tmp_path)
    with pytest.raises(BackendError, match="not copied"):
        runner.run(run_settings, runner.prepare(run_settings))
    run_dir = tmp_path / "tiny-add" / "none" / "dummy" / "run-1"
    summary = read(run_dir / "summary.json")
    assert summary["status"] == "error"
    assert summary["error_msg"] == f"{READOUT_FAILED}: {READOUT_ERROR}"
    assert summary["grade"] == {"status": "error", "error_msg": summary["error_msg"]}
    # The container's own verdict is kept apart, for the record only.
    assert summary["evaluator_grade"]["status"] == "failed"
    assert read(run_dir / "result.json")["status"] == "error"
    assert summary["exit_code"] == 0  # the container itself ended normally


def test_results_eval_and_the_web_ui_count_it_as_an_error(tmp_path: Path) -> None:
    runner = Runner(FailingReadout(), out=io.StringIO())
    run_settings = settings(tmp_path)
    with pytest.raises(BackendError):
        runner.run(run_settings, runner.prepare(run_settings))
    # eval's resume: not a graded run, so it would be run again.
    assert recorded_grades(tmp_path, agent="dummy", model=None) == {}
    # runs results
    done = ssebench("runs", "results", "--dir", str(tmp_path), "--json")
    assert done.returncode == 0, done.stderr
    runs = json.loads(done.stdout)["runs"]
    assert [(run["run_id"], run["status"]) for run in runs] == [("run-1", "error")]
    # The web UI's catalog row.
    run_dir = tmp_path / "tiny-add" / "none" / "dummy" / "run-1"
    summary = read(run_dir / "summary.json")
    assert row_status(run_dir, summary) == "error"


def row_status(run_dir: Path, summary: dict[str, Any]) -> Any:
    from ssebench.webui.catalog import RunRecord

    record = RunRecord(run_id="run-1", run_dir=run_dir, summary=summary, live=None)
    return row(record)["status"]


def test_eval_counts_a_failed_read_out_as_an_error(tmp_path: Path) -> None:
    task = load_dataset(TINY_DATASET).task("tiny-add")
    job = Evaluation(
        FailingReadout(),
        [task],
        lambda run: settings(tmp_path, run_id="ev-readout-1"),
        entries=[MatrixEntry("dummy")],
        results_root=tmp_path,
        limits=Limits.for_jobs(1),
        retry=RetryPolicy(attempts=1, first_delay=0.01, max_delay=0.02),
        rerun=False,
        log=io.StringIO(),
    )
    job.run()
    (run,) = job.runs
    assert run.status == "error"
    assert run.error_msg is not None and READOUT_FAILED in run.error_msg
    report = job.report({})
    assert report["counts"]["error"] == 1 and report["counts"]["failed"] == 0


def test_a_run_stopped_by_another_process_is_recorded_as_stopped(tmp_path: Path) -> None:
    runner = Runner(StoppedByAnother(), out=io.StringIO())
    run_settings = settings(tmp_path, agent="sleeper")
    summary = runner.run(run_settings, runner.prepare(run_settings)).summary
    assert summary["exit_code"] == 143
    assert summary["grade"]["stopped"] is True
    assert summary["stopped"] is True


def test_a_run_nobody_stopped_is_not_recorded_as_stopped(tmp_path: Path) -> None:
    runner = Runner(FakeBackend(), out=io.StringIO())
    run_settings = settings(tmp_path)
    summary = runner.run(run_settings, runner.prepare(run_settings)).summary
    assert summary["status"] == "failed"
    assert summary["stopped"] is False and summary["grade"]["stopped"] is False
