"""Writing where the reader has gone: the write is dropped, the process is not harmed."""

from __future__ import annotations

import io
import os
import subprocess
import sys

from ssebench.gone_reader import dropping_stream, write_or_drop


def test_a_stream_whose_reader_is_gone_is_silenced() -> None:
    reading, writing = os.pipe()
    os.close(reading)
    with os.fdopen(writing, "w") as stream:
        assert write_or_drop(stream, "lost\n") is False
        # Its descriptor now goes to /dev/null: what follows, the close's flush too,
        # succeeds.
        assert os.path.samestat(os.fstat(stream.fileno()), os.stat(os.devnull))
        assert write_or_drop(stream, "also lost\n") is True


def test_a_dropping_stream_neither_fails_nor_hides_its_stream() -> None:
    reading, writing = os.pipe()
    os.close(reading)
    with os.fdopen(writing, "w", buffering=1) as stream:
        dropping = dropping_stream(stream)
        assert dropping.write("lost\n") == len("lost\n")
        assert os.path.samestat(os.fstat(stream.fileno()), os.stat(os.devnull))
        dropping.write("also lost")
        dropping.flush()
        assert dropping.fileno() == stream.fileno() and not dropping.isatty()
        dropping.close()
        assert stream.closed


def test_a_stream_that_takes_it_gets_it() -> None:
    stream = io.StringIO()
    assert write_or_drop(stream, "kept\n") is True
    assert stream.getvalue() == "kept\n"


def test_the_exit_status_survives_the_last_flush() -> None:
    """A process whose stdout's reader left: once a write was dropped, a later one (here
    a print, buffered until the interpreter's last flush) no longer fails, so the exit
    status stays the process's own."""
    script = (
        "import sys\n"
        "from ssebench.gone_reader import write_or_drop\n"
        "assert not write_or_drop(sys.stdout, 'verdict\\n')\n"
        "print('more')\n"
        "sys.exit(3)\n"
    )
    reading, writing = os.pipe()
    os.close(reading)
    try:
        process = subprocess.Popen([sys.executable, "-c", script], stdout=writing)
    finally:
        os.close(writing)
    assert process.wait(timeout=60) == 3
