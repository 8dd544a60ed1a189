"""A relay between Codex and the run's proxy that keeps Codex's tools plain functions.

Codex offers the tools of an MCP server as one Responses API "namespace" tool
(mcp__ssebench with test_patch inside) and expects the model's call back as a
function_call carrying that namespace. The proxy hands a Responses request to a
chat-completions model (LiteLLM's bridge), where a tool is a function with a name
and nothing else: the namespace tool is passed on as is (an upstream may refuse it)
and the call comes back without its namespace, which Codex then does not know.

So Codex talks to this relay on the container's loopback, and the relay talks to
the proxy: in each request every namespace tool becomes plain functions named
<namespace>__<tool> (and earlier calls in the input likewise), and in each answer
a call of such a name gets its namespace and tool name back. Where the proxy serves
the run's model through a Responses bridge (a second entry of the same model, for a
server with only the chat API), each request names that entry. Everything else,
the Authorization header with the run key included, passes through untouched;
nothing is logged. Standard library only.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# The tool layer's runtime, installed in every task image (the wrapper imports it too).
from ssebench_runtime.model_relay import send_answer_head

SEPARATOR = "__"
# Headers that belong to one hop, never passed on.
HOP_HEADERS = frozenset(
    {"host", "content-length", "connection", "keep-alive", "transfer-encoding", "accept-encoding"}
)
UPSTREAM_TIMEOUT_SECONDS = 600
ERROR_CHARS = 300


class ToolNames:
    """The flat names given to namespaced tools, and the way back."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._namespaced: dict[str, tuple[str, str]] = {}

    def flat(self, namespace: str, name: str) -> str:
        flat = f"{namespace}{SEPARATOR}{name}"
        with self._lock:
            self._namespaced[flat] = (namespace, name)
        return flat

    def namespaced(self, flat: str) -> tuple[str, str] | None:
        with self._lock:
            return self._namespaced.get(flat)


def flatten_request(body: dict[str, Any], names: ToolNames) -> dict[str, Any]:
    """The request with namespace tools (and namespaced calls) as plain functions."""
    tools = []
    for tool in body.get("tools") or []:
        if isinstance(tool, dict) and tool.get("type") == "namespace":
            for inner in tool.get("tools") or []:
                flat = dict(inner)
                flat["name"] = names.flat(tool.get("name", ""), inner.get("name", ""))
                tools.append(flat)
        else:
            tools.append(tool)
    if "tools" in body:
        body["tools"] = tools
    for item in body.get("input") or []:
        if isinstance(item, dict) and item.get("namespace") and "name" in item:
            item["name"] = names.flat(item.pop("namespace"), item["name"])
    return body


def restore_item(item: Any, names: ToolNames) -> None:
    if isinstance(item, dict) and item.get("type") == "function_call" and not item.get("namespace"):
        found = names.namespaced(item.get("name", ""))
        if found:
            item["namespace"], item["name"] = found


def restore_event(event: Any, names: ToolNames) -> Any:
    """An answer (or one event of its stream) with namespaced calls as Codex made them."""
    if not isinstance(event, dict):
        return event
    restore_item(event.get("item"), names)
    for holder in (event, event.get("response")):
        if isinstance(holder, dict):
            for item in holder.get("output") or []:
                restore_item(item, names)
    return event


def restore_stream_line(line: bytes, names: ToolNames) -> bytes:
    """One line of a server-sent event stream (bytes, with its newline)."""
    if not line.startswith(b"data:"):
        return line
    payload = line[5:].strip()
    try:
        event = json.loads(payload)
    except ValueError:
        return line
    return b"data: " + json.dumps(restore_event(event, names)).encode() + b"\n"


def error_line(status: int, data: bytes) -> str:
    """One line for an error answer: its status and the message of its JSON body."""
    try:
        error = json.loads(data).get("error")
        message = error.get("message") if isinstance(error, dict) else error
    except (ValueError, AttributeError):
        message = data.decode("utf-8", "replace")
    text = " ".join(str(message or "").split())[:ERROR_CHARS]
    return f"the proxy answered HTTP {status}: {text}".rstrip(": ")


class Relay:
    """An HTTP relay on 127.0.0.1 to `upstream` (the proxy's base URL)."""

    def __init__(self, upstream: str, responses_model: str | None = None) -> None:
        self.upstream = urllib.parse.urlsplit(upstream)
        self.names = ToolNames()
        self.responses_model = responses_model
        # The proxy's last refusal ("HTTP 500: ..."): a better reason than Codex's own words.
        self.last_error = ""
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def start(self) -> Relay:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def connection(self) -> http.client.HTTPConnection:
        https = self.upstream.scheme == "https"
        kind = http.client.HTTPSConnection if https else http.client.HTTPConnection
        return kind(self.upstream.netloc, timeout=UPSTREAM_TIMEOUT_SECONDS)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        relay = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass  # the headers carry the run key: nothing of a request is logged

            def do_GET(self) -> None:
                self.forward(None)

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    request = json.loads(body)
                except ValueError:
                    request = None
                if isinstance(request, dict):
                    if relay.responses_model and "model" in request:
                        request["model"] = relay.responses_model
                    body = json.dumps(flatten_request(request, relay.names)).encode()
                self.forward(body)

            def forward(self, body: bytes | None) -> None:
                headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_HEADERS}
                path = relay.upstream.path.rstrip("/") + self.path
                upstream = relay.connection()
                try:
                    upstream.request(self.command, path, body=body, headers=headers)
                    answer = upstream.getresponse()
                except OSError as error:
                    relay.last_error = f"the proxy could not be reached: {error}"
                    self.send_error(502, relay.last_error)
                    return
                try:
                    send_answer_head(self, answer, HOP_HEADERS)
                    streamed = "text/event-stream" in (answer.getheader("Content-Type") or "")
                    if streamed and answer.status < 400:
                        self.end_headers()
                        for line in iter(answer.readline, b""):
                            self.wfile.write(restore_stream_line(line, relay.names))
                            self.wfile.flush()
                        return
                    data = answer.read()
                    if answer.status >= 400:
                        relay.last_error = error_line(answer.status, data)
                    with contextlib.suppress(ValueError):  # not JSON: passed on as it is
                        data = json.dumps(restore_event(json.loads(data), relay.names)).encode()
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    return  # Codex went away
                finally:
                    upstream.close()

        return Handler
