"""The run's archive volume: made before the run, streamed out through the safe
extractor after it (a tar of it read through a helper container that never starts),
removed with the run."""

from __future__ import annotations

import contextlib
import itertools
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO
from urllib.parse import quote

from ssebench.backends.docker import engine
from ssebench.backends.docker.commands import (
    container_ids,
    docker_call,
    remove_container,
    remove_volumes,
    volume_names,
)
from ssebench.backends.docker.containers import listed_labels
from ssebench.backends.docker.names import (
    ARCHIVE_DETAIL,
    IMAGE_DETAIL,
    NAME,
    archive_volume_name,
    container_name,
)
from ssebench.errors import BackendError
from ssebench.extensions import (
    ARCHIVE_TARGET,
    DEADLINE_LABEL,
    KEEP_LABEL,
    RUNNER_HOST_LABEL,
    RUNNER_PID_LABEL,
    RunHandle,
    RunSpec,
    end_process,
)
from ssebench.host import docker_cli
from ssebench.host.docker_cli import DOCKER, failure_reason
from ssebench.labels import ARCHIVE_OF
from ssebench.results import safe_tar as safe_tar

# Reads of `docker cp`'s tar stream, and the most of tar padding read after the end.
COPY_CHUNK = 1024 * 1024
# Of an answer that is not the archive, the daemon's message: a few hundred bytes.
MESSAGE_BYTES = 64 * 1024


def create_archive_volume(spec: RunSpec) -> str:
    volume = archive_volume_name(spec.run_id)
    if volume in volume_names(f"name={volume}"):
        # `docker volume create` would reuse it, and its files would become this run's.
        raise BackendError(
            f"The volume {volume} exists already (an earlier run with this ID?); "
            f"remove it with `docker volume rm {volume}`, or use another run ID",
            backend=NAME,
            run_id=spec.run_id,
        )
    run_labels = listed_labels(spec, time.time())
    volume_labels = {ARCHIVE_OF: spec.run_id}
    for key in (DEADLINE_LABEL, RUNNER_HOST_LABEL, RUNNER_PID_LABEL, KEEP_LABEL):
        volume_labels[key] = run_labels[key]
    argv = ["volume", "create"]
    for key, value in volume_labels.items():
        argv += ["--label", f"{key}={value}"]
    completed = docker_call(
        "POST", "/volumes/create", [*argv, volume], body={"Name": volume, "Labels": volume_labels}
    )
    if completed.returncode != 0:
        raise BackendError(
            f"Cannot create the volume {volume}: {failure_reason(completed)}",
            backend=NAME,
            run_id=spec.run_id,
        )
    return volume


def collect_results(handle: RunHandle, dest: Path) -> None:
    """The results are in dest already (bind-mounted, root's during the run); the
    archive volume is copied into dest/archive through the safe extractor."""
    volume = handle.details.get(ARCHIVE_DETAIL)
    image = handle.details.get(IMAGE_DETAIL)
    if volume is None or image is None:
        return  # a handle found again, not started here: nothing of ours to copy
    target = dest / "archive"
    if target.is_symlink():
        raise BackendError(f"{target} is a symbolic link", backend=NAME)
    target.mkdir(exist_ok=True)
    limits = safe_tar.Limits.from_environment()
    helper = archive_helper(handle.run_id, volume, image)
    try:
        report = copy_archive(handle.run_id, helper, target, limits)
    finally:
        remove_container(helper)
    if report.skipped:
        sys.stderr.write(
            f"ssebench: skipped {report.skipped_total} entries of the archive that are "
            f"not files or directories, e.g. {report.skipped[0]}\n"
        )


def archive_helper(run_id: str, volume: str, image: str) -> str:
    """A container that mounts the archive volume read-only and never starts:
    copy_archive reads the volume through it. Labelled so cleanup finds it."""
    name = f"{container_name(run_id)}-archive-copy"
    remove_container(name)  # one of an earlier attempt
    mount = {"Type": "volume", "Source": volume, "Target": ARCHIVE_TARGET, "ReadOnly": True}
    # The Engine API's create never pulls, as --pull never.
    completed = docker_call(
        "POST",
        f"/containers/create?name={quote(name, safe='')}",
        [
            "create",
            "--pull",
            "never",
            "--name",
            name,
            "--network",
            "none",
            "--label",
            f"{ARCHIVE_OF}={run_id}",
            "--mount",
            f"type=volume,source={volume},target={ARCHIVE_TARGET},readonly",
            image,
            "ssebench-copy",  # never runs
        ],
        body={
            "Image": image,
            "Cmd": ["ssebench-copy"],
            "Labels": {ARCHIVE_OF: run_id},
            "HostConfig": {"NetworkMode": "none", "Mounts": [mount]},
        },
    )
    if completed.returncode != 0:
        raise BackendError(
            f"Cannot read the archive of {run_id}: {failure_reason(completed)}",
            backend=NAME,
            run_id=run_id,
        )
    return name


def copy_archive(
    run_id: str, helper: str, target: Path, limits: safe_tar.Limits
) -> safe_tar.ExtractReport:
    """The archive as a tar stream, unpacked into target by the extractor as it
    arrives: the Engine API's GET /containers/{id}/archive where the API is at hand
    (what `docker cp` asks for, without its process), else `docker cp`. Raises
    BackendError."""
    path = f"/containers/{quote(helper, safe='')}/archive?path={quote(ARCHIVE_TARGET + '/.')}"
    try:
        with engine.stream("GET", path) as (status, chunks):
            if status != 200:
                answer = b"".join(itertools.islice(chunks, 1))[:MESSAGE_BYTES]
                raise BackendError(
                    f"Cannot copy the archive of {run_id}: {engine.error_message(answer)}",
                    backend=NAME,
                    run_id=run_id,
                )
            try:
                report = safe_tar.extract(chunks, target, limits)
                _drain(chunks, COPY_CHUNK)  # tar's padding after the end marker
            except (safe_tar.UnsafeArchiveError, OSError) as error:
                raise BackendError(
                    f"The archive of {run_id} was not copied: {error}",
                    backend=NAME,
                    run_id=run_id,
                ) from None
            return report
    except engine.EngineUnavailable:
        return _copy_archive_by_cli(run_id, helper, target, limits)


def _copy_archive_by_cli(
    run_id: str, helper: str, target: Path, limits: safe_tar.Limits
) -> safe_tar.ExtractReport:
    """copy_archive through `docker cp`."""
    with tempfile.TemporaryFile() as errors:
        try:
            process = subprocess.Popen(
                [DOCKER, "cp", f"{helper}:{ARCHIVE_TARGET}/.", "-"],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=errors,
            )
        except FileNotFoundError:
            raise docker_cli.docker_missing() from None
        assert process.stdout is not None
        try:
            report = safe_tar.extract(_chunks(process.stdout), target, limits)
            # What follows the end marker is tar's padding: read so docker cp ends.
            _drain(_chunks(process.stdout), COPY_CHUNK)
        except safe_tar.UnsafeArchiveError as error:
            reason = str(error)
            with contextlib.suppress(subprocess.TimeoutExpired):
                # A stream that ended early: docker cp's own failure says why.
                if process.wait(timeout=1) != 0:
                    reason = _last_line(errors) or reason
            raise BackendError(
                f"The archive of {run_id} was not copied: {reason}",
                backend=NAME,
                run_id=run_id,
            ) from None
        finally:
            if process.poll() is None:
                end_process(process)
            process.stdout.close()
        status = process.wait()
        if status != 0:
            raise BackendError(
                f"Cannot copy the archive of {run_id}: "
                f"{_last_line(errors) or f'docker cp exited {status}'}",
                backend=NAME,
                run_id=run_id,
            )
    return report


def remove_archive(run_id: str) -> None:
    """The run's archive volume and its copying helper. Raises BackendError."""
    selector = f"label={ARCHIVE_OF}={run_id}"
    helpers = container_ids(selector)
    for helper in helpers:
        remove_container(helper)
    failure = remove_volumes(selector)
    if failure is not None:
        raise BackendError(
            f"Cannot remove the archive volume of {run_id}: {failure}",
            backend=NAME,
            run_id=run_id,
        )


def _chunks(stream: IO[bytes]) -> Iterator[bytes]:
    while chunk := stream.read(COPY_CHUNK):
        yield chunk


def _last_line(file: IO[bytes]) -> str:
    file.seek(0)
    lines = file.read(64 * 1024).decode(errors="replace").strip().splitlines()
    return lines[-1] if lines else ""


def _drain(chunks: Iterator[bytes], limit: int) -> None:
    """Read chunks to their end, or raise once more than limit bytes came."""
    seen = 0
    for chunk in chunks:
        seen += len(chunk)
        if seen > limit:
            raise safe_tar.UnsafeArchiveError("data after the end of the archive")
