"""The OpenCode session tab's reader without Docker: a stand-in OpenCode server (its
answers shaped as OpenCode 1.18.33's GET /session, /session/ID/message and
/session/ID/diff were seen to be), reached through the backend's endpoint for port
4096; a hostile server's answers; the fallback once the run is over."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette.testclient")

from starlette.testclient import TestClient

from ssebench import labels
from ssebench.extensions import RunHandle
from ssebench.webui.app import create_app
from ssebench.webui.settings import WebSettings
from tests.conftest import PILOT_DATASET
from tests.unit.test_webui import AUTH, TOKEN, StandInBackend, live_run

SESSION = "ses_dcc65997cffeJGNB3w7oWb2pwK"
MESSAGES = [
    {
        "info": {"id": "msg_1", "role": "user", "sessionID": SESSION},
        "parts": [{"id": "prt_1", "type": "text", "text": "Fix the pre-release order"}],
    },
    {
        "info": {"id": "msg_2", "role": "assistant", "sessionID": SESSION},
        "parts": [
            {"id": "prt_2", "type": "step-start"},
            {"id": "prt_3", "type": "text", "text": "I will read the version file."},
            {
                "id": "prt_4",
                "type": "tool",
                "tool": "read",
                "callID": "c1",
                "state": {
                    "status": "completed",
                    "input": {"filePath": "/src/semver/version.py"},
                    "output": "<content>1: x = 1</content>",
                },
            },
            {"id": "prt_5", "type": "patch", "files": ["/src/semver/version.py"]},
            {"id": "prt_6", "type": "step-finish", "tokens": {"input": 1000}},
        ],
    },
]
DIFF = [{"file": "semver/version.py", "additions": 1, "deletions": 1, "patch": "-a\n+b\n"}]


class OpenCodeServer(BaseHTTPRequestHandler):
    answers: dict[str, Any] = {}
    redirect = False

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        if self.redirect:
            self.send_response(302)
            self.send_header("Location", "http://127.0.0.1:9/elsewhere")
            self.end_headers()
            return
        if self.path not in self.answers:
            self.send_response(404)
            self.end_headers()
            return
        data = json.dumps(self.answers[self.path]).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def opencode() -> Iterator[type[OpenCodeServer]]:
    handler = type("Handler", (OpenCodeServer,), {})
    handler.answers = {
        "/session": [
            {"id": "ses_old", "title": "old", "time": {"updated": 1}},
            {"id": SESSION, "title": "Pre-release order", "cost": 0.5, "time": {"updated": 9}},
        ],
        f"/session/{SESSION}/message": MESSAGES,
        f"/session/{SESSION}/diff": DIFF,
    }
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    handler.url = f"http://127.0.0.1:{server.server_address[1]}"  # type: ignore[attr-defined]
    yield handler
    server.shutdown()
    server.server_close()


class SessionBackend(StandInBackend):
    def __init__(self, opencode_url: str, state: str = "running", agent: str = "opencode") -> None:
        run = live_run("live-oc", state=state)
        run.labels[labels.AGENT] = agent
        super().__init__([run], "http://127.0.0.1:9")
        self.opencode_url = opencode_url
        self.ports: list[int] = []

    def endpoint(self, handle: RunHandle, port: int) -> str:
        self.ports.append(port)
        return self.opencode_url


def session_of(backend: SessionBackend, tmp_path: Path) -> dict[str, Any]:
    settings = WebSettings(results=tmp_path, dataset=str(PILOT_DATASET), token=TOKEN)
    with TestClient(create_app(settings, backend), base_url="http://127.0.0.1:3001") as web:
        answer = web.get("/api/runs/live-oc/session", headers=AUTH)
        assert answer.status_code == 200
        return dict(answer.json())


def test_a_running_opencode_run_shows_its_newest_session(opencode: Any, tmp_path: Path) -> None:
    backend = SessionBackend(opencode.url)
    session = session_of(backend, tmp_path)
    assert backend.ports == [4096]
    assert session["live"] is True and session["session"]["title"] == "Pre-release order"
    assert [m["role"] for m in session["messages"]] == ["user", "assistant"]
    parts = session["messages"][1]["parts"]
    assert parts[0] == {"type": "text", "text": "I will read the version file."}
    assert parts[1]["type"] == "tool" and parts[1]["tool"] == "read"
    assert parts[1]["status"] == "completed" and "version.py" in parts[1]["input"]
    assert parts[2] == {"type": "patch", "files": ["/src/semver/version.py"]}
    assert session["diff"] == [
        {"file": "semver/version.py", "additions": 1, "deletions": 1, "patch": "-a\n+b\n"}
    ]


def test_the_run_over_or_another_agent_falls_back_to_the_dialog(
    opencode: Any, tmp_path: Path
) -> None:
    over = session_of(SessionBackend(opencode.url, state="exited"), tmp_path)
    assert over["live"] is False and over["over"] is True and "dialog" in over["reason"]
    other = session_of(SessionBackend(opencode.url, agent="sleeper"), tmp_path)
    assert other["live"] is False and other["over"] is True and "opencode" in other["reason"]


@pytest.mark.parametrize("state", ["created", "unknown"])
def test_a_run_not_started_yet_is_asked_again(opencode: Any, tmp_path: Path, state: str) -> None:
    """A container created but not started (its archive still being copied in) has not
    ended: the page must not give up on its session (it did, in a loaded CI)."""
    backend = SessionBackend(opencode.url, state=state)
    waiting = session_of(backend, tmp_path)
    assert waiting["live"] is False and waiting["over"] is False
    assert state in waiting["reason"] and backend.ports == []


def test_a_hostile_server_is_not_followed_nor_trusted(opencode: Any, tmp_path: Path) -> None:
    opencode.redirect = True
    redirected = session_of(SessionBackend(opencode.url), tmp_path)
    assert redirected["live"] is False and "HTTP 302" in redirected["reason"]
    # The run still runs: the page asks again rather than giving up on the session.
    assert redirected["over"] is False
    opencode.redirect = False
    opencode.answers["/session"] = {"not": "a list"}
    assert session_of(SessionBackend(opencode.url), tmp_path)["live"] is False
    opencode.answers["/session"] = [{"id": SESSION, "time": {"updated": "x"}}]
    opencode.answers[f"/session/{SESSION}/message"] = [
        {"info": {"role": "system"}, "parts": []},
        {"info": {"role": "assistant"}, "parts": [{"type": "text", "text": "y" * 100_000}, 7]},
    ]
    shown = session_of(SessionBackend(opencode.url), tmp_path)
    assert [m["role"] for m in shown["messages"]] == ["assistant"]
    assert len(shown["messages"][0]["parts"][0]["text"]) == 8000
