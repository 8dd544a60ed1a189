"""Wires the command groups into one parser; each group lives in its own module."""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
from collections.abc import Sequence
from types import FrameType

from ssebench import __version__
from ssebench.errors import SsebenchError
from ssebench.host.output import dropping_stream

# typing.TYPE_CHECKING without importing typing, whose import is 2 ms of `ssebench runs
# list` (docs/performance.md, "`runs list` without the extension API"). The modules on
# that path use typing only in annotations, and mypy takes any TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# Every command: its name, the module of ssebench.cli that registers it, and its one-line
# help. Only the module of the command given is imported (each one imports much of
# ssebench), so `ssebench --help` and each command start quickly; the help is repeated
# here for `ssebench --help`, and tests/unit/test_cli_startup.py checks it is the module's.
COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("run", "run", "run one agent on one task and grade it"),
    ("eval", "eval", "run agents and models on every task of a dataset"),
    ("grade", "grade", "grade a SWE-bench predictions file over an imported dataset"),
    ("report", "report", "show an evaluation report, or compare two"),
    ("runs", "runs", "list, watch, stop and reach runs"),
    ("tasks", "tasks", "the tasks of a dataset"),
    ("build-case", "tasks", "build the case images of tasks"),
    ("agents", "agents", "the agents ssebench can run"),
    ("dataset", "dataset", "check a dataset and its manifest"),
    ("doctor", "doctor", "check what runs need on this machine"),
    ("webui", "webui", "watch, read, launch and reach runs in a browser"),
    ("proxy", "proxy", "the local LiteLLM proxy stack"),
    ("images", "images", "publish prebuilt images; build service images; publish the chart"),
)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where SIGINT raises KeyboardInterrupt, so that a SIGTERM (a
    service manager, a CI runner, kill) unwinds as Ctrl-C does: every `finally` runs
    (scratch folders, helper containers, a build in progress), and the run is recorded.
    Commands with a handler of their own (a run, an evaluation) replace this one."""


def _terminated(signum: int, frame: FrameType | None) -> None:
    raise Terminated()


class HelpFormatter(argparse.HelpFormatter):
    """argparse's, with the width found without importing shutil (argparse imports it
    for get_terminal_size, with bz2, lzma and zlib: a tenth of `ssebench --help`)."""

    def __init__(
        self,
        prog: str,
        indent_increment: int = 2,
        max_help_position: int = 24,
        width: int | None = None,
    ) -> None:
        super().__init__(prog, indent_increment, max_help_position, width or _columns() - 2)


class ArgumentParser(argparse.ArgumentParser):
    """argparse's, with HelpFormatter; add_subparsers makes the commands' parsers of
    this class too."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)


def _columns() -> int:
    """shutil.get_terminal_size().columns: $COLUMNS, else the terminal's, else 80."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else 80


def build_parser(words: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser of ssebench. Given the command line's words, only the command named
    there is registered in full (the others are names with their help); without them,
    every command is."""
    parser = ArgumentParser(
        prog="ssebench",
        description="Run coding agents on software-engineering tasks in containers "
        "and grade what they leave behind.",
    )
    parser.add_argument("--version", action="version", version=f"ssebench {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True
    chosen = None if words is None else next((w for w in words if not w.startswith("-")), "")
    chosen_module = next((module for name, module, _ in COMMANDS if name == chosen), None)
    registered: set[str] = set()
    for name, module, help_text in COMMANDS:
        if module in registered:
            continue
        if chosen is None or module == chosen_module:
            importlib.import_module(f"ssebench.cli.{module}").register(commands)
            registered.add(module)
        else:
            commands.add_parser(name, help=help_text)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    # Everything after the first "--" is a command for a container (runs exec); it is
    # split off here because argparse cannot hold options and a free command apart.
    trailing: list[str] | None = None
    if "--" in words:
        split = words.index("--")
        words, trailing = words[:split], words[split + 1 :]
    parser = build_parser(words)
    arguments = parser.parse_args(words)
    if trailing is not None:
        if not hasattr(arguments, "trailing_command"):
            parser.error("'--' is only for `ssebench runs exec ID -- COMMAND...`")
        arguments.trailing_command = trailing
    # Signal handlers belong to the main thread (tests call main from others too); the
    # check is signal's own ValueError, not threading, whose import --help need not pay.
    try:
        previous = signal.signal(signal.SIGTERM, _terminated)
        in_main_thread = True
    except ValueError:
        previous, in_main_thread = None, False
    # A reader that goes away (`ssebench runs prune | head -1`, a closed terminal) loses
    # what is written from then on, not the command's work nor its exit status.
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = dropping_stream(sys.stdout), dropping_stream(sys.stderr)
    try:
        code: int = arguments.handler(arguments)
    except SsebenchError as error:
        print(f"ssebench: error: {error}", file=sys.stderr)
        return 1
    except Terminated:
        print("ssebench: terminated (SIGTERM)", file=sys.stderr)
        return 128 + signal.SIGTERM
    except KeyboardInterrupt:
        print("ssebench: interrupted", file=sys.stderr)
        return 130
    finally:
        sys.stdout, sys.stderr = streams
        if in_main_thread:
            signal.signal(signal.SIGTERM, previous)
    return code


if __name__ == "__main__":
    sys.exit(main())
