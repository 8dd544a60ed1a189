"""The assistant's life without Docker: its own key made on a stand-in of LiteLLM's admin
API (budgeted, for the assistant alone), passed to the exec command by name only, a
question answered from a stand-in OpenCode, and the key revoked when the panel closes
and when the run stops."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette.testclient")

from starlette.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from ssebench import labels
from ssebench.extensions import Backend, ProxyEndpoint
from ssebench.webui import assistant
from ssebench.webui.app import create_app
from ssebench.webui.settings import WebSettings
from tests.conftest import PILOT_DATASET
from tests.fixtures.litellm_admin_standin import StandIn, litellm_standin
from tests.unit.test_webui import AUTH, TOKEN, TOKEN_PROTOCOL, StandInBackend, live_run

MASTER = "sk-master-assistant-0123456789"
MODEL = "opencode-solves"
RUN = "live-oc"

# Stands in for `docker exec ... opencode run --format json`: writes what it was given
# (argv and the variables it was passed by name) to a file, and answers like OpenCode.
FAKE_OPENCODE = """
import json, os, sys
record, names = sys.argv[1], sys.argv[2].split(",")
question = sys.stdin.read()
with open(record, "a") as out:
    out.write(json.dumps({"argv": sys.argv, "env": {n: os.environ.get(n) for n in names},
                          "question": question}) + "\\n")
print(json.dumps({"type": "step_start", "part": {}}))
print(json.dumps({"type": "tool_use", "part": {"tool": "read", "state": {"status": "completed",
      "input": {"filePath": "/src/x.py"}, "output": "x = 1"}}}))
print(json.dumps({"type": "text", "part": {"text": "You asked: " + question}}))
"""


class ExecBackend(StandInBackend):
    """The unit tests' backend, with a proxy of its own and an exec that runs FAKE_OPENCODE."""

    def __init__(self, proxy_url: str, record: Path) -> None:
        run = live_run(RUN)
        run.labels[labels.AGENT] = "opencode"
        run.labels[labels.MODEL] = MODEL
        super().__init__([run], "http://127.0.0.1:9")
        self.proxy_url = proxy_url
        self.record = record
        self.argvs: list[list[str]] = []

    def proxy(self) -> ProxyEndpoint:
        return ProxyEndpoint(host_url=self.proxy_url, service_url="http://litellm:4000")

    def local_argv(
        self, command: Sequence[str], *, user: str | None, env_names: Sequence[str]
    ) -> list[str]:
        argv = [
            sys.executable,
            "-c",
            FAKE_OPENCODE,
            str(self.record),
            ",".join(env_names),
            *command,
        ]
        self.argvs.append(argv)
        return argv


@pytest.fixture
def standin(monkeypatch: pytest.MonkeyPatch) -> Iterator[StandIn]:
    monkeypatch.setenv("LITELLM_MASTER_KEY", MASTER)
    monkeypatch.setattr(assistant, "RUN_CHECK_SECONDS", 0.1)
    with litellm_standin(MASTER, [MODEL]) as state:
        yield state


def client_for(backend: Backend, results: Path, **overrides: Any) -> TestClient:
    settings = WebSettings(results=results, dataset=str(PILOT_DATASET), token=TOKEN, **overrides)
    return TestClient(create_app(settings, backend), base_url="http://127.0.0.1:3001")


def wait_for(check: Any, what: str) -> None:
    deadline = time.monotonic() + 10
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def messages_until(socket: Any, kind: str) -> list[dict[str, Any]]:
    seen = []
    while True:
        message = json.loads(socket.receive_text())
        seen.append(message)
        if message["type"] == kind:
            return seen


def test_the_assistant_has_its_own_key_answers_and_its_key_is_revoked(
    standin: StandIn, tmp_path: Path
) -> None:
    record = tmp_path / "exec.jsonl"
    backend = ExecBackend(standin.url, record)
    with client_for(backend, tmp_path) as web:
        detail = web.get(f"/api/runs/{RUN}", headers=AUTH).json()
        assert detail["assistant"] == {"available": True, "reason": None}
        with web.websocket_connect(
            f"/api/runs/{RUN}/assistant", headers=AUTH, subprotocols=[TOKEN_PROTOCOL]
        ) as socket:
            ready = json.loads(socket.receive_text())
            assert ready == {"type": "ready", "managed_key": True, "budget": 1.0}
            # One key, for the assistant alone: this model, a budget, its own alias.
            [(hashed, key)] = standin.keys.items()
            assert key["models"] == [MODEL] and key["max_budget"] == 1.0
            assert key["key_alias"] == f"ssebench-{RUN}-assistant"
            socket.send_text(json.dumps({"type": "ask", "text": "What did the agent change?"}))
            answer = messages_until(socket, "done")
            assert {"type": "text", "text": "You asked: What did the agent change?"} in answer
            assert answer[-1] == {"type": "done", "code": 0}
            assert any(m["type"] == "tool" and m["name"] == "read" for m in answer)
            socket.send_text(json.dumps({"type": "ask", "text": "And why?"}))
            messages_until(socket, "done")
        # The panel closed: the key is revoked.
        wait_for(lambda: hashed not in standin.keys, "the key to be revoked")
    calls = [json.loads(line) for line in record.read_text().splitlines()]
    assert [c["question"] for c in calls] == ["What did the agent change?", "And why?"]
    for call in calls:
        secret = call["env"][assistant.KEY_VARIABLE]
        assert secret.startswith("sk-") and secret != MASTER
        config = json.loads(call["env"][assistant.CONFIG_VARIABLE])
        provider = config["provider"]["ssebench"]["options"]
        assert provider["baseURL"] == "http://litellm:4000/v1"
        assert provider["apiKey"] == "{env:" + assistant.KEY_VARIABLE + "}"
        assert config["permission"] == {"edit": "deny", "bash": "deny", "webfetch": "deny"}
        # Neither the key nor the configuration is in the command line.
        assert not any(secret in word or "baseURL" in word for word in call["argv"])
    assert "--continue" not in calls[0]["argv"] and "--continue" in calls[1]["argv"]


def test_the_key_is_revoked_when_the_run_stops(standin: StandIn, tmp_path: Path) -> None:
    backend = ExecBackend(standin.url, tmp_path / "exec.jsonl")
    with client_for(backend, tmp_path) as web:
        with web.websocket_connect(
            f"/api/runs/{RUN}/assistant", headers=AUTH, subprotocols=[TOKEN_PROTOCOL]
        ) as socket:
            assert json.loads(socket.receive_text())["type"] == "ready"
            assert len(standin.keys) == 1
            backend.runs[0] = live_run(RUN, state="exited")
            stopped = messages_until(socket, "error")
            assert "run stopped" in stopped[-1]["message"]
        wait_for(lambda: not standin.keys, "the key to be revoked")


def test_no_key_is_made_where_the_assistant_cannot_start(standin: StandIn, tmp_path: Path) -> None:
    backend = ExecBackend(standin.url, tmp_path / "exec.jsonl")
    with client_for(backend, tmp_path, hosted=True) as web:
        detail = web.get(f"/api/runs/{RUN}", headers=AUTH).json()
        assert detail["assistant"]["available"] is False
        assert "Hosted mode" in detail["assistant"]["reason"]
        with (
            pytest.raises(WebSocketDisconnect),
            web.websocket_connect(
                f"/api/runs/{RUN}/assistant", headers=AUTH, subprotocols=[TOKEN_PROTOCOL]
            ),
        ):
            pass
    # An agent other than opencode: its image has no OpenCode.
    other = StandInBackend([live_run(RUN)], "http://127.0.0.1:9")
    with client_for(other, tmp_path) as web:
        reason = web.get(f"/api/runs/{RUN}", headers=AUTH).json()["assistant"]["reason"]
        assert "opencode" in reason and "sleeper" in reason
    assert standin.keys == {} and not [r for r in standin.requests if r.path == "/key/generate"]
