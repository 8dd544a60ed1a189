"""mini-swe-agent's `test_patch` command (agents/mini-swe-agent/tools/test_patch): the
MCP client that gives a bash-only agent the tool layer's test_patch, against the
daemon's real MCP endpoint."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ssebench.runtime.accounts import Accounts
from ssebench.runtime.daemon import Daemon

from .conftest import FIXED, Project
from .test_daemon import start_daemon

# calc.add(0, 0) is no longer 0: the project's visible test fails.
BROKEN = "def add(a, b):\n    return a - b + 1\n"
COMMAND = (
    Path(__file__).resolve().parents[3]
    / "src"
    / "ssebench"
    / "agents"
    / "mini-swe-agent"
    / "tools"
    / "test_patch"
)


@pytest.fixture
def daemon(project: Project, accounts: Accounts) -> Iterator[Daemon]:
    started = start_daemon(project, accounts, 1)
    yield started
    started.stop()


def call_test_patch(url: str | None) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ["PATH"]}
    if url is not None:
        env["SSE_MCP_URL"] = url
    return subprocess.run(
        [sys.executable, str(COMMAND)], capture_output=True, text=True, env=env, timeout=120
    )


def test_a_good_tree_passes_and_the_daemon_records_the_call(
    daemon: Daemon, project: Project
) -> None:
    (project.source / "calc.py").write_text(FIXED)
    done = call_test_patch(f"http://127.0.0.1:{daemon.port}/mcp")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("PASSED: the build and the tests pass"), done.stdout
    events = [(e["type"], e.get("tool")) for e in project.dialog()]
    assert events == [("tool_call", "test"), ("tool_result", "test")]


def test_a_failing_tree_prints_failed_with_the_log_and_exits_1(
    daemon: Daemon, project: Project
) -> None:
    (project.source / "calc.py").write_text(BROKEN)
    done = call_test_patch(f"http://127.0.0.1:{daemon.port}/mcp")
    assert done.returncode == 1, done.stderr
    assert done.stdout.startswith("FAILED: the build and the tests did not pass")
    assert "AssertionError" in done.stdout


def test_without_a_server_it_says_so_in_one_line(daemon: Daemon) -> None:
    missing = call_test_patch(None)
    assert missing.returncode == 2 and missing.stdout == ""
    assert missing.stderr == "test_patch: SSE_MCP_URL is not set (no tool layer here)\n"
    wrong = call_test_patch(f"http://127.0.0.1:{daemon.port}/no-mcp-here")
    assert wrong.returncode == 2
    assert wrong.stderr.startswith("test_patch: the MCP server answered HTTP 404")
    assert len(wrong.stderr.splitlines()) == 1
