"""Writing where the reader has gone: the write is dropped, the process is not harmed."""

from __future__ import annotations

import errno
import io
import itertools
import os
import subprocess
import sys
import types
from collections.abc import Iterator

import pytest

from ssebench.cli import runs as runs_cli
from ssebench.cli.main import main
from ssebench.host.output import dropping_stream, write_or_drop


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


class FailingStream(io.StringIO):
    def __init__(self, number: int) -> None:
        super().__init__()
        self.number = number

    def write(self, text: str) -> int:
        raise OSError(self.number, os.strerror(self.number))


def test_a_dropping_stream_drops_only_for_a_reader_gone() -> None:
    """A terminal gone (EIO) is a reader gone; a full disk under `> file` is raised, so
    that a file cut short does not pass for a whole one."""
    terminal_gone = dropping_stream(FailingStream(errno.EIO))
    assert terminal_gone.write("lost\n") == len("lost\n")
    disk_full = dropping_stream(FailingStream(errno.ENOSPC))
    with pytest.raises(OSError, match="No space left"):
        disk_full.write("cut short\n")


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
        "from ssebench.host.output import write_or_drop\n"
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


def test_runs_logs_follow_ends_once_its_reader_is_gone(monkeypatch: pytest.MonkeyPatch) -> None:
    """`ssebench runs logs -f ID | head`: its only work is to show, so it ends at its
    first dropped line instead of following the run to its end."""
    shown: list[int] = []

    def endless() -> Iterator[str]:
        for number in itertools.count():
            if number == 100:
                raise AssertionError("runs logs -f went on after its reader had gone")
            shown.append(number)
            yield f"line {number}"

    class Following:
        def logs(self, handle: object, follow: bool = False) -> Iterator[str]:
            assert follow
            return endless()

    found = (Following(), types.SimpleNamespace(handle=None))
    monkeypatch.setattr(runs_cli, "_with_run", lambda arguments: found)
    reading, writing = os.pipe()
    os.close(reading)
    with os.fdopen(writing, "w", buffering=1) as terminal:  # line-buffered, as a terminal
        monkeypatch.setattr(sys, "stdout", terminal)
        assert main(["runs", "logs", "--follow", "some-run"]) == 0
    assert shown == [0]
