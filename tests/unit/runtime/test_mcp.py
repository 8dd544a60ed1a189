"""The daemon's MCP endpoint, driven by the official MCP SDK's Streamable HTTP client
(the runtime's server is its own, standard library only) and by raw HTTP for what a
well-behaved client never sends."""

from __future__ import annotations

import asyncio
import http.client
import json
from collections.abc import Iterator
from typing import Any

import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from ssebench.runtime.accounts import Accounts
from ssebench.runtime.daemon import Daemon
from ssebench.runtime.mcp import LOG_TAIL_CHARS, PROTOCOL_VERSIONS

from .conftest import FIXED, Project
from .test_daemon import Client, start_daemon

# calc.add(0, 0) is no longer 0: the visible test fails (the buggy base passes it).
BROKEN = "def add(a, b):\n    return a - b + 1\n"
# The same, after a long log: the tool's answer keeps only the end.
NOISY = "print('noise ' * 5000)\n" + BROKEN


@pytest.fixture(params=[1])
def client(
    request: pytest.FixtureRequest, project: Project, accounts: Accounts
) -> Iterator[Client]:
    daemon = start_daemon(project, accounts, request.param)
    yield Client(daemon, project)
    daemon.stop()


def mcp_url(daemon: Daemon) -> str:
    return f"http://127.0.0.1:{daemon.port}/mcp"


async def _session_calls(url: str, calls: list[str]) -> list[Any]:
    """Open an SDK session on url and make the calls in order: "tools" lists the
    tools, "test_patch" calls the tool, "ping" pings. Errors are returned, not raised."""
    answers: list[Any] = []
    async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
        answers.append(await session.initialize())
        for call in calls:
            try:
                if call == "tools":
                    answers.append(await session.list_tools())
                elif call == "ping":
                    answers.append(await session.send_ping())
                else:
                    answers.append(await session.call_tool(call, {}))
            except MCPError as error:
                answers.append(error)
    return answers


def sdk(daemon: Daemon, *calls: str) -> list[Any]:
    return asyncio.run(asyncio.wait_for(_session_calls(mcp_url(daemon), list(calls)), 120))


def text_of(result: Any) -> str:
    assert len(result.content) == 1 and result.content[0].type == "text"
    return str(result.content[0].text)


def test_the_sdk_lists_test_patch_and_it_passes_on_a_good_tree(client: Client) -> None:
    (client.project.source / "calc.py").write_text(FIXED)
    initialized, ping, tools, result = sdk(client.daemon, "ping", "tools", "test_patch")
    assert initialized.protocol_version == PROTOCOL_VERSIONS[0]
    assert initialized.server_info.name == "ssebench"
    assert initialized.capabilities.tools is not None
    assert ping is not None
    assert [tool.name for tool in tools.tools] == ["test_patch"]
    assert tools.tools[0].input_schema == {"type": "object", "properties": {}}
    assert result.is_error is False
    assert text_of(result).startswith("PASSED: the build and the tests pass")
    # The call went through the daemon's tool: the dialog records it.
    events = [(e["type"], e.get("tool"), e.get("ok")) for e in client.project.dialog()]
    assert events == [("tool_call", "test", None), ("tool_result", "test", True)]
    assert client.http("GET", "/status")[0] == 200


def test_a_failing_tree_gives_failed_and_the_end_of_the_log(client: Client) -> None:
    (client.project.source / "calc.py").write_text(NOISY)
    _, result = sdk(client.daemon, "test_patch")
    text = text_of(result)
    assert result.is_error is False
    assert text.startswith("FAILED: the build and the tests did not pass on your change (exit 1")
    assert "AssertionError: 1 != 0" in text
    assert text.rstrip().endswith("FAILED (failures=1)")
    assert "the start of the log is left out" in text
    assert len(text) < LOG_TAIL_CHARS + 300
    assert [e["ok"] for e in client.project.dialog() if e["type"] == "tool_result"] == [False]


@pytest.mark.parametrize("client", [2], indirect=True)
def test_difficulty_2_checks_the_build_only(client: Client) -> None:
    (client.project.source / "calc.py").write_text(BROKEN)  # builds; its test would fail
    _, result = sdk(client.daemon, "test_patch")
    assert result.is_error is False
    assert text_of(result).startswith("PASSED: the build (this run's difficulty allows no tests)")
    (client.project.source / "calc.py").write_text("def add(a, b):\n    return a +\n")
    _, result = sdk(client.daemon, "test_patch")
    assert text_of(result).startswith("FAILED: the build")
    assert "SyntaxError" in text_of(result)
    assert [e["tool"] for e in client.project.dialog() if e["type"] == "tool_call"] == [
        "build",
        "build",
    ]


@pytest.mark.parametrize("client", [3], indirect=True)
def test_difficulty_3_allows_no_check_and_says_so(client: Client) -> None:
    _, result = sdk(client.daemon, "test_patch")
    assert result.is_error is True
    assert "difficulty (3) allows no build or test check" in text_of(result)
    assert client.project.dialog() == []


def test_after_the_agent_exited_test_patch_is_closed(client: Client) -> None:
    client.admin("POST", "/admin/agent-started", {"command": ["agent"]})
    client.admin("POST", "/admin/agent-exited", {"exit_code": 0})
    _, result = sdk(client.daemon, "test_patch")
    assert result.is_error is True
    assert text_of(result) == "test_patch cannot run: the agent has exited; its actions are closed"
    assert "tool_call" not in [e["type"] for e in client.project.dialog()]


def test_an_unknown_tool_is_an_invalid_params_error(client: Client) -> None:
    _, error = sdk(client.daemon, "rm_rf")
    assert isinstance(error, MCPError)
    assert error.error.code == -32602


# -- raw HTTP --------------------------------------------------------------------------

HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


class Raw:
    """HTTP to /mcp by hand, holding the session a raw initialize opened."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.session: str | None = None
        self.version: str | None = None

    def send(
        self, method: str, body: bytes | None = None, **headers: str
    ) -> tuple[int, dict[str, str], Any]:
        all_headers = dict(HEADERS) if method == "POST" else {}
        if self.session is not None:
            all_headers["Mcp-Session-Id"] = self.session
        if self.version is not None:
            all_headers["MCP-Protocol-Version"] = self.version
        all_headers.update({name.replace("_", "-"): value for name, value in headers.items()})
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            connection.request(method, "/mcp", body=body, headers=all_headers)
            response = connection.getresponse()
            data = response.read()
            answer_headers = {name.lower(): value for name, value in response.getheaders()}
        finally:
            connection.close()
        return response.status, answer_headers, json.loads(data) if data else None

    def post(self, message: Any, **headers: str) -> tuple[int, dict[str, str], Any]:
        return self.send("POST", json.dumps(message).encode(), **headers)

    def initialize(self, version: str) -> dict[str, Any]:
        status, headers, answer = self.post(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {}},
            }
        )
        assert status == 200
        self.session = headers["mcp-session-id"]
        self.version = answer["result"]["protocolVersion"]
        assert self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})[0] == 202
        return dict(answer["result"])


@pytest.fixture
def raw(client: Client) -> Raw:
    return Raw(client.daemon.port)


def request(request_id: Any, method: str, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def test_version_negotiation_and_the_session_header(raw: Raw) -> None:
    assert raw.initialize("2025-03-26")["protocolVersion"] == "2025-03-26"
    session = raw.session
    assert session is not None and session.isascii() and session.isprintable()
    assert len(session) >= 32
    other = Raw(raw.port)
    assert other.initialize("1999-01-01")["protocolVersion"] == PROTOCOL_VERSIONS[0]
    assert other.session != session


def test_malformed_json_rpc_never_gets_a_500(raw: Raw) -> None:
    status, _, answer = raw.send("POST", b"{not json")
    assert (status, answer["error"]["code"], answer["id"]) == (400, -32700, None)
    status, _, answer = raw.send("POST", b"[" * 200_000)
    assert (status, answer["error"]["code"]) == (400, -32700)
    status, _, answer = raw.send("POST", "\udcff".encode("utf-8", "surrogatepass"))
    assert (status, answer["error"]["code"]) == (400, -32700)

    raw.initialize(PROTOCOL_VERSIONS[0])
    status, _, answer = raw.post(request(7, "resources/list"))
    assert (status, answer["id"], answer["error"]["code"]) == (200, 7, -32601)
    status, _, answer = raw.post(request("a", "tools/call", name="nope"))
    assert (status, answer["id"], answer["error"]["code"]) == (200, "a", -32602)
    status, _, answer = raw.post({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": []})
    assert (status, answer["error"]["code"]) == (200, -32602)
    for bad in ({"id": 9, "method": "ping"}, {"jsonrpc": "2.0", "id": True, "method": "ping"}, 5):
        status, _, answer = raw.post(bad)
        assert (status, answer["error"]["code"], answer["id"]) == (200, -32600, None)
    status, _, answer = raw.post(request(10, "ping"))
    assert (status, answer) == (200, {"jsonrpc": "2.0", "id": 10, "result": {}})
    # A response from the client (this server never asks) and a notification: 202.
    assert raw.post({"jsonrpc": "2.0", "id": 3, "result": {}})[0] == 202
    assert raw.post({"jsonrpc": "2.0", "method": "notifications/cancelled"})[0] == 202


def test_batches_only_in_the_version_that_has_them(raw: Raw) -> None:
    raw.initialize("2025-06-18")
    status, _, answer = raw.post([request(1, "ping"), request(2, "ping")])
    assert (status, answer["error"]["code"]) == (400, -32600)

    old = Raw(raw.port)
    old.initialize("2025-03-26")
    status, _, answer = old.post(
        [
            request(1, "ping"),
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            request(2, "no/such"),
            request(3, "initialize", protocolVersion="2025-03-26"),
            "junk",
        ]
    )
    assert status == 200
    assert [(m["id"], m.get("result"), m.get("error", {}).get("code")) for m in answer] == [
        (1, {}, None),
        (2, None, -32601),
        (3, None, -32600),
        (None, None, -32600),
    ]
    assert old.post([{"jsonrpc": "2.0", "method": "notifications/initialized"}])[0] == 202
    status, _, answer = old.post([])
    assert (status, answer["error"]["code"]) == (400, -32600)


def test_sessions_headers_and_origin(raw: Raw) -> None:
    # Before initialize there is no session: 400; an unknown one: 404.
    status, _, answer = raw.post(request(1, "tools/list"))
    assert (status, answer["error"]["code"]) == (400, -32600)
    status, _, _ = raw.post(request(1, "tools/list"), Mcp_Session_Id="f" * 32)
    assert status == 404
    raw.initialize(PROTOCOL_VERSIONS[0])
    status, _, answer = raw.post(request(2, "tools/list"))
    assert (status, [t["name"] for t in answer["result"]["tools"]]) == (200, ["test_patch"])
    # Another version than the session's, a wrong content type, no JSON accepted.
    assert raw.post(request(3, "ping"), MCP_Protocol_Version="2025-03-26")[0] == 400
    assert raw.post(request(3, "ping"), Content_Type="text/plain")[0] == 415
    assert raw.post(request(3, "ping"), Accept="text/event-stream")[0] == 406
    # A web page's origin is refused (DNS rebinding); the loopback's is not.
    status, _, answer = raw.post(request(4, "ping"), Origin="http://evil.example")
    assert (status, answer["error"]["code"]) == (403, -32600)
    assert raw.post(request(4, "ping"), Origin="null")[0] == 403
    assert raw.post(request(4, "ping"), Origin="http://localhost:8080")[0] == 200
    # No server-to-client stream: GET is 405 with Allow.
    status, headers, _ = raw.send("GET")
    assert (status, headers["allow"]) == (405, "POST, DELETE")
    # DELETE ends the session; it is then unknown.
    assert raw.send("DELETE")[0] == 200
    assert raw.post(request(5, "ping"))[0] == 404
    assert raw.send("DELETE")[0] == 404
    raw.session = None
    assert raw.send("DELETE")[0] == 400


def test_the_other_endpoints_are_unchanged(client: Client) -> None:
    assert client.http("GET", "/version")[0] == 200
    assert client.http("GET", "/nope") == (404, {"error": "no such endpoint: /nope"})
