"""A run's output: `docker logs` of its container, or of both containers of a
sidecar pair."""

from __future__ import annotations

import queue
import subprocess
import threading
from collections.abc import Iterator, Sequence

from ssebench.backends.docker.names import NAME
from ssebench.errors import BackendError
from ssebench.host import docker_cli
from ssebench.host.docker_cli import DOCKER, raise_if_unreachable


def pair_logs(run_id: str, names: Sequence[str], follow: bool) -> Iterator[str]:
    """Both containers' output. Without follow, in the order it was written (by
    docker's timestamps); with follow, as it comes. A container that is gone
    already (the agent's, removed on exit) is left out."""
    lines: queue.Queue[str | BaseException | None] = queue.Queue()
    # Set when the caller stops reading early: each reader then ends its `docker logs`
    # at its next line (or when its container ends).
    abandoned = threading.Event()

    def read(name: str) -> None:
        # Without follow, a container's lines count only once it was read to the
        # end: a failed `docker logs` writes its error where the output goes.
        read_lines: list[str] = []
        try:
            for line in container_logs(name, run_id, follow, timestamps=not follow):
                if abandoned.is_set():
                    break
                if follow:
                    lines.put(line)
                else:
                    read_lines.append(line)
            for line in read_lines:
                lines.put(line)
        except BackendError as error:
            lines.put(error)
        finally:
            lines.put(None)

    for name in names:
        threading.Thread(target=read, args=(name,), daemon=True).start()
    collected: list[tuple[str, str]] = []
    errors: list[BaseException] = []
    ended = 0
    try:
        while ended < len(names):
            item = lines.get()
            if item is None:
                ended += 1
            elif isinstance(item, BaseException):
                errors.append(item)
            elif follow:
                yield item
            else:
                stamp, _, text = item.partition(" ")
                collected.append((stamp, text))
    finally:
        abandoned.set()
    if len(errors) == len(names):
        raise errors[0]
    # docker's timestamps have a fixed width, so they sort as strings.
    for _, text in sorted(collected, key=lambda entry: entry[0]):
        yield text


def container_logs(
    name: str, run_id: str, follow: bool, *, timestamps: bool = False
) -> Iterator[str]:
    options = (["--follow"] if follow else []) + (["--timestamps"] if timestamps else [])
    argv = [DOCKER, "logs", *options, name]
    try:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
        )
    except FileNotFoundError:
        raise docker_cli.docker_missing() from None
    last = ""
    assert process.stdout is not None
    try:
        for line in process.stdout:
            last = line.rstrip("\n")
            yield last
    finally:
        # A caller that stops reading early must not leave `docker logs --follow`.
        if process.poll() is None:
            process.terminate()
        process.stdout.close()
        process.wait()
    if process.returncode != 0:
        raise_if_unreachable(last)
        raise BackendError(
            f"Cannot read the output of {name}: {last or 'docker logs failed'}",
            backend=NAME,
            run_id=run_id,
        )
