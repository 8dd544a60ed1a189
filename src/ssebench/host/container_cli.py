"""Helpers for a backend on a container CLI that speaks docker's commands (docker,
podman): ContainerCli (run a command with its output captured, and the CLI's own
failures as one clear error), its failure in one line, an exec command line, waiting
for a foreground `run` to create its container, ending a process.

Public through ssebench.extensions, which offers them to backends (an outside backend
imports them from there); here because the host's own CLI plumbing (host/docker_cli.py)
builds on them and must not import the public interface.
"""

from __future__ import annotations

import contextlib
import re
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ssebench.errors import BackendError

# What an environment variable's name may be: exec passes variables by name only.
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def cli_exec_argv(
    program: str,
    container: str,
    command: Sequence[str],
    *,
    user: str | None = None,
    workdir: str | None = None,
    tty: bool = False,
    stdin: bool = False,
    env_names: Sequence[str] = (),
    backend: str,
    run_id: str,
) -> list[str]:
    """`<program> exec ... <container> <command>` for a container CLI that speaks
    docker's exec (docker, podman): a helper for Backend.exec_argv.

    Each of env_names is passed as `--env NAME`, which makes the CLI copy the caller's
    value: a value is never on the command line. Raises BackendError for a name that is
    not a variable's name."""
    argv = [program, "exec"]
    if stdin:
        argv.append("--interactive")
    if tty:
        argv.append("--tty")
    if user:
        argv += ["--user", user]
    if workdir:
        argv += ["--workdir", workdir]
    for name in env_names:
        if not _ENV_NAME.match(name):
            raise BackendError(
                f"{name!r} is not an environment variable name", backend=backend, run_id=run_id
            )
        argv += ["--env", name]
    # The CLI takes everything after the container's name as the command.
    return [*argv, container, *command]


def run_cli(
    argv: Sequence[str],
    *,
    missing: Callable[[], Exception],
    timeout: float | None = None,
    env: Mapping[str, str] | None = None,
    pass_fds: Sequence[int] = (),
) -> subprocess.CompletedProcess[str]:
    """Run a command of a container CLI (docker, podman) with its output captured as
    text and no stdin, and return it whatever its status: a helper for a backend on a
    CLI. env: the whole environment of the command (default this process's); pass_fds:
    descriptors it inherits. Raises missing() when argv[0] is not installed, and
    subprocess.TimeoutExpired after timeout."""
    try:
        return subprocess.run(
            list(argv),
            capture_output=True,
            text=True,
            errors="replace",
            stdin=subprocess.DEVNULL,
            timeout=timeout,
            check=False,
            env=None if env is None else dict(env),
            pass_fds=tuple(pass_fds),
        )
    except FileNotFoundError:
        raise missing() from None


def wait_until_created(
    process: subprocess.Popen[bytes],
    exists: Callable[[], bool],
    *,
    name: str,
    program: str,
    failed_statuses: Sequence[int],
    timeout: float,
    backend: str,
    run_id: str,
) -> None:
    """Return once the container name of a foreground `<program> run` process exists
    (exists() says so), or once that process has ended with a status not in
    failed_statuses (it ran, and --rm removed it: wait reports its status). A helper for
    a backend on a CLI whose run process stays in the foreground.

    Raises BackendError when the process ended with one of failed_statuses (the CLI
    could not create or start the container: its message is on stderr already), or
    when the container does not exist after timeout seconds.
    """
    deadline = time.monotonic() + timeout
    delay = 0.05
    while True:
        if exists():
            return
        status = process.poll()
        if status is not None:
            if status >= 0 and status not in failed_statuses:
                return
            raise BackendError(
                f"{program} run could not start the container {name} (status {status}); "
                f"{program}'s message is above",
                backend=backend,
                run_id=run_id,
            )
        if time.monotonic() > deadline:
            raise BackendError(
                f"The container {name} was not created in {timeout:.0f} s",
                backend=backend,
                run_id=run_id,
            )
        time.sleep(delay)
        delay = min(delay * 2, 0.5)


def end_process(
    process: subprocess.Popen[Any], *, finish_within: float = 0.0, grace: float = 10.0
) -> None:
    """End a process this one started (a CLI's foreground `run`, its `logs --follow`)
    and reap it: give it finish_within seconds to end by itself, then terminate it,
    and kill it once grace seconds more have passed. A helper for a backend on a CLI."""
    if finish_within > 0:
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(finish_within)
    if process.poll() is None:
        process.terminate()
    try:
        process.wait(grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def seconds_left(timeout: float | None, started: float, *, at_least: float = 0.0) -> float | None:
    """What is left of timeout seconds (None: no limit, also returned) counted from
    started, a time.monotonic(), and at least at_least. A helper for a wait made of
    steps under one timeout: the foreground run process, then the engine's own wait."""
    if timeout is None:
        return None
    return max(timeout - (time.monotonic() - started), at_least)


def cli_failure(completed: subprocess.CompletedProcess[str]) -> str:
    """Why a command of run_cli failed, in one line: the last line of its stderr
    without the CLI's "Error: " prefix, or its exit status when it wrote nothing."""
    lines = [line.strip() for line in completed.stderr.splitlines() if line.strip()]
    if not lines:
        program = Path(str(completed.args[0])).name if completed.args else "the command"
        return f"{program} exited with status {completed.returncode}"
    return lines[-1].removeprefix("Error: ").removeprefix("Error response from daemon: ")


@dataclass(frozen=True)
class ContainerCli:
    """A container CLI (docker, podman) as a backend runs it: `run(args)` is run_cli of
    `program args`, raising missing() when the program is not installed and, for a
    failed command, whatever check_failure raises for its stderr (the CLI's own trouble:
    a daemon that cannot be reached, rootless Podman that cannot work); every other
    failure is the caller's to read (cli_failure gives its one line)."""

    program: str
    missing: Callable[[], Exception]
    check_failure: Callable[[str], None]

    def run(
        self,
        args: Sequence[str],
        *,
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
        pass_fds: Sequence[int] = (),
    ) -> subprocess.CompletedProcess[str]:
        completed = run_cli(
            [self.program, *args],
            missing=self.missing,
            timeout=timeout,
            env=env,
            pass_fds=pass_fds,
        )
        if completed.returncode != 0:
            self.check_failure(completed.stderr)
        return completed
