"""The Docker backend: runs on the daemon the `docker` CLI is set up for.

Every call goes through the docker CLI (never a shell, never the Python SDK), so the
user's docker contexts, DOCKER_HOST and credentials apply as they do on the command
line. The run's container runs in the foreground of a `docker run` process, whose
output reaches this process's stdout and stderr as it is written. The run's
environment reaches docker through an env file that is a pipe the docker command
inherits (/dev/fd/N): no value of it is ever on a command line or on disk, so no kill
at any moment can leave it behind.

The backend holds no state between calls: a RunHandle names the container, and runs
are found again by their labels. The one exception is an optimisation inside a single
process: the `docker run` processes this process started, kept so wait can reap them.

A sidecar run is two containers and two volumes, all labelled ssebench.run=<pair ID>.
The environment container (ssebench-<pair ID>, the one with the run's labels, which
list_runs finds) starts detached first; its output is followed onto this process's
output. The agent container (ssebench-<pair ID>-agent) then runs in the foreground and
shares the environment container's network namespace, so the agent reaches the daemon
on 127.0.0.1 and endpoint() reaches both from the environment container's address. A
sidecar run's handle names the agent container (the one the run waits for) and carries
the pair's ID and the environment container's name, from which stop, cleanup and logs
find the rest.

Every run is on a network of its own (docker_network), made before its container and
removed with it; the proxy joins it under the same name for every run, and an
open-egress run's network is kept off private ranges and this host by firewall rules
(docker_firewall).

The agent's archive (/tmp/sse-archive) is a volume of the run's own,
ssebench-<run id>-archive, never a folder of the host: nothing the agent makes there
reaches the host as it made it. After the run, collect_results streams the volume out
(`docker cp` of a helper container that mounts it and never starts) into the run
directory's archive/ through the same extractor as the Kubernetes read-out, with the
same limits (links, FIFOs and devices skipped, setuid stripped, size, file and depth
caps). The volume and the helper carry ssebench.archive-of=<run id>, by which cleanup
removes them, and the runner's host and process, by which prune removes those whose
run is gone. During the run the dialog is read from the run's daemon, as before.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import math
import os
import queue
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from ssebench import image_layers, images, safe_tar
from ssebench.backends import docker_network
from ssebench.errors import BackendError, UserError
from ssebench.extensions import (
    ARCHIVE_TARGET,
    DEADLINE_LABEL,
    HELPER_LABEL,
    KEEP_LABEL,
    PAIR_LABEL,
    RESULTS_LABEL,
    RESULTS_OWNER_LABEL,
    RUN_ID_LABEL,
    RUNNER_HOST_LABEL,
    RUNNER_PID_LABEL,
    Backend,
    ImageRequest,
    Images,
    Mount,
    RunHandle,
    RunInfo,
    RunSpec,
    RunState,
    SidecarPair,
    cli_exec_argv,
)
from ssebench.host_processes import process_exists
from ssebench.images import DOCKER, failure_reason, raise_if_unreachable, run_docker
from ssebench.labels import ARCHIVE_OF

__all__ = [
    "DockerBackend",
    "agent_container_name",
    "container_name",
    "run_argv",
    "sidecar_argvs",
]

# The container enforces the run's timeout itself; past this margin a janitor may
# treat a container whose runner died as abandoned.
DEADLINE_SLACK_SECONDS = 1800
# docker run's own status when the daemon refused to create or start the container.
DOCKER_RUN_FAILED = 125
# The copy container of a reference run lives seconds; past this, prune removes it
# even if its runner still runs.
COPY_DEADLINE_SECONDS = 3600
# Creating a container is quick; this bounds a daemon that hangs.
CREATE_TIMEOUT_SECONDS = 300.0
# The capabilities the entrypoint needs (chown the tree, switch to the run's users, end
# the agent's processes); everything else is dropped.
TASK_CAPABILITIES = ("CHOWN", "DAC_OVERRIDE", "FOWNER", "SETGID", "SETUID", "KILL")
MEMORY_VARIABLE = "SSEBENCH_DOCKER_MEMORY"
CPUS_VARIABLE = "SSEBENCH_DOCKER_CPUS"
PIDS_VARIABLE = "SSEBENCH_DOCKER_PIDS"
DEFAULT_MEMORY = "4g"
DEFAULT_CPUS = 2
DEFAULT_PIDS = 4096
# A sidecar run's handle: the pair's ID and the environment container's name.
PAIR_DETAIL = "pair"
ENVIRONMENT_DETAIL = "environment"
# Every run's handle: its archive volume, and an image to make the copying helper of
# (and, for an unprivileged runner, the chown that gives the run directory back).
ARCHIVE_DETAIL = "archive"
IMAGE_DETAIL = "image"
# The run directory's owner to give it back to (uid:gid), and where it is.
OWNER_DETAIL = "results_owner"
RESULTS_DETAIL = "results"
# Reads of `docker cp`'s tar stream.
COPY_CHUNK = 1024 * 1024
# docker removes a --rm container a moment after `docker wait` returns; until then
# its volumes are in use.
VOLUME_REMOVE_SECONDS = 15.0
# What an environment pipe is asked to hold (Linux lets a user ask for up to 1 MiB).
ENV_PIPE_BYTES = 1 << 20
_GONE_MARKERS = ("No such container", "No such object", "is already in progress")
_NAME_FORBIDDEN = re.compile(r"[^a-zA-Z0-9_.-]")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_STATES: dict[str, RunState] = {
    "created": "created",
    "running": "running",
    "paused": "running",
    "restarting": "running",
    "exited": "exited",
    "dead": "exited",
}

# The `docker run` processes started by this process, by container name.
_processes: dict[str, subprocess.Popen[bytes]] = {}
# The `docker logs --follow` processes of detached containers, by container name.
_followers: dict[str, subprocess.Popen[bytes]] = {}
_processes_lock = threading.Lock()


def container_name(run_id: str) -> str:
    """The container's name: ssebench-<run id>, within docker's name rules.

    In a sidecar run, the environment container's name, from the pair's ID."""
    return f"ssebench-{_NAME_FORBIDDEN.sub('-', run_id)}"


def archive_volume_name(run_id: str) -> str:
    """The volume the run's agent writes its archive to."""
    return f"{container_name(run_id)}-archive"


def agent_container_name(pair_id: str) -> str:
    """The agent container of a sidecar run: ssebench-<pair id>-agent."""
    return f"{container_name(pair_id)}-agent"


def _is_gone(completed: subprocess.CompletedProcess[str]) -> bool:
    return any(marker in completed.stderr for marker in _GONE_MARKERS)


def _csv_field(value: str) -> str:
    # docker parses --mount as one CSV record: quote a field holding a comma or quote.
    if any(character in value for character in ',"\n'):
        return '"' + value.replace('"', '""') + '"'
    return value


def mount_option(mount: Mount) -> str:
    """The --mount value of mount."""
    fields = [f"type={mount.kind}", f"source={mount.source}", f"target={mount.target}"]
    if mount.read_only:
        fields.append("readonly")
    return ",".join(_csv_field(field) for field in fields)


def env_file_text(env: Mapping[str, str]) -> bytes:
    """env in docker's env file format. Error messages name variables, never values."""
    lines = []
    for name, value in env.items():
        if not _ENV_NAME.match(name):
            raise BackendError(f"The environment variable name {name!r} is not valid")
        if "\n" in value or "\r" in value:
            raise BackendError(
                f"The value of {name} spans several lines, which docker's env file cannot hold"
            )
        lines.append(f"{name}={value}\n")
    return "".join(lines).encode()


@contextlib.contextmanager
def env_pipe(env: Mapping[str, str]) -> Iterator[tuple[str, int]]:
    """env as a docker env file that is a pipe, never a file on disk: yields the path
    docker reads it from (/dev/fd/N) and N, which the docker command must inherit
    (pass_fds). The pipe holds the whole text before docker starts, so nothing waits
    on docker to read it; a SIGKILL at any moment leaves nothing behind.
    """
    text = env_file_text(env)
    read_end, write_end = os.pipe()
    try:
        with contextlib.suppress(OSError, AttributeError):
            # Linux pipes hold 64 KiB unless asked; an environment rarely needs more.
            fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, ENV_PIPE_BYTES)
        os.set_blocking(write_end, False)
        view = memoryview(text)
        try:
            while view:
                view = view[os.write(write_end, view) :]
        except BlockingIOError:
            raise BackendError(
                f"The run's environment ({len(text)} bytes) is larger than a pipe holds"
            ) from None
        os.close(write_end)
        write_end = -1
        yield f"/dev/fd/{read_end}", read_end
    finally:
        for descriptor in (read_end, write_end):
            if descriptor >= 0:
                os.close(descriptor)


@dataclass(frozen=True)
class ResourceLimits:
    """The task container's limits; each can be changed through its variable."""

    memory: str
    cpus: str
    pids: int

    @classmethod
    def from_environment(cls) -> ResourceLimits:
        cpus = os.environ.get(CPUS_VARIABLE) or str(min(DEFAULT_CPUS, os.cpu_count() or 1))
        pids = os.environ.get(PIDS_VARIABLE) or str(DEFAULT_PIDS)
        if not pids.isdigit() or int(pids) < 1:
            raise UserError(f"{PIDS_VARIABLE} must be a positive number of processes")
        return cls(
            memory=os.environ.get(MEMORY_VARIABLE) or DEFAULT_MEMORY, cpus=cpus, pids=int(pids)
        )

    def argv(self) -> list[str]:
        return [
            "--memory",
            self.memory,
            "--cpus",
            self.cpus,
            "--pids-limit",
            str(self.pids),
        ]


def hardening_argv() -> list[str]:
    """Only the capabilities the entrypoint needs to set the run up and switch users;
    the agent's processes then end with none (the runtime drops them)."""
    argv = ["--cap-drop", "ALL"]
    for capability in TASK_CAPABILITIES:
        argv += ["--cap-add", capability]
    return [*argv, "--security-opt", "no-new-privileges"]


def _docker_run_argv(
    spec: RunSpec,
    *,
    name: str,
    image: str,
    network: str,
    env_file: str,
    labels: Mapping[str, str],
    mounts: Sequence[Mount],
    limits: ResourceLimits | None,
    detach: bool = False,
) -> list[str]:
    """One container's `docker run` command; it holds the env file's path, not its values."""
    argv = [DOCKER, "run", "--name", name]
    if detach:
        argv.append("--detach")
    # Never --rm: a stopped container stays (`runs stop` leaves it in place); the
    # runner's cleanup, `runs remove` or prune removes it.
    # The image was prepared before the run; never reach for a registry here.
    argv += ["--pull", "never", "--env-file", env_file, "--network", network]
    argv += hardening_argv() + (limits or ResourceLimits.from_environment()).argv()
    if spec.platform:
        argv += ["--platform", spec.platform]
    for key, value in labels.items():
        argv += ["--label", f"{key}={value}"]
    for mount in mounts:
        argv += ["--mount", mount_option(mount)]
    argv.append(image)
    return argv


def results_owner() -> str | None:
    """uid:gid of this process when it is not root: the container makes the run
    directory root's while it runs, and the run directory must come back to it."""
    return None if os.getuid() == 0 else f"{os.getuid()}:{os.getgid()}"


def _owner_labels(spec: RunSpec, now: float) -> dict[str, str]:
    """Who started the run and until when it may run: what prune judges it by."""
    deadline = int(now) + spec.timeout + DEADLINE_SLACK_SECONDS
    return {
        DEADLINE_LABEL: str(deadline),
        RUNNER_HOST_LABEL: socket.gethostname(),
        RUNNER_PID_LABEL: str(os.getpid()),
    }


def _owner_details(spec: RunSpec) -> dict[str, str]:
    """What cleanup needs to give the run directory back to an unprivileged runner."""
    owner = results_owner()
    if owner is None:
        return {}
    return {OWNER_DETAIL: owner, RESULTS_DETAIL: spec.results.source}


def _listed_labels(spec: RunSpec, now: float) -> dict[str, str]:
    """The labels of the container the web UI lists: the run's, plus the backend's."""
    labels = {**spec.labels, **_owner_labels(spec, now), KEEP_LABEL: str(spec.keep).lower()}
    owner = results_owner()
    if owner is not None:
        labels[RESULTS_OWNER_LABEL] = owner
    return labels


def run_argv(
    spec: RunSpec,
    *,
    name: str,
    network: str,
    env_file: str,
    now: float,
    limits: ResourceLimits | None = None,
) -> list[str]:
    """The `docker run` command of spec; it holds the env file's path, not its values."""
    return _docker_run_argv(
        spec,
        name=name,
        image=spec.image,
        network=network,
        env_file=env_file,
        labels=_listed_labels(spec, now),
        mounts=(spec.results, spec.archive, *spec.artifacts),
        limits=limits,
    )


def sidecar_argvs(
    spec: RunSpec,
    pair: SidecarPair,
    *,
    network: str,
    env_files: tuple[str, str],
    now: float,
    limits: ResourceLimits | None = None,
) -> tuple[list[str], list[str]]:
    """The `docker run` commands of a sidecar run: (environment, agent).

    env_files are the environment container's and the agent container's. The
    environment container runs detached with the run's labels; the agent container
    carries the pair's label only, joins the environment container's network namespace,
    and alone gets the artifacts. Neither mounts anything of the task: the environment
    image has it, and the agent image must not.
    """
    limits = limits or ResourceLimits.from_environment()
    environment_name = container_name(pair.run_id)
    shared = pair.shared_mounts(spec.results, spec.archive)
    environment = _docker_run_argv(
        spec,
        name=environment_name,
        image=pair.environment_image,
        network=network,
        env_file=env_files[0],
        labels={**_listed_labels(spec, now), PAIR_LABEL: pair.run_id},
        mounts=shared,
        limits=limits,
        detach=True,
    )
    agent = _docker_run_argv(
        spec,
        name=agent_container_name(pair.run_id),
        image=spec.image,
        network=f"container:{environment_name}",
        env_file=env_files[1],
        labels={PAIR_LABEL: pair.run_id},
        mounts=(*shared, *spec.artifacts),
        limits=limits,
    )
    return environment, agent


def _remove_container(name: str) -> subprocess.CompletedProcess[str]:
    return run_docker(["rm", "--force", "--volumes", name])


def _remove_volumes(selector: str) -> str | None:
    """Remove the volumes that selector (a docker filter) lists; the reason when some
    stay. docker removes a --rm container's volumes' users a moment after it exits."""
    deadline = time.monotonic() + VOLUME_REMOVE_SECONDS
    while True:
        volumes = run_docker(["volume", "ls", "--quiet", "--filter", selector]).stdout.split()
        if not volumes:
            return None
        completed = run_docker(["volume", "rm", "--force", *volumes])
        if completed.returncode == 0:
            return None
        if time.monotonic() > deadline:
            return failure_reason(completed)
        time.sleep(0.25)


def _chunks(stream: IO[bytes]) -> Iterator[bytes]:
    while chunk := stream.read(COPY_CHUNK):
        yield chunk


def _last_line(file: IO[bytes]) -> str:
    file.seek(0)
    lines = file.read(64 * 1024).decode(errors="replace").strip().splitlines()
    return lines[-1] if lines else ""


def _drain(stream: IO[bytes], limit: int) -> None:
    """Read stream to its end, or raise once more than limit bytes came."""
    seen = 0
    while chunk := stream.read(COPY_CHUNK):
        seen += len(chunk)
        if seen > limit:
            raise safe_tar.UnsafeArchiveError("data after the end of the archive")


def _parse_created(value: Any) -> str | None:
    """docker's RFC 3339 time with nanoseconds -> ISO 8601 in seconds, UTC."""
    if not isinstance(value, str) or len(value) < 19:
        return None
    return value[:19] + "Z" if value.endswith("Z") else value[:19]


class DockerBackend(Backend):
    """Runs on the local Docker daemon. network overrides the network of every run."""

    name = "docker"
    builds_images = True
    supports_exec = True

    def __init__(self, network: str | None = None, *, quiet_builds: bool = False) -> None:
        self.network = network
        self.quiet_builds = quiet_builds

    # -- images ----------------------------------------------------------------------

    def prepare_images(self, request: ImageRequest) -> Images:
        output = images.BuildOutput(quiet=self.quiet_builds)
        if request.prebuilt:
            return images.prepare_images(request, output)
        # The public layer API, as every backend that builds images uses it.
        return image_layers.build_images(
            request, build=images.docker_builder(output), image_labels=images.docker_image_labels
        )

    def copy_from_image(
        self,
        image: str,
        path: str,
        dest: Path,
        platform: str | None,
        *,
        labels: Mapping[str, str] | None = None,
    ) -> None:
        """docker create, docker cp, docker rm. The container carries the run's labels
        and this runner's (host, process, a deadline), so a runner killed before it
        removed the container leaves one that `ssebench runs prune` finds and removes."""
        argv = ["create", "--pull", "never"]
        if platform:
            argv += ["--platform", platform]
        if labels and labels.get(RUN_ID_LABEL):
            argv += ["--name", f"{container_name(labels[RUN_ID_LABEL])}-copy"]
        helper_labels = {
            **(labels or {}),
            DEADLINE_LABEL: str(int(time.time()) + COPY_DEADLINE_SECONDS),
            RUNNER_HOST_LABEL: socket.gethostname(),
            RUNNER_PID_LABEL: str(os.getpid()),
            KEEP_LABEL: "false",
            HELPER_LABEL: "copy",
        }
        for key, value in helper_labels.items():
            argv += ["--label", f"{key}={value}"]
        # A command is given so images without CMD can be created; it never runs.
        completed = run_docker([*argv, image, "ssebench-copy"])
        if completed.returncode != 0:
            raise RuntimeError(f"Cannot create a container of {image}: {failure_reason(completed)}")
        container = completed.stdout.strip()
        try:
            completed = run_docker(["cp", f"{container}:{path}", str(dest)])
            if completed.returncode != 0:
                raise RuntimeError(
                    f"Cannot copy {path} out of {image}: {failure_reason(completed)}"
                )
        finally:
            _remove_container(container)

    # -- a run -----------------------------------------------------------------------

    def _run_network(self, spec: RunSpec) -> str:
        """Make the run's own network (docker_network) and return its name; the
        network given to the backend instead, if one was."""
        if self.network:
            return self.network
        network = docker_network.RunNetwork(
            run_id=spec.run_id,
            open_egress=spec.network.egress == "open",
            needs_proxy=docker_network.needs_proxy(spec.env),
            labels=_owner_labels(spec, time.time()),
        )
        return docker_network.create(network)

    def start(self, spec: RunSpec) -> RunHandle:
        if spec.mode == "sidecar" and spec.sidecar is None:
            raise UserError("A sidecar run needs its RunSpec.sidecar (the environment container)")
        # The archive goes to a volume of the run's own, whatever spec.archive names: the
        # host gets it through collect_results' safe copy only.
        volume = self._create_archive_volume(spec)
        spec = dataclasses.replace(
            spec, archive=Mount(target=spec.archive.target, source=volume, kind="volume")
        )
        try:
            if spec.sidecar is not None:
                handle = self._start_sidecar(spec, spec.sidecar)
            else:
                handle = self._start_single(spec)
        except BaseException:
            with contextlib.suppress(UserError, OSError, BackendError):
                self._remove_archive(spec.run_id)
            raise
        details = {**handle.details, ARCHIVE_DETAIL: volume, IMAGE_DETAIL: spec.image}
        return dataclasses.replace(handle, details=details)

    def _create_archive_volume(self, spec: RunSpec) -> str:
        volume = archive_volume_name(spec.run_id)
        listed = run_docker(["volume", "ls", "--quiet", "--filter", f"name={volume}"])
        if volume in listed.stdout.split():
            # `docker volume create` would reuse it, and its files would become this run's.
            raise BackendError(
                f"The volume {volume} exists already (an earlier run with this ID?); "
                f"remove it with `docker volume rm {volume}`, or use another run ID",
                backend=self.name,
                run_id=spec.run_id,
            )
        run_labels = _listed_labels(spec, time.time())
        argv = ["volume", "create", "--label", f"{ARCHIVE_OF}={spec.run_id}"]
        for key in (DEADLINE_LABEL, RUNNER_HOST_LABEL, RUNNER_PID_LABEL, KEEP_LABEL):
            argv += ["--label", f"{key}={run_labels[key]}"]
        completed = run_docker([*argv, volume])
        if completed.returncode != 0:
            raise BackendError(
                f"Cannot create the volume {volume}: {failure_reason(completed)}",
                backend=self.name,
                run_id=spec.run_id,
            )
        return volume

    def _start_single(self, spec: RunSpec) -> RunHandle:
        name = container_name(spec.run_id)
        process: subprocess.Popen[bytes] | None = None
        with env_pipe(spec.env) as (env_file, env_descriptor):
            try:
                network = self._run_network(spec)
                argv = run_argv(
                    spec, name=name, network=network, env_file=env_file, now=time.time()
                )
                try:
                    # A session of its own: the terminal's Ctrl-C reaches ssebench only,
                    # which stops the run itself (docker would forward it as SIGINT).
                    process = subprocess.Popen(
                        argv,
                        stdin=subprocess.DEVNULL,
                        start_new_session=True,
                        pass_fds=(env_descriptor,),
                    )
                except FileNotFoundError:
                    raise images.docker_missing() from None
                self._wait_until_created(process, name, spec.run_id)
            except BaseException:
                _discard(process, name)
                _discard_network(spec.run_id)
                raise
        with _processes_lock:
            _processes[name] = process
        return RunHandle(
            backend=self.name,
            run_id=spec.run_id,
            name=name,
            details={
                "pid": str(process.pid),
                "keep": str(spec.keep).lower(),
                "network": network,
                **_owner_details(spec),
            },
        )

    def _start_sidecar(self, spec: RunSpec, pair: SidecarPair) -> RunHandle:
        """Volumes, then the environment container (detached), then the agent container
        in the foreground. On any failure everything of the pair is removed again."""
        environment_name = container_name(pair.run_id)
        agent_name = agent_container_name(pair.run_id)
        process: subprocess.Popen[bytes] | None = None
        with (
            env_pipe({**pair.shared_env(), **pair.environment_env()}) as environment_env,
            env_pipe({**spec.env, **pair.shared_env()}) as agent_env,
        ):
            try:
                network = self._run_network(spec)
                environment_argv, agent_argv = sidecar_argvs(
                    spec,
                    pair,
                    network=network,
                    env_files=(environment_env[0], agent_env[0]),
                    now=time.time(),
                )
                # The runner's labels: a runner killed before the environment container
                # exists leaves volumes that prune removes (remove_abandoned).
                volume_labels = {
                    **_owner_labels(spec, time.time()),
                    KEEP_LABEL: str(spec.keep).lower(),
                }
                for volume in pair.volumes:
                    self._create_volume(volume, pair.run_id, volume_labels)
                self._run_detached(
                    environment_argv,
                    environment_name,
                    spec.run_id,
                    pass_fds=(environment_env[1],),
                )
                _follow_output(environment_name)
                try:
                    process = subprocess.Popen(
                        agent_argv,
                        stdin=subprocess.DEVNULL,
                        start_new_session=True,
                        pass_fds=(agent_env[1],),
                    )
                except FileNotFoundError:
                    raise images.docker_missing() from None
                self._wait_until_created(process, agent_name, spec.run_id)
            except BaseException:
                if process is not None:
                    _end_process(process)
                with contextlib.suppress(UserError, OSError, BackendError):
                    self._remove_pair(pair.run_id)
                _discard_network(spec.run_id)
                raise
        with _processes_lock:
            _processes[agent_name] = process
        return RunHandle(
            backend=self.name,
            run_id=spec.run_id,
            name=agent_name,
            details={
                "pid": str(process.pid),
                "keep": str(spec.keep).lower(),
                "network": network,
                PAIR_DETAIL: pair.run_id,
                ENVIRONMENT_DETAIL: environment_name,
                **_owner_details(spec),
            },
        )

    def _create_volume(self, volume: str, pair_id: str, labels: Mapping[str, str]) -> None:
        argv = ["volume", "create", "--label", f"{PAIR_LABEL}={pair_id}"]
        for key, value in labels.items():
            argv += ["--label", f"{key}={value}"]
        completed = run_docker([*argv, volume])
        if completed.returncode != 0:
            raise BackendError(
                f"Cannot create the volume {volume}: {failure_reason(completed)}",
                backend=self.name,
                run_id=pair_id,
            )

    def _run_detached(
        self, argv: Sequence[str], name: str, run_id: str, *, pass_fds: Sequence[int] = ()
    ) -> None:
        """Run a docker command that makes or starts the container name, and returns.
        pass_fds: the descriptors it inherits (its env file's pipe)."""
        command = f"docker {argv[1]}"
        try:
            completed = run_docker(argv[1:], timeout=CREATE_TIMEOUT_SECONDS, pass_fds=pass_fds)
        except subprocess.TimeoutExpired:
            raise BackendError(
                f"{command} did not finish within {CREATE_TIMEOUT_SECONDS:.0f} s "
                f"for the container {name}",
                backend=self.name,
                run_id=run_id,
            ) from None
        if completed.returncode != 0:
            raise BackendError(
                f"{command} failed for the container {name}: {failure_reason(completed)}",
                backend=self.name,
                run_id=run_id,
            )

    def _remove_pair(self, pair_id: str) -> None:
        """Remove a sidecar run's containers, the agent's first (it uses the
        environment's network namespace), then its volumes. Raises BackendError."""
        listed = run_docker(
            ["ps", "--all", "--quiet", "--no-trunc", "--filter", f"label={PAIR_LABEL}={pair_id}"]
        )
        failures = []
        names = [agent_container_name(pair_id), container_name(pair_id)]
        # By name first, in that order; then anything else that carries the label.
        for container in [*names, *listed.stdout.split()]:
            completed = _remove_container(container)
            if completed.returncode != 0 and not _is_gone(completed):
                failures.append(failure_reason(completed))
        failure = _remove_volumes(f"label={PAIR_LABEL}={pair_id}")
        if failure is not None:
            failures.append(failure)
        if failures:
            raise BackendError(
                f"Cannot remove all of the run {pair_id}: {failures[0]}",
                backend=self.name,
                run_id=pair_id,
            )

    def _wait_until_created(self, process: subprocess.Popen[bytes], name: str, run_id: str) -> None:
        deadline = time.monotonic() + CREATE_TIMEOUT_SECONDS
        delay = 0.02
        while True:
            if _container_exists(name):
                return
            status = process.poll()
            if status is not None:
                if status >= 0 and status != DOCKER_RUN_FAILED:
                    # The container ran and is gone already (--rm): wait reports status.
                    return
                raise BackendError(
                    f"docker run could not create the container {name} (status {status}); "
                    "docker's message is above",
                    backend=self.name,
                    run_id=run_id,
                )
            if time.monotonic() > deadline:
                raise BackendError(
                    f"The container {name} was not created within {CREATE_TIMEOUT_SECONDS:.0f} s",
                    backend=self.name,
                    run_id=run_id,
                )
            time.sleep(delay)
            delay = min(delay * 2, 0.5)

    def wait(self, handle: RunHandle, timeout: float | None) -> int:
        environment = handle.details.get(ENVIRONMENT_DETAIL)
        if environment is None:
            return self._wait_container(handle, timeout)
        # Sidecar: the agent container's status is the run's, and the run has ended
        # once the environment container has graded what the agent left and exited.
        started = time.monotonic()
        status = self._wait_container(handle, timeout)
        remaining = None if timeout is None else max(0.0, timeout - (time.monotonic() - started))
        environment_handle = RunHandle(backend=self.name, run_id=handle.run_id, name=environment)
        try:
            self._docker_wait(environment_handle, remaining)
        except BackendError:
            if _container_exists(environment):
                raise
            # Gone already: it exited and docker removed it (--rm).
        _end_follower(environment)
        return status

    def _wait_container(self, handle: RunHandle, timeout: float | None) -> int:
        process = _own_process(handle)
        if process is not None:
            try:
                status = process.wait(timeout)
            except subprocess.TimeoutExpired:
                raise _not_ended(handle, timeout) from None
            # A negative status: docker run itself was killed, not the container,
            # which the daemon may still be running.
            if status >= 0:
                _forget(handle.name)
                return status
        return self._docker_wait(handle, timeout)

    def _docker_wait(self, handle: RunHandle, timeout: float | None) -> int:
        try:
            completed = run_docker(["wait", handle.name], timeout=timeout)
        except subprocess.TimeoutExpired:
            raise _not_ended(handle, timeout) from None
        if completed.returncode != 0:
            raise BackendError(
                f"Cannot wait for {handle.name}: {failure_reason(completed)}",
                backend=self.name,
                run_id=handle.run_id,
            )
        try:
            return int(completed.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            raise BackendError(
                f"docker wait {handle.name} gave no exit status",
                backend=self.name,
                run_id=handle.run_id,
            ) from None

    def logs(self, handle: RunHandle, follow: bool = False) -> Iterator[str]:
        environment = handle.details.get(ENVIRONMENT_DETAIL)
        if environment is None:
            return self._container_logs(handle.name, handle.run_id, follow)
        return self._pair_logs(handle.run_id, (environment, handle.name), follow)

    def _pair_logs(self, run_id: str, names: Sequence[str], follow: bool) -> Iterator[str]:
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
                for line in self._container_logs(name, run_id, follow, timestamps=not follow):
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

    def _container_logs(
        self, name: str, run_id: str, follow: bool, *, timestamps: bool = False
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
            raise images.docker_missing() from None
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
                backend=self.name,
                run_id=run_id,
            )

    def collect_results(self, handle: RunHandle, dest: Path) -> None:
        """The results are in dest already (bind-mounted, root's during the run); the
        archive volume is copied into dest/archive through the safe extractor."""
        volume = handle.details.get(ARCHIVE_DETAIL)
        image = handle.details.get(IMAGE_DETAIL)
        if volume is None or image is None:
            return  # a handle found again, not started here: nothing of ours to copy
        target = dest / "archive"
        if target.is_symlink():
            raise BackendError(f"{target} is a symbolic link", backend=self.name)
        target.mkdir(exist_ok=True)
        limits = safe_tar.Limits.from_environment()
        helper = self._archive_helper(handle.run_id, volume, image)
        try:
            report = self._copy_archive(handle.run_id, helper, target, limits)
        finally:
            _remove_container(helper)
        if report.skipped:
            sys.stderr.write(
                f"ssebench: skipped {report.skipped_total} entries of the archive that are "
                f"not files or directories, e.g. {report.skipped[0]}\n"
            )

    def _archive_helper(self, run_id: str, volume: str, image: str) -> str:
        """A container that mounts the archive volume read-only and never starts:
        `docker cp` reads the volume through it. Labelled so cleanup finds it."""
        name = f"{container_name(run_id)}-archive-copy"
        _remove_container(name)  # one of an earlier attempt
        completed = run_docker(
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
            ]
        )
        if completed.returncode != 0:
            raise BackendError(
                f"Cannot read the archive of {run_id}: {failure_reason(completed)}",
                backend=self.name,
                run_id=run_id,
            )
        return name

    def _copy_archive(
        self, run_id: str, helper: str, target: Path, limits: safe_tar.Limits
    ) -> safe_tar.ExtractReport:
        """`docker cp` of the archive as a tar stream, unpacked into target by the
        extractor as it arrives. Raises BackendError."""
        with tempfile.TemporaryFile() as errors:
            try:
                process = subprocess.Popen(
                    [DOCKER, "cp", f"{helper}:{ARCHIVE_TARGET}/.", "-"],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=errors,
                )
            except FileNotFoundError:
                raise images.docker_missing() from None
            assert process.stdout is not None
            try:
                report = safe_tar.extract(_chunks(process.stdout), target, limits)
                # What follows the end marker is tar's padding: read so docker cp ends.
                _drain(process.stdout, COPY_CHUNK)
            except safe_tar.UnsafeArchiveError as error:
                reason = str(error)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    # A stream that ended early: docker cp's own failure says why.
                    if process.wait(timeout=1) != 0:
                        reason = _last_line(errors) or reason
                raise BackendError(
                    f"The archive of {run_id} was not copied: {reason}",
                    backend=self.name,
                    run_id=run_id,
                ) from None
            finally:
                if process.poll() is None:
                    _end_process(process)
                process.stdout.close()
            status = process.wait()
            if status != 0:
                raise BackendError(
                    f"Cannot copy the archive of {run_id}: "
                    f"{_last_line(errors) or f'docker cp exited {status}'}",
                    backend=self.name,
                    run_id=run_id,
                )
        return report

    def stop(self, handle: RunHandle, grace: float) -> None:
        self._stop_container(handle, grace)
        environment = handle.details.get(ENVIRONMENT_DETAIL)
        if environment is not None:
            # After the agent container: told of the agent's end over the link, the
            # environment is already grading, which a first SIGTERM lets finish.
            self._stop_container(
                RunHandle(backend=self.name, run_id=handle.run_id, name=environment), grace
            )

    def _stop_container(self, handle: RunHandle, grace: float) -> None:
        completed = run_docker(["stop", "--time", str(max(0, math.ceil(grace))), handle.name])
        if completed.returncode == 0:
            return
        if not _is_gone(completed):
            raise BackendError(
                f"Cannot stop {handle.name}: {failure_reason(completed)}",
                backend=self.name,
                run_id=handle.run_id,
            )
        # No container (yet): end a docker run of ours that has not created it.
        process = _own_process(handle)
        if process is not None and process.poll() is None:
            process.terminate()

    def cleanup(self, handle: RunHandle) -> None:
        if handle.details.get("keep") == "true":
            return
        try:
            self._remove_run(handle)
        finally:
            self._remove_archive(handle.run_id)

    def _remove_run(self, handle: RunHandle) -> None:
        pair_id = handle.details.get(PAIR_DETAIL)
        environment = handle.details.get(ENVIRONMENT_DETAIL)
        if pair_id is not None and environment is not None:
            process = _own_process(handle)
            if process is not None:
                _end_process(process)
                _forget(handle.name)
            _end_follower(environment)
            try:
                self._remove_pair(pair_id)
                docker_network.remove(handle.run_id)
            finally:
                self._give_back_results(handle)
            return
        completed = _remove_container(handle.name)
        process = _own_process(handle)
        if process is not None:
            _end_process(process)
            _forget(handle.name)
        if completed.returncode != 0 and not _is_gone(completed):
            raise BackendError(
                f"Cannot remove {handle.name}: {failure_reason(completed)}",
                backend=self.name,
                run_id=handle.run_id,
            )
        try:
            # After the container, which holds an endpoint on it.
            docker_network.remove(handle.run_id)
        finally:
            self._give_back_results(handle)

    def _remove_archive(self, run_id: str) -> None:
        """The run's archive volume and its copying helper. Raises BackendError."""
        selector = f"label={ARCHIVE_OF}={run_id}"
        helpers = run_docker(["ps", "--all", "--quiet", "--filter", selector]).stdout.split()
        for helper in helpers:
            _remove_container(helper)
        failure = _remove_volumes(selector)
        if failure is not None:
            raise BackendError(
                f"Cannot remove the archive volume of {run_id}: {failure}",
                backend=self.name,
                run_id=run_id,
            )

    def egress_enforced(self, image: str) -> bool | None:
        # Restricted runs are on an internal network, which dockerd itself enforces;
        # open ones are refused where their firewall rules cannot be installed.
        return True

    def remove_abandoned(self, now: float, host: str) -> list[str]:
        """What runs that are gone left: their networks and firewall rules
        (docker_network.prune), and their archive volumes."""
        networks = docker_network.prune(
            now=now,
            host=host,
            run_container_exists=lambda run_id: _container_exists(container_name(run_id)),
        )
        return [
            *self._remove_abandoned_volumes(ARCHIVE_OF, now, host),
            # A sidecar pair's volumes, made before its environment container: a runner
            # killed in between leaves them and no container prune could find.
            *self._remove_abandoned_volumes(PAIR_LABEL, now, host),
            *(f"{entry['kind']} {entry['name']}" for entry in networks),
        ]

    def _remove_abandoned_volumes(self, label: str, now: float, host: str) -> list[str]:
        """Volumes carrying label (archive volumes, sidecar volumes) whose run is gone:
        its deadline passed, or its runner (on this host) no longer runs; never one of
        a kept run. A volume still in use stays."""
        names = run_docker(["volume", "ls", "--quiet", "--filter", f"label={label}"]).stdout.split()
        if not names:
            return []
        completed = run_docker(["volume", "inspect", *names])
        try:
            volumes = json.loads(completed.stdout or "[]")
        except ValueError:
            return []
        removed = []
        for volume in volumes:
            found = volume.get("Labels") or {}
            if found.get(KEEP_LABEL) == "true":
                continue
            deadline = str(found.get(DEADLINE_LABEL, ""))
            pid = str(found.get(RUNNER_PID_LABEL, ""))
            runner_gone = (
                found.get(RUNNER_HOST_LABEL) == host
                and pid.isdigit()
                and not process_exists(int(pid))
            )
            if not (runner_gone or (deadline.isdigit() and int(deadline) < now)):
                continue
            name = str(volume.get("Name", ""))
            # Not --force: docker refuses a volume a container still uses.
            if run_docker(["volume", "rm", name]).returncode == 0:
                removed.append(name)
        return removed

    def _give_back_results(self, handle: RunHandle) -> None:
        """Give the run directory back to an unprivileged runner, now that nothing of
        the run writes into it. The container does so itself when it ends; a run
        killed (a second signal, runs remove, prune after a SIGKILL) leaves it root's,
        and agent-owned below archive/. A chown in a container of the run's image, on
        no network, with that one capability, and without following links."""
        owner = handle.details.get(OWNER_DETAIL)
        results = handle.details.get(RESULTS_DETAIL)
        image = handle.details.get(IMAGE_DETAIL)
        if not owner or not results or not image or not re.fullmatch(r"\d+:\d+", owner):
            return
        path = Path(results)
        if not path.is_dir() or path.is_symlink() or _owned_by(path, int(owner.split(":")[0])):
            return
        completed = run_docker(
            [
                "run", "--rm", "--pull", "never", "--network", "none",
                "--cap-drop", "ALL", "--cap-add", "CHOWN", "--cap-add", "DAC_READ_SEARCH",
                "--security-opt", "no-new-privileges", "--user", "0:0",
                "--label", f"{RUN_ID_LABEL}={handle.run_id}", "--label", f"{HELPER_LABEL}=chown",
                "--mount", mount_option(Mount(target="/results", source=str(path))),
                "--entrypoint", "chown", image, "-R", "--no-dereference", owner, "/results",
            ],
            timeout=CREATE_TIMEOUT_SECONDS,
        )  # fmt: skip
        if completed.returncode != 0:
            raise BackendError(
                f"Cannot give the run directory {path} back to {owner}: "
                f"{failure_reason(completed)}",
                backend=self.name,
                run_id=handle.run_id,
            )

    # -- finding runs ----------------------------------------------------------------

    def list_runs(self, labels: Mapping[str, str]) -> list[RunInfo]:
        argv = ["ps", "--all", "--no-trunc", "--format", "{{.ID}}"]
        for key, value in labels.items():
            argv += ["--filter", f"label={key}={value}"]
        completed = run_docker(argv)
        if completed.returncode != 0:
            raise BackendError(f"Cannot list containers: {failure_reason(completed)}")
        ids = completed.stdout.split()
        if not ids:
            return []
        # One inspect of all of them: ps's own labels column is ambiguous ("k=v,k=v").
        inspected = run_docker(["container", "inspect", *ids])
        try:
            containers = json.loads(inspected.stdout or "[]")
        except json.JSONDecodeError:
            raise BackendError(f"Cannot inspect containers: {failure_reason(inspected)}") from None
        # A container removed between the two calls is simply not listed.
        return [self._run_info(container) for container in containers]

    def _run_info(self, container: Mapping[str, Any]) -> RunInfo:
        config = container.get("Config") or {}
        state = container.get("State") or {}
        run_labels = {str(key): str(value) for key, value in (config.get("Labels") or {}).items()}
        name = str(container.get("Name", "")).lstrip("/")
        run_id = run_labels.get(RUN_ID_LABEL, name.removeprefix("ssebench-"))
        run_state = _STATES.get(str(state.get("Status", "")), "unknown")
        exit_code = state.get("ExitCode")
        # No "keep" here: cleanup of a run found again removes it (ssebench runs remove).
        owner: dict[str, str] = {}
        if run_labels.get(RESULTS_OWNER_LABEL) and run_labels.get(RESULTS_LABEL):
            owner = {
                OWNER_DETAIL: run_labels[RESULTS_OWNER_LABEL],
                RESULTS_DETAIL: run_labels[RESULTS_LABEL],
                IMAGE_DETAIL: str(config.get("Image", "")),
            }
        handle = RunHandle(backend=self.name, run_id=run_id, name=name, details=owner)
        pair_id = run_labels.get(PAIR_LABEL)
        if pair_id is not None:
            # The environment container of a sidecar run: the handle names the pair.
            handle = RunHandle(
                backend=self.name,
                run_id=run_id,
                name=agent_container_name(pair_id),
                details={PAIR_DETAIL: pair_id, ENVIRONMENT_DETAIL: name, **owner},
            )
        return RunInfo(
            run_id=run_id,
            name=name,
            state=run_state,
            exit_code=int(exit_code) if run_state == "exited" and exit_code is not None else None,
            image=str(config.get("Image", "")),
            labels=run_labels,
            created_at=_parse_created(container.get("Created")),
            handle=handle,
        )

    # -- reaching a run --------------------------------------------------------------

    def endpoint(self, handle: RunHandle, port: int) -> str:
        completed = run_docker(
            [
                "container",
                "inspect",
                "--format",
                "{{json .State.Running}} {{json .NetworkSettings.Networks}}",
                # Sidecar: the agent container shares this one's network namespace.
                handle.details.get(ENVIRONMENT_DETAIL, handle.name),
            ]
        )
        if completed.returncode != 0:
            raise BackendError(
                f"The run {handle.run_id} has no container: {failure_reason(completed)}",
                backend=self.name,
                run_id=handle.run_id,
            )
        running, _, networks_json = completed.stdout.strip().partition(" ")
        if running != "true":
            raise BackendError(
                f"The run {handle.run_id} is not running", backend=self.name, run_id=handle.run_id
            )
        networks: dict[str, Any] = json.loads(networks_json or "{}") or {}
        preferred = handle.details.get("network")
        ordered = sorted(networks.items(), key=lambda item: item[0] != preferred)
        for _network, settings in ordered:
            address = (settings or {}).get("IPAddress")
            if address:
                return f"http://{address}:{port}"
        raise BackendError(
            f"The container of {handle.run_id} has no address on a Docker network",
            backend=self.name,
            run_id=handle.run_id,
        )

    def exec_argv(
        self,
        handle: RunHandle,
        command: Sequence[str],
        *,
        user: str | None = None,
        workdir: str | None = None,
        tty: bool = False,
        stdin: bool = False,
        env_names: Sequence[str] = (),
    ) -> list[str]:
        # Sidecar: the environment container, which has the task, the tree and the daemon.
        return cli_exec_argv(
            DOCKER,
            handle.details.get(ENVIRONMENT_DETAIL, handle.name),
            command,
            user=user,
            workdir=workdir,
            tty=tty,
            stdin=stdin,
            env_names=env_names,
            backend=self.name,
            run_id=handle.run_id,
        )


def _not_ended(handle: RunHandle, timeout: float | None) -> TimeoutError:
    return TimeoutError(f"The run {handle.run_id} did not end within {timeout} s")


def _owned_by(tree: Path, uid: int) -> bool:
    """True when everything in tree (links themselves, not followed) is uid's; False
    also when a part of it cannot be read, which only another owner can cause."""
    unreadable: list[OSError] = []
    try:
        if tree.lstat().st_uid != uid:
            return False
        for folder, folders, files in os.walk(tree, onerror=unreadable.append):
            for entry in (*folders, *files):
                if os.lstat(os.path.join(folder, entry)).st_uid != uid:
                    return False
    except OSError:
        return False
    return not unreadable


def _container_exists(name: str) -> bool:
    return run_docker(["container", "inspect", "--format", "{{.Id}}", name]).returncode == 0


def _own_process(handle: RunHandle) -> subprocess.Popen[bytes] | None:
    """The docker run process of handle, if this process started it."""
    with _processes_lock:
        process = _processes.get(handle.name)
    if process is None or str(process.pid) != handle.details.get("pid"):
        return None
    return process


def _forget(name: str) -> None:
    with _processes_lock:
        _processes.pop(name, None)


def _follow_output(name: str) -> None:
    """Copy a detached container's output onto this process's, as it is written."""
    try:
        follower = subprocess.Popen(
            [DOCKER, "logs", "--follow", name], stdin=subprocess.DEVNULL, start_new_session=True
        )
    except FileNotFoundError:
        raise images.docker_missing() from None
    with _processes_lock:
        _followers[name] = follower


def _end_follower(name: str) -> None:
    """Let the output follower of name finish (its container has exited), then reap it."""
    with _processes_lock:
        follower = _followers.pop(name, None)
    if follower is not None:
        try:
            follower.wait(5)
        except subprocess.TimeoutExpired:
            _end_process(follower)


def _discard(process: subprocess.Popen[bytes] | None, name: str) -> None:
    """Leave nothing of a start that failed: the docker run (or start) process and any
    container made for it. Best effort: the start's own error is the one to report."""
    if process is not None:
        _end_process(process)
    with contextlib.suppress(UserError, OSError):
        _remove_container(name)


def _discard_network(run_id: str) -> None:
    """Remove the network made for a start that failed. Best effort, as _discard."""
    with contextlib.suppress(UserError, OSError, BackendError):
        docker_network.remove(run_id)


def _end_process(process: subprocess.Popen[bytes]) -> None:
    """Terminate a docker run process if it still runs, and reap it."""
    if process.poll() is None:
        process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
