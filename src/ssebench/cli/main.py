"""Wires the command groups into one parser; each group lives in its own module."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType

from ssebench import __version__
from ssebench.cli import agents, dataset, doctor, images, proxy, report, run, runs, tasks, webui
from ssebench.cli import eval as evaluate
from ssebench.errors import SsebenchError

COMMAND_GROUPS = (run, evaluate, report, runs, tasks, agents, dataset, doctor, webui, proxy, images)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where SIGINT raises KeyboardInterrupt, so that a SIGTERM (a
    service manager, a CI runner, kill) unwinds as Ctrl-C does: every `finally` runs
    (scratch folders, helper containers, a build in progress), and the run is recorded.
    Commands with a handler of their own (a run, an evaluation) replace this one."""


def _terminated(signum: int, frame: FrameType | None) -> None:
    raise Terminated()


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
    words = list(sys.argv[1:] if argv is None else argv)
    # Everything after the first "--" is a command for a container (runs exec); it is
    # split off here because argparse cannot hold options and a free command apart.
    trailing: list[str] | None = None
    if "--" in words:
        split = words.index("--")
        words, trailing = words[:split], words[split + 1 :]
    arguments = parser.parse_args(words)
    if trailing is not None:
        if not hasattr(arguments, "trailing_command"):
            parser.error("'--' is only for `ssebench runs exec ID -- COMMAND...`")
        arguments.trailing_command = trailing
    # Signal handlers belong to the main thread (tests call main from others too).
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminated) if in_main_thread else None
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
    except BrokenPipeError:
        return 0
    finally:
        if in_main_thread:
            signal.signal(signal.SIGTERM, previous)
    return code


if __name__ == "__main__":
    sys.exit(main())
