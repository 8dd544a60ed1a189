"""Runs the entrypoint in a process of its own, with a test layout and the current
user as both accounts: the signal tests need a real process to send SIGTERM to.

    python -m tests.unit.runtime.entrypoint_harness LAYOUT_JSON AGENT_ARGV...
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ssebench.runtime.accounts import Accounts
from ssebench.runtime.config import Layout
from ssebench.runtime.entrypoint import main


def run() -> int:
    paths = json.loads(sys.argv[1])
    layout = Layout(**{name: Path(value) for name, value in paths.items()})
    return main(
        sys.argv[2:], layout=layout, accounts=Accounts.current_user(), host="127.0.0.1", port=0
    )


if __name__ == "__main__":
    sys.exit(run())
