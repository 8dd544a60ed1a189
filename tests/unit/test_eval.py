"""`ssebench eval` with the fake backend: scheduling, limits, resume, retries, the report
and signals. The CLI tests run the real command in a subprocess."""

from __future__ import annotations

import dataclasses
import io
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ssebench.agents import load_agent
from ssebench.cli.eval_display import Progress
from ssebench.errors import BackendError, ImageUnavailableError, UserError
from ssebench.evaluation.matrix import Limits, MatrixEntry, TaskRun, default_jobs
from ssebench.evaluation.recorded import recorded_grades
from ssebench.evaluation.scheduled_backend import RetryPolicy, is_transient
from ssebench.evaluation.scheduler import Evaluation
from ssebench.extensions import ImageRequest, Images, RunHandle, RunSpec
from ssebench.proxy.keys import RunKey, Spend
from ssebench.runner import RunSettings
from ssebench.tasks import Task, load_dataset
from ssebench.testing.fake import FakeBackend, state_root
from tests.cli import ssebench_with_reader_gone
from tests.conftest import TINY_DATASET

TINY_TASKS = [task.id for task in load_dataset(TINY_DATASET).tasks]


def ssebench(
    *arguments: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ssebench.cli.main", *arguments],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


def eval_arguments(results: Path, agent: str = "reference", *extra: str) -> list[str]:
    return [
        "eval",
        "--backend",
        "fake",
        "--dataset",
        str(TINY_DATASET),
        "--agent",
        agent,
        "--results",
        str(results),
        *extra,
    ]


def report_of(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("report: "), done.stdout
    report: dict[str, Any] = json.loads(Path(last.removeprefix("report: ")).read_text())
    return report


def fake_runs_left(results: Path) -> list[dict[str, Any]]:
    """The fake backend's runs whose run directory is under results (the fake state is
    shared by the whole test session)."""
    done = ssebench("runs", "list", "--backend", "fake", "--json")
    assert done.returncode == 0, done.stderr
    runs: list[dict[str, Any]] = json.loads(done.stdout)["runs"]
    return [
        run for run in runs if run["labels"].get("ssebench.results", "").startswith(str(results))
    ]


# -- the command ---------------------------------------------------------------------


def test_eval_runs_every_task_and_writes_the_report(tmp_path: Path) -> None:
    done = ssebench(*eval_arguments(tmp_path / "results", "reference", "--jobs", "2"))
    assert done.returncode == 0, done.stderr
    report = report_of(done)
    assert report["schema"] == 2
    assert report["command"] == "eval"
    assert report["dataset"] == {"name": "tiny", "version": "1", "path": str(TINY_DATASET)}
    assert report["matrix"] == [{"agent": "reference", "model": "none"}]
    assert (report["attempts"], report["backend"]) == (1, "fake")
    assert report["interrupted"] is False
    assert report["limits"]["jobs"] == 2
    assert report["counts"] == {
        "total": 2,
        "passed": 2,
        "failed": 0,
        "error": 0,
        "stopped": 0,
        "not_run": 0,
        "skipped": 0,
    }
    assert [task["task"] for task in report["runs"]] == TINY_TASKS
    for task in report["runs"]:
        assert set(task) == {
            "task",
            "agent",
            "model",
            "attempt",
            "state",
            "status",
            "skipped",
            "run_id",
            "run_dir",
            "error_msg",
            "start_attempts",
            "start_retries",
            "seconds",
            "spend",
        }
        assert task["status"] == "passed" and task["start_attempts"] == 1
        summary = json.loads((Path(task["run_dir"]) / "summary.json").read_text())
        assert summary["run_id"] == task["run_id"] and summary["task"] == task["task"]
        assert summary["config"]["backend"] == "fake"
    assert Path(report["log"]).read_text().count("fake: graded passed") == 2
    # Progress goes to stderr, the table and the report's path to stdout.
    assert "ssebench eval: passed" in done.stderr
    assert done.stdout.splitlines()[0].split()[:5] == [
        "TASK",
        "AGENT",
        "MODEL",
        "ATTEMPT",
        "STATUS",
    ]
    (entry,) = report["entries"]
    assert entry["resolved_rate"]["value"] == 1.0 and entry["counts"]["passed"] == 2
    assert fake_runs_left(tmp_path) == []


def test_eval_again_skips_graded_tasks_and_rerun_runs_them(tmp_path: Path) -> None:
    results = tmp_path / "results"
    first = report_of(ssebench(*eval_arguments(results)))
    second_done = ssebench(*eval_arguments(results))
    assert second_done.returncode == 0, second_done.stderr
    second = report_of(second_done)
    assert second["counts"]["skipped"] == 2 and second["counts"]["passed"] == 2
    assert [task["run_id"] for task in second["runs"]] == [task["run_id"] for task in first["runs"]]
    assert all(task["skipped"] for task in second["runs"])
    assert "recorded before" in second_done.stdout
    third = report_of(ssebench(*eval_arguments(results, "reference", "--rerun")))
    assert third["counts"]["skipped"] == 0 and third["counts"]["passed"] == 2
    assert {task["run_id"] for task in third["runs"]}.isdisjoint(
        task["run_id"] for task in first["runs"]
    )
    # Another agent has no grades yet: nothing skipped.
    dummy = report_of(ssebench(*eval_arguments(results, "dummy")))
    assert dummy["counts"]["failed"] == 2 and dummy["counts"]["skipped"] == 0


def test_eval_selects_tasks_and_prefixes_run_ids(tmp_path: Path) -> None:
    done = ssebench(
        *eval_arguments(tmp_path / "r", "reference", "--tasks", "tiny-mul", "--run-id-prefix", "p1")
    )
    report = report_of(done)
    assert [task["task"] for task in report["runs"]] == ["tiny-mul"]
    assert report["runs"][0]["run_id"].startswith("p1-")


def test_eval_report_option_names_the_file(tmp_path: Path) -> None:
    report_file = tmp_path / "out" / "report.json"
    done = ssebench(*eval_arguments(tmp_path / "r", "reference", "--report", str(report_file)))
    assert done.returncode == 0, done.stderr
    assert json.loads(report_file.read_text())["counts"]["passed"] == 2


def test_require_pass(tmp_path: Path) -> None:
    assert ssebench(*eval_arguments(tmp_path / "r", "dummy", "--require-pass")).returncode == 1
    assert ssebench(*eval_arguments(tmp_path / "r", "reference", "--require-pass")).returncode == 0


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (["--jobs", "0"], "--jobs must be at least 1"),
        (["--max-starting", "0"], "--max-starting must be at least 1"),
        (["--start-attempts", "0"], "--start-attempts must be at least 1"),
        (["--tasks", "nope"], "No task 'nope'"),
        (["--run-id-prefix", "bad/prefix"], "Invalid run ID"),
        (["--agent", "nope"], "Unknown agent 'nope'"),
        (["--timeout", "0"], "--timeout must be a positive number"),
    ],
)
def test_bad_input_is_one_line(tmp_path: Path, extra: list[str], expected: str) -> None:
    done = ssebench(*eval_arguments(tmp_path / "r"), *extra)
    assert done.returncode == 1, done
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], lines


def test_sigint_stops_records_and_a_second_invocation_finishes(tmp_path: Path) -> None:
    results = tmp_path / "results"
    process = subprocess.Popen(
        [sys.executable, "-m", "ssebench.cli.main", *eval_arguments(results, "sleeper")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ},
    )
    # --jobs defaults to the cores; the fake backend's runs sleep until stopped.
    deadline = time.monotonic() + 30
    while not list(results.glob("*/none/sleeper/*/archive")):
        assert time.monotonic() < deadline, "no run started"
        time.sleep(0.05)
    time.sleep(0.5)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert "SIGINT: stopping the running runs" in stderr
    report = json.loads(Path(stdout.strip().splitlines()[-1].removeprefix("report: ")).read_text())
    assert report["interrupted"] is True
    statuses = [task["status"] for task in report["runs"]]
    assert "stopped" in statuses and set(statuses) <= {"stopped", "not_run"}
    for task in report["runs"]:
        if task["status"] == "stopped":
            summary = json.loads((Path(task["run_dir"]) / "summary.json").read_text())
            assert summary["stopped"] is True and summary["exit_code"] == 143
    assert fake_runs_left(results) == []
    # A stopped run is no grade: the second invocation runs every task again.
    done = ssebench(*eval_arguments(results, "sleeper"), env={"SSEBENCH_FAKE_BEHAVIOUR": "pass"})
    second = report_of(done)
    assert second["counts"]["passed"] == 2 and second["counts"]["skipped"] == 0
    assert fake_runs_left(results) == []


def test_sigint_with_one_job_leaves_the_queued_task_not_run(tmp_path: Path) -> None:
    results = tmp_path / "results"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ssebench.cli.main",
            *eval_arguments(results, "sleeper", "--jobs", "1"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    while not list(results.glob("*/none/sleeper/*/archive")):
        assert time.monotonic() < deadline, "no run started"
        time.sleep(0.05)
    time.sleep(0.3)
    process.send_signal(signal.SIGTERM)
    stdout, _ = process.communicate(timeout=60)
    assert process.returncode == 143
    report = json.loads(Path(stdout.strip().splitlines()[-1].removeprefix("report: ")).read_text())
    assert [task["status"] for task in report["runs"]] == ["stopped", "not_run"]
    assert report["runs"][1]["run_dir"] is None
    assert not (results / TINY_TASKS[1]).exists()
    assert fake_runs_left(results) == []


# -- scheduling, in process ----------------------------------------------------------


class CountingBackend(FakeBackend):
    """A fake backend that counts what is in each step at once, and can be told to
    fail starts."""

    def __init__(self, *, start_failures: list[Exception] | None = None) -> None:
        self.lock = threading.Lock()
        self.now = {"preparing": 0, "starting": 0, "in_flight": 0, "removing": 0}
        self.most = dict(self.now)
        self.prepared: list[str] = []
        self.starts = 0
        self.start_failures = list(start_failures or [])

    @dataclasses.dataclass
    class _Step:
        backend: CountingBackend
        name: str

        def __enter__(self) -> None:
            with self.backend.lock:
                self.backend.now[self.name] += 1
                self.backend.most[self.name] = max(
                    self.backend.most[self.name], self.backend.now[self.name]
                )

        def __exit__(self, *exc: object) -> None:
            with self.backend.lock:
                self.backend.now[self.name] -= 1

    def step(self, name: str) -> CountingBackend._Step:
        return CountingBackend._Step(self, name)

    def prepare_images(self, request: ImageRequest) -> Images:
        with self.step("preparing"):
            time.sleep(0.05)
            with self.lock:
                self.prepared.append(request.task_id)
            return super().prepare_images(request)

    def start(self, spec: RunSpec) -> RunHandle:
        with self.step("starting"):
            time.sleep(0.05)
            with self.lock:
                self.starts += 1
                failure = self.start_failures.pop(0) if self.start_failures else None
            if failure is not None:
                raise failure
            handle = super().start(spec)
        with self.lock:
            self.now["in_flight"] += 1
            self.most["in_flight"] = max(self.most["in_flight"], self.now["in_flight"])
        return handle

    def wait(self, handle: RunHandle, timeout: float | None) -> int:
        time.sleep(0.15)
        return super().wait(handle, timeout)

    def cleanup(self, handle: RunHandle) -> None:
        with self.step("removing"):
            time.sleep(0.05)
            super().cleanup(handle)
        with self.lock:
            self.now["in_flight"] -= 1


def many_tasks(count: int) -> list[Task]:
    base = load_dataset(TINY_DATASET).tasks[0]
    return [dataclasses.replace(base, id=f"task-{number}") for number in range(count)]


def evaluation(
    backend: FakeBackend,
    tasks: list[Task],
    results: Path,
    limits: Limits,
    *,
    agent: str = "reference",
    retry: RetryPolicy | None = None,
    rerun: bool = False,
    entries: list[MatrixEntry] | None = None,
    attempts: int = 1,
    model_access: dict[MatrixEntry, Any] | None = None,
    max_spend: float | None = None,
) -> Evaluation:
    counter = iter(range(10_000))

    def settings_for(run: TaskRun) -> RunSettings:
        return RunSettings(
            task=run.task,
            agent=load_agent(run.entry.agent),
            model=run.entry.model,
            run_id=f"ev-{os.getpid()}-{next(counter)}-{random.randrange(10**6)}",
            results_root=results,
            backend="fake",
        )

    return Evaluation(
        backend,
        tasks,
        settings_for,
        entries=entries or [MatrixEntry(agent)],
        attempts=attempts,
        results_root=results,
        limits=limits,
        retry=retry or RetryPolicy(attempts=3, first_delay=0.01, max_delay=0.02),
        rerun=rerun,
        log=io.StringIO(),
        model_access=model_access,
        max_spend=max_spend,
    )


def test_jobs_bound_the_runs_in_flight_and_are_used(tmp_path: Path) -> None:
    backend = CountingBackend()
    job = evaluation(backend, many_tasks(6), tmp_path, Limits.for_jobs(2))
    job.run()
    assert [run.status for run in job.runs] == ["passed"] * 6
    assert backend.most["in_flight"] == 2
    assert sorted(backend.prepared) == sorted(f"task-{n}" for n in range(6))  # once each


def test_start_prepare_and_remove_have_limits_of_their_own(tmp_path: Path) -> None:
    backend = CountingBackend()
    limits = Limits.for_jobs(4, preparing=1, starting=1, removing=1)
    job = evaluation(backend, many_tasks(6), tmp_path, limits)
    job.run()
    assert [run.status for run in job.runs] == ["passed"] * 6
    assert backend.most["preparing"] == 1
    assert backend.most["starting"] == 1
    assert backend.most["removing"] == 1
    assert backend.most["in_flight"] > 1


def test_default_limits() -> None:
    assert Limits.for_jobs(1) == Limits(jobs=1, preparing=1, starting=1, removing=1)
    assert Limits.for_jobs(16) == Limits(jobs=16, preparing=2, starting=4, removing=4)
    with pytest.raises(UserError):
        Limits.for_jobs(0)


def test_default_jobs_come_from_the_backend_else_the_cores() -> None:
    class Cluster(FakeBackend):
        default_parallel_runs = 16

    assert default_jobs(FakeBackend(), 8) == 8
    assert default_jobs(FakeBackend(), None) == 1
    assert default_jobs(Cluster(), 2) == 16


# -- retries -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "transient"),
    [
        (BackendError("dial unix docker.sock: connect: connection refused"), True),
        (BackendError("Error from server (TooManyRequests): Too Many Requests"), True),
        (BackendError("503 Service Unavailable"), True),
        (BackendError("etcdserver: request timed out"), True),
        (ConnectionResetError("reset by peer"), True),
        (TimeoutError("no answer"), True),
        (BackendError("docker run could not create the container x (status 125)"), False),
        (BackendError("A run named fake-x exists"), False),
        (BackendError("No such image: x"), False),
        (ImageUnavailableError("connection refused while pulling x"), False),
        (UserError("Cannot connect to the Docker daemon: connection refused"), False),
        (RuntimeError("connection refused"), False),
    ],
)
def test_transient_is_narrow(error: Exception, transient: bool) -> None:
    assert is_transient(error) is transient


def test_a_backend_error_caused_by_a_connection_error_is_transient() -> None:
    try:
        try:
            raise ConnectionRefusedError("api")
        except ConnectionRefusedError as cause:
            raise BackendError("Cannot create the Job") from cause
    except BackendError as error:
        assert is_transient(error)


def test_retry_delay_grows_and_is_capped() -> None:
    policy = RetryPolicy(attempts=6, first_delay=2, max_delay=10)
    rng = random.Random(1)
    for failed, full in ((1, 2), (2, 4), (3, 8), (4, 10), (5, 10)):
        delay = policy.delay(failed, rng)
        assert full / 2 <= delay <= full


def test_a_transient_start_failure_is_retried(tmp_path: Path) -> None:
    backend = CountingBackend(start_failures=[BackendError("connection reset by peer")])
    job = evaluation(backend, many_tasks(1), tmp_path, Limits.for_jobs(1))
    job.run()
    (run,) = job.runs
    assert run.status == "passed"
    assert run.start_attempts == 2 and backend.starts == 2
    assert run.retries == ["BackendError: connection reset by peer"]
    assert backend.prepared == ["task-0"]  # images are not prepared again


def test_a_lasting_transient_failure_gives_up_after_the_attempts(tmp_path: Path) -> None:
    failures: list[Exception] = [BackendError("503 Service Unavailable") for _ in range(5)]
    backend = CountingBackend(start_failures=failures)
    job = evaluation(backend, many_tasks(1), tmp_path, Limits.for_jobs(1))
    job.run()
    (run,) = job.runs
    assert run.status == "error" and run.start_attempts == 3 and backend.starts == 3
    assert run.error_msg is not None and "503 Service Unavailable" in run.error_msg
    assert run.run_dir is not None
    assert json.loads((run.run_dir / "summary.json").read_text())["status"] == "error"


def test_a_permanent_start_failure_is_not_retried(tmp_path: Path) -> None:
    backend = CountingBackend(start_failures=[BackendError("No such image: fake/x")])
    job = evaluation(backend, many_tasks(2), tmp_path, Limits.for_jobs(1))
    job.run()
    assert [run.status for run in job.runs] == ["error", "passed"]
    assert job.runs[0].start_attempts == 1 and backend.starts == 2


def test_a_task_whose_images_fail_is_an_error_without_a_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSEBENCH_FAKE_BEHAVIOUR", "nonsense")
    job = evaluation(FakeBackend(), many_tasks(2), tmp_path, Limits.for_jobs(2))
    job.run()
    for run in job.runs:
        assert run.status == "error" and run.run_dir is None
        assert run.error_msg is not None and run.error_msg.startswith("Images not prepared: ")
    assert list(tmp_path.iterdir()) == []


# -- resume and stop, in process -----------------------------------------------------


def test_recorded_grades_ignore_errors_stopped_runs_and_other_agents(tmp_path: Path) -> None:
    def record(task: str, agent: str, run_id: str, status: str, **extra: object) -> None:
        folder = tmp_path / task / "none" / agent / run_id
        folder.mkdir(parents=True)
        summary = {
            "run_id": run_id,
            "task": task,
            "config": {"agent": agent, "model": "none"},
            "status": status,
            "started_at": run_id,
            **extra,
        }
        (folder / "summary.json").write_text(json.dumps(summary))

    record("a", "reference", "2024-1", "failed")
    record("a", "reference", "2024-2", "passed")
    record("b", "reference", "2024-1", "error")
    record("c", "reference", "2024-1", "passed", stopped=True)
    record("d", "dummy", "2024-1", "failed")
    found = recorded_grades(tmp_path, agent="reference", model=None)
    assert set(found) == {"a"}
    assert [summary["run_id"] for _, summary in found["a"]] == ["2024-1", "2024-2"]


def test_request_stop_stops_running_and_skips_queued(tmp_path: Path) -> None:
    job = evaluation(FakeBackend(), many_tasks(3), tmp_path, Limits.for_jobs(1), agent="sleeper")
    job.start()
    deadline = time.monotonic() + 20
    while job.runs[0].state != "running":
        assert time.monotonic() < deadline
        time.sleep(0.02)
    job.request_stop()
    assert job.wait(60)
    assert [run.status for run in job.runs] == ["stopped", "not_run", "not_run"]
    assert job.interrupted and job.report({})["counts"]["stopped"] == 1
    assert FakeBackend().list_runs({"ssebench.task-id": "task-0"}) == []


def container_output(run: TaskRun) -> str:
    try:
        return (state_root() / f"fake-{run.run_id}" / "output.log").read_text()
    except OSError:
        return ""


def test_kill_ends_a_run_that_ignores_sigterm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSEBENCH_FAKE_BEHAVIOUR", "stubborn")
    job = evaluation(FakeBackend(), many_tasks(1), tmp_path, Limits.for_jobs(1))
    job.start()
    deadline = time.monotonic() + 20
    # Once it says so, the fake container has its SIGTERM handler in place.
    while "agent running" not in container_output(job.runs[0]):
        assert time.monotonic() < deadline
        time.sleep(0.02)
    job.request_stop()
    assert not job.wait(1)  # the runtime ignores SIGTERM: the 30 s grace is running
    job.request_stop(kill=True)
    assert job.wait(20)
    assert job.runs[0].status == "stopped"


# -- the display ---------------------------------------------------------------------


@pytest.fixture
def finished_job(tmp_path: Path) -> Iterator[Evaluation]:
    job = evaluation(FakeBackend(), many_tasks(2), tmp_path, Limits.for_jobs(2))
    job.run()
    yield job


def test_live_progress_redraws_in_place(finished_job: Evaluation) -> None:
    from ssebench.cli.eval_display import Progress

    out = io.StringIO()
    progress = Progress(finished_job, out, live=True)
    progress.refresh()
    progress.refresh()
    run: TaskRun = finished_job.runs[0]
    progress.event("finished", run)
    progress.close()
    text = out.getvalue()
    assert "done 2/2  running 0  queued 0 | passed 2  failed 0  error 0" in text
    # A bar per agent and model, with its count and running pass rate.
    assert "reference / none" in text and "2/2" in text and "pass 100%" in text
    # Redrawn in place: the cursor goes up over the block and erases its lines.
    assert "\x1b[1A" in text and "\x1b[2K" in text
    assert "ssebench eval: passed   task-0" in text


def test_plain_progress_is_lines(finished_job: Evaluation) -> None:
    from ssebench.cli.eval_display import Progress

    out = io.StringIO()
    progress = Progress(finished_job, out, live=False)
    progress.refresh()
    progress.event("finished", finished_job.runs[1])
    progress.close()
    assert "\x1b" not in out.getvalue()
    assert out.getvalue().count("\n") == 1


# -- matrices, attempts and --max-spend ----------------------------------------------


def test_a_matrix_with_attempts_runs_each_pair_and_resumes_without_running_twice(
    tmp_path: Path,
) -> None:
    results = tmp_path / "results"
    matrix = ["--agent", "reference", "--agent", "dummy", "--jobs", "2"]
    done = ssebench(*eval_arguments(results, "reference", *matrix[2:], "--attempts", "2"))
    assert done.returncode == 0, done.stderr
    report = report_of(done)
    assert report["matrix"] == [
        {"agent": "reference", "model": "none"},
        {"agent": "dummy", "model": "none"},
    ]
    # Interleaved: attempt 1 of every task for every entry, then attempt 2.
    assert [(run["attempt"], run["task"], run["agent"]) for run in report["runs"]] == [
        (attempt, task, agent)
        for attempt in (1, 2)
        for task in TINY_TASKS
        for agent in ("reference", "dummy")
    ]
    reference, dummy = report["entries"]
    assert reference["resolved_rate"]["value"] == 1.0 and dummy["resolved_rate"]["value"] == 0.0
    assert reference["pass_at_k"]["2"]["value"] == 1.0 and dummy["pass_at_k"]["2"]["value"] == 0.0
    assert [task["passed"] for task in reference["tasks"]] == [2, 2]
    assert [a["status"] for a in dummy["tasks"][0]["attempts"]] == ["failed", "failed"]
    assert "reference / none: resolved 4/4" in done.stdout
    # A third attempt: only the new runs happen; the 8 recorded grades are kept.
    more = report_of(
        ssebench(*eval_arguments(results, "reference", *matrix[2:], "--attempts", "3"))
    )
    assert more["counts"]["total"] == 12 and more["counts"]["skipped"] == 8
    new = [run for run in more["runs"] if not run["skipped"]]
    assert {run["attempt"] for run in new} == {3} and len(new) == 4
    recorded = [
        path for path in results.glob("*/none/*/*/summary.json") if not path.parent.is_symlink()
    ]
    assert len(recorded) == 12  # nothing ran twice


def test_a_matrix_file_names_the_pairs(tmp_path: Path) -> None:
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text("- agent: dummy\n- {agent: reference}\n")
    done = ssebench(
        "eval", "--backend", "fake", "--dataset", str(TINY_DATASET), "--matrix", str(matrix),
        "--results", str(tmp_path / "r"), "--tasks", "tiny-add",
    )  # fmt: skip
    report = report_of(done)
    assert [entry["agent"] for entry in report["entries"]] == ["dummy", "reference"]
    assert [run["status"] for run in report["runs"]] == ["failed", "passed"]


@pytest.mark.parametrize(
    ("matrix_text", "extra", "expected"),
    [
        ("- agent: dummy\n", ["--agent", "dummy"], "--matrix names the agents and models"),
        ("agent: dummy\n", [], "must hold a list of {agent, model} pairs"),
        ("- agent: dummy\n  colour: red\n", [], "item 1 must be {agent: NAME, model: NAME}"),
        ("- [unclosed\n", [], "is not readable YAML or JSON"),
        ("- agent: dummy\n", ["--attempts", "0"], "--attempts must be at least 1"),
        ("- agent: dummy\n", ["--max-spend", "0"], "--max-spend must be a positive number"),
    ],
)
def test_bad_matrix_input_is_one_line(
    tmp_path: Path, matrix_text: str, extra: list[str], expected: str
) -> None:
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(matrix_text)
    done = ssebench(
        "eval", "--backend", "fake", "--dataset", str(TINY_DATASET), "--matrix", str(matrix),
        "--results", str(tmp_path / "r"), *extra,
    )  # fmt: skip
    assert done.returncode == 1, done
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], lines


def test_no_agent_is_one_line(tmp_path: Path) -> None:
    done = ssebench("eval", "--backend", "fake", "--dataset", str(TINY_DATASET))
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "ssebench: error: Name an agent: --agent NAME (repeatable), or --matrix FILE"
    )


def test_runs_start_interleaved_and_images_are_prepared_once_per_task_and_agent(
    tmp_path: Path,
) -> None:
    backend = CountingBackend()
    entries = [MatrixEntry("reference"), MatrixEntry("dummy")]
    limits = Limits.for_jobs(1, preparing=1)
    job = evaluation(backend, many_tasks(2), tmp_path, limits, entries=entries, attempts=3)
    started: list[tuple[int, str, str]] = []
    job.listener = lambda kind, run: (
        started.append((run.attempt, run.task.id, run.entry.agent)) if kind == "started" else None
    )
    job.run()
    assert started == [
        (attempt, f"task-{task}", agent)
        for attempt in (1, 2, 3)
        for task in (0, 1)
        for agent in ("reference", "dummy")
    ]
    assert sorted(backend.prepared) == ["task-0", "task-0", "task-1", "task-1"]
    assert [run.status for run in job.runs].count("passed") == 6


def test_a_display_whose_pipe_is_gone_stops_but_the_evaluation_finishes(tmp_path: Path) -> None:
    """`ssebench eval ... | head`: once the reader is gone, every write of the display
    fails. The evaluation used to count no run as done from then on, and waited forever."""
    backend = CountingBackend()
    job = evaluation(backend, many_tasks(4), tmp_path, Limits.for_jobs(2))
    told: list[str] = []

    def broken_display(kind: str, run: TaskRun) -> None:
        told.append(kind)
        raise BrokenPipeError(32, "Broken pipe")

    job.listener = broken_display
    waiting = threading.Thread(target=job.run, daemon=True)
    waiting.start()
    waiting.join(60)
    assert not waiting.is_alive(), "the evaluation did not end"
    assert [run.status for run in job.runs] == ["passed"] * 4
    assert len(told) == 1  # told nothing more once it failed
    log = job.log.getvalue()  # type: ignore[attr-defined]
    assert log.count("the display stopped (BrokenPipeError") == 1


def test_eval_whose_reader_is_gone_finishes_and_writes_its_report(tmp_path: Path) -> None:
    """`ssebench eval ... 2>&1 | head -c 1`, as a process: the reader closes the pipe after
    the first byte; the evaluation still carries out every run and writes its report."""
    results = tmp_path / "results"
    process = subprocess.Popen(
        [sys.executable, "-m", "ssebench.cli.main", *eval_arguments(results), "--attempts", "3"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    assert process.stdout is not None
    try:
        process.stdout.read(1)
        process.stdout.close()
        process.wait(timeout=60)
    finally:
        process.kill()  # a hung one (as before the fix) is not left behind
        process.wait()
    (report_path,) = results.glob("eval-*.json")
    report = json.loads(report_path.read_text())
    assert report["in_progress"] is False
    assert (report["counts"]["total"], report["counts"]["passed"]) == (6, 6)


def test_eval_whose_summary_reader_is_gone_still_exits_with_its_verdict(tmp_path: Path) -> None:
    """`ssebench eval --require-pass ... | true`: the summary's reader is gone before it is
    printed; the exit status still says that not every run passed, and nothing is raised."""
    results = tmp_path / "results"
    errors = tmp_path / "stderr"
    with errors.open("w") as stderr:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "ssebench.cli.main",
                *eval_arguments(results, "dummy", "--require-pass"),
            ],
            stdout=subprocess.PIPE,
            stderr=stderr,
        )
        assert process.stdout is not None
        process.stdout.close()
        try:
            returncode = process.wait(timeout=60)
        finally:
            process.kill()
            process.wait()
    assert returncode == 1, errors.read_text()
    assert "Traceback" not in errors.read_text()
    assert "Exception ignored" not in errors.read_text()
    (report_path,) = results.glob("eval-*.json")
    assert json.loads(report_path.read_text())["counts"]["passed"] == 0


def test_eval_whose_reader_is_gone_from_the_start_still_carries_out_every_run(
    tmp_path: Path,
) -> None:
    """Its first line used to raise: nothing ran, and the exit status was 0."""
    results = tmp_path / "results"
    arguments = eval_arguments(results, "dummy", "--require-pass")
    assert ssebench_with_reader_gone(*arguments, timeout=120) == 1
    (report_path,) = results.glob("eval-*.json")
    report = json.loads(report_path.read_text())
    assert report["in_progress"] is False
    assert (report["counts"]["total"], report["counts"]["failed"]) == (2, 2)


def test_the_display_closes_on_a_pipe_that_is_gone(tmp_path: Path) -> None:
    job = evaluation(CountingBackend(), many_tasks(1), tmp_path, Limits.for_jobs(1))

    class Gone(io.StringIO):
        def flush(self) -> None:
            raise BrokenPipeError(32, "Broken pipe")

    progress = Progress(job, Gone(), live=False)
    progress.refresh()
    progress.close()  # no error: the report is written after it


@dataclasses.dataclass
class PricedSession:
    """A model session whose spend is known (usd) or not (None), as the proxy reports."""

    usd: float | None
    key: Any = dataclasses.field(
        default_factory=lambda: RunKey(secret="sk-test", model="m", budget=None, managed=False)
    )

    def env(self) -> dict[str, str]:
        return {"SSE_BASE_URL": "http://proxy.invalid", "SSE_API_KEY": "sk-test"}

    def finish(self, say: Any) -> Spend | None:
        return None if self.usd is None else Spend(usd=self.usd, budget=None)


@dataclasses.dataclass
class PricedAccess:
    usd: float | None
    opened: int = 0

    def open(self, run_id: str, say: Any) -> PricedSession:
        self.opened += 1
        return PricedSession(self.usd)


def test_max_spend_stops_starting_runs_once_reached(tmp_path: Path) -> None:
    entry = MatrixEntry("dummy", "m")
    access = PricedAccess(usd=0.4)
    job = evaluation(
        FakeBackend(), many_tasks(3), tmp_path, Limits.for_jobs(1, preparing=1),
        entries=[entry], attempts=2, model_access={entry: access}, max_spend=1.0,
    )  # fmt: skip
    job.run()
    statuses = [run.status for run in job.runs]
    # 0.4 + 0.4 < 1.0 lets the third start; 1.2 >= 1.0 stops the rest.
    assert statuses == ["failed", "failed", "failed", "not_run", "not_run", "not_run"]
    assert access.opened == 3
    reason = "--max-spend 1 USD reached (1.2000 USD spent)"
    assert [run.error_msg for run in job.runs[3:]] == [reason] * 3
    report = job.report({"command": "eval"})
    assert report["max_spend"] == {"usd": 1.0, "stopped": reason}
    assert report["spend"] == pytest.approx(1.2)
    assert report["entries"][0]["mean_spend_per_task"]["value"] == pytest.approx(0.4)
    assert report["entries"][0]["counts"]["not_run"] == 3


def test_max_spend_with_an_unknown_spend_stops_starting_runs(tmp_path: Path) -> None:
    entry = MatrixEntry("dummy", "m")
    job = evaluation(
        FakeBackend(), many_tasks(3), tmp_path, Limits.for_jobs(1, preparing=1),
        entries=[entry, MatrixEntry("reference")], model_access={entry: PricedAccess(None)},
        max_spend=5.0,
    )  # fmt: skip
    job.run()
    # One at a time: the first run's spend is unknown, so nothing more starts, the
    # reference runs (which need no key) included: the limit is the evaluation's.
    assert [run.status for run in job.runs] == ["failed"] + ["not_run"] * 5
    first = job.runs[0]
    not_run = [run for run in job.runs if run.status == "not_run"]
    assert not_run and all(
        run.error_msg
        == f"--max-spend 5 USD cannot be held: the spend of run {first.run_id} is unknown "
        "(the proxy keeps no spend record)"
        for run in not_run
    )


def test_a_run_that_never_got_its_model_key_spent_nothing(tmp_path: Path) -> None:
    class FirstOpenFails(PricedAccess):
        def open(self, run_id: str, say: Any) -> PricedSession:
            self.opened += 1
            if self.opened == 1:
                raise UserError("docker compose up failed")
            return PricedSession(self.usd)

    entry = MatrixEntry("dummy", "m")
    job = evaluation(
        FakeBackend(), many_tasks(3), tmp_path, Limits.for_jobs(1, preparing=1),
        entries=[entry], model_access={entry: FirstOpenFails(0.1)}, max_spend=5.0,
    )  # fmt: skip
    job.run()
    assert [run.status for run in job.runs] == ["error", "failed", "failed"]
    assert job.runs[0].error_msg == "docker compose up failed"
    assert job.spend_stop is None
