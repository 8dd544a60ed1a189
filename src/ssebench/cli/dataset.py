"""`ssebench dataset validate|manifest|import|check`: check a dataset, write its
manifest, import SWE-bench-format instances as tasks, and check every task with the
reference and dummy agents."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ssebench.cli.options import add_batch_options, batch_run_options
from ssebench.errors import UserError
from ssebench.tasks.dataset import (
    MANIFEST_FILE,
    load_dataset,
    manifest_differences,
    write_manifest,
)

# The official images' namespace (Docker Hub's swebench/...).
OFFICIAL_NAMESPACE = "swebench"


def register(commands: Any) -> None:
    parser = commands.add_parser("dataset", help="check a dataset and its manifest")
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    validate = actions.add_parser("validate", help="check every task of a dataset folder")
    validate.add_argument("dir", metavar="DIR")
    validate.set_defaults(handler=validate_command)
    manifest = actions.add_parser("manifest", help=f"write {MANIFEST_FILE} for a dataset")
    manifest.add_argument("dir", metavar="DIR")
    manifest.add_argument(
        "--check",
        action="store_true",
        help=f"exit 1 if {MANIFEST_FILE} is not up to date; write nothing",
    )
    manifest.set_defaults(handler=manifest_command)
    register_import(actions)
    register_check(actions)


def register_import(actions: Any) -> None:
    parser = actions.add_parser("import", help="import another benchmark's instances as tasks")
    formats = parser.add_subparsers(dest="format", metavar="FORMAT")
    formats.required = True
    swebench = formats.add_parser(
        "swebench",
        help="SWE-bench-format instances (JSONL, JSON array, parquet, or a published dataset)",
        description="Write one task per SWE-bench-format instance into a dataset folder "
        "(docs/datasets.md). Needs the datasets extra: pip install 'ssebench[datasets]'.",
    )
    swebench.add_argument(
        "instances_file",
        nargs="?",
        metavar="INSTANCES",
        help="a JSONL file, a JSON array or a .parquet file of instances",
    )
    swebench.add_argument(
        "--dataset",
        metavar="NAME",
        help="a published dataset (e.g. SWE-bench/SWE-bench_Lite), loaded with the datasets "
        "library, in place of INSTANCES",
    )
    swebench.add_argument("--split", metavar="SPLIT", help="the split of --dataset (e.g. test)")
    swebench.add_argument("--out", required=True, metavar="DIR", help="the dataset folder")
    swebench.add_argument(
        "--repos",
        metavar="DIR",
        help="a folder of local clones or mirrors: OWNER__NAME, OWNER/NAME or NAME "
        "(default: ssebench's cache, $SSEBENCH_REPOSITORY_CACHE or ~/.cache/ssebench/repositories, "
        "filled from --clone-from)",
    )
    swebench.add_argument(
        "--clone-from",
        metavar="URL",
        help="fetch the commits of a repository that has no clone under --repos (or, "
        "without --repos, in ssebench's cache) from this URL, in which {repo} stands for "
        "OWNER/NAME (default without --repos: https://github.com/{repo}.git)",
    )
    swebench.add_argument(
        "--specs", metavar="FILE", help="install specifications for classic instances (YAML)"
    )
    swebench.add_argument(
        "--instances", nargs="+", metavar="ID", help="import only these instance IDs"
    )
    swebench.add_argument(
        "--python-images",
        choices=("auto", "official", "debian"),
        default="auto",
        help="where a spec's Python X.Y comes from: the official python:X.Y-slim image, "
        "or ssebench/python:X.Y made offline from Debian (scripts/seed-python-image.sh; "
        "3.9, 3.11, 3.13); auto (default): the official one where Docker has or pulls it, "
        "else the Debian one",
    )
    swebench.add_argument(
        "--python-substitute",
        action="append",
        default=[],
        metavar="X.Y=A.B",
        help="build a spec that names Python X.Y with A.B instead, recorded as a deviation",
    )
    swebench.add_argument(
        "--no-resolve-by-date",
        action="store_true",
        help="resolve unpinned requirements to today's releases, not as of the instance's date",
    )
    swebench.add_argument(
        "--official-images",
        nargs="?",
        const=OFFICIAL_NAMESPACE,
        metavar="REGISTRY/NAMESPACE",
        help="use each instance's official prebuilt image "
        "(NAMESPACE/sweb.eval.x86_64.<id>:TAG) as its environment instead of building one "
        f"(default namespace {OFFICIAL_NAMESPACE}; e.g. localhost:5000/swebench for a mirror)",
    )
    swebench.add_argument(
        "--official-tag", default="latest", metavar="TAG", help="the official images' tag (latest)"
    )
    swebench.add_argument("--name", help="the dataset's name if DIR has no dataset.yaml yet")
    swebench.add_argument("--json", action="store_true", help="print the summary as JSON")
    swebench.set_defaults(handler=import_swebench_command)
    harbor = formats.add_parser(
        "harbor",
        help="Harbor task folders (task.toml) and Terminal-Bench 1.x ones (task.yaml)",
        description="Write one task per Harbor or Terminal-Bench 1.x task folder into a "
        "dataset folder; each is graded by its own tests' reward (docs/datasets.md).",
    )
    harbor.add_argument(
        "sources", nargs="+", metavar="DIR", help="task folders, or folders of task folders"
    )
    harbor.add_argument("--out", required=True, metavar="DIR", help="the dataset folder")
    harbor.add_argument(
        "--image-map",
        action="append",
        default=[],
        metavar="NAME=LOCAL",
        help="build on LOCAL where a task's Dockerfile says FROM NAME (a mirror, or a local "
        "stand-in on a machine that cannot pull NAME); repeat for more images",
    )
    harbor.add_argument("--name", help="the dataset's name if DIR has no dataset.yaml yet")
    harbor.add_argument("--json", action="store_true", help="print the summary as JSON")
    harbor.set_defaults(handler=import_harbor_command)


def register_check(actions: Any) -> None:
    parser = actions.add_parser(
        "check",
        help="run the reference (must pass) and dummy (must fail) agent on every task",
        description="Check every task of a dataset: the reference agent's run must be graded "
        "passed and the dummy agent's failed. Writes which tasks are broken and why.",
    )
    parser.add_argument("dir", metavar="DIR")
    parser.add_argument("--tasks", nargs="+", metavar="TASK", help="task IDs (default: all)")
    add_batch_options(
        parser,
        report_default="check-<time>.json",
        timeout=1800,
        timeout_help="seconds each run's agent may take (1800)",
    )
    parser.set_defaults(handler=check_command)


def import_swebench_command(arguments: argparse.Namespace) -> int:
    from ssebench.swebench.builds import EnvironmentOptions
    from ssebench.swebench.importer import import_instances
    from ssebench.swebench.instances import hub_records, read_records
    from ssebench.swebench.python_images import PythonImageSource
    from ssebench.swebench.specs import load_specs

    if (arguments.instances_file is None) == (arguments.dataset is None):
        raise UserError(
            "pass either INSTANCES (a JSONL, JSON or parquet file) or --dataset NAME --split SPLIT"
        )
    if arguments.dataset is not None and not arguments.split:
        raise UserError(f"--dataset {arguments.dataset} needs --split SPLIT, e.g. --split test")
    specs = load_specs(Path(arguments.specs)) if arguments.specs else []
    substitutes = {}
    for pair in arguments.python_substitute:
        specified, _, stand_in = pair.partition("=")
        if not specified or not stand_in:
            raise UserError(f"--python-substitute {pair}: give X.Y=A.B, e.g. 3.8=3.9")
        substitutes[specified] = stand_in
    options = EnvironmentOptions(
        python_images=PythonImageSource(arguments.python_images, progress=sys.stderr),
        resolve_by_date=not arguments.no_resolve_by_date,
        python_substitutes=substitutes,
        official_images=arguments.official_images,
        official_tag=arguments.official_tag,
    )
    if arguments.dataset is not None:
        records = hub_records(arguments.dataset, arguments.split)
        source_name = f"{arguments.dataset} ({arguments.split})"
    else:
        records = read_records(Path(arguments.instances_file))
        source_name = arguments.instances_file
    out = Path(arguments.out)
    report = import_instances(
        records,
        source_name,
        out,
        repos=Path(arguments.repos) if arguments.repos else None,
        specs=specs,
        wanted=arguments.instances or (),
        name=arguments.name,
        clone_from=arguments.clone_from,
        options=options,
        progress=sys.stderr,
    )
    if arguments.json:
        print(
            json.dumps(
                {
                    "out": str(out),
                    "imported": [
                        {"instance_id": instance, "task": task}
                        for instance, task in report.imported
                    ],
                    "skipped": [
                        {"instance_id": skipped.instance_id, "reason": skipped.reason}
                        for skipped in report.skipped
                    ],
                    "unused_fields": report.unused_fields,
                    "warnings": report.warnings,
                },
                indent=2,
            )
        )
    else:
        for instance, task in report.imported:
            print(f"imported {instance} as {out / task}")
        for skipped in report.skipped:
            print(skipped.line())
        for warning in report.warnings:
            print(warning)
        if report.unused_fields:
            print(f"fields not used by the import: {', '.join(report.unused_fields)}")
        print(_totals(len(report.imported), len(report.skipped), out))
    return _import_status(len(report.imported), "instance")


def import_harbor_command(arguments: argparse.Namespace) -> int:
    from ssebench.harbor.importer import import_tasks, parse_image_map

    images = parse_image_map(arguments.image_map)
    sources = [Path(source) for source in arguments.sources]
    for source in sources:
        if not source.is_dir():
            raise UserError(f"{source}: no such folder; pass Harbor task folders")
    out = Path(arguments.out)
    report = import_tasks(sources, out, images=images, name=arguments.name)
    if arguments.json:
        print(json.dumps(dataclasses.asdict(report) | {"out": str(out)}, indent=2))
    else:
        for folder, task in report.imported:
            print(f"imported {folder} as {out / task}")
        for line in report.skipped:
            print(f"skipped {line}")
        for image, local in sorted(report.mapped.items()):
            print(f"image {image} built as {local} (--image-map)")
        if report.unused_keys:
            print(f"keys not used by ssebench: {', '.join(report.unused_keys)}")
        print(_totals(len(report.imported), len(report.skipped), out))
    return _import_status(len(report.imported), "task")


def _totals(imported: int, skipped: int, out: Path) -> str:
    return f"{imported} imported, {skipped} skipped" + (
        f"; the dataset is {out}" if imported else ""
    )


def _import_status(imported: int, what: str) -> int:
    """An import's exit status: 1, saying so, when nothing was imported."""
    if imported:
        return 0
    print(f"ssebench: error: no {what} was imported (see the lines above)", file=sys.stderr)
    return 1


def check_command(arguments: argparse.Namespace) -> int:
    from ssebench.backends import load_backend, selected_backend_name
    from ssebench.cli.eval import (
        RunIds,
        base_settings,
        output_into,
        select_tasks,
    )
    from ssebench.cli.eval_display import Progress
    from ssebench.cli.output import print_table
    from ssebench.evaluation.dataset_check import EXPECTED, verdicts
    from ssebench.evaluation.matrix import Limits, MatrixEntry, TaskRun, default_jobs
    from ssebench.evaluation.scheduler import Evaluation
    from ssebench.results.directory import make_results_root, write_json

    dataset = load_dataset(Path(arguments.dir))
    tasks = select_tasks(dataset.tasks, arguments.tasks)
    backend_name = selected_backend_name(arguments.backend)
    backend = load_backend(backend_name)
    jobs = arguments.jobs if arguments.jobs is not None else default_jobs(backend, os.cpu_count())
    if jobs < 1:
        raise UserError("--jobs must be at least 1")
    limits = Limits.for_jobs(jobs)
    options = batch_run_options(arguments, dataset.path)
    run_ids = RunIds(arguments.run_id_prefix)
    results_root = Path(arguments.results).resolve()
    make_results_root(results_root)
    stamp = f"{datetime.now(UTC):%Y%m%d-%H%M%S}"
    log_path = results_root / f"check-{stamp}.log"
    report_path = (
        Path(arguments.report) if arguments.report else results_root / f"check-{stamp}.json"
    )
    with output_into(log_path) as (terminal_out, terminal_err):
        bases = {}
        for agent, _ in EXPECTED:
            options.agent = agent
            bases[agent] = base_settings(
                options, tasks[0], backend.builds_images, MatrixEntry(agent)
            )

        def settings_for(run: TaskRun) -> Any:
            return dataclasses.replace(bases[run.entry.agent], task=run.task, run_id=run_ids.new())

        # One evaluation of both agents: a task's dummy run does not wait for every
        # other task's reference run (one slow task used to double a check's time).
        evaluation = Evaluation(
            backend,
            tasks,
            settings_for,
            entries=[MatrixEntry(agent) for agent, _ in EXPECTED],
            results_root=results_root,
            limits=limits,
            rerun=True,
            log=sys.stderr,
        )
        progress = Progress(evaluation, terminal_err, live=False, command="ssebench dataset check")
        evaluation.listener = progress.event
        terminal_err.write(
            f"ssebench dataset check: {dataset.name}, {len(tasks)} tasks, agents "
            f"{' and '.join(agent for agent, _ in EXPECTED)}, {jobs} at once; "
            f"output of the runs: {log_path}\n"
        )
        terminal_err.flush()
        evaluation.run()
        runs_by_agent: dict[str, list[TaskRun]] = {
            agent: [run for run in evaluation.runs if run.entry.agent == agent]
            for agent, _ in EXPECTED
        }
        results = verdicts(runs_by_agent)
        broken = [verdict for verdict in results if not verdict.sound]
        report_path.parent.mkdir(parents=True, exist_ok=True)
        write_json(
            report_path,
            {
                "schema": 1,
                "command": "dataset check",
                "dataset": {"name": dataset.name, "path": str(dataset.path)},
                "backend": backend_name,
                "jobs": jobs,
                "log": str(log_path),
                "sound": len(results) - len(broken),
                "broken": len(broken),
                "tasks": [verdict.to_json() for verdict in results],
            },
        )
        saved, sys.stdout = sys.stdout, terminal_out
        try:
            print_table(
                ("TASK", "VERDICT", "WHY"),
                [
                    (verdict.task, "ok" if verdict.sound else "BROKEN", "; ".join(verdict.problems))
                    for verdict in results
                ],
            )
            for verdict in results:
                for kind, names in verdict.failed_tests.items():
                    print(f"{verdict.task}: the reference run failed {len(names)} {kind}:")
                    for name in names:
                        print(f"  {name}")
            print(
                f"{len(results) - len(broken)} sound, {len(broken)} broken; report: {report_path}"
            )
            terminal_out.flush()
        finally:
            sys.stdout = saved
    return 1 if broken else 0


def validate_command(arguments: argparse.Namespace) -> int:
    dataset = load_dataset(Path(arguments.dir))
    differences = manifest_differences(dataset)
    print(f"{dataset.name} {dataset.version}: {len(dataset.tasks)} tasks are well-formed")
    if differences:
        print(
            f"ssebench: warning: {MANIFEST_FILE} is not up to date ({differences[0]}); "
            f"run: ssebench dataset manifest {arguments.dir}",
            file=sys.stderr,
        )
    return 0


def manifest_command(arguments: argparse.Namespace) -> int:
    dataset = load_dataset(Path(arguments.dir))
    if arguments.check:
        differences = manifest_differences(dataset)
        for difference in differences:
            print(f"ssebench: {difference}", file=sys.stderr)
        if differences:
            print(
                f"ssebench: error: {MANIFEST_FILE} is out of date; run: ssebench dataset "
                f"manifest {arguments.dir}",
                file=sys.stderr,
            )
            return 1
        print(f"{MANIFEST_FILE} is up to date ({len(dataset.tasks)} tasks)")
        return 0
    path = write_manifest(dataset)
    print(f"wrote {path} ({len(dataset.tasks)} tasks)")
    return 0
