"""Writing where the reader may be gone (`ssebench run ... | head`, a closed terminal):
what is written then is lost, the run and the exit status are not.

Once a write or flush fails, the stream's descriptor is pointed at /dev/null: later
writes, from any part of the process, and the interpreter's last flush at exit then
succeed and go nowhere. A failing flush at exit would otherwise replace the command's
exit status with 120, and a raised BrokenPipeError abandons whatever was under way."""

from __future__ import annotations

import os
from typing import TextIO


def write_or_drop(stream: TextIO, text: str) -> bool:
    """Write text to stream and flush it; False, and the stream silenced, when it cannot
    take it (its reader gone, its disk full: the run goes on either way)."""
    try:
        stream.write(text)
        stream.flush()
    except OSError:
        silence(stream)
        return False
    return True


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
