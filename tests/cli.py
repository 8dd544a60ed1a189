"""Running the real `ssebench` command from tests, as a user would."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

SSEBENCH = [sys.executable, "-m", "ssebench.cli.main"]
# What `ssebench run` says on its first SIGTERM (runner.stop_on_signals).
STOPPING_LINE = "stopping the run; a second signal ends ssebench"


def ssebench(
    *arguments: str,
    env: dict[str, str] | None = None,
    timeout: float = 300,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ssebench to the end; stdout and stderr are captured apart."""
    return subprocess.run(
        [*SSEBENCH, *arguments],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env={**os.environ, **(env or {})},
    )


def start_ssebench(
    *arguments: str,
    env: dict[str, str] | None = None,
    output: int | IO[Any] = subprocess.PIPE,
) -> subprocess.Popen[str]:
    """Start ssebench in the background; stdout and stderr come merged on stdout, or
    go to output (subprocess.DEVNULL, or an open file) when nobody reads them."""
    return subprocess.Popen(
        [*SSEBENCH, *arguments],
        stdout=output,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, **(env or {})},
    )


def run_arguments(
    dataset: Path, task: str, agent: str, run_id: str, results: Path, *extra: str
) -> list[str]:
    """The arguments of `ssebench run` for one task and agent."""
    return [
        "run",
        "--local",
        str(dataset),
        "--task",
        task,
        "--agent",
        agent,
        "--run-id",
        run_id,
        "--results",
        str(results),
        *extra,
    ]


def last_line_verdict(stdout: str) -> tuple[str, Path]:
    """The grade and run directory that `ssebench run` prints last."""
    status, run_dir = stdout.strip().splitlines()[-1].split("\t")
    return status, Path(run_dir)


def sleeper_started(run_id: str, *options: str) -> bool:
    """Whether the sleeper agent of a kept run has written its first line."""
    done = ssebench("runs", "logs", run_id, *options)
    return done.returncode == 0 and "sleeper" in done.stdout.lower()


def signal_twice(process: subprocess.Popen[str]) -> tuple[str, float]:
    """SIGTERM to a started `ssebench run`, and a second one as soon as it says it is
    stopping the run: what it said (stdout and stderr merged) and the seconds from the
    second signal to its end.

    The second signal follows the runner's word, not a pause: a stopped sleeper is
    graded 0.4 s after the first signal here, and a second signal that came once its run
    was read out and removed would test nothing (a pause of half a second was that
    close)."""
    lines: list[str] = []
    stopping = threading.Event()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            if STOPPING_LINE in line:
                stopping.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    process.send_signal(signal.SIGTERM)
    if not stopping.wait(60):
        process.kill()
        process.wait()
        reader.join(30)
        raise AssertionError(f"ssebench did not say it stops the run:\n{''.join(lines)[-3000:]}")
    signalled = time.monotonic()
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=120)
    ended_after = time.monotonic() - signalled
    reader.join(30)
    return "".join(lines), ended_after
