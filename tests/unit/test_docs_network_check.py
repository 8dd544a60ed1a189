"""The policy check of docs/kubernetes.md ("Checking that the policy is enforced"),
taken from the page as written and run here with this machine's python3 against
listeners on loopback: a connection that is dropped, refused, or answered."""

from __future__ import annotations

import re
import shlex
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from tests.conftest import ROOT

PAGE = ROOT / "docs" / "kubernetes.md"


def probe_argv() -> list[str]:
    """The words after `--` of the page's `runs exec` line, without its address."""
    (line,) = [row for row in PAGE.read_text().splitlines() if 'runs exec "$id"' in row]
    words = shlex.split(line)
    probe = words[words.index("--") + 1 :]
    assert probe[:2] == ["python3", "-c"] and probe[3:] == ["1.1.1.1", "443"], probe
    return [sys.executable, "-c", probe[2]]


def run_probe(port: int) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    done = subprocess.run(
        [*probe_argv(), "127.0.0.1", str(port)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    return done, time.monotonic() - started


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(0)
    yield server
    server.close()


def test_an_answered_connection_says_reachable_and_fails(listener: socket.socket) -> None:
    done, _ = run_probe(listener.getsockname()[1])
    assert (done.returncode, done.stdout) == (1, "REACHABLE: the policy is not enforced\n")


def test_a_dropped_connection_says_blocked_and_ends_by_itself(listener: socket.socket) -> None:
    # One connection fills the backlog of 0; the kernel then drops the next SYNs, as a
    # policy does.
    port = listener.getsockname()[1]
    held = socket.create_connection(("127.0.0.1", port))
    try:
        done, seconds = run_probe(port)
    finally:
        held.close()
    assert (done.returncode, done.stdout) == (0, "blocked (errno 11)\n")
    assert 4 < seconds < 15


def test_a_refused_connection_says_blocked(listener: socket.socket) -> None:
    port = listener.getsockname()[1]
    listener.close()
    done, _ = run_probe(port)
    assert done.returncode == 0 and re.fullmatch(r"blocked \(errno 111\)\n", done.stdout)
