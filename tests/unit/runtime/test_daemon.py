from __future__ import annotations

import json
import os
import stat
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ssebench.runtime import __version__
from ssebench.runtime.accounts import Accounts
from ssebench.runtime.daemon import Daemon
from ssebench.runtime.dialog import Dialog
from ssebench.runtime.logs import LogFile, Redactor
from ssebench.runtime.repository import BaseRepository
from ssebench.runtime.unixhttp import request_json
from ssebench.runtime.workspace import Workspace

from .conftest import FIXED, SENTINEL, Project

PATH = os.environ["PATH"]


class Client:
    def __init__(self, daemon: Daemon, project: Project) -> None:
        self.daemon = daemon
        self.project = project
        self.base = f"http://127.0.0.1:{daemon.port}"

    def http(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        if method == "POST" and data is None:
            data = b""
        request = urllib.request.Request(self.base + path, data=data, method=method)
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())

    def admin(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        return request_json(self.project.layout.admin_socket, method, path, body)

    def socket(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        return request_json(self.project.layout.agent_socket, method, path, body)


def start_daemon(project: Project, accounts: Accounts, difficulty: int) -> Daemon:
    layout = project.layout
    for directory in (layout.results, layout.private_dir, layout.archive):
        directory.mkdir(parents=True, exist_ok=True)
    repository = BaseRepository.snapshot(
        source_dir=project.source,
        git_dir=layout.base_repository,
        base_commit=None,
        path_value=PATH,
    )
    redactor = Redactor([SENTINEL])
    daemon = Daemon(
        task=project.task,
        difficulty=difficulty,
        repository=repository,
        workspace=Workspace(
            layout.tools_workspace,
            runner=accounts.runner,
            repository=repository,
            private_dir=layout.private_dir,
            environment={"PATH": PATH},
            step_timeout=60,
        ),
        dialog=Dialog(layout.dialog_file, redactor),
        log=LogFile(layout.results / "daemon.log", redactor),
        redactor=redactor,
    )
    daemon.start(
        host="127.0.0.1",
        port=0,
        agent_socket=layout.agent_socket,
        admin_socket=layout.admin_socket,
        admin_uids=frozenset({os.geteuid()}),
    )
    return daemon


@pytest.fixture(params=[1])
def client(
    request: pytest.FixtureRequest, project: Project, accounts: Accounts
) -> Iterator[Client]:
    daemon = start_daemon(project, accounts, request.param)
    yield Client(daemon, project)
    daemon.stop()


def test_version_prompt_and_status(client: Client) -> None:
    assert client.http("GET", "/version") == (
        200,
        {"name": "ssebench-daemon", "version": __version__},
    )
    assert client.http("GET", "/prompt") == (
        200,
        {"task": "py-demo-add", "prompt": "add() subtracts; make it add."},
    )
    assert client.http("GET", "/status") == (200, {"phase": "starting", "agent_exit_code": None})
    client.admin("POST", "/admin/agent-started", {"command": ["run"]})
    assert client.http("GET", "/status")[1]["phase"] == "agent"


def test_diff_shows_the_current_tree(client: Client) -> None:
    assert client.http("GET", "/diff")[1]["diff"] == ""
    (client.project.source / "calc.py").write_text(FIXED)
    (client.project.source / "notes.txt").write_text("new\n")
    status, body = client.http("GET", "/diff")
    assert status == 200
    assert "+    return a + b" in body["diff"] and "+++ b/notes.txt" in body["diff"]
    assert len(body["base"]) == 40


def test_dialog_post_and_read_since(client: Client) -> None:
    assert client.http("POST", "/dialog", {"type": "message", "text": "one"}) == (201, {"seq": 1})
    assert client.http("POST", "/dialog", {"type": "message", "text": "two"}) == (201, {"seq": 2})
    status, body = client.http("GET", "/dialog?since=1")
    assert status == 200
    assert body["next"] == 2
    assert [e["text"] for e in body["events"]] == ["two"]
    assert client.http("GET", "/dialog")[1]["next"] == 2
    assert client.http("GET", "/dialog?since=x")[0] == 400
    assert client.http("POST", "/dialog", {"type": "graded"})[0] == 400
    status, body = client.http("POST", "/dialog", None)
    assert status == 400 and "error" in body


def test_result_is_404_until_graded(client: Client) -> None:
    status, body = client.http("GET", "/result")
    assert status == 404 and body["phase"] == "starting"
    result = {"schema": 1, "status": "passed", "error_msg": None}
    assert client.admin("POST", "/admin/result", result)[0] == 200
    assert client.http("GET", "/result") == (200, result)
    assert client.http("GET", "/status")[1]["phase"] == "graded"
    assert client.project.dialog()[-1]["type"] == "graded"


def test_tools_build_and_test_the_current_tree(client: Client) -> None:
    status, body = client.http("POST", "/tools/test")
    assert status == 200
    assert body["ok"] is True and body["exit_code"] == 0
    assert "Ran 1 test" in body["output"]
    # The hidden test never runs in a tool.
    assert "test_add" not in body["output"]
    (client.project.source / "calc.py").write_text("def add(a, b):\n    return 7\n")
    status, body = client.http("POST", "/tools/test")
    assert (status, body["ok"], body["exit_code"]) == (200, False, 1)
    (client.project.source / "calc.py").write_text("def add(a, b:\n")
    status, body = client.http("POST", "/tools/build")
    assert (status, body["ok"]) == (200, False)
    assert "SyntaxError" in body["output"]
    types = [e["type"] for e in client.project.dialog()]
    assert types == ["tool_call", "tool_result"] * 3


def test_tool_output_is_a_tail_of_at_most_64_kib(
    tmp_path: Path, short_dir: Path, accounts: Accounts
) -> None:
    from .conftest import make_project

    project = make_project(tmp_path, short_dir, {"build": "yes 0123456789abcdef | head -c 300000"})
    daemon = start_daemon(project, accounts, 2)
    try:
        status, body = Client(daemon, project).http("POST", "/tools/build")
    finally:
        daemon.stop()
    assert status == 200 and body["ok"]
    assert 60 * 1024 < len(body["output"].encode()) <= 64 * 1024


@pytest.mark.parametrize(
    ("difficulty", "build", "test"),
    [(1, 200, 200), (2, 200, 403), (3, 403, 403)],
)
def test_tools_are_gated_by_difficulty(
    project: Project, accounts: Accounts, difficulty: int, build: int, test: int
) -> None:
    daemon = start_daemon(project, accounts, difficulty)
    client = Client(daemon, project)
    try:
        assert client.http("POST", "/tools/build")[0] == build
        status, body = client.http("POST", "/tools/test")
        assert status == test
        if status == 403:
            assert f"difficulty {difficulty}" in body["error"]
            assert body["difficulty"] == difficulty
    finally:
        daemon.stop()


def test_agent_actions_close_when_the_agent_exits(client: Client) -> None:
    client.admin("POST", "/admin/agent-started", {"command": ["run"]})
    status, body = client.admin("POST", "/admin/agent-exited", {"exit_code": 3, "timed_out": False})
    assert status == 200
    assert client.http("GET", "/status") == (200, {"phase": "grading", "agent_exit_code": 3})
    for path in ("/tools/build", "/tools/test"):
        status, body = client.http("POST", path)
        assert status == 409 and "exited" in body["error"]
    assert client.http("POST", "/dialog", {"type": "message"})[0] == 409
    assert client.http("GET", "/diff")[0] == 200
    assert [e["type"] for e in client.project.dialog()] == ["agent_started", "agent_exited"]


def test_admin_endpoints_exist_only_on_the_admin_socket(client: Client) -> None:
    for path in ("/admin/agent-exited", "/admin/result"):
        assert client.http("POST", path, {})[0] == 404
        assert client.socket("POST", path, {})[0] == 404
    assert client.http("GET", "/admin/status")[0] == 404
    status, body = client.admin("GET", "/admin/status")
    assert status == 200 and body["phase"] == "starting" and body["difficulty"] == 1
    assert client.http("GET", "/status")[1]["phase"] == "starting"


def test_the_agent_socket_serves_the_agent_api(client: Client) -> None:
    assert client.socket("GET", "/version")[1]["name"] == "ssebench-daemon"
    assert client.socket("POST", "/dialog", {"type": "hello"}) == (201, {"seq": 1})


def test_socket_modes(client: Client) -> None:
    layout = client.project.layout
    assert stat.S_IMODE(layout.admin_socket.stat().st_mode) == 0o600
    assert stat.S_IMODE(layout.agent_socket.stat().st_mode) == 0o666


def test_admin_socket_refuses_other_uids(project: Project, accounts: Accounts) -> None:
    daemon = start_daemon(project, accounts, 1)
    try:
        # Pretend the caller is someone else: the peer check must drop the connection.
        for server in daemon._servers:
            if getattr(server, "admin", False):
                server.peer_uids = frozenset({os.geteuid() + 12345})  # type: ignore[attr-defined]
        with pytest.raises(OSError):
            request_json(project.layout.admin_socket, "GET", "/admin/status")
    finally:
        daemon.stop()


def test_unknown_paths_and_methods(client: Client) -> None:
    assert client.http("GET", "/nope")[0] == 404
    assert client.http("POST", "/version")[0] == 405
    assert client.http("GET", "/tools/build")[0] == 405


def test_stop_removes_the_sockets(project: Project, accounts: Accounts) -> None:
    daemon = start_daemon(project, accounts, 1)
    daemon.stop()
    assert not project.layout.admin_socket.exists()
    assert not project.layout.agent_socket.exists()


def test_stop_shuts_the_listeners_down_at_once(
    project: Project, accounts: Accounts, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each listener's shutdown waits for its loop's next poll; one after another they
    added up at every run's end. Each shutdown here waits for all three to have begun:
    one after another, the first would wait in vain."""
    daemon = start_daemon(project, accounts, 1)
    servers = list(daemon._servers)
    assert len(servers) == 3  # TCP, the agent's socket, the admin socket
    all_begun = threading.Barrier(len(servers), timeout=10)
    for server in servers:
        original = server.shutdown

        def shutdown(original: Any = original) -> None:
            all_begun.wait()  # BrokenBarrierError (in its thread) when alone
            original()

        monkeypatch.setattr(server, "shutdown", shutdown)
    daemon.stop()
    assert not all_begun.broken
    assert all(server.socket.fileno() == -1 for server in servers)  # closed


def test_the_daemon_log_has_requests_and_no_secret(client: Client) -> None:
    client.http("POST", "/dialog", {"type": "note", "text": SENTINEL})
    client.http("GET", f"/dialog?since=0&k={SENTINEL}")
    log = (client.project.layout.results / "daemon.log").read_text()
    assert "POST /dialog -> 201" in log
    assert SENTINEL not in log
    assert SENTINEL not in client.project.layout.dialog_file.read_text()


def test_agent_exit_kills_a_running_tool_before_grading(
    tmp_path: Path, short_dir: Path, accounts: Accounts
) -> None:
    from .conftest import make_project

    project = make_project(tmp_path, short_dir, {"build": "echo started; sleep 60"})
    daemon = start_daemon(project, accounts, 2)
    client = Client(daemon, project)
    answers: list[tuple[int, Any]] = []
    try:
        caller = threading.Thread(
            target=lambda: answers.append(client.http("POST", "/tools/build"))
        )
        caller.start()
        deadline = time.monotonic() + 30
        while not any(e["type"] == "tool_call" for e in project.dialog()):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(1)  # into the sleep
        started = time.monotonic()
        assert client.admin("POST", "/admin/agent-exited", {"exit_code": 0})[0] == 200
        assert time.monotonic() - started < 15
        caller.join(15)
        assert not caller.is_alive()
    finally:
        daemon.stop()
    status, body = answers[0]
    assert status == 200 and body["ok"] is False
    assert [e["type"] for e in project.dialog()] == ["tool_call", "tool_result", "agent_exited"]
    # The tools' workspace stays closed: nothing more runs as the runner from it.
    assert daemon.workspace.run_command("true").exit_code != 0
