"""A small client of the Docker Engine API on its Unix socket, for the calls where the
docker CLI costs a process per call (listing runs: one GET returns every run's labels
and state, where the CLI needs `docker ps` and then `docker container inspect`), and
the archive's tar stream, read as it comes (stream).

Standard library only, and no http.client (which alone costs ~40 ms of imports): one
HTTP/1.0 request per connection, the answer read to the end. docs/performance.md says
why this and not the `docker` SDK.

It is used only where it reaches the daemon the docker CLI would: DOCKER_HOST unset (the
default socket) or unix://; no other docker context chosen (DOCKER_CONTEXT, or the
currentContext of the CLI's config.json). Otherwise, and whenever the socket cannot be
reached, the caller falls back to the CLI, whose errors (daemon down, permission) are
the ones users know.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
from collections.abc import Iterator

# typing.TYPE_CHECKING without importing typing: see cli/main.py.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

DEFAULT_SOCKET = "/var/run/docker.sock"
TIMEOUT_SECONDS = 30.0
READ_CHUNK = 256 * 1024
# An answer larger than this is not a listing this client is for.
MAX_ANSWER_BYTES = 256 * 1024 * 1024
# An answer's status line and headers: the daemon's are a few hundred bytes.
MAX_HEAD_BYTES = 64 * 1024


class EngineUnavailable(Exception):
    """The Engine API cannot be used here or now: use the CLI instead."""


class EngineTimeout(EngineUnavailable):
    """The daemon did not answer within the request's timeout (a blocking request such
    as a wait: asking the CLI the same would wait as long again)."""


def socket_path(environ: dict[str, str] | None = None) -> str | None:
    """The Unix socket of the daemon the docker CLI would talk to; None when the CLI is
    set up for anything else (another context, a TCP or SSH host)."""
    env = os.environ if environ is None else environ
    host = env.get("DOCKER_HOST", "")
    if host:
        return host.removeprefix("unix://") if host.startswith("unix://") else None
    if env.get("DOCKER_CONTEXT", "default") != "default":
        return None
    # os.path, not pathlib: pathlib (and urllib with it) would be a tenth of `ssebench
    # runs list`'s start-up, which this is on the path of.
    config_dir = env.get("DOCKER_CONFIG") or os.path.join(os.path.expanduser("~"), ".docker")
    try:
        with open(os.path.join(config_dir, "config.json"), encoding="utf-8") as config_file:
            config = json.load(config_file)
    except FileNotFoundError:
        config = {}
    except (OSError, ValueError):
        return None  # a config the CLI reads and this cannot: let the CLI decide
    context = config.get("currentContext") if isinstance(config, dict) else None
    if context not in (None, "", "default"):
        return None
    return DEFAULT_SOCKET


def request(
    method: str,
    path: str,
    *,
    body: Any = None,
    timeout: float | None = TIMEOUT_SECONDS,
    max_bytes: int = MAX_ANSWER_BYTES,
) -> tuple[int, bytes]:
    """One request to the Engine API: (status, body); body, when given, is sent as JSON;
    timeout None waits as long as the daemon takes. Raises EngineTimeout when it did not
    answer in time, EngineUnavailable when the socket is not to be used or cannot be
    reached, or the answer is not HTTP or larger than max_bytes."""
    with _sent(method, path, body, timeout) as (connection, where), _reaching(where, timeout):
        answer = _read_all(connection, max_bytes)
    return _parse(answer)


@contextlib.contextmanager
def stream(
    method: str, path: str, *, timeout: float | None = TIMEOUT_SECONDS
) -> Iterator[tuple[int, Iterator[bytes]]]:
    """One request whose answer is read as it comes: (status, the body's chunks), for
    answers too large to hold (a tar of a run's archive). Raises EngineUnavailable, as
    request does, until the answer's head is read; the chunks raise OSError (TimeoutError
    after timeout without data) when the connection breaks. An HTTP/1.0 answer's body is
    the bytes up to the connection's end; a chunked one is refused (EngineUnavailable),
    as the daemon does not send it to an HTTP/1.0 request."""
    with _sent(method, path, None, timeout) as (connection, where):
        with _reaching(where, timeout):
            status, headers, first = _read_head(connection)
        if headers.get("transfer-encoding", "").lower() == "chunked":
            raise EngineUnavailable("a streamed answer came chunked")

        def body() -> Iterator[bytes]:
            if first:
                yield first
            while chunk := connection.recv(READ_CHUNK):
                yield chunk

        yield status, body()


@contextlib.contextmanager
def _sent(
    method: str, path: str, body: Any, timeout: float | None
) -> Iterator[tuple[socket.socket, str]]:
    """A connection to the daemon with the request sent, and the socket's path; closed
    on leaving. Raises EngineUnavailable when the socket is not to be used or cannot be
    reached."""
    where = socket_path()
    if where is None:
        raise EngineUnavailable("the docker CLI is set up for another daemon")
    head = f"{method} {path} HTTP/1.0\r\nHost: docker\r\nUser-Agent: ssebench\r\n"
    content = b"" if body is None else json.dumps(body).encode()
    if body is not None:
        head += f"Content-Type: application/json\r\nContent-Length: {len(content)}\r\n"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        with _reaching(where, timeout):
            connection.settimeout(timeout)
            connection.connect(where)
            connection.sendall(f"{head}\r\n".encode() + content)
        yield connection, where


@contextlib.contextmanager
def _reaching(where: str, timeout: float | None) -> Iterator[None]:
    """The socket's errors within, as this client's: EngineTimeout after timeout without
    an answer, EngineUnavailable for any other."""
    try:
        yield
    except TimeoutError:
        raise EngineTimeout(f"no answer from {where} within {timeout} s") from None
    except OSError as error:
        raise EngineUnavailable(f"cannot reach {where}: {error.strerror or error}") from None


def get_json(path: str) -> Any:
    """GET path and decode its JSON answer. Raises EngineUnavailable on any failure
    (the caller then asks the CLI, which reports the failure in its own words)."""
    status, body = request("GET", path)
    if status != 200:
        raise EngineUnavailable(f"GET {path.partition('?')[0]} answered {status}")
    try:
        return json.loads(body)
    except ValueError:
        raise EngineUnavailable(f"GET {path.partition('?')[0]} answered no JSON") from None


def error_message(body: bytes) -> str:
    """The daemon's message of an answer that is not a success ({"message": ...}), as the
    docker CLI prints it after "Error response from daemon: "."""
    try:
        decoded = json.loads(body)
    except ValueError:
        decoded = None
    if isinstance(decoded, dict) and isinstance(decoded.get("message"), str):
        return str(decoded["message"])
    return body.decode("utf-8", "replace").strip()


def containers_path(labels: dict[str, str]) -> str:
    """The path that lists every container (running or not) carrying all of labels."""
    filters = json.dumps({"label": [f"{key}={value}" for key, value in labels.items()]})
    return f"/containers/json?all=1&filters={percent_encoded(filters)}"


def percent_encoded(text: str) -> str:
    """urllib.parse.quote(text, safe=""): every byte of its UTF-8 but RFC 3986's
    unreserved characters as %XX. Here because urllib's import (with ipaddress) is 2 ms
    of `ssebench runs list`, which needs nothing else of it."""
    return "".join(chr(byte) if byte in _UNRESERVED else f"%{byte:02X}" for byte in text.encode())


_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def _read_all(connection: socket.socket, max_bytes: int) -> bytes:
    parts: list[bytes] = []
    size = 0
    while chunk := connection.recv(READ_CHUNK):
        parts.append(chunk)
        size += len(chunk)
        if size > max_bytes:
            raise EngineUnavailable("the answer is too large")
    return b"".join(parts)


def _read_head(connection: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """The answer's status and headers, and what of its body came with them."""
    received = b""
    while b"\r\n\r\n" not in received:
        chunk = connection.recv(READ_CHUNK)
        if not chunk or len(received) > MAX_HEAD_BYTES:
            raise EngineUnavailable("the answer is not HTTP")
        received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    status, headers = _parse_head(head)
    return status, headers, body


def _parse(answer: bytes) -> tuple[int, bytes]:
    head, separator, body = answer.partition(b"\r\n\r\n")
    if not separator:
        raise EngineUnavailable("the answer is not HTTP")
    status, headers = _parse_head(head)
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = _unchunk(body)
    return status, body


def _parse_head(head: bytes) -> tuple[int, dict[str, str]]:
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    words = status_line.split()
    if len(words) < 2 or not words[0].startswith("HTTP/") or not words[1].isdigit():
        raise EngineUnavailable("the answer is not HTTP")
    headers = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(words[1]), headers


def _unchunk(body: bytes) -> bytes:
    parts: list[bytes] = []
    while True:
        size_line, separator, rest = body.partition(b"\r\n")
        try:
            size = int(size_line.split(b";")[0], 16)
        except ValueError:
            raise EngineUnavailable("a chunked answer is malformed") from None
        if not separator or size == 0:
            return b"".join(parts)
        parts.append(rest[:size])
        body = rest[size + 2 :]
