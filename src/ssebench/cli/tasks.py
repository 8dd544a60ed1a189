"""`ssebench tasks list` and `ssebench build-case`."""

from __future__ import annotations

import argparse
from typing import Any

from ssebench.cli.output import print_json, print_table
from ssebench.cli.run import add_dataset_options
from ssebench.errors import UserError
from ssebench.tasks.dataset import resolve_dataset


def register(commands: Any) -> None:
    parser = commands.add_parser("tasks", help="the tasks of a dataset")
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    listing = actions.add_parser("list", help="list the tasks")
    add_dataset_options(listing)
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(handler=list_command)

    build = commands.add_parser("build-case", help="build the case images of tasks")
    build.add_argument(
        "--tasks", nargs="+", required=True, metavar="TASK", help="task IDs, or 'all'"
    )
    add_dataset_options(build)
    build.add_argument("--platform", help="linux/<arch>")
    build.add_argument("--build", action="store_true", help="rebuild even when cached")
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


def build_case_command(arguments: argparse.Namespace) -> int:
    from ssebench.images import build_case_images

    if arguments.catalog:
        # A catalog serves the tasks' metadata, not the files a case image is built from.
        raise UserError("build-case builds from the tasks' files: it needs --local, not --catalog")
    dataset = resolve_dataset(arguments.local, arguments.catalog)
    if arguments.tasks == ["all"]:
        tasks = list(dataset.tasks)
    else:
        tasks = [dataset.task(task_id) for task_id in arguments.tasks]
    for image in build_case_images(tasks, platform=arguments.platform, rebuild=arguments.build):
        print(image)
    return 0
