"""Evaluating a whole dataset: every task an ordinary run, several at once (`ssebench eval`).

An evaluation is a matrix: each entry (an agent with a model) runs every task `attempts`
times. The runs are queued interleaved (attempt 1 of every task for every entry, then
attempt 2, ...), so an evaluation stopped part way has comparable partial results.

Each run goes through these states, and each step has a limit of its own:

    queued -> preparing -> ready -> starting -> running -> removing -> done
              |                     |                      |
              prepare_images,       backend.start, at      backend.cleanup, at
              once per task, at     most `starting` at     most `removing` at
              most `preparing`      once; retried with     once
              at once               back-off when the
                                    failure is transient
              <------------- at most `jobs` tasks from starting to done ------------->

A run is Runner.run with the same settings as `ssebench run`, so it has its own run
directory and summary.json. Images are prepared once per task and agent. Starting and
removing have separate limits so that on a full cluster, where a start waits for room,
the removals that make room never queue behind it. Grades already recorded under the
results folder (same task, agent and model; passed or failed; not stopped) count as
attempts, newest first, unless rerun is asked for, so running the same evaluation
again finishes what is left and runs nothing twice.

max_spend stops starting runs once the runs of this invocation have spent that much
(or once a run's spend cannot be known): the runs not started are not_run, with the
reason.

request_stop() (the CLI calls it on SIGINT/SIGTERM) starts nothing more and stops the
running runs through their StopRequest, so each is graded as far as it got, recorded
and removed; request_stop(kill=True) ends them without a grace period.
"""

from __future__ import annotations

import dataclasses
import queue
import threading
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from ssebench.errors import SsebenchError, UserError
from ssebench.extensions import (
    Backend,
    Images,
    RunHandle,
)
from ssebench.results.directory import RunDirectory, read_json, utc_now
from ssebench.results.unrecorded import record_killed_runs
from ssebench.runner import Runner, RunSettings
from ssebench.stopping import StopRequest
from ssebench.tasks import Task

if TYPE_CHECKING:
    from ssebench.proxy import ModelAccessPlan, ModelSession
from ssebench.evaluation.matrix import STATUSES, Counts, Limits, MatrixEntry, Status, TaskRun
from ssebench.evaluation.recorded import (
    RecordedFilter,
    count_recorded_attempts,
    longest_first,
    remembered_seconds,
    reward_of,
    spend_of,
)
from ssebench.evaluation.scheduled_backend import RetryPolicy, ScheduledBackend, StoppedBeforeStart

REPORT_SCHEMA = 2


class _Gates:
    """The step limits shared by every run of one evaluation."""

    def __init__(self, limits: Limits) -> None:
        self.preparing = threading.BoundedSemaphore(limits.preparing)
        self.starting = threading.BoundedSemaphore(limits.starting)
        self.removing = threading.BoundedSemaphore(limits.removing)


Listener = Callable[[str, TaskRun], None]


class Evaluation:
    """Runs every task of tasks `attempts` times for every matrix entry through the
    Runner, at most limits.jobs at once.

    counts_as_recorded(task ID, summary), if given, decides which recorded grades stand
    for attempts (`grade --predictions`: only those of the same patch).

    settings_for(run) gives the run's settings (a new run ID each call). model_access
    holds the plan for each entry that uses a model key. listener, if given, is called
    from the workers with ("started" | "finished", task run).
    """

    def __init__(
        self,
        backend: Backend,
        tasks: Sequence[Task],
        settings_for: Callable[[TaskRun], RunSettings],
        *,
        entries: Sequence[MatrixEntry],
        attempts: int = 1,
        results_root: Path,
        limits: Limits,
        retry: RetryPolicy | None = None,
        rerun: bool = False,
        log: TextIO,
        listener: Listener | None = None,
        model_access: Mapping[MatrixEntry, ModelAccessPlan] | None = None,
        max_spend: float | None = None,
        counts_as_recorded: RecordedFilter | None = None,
    ) -> None:
        if attempts < 1:
            raise UserError("--attempts must be at least 1")
        if not entries:
            raise UserError("An evaluation needs at least one agent")
        self.backend = backend
        self.settings_for = settings_for
        self.entries = list(dict.fromkeys(entries))
        self.attempts = attempts
        self.limits = limits
        self.retry = retry or RetryPolicy()
        self.log = log
        self.listener = listener
        self.model_access = dict(model_access or {})
        self.max_spend = max_spend
        self.spend_stop: str | None = None
        # Opening a key may start the local proxy stack: one at a time.
        self._model_lock = threading.Lock()
        self._telling = threading.Lock()
        # Interleaved: every entry's attempt n of a task before any attempt n + 1.
        self.runs = [
            TaskRun(task=task, entry=entry, attempt=attempt)
            for attempt in range(1, attempts + 1)
            for task in tasks
            for entry in self.entries
        ]
        self.started_at = utc_now()
        self.started = time.monotonic()
        self.finished_at: str | None = None
        self.interrupted = False
        self._gates = _Gates(limits)
        self._lock = threading.Lock()
        self._stopping = False
        self._log_lock = threading.Lock()
        self._to_prepare: queue.SimpleQueue[TaskRun] = queue.SimpleQueue()
        self._ready: queue.SimpleQueue[TaskRun | None] = queue.SimpleQueue()
        self._all_done = threading.Event()
        self._preparers_left = 0
        self._left = 0
        # Images by (task, agent): an Images, or why they could not be prepared.
        self._images: dict[tuple[str, str], Images | str] = {}
        self._image_locks: dict[tuple[str, str], threading.Lock] = {}
        # Runs of killed runners get their summary first: recorded as errors, they are
        # not graded, so a resume runs them again.
        record_killed_runs(results_root)
        if not rerun:
            count_recorded_attempts(self.runs, results_root, counts_as_recorded)
        # Longest first (by earlier runs' times), so the longest task does not start last
        # and become the critical path alone.
        for run in longest_first(self.runs, remembered_seconds(results_root)):
            if not run.skipped:
                self._to_prepare.put(run)

    # -- watching ------------------------------------------------------------------

    def say(self, message: str) -> None:
        with self._log_lock:
            self.log.write(f"ssebench: {message}\n")
            self.log.flush()

    def counts(self, entry: MatrixEntry | None = None) -> Counts:
        runs = [run for run in self.runs if entry is None or run.entry == entry]
        by_status = {status: sum(run.status == status for run in runs) for status in STATUSES}
        return Counts(
            total=len(runs),
            queued=sum(run.state in ("queued", "preparing", "ready") for run in runs),
            running=sum(run.state in ("starting", "running", "removing") for run in runs),
            done=sum(run.state == "done" for run in runs),
            skipped=sum(run.skipped for run in runs),
            **by_status,
        )

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def spend(self) -> float | None:
        spends = [run.spend for run in self.runs if run.spend is not None and not run.skipped]
        return round(sum(spends), 6) if spends else None

    def _spend_limit_reached(self) -> str | None:
        """Why no more runs may start under max_spend, or None while they may.

        Only the runs of this invocation count. A run that used a model key but has no
        spend on record (a proxy without its database keeps none) makes the limit
        impossible to hold, so it stops the evaluation as reaching it would.
        """
        if self.max_spend is None:
            return None
        if self.spend_stop is not None:
            return self.spend_stop
        finished = [run for run in self.runs if run.state == "done" and not run.skipped]
        spent = sum(run.spend or 0.0 for run in finished)
        reason: str | None = None
        if spent >= self.max_spend:
            reason = f"--max-spend {self.max_spend:g} USD reached ({spent:.4f} USD spent)"
        else:
            unknown = [run for run in finished if run.model_key and run.spend is None]
            if unknown:
                reason = (
                    f"--max-spend {self.max_spend:g} USD cannot be held: the spend of run "
                    f"{unknown[0].run_id} is unknown (the proxy keeps no spend record)"
                )
        if reason is not None:
            with self._lock:
                if self.spend_stop is None:
                    self.spend_stop = reason
                    self.say(f"not starting more runs: {reason}")
        return reason

    def finished(self) -> bool:
        return self._all_done.is_set()

    # -- running -------------------------------------------------------------------

    def start(self) -> None:
        """Start the workers; they end by themselves once every task is done."""
        pending = [run for run in self.runs if run.state == "queued"]
        if not pending:
            self._all_done.set()
            return
        self._left = len(pending)
        preparers = min(self.limits.preparing, len(pending))
        self._preparers_left = preparers
        for number in range(preparers):
            threading.Thread(
                target=self._prepare_worker, name=f"eval-prepare-{number}", daemon=True
            ).start()
        for number in range(min(self.limits.jobs, len(pending))):
            threading.Thread(
                target=self._run_worker, name=f"eval-run-{number}", daemon=True
            ).start()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until every task is done; False if timeout passed first."""
        return self._all_done.wait(timeout)

    def run(self) -> None:
        self.start()
        self.wait()

    def request_stop(self, *, kill: bool = False) -> None:
        """Start nothing more; stop the running runs (kill: without a grace period)."""
        with self._lock:
            self._stopping = True
            self.interrupted = True
            active = [run for run in self.runs if run.stop is not None and run.state != "done"]
        for run in active:
            assert run.stop is not None
            run.stop.request()
            if kill and run.handle is not None:
                threading.Thread(
                    target=self._kill, args=(run.handle,), name="eval-kill", daemon=True
                ).start()

    def _kill(self, handle: RunHandle) -> None:
        try:
            self.backend.stop(handle, 0)
        except SsebenchError as error:
            self.say(f"run {handle.run_id}: kill failed: {error}")

    def _finish(self, run: TaskRun, status: Status, message: str | None = None) -> None:
        run.status = status
        if message is not None:
            run.error_msg = message
        run.finished = time.monotonic()
        run.state = "done"
        if status != "not_run":
            self._tell("finished", run)
        with self._lock:
            self._left -= 1
            if self._left == 0:
                self.finished_at = utc_now()
                self._all_done.set()

    def _prepare_worker(self) -> None:
        try:
            while True:
                try:
                    run = self._to_prepare.get_nowait()
                except queue.Empty:
                    return
                if self._stopping:
                    self._finish(run, "not_run")
                    continue
                limit = self._spend_limit_reached()
                if limit is not None:
                    self._finish(run, "not_run", limit)
                    continue
                run.state = "preparing"
                run.settings = self.settings_for(run)
                prepared = self._prepare(run, run.settings)
                if isinstance(prepared, str):
                    self._finish(run, "error", prepared)
                    continue
                run.state = "ready"
                self._ready.put(run)
        finally:
            with self._lock:
                self._preparers_left -= 1
                last = self._preparers_left == 0
            if last:
                for _ in range(self.limits.jobs):
                    self._ready.put(None)

    def _prepare(self, run: TaskRun, settings: RunSettings) -> Images | str:
        """The run's images, prepared once per task and agent; or why they are not."""
        key = (run.task.id, run.entry.agent)
        with self._lock:
            lock = self._image_locks.setdefault(key, threading.Lock())
        with lock:
            if key in self._images:
                return self._images[key]
            prepared: Images | str
            try:
                with self._gates.preparing:
                    prepared = self.backend.prepare_images(settings.image_request())
            except SsebenchError as error:
                prepared = f"Images not prepared: {error}"
            except Exception as error:  # a bug: keep the evaluation going, log it
                self._log_traceback(run, error)
                prepared = f"Images not prepared: {type(error).__name__}"
            self._images[key] = prepared
            return prepared

    def _run_worker(self) -> None:
        while True:
            run = self._ready.get()
            if run is None:
                return
            stop = StopRequest()
            with self._lock:
                stopping = self._stopping
                if not stopping:
                    run.stop = stop
            if stopping:
                self._finish(run, "not_run")
                continue
            limit = self._spend_limit_reached()
            if limit is not None:
                self._finish(run, "not_run", limit)
                continue
            try:
                self._run_one(run, stop)
            except Exception as error:  # a bug: keep the evaluation going, log it
                self._log_traceback(run, error)
                if run.state != "done":
                    self._finish(run, "error", f"{type(error).__name__} in ssebench eval")

    def _run_one(self, run: TaskRun, stop: StopRequest) -> None:
        settings = run.settings
        assert settings is not None, "prepared tasks have their settings"
        run.run_id = settings.run_id
        run.state = "starting"
        run.started = time.monotonic()
        run.run_dir = RunDirectory.for_run(
            settings.results_root,
            task=settings.task.id,
            model=settings.model,
            agent=settings.agent.name,
            run_id=settings.run_id,
        ).path
        self._tell("started", run)
        backend = ScheduledBackend(
            self.backend,
            starting=self._gates.starting,
            removing=self._gates.removing,
            retry=self.retry,
            job=run,
            stop=stop,
            say=self.say,
        )
        runner = Runner(backend, out=self.log)
        failure: BaseException | None = None
        session: ModelSession | None = None
        try:
            access = self.model_access.get(run.entry)
            if access is not None:
                with self._model_lock:
                    session = access.open(settings.run_id, self.say)
                run.model_key = True
                settings = dataclasses.replace(settings, model_env=session.env())
            images = self._images[(run.task.id, run.entry.agent)]
            assert not isinstance(images, str), "only runs with images reach a worker"
            runner.run(settings, images, stop, model_session=session)
        except Exception as error:  # recorded by the runner; reported below
            failure = error
        finally:
            if session is not None:
                session.finish(self.say)  # a no-op when the runner has finished it
        summary = read_json(run.run_dir / "summary.json")
        if summary is None:
            if isinstance(failure, StoppedBeforeStart) or stop.requested.is_set():
                self._finish(run, "not_run", "stopped before it started")
            else:
                self._finish(run, "error", _describe(failure))
            return
        run.spend = spend_of(summary)
        run.reward = reward_of(summary)
        if isinstance(failure, StoppedBeforeStart):
            self._finish(run, "not_run", "stopped before it started")
        elif summary.get("stopped"):
            self._finish(run, "stopped", summary.get("error_msg") or "stopped")
        else:
            status = summary.get("status")
            self._finish(
                run,
                status if status in ("passed", "failed") else "error",
                summary.get("error_msg") or (None if failure is None else _describe(failure)),
            )

    def _tell(self, kind: str, run: TaskRun) -> None:
        """Tell the listener (the terminal's display) that run started or finished. A
        listener that fails, as the display does once the pipe it writes to is closed
        (`ssebench eval ... | head`), is told nothing more: the evaluation goes on, and
        every run is still carried out, counted (the wait ends) and recorded."""
        # One at a time, so that a failure is said once whichever worker meets it.
        with self._telling:
            listener = self.listener
            if listener is None:
                return
            try:
                listener(kind, run)
            except Exception as error:
                self.listener = None
                self.say(f"the display stopped ({type(error).__name__}: {error}); the runs go on")

    def _log_traceback(self, run: TaskRun, error: BaseException) -> None:
        text = "".join(traceback.format_exception(error))
        self.say(f"task {run.task.id}: unexpected error\n{text}")

    # -- the report ----------------------------------------------------------------

    def report(self, extra: Mapping[str, Any]) -> dict[str, Any]:
        """The report (schema 2, docs/evaluation.md): the runs, and per matrix entry
        its counts and statistics."""
        from ssebench.reports.summary import summarize_entries

        runs = [run.to_json() for run in self.runs]
        return {
            "schema": REPORT_SCHEMA,
            **extra,
            "matrix": [entry.to_json() for entry in self.entries],
            "attempts": self.attempts,
            "started_at": self.started_at,
            "finished_at": self.finished_at or utc_now(),
            "elapsed_seconds": round(self.elapsed(), 3),
            "interrupted": self.interrupted,
            "max_spend": None
            if self.max_spend is None
            else {"usd": self.max_spend, "stopped": self.spend_stop},
            "limits": {
                "jobs": self.limits.jobs,
                "preparing": self.limits.preparing,
                "starting": self.limits.starting,
                "removing": self.limits.removing,
                "start_attempts": self.retry.attempts,
            },
            "counts": self.counts().to_json(),
            "spend": self.spend(),
            "entries": summarize_entries(runs, self.matrix_labels(), self.attempts),
            "runs": runs,
        }

    def matrix_labels(self) -> list[tuple[str, str]]:
        return [(entry.agent, entry.model_label) for entry in self.entries]


def _describe(failure: BaseException | None) -> str:
    if failure is None:
        return "no summary was recorded"
    if isinstance(failure, SsebenchError):
        return str(failure)
    return type(failure).__name__
