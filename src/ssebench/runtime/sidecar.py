"""The link between the two containers of a sidecar run.

The environment container's entrypoint listens on ``sidecar.sock`` in the sockets
volume that both containers mount (root only, 0600, peer uid checked); the agent
container's entrypoint connects once and holds the connection for as long as it runs.
Messages are JSON objects, one per line:

    environment -> agent   {"type": "ready", "uid", "gid", "source_dir", "daemon_port"}
                           {"type": "stop"}       the environment was told to stop
    agent -> environment   {"type": "started", "command"}
                           {"type": "exited", "exit_code", "timed_out", "signal"}

The connection is the agent container's lifeline. When it closes without "exited"
(the agent container was killed), the environment grades what is there; when it
closes before "ready", the environment could not set the run up and the agent never
starts. The socket file is left in place when the environment stops listening, so an
agent container that comes late is refused at once instead of waiting for a file
that will never appear.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import stat
import struct
import threading
import time
from pathlib import Path
from typing import Any

SOCKET_NAME = "sidecar.sock"
MAX_LINE_BYTES = 64 * 1024
_POLL_SECONDS = 0.25


class LinkClosed(Exception):
    """The other container closed the link (or was never there to hold it)."""


class _Channel:
    """One connected socket, read as JSON lines."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._buffer = b""
        self._send_lock = threading.Lock()

    def send(self, message: dict[str, Any]) -> None:
        data = json.dumps(message, separators=(",", ":")).encode() + b"\n"
        with self._send_lock:
            try:
                self._sock.sendall(data)
            except OSError as error:
                raise LinkClosed(f"cannot send {message.get('type')}: {error.strerror}") from None

    def receive(self, timeout: float) -> dict[str, Any] | None:
        """The next message, or None when none came within timeout; raises LinkClosed."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            try:
                self._sock.settimeout(remaining)
                chunk = self._sock.recv(65536)
            except TimeoutError:
                return None
            except OSError as error:
                raise LinkClosed(f"the link broke: {error.strerror}") from None
            if not chunk:
                raise LinkClosed("the other side closed the link")
            self._buffer += chunk
            if len(self._buffer) > MAX_LINE_BYTES:
                raise LinkClosed("the other side sent an over-long message")
        line, _, self._buffer = self._buffer.partition(b"\n")
        try:
            message = json.loads(line)
        except ValueError:
            raise LinkClosed("the other side sent something that is not JSON") from None
        if not isinstance(message, dict) or not isinstance(message.get("type"), str):
            raise LinkClosed("the other side sent a message without a type")
        return message

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.close()


class EnvironmentLink:
    """The environment container's end: listens, accepts one agent container."""

    def __init__(self, path: Path, *, peer_uids: frozenset[int]) -> None:
        self.path = path
        self.peer_uids = peer_uids
        self._listener: socket.socket | None = None
        self._channel: _Channel | None = None

    @classmethod
    def listen(cls, path: Path, *, peer_uids: frozenset[int]) -> EnvironmentLink:
        link = cls(path, peer_uids=peer_uids)
        with contextlib.suppress(FileNotFoundError):
            if stat.S_ISSOCK(os.lstat(path).st_mode):
                path.unlink()
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        # Bound under another name and moved into place once listening: the agent side
        # takes a refused connection for an environment that has gone, so the path must
        # never exist before the socket listens.
        staging = path.with_name(f".{path.name}.{os.getpid()}")
        try:
            with contextlib.suppress(FileNotFoundError):
                staging.unlink()
            listener.bind(str(staging))
            # Root only: a message on this link decides the run's exit status.
            os.chmod(staging, 0o600)
            listener.listen(4)
            os.replace(staging, path)
        except BaseException:
            listener.close()
            with contextlib.suppress(FileNotFoundError):
                staging.unlink()
            raise
        link._listener = listener
        return link

    def accept(self, stop: threading.Event, timeout: float) -> bool:
        """Wait for the agent container; False when timeout passed or stop was set."""
        listener = self._listener
        if listener is None:
            return False
        deadline = time.monotonic() + timeout
        while not stop.is_set() and time.monotonic() < deadline:
            listener.settimeout(_POLL_SECONDS)
            try:
                sock, _ = listener.accept()
            except TimeoutError:
                continue
            if _peer_uid(sock) not in self.peer_uids:
                sock.close()  # the mode keeps others out; this is the second lock
                continue
            self._channel = _Channel(sock)
            return True
        return False

    def send(self, message: dict[str, Any]) -> None:
        if self._channel is None:
            raise LinkClosed("no agent container is connected")
        self._channel.send(message)

    def receive(self, timeout: float) -> dict[str, Any] | None:
        if self._channel is None:
            raise LinkClosed("no agent container is connected")
        return self._channel.receive(timeout)

    def close(self) -> None:
        """Stop listening and drop the connection; the socket file stays (see above)."""
        if self._channel is not None:
            self._channel.close()
        if self._listener is not None:
            with contextlib.suppress(OSError):
                self._listener.close()
            self._listener = None


class AgentLink:
    """The agent container's end: connects to the environment and keeps the link."""

    def __init__(self, channel: _Channel) -> None:
        self._channel = channel

    @classmethod
    def connect(cls, path: Path, stop: threading.Event, timeout: float) -> AgentLink:
        """Connect once the environment listens.

        Raises LinkClosed when it refuses (it has stopped listening: it failed or
        ended), when timeout passes before the socket appears, or on stop.
        """
        deadline = time.monotonic() + timeout
        while True:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.connect(str(path))
                return cls(_Channel(sock))
            except FileNotFoundError:
                sock.close()  # the environment has not started listening yet
            except ConnectionRefusedError:
                sock.close()
                raise LinkClosed("the environment container is no longer listening") from None
            except OSError:
                sock.close()
                raise
            if stop.is_set():
                raise LinkClosed("stopped before the environment container was ready")
            if time.monotonic() >= deadline:
                raise LinkClosed(f"the environment container did not listen within {timeout:.0f}s")
            time.sleep(_POLL_SECONDS)

    def send(self, message: dict[str, Any]) -> None:
        self._channel.send(message)

    def receive(self, timeout: float) -> dict[str, Any] | None:
        return self._channel.receive(timeout)

    def close(self) -> None:
        self._channel.close()


def _peer_uid(sock: socket.socket) -> int:
    credentials = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
    _pid, uid, _gid = struct.unpack("3i", credentials)
    return int(uid)
