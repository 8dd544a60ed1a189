"""HTTP over unix sockets, for the daemon's agent and admin sockets and their clients."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import socket
import socketserver
import stat
import struct
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, cast


class UnixHTTPServer(ThreadingHTTPServer):
    """A threading HTTP server on a unix socket with a fixed mode.

    With ``peer_uids``, connections from processes of any other uid are dropped
    before a request is read; the socket's mode already keeps them out, this is the
    second lock on the admin door.
    """

    address_family = socket.AF_UNIX

    def __init__(
        self,
        path: Path,
        handler: type[BaseHTTPRequestHandler],
        *,
        mode: int,
        peer_uids: frozenset[int] | None = None,
    ) -> None:
        self.socket_path = path
        self.socket_mode = mode
        self.peer_uids = peer_uids
        super().__init__(cast(Any, str(path)), handler)

    def server_bind(self) -> None:
        try:
            if stat.S_ISSOCK(os.lstat(self.socket_path).st_mode):
                self.socket_path.unlink()
        except FileNotFoundError:
            pass
        # HTTPServer.server_bind would look the path up as a host name.
        socketserver.TCPServer.server_bind(self)
        os.chmod(self.socket_path, self.socket_mode)
        self.server_name = "localhost"
        self.server_port = 0

    def verify_request(self, request: Any, client_address: Any) -> bool:
        if self.peer_uids is None:
            return True
        credentials = request.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
        _pid, uid, _gid = struct.unpack("3i", credentials)
        return uid in self.peer_uids

    def server_close(self) -> None:
        super().server_close()
        with contextlib.suppress(FileNotFoundError):
            self.socket_path.unlink()


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path: Path, timeout: float = 60.0) -> None:
        super().__init__("localhost", timeout=timeout)
        self.socket_path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(str(self.socket_path))
        self.sock = sock


def request_json(
    socket_path: Path,
    method: str,
    url: str,
    body: Any = None,
    timeout: float = 60.0,
) -> tuple[int, Any]:
    """One JSON request on a unix socket: (HTTP status, decoded body)."""
    connection = UnixHTTPConnection(socket_path, timeout)
    try:
        payload = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"} if payload is not None else {}
        connection.request(method, url, body=payload, headers=headers)
        response = connection.getresponse()
        data = response.read()
        return response.status, json.loads(data) if data else None
    finally:
        connection.close()
