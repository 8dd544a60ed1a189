"""`ssebench tasks list`, `ssebench tasks check` and `ssebench build-case`."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from typing import Any

from ssebench.cli.images import add_image_backend_option
from ssebench.cli.output import print_json, print_table
from ssebench.cli.run import add_dataset_options
from ssebench.errors import UserError
from ssebench.tasks.model import Task
from ssebench.tasks.sources import resolve_dataset


def register(commands: Any) -> None:
    parser = commands.add_parser("tasks", help="the tasks of a dataset")
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    listing = actions.add_parser("list", help="list the tasks")
    add_dataset_options(listing)
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(handler=list_command)
    check = actions.add_parser(
        "check",
        help="run tasks' build and tests inside their case images",
        description="Build (or reuse) each task's case image and, in a container of it "
        "without network, check the two outcomes a task needs: unpatched, build and test "
        "pass and hidden_test fails; with reference.patch, all three pass. Each in a fresh "
        "copy, as an unprivileged user. Needs Docker.",
    )
    check.add_argument(
        "--tasks", nargs="+", required=True, metavar="TASK", help="task IDs, or 'all'"
    )
    add_dataset_options(check)
    check.add_argument("--platform", help="linux/<arch>")
    check.add_argument("--build", action="store_true", help="rebuild the case image")
    check.add_argument("--json", action="store_true")
    check.set_defaults(handler=check_command)

    build = commands.add_parser(
        "build-case",
        help="build the case images of tasks",
        description="Build (or find current) the case image of each task, with the "
        "backend's image builder (--backend), and print their names.",
    )
    build.add_argument(
        "--tasks", nargs="+", required=True, metavar="TASK", help="task IDs, or 'all'"
    )
    add_dataset_options(build)
    build.add_argument("--platform", help="linux/<arch>")
    build.add_argument("--build", action="store_true", help="rebuild even when cached")
    add_image_backend_option(build)
    build.set_defaults(handler=build_case_command)


def list_command(arguments: argparse.Namespace) -> int:
    dataset = resolve_dataset(arguments.local, arguments.catalog)
    if arguments.json:
        print_json(
            {
                "dataset": dataset.name,
                "version": dataset.version,
                "tasks": [task.summary() for task in dataset.tasks],
            }
        )
        return 0
    print_table(
        ("TASK", "LANGUAGE", "PROJECT", "DESCRIPTION"),
        [(task.id, task.language, task.project, task.description) for task in dataset.tasks],
    )
    return 0


def _local_tasks(arguments: argparse.Namespace, command: str) -> list[Task]:
    if arguments.catalog:
        # A catalog serves the tasks' metadata, not the files a case image is built from.
        raise UserError(f"{command} builds from the tasks' files: it needs --local, not --catalog")
    if arguments.platform and not arguments.platform.startswith("linux/"):
        raise UserError("--platform must look like linux/<arch>, e.g. linux/amd64")
    dataset = resolve_dataset(arguments.local, None)
    if arguments.tasks == ["all"]:
        return list(dataset.tasks)
    return [dataset.task(task_id) for task_id in arguments.tasks]


def check_command(arguments: argparse.Namespace) -> int:
    from ssebench.images.case_checks import check_task
    from ssebench.images.output import BuildOutput

    checks = []
    for task in _local_tasks(arguments, "tasks check"):
        print(f"ssebench: checking {task.id} in its case image", file=sys.stderr, flush=True)
        check = check_task(
            task,
            platform=arguments.platform,
            rebuild=arguments.build,
            output=BuildOutput(quiet=arguments.json),
        )
        checks.append(check)
        if not arguments.json:
            for step in check.steps:
                print(step.line())
            print(f"{'ok' if check.ok else 'failed'}\t{task.id}", *check.problems[:1], sep="\t")
    if arguments.json:
        print_json(
            {
                "tasks": [
                    {
                        "task": check.task,
                        "image": check.image,
                        "ok": check.ok,
                        "problems": check.problems,
                        "steps": [dataclasses.asdict(step) for step in check.steps],
                    }
                    for check in checks
                ]
            }
        )
    return 0 if all(check.ok for check in checks) else 1


def build_case_command(arguments: argparse.Namespace) -> int:
    from ssebench.cli.images import image_builder
    from ssebench.image_layers import build_case_images

    tasks = _local_tasks(arguments, "build-case")
    builder = image_builder(arguments.backend)
    for image in build_case_images(
        tasks, builder, platform=arguments.platform, rebuild=arguments.build
    ):
        print(image)
    return 0
