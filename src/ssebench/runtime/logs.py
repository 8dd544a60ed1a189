"""Log files of a run, and the redaction that keeps the model key out of them."""

from __future__ import annotations

import os
import threading
import traceback
from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import BinaryIO

REDACTED = "[REDACTED]"

# One lock for the container's stdout, which the agent's output and the
# entrypoint's progress lines share.
_stdout_lock = threading.Lock()


def utc_now() -> str:
    # timezone.utc, not datetime.UTC: the runtime runs on the image's Python, 3.9 and up.
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Redactor:
    """Replaces secret values in text and bytes."""

    def __init__(self, secrets: Iterable[str]) -> None:
        self._texts = sorted({s for s in secrets if s}, key=len, reverse=True)
        self._bytes = [s.encode() for s in self._texts]

    def text(self, value: str) -> str:
        for secret in self._texts:
            value = value.replace(secret, REDACTED)
        return value

    def data(self, value: bytes) -> bytes:
        for secret in self._bytes:
            value = value.replace(secret, REDACTED.encode())
        return value

    def stream(self) -> StreamRedactor:
        return StreamRedactor(self._bytes)


class StreamRedactor:
    """Redacts a byte stream that arrives in arbitrary chunks.

    A secret may be split across two reads, so the end of a chunk that could be the
    start of a secret is held back until the next chunk (or flush) decides it.
    Nothing else is delayed, so partial lines such as progress bars still show live.
    """

    def __init__(self, secrets: list[bytes]) -> None:
        self._secrets = secrets
        self._held = b""

    def feed(self, chunk: bytes) -> bytes:
        data = self._held + chunk
        for secret in self._secrets:
            data = data.replace(secret, REDACTED.encode())
        keep = self._possible_secret_start(data)
        self._held = data[len(data) - keep :] if keep else b""
        return data[: len(data) - keep]

    def flush(self) -> bytes:
        held, self._held = self._held, b""
        return held

    def _possible_secret_start(self, data: bytes) -> int:
        longest = 0
        for secret in self._secrets:
            for size in range(min(len(secret) - 1, len(data)), longest, -1):
                if data.endswith(secret[:size]):
                    longest = size
                    break
        return longest


class LogFile:
    """An append-only log in the results directory, optionally echoed to stdout."""

    def __init__(
        self,
        path: Path,
        redactor: Redactor,
        *,
        echo: BinaryIO | None = None,
        echo_prefix: str = "ssebench: ",
    ) -> None:
        self.path = path
        self._redactor = redactor
        self._echo = echo
        self._echo_prefix = echo_prefix
        self._lock = threading.Lock()
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
        self._fd = os.open(path, flags, 0o644)

    def line(self, message: str) -> None:
        """One timestamped line; echoed as ``ssebench: message`` when echoing."""
        message = self._redactor.text(message.rstrip("\n"))
        self.write(f"{utc_now()} {message}\n".encode())
        if self._echo is not None:
            echo_line(self._echo, f"{self._echo_prefix}{message}\n".encode())

    def exception(self, context: str, error: BaseException) -> None:
        """The traceback goes to the file only; stdout gets the exception's type."""
        details = "".join(traceback.format_exception(type(error), error, error.__traceback__))
        text = self._redactor.text(f"{context}: {type(error).__name__}\n{details}")
        self.write(f"{utc_now()} {text}".encode())
        if self._echo is not None:
            echo_line(
                self._echo, f"{self._echo_prefix}{context}: {type(error).__name__}\n".encode()
            )

    def write(self, data: bytes) -> None:
        """Raw bytes, already redacted by the caller."""
        with self._lock:
            if self._fd < 0:
                return
            view = memoryview(data)
            while view:
                written = os.write(self._fd, view)
                view = view[written:]

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1


class RedactingStream:
    """A sink for a process's output: redacts it and hands it to each writer."""

    def __init__(self, redactor: Redactor, *writers: Callable[[bytes], None]) -> None:
        self._stream = redactor.stream()
        self._writers = writers

    def __call__(self, chunk: bytes) -> None:
        self._emit(self._stream.feed(chunk))

    def close(self) -> None:
        self._emit(self._stream.flush())

    def _emit(self, data: bytes) -> None:
        if data:
            for write in self._writers:
                write(data)


def echo_line(stream: BinaryIO, data: bytes) -> None:
    with _stdout_lock:
        try:
            stream.write(data)
            stream.flush()
        except (OSError, ValueError):
            # A closed or broken stdout must not stop a run: the files still have it.
            pass
