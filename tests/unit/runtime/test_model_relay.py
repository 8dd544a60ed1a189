"""The model relay: requests reach the upstream with the run's key in place of whatever
the agent sent; bodies and streamed answers pass unchanged."""

from __future__ import annotations

import http.client
import json
import threading
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from ssebench.runtime.model_relay import PLACEHOLDER_KEY, ModelRelay

KEY = "sk-run-key-0123456789"


class Upstream:
    """A model server on loopback that records what reaches it and streams an answer."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                upstream.requests.append(
                    {"path": self.path, "headers": dict(self.headers.items()), "body": body}
                )
                events = [b'data: {"n": 1}\n\n', b'data: {"n": 2}\n\n', b"data: [DONE]\n\n"]
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for event in events:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    server = Upstream()
    yield server
    server.server.shutdown()
    server.server.server_close()


def post(url: str, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
    parts = urllib.parse.urlsplit(url)
    connection = http.client.HTTPConnection(parts.netloc, timeout=30)
    connection.request("POST", parts.path + path, body=body, headers=headers)
    answer = connection.getresponse()
    return answer.status, answer.read()


def test_the_run_key_replaces_the_agents_credentials(upstream: Upstream) -> None:
    relay = ModelRelay(upstream.url, KEY).start()
    try:
        assert relay.url.startswith("http://127.0.0.1:") and relay.url.endswith("/v1")
        assert KEY not in repr(relay)
        body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
        status, answer = post(
            relay.url,
            "/chat/completions",
            body.encode(),
            {
                "Authorization": f"Bearer {PLACEHOLDER_KEY}",
                "x-api-key": PLACEHOLDER_KEY,
                "anthropic-version": "2023-06-01",
                "Content-Type": "application/json",
            },
        )
    finally:
        relay.stop()
    assert status == 200
    assert answer == b'data: {"n": 1}\n\ndata: {"n": 2}\n\ndata: [DONE]\n\n'
    (seen,) = upstream.requests
    assert seen["path"] == "/v1/chat/completions" and seen["body"] == body.encode()
    headers = {name.lower(): value for name, value in seen["headers"].items()}
    assert headers["authorization"] == f"Bearer {KEY}"
    assert headers["x-api-key"] == KEY  # the Messages API's header, when it is one
    assert PLACEHOLDER_KEY not in json.dumps(seen["headers"])


def test_an_upstream_that_cannot_be_reached_is_a_502() -> None:
    relay = ModelRelay("http://127.0.0.1:9/v1", KEY).start()
    try:
        status, answer = post(relay.url, "/chat/completions", b"{}", {})
    finally:
        relay.stop()
    assert status == 502 and KEY.encode() not in answer
