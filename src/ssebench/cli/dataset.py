"""`ssebench dataset validate` and `ssebench dataset manifest`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ssebench.tasks.dataset import (
    MANIFEST_FILE,
    load_dataset,
    manifest_differences,
    write_manifest,
)


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
