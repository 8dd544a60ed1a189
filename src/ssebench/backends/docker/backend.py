"""The Docker backend's class: images, starting a run, waiting for it, stopping it,
reaching it; the rest is delegated to the package's modules (see __init__.py)."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import socket
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from ssebench.backends.docker import engine, listing
from ssebench.backends.docker.commands import (
    CREATE_TIMEOUT_SECONDS,
    container_exists,
    docker_call,
    is_gone,
    remove_container,
)
from ssebench.backends.docker.names import (
    ARCHIVE_DETAIL,
    ENVIRONMENT_DETAIL,
    IMAGE_DETAIL,
    PAIR_DETAIL,
    agent_container_name,
    container_name,
)
from ssebench.errors import BackendError, UserError
from ssebench.extensions import (
    DEADLINE_LABEL,
    HELPER_LABEL,
    KEEP_LABEL,
    PAIR_LABEL,
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
    SidecarPair,
    container_endpoint,
    end_process,
    environment_container,
    seconds_left,
)
from ssebench.host.docker_cli import DOCKER, docker_missing, failure_reason, run_docker
from ssebench.host.lazy_modules import LazyModule

if TYPE_CHECKING:
    from ssebench.backends.docker import archive, children, cleanup, containers, cpu_shares, logs
    from ssebench.backends.docker import network as docker_network
    from ssebench.image_layers import ImageBuilder
    from ssebench.images import builds
    from ssebench.images import output as image_output
else:
    # Imported on first use: `ssebench runs list` and `runs inspect` need only listing,
    # and these (image builds, the proxy's network, tar extraction) would double their
    # start-up (docs/performance.md, "Docker side: start-up and listing").
    builds = LazyModule("ssebench.images.builds")
    image_output = LazyModule("ssebench.images.output")
    archive = LazyModule("ssebench.backends.docker.archive")
    children = LazyModule("ssebench.backends.docker.children")
    cleanup = LazyModule("ssebench.backends.docker.cleanup")
    containers = LazyModule("ssebench.backends.docker.containers")
    cpu_shares = LazyModule("ssebench.backends.docker.cpu_shares")
    logs = LazyModule("ssebench.backends.docker.logs")
    docker_network = LazyModule("ssebench.backends.docker.network")

__all__ = ["DockerBackend"]


# docker run's own status when the daemon refused to create or start the container.
DOCKER_RUN_FAILED = 125
# The copy container of a reference run lives seconds; past this, prune removes it
# even if its runner still runs.
COPY_DEADLINE_SECONDS = 3600


class DockerBackend(Backend):
    """Runs on the local Docker daemon. network overrides the network of every run."""

    name = "docker"
    builds_images = True
    supports_exec = listing.SUPPORTS_EXEC
    exec_program = DOCKER

    def __init__(self, network: str | None = None, *, quiet_builds: bool = False) -> None:
        self.network = network
        self.quiet_builds = quiet_builds

    # -- images ----------------------------------------------------------------------

    def prepare_images(self, request: ImageRequest) -> Images:
        output = image_output.BuildOutput(quiet=self.quiet_builds)
        if request.prebuilt:
            return builds.prepare_images(request, output)
        # The public layer API, as every backend that builds images uses it.
        from ssebench import image_layers  # here: only a build needs it, not `runs list`

        return image_layers.build_images(
            request, build=builds.docker_builder(output), image_labels=builds.docker_image_labels
        )

    def image_builder(self) -> ImageBuilder:
        return builds.docker_image_builder(image_output.BuildOutput(quiet=self.quiet_builds))

    def copy_from_image(
        self,
        image: str,
        path: str,
        dest: Path,
        platform: str | None,
        *,
        labels: Mapping[str, str] | None = None,
    ) -> None:
        """Create a container of image, copy the file out, remove the container: Engine
        API requests where the API is at hand (the copy a tar of the one file), else
        docker create, docker cp and docker rm. The container carries the run's labels
        and this runner's (host, process, a deadline), so a runner killed before it
        removed the container leaves one that `ssebench runs prune` finds and removes."""
        argv = ["create", "--pull", "never"]
        query = "?"
        if platform:
            argv += ["--platform", platform]
            query += f"platform={quote(platform, safe='')}&"
        if labels and labels.get(RUN_ID_LABEL):
            name = f"{container_name(labels[RUN_ID_LABEL])}-copy"
            argv += ["--name", name]
            query += f"name={quote(name, safe='')}"
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
        # A command is given so images without CMD can be created; it never runs. The
        # Engine API's create never pulls, as --pull never.
        completed = docker_call(
            "POST",
            f"/containers/create{query}",
            [*argv, image, "ssebench-copy"],
            body={"Image": image, "Cmd": ["ssebench-copy"], "Labels": helper_labels},
            output=_created_id,
        )
        if completed.returncode != 0:
            raise RuntimeError(f"Cannot create a container of {image}: {failure_reason(completed)}")
        container = completed.stdout.strip()
        try:
            if _copy_file_by_api(container, path, dest):
                return
            completed = run_docker(["cp", f"{container}:{path}", str(dest)])
            if completed.returncode != 0:
                raise RuntimeError(
                    f"Cannot copy {path} out of {image}: {failure_reason(completed)}"
                )
        finally:
            remove_container(container)

    # -- a run -----------------------------------------------------------------------

    def _run_network(self, spec: RunSpec) -> str:
        """Make the run's own network (network.py) and return its name; the
        network given to the backend instead, if one was."""
        if self.network:
            return self.network
        network = docker_network.RunNetwork(
            run_id=spec.run_id,
            open_egress=spec.network.egress == "open",
            needs_proxy=docker_network.needs_proxy(spec.env),
            labels=containers.owner_labels(spec, time.time()),
        )
        return docker_network.create(network)

    def start(self, spec: RunSpec) -> RunHandle:
        if spec.mode == "sidecar" and spec.sidecar is None:
            raise UserError("A sidecar run needs its RunSpec.sidecar (the environment container)")
        # The archive goes to a volume of the run's own, whatever spec.archive names: the
        # host gets it through collect_results' safe copy only.
        volume = archive.create_archive_volume(spec)
        spec = dataclasses.replace(
            spec, archive=Mount(target=spec.archive.target, source=volume, kind="volume")
        )
        try:
            limits = self._limits(spec)
            if spec.sidecar is not None:
                handle = self._start_sidecar(spec, spec.sidecar, limits)
            else:
                handle = self._start_single(spec, limits)
        except BaseException:
            cpu_shares.SHARES.release(spec.run_id)
            with contextlib.suppress(UserError, OSError, BackendError):
                archive.remove_archive(spec.run_id)
            raise
        cpu_shares.SHARES.started(spec.run_id)
        details = {**handle.details, ARCHIVE_DETAIL: volume, IMAGE_DETAIL: spec.image}
        return dataclasses.replace(handle, details=details)

    def _start_single(self, spec: RunSpec, limits: containers.ResourceLimits) -> RunHandle:
        name = container_name(spec.run_id)
        process: subprocess.Popen[bytes] | None = None
        with containers.env_pipe(spec.env) as (env_file, env_descriptor):
            try:
                network = self._run_network(spec)
                argv = containers.run_argv(
                    spec,
                    name=name,
                    network=network,
                    env_file=env_file,
                    now=time.time(),
                    limits=limits,
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
                    raise docker_missing() from None
                self._wait_until_created(process, name, spec.run_id)
            except BaseException:
                children.discard(process, name)
                children.discard_network(spec.run_id)
                raise
        children.remember(name, process)
        return self._handle(spec, name, process, network)

    def _start_sidecar(
        self, spec: RunSpec, pair: SidecarPair, limits: containers.ResourceLimits
    ) -> RunHandle:
        """Volumes, then the environment container (detached), then the agent container
        in the foreground. On any failure everything of the pair is removed again."""
        environment_name = container_name(pair.run_id)
        agent_name = agent_container_name(pair.run_id)
        process: subprocess.Popen[bytes] | None = None
        with (
            containers.env_pipe({**pair.shared_env(), **pair.environment_env()}) as environment_env,
            containers.env_pipe({**spec.env, **pair.shared_env()}) as agent_env,
        ):
            try:
                network = self._run_network(spec)
                environment_argv, agent_argv = containers.sidecar_argvs(
                    spec,
                    pair,
                    network=network,
                    env_files=(environment_env[0], agent_env[0]),
                    now=time.time(),
                    limits=limits,
                )
                # The runner's labels: a runner killed before the environment container
                # exists leaves volumes that prune removes (remove_abandoned).
                volume_labels = {
                    **containers.owner_labels(spec, time.time()),
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
                children.follow_output(environment_name)
                try:
                    process = subprocess.Popen(
                        agent_argv,
                        stdin=subprocess.DEVNULL,
                        start_new_session=True,
                        pass_fds=(agent_env[1],),
                    )
                except FileNotFoundError:
                    raise docker_missing() from None
                self._wait_until_created(process, agent_name, spec.run_id)
            except BaseException:
                if process is not None:
                    end_process(process)
                with contextlib.suppress(UserError, OSError, BackendError):
                    cleanup.remove_pair(pair.run_id)
                children.discard_network(spec.run_id)
                raise
        children.remember(agent_name, process)
        pair_details = {PAIR_DETAIL: pair.run_id, ENVIRONMENT_DETAIL: environment_name}
        return self._handle(spec, agent_name, process, network, pair_details)

    @staticmethod
    def _limits(spec: RunSpec) -> containers.ResourceLimits:
        """The limits of the run's containers: its CPUs sized with the other runs of this
        process (cpu_shares), unless SSEBENCH_DOCKER_CPUS or the task sets them."""
        limits = containers.ResourceLimits.from_environment(spec.resources)
        if not cpu_shares.SHARES.managed() or spec.resources.cpus:
            return limits
        names = [container_name(spec.run_id)]
        if spec.sidecar is not None:
            names.append(agent_container_name(spec.run_id))
        return dataclasses.replace(limits, cpus=cpu_shares.SHARES.admit(spec.run_id, names))

    def _handle(
        self,
        spec: RunSpec,
        name: str,
        process: subprocess.Popen[bytes],
        network: str,
        pair_details: Mapping[str, str] | None = None,
    ) -> RunHandle:
        """The handle of a run whose container name was started by the docker run
        process: its pid (wait reaps it), keep, the run's network, a sidecar run's
        pair_details, and the run directory's owner details."""
        return RunHandle(
            backend=self.name,
            run_id=spec.run_id,
            name=name,
            details={
                "pid": str(process.pid),
                "keep": str(spec.keep).lower(),
                "network": network,
                **(pair_details or {}),
                **containers.owner_details(spec),
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

    def _wait_until_created(self, process: subprocess.Popen[bytes], name: str, run_id: str) -> None:
        deadline = time.monotonic() + CREATE_TIMEOUT_SECONDS
        delay = 0.02
        while True:
            if container_exists(name):
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
            # Each ask is a request (not a process) where the Engine API is at hand: a
            # short cap keeps the start from sleeping long past the container's creation.
            delay = min(delay * 2, 0.1)

    def wait(self, handle: RunHandle, timeout: float | None) -> int:
        # Only a run this process started is this process's to clean up (a wait on
        # another's, found by its labels, must leave it as it is).
        started_here = children.own_process(handle) is not None
        status = self._wait_run(handle, timeout)
        cpu_shares.SHARES.release(handle.run_id)  # the other runs grow into its CPUs
        single = ENVIRONMENT_DETAIL not in handle.details
        if started_here and single and handle.details.get("keep") != "true":
            # Its container has ended: cleanup's slowest part can start now, beside the
            # archive's read-out (collect_results), and cleanup waits for it.
            cleanup.begin_removal(handle)
        return status

    def _wait_run(self, handle: RunHandle, timeout: float | None) -> int:
        environment = handle.details.get(ENVIRONMENT_DETAIL)
        if environment is None:
            return self._wait_container(handle, timeout)
        # Sidecar: the agent container's status is the run's, and the run has ended
        # once the environment container has graded what the agent left and exited.
        started = time.monotonic()
        status = self._wait_container(handle, timeout)
        remaining = seconds_left(timeout, started)
        environment_handle = RunHandle(backend=self.name, run_id=handle.run_id, name=environment)
        try:
            self._docker_wait(environment_handle, remaining)
        except BackendError:
            if container_exists(environment):
                raise
            # Gone already: it exited and docker removed it (--rm).
        children.end_follower(environment)
        return status

    def _wait_container(self, handle: RunHandle, timeout: float | None) -> int:
        process = children.own_process(handle)
        if process is not None:
            started = time.monotonic()
            try:
                status = process.wait(timeout)
            except subprocess.TimeoutExpired:
                raise _not_ended(handle, timeout) from None
            # A negative status: docker run itself was killed, not the container,
            # which the daemon may still be running.
            if status >= 0:
                children.forget(handle.name)
                if status == 0:
                    return status
                # At least a second: enough for the daemon's answer about a container
                # that has exited, which is the rule here.
                remaining = seconds_left(timeout, started, at_least=1.0)
                return self._daemons_status(handle, status, remaining)
        return self._docker_wait(handle, timeout)

    def _daemons_status(self, handle: RunHandle, docker_runs: int, timeout: float | None) -> int:
        """The container's exit status as the daemon has it, docker_runs (docker run's own
        status, not 0) where the daemon has removed the container already (--rm) or
        cannot be asked. docker run's status is not always the container's: with its
        stdout's reader gone (`ssebench run ... | head`) it exits 1 at its first write of
        the container's output ("write /dev/stdout: broken pipe"), and the container runs
        on; the wait then lasts until it ends. A 0 is always the container's own, so a
        run that passes asks nothing more."""
        answer = _engine_wait(handle, timeout)
        daemons = None if answer is None else _exit_status(*answer)
        return docker_runs if daemons is None else daemons

    def _docker_wait(self, handle: RunHandle, timeout: float | None) -> int:
        """The container's exit status: the Engine API's blocking wait where the API is
        at hand, else `docker wait` (the same request, made by the CLI)."""
        answer = _engine_wait(handle, timeout)
        if answer is None:
            return self._cli_wait(handle, timeout)
        exit_status = _exit_status(*answer)
        if exit_status is not None:
            return exit_status
        raise BackendError(
            f"Cannot wait for {handle.name}: {engine.error_message(answer[1])}",
            backend=self.name,
            run_id=handle.run_id,
        )

    def _cli_wait(self, handle: RunHandle, timeout: float | None) -> int:
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

    def collect_results(self, handle: RunHandle, dest: Path) -> None:
        archive.collect_results(handle, dest)

    def logs(self, handle: RunHandle, follow: bool = False) -> Iterator[str]:
        environment = handle.details.get(ENVIRONMENT_DETAIL)
        if environment is None:
            return logs.container_logs(handle.name, handle.run_id, follow)
        return logs.pair_logs(handle.run_id, (environment, handle.name), follow)

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
        if not is_gone(completed):
            raise BackendError(
                f"Cannot stop {handle.name}: {failure_reason(completed)}",
                backend=self.name,
                run_id=handle.run_id,
            )
        # No container (yet): end a docker run of ours that has not created it.
        process = children.own_process(handle)
        if process is not None and process.poll() is None:
            process.terminate()

    def cleanup(self, handle: RunHandle) -> None:
        cpu_shares.SHARES.release(handle.run_id)  # a run whose wait did not end
        if handle.details.get("keep") == "true":
            return
        try:
            cleanup.remove_run(handle)
        finally:
            archive.remove_archive(handle.run_id)

    def egress_enforced(self, image: str) -> bool | None:
        # Restricted runs are on an internal network, which dockerd itself enforces;
        # open ones are refused where their firewall rules cannot be installed.
        return True

    def remove_abandoned(self, now: float, host: str) -> list[str]:
        return cleanup.remove_abandoned(now, host)

    # -- finding runs ----------------------------------------------------------------

    def list_runs(self, labels: Mapping[str, str]) -> list[RunInfo]:
        return listing.list_runs(labels)

    # -- reaching a run --------------------------------------------------------------

    def endpoint(self, handle: RunHandle, port: int) -> str:
        completed = run_docker(
            [
                "container",
                "inspect",
                "--format",
                "{{json .State.Running}} {{json .NetworkSettings.Networks}}",
                environment_container(handle),
            ]
        )
        if completed.returncode != 0:
            raise BackendError(
                f"The run {handle.run_id} has no container: {failure_reason(completed)}",
                backend=self.name,
                run_id=handle.run_id,
            )
        running, _, networks_json = completed.stdout.strip().partition(" ")
        return container_endpoint(
            handle,
            port,
            running=running == "true",
            networks=json.loads(networks_json or "{}"),
            backend=self.name,
            platform="Docker",
            preferred=handle.details.get("network"),
        )

    def exec_container(self, handle: RunHandle) -> str:
        return environment_container(handle)


# A file copied out of an image through the API is read whole: a task's patch is small.
COPY_BY_API_MAX_BYTES = 16 * 1024 * 1024


def _copy_file_by_api(container: str, path: str, dest: Path) -> bool:
    """`docker cp container:path dest` of one regular file, as the Engine API's
    GET /containers/{id}/archive (a tar of it); False, having written nothing, for
    anything else (no API, an error, a directory or link, a large answer, dest a
    folder), which `docker cp` then copies or explains."""
    import io
    import tarfile

    target = f"/containers/{quote(container, safe='')}/archive?path={quote(path, safe='')}"
    try:
        status, answer = engine.request("GET", target, max_bytes=COPY_BY_API_MAX_BYTES)
    except engine.EngineUnavailable:
        return False
    if status != 200 or dest.is_dir():
        return False
    try:
        with tarfile.open(fileobj=io.BytesIO(answer), mode="r:") as archive:
            members = archive.getmembers()
            if len(members) != 1 or not members[0].isfile():
                return False
            extracted = archive.extractfile(members[0])
            content = extracted.read() if extracted is not None else None
    except tarfile.TarError:
        return False
    if content is None:
        return False
    dest.write_bytes(content)
    dest.chmod(members[0].mode & 0o777)  # as docker cp keeps it
    return True


def _created_id(answer: bytes) -> str:
    """The container ID of POST /containers/create's answer, as `docker create` prints it."""
    try:
        created = json.loads(answer)
    except ValueError:
        return ""
    return str(created.get("Id", "")) if isinstance(created, dict) else ""


def _engine_wait(handle: RunHandle, timeout: float | None) -> tuple[int, bytes] | None:
    """The Engine API's answer to a wait for the container, None where the API is not at
    hand; TimeoutError (_not_ended) after timeout."""
    path = f"/containers/{quote(handle.name, safe='')}/wait"
    try:
        return engine.request("POST", path, timeout=timeout)
    except engine.EngineTimeout:
        raise _not_ended(handle, timeout) from None
    except engine.EngineUnavailable:
        return None


def _exit_status(status: int, answer: bytes) -> int | None:
    """The StatusCode of an Engine API wait's answer; None for any other answer (the
    container is gone: 404)."""
    try:
        waited = json.loads(answer) if status == 200 else None
    except ValueError:
        return None
    if isinstance(waited, dict) and isinstance(waited.get("StatusCode"), int):
        return int(waited["StatusCode"])
    return None


def _not_ended(handle: RunHandle, timeout: float | None) -> TimeoutError:
    return TimeoutError(f"The run {handle.run_id} did not end within {timeout} s")
