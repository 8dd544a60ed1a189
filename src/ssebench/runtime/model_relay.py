"""The model relay: the agent reaches the run's model without holding the run's key.

Everything that runs as the agent's user (the agent, its tools, whatever the model has
them run) can be made to hand what it holds to the model: its environment, its
/proc/PID/environ, its files. So the agent is given no key at all. Its SSE_BASE_URL is
this relay, on the container's loopback, and its SSE_API_KEY a placeholder; the relay
runs in the runtime's root process (whose environment and memory the agent's user
cannot read) and forwards each request to the proxy with the run's key in place of
whatever credentials the agent sent (Authorization, x-api-key, api-key). Bodies and
answers pass unchanged, streamed answers as they come. Nothing of a request is logged.

A sidecar run's agent container shares the environment container's network namespace,
so the relay is on its loopback too. Standard library only.
"""

from __future__ import annotations

import http.client
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# What the agent gets as SSE_API_KEY: not a secret, and not a key anywhere.
PLACEHOLDER_KEY = "sse-relay-no-key-here"
# Credential headers the relay replaces with the run's key (any other is passed on).
CREDENTIAL_HEADERS = frozenset({"authorization", "x-api-key", "api-key"})
# Headers that belong to one hop, never passed on.
HOP_HEADERS = frozenset(
    {"host", "content-length", "connection", "keep-alive", "transfer-encoding", "upgrade"}
)
UPSTREAM_TIMEOUT_SECONDS = 900
CHUNK_BYTES = 64 * 1024


def send_answer_head(
    handler: BaseHTTPRequestHandler,
    answer: http.client.HTTPResponse,
    hop_headers: frozenset[str] = HOP_HEADERS,
) -> None:
    """Start relaying answer: its status and headers but those of one hop, and the end
    of the connection as the end of its body, so that a streamed answer needs no
    length. The caller ends the headers. Shared with the codex agent's relay."""
    handler.send_response(answer.status, answer.reason)
    for name, value in answer.getheaders():
        if name.lower() not in hop_headers:
            handler.send_header(name, value)
    handler.send_header("Connection", "close")
    handler.close_connection = True


class ModelRelay:
    """An HTTP relay on 127.0.0.1 to `upstream` (the proxy's base URL), adding `key`."""

    def __init__(self, upstream: str, key: str) -> None:
        self.upstream = urllib.parse.urlsplit(upstream)
        if self.upstream.scheme not in ("http", "https") or not self.upstream.netloc:
            raise ValueError("the model's base URL must be an http(s) URL")
        self._key = key
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self._thread: threading.Thread | None = None

    def __repr__(self) -> str:
        return f"ModelRelay({self.url} -> {self.upstream.netloc})"  # never the key

    @property
    def url(self) -> str:
        """The base URL the agent uses: the relay, with the upstream's path."""
        path = self.upstream.path.rstrip("/")
        return f"http://127.0.0.1:{self.server.server_address[1]}{path}"

    def start(self) -> ModelRelay:
        self._thread = threading.Thread(
            target=self.server.serve_forever, name="model-relay", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _connection(self) -> http.client.HTTPConnection:
        if self.upstream.scheme == "https":
            return http.client.HTTPSConnection(
                self.upstream.netloc, timeout=UPSTREAM_TIMEOUT_SECONDS
            )
        return http.client.HTTPConnection(self.upstream.netloc, timeout=UPSTREAM_TIMEOUT_SECONDS)

    def _headers(self, received: Any) -> dict[str, str]:
        headers = {
            name: value
            for name, value in received.items()
            if name.lower() not in HOP_HEADERS and name.lower() not in CREDENTIAL_HEADERS
        }
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
            # Anthropic's Messages API reads its key from here.
            if "anthropic-version" in {name.lower() for name in received}:
                headers["x-api-key"] = self._key
        return headers

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        relay = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass  # nothing of a request is logged

            def do_GET(self) -> None:
                self._forward()

            def do_POST(self) -> None:
                self._forward()

            def do_PUT(self) -> None:
                self._forward()

            def do_DELETE(self) -> None:
                self._forward()

            def _body(self) -> bytes | None:
                length = self.headers.get("Content-Length")
                if length is not None:
                    return self.rfile.read(int(length))
                if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
                    chunks = []
                    while True:
                        size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                        if size == 0:
                            self.rfile.readline()
                            break
                        chunks.append(self.rfile.read(size))
                        self.rfile.readline()
                    return b"".join(chunks)
                return None

            def _forward(self) -> None:
                try:
                    body = self._body()
                except (OSError, ValueError):
                    self.send_error(400, "unreadable request")
                    return
                # The agent's base URL is the relay's with the upstream's path: the
                # request's path is the upstream's as it is.
                path = self.path
                upstream = relay._connection()
                try:
                    upstream.request(
                        self.command, path, body=body, headers=relay._headers(self.headers)
                    )
                    answer = upstream.getresponse()
                except OSError as error:
                    self.send_error(502, f"the model's proxy could not be reached: {error}")
                    return
                try:
                    send_answer_head(self, answer)
                    self.end_headers()
                    while True:
                        chunk = answer.read1(CHUNK_BYTES)
                        if not chunk:
                            break
                        self.wfile.write(chunk)
                        self.wfile.flush()
                except OSError:
                    return  # the agent went away
                finally:
                    upstream.close()

        return Handler
