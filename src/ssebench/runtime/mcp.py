"""The tool layer's MCP server: one tool, `test_patch`, over Streamable HTTP.

Agents that speak the Model Context Protocol register the daemon's `/mcp` endpoint
(SSE_MCP_URL) as their server "ssebench". The official SDK cannot run here (the
runtime is standard-library only and task images bring any Python), so this is the
small part of the protocol that one argument-less tool needs:

  - JSON-RPC 2.0 over `POST /mcp`, always answered with application/json (the
    transport lets a server answer a request with one JSON body instead of a stream);
    notifications and responses get 202 with no body;
  - `initialize` (protocol version negotiation; it issues the Mcp-Session-Id that
    every later request must carry), `notifications/initialized`, `ping`,
    `tools/list` and `tools/call`;
  - `DELETE /mcp` ends a session; `GET /mcp` (a server-to-client stream) is 405, as
    this server never sends anything unasked;
  - a browser's Origin other than the loopback is refused (403), against DNS
    rebinding; batches only in the protocol version that has them (2025-03-26).

The checks themselves are the daemon's (`Checker`): it enforces the difficulty and
records the call in the dialog, as for its HTTP tools.
"""

from __future__ import annotations

import collections
import json
import secrets
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol
from urllib.parse import urlsplit

from . import __version__

PATH = "/mcp"
SERVER_NAME = "ssebench"
TOOL_NAME = "test_patch"
# Newest first: an unknown requested version is answered with the first.
PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26")
# The last protocol version whose POST body may be a JSON-RPC batch (2025-06-18 dropped it).
BATCH_PROTOCOL_VERSIONS = frozenset({"2025-03-26"})
# Without an MCP-Protocol-Version header, a client is taken to speak this one (the spec's rule).
DEFAULT_PROTOCOL_VERSION = "2025-03-26"
SESSION_HEADER = "mcp-session-id"
VERSION_HEADER = "mcp-protocol-version"
# An agent needs one or two sessions; past this many the oldest is forgotten.
MAX_SESSIONS = 32
# How much of a failing log the tool gives back: enough for the error, small for a context.
LOG_TAIL_CHARS = 4000
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})

METHODS = frozenset({"initialize", "ping", "tools/list", "tools/call"})

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602

TOOL = {
    "name": TOOL_NAME,
    "description": (
        "Build your current change on a clean copy of the repository and run the checks "
        "this run allows (the project's build and its tests; never the hidden tests). "
        "Answers PASSED, or FAILED with the end of the log. Takes no arguments."
    ),
    "inputSchema": {"type": "object", "properties": {}},
    "annotations": {"readOnlyHint": True, "openWorldHint": False},
}
CHECK_WORDS = {
    "test": "the build and the tests",
    "build": "the build (this run's difficulty allows no tests)",
}


class HttpAnswer(NamedTuple):
    status: int
    headers: dict[str, str]
    body: bytes


@dataclass(frozen=True)
class CheckOutcome:
    """What one check of the agent's tree gave: check is "build" or "test"."""

    check: str
    ok: bool
    exit_code: int | None
    output: str
    seconds: float


class ToolRefused(Exception):
    """The daemon will not run a check now (the agent has exited); the message says why."""


class Checker(Protocol):
    difficulty: int

    def run_strongest_check(self) -> CheckOutcome | None:
        """Run the strongest check the difficulty allows; None when it allows none.
        Raises ToolRefused when checks are closed."""


class _Failure(Exception):
    """A JSON-RPC error for one message (HTTP 200), or, with http_status, for the request."""

    def __init__(self, code: int, message: str, *, http_status: int = 200) -> None:
        super().__init__(message)
        self.code = code
        self.http_status = http_status


class McpEndpoint:
    def __init__(self, checker: Checker, log: Callable[[str], None]) -> None:
        self.checker = checker
        self._log = log
        self._lock = threading.Lock()
        # session id -> the protocol version negotiated at its initialize
        self._sessions: collections.OrderedDict[str, str] = collections.OrderedDict()

    def handle(self, method: str, headers: Mapping[str, str], body: bytes) -> HttpAnswer:
        """One HTTP request to /mcp; headers are keyed in lower case."""
        if not _origin_allowed(headers.get("origin")):
            return _error_answer(403, INVALID_REQUEST, "Origin not allowed")
        if method == "POST":
            return self._post(headers, body)
        if method == "DELETE":
            return self._delete(headers)
        answer = _error_answer(405, INVALID_REQUEST, f"{method} is not supported on {PATH}")
        answer.headers["Allow"] = "POST, DELETE"
        return answer

    # -- HTTP ----------------------------------------------------------------------

    def _post(self, headers: Mapping[str, str], body: bytes) -> HttpAnswer:
        content_type = headers.get("content-type", "").split(";")[0].strip().lower()
        if content_type != "application/json":
            return _error_answer(415, INVALID_REQUEST, "Content-Type must be application/json")
        if not _accepts_json(headers.get("accept")):
            return _error_answer(406, INVALID_REQUEST, "the client must accept application/json")
        try:
            message = json.loads(body)
        except (ValueError, RecursionError):  # RecursionError: an absurdly nested body
            return _error_answer(400, PARSE_ERROR, "Parse error: the body is not JSON")
        if isinstance(message, dict) and message.get("method") == "initialize":
            return self._initialize(message)
        try:
            version = self._session_version(headers)
        except _Failure as failure:
            return _error_answer(failure.http_status, failure.code, str(failure))
        if isinstance(message, list):
            if version not in BATCH_PROTOCOL_VERSIONS:
                return _error_answer(
                    400, INVALID_REQUEST, f"protocol version {version} has no JSON-RPC batches"
                )
            if not message:
                return _error_answer(400, INVALID_REQUEST, "an empty batch")
            replies = [reply for item in message if (reply := self._message(item)) is not None]
            return json_answer(200, replies) if replies else _accepted()
        reply = self._message(message)
        return _accepted() if reply is None else json_answer(200, reply)

    def _delete(self, headers: Mapping[str, str]) -> HttpAnswer:
        try:
            self._session_version(headers)
        except _Failure as failure:
            return _error_answer(failure.http_status, failure.code, str(failure))
        with self._lock:
            self._sessions.pop(headers[SESSION_HEADER], None)
        return HttpAnswer(200, {}, b"")

    def _session_version(self, headers: Mapping[str, str]) -> str:
        """The negotiated version of the request's session; fails as the spec says:
        400 without a session id or with a wrong version header, 404 for an unknown one."""
        session = headers.get(SESSION_HEADER)
        if not session:
            raise _Failure(INVALID_REQUEST, "Mcp-Session-Id is missing", http_status=400)
        with self._lock:
            version = self._sessions.get(session)
        if version is None:
            raise _Failure(INVALID_REQUEST, "no such session; initialize again", http_status=404)
        claimed = headers.get(VERSION_HEADER)
        if claimed is not None and claimed != version:
            raise _Failure(
                INVALID_REQUEST,
                f"MCP-Protocol-Version {claimed!r} is not this session's ({version})",
                http_status=400,
            )
        return version

    def _initialize(self, message: dict[str, Any]) -> HttpAnswer:
        request_id = message.get("id")
        if message.get("jsonrpc") != "2.0" or not _valid_id(request_id):
            return _error_answer(400, INVALID_REQUEST, "initialize is a request: it needs an id")
        params = message.get("params")
        requested = params.get("protocolVersion") if isinstance(params, dict) else None
        if not isinstance(requested, str):
            reply = _error(request_id, INVALID_PARAMS, "params.protocolVersion is missing")
            return json_answer(200, reply)
        version = requested if requested in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[0]
        session = secrets.token_hex(16)
        self._log(f"mcp: initialize, protocol {version}")
        with self._lock:
            self._sessions[session] = version
            while len(self._sessions) > MAX_SESSIONS:
                self._sessions.popitem(last=False)
        result = {
            "protocolVersion": version,
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": SERVER_NAME, "version": __version__},
            "instructions": f"Call {TOOL_NAME} to check your change as the run allows.",
        }
        answer = json_answer(200, {"jsonrpc": "2.0", "id": request_id, "result": result})
        answer.headers["Mcp-Session-Id"] = session
        return answer

    # -- JSON-RPC ------------------------------------------------------------------

    def _message(self, message: Any) -> dict[str, Any] | None:
        """The reply to one message of a session; None for a notification or response."""
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return _error(None, INVALID_REQUEST, "not a JSON-RPC 2.0 message")
        method = message.get("method")
        if method is None:
            if "id" in message and ("result" in message or "error" in message):
                return None  # a response; this server never asks, so nothing waits for it
            return _error(None, INVALID_REQUEST, "a message needs a method")
        if "id" not in message:
            return None  # notifications/initialized and any other notification
        request_id = message["id"]
        if not _valid_id(request_id) or not isinstance(method, str):
            return _error(None, INVALID_REQUEST, "a request needs a string method and an id")
        params = message.get("params", {})
        # The method is the client's: only the ones this server knows are named.
        self._log(f"mcp: {method if method in METHODS else 'an unknown method'}")
        try:
            if not isinstance(params, dict):
                raise _Failure(INVALID_PARAMS, "params must be an object")
            result = self._call(method, params)
        except _Failure as failure:
            return _error(request_id, failure.code, str(failure))
        return {"jsonrpc": "2.0", "id": request_id, "result": result}

    def _call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "ping":
            return {}
        if method == "tools/list":
            return {"tools": [TOOL]}
        if method == "tools/call":
            if params.get("name") != TOOL_NAME:
                raise _Failure(INVALID_PARAMS, f"unknown tool: {params.get('name')!r}")
            return self._test_patch()
        if method == "initialize":
            raise _Failure(INVALID_REQUEST, "initialize cannot be part of a batch")
        raise _Failure(METHOD_NOT_FOUND, f"method not found: {method}")

    def _test_patch(self) -> dict[str, Any]:
        try:
            outcome = self.checker.run_strongest_check()
        except ToolRefused as refused:
            return _tool_result(f"{TOOL_NAME} cannot run: {refused}", error=True)
        if outcome is None:
            return _tool_result(
                f"{TOOL_NAME} cannot run: this run's difficulty ({self.checker.difficulty}) "
                "allows no build or test check. Check your change by reading it.",
                error=True,
            )
        what = CHECK_WORDS.get(outcome.check, outcome.check)
        if outcome.ok:
            return _tool_result(f"PASSED: {what} pass on your change ({outcome.seconds:.1f}s).")
        how = "an internal error" if outcome.exit_code is None else f"exit {outcome.exit_code}"
        return _tool_result(
            f"FAILED: {what} did not pass on your change ({how}, {outcome.seconds:.1f}s). "
            f"The end of the log:\n{_tail(outcome.output)}"
        )


def _tool_result(text: str, *, error: bool = False) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": error}


def _tail(output: str) -> str:
    if len(output) <= LOG_TAIL_CHARS:
        return output
    return "[... the start of the log is left out ...]\n" + output[-LOG_TAIL_CHARS:]


def _origin_allowed(origin: str | None) -> bool:
    """No Origin (not a browser) or a loopback one: a web page elsewhere must not
    reach the tool through a name that resolves to 127.0.0.1 (DNS rebinding)."""
    if origin is None:
        return True
    try:
        parts = urlsplit(origin)
        host = parts.hostname
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and host in LOOPBACK_HOSTS


def _accepts_json(accept: str | None) -> bool:
    if accept is None:
        return True
    kinds = {part.split(";")[0].strip().lower() for part in accept.split(",")}
    return bool(kinds & {"application/json", "application/*", "*/*"})


def _valid_id(value: Any) -> bool:
    return isinstance(value, (str, int)) and not isinstance(value, bool)


def _error(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def json_answer(status: int, payload: Any) -> HttpAnswer:
    """A JSON body (the daemon answers its own API with it too)."""
    return HttpAnswer(status, {"Content-Type": "application/json"}, json.dumps(payload).encode())


def _error_answer(status: int, code: int, message: str) -> HttpAnswer:
    return json_answer(status, _error(None, code, message))


def _accepted() -> HttpAnswer:
    return HttpAnswer(202, {}, b"")
