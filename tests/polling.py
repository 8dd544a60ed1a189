"""Waiting, in tests, for something another process does."""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_until(
    condition: Callable[[], object], what: str, seconds: float = 180, interval: float = 0.5
) -> None:
    """Return once condition() is true; AssertionError naming what after seconds."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(interval)
    raise AssertionError(f"timed out after {seconds:g} s waiting for {what}")
