"""`ssebench grade --predictions FILE`: grade patches made elsewhere (a SWE-bench
predictions file, the form of every leaderboard submission) over an imported dataset.

Each non-empty patch is an ordinary run of the given-patch agent (it applies the patch
as the agent's user, as the official harness's commands do), graded like any agent's
work: the tree's diff applied to a pristine copy, the hidden tests run. The runs are an
Evaluation, so they run several at once, show progress, and a grade recorded under
--results for the same instance, model and patch counts: run again after an
interruption, nothing is graded twice. Two reports: ssebench's own (the eval report,
which `ssebench report` and the web UI read) and one in the official harness's shape.
See docs/datasets.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import os
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ssebench.cli.options import add_batch_options, batch_run_options
from ssebench.errors import UserError
from ssebench.results.directory import path_component

AGENT = "given-patch"
# The given-patch agent's exit status when neither git apply nor patch applies it.
DOES_NOT_APPLY = 4  # not 3: that is every wrapper's model error (agent_kit.py)
DOES_NOT_APPLY_REASON = "the patch does not apply (git apply and patch --fuzz=5 refused it)"


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "grade",
        help="grade a SWE-bench predictions file over an imported dataset",
        description="Grade each patch of a predictions file (JSON lines, a JSON array or "
        "object of instance_id, model_name_or_path, model_patch) on its task of an imported "
        "SWE-bench dataset, as an agent's patch is graded. Writes ssebench's report and one "
        "in the official harness's shape.",
    )
    parser.add_argument("--predictions", required=True, metavar="FILE", help="the predictions file")
    parser.add_argument(
        "--dataset",
        dest="local",
        metavar="DIR",
        help="the imported dataset (default: $SSEBENCH_DATASET or ./datasets/pilot)",
    )
    parser.add_argument(
        "--instances", nargs="+", metavar="ID", help="grade only these instance IDs"
    )
    add_batch_options(
        parser,
        report_default="grade-<time>.json; ssebench's, the eval report's schema",
        timeout=600,
        timeout_help="seconds the patch may take to apply (600)",
    )
    parser.add_argument(
        "--official-report",
        metavar="FILE",
        help="the report in the official harness's shape "
        "(default <results>/<model>.grade-<time>.json)",
    )
    parser.add_argument(
        "--rerun", action="store_true", help="grade again what is graded already under --results"
    )
    parser.set_defaults(handler=grade_command)


def grade_command(arguments: argparse.Namespace) -> int:
    from ssebench.backends import load_backend, selected_backend_name
    from ssebench.cli.eval import (
        RunIds,
        base_settings,
        output_into,
        report_about,
        runs_at_once,
    )
    from ssebench.cli.eval_display import Progress
    from ssebench.evaluation.matrix import Limits, MatrixEntry, TaskRun, default_jobs
    from ssebench.evaluation.scheduler import Evaluation
    from ssebench.evaluation.signals import stop_on_signals
    from ssebench.results.directory import make_results_root, write_json
    from ssebench.swebench.predictions import official_report, read_predictions, tasks_by_instance
    from ssebench.tasks.sources import resolve_dataset

    dataset = resolve_dataset(arguments.local, None)
    predictions = read_predictions(Path(arguments.predictions))
    for problem in predictions.problems:
        print(f"ssebench: {problem}", file=sys.stderr)
    tasks = tasks_by_instance(dataset.tasks)
    if not tasks:
        raise UserError(
            f"The dataset {dataset.path} has no imported SWE-bench instance; import one "
            "with: ssebench dataset import swebench"
        )
    if arguments.instances:
        unknown = [name for name in arguments.instances if name not in tasks]
        if unknown:
            raise UserError(f"--instances: {unknown[0]} is not in the dataset {dataset.path}")
        tasks = {name: tasks[name] for name in dict.fromkeys(arguments.instances)}
    graded = {}
    for instance_id, prediction in predictions.by_instance.items():
        if instance_id not in tasks:
            if not arguments.instances:
                print(
                    f"ssebench: --predictions {arguments.predictions} {prediction.where}: "
                    f"{instance_id} is not in the dataset {dataset.path}; skipped",
                    file=sys.stderr,
                )
            continue
        graded[instance_id] = prediction
    models = list(dict.fromkeys(prediction.model for prediction in graded.values()))
    if len(models) > 1:
        raise UserError(
            f"--predictions {arguments.predictions} holds {len(models)} models "
            f"({', '.join(models)}); grade one file per model"
        )
    if not graded:
        raise UserError(
            f"--predictions {arguments.predictions}: no prediction names an instance of "
            f"the dataset {dataset.path}"
        )
    model = models[0]
    to_run = {name: p for name, p in graded.items() if not p.empty}

    backend_name = selected_backend_name(arguments.backend)
    backend = load_backend(backend_name)
    jobs = arguments.jobs if arguments.jobs is not None else default_jobs(backend, os.cpu_count())
    if jobs < 1:
        raise UserError("--jobs must be at least 1")
    options = batch_run_options(arguments, dataset.path)
    entry = MatrixEntry(AGENT, model)
    run_ids = RunIds(arguments.run_id_prefix)
    results_root = Path(arguments.results).resolve()
    make_results_root(results_root)
    stamp = f"grade-{datetime.now(UTC):%Y%m%d-%H%M%S}"
    log_path = results_root / f"{stamp}.log"
    report_path = Path(arguments.report) if arguments.report else results_root / f"{stamp}.json"
    official_path = (
        Path(arguments.official_report)
        if arguments.official_report
        else results_root / f"{path_component(model.replace('/', '__'))}.{stamp}.json"
    )
    for path, option in ((report_path, "--report"), (official_path, "--official-report")):
        if path.is_dir():
            raise UserError(f"{option} {path} is a folder; name a file")
    patches = {
        task.id: to_run[name].patch.encode() for name, task in tasks.items() if name in to_run
    }
    digests = {task_id: hashlib.sha256(patch).hexdigest() for task_id, patch in patches.items()}

    def same_patch(task_id: str, summary: Mapping[str, Any]) -> bool:
        config = summary.get("config")
        return isinstance(config, dict) and config.get("given_patch_sha256") == digests.get(task_id)

    with runs_at_once(jobs), output_into(log_path) as (terminal_out, terminal_err):
        base = base_settings(options, next(iter(tasks.values())), backend.builds_images, entry)

        def settings_for(run: TaskRun) -> Any:
            return dataclasses.replace(
                base, task=run.task, run_id=run_ids.new(), given_patch=patches[run.task.id]
            )

        evaluation = Evaluation(
            backend,
            [tasks[name] for name in to_run],
            settings_for,
            entries=[entry],
            results_root=results_root,
            limits=Limits.for_jobs(jobs),
            rerun=arguments.rerun,
            log=sys.stderr,
            counts_as_recorded=same_patch,
        )
        counts = evaluation.counts()
        terminal_err.write(
            f"ssebench grade: {len(graded)} predictions of {model} on {dataset.name} "
            f"({len(graded) - len(to_run)} empty, {counts.skipped} graded already), "
            f"{backend_name}, {jobs} at once; output of the runs: {log_path}\n"
        )
        terminal_err.flush()
        progress = Progress(
            evaluation, terminal_err, live=terminal_err.isatty(), command="ssebench grade"
        )
        evaluation.listener = progress.event
        try:
            with stop_on_signals(evaluation, terminal_err) as received:
                evaluation.run()
        finally:
            progress.close()
        instance_of_task = {task.id: name for name, task in tasks.items()}
        reasons = {instance_of_task[run.task.id]: _reason(run) for run in evaluation.runs}
        outcomes = {
            instance_of_task[run.task.id]: _outcome(
                run.status, reasons[instance_of_task[run.task.id]]
            )
            for run in evaluation.runs
        }
        about = {
            **report_about(
                "grade",
                dataset,
                backend=backend_name,
                results=results_root,
                log=log_path,
                rerun=arguments.rerun,
            ),
            "predictions": str(Path(arguments.predictions).resolve()),
            "official_report": str(official_path),
        }
        report = evaluation.report({**about, "in_progress": False})
        report["predictions"] = [
            {
                "instance_id": name,
                "task": tasks[name].id,
                "outcome": "empty_patch" if prediction.empty else outcomes.get(name, "error"),
                "reason": None if prediction.empty else reasons.get(name),
            }
            for name, prediction in graded.items()
        ]
        official = official_report(list(tasks), graded, outcomes)
        for path in (report_path, official_path):
            path.parent.mkdir(parents=True, exist_ok=True)
        write_json(report_path, report)
        write_json(official_path, official, sort_keys=False)  # in the harness's order
        _print_summary(report, official, report_path, official_path, terminal_out)
    if received:
        return 128 + received[0]
    return 0


def _reason(run: Any) -> str | None:
    """Why a prediction is not resolved: the patch that does not apply (the given-patch
    agent's exit status in result.json), else the tests that failed, else the run's own
    error_msg."""
    from ssebench.evaluation.dataset_check import failed_tests
    from ssebench.results.files import read_json_object

    if run.status == "passed":
        return None
    if run.run_dir is not None:
        # Read as every file of a run directory is: bounded, following no link.
        result = read_json_object(run.run_dir, "result.json")
        if result is not None and result.get("agent_exit_code") == DOES_NOT_APPLY:
            return DOES_NOT_APPLY_REASON
    failed = failed_tests(run)
    if run.status == "failed" and failed:
        return "failed: " + ", ".join(f"{len(names)} {kind}" for kind, names in failed.items())
    return str(run.error_msg) if run.error_msg else None


def _outcome(status: str | None, reason: str | None) -> str:
    from ssebench.swebench.predictions import ERROR, RESOLVED, UNRESOLVED

    if status == "passed":
        return RESOLVED
    if status == "failed" or reason == DOES_NOT_APPLY_REASON:
        return UNRESOLVED
    return ERROR


def _print_summary(
    report: dict[str, Any],
    official: dict[str, Any],
    report_path: Path,
    official_path: Path,
    out: Any,
) -> None:
    from ssebench.cli.output import print_table

    saved, sys.stdout = sys.stdout, out
    try:
        print_table(
            ("INSTANCE", "OUTCOME", "REASON"),
            [
                (line["instance_id"], line["outcome"], line["reason"])
                for line in report["predictions"]
            ],
        )
        print(
            f"resolved {official['resolved_instances']}  unresolved "
            f"{official['unresolved_instances']}  empty patch "
            f"{official['empty_patch_instances']}  error {official['error_instances']}  "
            f"(of {official['submitted_instances']} submitted, "
            f"{official['total_instances']} in the dataset)"
        )
        print(f"report: {report_path}")
        print(f"official report: {official_path}")
        out.flush()
    finally:
        sys.stdout = saved
