"""The real `ssebench webui` process over real HTTP: every route without the token, with a
wrong one, from a foreign Origin or Host; the terminal's WebSocket handshake; hosted mode.
Needs no browser and no container: a refusal happens before any backend call."""

from __future__ import annotations

import base64
import http.client
import json
import os
import socket
import time
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
    ("GET", "/api/runs/some-run/session"),
    ("GET", "/api/runs/some-run/logs?file=agent.log"),
    ("GET", "/api/runs/some-run/logs?since=0"),
    ("POST", "/api/runs/some-run/stop"),
    ("GET", "/api/evaluations"),
    ("GET", "/api/evaluations/eval-some.json"),
    ("GET", "/api/evaluations/eval-some.json/compare?with=eval-other.json"),
]
MUTATING = [(method, path) for method, path in ROUTES if method != "GET"]
TERMINAL = "/api/runs/some-run/terminal"
ASSISTANT = "/api/runs/some-run/assistant"
SOCKETS = [TERMINAL, ASSISTANT]
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


def handshake(server: Server, headers: dict[str, str], path: str = TERMINAL) -> int:
    """The status of a WebSocket upgrade request to the terminal (or to path)."""
    address = urlsplit(server.url)
    connection = http.client.HTTPConnection(address.hostname or "", address.port, timeout=30)
    try:
        connection.request(
            "GET",
            path,
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


def handshake_to(server: Server, path: str) -> int:
    """The status of an upgrade to path with the right token."""
    return handshake(server, {"Sec-WebSocket-Protocol": token_protocol(TOKEN)}, path)


@pytest.mark.parametrize("path", SOCKETS)
def test_a_websocket_handshake_needs_token_and_origin(full: Server, path: str) -> None:
    assert handshake(full, {}, path) in (401, 403)
    bad_token = {"Sec-WebSocket-Protocol": token_protocol("z" * 20)}
    assert handshake(full, bad_token, path) in (401, 403)
    assert (
        handshake(
            full,
            {"Sec-WebSocket-Protocol": token_protocol(TOKEN), "Origin": "http://attacker.example"},
            path,
        )
        == 403
    )
    # A bearer header is not how a WebSocket brings the token; the subprotocol is.
    assert handshake(full, GOOD, path) in (401, 403)
    # The right token, but no such run: refused before any key is made.
    assert handshake_to(full, path) == 403


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
    assert handshake_to(hosted, ASSISTANT) == 403
    assert hosted.get("/api/runs", GOOD)[0] == 200
    # The evaluation view only reads: hosted mode shows it.
    assert hosted.get("/api/evaluations", GOOD)[0] == 200
    # Nothing was launched: no launch folder was made.
    assert not (hosted.results / ".webui").exists()


POSTS = [path for method, path in ROUTES if method == "POST"]


@pytest.mark.parametrize("path", POSTS)
def test_a_post_needs_the_json_content_type(full: Server, path: str) -> None:
    body = json.dumps({"task": "py-semver-prerelease", "agent": "dummy"}).encode()
    for content_type in (
        None,
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
    ):
        headers = dict(GOOD)
        if content_type is not None:
            headers["Content-Type"] = content_type
        status, answer = request(full.url + path, method="POST", headers=headers, body=body)
        assert status == 415 and "application/json" in answer["error"], content_type


def raw_post(server: Server, head: list[str], first_bytes: bytes) -> tuple[str, float]:
    """Send a POST's head and only the first bytes of its body; the status line the
    server answers with, and how long it took, while the rest of the body never comes."""
    address = urlsplit(server.url)
    lines = [
        "POST /api/runs HTTP/1.1",
        f"Host: {address.netloc}",
        f"Authorization: Bearer {TOKEN}",
        "Content-Type: application/json",
        *head,
    ]
    started = time.monotonic()
    with socket.create_connection((address.hostname, address.port), timeout=20) as connection:
        connection.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + first_bytes)
        answer = connection.recv(4096)
    return answer.split(b"\r\n", 1)[0].decode(), time.monotonic() - started


def test_a_huge_declared_body_is_refused_without_reading_it(full: Server) -> None:
    # 10 GB announced, 1 KB sent: an answer proves the server did not wait for the rest.
    status, seconds = raw_post(full, ["Content-Length: 10000000000"], b"{" + b" " * 1023)
    assert status.split()[1] == "413" and seconds < 5, (status, seconds)


def test_a_body_without_a_length_is_cut_at_the_cap(full: Server) -> None:
    chunk = b" " * 20 * 1024  # above the 16 KiB cap; the chunked stream never ends
    status, seconds = raw_post(
        full, ["Transfer-Encoding: chunked"], f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n"
    )
    assert status.split()[1] == "413" and seconds < 5, (status, seconds)
