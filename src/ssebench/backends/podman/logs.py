"""A Podman run's output: read with `podman logs` (both of its streams), and followed
onto this process's output for a detached container (a sidecar run's environment)."""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Iterator

from ssebench.backends.podman.cli import BACKEND_NAME, PODMAN, podman_missing
from ssebench.extensions import BackendError, end_process

# The `podman logs --follow` processes of detached containers, by container name.
_followers: dict[str, subprocess.Popen[bytes]] = {}
_lock = threading.Lock()


def container_logs(name: str, follow: bool, *, missing_ok: bool, run_id: str) -> Iterator[str]:
    """The output of container name (stdout, then what podman logs wrote to its stderr,
    the container's stderr); nothing for a container gone when missing_ok."""
    argv = [PODMAN, "logs", *(["--follow"] if follow else []), name]
    try:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
        )
    except FileNotFoundError:
        raise podman_missing() from None
    assert process.stdout is not None and process.stderr is not None
    # podman logs writes the container's stderr to its own stderr: read both.
    lines: list[str] = []
    errors: list[str] = []
    reader = threading.Thread(target=lambda: errors.extend(process.stderr or ()), daemon=True)
    reader.start()
    try:
        for line in process.stdout:
            lines.append(line)
            yield line.rstrip("\n")
    finally:
        if process.poll() is None:
            process.terminate()
        status = process.wait()
        reader.join(5)
    if status != 0:
        if missing_ok and not lines:
            return
        raise BackendError(
            f"Cannot read the output of {name}: "
            f"{errors[-1].strip() if errors else f'status {status}'}",
            backend=BACKEND_NAME,
            run_id=run_id,
        )
    for line in errors:
        yield line.rstrip("\n")


def follow_output(name: str) -> None:
    """Copy a detached container's output onto this process's, as it is written."""
    try:
        follower = subprocess.Popen(
            [PODMAN, "logs", "--follow", name], stdin=subprocess.DEVNULL, start_new_session=True
        )
    except FileNotFoundError:
        raise podman_missing() from None
    with _lock:
        _followers[name] = follower


def end_follower(name: str) -> None:
    with _lock:
        follower = _followers.pop(name, None)
    if follower is not None:
        end_process(follower, finish_within=5)
