"""The codex agent's relay (src/ssebench/agents/codex/relay.py): Codex's namespaced
MCP tools go to the proxy as plain functions, and the calls come back namespaced."""

from __future__ import annotations

import importlib.util
import json
import sys
import threading
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

RELAY_FILE = Path(__file__).resolve().parents[2] / "src/ssebench/agents/codex/relay.py"


def load_relay() -> ModuleType:
    # In the container the runtime is the package ssebench_runtime; here it is ssebench's.
    sys.modules.setdefault("ssebench_runtime", importlib.import_module("ssebench.runtime"))
    sys.modules.setdefault(
        "ssebench_runtime.model_relay", importlib.import_module("ssebench.runtime.model_relay")
    )
    spec = importlib.util.spec_from_file_location("codex_relay", RELAY_FILE)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


relay = load_relay()
NAMESPACE_TOOL = {
    "type": "namespace",
    "name": "mcp__ssebench",
    "description": "Call test_patch.",
    "tools": [{"type": "function", "name": "test_patch", "parameters": {"type": "object"}}],
}
SHELL_TOOL = {"type": "function", "name": "exec_command", "parameters": {"type": "object"}}


def test_a_request_gets_plain_functions_and_an_answer_its_namespace_back() -> None:
    names = relay.ToolNames()
    request = {
        "tools": [SHELL_TOOL, json.loads(json.dumps(NAMESPACE_TOOL))],
        "input": [
            {"type": "function_call", "namespace": "mcp__ssebench", "name": "test_patch"},
            {"type": "message", "role": "user", "content": "hi"},
        ],
    }
    flat = relay.flatten_request(request, names)
    assert [t["name"] for t in flat["tools"]] == ["exec_command", "mcp__ssebench__test_patch"]
    assert all(t["type"] == "function" for t in flat["tools"])
    assert flat["input"][0] == {"type": "function_call", "name": "mcp__ssebench__test_patch"}

    done = {
        "type": "response.output_item.done",
        "item": {"type": "function_call", "name": "mcp__ssebench__test_patch"},
    }
    restored = relay.restore_event(done, names)
    assert restored["item"]["namespace"] == "mcp__ssebench"
    assert restored["item"]["name"] == "test_patch"
    completed = {"response": {"output": [{"type": "function_call", "name": "exec_command"}]}}
    assert relay.restore_event(completed, names) == completed, "a plain tool stays as it is"


def test_a_stream_line_is_rewritten_only_when_it_is_an_event() -> None:
    names = relay.ToolNames()
    names.flat("mcp__ssebench", "test_patch")
    line = b'data: {"item": {"type": "function_call", "name": "mcp__ssebench__test_patch"}}\n'
    event = json.loads(relay.restore_stream_line(line, names)[len(b"data: ") :])
    assert event["item"] == {
        "type": "function_call",
        "name": "test_patch",
        "namespace": "mcp__ssebench",
    }
    for other in (b"event: response.output_item.done\n", b"data: [DONE]\n", b"\n"):
        assert relay.restore_stream_line(other, names) == other


class Upstream(BaseHTTPRequestHandler):
    seen: list[dict[str, Any]] = []

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        Upstream.seen.append(
            {"path": self.path, "auth": self.headers["Authorization"], "body": body}
        )
        call = {"type": "function_call", "name": body["tools"][-1]["name"], "arguments": "{}"}
        stream = (
            f"event: response.output_item.done\ndata: {json.dumps({'item': call})}\n\n".encode()
        )
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(stream)))
        self.end_headers()
        self.wfile.write(stream)


@pytest.fixture
def upstream() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/base"
    finally:
        server.shutdown()
        server.server_close()


def ask(running: Any, body: dict[str, Any]) -> list[bytes]:
    request = urllib.request.Request(
        running.url + "/v1/responses",
        data=json.dumps(body).encode(),
        headers={"Authorization": "Bearer sk-run", "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        return list(answer.read().splitlines())


def test_the_relay_passes_the_key_on_and_streams_the_call_back_namespaced(upstream: str) -> None:
    running = relay.Relay(upstream).start()
    try:
        lines = ask(running, {"model": "m", "tools": [NAMESPACE_TOOL], "stream": True})
    finally:
        running.stop()
    seen = Upstream.seen[-1]
    assert seen["body"]["model"] == "m"
    assert seen["path"] == "/base/v1/responses"
    assert seen["auth"] == "Bearer sk-run"
    assert seen["body"]["tools"][0]["name"] == "mcp__ssebench__test_patch"
    data = [json.loads(line[len(b"data: ") :]) for line in lines if line.startswith(b"data:")]
    assert data[0]["item"]["namespace"] == "mcp__ssebench"
    assert data[0]["item"]["name"] == "test_patch"


def test_a_bridged_model_gets_each_request_under_its_bridge_name(upstream: str) -> None:
    # A chat-only server's model: the proxy serves its Responses bridge as a second entry.
    running = relay.Relay(upstream, "m@responses-via-chat").start()
    try:
        ask(running, {"model": "m", "tools": [SHELL_TOOL], "stream": True})
    finally:
        running.stop()
    assert Upstream.seen[-1]["body"]["model"] == "m@responses-via-chat"


def test_an_error_answer_becomes_one_line_with_the_proxys_message() -> None:
    body = json.dumps({"error": {"message": "Budget has been exceeded!\n Spend: 5.1"}}).encode()
    assert relay.error_line(400, body) == (
        "the proxy answered HTTP 400: Budget has been exceeded! Spend: 5.1"
    )
    assert relay.error_line(502, b"<html>Bad Gateway</html>") == (
        "the proxy answered HTTP 502: <html>Bad Gateway</html>"
    )
