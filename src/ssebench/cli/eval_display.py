"""What the terminal shows while `ssebench eval` runs.

On a terminal: a live display drawn by rich, one progress bar per agent and model with
its counts and running pass rate, the active runs below, and a line per finished run
printed above. Otherwise: one plain line per run that starts or finishes, with the
counts, so a CI log or a pipe reads well.
"""

from __future__ import annotations

import contextlib
import threading
from typing import TYPE_CHECKING, Any, TextIO

from ssebench.evaluation.matrix import MatrixEntry, TaskRun
from ssebench.evaluation.scheduler import Evaluation

if TYPE_CHECKING:
    from rich.live import Live
    from rich.progress import Progress as Bars
    from rich.progress import TaskID

ACTIVE = ("preparing", "starting", "running", "removing")


def clock(seconds: float) -> str:
    minutes, second = divmod(int(seconds), 60)
    hours, minute = divmod(minutes, 60)
    return f"{hours}:{minute:02d}:{second:02d}" if hours else f"{minute}:{second:02d}"


def money(spend: float | None) -> str:
    return "-" if spend is None else f"${spend:.4f}"


def pass_rate(evaluation: Evaluation, entry: MatrixEntry | None = None) -> str:
    """Passed of graded so far, in percent."""
    counts = evaluation.counts(entry)
    graded = counts.passed + counts.failed
    return "-" if graded == 0 else f"{100 * counts.passed / graded:.0f}%"


def run_name(evaluation: Evaluation, run: TaskRun) -> str:
    """The task, and the entry and attempt when the evaluation has several."""
    parts = [run.task.id]
    if len(evaluation.entries) > 1:
        parts.append(run.entry.label)
    if evaluation.attempts > 1:
        parts.append(f"attempt {run.attempt}")
    return " ".join(parts[:1]) + ("" if len(parts) == 1 else f" [{', '.join(parts[1:])}]")


class Progress:
    """The live display (live=True) or the plain lines (live=False) of an evaluation."""

    def __init__(
        self, evaluation: Evaluation, out: TextIO, *, live: bool, command: str = "ssebench eval"
    ) -> None:
        self.evaluation = evaluation
        # Each line starts with the command that runs the evaluation (eval, dataset check).
        self.command = command
        self.out = out
        self.live = live
        self._lock = threading.Lock()
        self._live: Live | None = None
        self._bars: Bars | None = None
        self._bar_ids: dict[MatrixEntry, TaskID] = {}
        if live:
            # Imported here: every other command, and eval off a terminal, goes without.
            from rich.console import Console
            from rich.live import Live
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn
            from rich.progress import Progress as Bars

            console = Console(file=out, force_terminal=True, highlight=False)
            self._bars = Bars(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[detail]}"),
                console=console,
            )
            for entry in evaluation.entries:
                self._bar_ids[entry] = self._bars.add_task(
                    entry.label, total=evaluation.counts(entry).total, detail=""
                )
            self._live = Live(
                self._renderable(),
                console=console,
                auto_refresh=False,
                transient=True,
                # The process's stdout and stderr are the log of the runs, not this display.
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self._live.start()

    def status_line(self) -> str:
        counts = self.evaluation.counts()
        return (
            f"done {counts.done}/{counts.total}  running {counts.running}  "
            f"queued {counts.queued} | passed {counts.passed}  failed {counts.failed}  "
            f"error {counts.error} | {clock(self.evaluation.elapsed())} | "
            f"spend {money(self.evaluation.spend())}"
        )

    def _renderable(self) -> Any:
        from rich.console import Group
        from rich.text import Text

        assert self._bars is not None
        for entry, bar in self._bar_ids.items():
            counts = self.evaluation.counts(entry)
            self._bars.update(
                bar,
                completed=counts.done,
                detail=f"pass {pass_rate(self.evaluation, entry)}  passed {counts.passed}  "
                f"failed {counts.failed}  error {counts.error}  running {counts.running}",
            )
        active = [
            Text(
                f"  {run.state:<9} {run_name(self.evaluation, run)}  "
                f"{'' if run.seconds is None else clock(run.seconds)}"
            )
            for run in self.evaluation.runs
            if run.state in ACTIVE
        ]
        return Group(Text(f"{self.command}: {self.status_line()}"), self._bars, *active)

    def event(self, kind: str, run: TaskRun) -> None:
        if kind == "started":
            if self.live:
                return  # the live display shows it
            line = f"started  {run_name(self.evaluation, run)} ({run.run_id})"
        else:
            seconds = "" if run.seconds is None else f" {run.seconds:.1f} s"
            detail = f" ({run.error_msg})" if run.error_msg and run.status != "passed" else ""
            line = f"{run.status:<8} {run_name(self.evaluation, run)}{seconds}{detail}"
        with self._lock:
            if self._live is not None:
                from rich.text import Text

                self._live.console.print(Text(f"{self.command}: {line}"))
                self._live.update(self._renderable(), refresh=True)
                return
            self.out.write(f"{self.command}: {line}  [{self.status_line()}]\n")
            self.out.flush()

    def refresh(self) -> None:
        with self._lock, contextlib.suppress(OSError):  # a terminal gone: as close()
            if self._live is not None:
                self._live.update(self._renderable(), refresh=True)

    def close(self) -> None:
        with self._lock:
            if self._live is not None:
                self._live.stop()
                self._live = None
            # A reader gone (`| head`) must not keep the report from being written.
            with contextlib.suppress(OSError):
                self.out.flush()
            self.live = False
