"""Wires the command groups into one parser; each group lives in its own module."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ssebench import __version__
from ssebench.cli import dataset, doctor, run, runs, tasks
from ssebench.errors import SsebenchError

COMMAND_GROUPS = (run, runs, tasks, dataset, doctor)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ssebench",
        description="Run coding agents on software-engineering tasks in containers "
        "and grade what they leave behind.",
    )
    parser.add_argument("--version", action="version", version=f"ssebench {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True
    for group in COMMAND_GROUPS:
        group.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    arguments = parser.parse_args(argv)
    try:
        code: int = arguments.handler(arguments)
    except SsebenchError as error:
        print(f"ssebench: error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("ssebench: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    return code


if __name__ == "__main__":
    sys.exit(main())
