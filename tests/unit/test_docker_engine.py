"""The Engine API client (backends/docker/engine.py) against a fake daemon on a Unix
socket: which daemon it uses, the one request list_runs makes, the answer read back as
`docker container inspect` would have given it, and the fall back to the CLI."""

from __future__ import annotations

import json
import secrets
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from ssebench.backends.docker import DockerBackend, engine
from ssebench.backends.docker.commands import container_exists, container_ids, volume_names
from tests.unit.test_images import FakeDocker, fake_docker_on_path

LISTED = [
    {
        "Id": "a" * 64,
        "Names": ["/ssebench-run-1"],
        "Image": "ssebench/agent-reference/t:1",
        "Labels": {"ssebench.run-id": "run-1", "ssebench.webui": "true"},
        "State": "exited",
        "Status": "Exited (3) 2 minutes ago",
        "Created": 1764547200,
    },
    {
        "Id": "b" * 64,
        "Names": ["/ssebench-run-2"],
        "Image": "ssebench/agent-reference/t:1",
        "Labels": {"ssebench.run-id": "run-2", "ssebench.webui": "true"},
        "State": "running",
        "Status": "Up 5 seconds",
        "Created": 1764547260,
    },
]


class FakeDaemon:
    """Answers every request with one canned answer and records the request lines."""

    def __init__(self, path: Path, answer: bytes) -> None:
        self.path = path
        self.answer = answer
        self.requests: list[str] = []
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(str(path))
        self.server.listen()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.server.accept()
            except OSError:
                return
            with connection:
                received = b""
                while b"\r\n\r\n" not in received:
                    chunk = connection.recv(4096)
                    if not chunk:
                        break
                    received += chunk
                self.requests.append(received.decode().split("\r\n")[0])
                connection.sendall(self.answer)

    def close(self) -> None:
        self.server.close()


def http_answer(body: bytes, status: str = "200 OK", *, chunked: bool = False) -> bytes:
    if chunked:
        middle = len(body) // 2
        parts = [body[:middle], body[middle:]]
        encoded = b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in parts) + b"0\r\n\r\n"
        return f"HTTP/1.1 {status}\r\nTransfer-Encoding: chunked\r\n\r\n".encode() + encoded
    headers = f"HTTP/1.0 {status}\r\nContent-Type: application/json\r\n"
    return headers.encode() + f"Content-Length: {len(body)}\r\n\r\n".encode() + body


@pytest.fixture
def fake_docker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeDocker]:
    yield from fake_docker_on_path(tmp_path, monkeypatch)


def daemon(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, answer: bytes) -> FakeDaemon:
    # A short path: a Unix socket's path holds about 100 bytes.
    path = Path("/tmp") / f"ssebench-test-{secrets.token_hex(6)}.sock"
    fake = FakeDaemon(path, answer)
    monkeypatch.setenv("DOCKER_HOST", f"unix://{path}")
    return fake


def test_socket_path_follows_the_cli_settings(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.mkdir()
    home = {"DOCKER_CONFIG": str(config)}
    assert engine.socket_path(home) == engine.DEFAULT_SOCKET
    assert engine.socket_path({"DOCKER_HOST": "unix:///run/x.sock"}) == "/run/x.sock"
    assert engine.socket_path({"DOCKER_HOST": "tcp://10.0.0.1:2375"}) is None
    assert engine.socket_path({"DOCKER_HOST": "ssh://me@box"}) is None
    assert engine.socket_path({**home, "DOCKER_CONTEXT": "remote"}) is None
    assert engine.socket_path({**home, "DOCKER_CONTEXT": "default"}) == engine.DEFAULT_SOCKET
    (config / "config.json").write_text(json.dumps({"currentContext": "remote"}))
    assert engine.socket_path(home) is None
    (config / "config.json").write_text(json.dumps({"currentContext": "default"}))
    assert engine.socket_path(home) == engine.DEFAULT_SOCKET
    (config / "config.json").write_text("{not json")
    assert engine.socket_path(home) is None


def test_list_runs_is_one_request_with_the_label_filter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_docker: FakeDocker
) -> None:
    fake = daemon(tmp_path, monkeypatch, http_answer(json.dumps(LISTED).encode()))
    try:
        runs = DockerBackend().list_runs({"ssebench.webui": "true", "ssebench.task-id": "t"})
    finally:
        fake.close()
        fake.path.unlink(missing_ok=True)
    assert len(fake.requests) == 1
    method, target, _version = fake.requests[0].split(" ")
    assert method == "GET"
    url = urlsplit(target)
    assert url.path == "/containers/json"
    query = parse_qs(url.query)
    assert query["all"] == ["1"]
    assert json.loads(query["filters"][0]) == {
        "label": ["ssebench.webui=true", "ssebench.task-id=t"]
    }
    assert fake_docker.calls() == []  # no docker process at all
    first, second = runs
    assert (first.run_id, first.name, first.state, first.exit_code) == (
        "run-1",
        "ssebench-run-1",
        "exited",
        3,
    )
    assert first.created_at == "2025-12-01T00:00:00Z"
    assert first.image == "ssebench/agent-reference/t:1"
    assert first.labels == {"ssebench.run-id": "run-1", "ssebench.webui": "true"}
    assert (second.state, second.exit_code) == ("running", None)


def test_a_chunked_answer_is_read_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    body = json.dumps(LISTED).encode()
    fake = daemon(tmp_path, monkeypatch, http_answer(body, chunked=True))
    try:
        assert engine.get_json("/containers/json") == LISTED
    finally:
        fake.close()
        fake.path.unlink(missing_ok=True)


@pytest.mark.parametrize(
    "answer",
    [
        http_answer(b'{"message": "client version too new"}', "400 Bad Request"),
        http_answer(b"<html>not json"),
        b"garbage without a header end",
    ],
)
def test_a_bad_answer_falls_back_to_the_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_docker: FakeDocker, answer: bytes
) -> None:
    fake = daemon(tmp_path, monkeypatch, answer)
    fake_docker.on("ps", stdout="")
    try:
        assert DockerBackend().list_runs({"ssebench.webui": "true"}) == []
    finally:
        fake.close()
        fake.path.unlink(missing_ok=True)
    assert len(fake.requests) == 1
    assert fake_docker.calls()[0][0] == "ps"


def test_no_socket_falls_back_to_the_cli(fake_docker: FakeDocker) -> None:
    # The fake_docker fixture points DOCKER_HOST at a socket that does not exist.
    fake_docker.on("ps", stdout="")
    assert DockerBackend().list_runs({}) == []
    assert fake_docker.calls()[0][0] == "ps"


def test_another_daemon_is_left_to_the_cli(
    fake_docker: FakeDocker, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCKER_HOST", "tcp://127.0.0.1:9")
    with pytest.raises(engine.EngineUnavailable, match="another daemon"):
        engine.get_json("/containers/json")
    fake_docker.on("ps", stdout="")
    assert DockerBackend().list_runs({}) == []
    assert fake_docker.calls()[0][0] == "ps"


@pytest.mark.parametrize(("status", "exists"), [("200 OK", True), ("404 Not Found", False)])
def test_container_exists_asks_the_api(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    fake_docker: FakeDocker,
    status: str,
    exists: bool,
) -> None:
    fake = daemon(tmp_path, monkeypatch, http_answer(b"{}", status))
    try:
        assert container_exists("ssebench-a b") is exists
    finally:
        fake.close()
        fake.path.unlink(missing_ok=True)
    assert fake.requests == ["GET /containers/ssebench-a%20b/json HTTP/1.0"]
    assert fake_docker.calls() == []


def test_container_exists_asks_the_cli_when_the_api_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_docker: FakeDocker
) -> None:
    fake = daemon(tmp_path, monkeypatch, http_answer(b"{}", "500 Server Error"))
    fake_docker.on("container", "inspect", stdout="id\n")
    try:
        assert container_exists("ssebench-x") is True
    finally:
        fake.close()
        fake.path.unlink(missing_ok=True)
    assert fake_docker.calls()[0][:2] == ["container", "inspect"]


def test_volume_names_and_container_ids_ask_the_api(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_docker: FakeDocker
) -> None:
    volumes = {"Volumes": [{"Name": "ssebench-r-archive"}, {"Name": "other"}], "Warnings": []}
    fake = daemon(tmp_path, monkeypatch, http_answer(json.dumps(volumes).encode()))
    try:
        assert volume_names("label=ssebench.archive-of=r") == ["ssebench-r-archive", "other"]
    finally:
        fake.close()
        fake.path.unlink(missing_ok=True)
    target = urlsplit(fake.requests[0].split(" ")[1])
    assert target.path == "/volumes"
    assert json.loads(parse_qs(target.query)["filters"][0]) == {"label": ["ssebench.archive-of=r"]}
    fake = daemon(tmp_path, monkeypatch, http_answer(json.dumps(LISTED).encode()))
    try:
        assert container_ids("label=ssebench.run=p") == ["a" * 64, "b" * 64]
    finally:
        fake.close()
        fake.path.unlink(missing_ok=True)
    target = urlsplit(fake.requests[0].split(" ")[1])
    assert target.path == "/containers/json"
    assert parse_qs(target.query)["all"] == ["1"]
    assert fake_docker.calls() == []


def test_volume_names_and_container_ids_fall_back_to_the_cli(fake_docker: FakeDocker) -> None:
    fake_docker.on("volume", "ls", stdout="v1\nv2\n")
    fake_docker.on("ps", stdout="c1\n")
    assert volume_names("name=v") == ["v1", "v2"]
    assert container_ids("label=k=v") == ["c1"]
    assert fake_docker.calls() == [
        ["volume", "ls", "--quiet", "--filter", "name=v"],
        ["ps", "--all", "--quiet", "--filter", "label=k=v", "--no-trunc"],
    ]
