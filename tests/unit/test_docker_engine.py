"""The Engine API client (backends/docker/engine.py) against a fake daemon on a Unix
socket: which daemon it uses, the one request list_runs makes, the answer read back as
`docker container inspect` would have given it, and the fall back to the CLI."""

from __future__ import annotations

import io
import json
import re
import secrets
import socket
import tarfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import pytest

from ssebench.backends.docker import DockerBackend, archive, commands, engine, network
from ssebench.backends.docker.commands import (
    container_exists,
    container_ids,
    docker_call,
    is_gone,
    remove_container,
    volume_names,
)
from ssebench.cli.main import main
from ssebench.cli.runs import run_to_json
from ssebench.errors import BackendError
from ssebench.extensions import RUN_ID_LABEL, RunHandle
from ssebench.host.docker_cli import failure_reason
from tests.unit.test_docker_archive import tar_stream
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
    """Answers every request with one canned answer (or the n-th request with the n-th
    of a list, the last one from then on) and records the request lines and bodies."""

    def __init__(self, path: Path, answer: bytes | list[bytes]) -> None:
        self.path = path
        self.answer = answer
        self.requests: list[str] = []
        self.bodies: list[Any] = []
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
                head, _, body = received.partition(b"\r\n\r\n")
                length = 0
                for line in head.decode().split("\r\n")[1:]:
                    name, _, value = line.partition(":")
                    if name.lower() == "content-length":
                        length = int(value)
                while len(body) < length and (chunk := connection.recv(4096)):
                    body += chunk
                self.bodies.append(json.loads(body) if body else None)
                self.requests.append(head.decode().split("\r\n")[0])
                answers = [self.answer] if isinstance(self.answer, bytes) else self.answer
                connection.sendall(answers[min(len(self.requests), len(answers)) - 1])

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


def daemon(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, answer: bytes | list[bytes]
) -> FakeDaemon:
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


# A sidecar run's environment container, whose runner is not root: the handle names the
# pair and carries the run directory's owner.
SIDECAR = {
    "Id": "c" * 64,
    "Names": ["/ssebench-pair-3"],
    "Image": "ssebench/env/t:1",
    "Labels": {
        "ssebench.run-id": "run-3",
        "ssebench.webui": "true",
        "ssebench.run": "pair-3",
        "ssebench.results-owner": "1000:1000",
        "ssebench.results": "/home/me/results/run-3",
    },
    "State": "created",
    "Status": "Created",
    "Created": 1764547320,
}


def test_runs_list_prints_the_runs_list_runs_finds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`runs list` on Docker reads listing.listed alone, not the backend: what it prints
    is what run_to_json makes of list_runs' RunInfo, and their handles are as before."""
    fake = daemon(tmp_path, monkeypatch, http_answer(json.dumps([*LISTED, SIDECAR]).encode()))
    monkeypatch.delenv("SSEBENCH_BACKEND", raising=False)
    try:
        assert main(["runs", "list", "--json"]) == 0
        printed = json.loads(capsys.readouterr().out)
        runs = DockerBackend().list_runs({"ssebench.webui": "true"})
    finally:
        fake.close()
        fake.path.unlink(missing_ok=True)
    assert printed == {
        "backend": "docker",
        "supports_exec": DockerBackend.supports_exec,
        "runs": [run_to_json(run) for run in runs],
    }
    assert [run["state"] for run in printed["runs"]] == ["exited", "running", "created"]
    assert runs[0].handle == RunHandle(
        backend="docker", run_id="run-1", name="ssebench-run-1", details={}
    )
    assert runs[2].handle == RunHandle(
        backend="docker",
        run_id="run-3",
        name="ssebench-pair-3-agent",
        details={
            "pair": "pair-3",
            "environment": "ssebench-pair-3",
            "results_owner": "1000:1000",
            "results": "/home/me/results/run-3",
            "image": "ssebench/env/t:1",
        },
    )


# The sandbox container of a Kubernetes run's pod, on a node whose runtime is the same
# dockerd (dockershim): the pod's labels, and the runtime's own.
POD_SANDBOX = {
    "Id": "d" * 64,
    "Names": ["/k8s_POD_ssebench-run-4-x_ns_0000_0"],
    "Image": "k8s.gcr.io/pause:3.2",
    "Labels": {
        "ssebench.run-id": "run-4",
        "ssebench.webui": "true",
        "io.kubernetes.pod.uid": "0000",
        "io.kubernetes.docker.type": "podsandbox",
    },
    "State": "running",
    "Status": "Up 5 seconds",
    "Created": 1764547380,
}


def test_a_kubernetes_pods_container_is_not_a_docker_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Neither list_runs (and so prune) nor `runs list` takes it for one."""
    answer = http_answer(json.dumps([*LISTED, POD_SANDBOX]).encode())
    fake = daemon(tmp_path, monkeypatch, answer)
    monkeypatch.delenv("SSEBENCH_BACKEND", raising=False)
    try:
        runs = DockerBackend().list_runs({"ssebench.webui": "true"})
        assert main(["runs", "list", "--json"]) == 0
    finally:
        fake.close()
        fake.path.unlink(missing_ok=True)
    assert [run.run_id for run in runs] == ["run-1", "run-2"]
    printed = json.loads(capsys.readouterr().out)
    assert [run["run_id"] for run in printed["runs"]] == ["run-1", "run-2"]


@pytest.mark.parametrize(
    "text",
    ['{"label": ["ssebench.webui=true"]}', "a b/c?d&e=f%+#", "\u00fc\u20ac\U0001f600", "~-._", ""],
)
def test_the_engines_percent_encoding_is_urllibs(text: str) -> None:
    assert engine.percent_encoded(text) == quote(text, safe="")


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


@pytest.fixture
def api(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_docker: FakeDocker
) -> Iterator[Callable[[bytes | list[bytes]], FakeDaemon]]:
    """Starts a fake daemon giving one answer (the CLI is the fake's, for what falls
    back); each is closed when the test ends."""
    started: list[FakeDaemon] = []

    def start(answer: bytes | list[bytes]) -> FakeDaemon:
        started.append(daemon(tmp_path, monkeypatch, answer))
        return started[-1]

    yield start
    for fake in started:
        fake.close()
        fake.path.unlink(missing_ok=True)


def test_docker_call_reads_the_api_as_the_cli_would_answer(
    api: Callable[[bytes | list[bytes]], FakeDaemon], fake_docker: FakeDocker
) -> None:
    answer = http_answer(b'{"message": "No such container: x"}', "404 Not Found")
    fake = api(answer)
    completed = docker_call("POST", "/things?a=1", ["thing", "x"], body={"Name": "x"})
    assert (completed.args, completed.returncode, completed.stdout) == (
        ["docker", "thing", "x"],
        1,
        "",
    )
    assert failure_reason(completed) == "No such container: x"
    assert is_gone(completed)
    assert fake.requests == ["POST /things?a=1 HTTP/1.0"]
    assert fake.bodies == [{"Name": "x"}]
    second = api(http_answer(b'{"Id": "abc"}', "201 Created"))
    completed = docker_call("GET", "/x", ["x"], output=lambda answer: json.loads(answer)["Id"])
    assert (completed.returncode, completed.stdout, completed.stderr) == (0, "abc", "")
    assert second.bodies == [None]
    assert fake_docker.calls() == []


def test_docker_call_without_the_api_is_the_cli(fake_docker: FakeDocker) -> None:
    fake_docker.on("rm", stderr="Error: boom\n", status=1)
    completed = remove_container("ssebench-r")
    assert completed.returncode == 1
    assert failure_reason(completed) == "boom"
    assert fake_docker.calls() == [["rm", "--force", "--volumes", "ssebench-r"]]


def test_removing_a_container_and_volumes_is_one_request_each(
    api: Callable[[bytes | list[bytes]], FakeDaemon],
    fake_docker: FakeDocker,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = api(http_answer(b"", "204 No Content"))
    assert remove_container("ssebench-a b").returncode == 0
    listed = iter([["v1", "v2"], []])
    monkeypatch.setattr(commands, "volume_names", lambda selector: next(listed))
    assert commands.remove_volumes("label=k=v") is None
    assert fake.requests == [
        "DELETE /containers/ssebench-a%20b?force=1&v=1 HTTP/1.0",
        "DELETE /volumes/v1?force=1 HTTP/1.0",
        "DELETE /volumes/v2?force=1 HTTP/1.0",
    ]
    assert fake_docker.calls() == []


def test_the_archive_helper_is_created_through_the_api(
    api: Callable[[bytes | list[bytes]], FakeDaemon], fake_docker: FakeDocker
) -> None:
    fake = api(http_answer(b'{"Id": "c1"}', "201 Created"))
    name = archive.archive_helper("r1", "ssebench-r1-archive", "img:1")
    assert name == "ssebench-r1-archive-copy"
    assert fake.requests == [
        "DELETE /containers/ssebench-r1-archive-copy?force=1&v=1 HTTP/1.0",
        "POST /containers/create?name=ssebench-r1-archive-copy HTTP/1.0",
    ]
    assert fake.bodies[1] == {
        "Image": "img:1",
        "Cmd": ["ssebench-copy"],
        "Labels": {"ssebench.archive-of": "r1"},
        "HostConfig": {
            "NetworkMode": "none",
            "Mounts": [
                {
                    "Type": "volume",
                    "Source": "ssebench-r1-archive",
                    "Target": "/tmp/sse-archive",
                    "ReadOnly": True,
                }
            ],
        },
    }
    assert fake_docker.calls() == []


def tar_of(name: str, content: bytes, kind: bytes = tarfile.REGTYPE) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        member = tarfile.TarInfo(name)
        member.type, member.mode, member.size = kind, 0o640, len(content)
        archive.addfile(member, io.BytesIO(content) if kind == tarfile.REGTYPE else None)
    return buffer.getvalue()


def test_copy_from_image_is_requests_only(
    api: Callable[[bytes | list[bytes]], FakeDaemon], fake_docker: FakeDocker, tmp_path: Path
) -> None:
    created = http_answer(b'{"Id": "c1"}', "201 Created")
    copied = http_answer(tar_of("patch.diff", b"--- a\n+++ b\n"))
    fake = api([created, copied, http_answer(b"", "204 No Content")])
    DockerBackend().copy_from_image(
        "img:1", "/reference/patch.diff", tmp_path / "p", "linux/amd64", labels={RUN_ID_LABEL: "r"}
    )
    assert fake.requests == [
        "POST /containers/create?platform=linux%2Famd64&name=ssebench-r-copy HTTP/1.0",
        "GET /containers/c1/archive?path=%2Freference%2Fpatch.diff HTTP/1.0",
        "DELETE /containers/c1?force=1&v=1 HTTP/1.0",
    ]
    body = fake.bodies[0]
    assert (body["Image"], body["Cmd"]) == ("img:1", ["ssebench-copy"])
    assert body["Labels"][RUN_ID_LABEL] == "r"
    assert (tmp_path / "p").read_bytes() == b"--- a\n+++ b\n"
    assert (tmp_path / "p").stat().st_mode & 0o777 == 0o640
    assert fake_docker.calls() == []


@pytest.mark.parametrize(
    "copied",
    [
        http_answer(tar_of("patch.diff", b"", tarfile.SYMTYPE)),
        http_answer(tar_of("folder", b"", tarfile.DIRTYPE)),
        http_answer(b"not a tar"),
        http_answer(b'{"message": "Could not find the file"}', "404 Not Found"),
    ],
)
def test_copy_from_image_leaves_anything_but_one_file_to_docker_cp(
    api: Callable[[bytes | list[bytes]], FakeDaemon],
    fake_docker: FakeDocker,
    tmp_path: Path,
    copied: bytes,
) -> None:
    fake = api([http_answer(b'{"Id": "c1"}', "201 Created"), copied, http_answer(b"")])
    DockerBackend().copy_from_image("img:1", "/x", tmp_path / "p", None)
    assert [line.split(" ")[0] for line in fake.requests] == ["POST", "GET", "DELETE"]
    assert not (tmp_path / "p").exists()
    assert fake_docker.calls() == [["cp", "c1:/x", str(tmp_path / "p")]]


ARCHIVE_RUN = RunHandle(
    backend="docker",
    run_id="r1",
    name="ssebench-r1",
    details={"archive": "ssebench-r1-archive", "image": "img:1"},
)


def test_the_archive_is_streamed_through_the_api_into_the_safe_extractor(
    api: Callable[[bytes | list[bytes]], FakeDaemon],
    fake_docker: FakeDocker,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """No docker cp: GET /containers/{helper}/archive, read in pieces (a file of several
    of the client's reads), and the agent's link, FIFO and set-uid bit go no further
    than the extractor lets them."""
    large = bytes(range(256)) * (3 * engine.READ_CHUNK // 256 + 7)
    copied = tar_stream(
        ("./", tarfile.DIRTYPE, None, 0o755),
        ("./notes.md", tarfile.REGTYPE, b"mine\n", 0o4777),
        ("./large.bin", tarfile.REGTYPE, large, 0o644),
        ("./dialog.jsonl", tarfile.FIFOTYPE, None, 0o644),
        ("./passwd", tarfile.SYMTYPE, None, 0o777),
    )
    gone = http_answer(b'{"message": "No such container"}', "404 Not Found")
    created = http_answer(b'{"Id": "h1"}', "201 Created")
    fake = api([gone, created, http_answer(copied), http_answer(b"", "204 No Content")])
    (tmp_path / "archive").mkdir()
    DockerBackend().collect_results(ARCHIVE_RUN, tmp_path)
    assert fake.requests[2:] == [
        "GET /containers/ssebench-r1-archive-copy/archive?path=/tmp/sse-archive/. HTTP/1.0",
        "DELETE /containers/ssebench-r1-archive-copy?force=1&v=1 HTTP/1.0",
    ]
    assert fake_docker.calls() == []
    copied_to = tmp_path / "archive"
    assert sorted(path.name for path in copied_to.iterdir()) == ["large.bin", "notes.md"]
    assert (copied_to / "large.bin").read_bytes() == large
    assert (copied_to / "notes.md").stat().st_mode & 0o7777 == 0o755
    assert "skipped 2 entries of the archive" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("copied", "message"),
    [
        (
            http_answer(
                b'{"message": "Could not find the file /tmp/sse-archive"}', "404 Not Found"
            ),
            "Cannot copy the archive of r1: Could not find the file /tmp/sse-archive",
        ),
        (http_answer(b"x" * 700), "The archive of r1 was not copied: "),
    ],
)
def test_an_archive_the_api_cannot_give_whole_fails_the_copy_in_one_line(
    api: Callable[[bytes | list[bytes]], FakeDaemon],
    fake_docker: FakeDocker,
    tmp_path: Path,
    copied: bytes,
    message: str,
) -> None:
    """The daemon's refusal, or a stream that is no tar: BackendError, not docker cp
    (which would only be asked the same), and the helper is removed."""
    created = http_answer(b'{"Id": "h1"}', "201 Created")
    fake = api([http_answer(b"", "204 No Content"), created, copied, http_answer(b"")])
    (tmp_path / "archive").mkdir()
    with pytest.raises(BackendError, match=re.escape(message)):
        DockerBackend().collect_results(ARCHIVE_RUN, tmp_path)
    assert fake.requests[-1].startswith("DELETE /containers/ssebench-r1-archive-copy")
    assert fake_docker.calls() == []


def test_removing_a_run_network_is_requests(
    api: Callable[[bytes | list[bytes]], FakeDaemon], fake_docker: FakeDocker
) -> None:
    inspected = {"Name": "n", "Containers": {"c1": {}, "c2": {}}}
    fake = api(http_answer(json.dumps(inspected).encode()))
    network.remove("r1")
    name = network.network_name("r1")
    assert fake.requests == [
        f"GET /networks/{name} HTTP/1.0",
        f"POST /networks/{name}/disconnect HTTP/1.0",
        f"POST /networks/{name}/disconnect HTTP/1.0",
        f"DELETE /networks/{name} HTTP/1.0",
    ]
    assert fake.bodies[1:3] == [
        {"Container": "c1", "Force": True},
        {"Container": "c2", "Force": True},
    ]
    assert not [argv for argv in fake_docker.calls() if argv[0] == "network"]


def test_a_network_already_gone_is_one_request(
    api: Callable[[bytes | list[bytes]], FakeDaemon], fake_docker: FakeDocker
) -> None:
    answer = http_answer(b'{"message": "network x not found"}', "404 Not Found")
    fake = api(answer)
    network.remove("r1")
    assert len(fake.requests) == 1
    assert fake_docker.calls() == []


@pytest.mark.parametrize("open_egress", [False, True])
def test_creating_a_run_network_is_one_request_saying_what_the_cli_would(
    api: Callable[[bytes | list[bytes]], FakeDaemon], fake_docker: FakeDocker, open_egress: bool
) -> None:
    fake = api(http_answer(b'{"Id": "n1"}', "201 Created"))
    run_network = network.RunNetwork(
        run_id="r1", open_egress=open_egress, needs_proxy=False, labels={"k": "v"}
    )
    assert network.create(run_network) == run_network.name
    assert fake.requests == ["POST /networks/create HTTP/1.0"]
    body = fake.bodies[0]
    arguments = run_network.create_arguments()
    assert ("--internal" in arguments) is body["Internal"] is not open_egress
    assert arguments[-1] == body["Name"]
    assert [f"{key}={value}" for key, value in body["Options"].items()] == [
        arguments[arguments.index("--opt") + 1]
    ]
    labelled = [arguments[i + 1] for i, word in enumerate(arguments) if word == "--label"]
    assert [f"{key}={value}" for key, value in body["Labels"].items()] == labelled
    assert body["Driver"] == arguments[arguments.index("--driver") + 1]
    assert not [argv for argv in fake_docker.calls() if argv[0] == "network"]


def test_waiting_for_a_container_is_the_apis_blocking_wait(
    api: Callable[[bytes | list[bytes]], FakeDaemon], fake_docker: FakeDocker
) -> None:
    answer = http_answer(b'{"StatusCode": 3, "Error": null}')
    fake = api(answer)
    handle = RunHandle(backend="docker", run_id="r", name="ssebench-r")
    assert DockerBackend().wait(handle, 30) == 3
    assert fake.requests == ["POST /containers/ssebench-r/wait HTTP/1.0"]
    assert fake_docker.calls() == []


def test_a_wait_for_a_missing_container_says_so(
    api: Callable[[bytes | list[bytes]], FakeDaemon], fake_docker: FakeDocker
) -> None:
    answer = http_answer(b'{"message": "No such container: ssebench-r"}', "404 Not Found")
    fake = api(answer)
    handle = RunHandle(backend="docker", run_id="r", name="ssebench-r")
    with pytest.raises(BackendError, match="Cannot wait for ssebench-r: No such container"):
        DockerBackend().wait(handle, 30)
    assert len(fake.requests) == 1
    assert fake_docker.calls() == []


def test_a_wait_past_its_timeout_is_not_asked_again_of_the_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_docker: FakeDocker
) -> None:
    path = Path("/tmp") / f"ssebench-test-{secrets.token_hex(6)}.sock"
    silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    silent.bind(str(path))
    silent.listen()  # accepts (in the kernel's backlog) and never answers
    monkeypatch.setenv("DOCKER_HOST", f"unix://{path}")
    handle = RunHandle(backend="docker", run_id="r", name="ssebench-r")
    try:
        with pytest.raises(TimeoutError, match=r"did not end within 0\.2 s"):
            DockerBackend().wait(handle, 0.2)
    finally:
        silent.close()
        path.unlink(missing_ok=True)
    assert fake_docker.calls() == []
