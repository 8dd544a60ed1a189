"""Starting other users' processes, timing them out, and clearing up after them.

Every child of the runtime is started here, in its own session (so its whole
process group can be killed) and registered, so that when the entrypoint is PID 1
it can reap orphaned zombies without stealing the exit status of its own children.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from .accounts import Account

KILL_GRACE_SECONDS = 3.0
TAIL_BYTES = 64 * 1024

_registry_lock = threading.Lock()
_children: set[int] = set()


def exit_status(returncode: int) -> int:
    """A shell-style status: 128 + N for a process killed by signal N."""
    return 128 - returncode if returncode < 0 else returncode


@dataclass(frozen=True)
class Completed:
    exit_code: int
    timed_out: bool
    seconds: float
    output: bytes  # the last TAIL_BYTES of stdout and stderr together


class Child:
    """A process in a new session, its output read by a thread as it is written."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        account: Account | None,
        cwd: Path,
        env: Mapping[str, str],
        stdin: bytes | BinaryIO | None = None,
        sink: Callable[[bytes], None] | None = None,
        tail_bytes: int = TAIL_BYTES,
    ) -> None:
        switch = account is not None and not account.is_current
        stdin_arg: int | BinaryIO = subprocess.DEVNULL
        if isinstance(stdin, bytes):
            stdin_arg = subprocess.PIPE
        elif stdin is not None:
            stdin_arg = stdin
        self.started = time.monotonic()
        with _registry_lock:
            self._popen = subprocess.Popen(
                list(argv),
                cwd=cwd,
                env=dict(env),
                stdin=stdin_arg,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                close_fds=True,
                user=account.uid if switch and account else None,
                group=account.gid if switch and account else None,
                extra_groups=[] if switch else None,
            )
            _children.add(self._popen.pid)
        self.pid = self._popen.pid
        self._sink = sink
        self._tail = bytearray()
        self._tail_bytes = tail_bytes
        self._reader = threading.Thread(target=self._read, name=f"output-{self.pid}", daemon=True)
        self._reader.start()
        if isinstance(stdin, bytes):
            threading.Thread(
                target=self._feed, args=(stdin,), name=f"input-{self.pid}", daemon=True
            ).start()

    def _feed(self, data: bytes) -> None:
        pipe = self._popen.stdin
        assert pipe is not None
        try:
            pipe.write(data)
        except (BrokenPipeError, OSError):
            pass  # the child stopped reading; its exit status says why
        finally:
            with contextlib.suppress(OSError):
                pipe.close()

    def _read(self) -> None:
        pipe = self._popen.stdout
        assert pipe is not None
        fd = pipe.fileno()
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            self._tail += chunk
            if len(self._tail) > self._tail_bytes:
                del self._tail[: len(self._tail) - self._tail_bytes]
            if self._sink is not None:
                self._sink(chunk)

    def poll(self) -> int | None:
        code = self._popen.poll()
        if code is not None:
            _forget(self.pid)
        return code

    def wait(self, timeout: float | None) -> int | None:
        try:
            code = self._popen.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        _forget(self.pid)
        return code

    def signal_group(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signum)

    def terminate(self, grace: float = KILL_GRACE_SECONDS) -> int:
        """SIGTERM to the whole group, SIGKILL after ``grace`` seconds; the exit code."""
        if self.poll() is None:
            self.signal_group(signal.SIGTERM)
            if self.wait(grace) is None:
                self.signal_group(signal.SIGKILL)
        code = self.wait(None)
        assert code is not None
        # Whatever of the group outlived its leader goes too.
        self.signal_group(signal.SIGKILL)
        return code

    def output(self, join_timeout: float = 5.0) -> bytes:
        """The output's tail once the reader saw the end of it (or gave up waiting).

        A process that escaped the group can keep the pipe open; then the reader
        is abandoned (it is a daemon thread) rather than blocking the run.
        """
        self._reader.join(join_timeout)
        return bytes(self._tail)

    def run_to_end(self, timeout: float) -> Completed:
        try:
            code = self.wait(timeout)
        except BaseException:
            # Interrupted (the entrypoint's stop during grading): nothing may survive.
            self.signal_group(signal.SIGKILL)
            self.wait(None)
            raise
        timed_out = code is None
        code = self.terminate()
        seconds = time.monotonic() - self.started
        status = 124 if timed_out else exit_status(code)
        return Completed(status, timed_out, seconds, self.output())


def run(
    argv: Sequence[str],
    *,
    account: Account | None,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float,
    stdin: bytes | BinaryIO | None = None,
    sink: Callable[[bytes], None] | None = None,
) -> Completed:
    """Run a command to its end or its timeout, killing its whole process group either way."""
    return Child(argv, account=account, cwd=cwd, env=env, stdin=stdin, sink=sink).run_to_end(
        timeout
    )


def capture(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float,
    stdin: bytes | None = None,
) -> tuple[int, bytes, bytes]:
    """Run one of the runtime's own commands (as the current user) and keep its output.

    Returns (exit status, stdout, stderr); the exit status is 124 on timeout.
    """
    with _registry_lock:
        popen = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            close_fds=True,
        )
        _children.add(popen.pid)
    try:
        stdout, stderr = popen.communicate(stdin, timeout)
        code = exit_status(popen.returncode)
    except subprocess.TimeoutExpired:
        os.killpg(popen.pid, signal.SIGKILL)
        stdout, stderr = popen.communicate()
        code = 124
    finally:
        if popen.poll() is None:
            # Interrupted (a stop signal raised through here): leave nothing running.
            os.killpg(popen.pid, signal.SIGKILL)
            popen.wait()
        _forget(popen.pid)
    return code, stdout, stderr


def _forget(pid: int) -> None:
    with _registry_lock:
        _children.discard(pid)


def _process_ids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def _state_and_parent(pid: int) -> tuple[str, int]:
    with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
        # The command name in parentheses may contain anything, so split after it.
        fields = stat.read().rsplit(")", 1)[1].split()
    return fields[0], int(fields[1])


def _owner_ids(pid: int) -> tuple[int, ...]:
    with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as status:
        for line in status:
            if line.startswith("Uid:"):
                return tuple(int(field) for field in line.split()[1:])
    return ()


def sweep_user(account: Account, rounds: int = 20) -> int:
    """SIGKILL every process of ``account``: what escaped its process group.

    Never for the current user (the runtime would kill itself, or in tests the test
    runner). Repeated because a process may fork while the sweep is running.
    Returns how many processes were signalled.
    """
    if account.is_current:
        return 0
    signalled = 0
    for _ in range(rounds):
        found = 0
        for pid in _process_ids():
            try:
                # Zombies are dead already; signalling them would never end the sweep.
                if account.uid in _owner_ids(pid)[:2] and _state_and_parent(pid)[0] != "Z":
                    os.kill(pid, signal.SIGKILL)
                    found += 1
            except (OSError, ValueError, IndexError):
                continue  # gone already, or not readable
        signalled += found
        reap_orphans()
        if not found:
            break
        time.sleep(0.05)
    return signalled


def reap_orphans() -> None:
    """As PID 1, collect zombies that were reparented to us from other process trees.

    Only pids that are not our own registered children are waited for, so the
    subprocess module still gets the exit status of every process we started.
    """
    if os.getpid() != 1:
        return
    with _registry_lock:
        for pid in _process_ids():
            if pid in _children:
                continue
            try:
                state, parent = _state_and_parent(pid)
            except (OSError, ValueError, IndexError):
                continue
            if state == "Z" and parent == 1:
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, os.WNOHANG)
