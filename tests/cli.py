"""Running the real `ssebench` command from tests, as a user would."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

SSEBENCH = [sys.executable, "-m", "ssebench.cli.main"]
# What the run's container says once the stop of a first SIGTERM reached it
# (runtime/supervision.py); `ssebench run` shows the container's output.
CONTAINER_STOPPING_LINE = "stop requested: stopping the agent"
# The sleeper agent's first line. The output of `ssebench run` has it once the run's start
# returned (on Kubernetes the container's output is followed from then on), while
# `runs logs` may show it when start has yet to see the container running.
SLEEPER_LINE = "sleeper: sleeping"


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


def ssebench_with_reader_gone(
    *arguments: str, env: dict[str, str] | None = None, timeout: float = 300
) -> int:
    """Run ssebench to the end with stdout and stderr on a pipe whose reader is gone, as
    `ssebench ... | head` once head has quit; its exit status."""
    reading, writing = os.pipe()
    os.close(reading)
    try:
        process = subprocess.Popen(
            [*SSEBENCH, *arguments],
            stdin=subprocess.DEVNULL,
            stdout=writing,
            stderr=writing,
            env={**os.environ, **(env or {})},
        )
    finally:
        os.close(writing)
    try:
        return process.wait(timeout=timeout)
    finally:
        process.kill()  # one that hangs is not left behind
        process.wait()


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


def logs_say(run_id: str, text: str, *options: str) -> bool:
    """Whether the container log of a live run (`runs logs`) holds this text."""
    done = ssebench("runs", "logs", run_id, *options)
    return done.returncode == 0 and text in done.stdout.lower()


def sleeper_started(run_id: str, *options: str) -> bool:
    """Whether the sleeper agent of a kept run has written its first line."""
    return logs_say(run_id, "sleeper", *options)


def grading_tests(run_id: str, *options: str) -> bool:
    """Whether a live run's grading has passed its build step and gone on to the tests
    (the entrypoint logs each step's end as `grading: NAME: ok (...)`)."""
    return logs_say(run_id, "grading: build: ok", *options)


def prune_records_the_killed_run(
    run_dir: Path, results: Path, *options: str, env: dict[str, str] | None = None
) -> None:
    """One `runs prune` removes the run of a SIGKILLed runner and records it, and `runs
    results` then lists it as an error with the killed reason."""
    from ssebench.results.unrecorded import KILLED_REASON

    run_id = run_dir.name
    assert not (run_dir / "summary.json").exists()
    pruned = ssebench("runs", "prune", "--json", "--results", str(results), *options, env=env)
    assert pruned.returncode == 0, pruned.stderr
    report = json.loads(pruned.stdout)
    assert run_id in [run["run_id"] for run in report["removed"]]
    assert report["recorded"] == [str(run_dir)]
    listed = ssebench("runs", "results", "--results", str(results), "--json", env=env)
    (run,) = [run for run in json.loads(listed.stdout)["runs"] if run["run_id"] == run_id]
    assert (run["status"], run["error_msg"]) == ("error", KILLED_REASON)


class Output:
    """What a started `ssebench` says (stdout and stderr merged, as start_ssebench pipes
    them), read as it comes by a thread of its own, so that a test can wait for a line."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self._lines: list[str] = []
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, args=(process,), daemon=True)
        self._reader.start()

    def _read(self, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            with self._changed:
                self._lines.append(line)
                self._changed.notify_all()

    def wait_for(self, text: str, seconds: float) -> bool:
        """Whether a line with text came within seconds."""
        with self._changed:
            return self._changed.wait_for(
                lambda: any(text in line for line in self._lines), seconds
            )

    def text(self, end_within: float = 0.0) -> str:
        """All said so far, once the output ended or end_within seconds passed."""
        self._reader.join(end_within)
        with self._changed:
            return "".join(self._lines)


def signal_twice(process: subprocess.Popen[str], output: Output) -> tuple[str, float]:
    """SIGTERM to a started `ssebench run`, and a second one as soon as the container
    says the first reached it: what ssebench said (stdout and stderr merged) and the
    seconds from the second signal to its end.

    The second signal follows that word, not a pause. A pause is either too short (the
    second signal can end ssebench before its stop reached the container, which then
    runs on until prune) or too long: a stopped sleeper is graded 0.4 s after the first
    signal here, and once its run is read out and removed there is nothing left to
    test (a pause of half a second failed a CI run that way)."""
    process.send_signal(signal.SIGTERM)
    if not output.wait_for(CONTAINER_STOPPING_LINE, 60):
        process.kill()
        process.wait()
        raise AssertionError(f"the run was not stopped:\n{output.text(30)[-3000:]}")
    signalled = time.monotonic()
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=120)
    ended_after = time.monotonic() - signalled
    return output.text(30), ended_after
