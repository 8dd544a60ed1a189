"""`ssebench eval`: every task of a dataset for each agent and model of a matrix,
`--attempts` times, one ordinary run each, several at once.

While it runs, the runs' own output (the containers' and the runner's) goes to
<results>/eval-<timestamp>.log, and the terminal shows the progress: a live display
(rich: a bar per agent and model with its running pass rate) on a terminal, one line
per run otherwise. At the end it prints a table and writes a JSON report (schema 2).
See docs/evaluation.md.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import secrets
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from ssebench.backends import load_backend, selected_backend_name
from ssebench.cli import run as run_cli
from ssebench.cli.eval_display import Progress, clock, money
from ssebench.cli.options import RUN_OPTIONS
from ssebench.cli.output import print_table
from ssebench.errors import UserError
from ssebench.evaluation.matrix import Limits, MatrixEntry, TaskRun, default_jobs
from ssebench.evaluation.scheduled_backend import RetryPolicy
from ssebench.evaluation.scheduler import Evaluation
from ssebench.evaluation.signals import stop_on_signals
from ssebench.extensions import PARALLEL_RUNS_VARIABLE
from ssebench.host.output import dropping_stream
from ssebench.reports.tables import percent
from ssebench.results.directory import check_run_id, make_results_root, new_run_id, write_json
from ssebench.runner import RunSettings
from ssebench.tasks import Dataset, Task
from ssebench.tasks.sources import resolve_dataset

if TYPE_CHECKING:
    from ssebench.proxy import ModelAccessPlan

REFRESH_SECONDS = 0.5
PARTIAL_REPORT_SECONDS = 2.0


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "eval",
        help="run agents and models on every task of a dataset",
        description="Run each agent with each model (or the pairs of --matrix) on every "
        "selected task of a dataset, --attempts times, several runs at once, each an ordinary "
        "run with its own run directory. Grades already recorded for an agent and model under "
        "--results count as attempts, so running the same command again finishes the rest.",
    )
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--dataset",
        dest="local",
        metavar="DIR",
        help="a dataset folder (default: $SSEBENCH_DATASET or ./datasets/pilot)",
    )
    source.add_argument("--catalog", metavar="URL", help="a task catalog service")
    parser.add_argument("--tasks", nargs="+", metavar="TASK", help="task IDs (default: all)")
    parser.add_argument(
        "--agent",
        action="append",
        default=[],
        help="an agent (reference, dummy, ...); repeat for several",
    )
    parser.add_argument(
        "--model",
        action="append",
        default=[],
        help="a model; repeat for several (every agent runs with every model)",
    )
    parser.add_argument(
        "--matrix",
        metavar="FILE",
        help="a YAML or JSON list of {agent, model} pairs, instead of --agent/--model",
    )
    run_cli.add_agents_dir_option(parser)
    parser.add_argument(
        "--budget",
        type=float,
        metavar="USD",
        help="the most each run's model key may spend, in USD (default 10)",
    )
    parser.add_argument(
        "--attempts", type=int, default=1, metavar="N", help="runs of each task (default 1)"
    )
    parser.add_argument(
        "--max-spend",
        type=float,
        metavar="USD",
        help="start no more runs once the evaluation's runs have spent this much",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        metavar="N",
        help="runs at once (default: the backend's; this machine's cores for docker)",
    )
    run_cli.add_backend_options(parser)
    parser.add_argument(
        "--results", default="results", metavar="DIR", help="where run directories go (./results)"
    )
    parser.add_argument(
        "--rerun", action="store_true", help="run tasks that already have a recorded grade too"
    )
    parser.add_argument(
        "--timeout",
        type=int,
        help="seconds each agent may run (default: each task's own, as an imported Harbor "
        "task has, else 3600)",
    )
    run_cli.add_step_timeout(parser)
    parser.add_argument(
        "--report", metavar="FILE", help="the JSON report (default <results>/eval-<time>.json)"
    )
    parser.add_argument("--difficulty", type=int, choices=(1, 2, 3), default=2)
    parser.add_argument("--egress", choices=("restricted", "open"))
    parser.add_argument("--platform", help="linux/<arch> of the images and containers")
    parser.add_argument("--mode", choices=("sandbox", "sidecar"), default="sandbox")
    parser.add_argument(
        "--run-id-prefix",
        metavar="PREFIX",
        help="run IDs are PREFIX-<hex> (default: YYYYMMDD-HHMMSS-<hex>)",
    )
    parser.add_argument(
        "--max-preparing", type=int, metavar="N", help="tasks preparing images at once (2)"
    )
    parser.add_argument(
        "--max-starting", type=int, metavar="N", help="runs being started at once (4)"
    )
    parser.add_argument(
        "--max-removing", type=int, metavar="N", help="runs being removed at once (4)"
    )
    parser.add_argument(
        "--start-attempts",
        type=int,
        default=RetryPolicy.attempts,
        metavar="N",
        help="tries of a start that fails for a transient reason (default 4)",
    )
    parser.add_argument(
        "--require-pass", action="store_true", help="exit 1 unless every task passed"
    )
    parser.set_defaults(handler=eval_command)


class RunIds:
    """New run IDs, never the same twice in one evaluation."""

    def __init__(self, prefix: str | None) -> None:
        if prefix is not None:
            check_run_id(f"{prefix}-{'0' * 8}")
        self.prefix = prefix
        self._used: set[str] = set()
        self._lock = threading.Lock()

    def new(self) -> str:
        with self._lock:
            while True:
                candidate = f"{self.prefix}-{secrets.token_hex(4)}" if self.prefix else new_run_id()
                if candidate not in self._used:
                    self._used.add(candidate)
                    return candidate


def base_settings(
    arguments: argparse.Namespace, task: Task, builds: bool, entry: MatrixEntry
) -> RunSettings:
    """The settings `ssebench run` would make for task and entry from these options."""
    parser = argparse.ArgumentParser(add_help=False)
    run_cli.register(parser.add_subparsers())
    # Every other option of `ssebench run` keeps the default it has there.
    namespace = parser.parse_args(["run", "--task", task.id, "--agent", entry.agent])
    for name in RUN_OPTIONS:
        setattr(namespace, name, getattr(arguments, name))
    namespace.model = entry.model
    backend_name = selected_backend_name(arguments.backend)
    return run_cli.settings_from_arguments(namespace, backend_name, builds)


def report_about(
    command: str,
    dataset: Dataset,
    *,
    backend: str,
    results: Path,
    log: Path,
    rerun: bool,
) -> dict[str, Any]:
    """What an evaluation report says of its command (schema 2's top-level fields)."""
    return {
        "command": command,
        "dataset": {"name": dataset.name, "version": dataset.version, "path": str(dataset.path)},
        "backend": backend,
        "results": str(results),
        "log": str(log),
        "rerun": rerun,
    }


def read_matrix(path: Path) -> list[MatrixEntry]:
    """The entries of a --matrix file: a list of {agent, model?} mappings."""
    import yaml  # here: only --matrix needs it

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"--matrix {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise UserError(f"--matrix {path} cannot be read: {error}") from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise UserError(f"--matrix {path} is not readable YAML or JSON{where}") from None
    if not isinstance(data, list) or not data:
        raise UserError(f"--matrix {path} must hold a list of {{agent, model}} pairs")
    entries = []
    for number, item in enumerate(data, start=1):
        if (
            not isinstance(item, dict)
            or not isinstance(item.get("agent"), str)
            or not isinstance(item.get("model"), (str, type(None)))
            or set(item) - {"agent", "model"}
        ):
            raise UserError(
                f"--matrix {path}: item {number} must be {{agent: NAME, model: NAME}} "
                "(model optional)"
            )
        entries.append(MatrixEntry(item["agent"], item.get("model") or None))
    return list(dict.fromkeys(entries))


def matrix_of(arguments: argparse.Namespace) -> list[MatrixEntry]:
    """--matrix, or the cross product of --agent and --model."""
    if arguments.matrix:
        if arguments.agent or arguments.model:
            raise UserError("--matrix names the agents and models: drop --agent and --model")
        return read_matrix(Path(arguments.matrix))
    if not arguments.agent:
        raise UserError("Name an agent: --agent NAME (repeatable), or --matrix FILE")
    models: list[str | None] = list(dict.fromkeys(arguments.model)) or [None]
    return list(
        dict.fromkeys(MatrixEntry(agent, model) for agent in arguments.agent for model in models)
    )


def select_tasks(all_tasks: tuple[Task, ...], wanted: list[str] | None) -> list[Task]:
    if not wanted:
        return list(all_tasks)
    by_id = {task.id: task for task in all_tasks}
    missing = [task_id for task_id in wanted if task_id not in by_id]
    if missing:
        known = ", ".join(by_id)
        raise UserError(f"No task {missing[0]!r} in the dataset (tasks: {known})")
    return [by_id[task_id] for task_id in dict.fromkeys(wanted)]


@contextlib.contextmanager
def output_into(log: Path) -> Iterator[tuple[TextIO, TextIO]]:
    """Send this process's stdout and stderr, and so the output of the containers it
    starts, into log; yield streams to the original stdout and stderr."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    descriptor = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    # As main's sys.stdout and sys.stderr: a reader gone (`eval ... | head`) loses the
    # display and the summary, not the evaluation, its report or its exit status.
    terminal_out, terminal_err = (
        dropping_stream(open(os.dup(number), "w", encoding="utf-8", errors="replace"))  # noqa: SIM115
        for number in saved
    )
    os.dup2(descriptor, 1)
    os.dup2(descriptor, 2)
    try:
        yield terminal_out, terminal_err
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        terminal_out.close()
        terminal_err.close()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for number in (*saved, descriptor):
            os.close(number)


@contextlib.contextmanager
def runs_at_once(jobs: int) -> Iterator[None]:
    """$SSEBENCH_PARALLEL_RUNS is jobs while the evaluation runs: the backend sizes each
    run's default CPU limit by it, so that jobs runs do not oversubscribe the machine."""
    before = os.environ.get(PARALLEL_RUNS_VARIABLE)
    os.environ[PARALLEL_RUNS_VARIABLE] = str(jobs)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(PARALLEL_RUNS_VARIABLE, None)
        else:
            os.environ[PARALLEL_RUNS_VARIABLE] = before


def eval_command(arguments: argparse.Namespace) -> int:
    backend_name = selected_backend_name(arguments.backend)
    backend = load_backend(backend_name)
    entries = matrix_of(arguments)
    dataset = resolve_dataset(arguments.local, arguments.catalog)
    tasks = select_tasks(dataset.tasks, arguments.tasks)
    jobs = arguments.jobs if arguments.jobs is not None else default_jobs(backend, os.cpu_count())
    if jobs < 1:
        raise UserError("--jobs must be at least 1")
    for option in ("max_preparing", "max_starting", "max_removing", "start_attempts", "attempts"):
        value = getattr(arguments, option)
        if value is not None and value < 1:
            raise UserError(f"--{option.replace('_', '-')} must be at least 1")
    if arguments.max_spend is not None and not arguments.max_spend > 0:
        raise UserError("--max-spend must be a positive number of USD")
    limits = Limits.for_jobs(
        jobs,
        preparing=arguments.max_preparing,
        starting=arguments.max_starting,
        removing=arguments.max_removing,
    )
    run_ids = RunIds(arguments.run_id_prefix)
    bases = {
        entry: base_settings(arguments, tasks[0], backend.builds_images, entry) for entry in entries
    }
    # As for `ssebench run`: a reference run applies the task's patch and needs no key.
    model_access: dict[MatrixEntry, ModelAccessPlan] = {}
    plans: dict[str, ModelAccessPlan] = {}
    for entry, base in bases.items():
        if base.model and not base.agent.is_reference:
            if base.model not in plans:
                # Here: an evaluation without models starts without the key client.
                from ssebench.proxy import plan_model_access

                plans[base.model] = plan_model_access(base.model, arguments.budget, backend.proxy())
            model_access[entry] = plans[base.model]
    results_root = next(iter(bases.values())).results_root
    make_results_root(results_root)
    stamp = f"{datetime.now(UTC):%Y%m%d-%H%M%S}"
    # A second evaluation in the same second gets a name of its own.
    stamp = next(
        name
        for name in (stamp, *(f"{stamp}-{number}" for number in range(1, 1000)))
        if not (results_root / f"eval-{name}.json").exists()
        and not (results_root / f"eval-{name}.log").exists()
    )
    report_path = (
        Path(arguments.report) if arguments.report else results_root / f"eval-{stamp}.json"
    )
    if report_path.is_dir():
        raise UserError(f"--report {report_path} is a folder; name a file")
    log_path = results_root / f"eval-{stamp}.log"

    def settings_for(run: TaskRun) -> RunSettings:
        return bases[run.entry].for_task(run.task, run_ids.new())

    with runs_at_once(jobs), output_into(log_path) as (terminal_out, terminal_err):
        log = sys.stderr
        evaluation = Evaluation(
            backend,
            tasks,
            settings_for,
            entries=entries,
            attempts=arguments.attempts,
            results_root=results_root,
            limits=limits,
            retry=RetryPolicy(attempts=arguments.start_attempts),
            rerun=arguments.rerun,
            log=log,
            model_access=model_access,
            max_spend=arguments.max_spend,
        )
        counts = evaluation.counts()
        matrix = ", ".join(entry.label for entry in entries)
        terminal_err.write(
            f"ssebench eval: {dataset.name}, {len(tasks)} tasks x {arguments.attempts} "
            f"attempt(s) x {len(entries)} agent/model ({matrix}): {counts.total} runs "
            f"({counts.skipped} graded already), {backend_name}, {jobs} at once; "
            f"output of the runs: {log_path}\n",
        )
        terminal_err.flush()
        progress = Progress(evaluation, terminal_err, live=terminal_err.isatty())
        evaluation.listener = progress.event
        about = report_about(
            "eval",
            dataset,
            backend=backend_name,
            results=results_root,
            log=log_path,
            rerun=arguments.rerun,
        )
        report_path.parent.mkdir(parents=True, exist_ok=True)
        partial = PartialReports(evaluation, report_path, about)
        try:
            with stop_on_signals(evaluation, terminal_err) as received:
                evaluation.start()
                partial.write()
                while not evaluation.wait(REFRESH_SECONDS):
                    progress.refresh()
                    partial.maybe_write()
        finally:
            progress.close()
        report = evaluation.report({**about, "in_progress": False})
        write_json(report_path, report)
        _print_summary(evaluation, report, report_path, terminal_out)
    if received:
        return 128 + received[0]
    if arguments.require_pass and report["counts"]["passed"] != report["counts"]["total"]:
        return 1
    return 0


class PartialReports:
    """The report as it stands, rewritten while the evaluation runs (in_progress true,
    finished_at null), so the web UI can show it live: at most every
    PARTIAL_REPORT_SECONDS, and only when a run changed state."""

    def __init__(self, evaluation: Evaluation, path: Path, about: dict[str, Any]) -> None:
        self.evaluation = evaluation
        self.path = path
        self.about = about
        self.written_at = 0.0
        self.shown: list[tuple[str, str | None]] = []

    def _states(self) -> list[tuple[str, str | None]]:
        return [(run.state, run.status) for run in self.evaluation.runs]

    def write(self) -> None:
        report = self.evaluation.report({**self.about, "in_progress": True})
        report["finished_at"] = None
        write_json(self.path, report)
        self.written_at = time.monotonic()
        self.shown = self._states()

    def maybe_write(self) -> None:
        if time.monotonic() - self.written_at < PARTIAL_REPORT_SECONDS:
            return
        if self._states() != self.shown:
            self.write()


def _print_summary(
    evaluation: Evaluation, report: dict[str, Any], report_path: Path, out: TextIO
) -> None:
    saved, sys.stdout = sys.stdout, out
    try:
        print_table(
            ("TASK", "AGENT", "MODEL", "ATTEMPT", "STATUS", "RUN ID", "SECONDS", "SPEND", "DETAIL"),
            [
                (
                    run.task.id,
                    run.entry.agent,
                    run.entry.model_label,
                    run.attempt,
                    f"{run.status} (recorded before)" if run.skipped else run.status,
                    run.run_id,
                    None if run.skipped or run.seconds is None else f"{run.seconds:.1f}",
                    None if run.spend is None else f"{run.spend:.4f}",
                    run.error_msg,
                )
                for run in evaluation.runs
            ],
        )
        print()
        for entry in report["entries"]:
            rate = entry["resolved_rate"]
            bounds = rate["ci95"]
            interval = "" if not bounds else f", 95% CI {percent(bounds[0])}-{percent(bounds[1])}"
            print(
                f"{entry['agent']} / {entry['model']}: resolved {rate['count']}/{rate['of']} "
                f"({percent(rate['value'])}{interval}), errors {entry['counts']['error']}, "
                f"not run {entry['counts']['not_run']}"
            )
        counts = report["counts"]
        print(
            f"passed {counts['passed']}  failed {counts['failed']}  error {counts['error']}  "
            f"stopped {counts['stopped']}  not run {counts['not_run']}  "
            f"(skipped {counts['skipped']}) in {clock(report['elapsed_seconds'])}, "
            f"spend {money(report['spend'])}"
        )
        if evaluation.spend_stop is not None:
            print(f"not started: {evaluation.spend_stop}")
        print(f"report: {report_path}")
        out.flush()
    finally:
        sys.stdout = saved
