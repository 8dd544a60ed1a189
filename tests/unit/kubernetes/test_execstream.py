"""Reading an exec's channels frame by frame, against a stand-in websocket."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import pytest
from websocket import WebSocketTimeoutException

from ssebench.backends.kubernetes import execstream
from ssebench.backends.kubernetes.execstream import (
    OPCODE_BINARY,
    OPCODE_CLOSE,
    ExecIdleError,
    ExecOutput,
)

OPCODE_PING = 0x9


@dataclass
class Frame:
    data: bytes


class StandInSocket:
    """Hands out scripted (opcode, frame) pairs; an exception in the script is raised."""

    def __init__(self, script: Iterable[tuple[int, bytes] | Exception]) -> None:
        self.script = list(script)
        self.timeout: float | None = None
        self.reads = 0

    def settimeout(self, timeout: float | None) -> None:
        self.timeout = timeout

    def recv_data_frame(self, control_frame: bool = False) -> tuple[int, Frame]:
        assert control_frame, "pings and closes must come back to the reader"
        self.reads += 1
        step = self.script.pop(0)
        if isinstance(step, Exception):
            raise step
        opcode, data = step
        return opcode, Frame(data)


def channel(number: int, payload: bytes) -> tuple[int, bytes]:
    return OPCODE_BINARY, bytes([number]) + payload


def test_stdout_is_handed_on_frame_by_frame_and_the_rest_is_kept_aside() -> None:
    status = b'{"status": "Success"}'
    sock = StandInSocket(
        [
            channel(1, b"first "),
            channel(2, b"a warning\n"),
            (OPCODE_PING, b""),
            channel(1, b""),  # an empty stdout frame is no chunk
            channel(1, b"second"),
            channel(execstream.CLOSE_SIGNAL_CHANNEL, b"\x01"),  # v5: stdout closed
            channel(3, status[:10]),
            channel(3, status[10:]),
            (OPCODE_CLOSE, b""),
        ]
    )
    output = ExecOutput()
    chunks = output.stdout(sock, idle_limit=7)
    assert next(chunks) == b"first "
    assert sock.reads == 1, "the first chunk must come before the rest is read"
    assert list(chunks) == [b"second"]
    assert sock.timeout == 7
    assert bytes(output.stderr_tail) == b"a warning\n"
    assert output.status == status and output.closed


def test_only_the_end_of_stderr_is_kept() -> None:
    noise = [channel(2, bytes([65 + n % 26]) * 1000) for n in range(50)]
    output = ExecOutput()
    assert list(output.stdout(StandInSocket([*noise, (OPCODE_CLOSE, b"")]), 1)) == []
    assert len(output.stderr_tail) == execstream.STDERR_KEPT
    assert output.stderr_tail.endswith(bytes([65 + 49 % 26]) * 1000)


@pytest.mark.parametrize("timeout", [TimeoutError("timed out"), WebSocketTimeoutException("x")])
def test_silence_beyond_the_idle_limit_is_an_error(timeout: Exception) -> None:
    output = ExecOutput()
    chunks = output.stdout(StandInSocket([channel(1, b"partial"), timeout]), idle_limit=3)
    assert next(chunks) == b"partial"
    with pytest.raises(ExecIdleError, match="no output for 3 s"):
        next(chunks)
    assert not output.closed and output.status == b""


def test_many_small_frames_are_read_once_each() -> None:
    # The client's own update() re-copies its channel buffer for every frame; here each
    # frame's bytes are handed on once, so a 20,000-frame stream is 20,000 chunks.
    frames = [channel(1, b"x" * 100) for _ in range(20_000)]
    output = ExecOutput()
    total = sum(
        len(chunk) for chunk in output.stdout(StandInSocket([*frames, (OPCODE_CLOSE, b"")]), 1)
    )
    assert total == 2_000_000 and output.closed
