"""The real `ssebench webui` process over real HTTP: every route without the token, with a
wrong one, from a foreign Origin or Host; the terminal's WebSocket handshake; hosted mode.
Needs no browser and no container: a refusal happens before any backend call."""

from __future__ import annotations

import base64
import http.client
import json
import os
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.webui.conftest import TOKEN, Server, request, start_server, stop_server

pytest.importorskip("uvicorn")

ROUTES = [
    ("GET", "/api/health"),
    ("GET", "/api/runs"),
    ("POST", "/api/runs"),
    ("GET", "/api/launch"),
    ("GET", "/api/runs/some-run"),
    ("DELETE", "/api/runs/some-run"),
    ("GET", "/api/runs/some-run/dialog?since=0"),
    ("GET", "/api/runs/some-run/diff"),
    ("GET", "/api/runs/some-run/logs?file=agent.log"),
    ("GET", "/api/runs/some-run/logs?since=0"),
    ("POST", "/api/runs/some-run/stop"),
]
MUTATING = [(method, path) for method, path in ROUTES if method != "GET"]
TERMINAL = "/api/runs/some-run/terminal"
GOOD = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("security-full")
    server = start_server(folder, folder / "webui.log", SSEBENCH_WEBUI_TERMINAL="1")
    yield server
    stop_server(server)


@pytest.fixture(scope="module")
def hosted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("security-hosted")
    server = start_server(
        folder, folder / "webui.log", SSEBENCH_WEBUI_HOSTED="1", SSEBENCH_WEBUI_TERMINAL="1"
    )
    yield server
    stop_server(server)


def send(server: Server, method: str, path: str, headers: dict[str, str]) -> int:
    body = json.dumps({"task": "py-semver-prerelease", "agent": "dummy"}).encode()
    status, _ = request(
        server.url + path,
        method=method,
        headers={"Content-Type": "application/json", **headers},
        body=body if method == "POST" else None,
    )
    return status


def handshake(server: Server, headers: dict[str, str]) -> int:
    """The status of a WebSocket upgrade request to the terminal."""
    address = urlsplit(server.url)
    connection = http.client.HTTPConnection(address.hostname or "", address.port, timeout=30)
    try:
        connection.request(
            "GET",
            TERMINAL,
            headers={
                "Upgrade": "websocket",
                "Connection": "Upgrade",
                "Sec-WebSocket-Version": "13",
                "Sec-WebSocket-Key": base64.b64encode(os.urandom(16)).decode(),
                **headers,
            },
        )
        return connection.getresponse().status
    finally:
        connection.close()


def token_protocol(token: str) -> str:
    return "ssebench.v1, ssebench.token." + base64.urlsafe_b64encode(
        token.encode()
    ).decode().rstrip("=")


@pytest.mark.parametrize(("method", "path"), ROUTES)
def test_no_token_or_a_wrong_one_is_401(full: Server, method: str, path: str) -> None:
    assert send(full, method, path, {}) == 401
    assert send(full, method, path, {"Authorization": "Bearer " + "y" * len(TOKEN)}) == 401
    assert send(full, method, path, {"Authorization": f"Basic {TOKEN}"}) == 401


@pytest.mark.parametrize(("method", "path"), [*ROUTES, ("GET", "/"), ("GET", "/static/app.js")])
def test_a_wrong_origin_is_403(full: Server, method: str, path: str) -> None:
    assert send(full, method, path, {**GOOD, "Origin": "http://attacker.example"}) == 403
    assert send(full, method, path, {**GOOD, "Origin": "null"}) == 403


@pytest.mark.parametrize("path", ["/", "/api/health"])
def test_a_foreign_host_is_403(full: Server, path: str) -> None:
    port = urlsplit(full.url).port
    assert send(full, "GET", path, {**GOOD, "Host": f"attacker.example:{port}"}) == 403


def test_the_right_token_passes(full: Server) -> None:
    status, health = full.get("/api/health", GOOD)
    assert status == 200 and health["hosted"] is False and health["terminal"] is True


def test_the_terminal_handshake_needs_token_and_origin(full: Server) -> None:
    assert handshake(full, {}) in (401, 403)
    assert handshake(full, {"Sec-WebSocket-Protocol": token_protocol("z" * 20)}) in (401, 403)
    assert (
        handshake(
            full,
            {"Sec-WebSocket-Protocol": token_protocol(TOKEN), "Origin": "http://attacker.example"},
        )
        == 403
    )
    # A bearer header is not how a WebSocket brings the token; the subprotocol is.
    assert handshake(full, GOOD) in (401, 403)


def test_the_page_shell_is_served_without_data(full: Server) -> None:
    status, page = full.get("/")
    assert status == 200 and "Access token" in page and "run_id" not in page


@pytest.mark.parametrize(("method", "path"), MUTATING)
def test_hosted_mode_refuses_every_mutating_route(hosted: Server, method: str, path: str) -> None:
    assert send(hosted, method, path, GOOD) == 403


def test_hosted_mode_refuses_the_launcher_and_terminal(hosted: Server, tmp_path: Path) -> None:
    status, health = hosted.get("/api/health", GOOD)
    assert status == 200 and health["hosted"] is True and health["terminal"] is False
    assert hosted.get("/api/launch", GOOD)[0] == 403
    assert handshake(hosted, {"Sec-WebSocket-Protocol": token_protocol(TOKEN)}) == 403
    assert hosted.get("/api/runs", GOOD)[0] == 200
    # Nothing was launched: no launch folder was made.
    assert not (hosted.results / ".webui").exists()
