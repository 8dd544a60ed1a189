from __future__ import annotations

import os
import time
from pathlib import Path

from ssebench.runtime.accounts import Account
from ssebench.runtime.processes import capture, exit_status, run, sweep_user

ENV = {"PATH": os.environ["PATH"]}


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_exit_status_is_shell_style() -> None:
    assert exit_status(0) == 0
    assert exit_status(3) == 3
    assert exit_status(-15) == 143
    assert exit_status(-9) == 137


def test_run_returns_exit_code_and_output(tmp_path: Path) -> None:
    done = run(
        ["sh", "-c", "echo out; echo err >&2; exit 3"],
        account=None,
        cwd=tmp_path,
        env=ENV,
        timeout=30,
    )
    assert done.exit_code == 3
    assert not done.timed_out
    assert b"out\n" in done.output and b"err\n" in done.output


def test_run_feeds_stdin_and_streams_to_the_sink(tmp_path: Path) -> None:
    chunks: list[bytes] = []
    done = run(
        ["cat"], account=None, cwd=tmp_path, env=ENV, timeout=30, stdin=b"hello", sink=chunks.append
    )
    assert done.exit_code == 0
    assert b"".join(chunks) == b"hello"


def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild"
    started = time.monotonic()
    done = run(
        ["sh", "-c", f"sleep 300 & echo $! > {pid_file}; wait"],
        account=None,
        cwd=tmp_path,
        env=ENV,
        timeout=1,
    )
    assert done.timed_out
    assert done.exit_code == 124
    assert time.monotonic() - started < 20
    grandchild = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(grandchild)


def test_background_leftovers_are_killed_when_the_command_ends(tmp_path: Path) -> None:
    pid_file = tmp_path / "leftover"
    done = run(
        ["sh", "-c", f"sleep 300 >/dev/null & echo $! > {pid_file}"],
        account=None,
        cwd=tmp_path,
        env=ENV,
        timeout=30,
    )
    assert done.exit_code == 0
    leftover = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while alive(leftover) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(leftover)


def test_capture_keeps_stdout_and_stderr_apart(tmp_path: Path) -> None:
    code, out, err = capture(["sh", "-c", "echo a; echo b >&2"], cwd=tmp_path, env=ENV, timeout=30)
    assert (code, out, err) == (0, b"a\n", b"b\n")
    code, _, _ = capture(["sleep", "30"], cwd=tmp_path, env=ENV, timeout=0.5)
    assert code == 124


def test_sweep_never_touches_the_current_user() -> None:
    assert sweep_user(Account.current()) == 0
