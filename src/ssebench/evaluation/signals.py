"""An evaluation stopped by signals (`ssebench eval`, `ssebench grade`): the first stops
its runs gracefully, the second kills them, the third exits."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from types import FrameType
from typing import Protocol, TextIO


class Stoppable(Protocol):
    """What a signal stops: an Evaluation (scheduler.py)."""

    def request_stop(self, *, kill: bool = False) -> None: ...


@contextlib.contextmanager
def stop_on_signals(evaluation: Stoppable, out: TextIO) -> Iterator[list[int]]:
    """First SIGTERM/SIGINT: start nothing more, stop the running runs (they are graded
    as far as they got, recorded and removed). Second: kill them. Third: exit now.

    Yields a list that holds the numbers of the signals received.
    """
    received: list[int] = []

    def handle(signum: int, frame: FrameType | None) -> None:
        received.append(signum)
        name = signal.Signals(signum).name
        if len(received) == 1:
            out.write(
                f"\nssebench: {name}: stopping the running runs; a second signal kills them\n"
            )
            out.flush()
            evaluation.request_stop()
        elif len(received) == 2:
            out.write(f"\nssebench: {name}: killing the running runs; a third signal exits\n")
            out.flush()
            evaluation.request_stop(kill=True)
        else:
            out.write(f"\nssebench: {name}: exiting now\n")
            out.flush()
            raise SystemExit(128 + signum)

    previous = {sig: signal.signal(sig, handle) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield received
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
