"""What both roles of the container's PID 1 share (runtime/role.py): without a run
directory there are no logs and no result.json, so either says why on stdout, prefixed
as its own lines are, and exits 2."""

from __future__ import annotations

import io
from pathlib import Path

from ssebench.runtime.accounts import Accounts
from ssebench.runtime.agent_side import ECHO_PREFIX, AgentSide
from ssebench.runtime.entrypoint import Entrypoint
from ssebench.runtime.role import EXIT_SETUP_ERROR

from .conftest import Project


def test_either_role_without_a_run_directory_says_so_and_exits_2(
    project: Project, accounts: Accounts, tmp_path: Path
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    # The results folder would be inside a file: it cannot be made.
    environ = project.environ(SSE_RESULTS=str(blocker / "results"))
    for role, prefix in [
        (Entrypoint(["true"], environ=environ, layout=project.layout, accounts=accounts,
                    stdout=io.BytesIO(), host="127.0.0.1", port=0), "ssebench: "),
        (AgentSide(["true"], environ=environ, layout=project.layout, account=accounts.agent,
                   stdout=io.BytesIO()), ECHO_PREFIX),
    ]:  # fmt: skip
        assert role.run() == EXIT_SETUP_ERROR
        assert isinstance(role.stdout, io.BytesIO)
        said = role.stdout.getvalue().decode()
        assert said.startswith(f"{prefix}cannot prepare the run directory: "), said
