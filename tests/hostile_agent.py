"""The hostile fixture agent (tests/fixtures/agents/hostile) for the tests of the archive
read-out on Docker and on Kubernetes: the Agent, and the check of the run directory it
leaves on the host.

The agent is not one of the package's agents (they are the ones `ssebench run` offers),
so these tests drive the Runner and a backend directly, as `ssebench run` does.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from ssebench.agents import Agent

HOSTILE = Path(__file__).resolve().parent / "fixtures" / "agents" / "hostile"
# Mode bits the host may hold: never setuid, setgid, sticky, group or other write.
ALLOWED = (stat.S_ISUID | stat.S_ISGID | stat.S_ISVTX | stat.S_IWGRP | stat.S_IWOTH) ^ 0o7777
# What the agent writes into the setuid file (and its hard link).
SETUID_TEXT = "#!/bin/sh\nid\n"


def hostile_agent() -> Agent:
    data = json.loads((HOSTILE / "agent.json").read_text())
    return Agent(
        name=data["name"],
        version=data["version"],
        description=data["description"],
        path=HOSTILE,
        needs_model=False,
    )


def tree_of(run_dir: Path) -> tuple[list[str], int, int]:
    """(entries of a kind or mode the host must never hold, entries in archive/, bytes
    of the files in archive/), walked without following anything."""
    bad, entries, size = [], 0, 0
    for folder, directories, files in os.walk(run_dir, followlinks=False):
        for name in (*directories, *files):
            path = Path(folder) / name
            info = path.lstat()
            if not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)):
                bad.append(f"{path}: type {stat.S_IFMT(info.st_mode):o}")
            elif stat.S_IMODE(info.st_mode) & ~ALLOWED:
                bad.append(f"{path}: mode {stat.S_IMODE(info.st_mode):o}")
            if run_dir / "archive" in path.parents:
                entries += 1
                if stat.S_ISREG(info.st_mode):
                    size += info.st_size
    return bad, entries, size
