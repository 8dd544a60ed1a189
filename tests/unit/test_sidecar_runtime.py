"""The two entrypoints of a sidecar run, in one process as the current user: the
environment container's (the entrypoint in its environment role) and the agent
container's (agent_side), talking over the link as they do across containers."""

from __future__ import annotations

import io
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ssebench.runtime.accounts import Accounts
from ssebench.runtime.agent_side import AgentSide
from ssebench.runtime.entrypoint import Entrypoint, main
from ssebench.runtime.sidecar import SOCKET_NAME, AgentLink
from tests.unit.runtime.conftest import AGENTS, ROOT, SENTINEL, Project, make_project

SIDECAR = {"SSE_MODE": "sidecar"}


@pytest.fixture
def accounts() -> Accounts:
    return Accounts.current_user()


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Project]:
    # A short path: a unix socket's path has at most 107 bytes.
    sockets = Path(tempfile.mkdtemp(prefix="sse-", dir="/tmp"))
    yield make_project(tmp_path, sockets, {})
    shutil.rmtree(sockets, ignore_errors=True)


class Environment:
    """The environment container's entrypoint, running in a thread."""

    def __init__(self, project: Project, accounts: Accounts) -> None:
        self.stdout = io.BytesIO()
        self.entrypoint = Entrypoint(
            [],
            environ=project.environ(SSE_SIDECAR_ROLE="environment", **SIDECAR),
            layout=project.layout,
            accounts=accounts,
            stdout=self.stdout,
            host="127.0.0.1",
            port=0,
        )
        self.status: int | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        self.status = self.entrypoint.run()

    def join(self) -> int | None:
        self.thread.join(120)
        assert not self.thread.is_alive(), "the environment did not end"
        return self.status


def agent_side(project: Project, accounts: Accounts, agent: str, **env: str) -> AgentSide:
    return AgentSide(
        [str(AGENTS / agent / "run")],
        environ=project.environ(**SIDECAR, **env),
        layout=project.layout,
        account=accounts.agent,
        stdout=io.BytesIO(),
        connect_seconds=30,
    )


def wait_for(condition: Callable[[], bool], what: str, project: Project | None = None) -> None:
    deadline = time.monotonic() + 60
    while not condition():
        if time.monotonic() > deadline:
            logs = {}
            if project is not None:
                logs = {log.name: log.read_text() for log in project.layout.results.glob("*.log")}
            raise AssertionError(f"timed out waiting for {what}; the logs: {logs}")
        time.sleep(0.05)


def test_a_reference_run_across_the_link(project: Project, accounts: Accounts) -> None:
    environment = Environment(project, accounts)
    stdout = io.BytesIO()
    code = main(
        ["--agent-side", str(AGENTS / "reference" / "run")],
        environ=project.environ(SSE_REFERENCE_PATCH=str(project.reference_patch), **SIDECAR),
        layout=project.layout,
        accounts=accounts,
        stdout=stdout,
        install_signal_handlers=False,
    )
    assert code == 0
    assert environment.join() == 0
    result = project.result()
    assert (result["status"], result["agent_exit_code"], result["stopped"]) == ("passed", 0, False)
    # The agent reached the daemon with the port the environment announced.
    assert [event["type"] for event in project.dialog()] == [
        "agent_started",
        "message",
        "agent_exited",
        "graded",
    ]
    results = project.layout.results
    assert b"reference: done" in (results / "agent.log").read_bytes()
    assert b"the agent exited with status 0" in (results / "agent-entrypoint.log").read_bytes()
    assert b"ssebench: agent container: starting the agent" in stdout.getvalue()
    for log in results.glob("*.log"):
        assert SENTINEL not in log.read_text(), log


def test_no_agent_runs_when_the_environment_failed(project: Project, accounts: Accounts) -> None:
    project.layout.task_file.unlink()
    environment = Environment(project, accounts)
    assert environment.join() == 2
    side = agent_side(project, accounts, "dummy")
    assert side.run() == 2  # refused at once: the socket is there, nobody listens
    assert not (project.source / "NOTES.txt").exists()
    assert project.result()["error_msg"] == "Entrypoint error: TaskError"


def test_an_agent_side_that_waits_learns_of_the_failure(
    project: Project, accounts: Accounts
) -> None:
    project.layout.task_file.unlink()
    side = agent_side(project, accounts, "dummy")
    outcome: list[int] = []
    thread = threading.Thread(target=lambda: outcome.append(side.run()), daemon=True)
    thread.start()
    time.sleep(0.3)  # connecting before the environment listens
    assert Environment(project, accounts).join() == 2
    thread.join(30)
    assert outcome == [2]


def test_an_agent_container_that_vanishes_is_graded(project: Project, accounts: Accounts) -> None:
    environment = Environment(project, accounts)
    socket_path = project.layout.socket_dir / SOCKET_NAME
    wait_for(socket_path.exists, "the link")
    link = AgentLink.connect(socket_path, threading.Event(), 30)
    ready = link.receive(60)
    assert ready is not None and ready["type"] == "ready"
    assert ready["source_dir"] == str(project.source)
    link.send({"type": "started", "command": ["x"]})
    (project.source / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    link.close()  # killed: no "exited"
    assert environment.join() == 0
    result = project.result()
    assert (result["status"], result["agent_exit_code"]) == ("passed", None)
    assert b"the agent container is gone" in environment.stdout.getvalue()


def test_a_stopped_environment_stops_the_agent(project: Project, accounts: Accounts) -> None:
    environment = Environment(project, accounts)
    side = agent_side(project, accounts, "sleeper", SSE_SLEEPER_SECONDS="120")
    outcome: list[int] = []
    thread = threading.Thread(target=lambda: outcome.append(side.run()), daemon=True)
    thread.start()
    wait_for(lambda: environment.entrypoint.phase == "agent", "the agent to start", project)
    entrypoint = environment.entrypoint
    entrypoint.stop_signal = signal.SIGTERM
    entrypoint.stop_event.set()
    thread.join(60)
    assert outcome == [143]
    assert environment.join() == 143
    assert project.result()["stopped"] is True


def test_a_stopped_agent_container_is_a_stopped_run(project: Project, accounts: Accounts) -> None:
    environment = Environment(project, accounts)
    side = agent_side(project, accounts, "sleeper", SSE_SLEEPER_SECONDS="120")
    outcome: list[int] = []
    thread = threading.Thread(target=lambda: outcome.append(side.run()), daemon=True)
    thread.start()
    wait_for(lambda: environment.entrypoint.phase == "agent", "the agent to start", project)
    side._stop(signal.SIGTERM)  # what its signal handler does on docker stop
    thread.join(60)
    assert outcome == [143]
    assert environment.join() == 143
    result = project.result()
    assert result["stopped"] is True and result["agent_exit_code"] == 143


# An agent that calls test_patch over MCP at SSE_MCP_URL, then ends as a wrapper whose
# model could not be used does (agent_kit.finish with model_error).
MCP_THEN_MODEL_ERROR = """
import json, os, sys, time, urllib.request
sys.path.insert(0, {src!r})
from ssebench.runtime import agent_kit

def post(message, session=None):
    headers = {{"Content-Type": "application/json", "Accept": "application/json"}}
    if session:
        headers["Mcp-Session-Id"] = session
    request = urllib.request.Request(
        agent_kit.mcp_url(), data=json.dumps(message).encode(), headers=headers
    )
    with urllib.request.urlopen(request) as answer:
        return answer.headers.get("Mcp-Session-Id"), json.loads(answer.read())

params = {{"protocolVersion": "2025-06-18", "capabilities": {{}}, "clientInfo": {{}}}}
session, _ = post({{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}})
call = {{"name": "test_patch", "arguments": {{}}}}
_, answer = post({{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}}, session)
print("test_patch says", answer["result"]["content"][0]["text"].split(":")[0], flush=True)
sys.exit(agent_kit.finish("error", "the proxy answered 500", time.monotonic(), model_error=True))
"""


def test_mcp_and_a_model_error_across_the_link(project: Project, accounts: Accounts) -> None:
    environment = Environment(project, accounts)
    script = MCP_THEN_MODEL_ERROR.format(src=str(ROOT / "src"))
    code = main(
        ["--agent-side", sys.executable, "-c", script],
        environ=project.environ(**SIDECAR),
        layout=project.layout,
        accounts=accounts,
        stdout=io.BytesIO(),
        install_signal_handlers=False,
    )
    assert code == 3
    assert environment.join() == 3
    result = project.result()
    assert (result["status"], result["error_msg"]) == (
        "error",
        "Model error: the proxy answered 500",
    )
    assert result["agent_exit_code"] == 3
    # The agent container reached the environment's daemon at SSE_MCP_URL.
    assert b"test_patch says PASSED" in (project.layout.results / "agent.log").read_bytes()
    assert [e["type"] for e in project.dialog()] == [
        "agent_started",
        "tool_call",
        "tool_result",
        "complete",
        "agent_exited",
        "graded",
    ]
