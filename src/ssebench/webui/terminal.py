"""A shell in a run's container, for the page's terminal: the backend's exec_argv in a
pseudo-terminal, bridged to a WebSocket.

The messages: the page sends JSON text frames, {"type": "input", "data"} and
{"type": "resize", "cols", "rows"}; the server sends the terminal's output as binary
frames and, when the shell ends, {"type": "exit", "code"} before it closes.

The command (docker exec -it, kubectl exec -it) is started in its own session, with
the terminal as its standard streams but not as its controlling terminal, so no
preexec code runs in a forked copy of this threaded server. It learns of a resize the
way a terminal tells it, by SIGWINCH, which is sent to it explicitly.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import pty
import select
import signal
import struct
import subprocess
import termios
from collections.abc import Sequence

from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState

from ssebench.webui.settings import TOKEN_VARIABLE

READ_SIZE = 64 * 1024
MAX_COLUMNS, MAX_ROWS = 500, 200
# Inside the container: bash when the image has it, else sh. A fixed string; nothing
# from the request reaches a shell.
SHELL_COMMAND = (
    "/bin/sh",
    "-c",
    "if command -v bash >/dev/null; then exec bash -l; fi; exec sh -l",
)


def clamp_size(cols: object, rows: object) -> tuple[int, int]:
    def number(value: object, default: int, top: int) -> int:
        try:
            return max(1, min(int(str(value)), top))
        except ValueError:
            return default

    return number(cols, 80, MAX_COLUMNS), number(rows, 24, MAX_ROWS)


class PseudoTerminal:
    """A command with a pseudo-terminal as stdin, stdout and stderr."""

    def __init__(self, argv: Sequence[str], cols: int, rows: int) -> None:
        self.master, slave = pty.openpty()
        self._set_size(cols, rows)
        environment = {key: value for key, value in os.environ.items() if key != TOKEN_VARIABLE}
        environment["TERM"] = "xterm-256color"
        try:
            self.process = subprocess.Popen(
                list(argv),
                stdin=slave,
                stdout=slave,
                stderr=slave,
                env=environment,
                start_new_session=True,
            )
        except OSError:
            os.close(self.master)
            raise
        finally:
            os.close(slave)
        os.set_blocking(self.master, False)

    def _set_size(self, cols: int, rows: int) -> None:
        fcntl.ioctl(self.master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    def resize(self, cols: int, rows: int) -> None:
        self._set_size(cols, rows)
        with contextlib.suppress(ProcessLookupError):
            self.process.send_signal(signal.SIGWINCH)

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                written = os.write(self.master, view)
            except BlockingIOError:
                # The terminal's input buffer is full for a moment (a large paste).
                select.select([], [self.master], [], 1.0)
                continue
            view = view[written:]

    def read(self) -> bytes | None:
        """What the command wrote; b"" once it has closed the terminal, None for nothing."""
        try:
            return os.read(self.master, READ_SIZE)
        except BlockingIOError:
            return None
        except OSError:
            return b""  # EIO: every copy of the other side is closed

    def close(self) -> int | None:
        """End the command and its session; return its exit status."""
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGHUP)
            try:
                self.process.wait(timeout=3)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        with contextlib.suppress(OSError):
            os.close(self.master)
        return self.process.returncode


async def bridge(websocket: WebSocket, terminal: PseudoTerminal) -> None:
    """Carry bytes both ways until the shell ends or the page goes away."""
    loop = asyncio.get_running_loop()
    output: asyncio.Queue[bytes] = asyncio.Queue()

    def readable() -> None:
        data = terminal.read()
        if data is None:
            return
        output.put_nowait(data)
        if not data:
            loop.remove_reader(terminal.master)

    loop.add_reader(terminal.master, readable)

    async def to_page() -> None:
        while data := await output.get():
            await websocket.send_bytes(data)

    async def from_page() -> None:
        while True:
            try:
                message = json.loads(await websocket.receive_text())
            except ValueError:
                continue
            if not isinstance(message, dict):
                continue
            if message.get("type") == "input" and isinstance(message.get("data"), str):
                terminal.write(message["data"].encode())
            elif message.get("type") == "resize":
                terminal.resize(*clamp_size(message.get("cols"), message.get("rows")))

    sending = asyncio.create_task(to_page())
    receiving = asyncio.create_task(from_page())
    try:
        await asyncio.wait({sending, receiving}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (sending, receiving):
            task.cancel()
        with contextlib.suppress(Exception):
            loop.remove_reader(terminal.master)
        code = await asyncio.to_thread(terminal.close)
        if websocket.client_state == WebSocketState.CONNECTED:
            with contextlib.suppress(WebSocketDisconnect, RuntimeError):
                await websocket.send_text(json.dumps({"type": "exit", "code": code}))
                await websocket.close()
