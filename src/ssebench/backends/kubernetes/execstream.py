"""The output of a command run in a container, read frame by frame from the exec websocket.

The client's WSClient.update() gathers every frame already on the socket into one bytes
object per channel (`buffer += data`) and copies all stdout into a second buffer, so a
fast, large stdout costs time quadratic in its size: reading a 500 MB results archive
took over ten minutes at full CPU. We let the client open the connection (its
authentication, TLS and proxy settings) and read the frames ourselves: stdout is handed
on as it arrives and only the end of stderr is kept.

The channel protocol (v4/v5.channel.k8s.io): each binary frame starts with its channel,
1 stdout, 2 stderr, 3 the kubelet's verdict (a v1 Status); on v5, channel 255 announces
that a channel closed.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

STDOUT_CHANNEL = 1
STDERR_CHANNEL = 2
STATUS_CHANNEL = 3
CLOSE_SIGNAL_CHANNEL = 255
STDERR_KEPT = 2000

# The opcodes of RFC 6455, which websocket-client's recv_data_frame returns.
OPCODE_CONTINUATION = 0x0
OPCODE_TEXT = 0x1
OPCODE_BINARY = 0x2
OPCODE_CLOSE = 0x8


class ExecIdleError(Exception):
    """No frame arrived for the idle limit: the connection is taken for dead."""


class FrameSocket(Protocol):
    def recv_data_frame(self, control_frame: bool = ...) -> tuple[int, Any]: ...

    def settimeout(self, timeout: float | None) -> None: ...


@dataclass
class ExecOutput:
    """What arrived besides stdout, filled in while stdout is read."""

    stderr_tail: bytearray = field(default_factory=bytearray)
    status: bytes = b""
    closed: bool = False

    def stdout(self, sock: FrameSocket, idle_limit: float) -> Iterator[bytes]:
        """Yield stdout chunks until the server closes the connection.

        Raises ExecIdleError when nothing arrives for idle_limit seconds.
        """
        # websocket-client is the kubernetes client's dependency, imported with it.
        from websocket import WebSocketTimeoutException

        sock.settimeout(idle_limit)
        status = bytearray()
        while True:
            try:
                opcode, frame = sock.recv_data_frame(True)
            except (TimeoutError, WebSocketTimeoutException):
                raise ExecIdleError(f"no output for {idle_limit:g} s") from None
            if opcode == OPCODE_CLOSE:
                break
            if opcode not in (OPCODE_BINARY, OPCODE_TEXT, OPCODE_CONTINUATION):
                continue  # ping and pong; the client answers pings itself
            data = frame.data
            if isinstance(data, str):
                data = data.encode()
            if not data:
                continue
            channel, payload = data[0], data[1:]
            if channel == STDOUT_CHANNEL:
                if payload:
                    yield payload
            elif channel == STDERR_CHANNEL:
                self.stderr_tail += payload
                del self.stderr_tail[:-STDERR_KEPT]
            elif channel == STATUS_CHANNEL:
                status += payload
            # CLOSE_SIGNAL_CHANNEL and unknown channels carry nothing we read.
        self.status = bytes(status)
        self.closed = True
