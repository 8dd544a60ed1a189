"""Writing where the reader may be gone (`ssebench run ... | head`, a closed terminal):
what is written then is lost, the work under way and the exit status are not.

Once a write or flush fails, the stream's descriptor is pointed at /dev/null: later
writes, from any part of the process and from the containers' clients it starts, and
the interpreter's last flush at exit then succeed and go nowhere. A failing flush at
exit would otherwise replace the command's exit status with 120, and a raised
BrokenPipeError abandons whatever was under way: a prune half done, a run unrecorded.

main puts sys.stdout and sys.stderr in a dropping_stream for the whole command, so
that no command has to think of it; write_or_drop is for code that may run without
main (the runner and the backends, called as a library)."""

from __future__ import annotations

import errno
import os

# typing.TYPE_CHECKING without importing typing: main imports this module, and typing's
# import is 2 ms of `ssebench runs list` (docs/performance.md).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TextIO


def write_or_drop(stream: TextIO, text: str) -> bool:
    """Write text to stream and flush it; False, and the stream silenced, when it cannot
    take it (its reader gone, its disk full: the run goes on either way), or when it is
    a DroppingStream that has dropped a write: a command whose only work is to show
    (`runs logs --follow`) stops then."""
    try:
        stream.write(text)
        stream.flush()
    except OSError:
        silence(stream)
        return False
    return not getattr(stream, "dropped", False)


def silence(stream: TextIO) -> None:
    """Point stream's descriptor at /dev/null. A stream without one (a StringIO) is left
    as it is."""
    try:
        descriptor = stream.fileno()
    except (OSError, ValueError):
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, descriptor)
    finally:
        os.close(devnull)


# How a write says that its reader has gone: a pipe's (EPIPE), a terminal's (EIO).
READER_GONE = (errno.EPIPE, errno.EIO)


class DroppingStream:
    """A text stream whose writes and flushes do not fail for a reader that has gone:
    the stream is silenced then, what follows goes nowhere, and dropped is True. Other
    failures (a full disk under `> file`) are still raised: the command says them, as a
    file cut short must not pass for a whole one. Everything else (fileno, isatty,
    encoding) is the stream's own."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.dropped = False

    def write(self, text: str) -> int:
        try:
            return self.stream.write(text)
        except OSError as error:
            self._drop(error)
            return len(text)

    def flush(self) -> None:
        try:
            self.stream.flush()
        except OSError as error:
            self._drop(error)

    def _drop(self, error: OSError) -> None:
        if error.errno not in READER_GONE:
            raise error
        silence(self.stream)
        self.dropped = True

    def close(self) -> None:
        # A close whose last flush fails closes the file all the same.
        try:
            self.stream.close()
        except OSError as error:
            if error.errno not in READER_GONE:
                raise

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def dropping_stream(stream: TextIO) -> TextIO:
    """stream, its writes and flushes made unable to fail (DroppingStream)."""
    # A DroppingStream is a TextIO by its __getattr__, which type checkers do not follow.
    return DroppingStream(stream)  # type: ignore[return-value]
