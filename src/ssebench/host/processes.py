"""Processes on the runner's host (not the container's: that is runtime/processes.py),
shared by the CLI, prune and the fake backend."""

from __future__ import annotations

import os


def process_exists(pid: int) -> bool:
    """True when a process with this ID exists on this machine (ours or not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, it belongs to someone else
    return True
