"""PodmanBackend: the interface on top of the podman command (see the package's
docstring for what a run is on Podman)."""

from __future__ import annotations

import contextlib
import json
import math
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from ssebench import image_layers
from ssebench.backends.podman import images
from ssebench.backends.podman.cli import (
    BACKEND_NAME,
    PODMAN,
    failure_reason,
    is_gone,
    podman_missing,
    run_podman,
)
from ssebench.backends.podman.listing import PAIR_DETAIL, list_runs
from ssebench.backends.podman.logs import container_logs, end_follower, follow_output
from ssebench.backends.podman.options import (
    agent_container_name,
    container_name,
    env_by_name,
    hardening_argv,
    label_argv,
    mount_option,
    owner_labels,
)
from ssebench.extensions import (
    ENVIRONMENT_DETAIL,
    HELPER_LABEL,
    PAIR_LABEL,
    RUN_ID_LABEL,
    Backend,
    BackendError,
    ImageRequest,
    Images,
    Mount,
    RunHandle,
    RunInfo,
    RunSpec,
    SidecarPair,
    UserError,
    container_endpoint,
    end_process,
    environment_container,
    prebuilt_images,
    seconds_left,
    wait_until_created,
)

COPY_DEADLINE_SECONDS = 3600
CREATE_TIMEOUT_SECONDS = 300.0
# podman run's status when it could not create or start the container.
RUN_FAILED_STATUSES = (125, 126, 127)
OPEN_NETWORK = "podman"
# The `podman run` processes this process started, by container name.
_processes: dict[str, subprocess.Popen[bytes]] = {}
_lock = threading.Lock()


class PodmanBackend(Backend):
    """Runs on Podman through its CLI."""

    name = BACKEND_NAME
    builds_images = True
    supports_exec = True
    exec_program = PODMAN

    # -- images ----------------------------------------------------------------------

    def prepare_images(self, request: ImageRequest) -> Images:
        if request.prebuilt:
            published = prebuilt_images(request)
            for image in (published.environment, published.run):
                if image is not None:
                    images.pull_image(image, request.platform)
            return published
        return image_layers.build_images(
            request, build=images.build_layer, image_labels=images.image_labels
        )

    def image_builder(self) -> image_layers.ImageBuilder:
        return images.image_builder()

    def copy_from_image(
        self,
        image: str,
        path: str,
        dest: Path,
        platform: str | None,
        *,
        labels: Mapping[str, str] | None = None,
    ) -> None:
        helper_labels = {
            **(labels or {}),
            **owner_labels(COPY_DEADLINE_SECONDS, keep=False),
            HELPER_LABEL: "copy",
        }
        argv = ["create", "--pull=never", *label_argv(helper_labels)]
        if platform:
            argv += ["--platform", platform]
        # A command is given so images without CMD can be created; it never runs.
        completed = run_podman([*argv, image, "ssebench-copy"])
        if completed.returncode != 0:
            raise RuntimeError(f"Cannot create a container of {image}: {failure_reason(completed)}")
        container = completed.stdout.strip().splitlines()[-1]
        try:
            copied = run_podman(["cp", f"{container}:{path}", str(dest)])
            if copied.returncode != 0:
                raise RuntimeError(f"Cannot copy {path} out of {image}: {failure_reason(copied)}")
        finally:
            run_podman(["rm", "--force", container])

    # -- a run -----------------------------------------------------------------------

    def _network(self, spec: RunSpec) -> str:
        """Restricted: a network of the run's own with no route out; open: the default."""
        if spec.network.egress == "open":
            return OPEN_NETWORK
        network = container_name(spec.run_id)
        labels = {RUN_ID_LABEL: spec.run_id, **owner_labels(spec.timeout, spec.keep)}
        completed = run_podman(["network", "create", "--internal", *label_argv(labels), network])
        if completed.returncode != 0:
            raise BackendError(
                f"Cannot create the network {network}: {failure_reason(completed)}",
                backend=self.name,
                run_id=spec.run_id,
            )
        return network

    def _run_argv(
        self,
        spec: RunSpec,
        *,
        name: str,
        image: str,
        network: str,
        env: Mapping[str, str],
        labels: Mapping[str, str],
        mounts: Sequence[Mount],
        detach: bool = False,
    ) -> tuple[list[str], dict[str, str]]:
        env_argv, environment = env_by_name(env)
        # Never --rm: a stopped container stays (`runs stop` leaves it in place); the
        # runner's cleanup, `runs remove` or prune removes it.
        argv = [PODMAN, "run", "--name", name, *(["--detach"] if detach else [])]
        argv += ["--pull=never", "--network", network, *hardening_argv(spec.resources), *env_argv]
        if spec.platform:
            argv += ["--platform", spec.platform]
        argv += label_argv(labels)
        for mount in mounts:
            argv += ["--mount", mount_option(mount)]
        return [*argv, image], environment

    def start(self, spec: RunSpec) -> RunHandle:
        if spec.mode == "sidecar" and spec.sidecar is None:
            raise UserError("A sidecar run needs its RunSpec.sidecar (the environment container)")
        for image in (spec.image, spec.sidecar.environment_image if spec.sidecar else None):
            if image is not None and run_podman(["image", "exists", image]).returncode != 0:
                raise BackendError(
                    f"The image {image} is not in Podman's image store; prepare_images "
                    "builds it (or load it with `podman load`)",
                    backend=self.name,
                    run_id=spec.run_id,
                )
        network = self._network(spec)
        try:
            if spec.sidecar is not None:
                return self._start_sidecar(spec, spec.sidecar, network)
            return self._start_single(spec, network)
        except BaseException:
            self._remove_network(spec.run_id)
            raise

    def _listed_labels(self, spec: RunSpec) -> dict[str, str]:
        return {**spec.labels, **owner_labels(spec.timeout, spec.keep)}

    def _start_single(self, spec: RunSpec, network: str) -> RunHandle:
        name = container_name(spec.run_id)
        argv, environment = self._run_argv(
            spec,
            name=name,
            image=spec.image,
            network=network,
            env=spec.env,
            labels=self._listed_labels(spec),
            mounts=(spec.results, spec.archive, *spec.artifacts),
        )
        process = self._foreground(argv, environment, name, spec.run_id)
        return RunHandle(
            backend=self.name,
            run_id=spec.run_id,
            name=name,
            details={"pid": str(process.pid), "keep": str(spec.keep).lower()},
        )

    def _start_sidecar(self, spec: RunSpec, pair: SidecarPair, network: str) -> RunHandle:
        """Volumes, the environment container (detached), then the agent container in
        the foreground, in the environment container's network namespace."""
        environment_name = container_name(pair.run_id)
        agent_name = agent_container_name(pair.run_id)
        shared = pair.shared_mounts(spec.results, spec.archive)
        try:
            volume_labels = {PAIR_LABEL: pair.run_id, **owner_labels(spec.timeout, spec.keep)}
            for volume in pair.volumes:
                created = run_podman(["volume", "create", *label_argv(volume_labels), volume])
                if created.returncode != 0:
                    raise BackendError(
                        f"Cannot create the volume {volume}: {failure_reason(created)}",
                        backend=self.name,
                        run_id=spec.run_id,
                    )
            argv, environment = self._run_argv(
                spec,
                name=environment_name,
                image=pair.environment_image,
                network=network,
                env={**pair.shared_env(), **pair.environment_env()},
                labels={**self._listed_labels(spec), PAIR_LABEL: pair.run_id},
                mounts=shared,
                detach=True,
            )
            detached = run_podman(argv[1:], timeout=CREATE_TIMEOUT_SECONDS, env=environment)
            if detached.returncode != 0:
                raise BackendError(
                    f"podman run failed for {environment_name}: {failure_reason(detached)}",
                    backend=self.name,
                    run_id=spec.run_id,
                )
            follow_output(environment_name)
            argv, environment = self._run_argv(
                spec,
                name=agent_name,
                image=spec.image,
                network=f"container:{environment_name}",
                env={**spec.env, **pair.shared_env()},
                labels={PAIR_LABEL: pair.run_id},
                mounts=(*shared, *spec.artifacts),
            )
            # --network container: replaces the run's network, whose options go.
            process = self._foreground(argv, environment, agent_name, spec.run_id)
        except BaseException:
            self._remove_pair(pair.run_id)
            raise
        return RunHandle(
            backend=self.name,
            run_id=spec.run_id,
            name=agent_name,
            details={
                "pid": str(process.pid),
                "keep": str(spec.keep).lower(),
                PAIR_DETAIL: pair.run_id,
                ENVIRONMENT_DETAIL: environment_name,
            },
        )

    def _foreground(
        self, argv: Sequence[str], environment: Mapping[str, str], name: str, run_id: str
    ) -> subprocess.Popen[bytes]:
        """Start `podman run` in the foreground (its output is ours) and return once its
        container exists. Raises BackendError, having removed what it made."""
        try:
            # A session of its own: the terminal's Ctrl-C reaches ssebench only, which
            # stops the run itself.
            process = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, start_new_session=True, env=dict(environment)
            )
        except FileNotFoundError:
            raise podman_missing() from None
        try:
            wait_until_created(
                process,
                lambda: _exists(name),
                name=name,
                program=PODMAN,
                failed_statuses=RUN_FAILED_STATUSES,
                timeout=CREATE_TIMEOUT_SECONDS,
                backend=self.name,
                run_id=run_id,
            )
        except BaseException:
            end_process(process)
            run_podman(["rm", "--force", name])
            raise
        with _lock:
            _processes[name] = process
        return process

    def wait(self, handle: RunHandle, timeout: float | None) -> int:
        started = time.monotonic()
        status = self._wait_container(handle, handle.name, timeout)
        environment = handle.details.get(ENVIRONMENT_DETAIL)
        if environment is not None:
            # The run has ended once the environment container has graded and exited.
            remaining = seconds_left(timeout, started)
            with contextlib.suppress(BackendError):  # gone already: it exited (--rm)
                self._podman_wait(handle, environment, remaining)
            end_follower(environment)
        return status

    def _wait_container(self, handle: RunHandle, name: str, timeout: float | None) -> int:
        with _lock:
            process = _processes.get(name)
        if process is not None and str(process.pid) == handle.details.get("pid"):
            started = time.monotonic()
            try:
                status = process.wait(timeout)
            except subprocess.TimeoutExpired:
                raise TimeoutError(f"The run {handle.run_id} did not end in {timeout} s") from None
            if status == 0:
                return status
            if status > 0:
                # At least a second: enough to ask about a container that has exited.
                remaining = seconds_left(timeout, started, at_least=1.0)
                return self._containers_status(handle, name, status, remaining)
        return self._podman_wait(handle, name, timeout)

    def _containers_status(
        self, handle: RunHandle, name: str, podman_runs: int, timeout: float | None
    ) -> int:
        """The container's exit status, or podman_runs (podman run's own, not 0) when the
        container cannot be asked (removed meanwhile by `ssebench runs remove`: runs are
        never --rm). With its stdout's reader gone (`ssebench run ... | head`), podman
        run exits 126 ("attaching to container ...: write /dev/stdout: broken pipe")
        while the container runs on: `podman wait` has its real status."""
        try:
            return self._podman_wait(handle, name, timeout)
        except BackendError:
            return podman_runs

    def _podman_wait(self, handle: RunHandle, name: str, timeout: float | None) -> int:
        try:
            completed = run_podman(["wait", name], timeout=timeout)
        except subprocess.TimeoutExpired:
            raise TimeoutError(f"The run {handle.run_id} did not end in {timeout} s") from None
        try:
            if completed.returncode == 0:
                return int(completed.stdout.split()[-1])
        except (ValueError, IndexError):
            pass
        raise BackendError(
            f"Cannot wait for {name}: {failure_reason(completed)}",
            backend=self.name,
            run_id=handle.run_id,
        )

    def logs(self, handle: RunHandle, follow: bool = False) -> Iterator[str]:
        """The container's output. Sidecar: the agent container's, then the environment
        container's (followed, with follow, as it runs until the run ends)."""
        environment = handle.details.get(ENVIRONMENT_DETAIL)
        if environment is None:
            return container_logs(handle.name, follow, missing_ok=False, run_id=handle.run_id)
        return self._pair_logs(handle, environment, follow)

    def _pair_logs(self, handle: RunHandle, environment: str, follow: bool) -> Iterator[str]:
        yield from container_logs(handle.name, False, missing_ok=True, run_id=handle.run_id)
        yield from container_logs(environment, follow, missing_ok=False, run_id=handle.run_id)

    def collect_results(self, handle: RunHandle, dest: Path) -> None:
        """Nothing to do: the run directory and its archive are bind mounts."""

    def stop(self, handle: RunHandle, grace: float) -> None:
        names = [handle.name, handle.details.get(ENVIRONMENT_DETAIL)]
        for name in (name for name in names if name):
            completed = run_podman(["stop", "--time", str(max(0, math.ceil(grace))), name])
            if completed.returncode != 0 and not is_gone(completed):
                raise BackendError(
                    f"Cannot stop {name}: {failure_reason(completed)}",
                    backend=self.name,
                    run_id=handle.run_id,
                )
        with _lock:
            process = _processes.get(handle.name)
        if process is not None and process.poll() is None and not _exists(handle.name):
            process.terminate()  # a podman run of ours that has not created it yet

    def cleanup(self, handle: RunHandle) -> None:
        if handle.details.get("keep") == "true":
            return
        with _lock:
            process = _processes.pop(handle.name, None)
        if process is not None:
            end_process(process)
        pair_id = handle.details.get(PAIR_DETAIL)
        if pair_id is not None:
            self._remove_pair(pair_id)
        else:
            removed = run_podman(["rm", "--force", "--volumes", handle.name])
            if removed.returncode != 0 and not is_gone(removed):
                raise BackendError(
                    f"Cannot remove {handle.name}: {failure_reason(removed)}",
                    backend=self.name,
                    run_id=handle.run_id,
                )
        self._remove_network(handle.run_id)

    def _remove_pair(self, pair_id: str) -> None:
        """The agent container, then the environment container, then the volumes."""
        environment = container_name(pair_id)
        end_follower(environment)
        for name in (agent_container_name(pair_id), environment):
            run_podman(["rm", "--force", "--volumes", name])
        selector = f"label={PAIR_LABEL}={pair_id}"
        listed = run_podman(["volume", "ls", "--quiet", "--filter", selector])
        volumes = listed.stdout.split()
        if volumes:
            removed = run_podman(["volume", "rm", "--force", *volumes])
            if removed.returncode != 0:
                raise BackendError(
                    f"Cannot remove the volumes of {pair_id}: {failure_reason(removed)}",
                    backend=self.name,
                    run_id=pair_id,
                )

    def _remove_network(self, run_id: str) -> None:
        """The run's own network, if it made one (restricted egress)."""
        selector = f"label={RUN_ID_LABEL}={run_id}"
        listed = run_podman(["network", "ls", "--quiet", "--filter", selector])
        for network in listed.stdout.split():
            run_podman(["network", "rm", "--force", network])

    def list_runs(self, labels: Mapping[str, str]) -> list[RunInfo]:
        return list_runs(labels)

    # -- reaching a run --------------------------------------------------------------

    def endpoint(self, handle: RunHandle, port: int) -> str:
        completed = run_podman(
            ["container", "inspect", "--format", "json", environment_container(handle)]
        )
        try:
            (container,) = json.loads(completed.stdout or "[]")
        except (json.JSONDecodeError, ValueError):
            raise BackendError(
                f"The run {handle.run_id} has no container: {failure_reason(completed)}",
                backend=self.name,
                run_id=handle.run_id,
            ) from None
        return container_endpoint(
            handle,
            port,
            running=bool((container.get("State") or {}).get("Running")),
            networks=(container.get("NetworkSettings") or {}).get("Networks"),
            backend=self.name,
            platform="Podman",
        )

    def exec_container(self, handle: RunHandle) -> str:
        return environment_container(handle)


def _exists(name: str) -> bool:
    return run_podman(["container", "exists", name]).returncode == 0
