"""The public API for extension authors: what a backend receives, returns and raises.

The runner describes a run as a RunSpec and drives a Backend through the methods below
and nothing else; see docs/writing-a-backend.md. Everything that crosses the interface is
a frozen dataclass. RunSpec.env holds the run's model key, so it is left out of every
repr, and a backend must never put it into a log line or an error message.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from ssebench import labels as _labels  # the strings (see there why)
from ssebench.errors import BackendError, ImageUnavailableError, ResultsGoneError, UserError

# The container CLI helpers this interface offers backends (defined in host/, where the
# host's own CLI plumbing also uses them).
from ssebench.host.container_cli import ContainerCli as ContainerCli
from ssebench.host.container_cli import cli_exec_argv as cli_exec_argv
from ssebench.host.container_cli import cli_failure as cli_failure
from ssebench.host.container_cli import end_process as end_process
from ssebench.host.container_cli import run_cli as run_cli
from ssebench.host.container_cli import seconds_left as seconds_left
from ssebench.host.container_cli import wait_until_created as wait_until_created

__all__ = [
    "AGENT_LABEL",
    "ARCHIVE_TARGET",
    "DEADLINE_LABEL",
    "ENVIRONMENT_DETAIL",
    "HELPER_LABEL",
    "IMAGE_REFERENCE_PATCH",
    "KEEP_LABEL",
    "LISTED_RUNS",
    "MODEL_LABEL",
    "PAIR_LABEL",
    "PARALLEL_RUNS_VARIABLE",
    "REFERENCE_PATCH_TARGET",
    "REFERENCE_RUN_LABEL",
    "RESULTS_LABEL",
    "RESULTS_OWNER_LABEL",
    "RESULTS_OWNER_VARIABLE",
    "RESULTS_TARGET",
    "RUNNER_HOST_LABEL",
    "RUNNER_PID_LABEL",
    "RUN_ID_LABEL",
    "SOCKETS_TARGET",
    "TASK_ID_LABEL",
    "WEBUI_LABEL",
    "Backend",
    "BackendError",
    "BuildContext",
    "ContainerCli",
    "ContextSource",
    "Egress",
    "ImageBuilder",
    "ImageLabels",
    "ImageLayer",
    "ImageRequest",
    "ImageUnavailableError",
    "Images",
    "Mode",
    "Mount",
    "MountKind",
    "NetworkPolicy",
    "ProxyEndpoint",
    "ResultsGoneError",
    "RunHandle",
    "RunInfo",
    "RunSpec",
    "RunState",
    "SidecarPair",
    "TaskResources",
    "UserError",
    "cli_exec_argv",
    "cli_failure",
    "container_endpoint",
    "end_process",
    "environment_container",
    "prebuilt_images",
    "run_cli",
    "seconds_left",
    "wait_until_created",
]

Mode = Literal["sandbox", "sidecar"]
MountKind = Literal["bind", "volume"]
Egress = Literal["restricted", "open"]
RunState = Literal["created", "running", "exited", "unknown"]

# Where the container contract puts things (docs/container-contract.md).
RESULTS_TARGET = "/var/lib/ssebench/results"
ARCHIVE_TARGET = "/tmp/sse-archive"
REFERENCE_PATCH_TARGET = "/reference/patch.diff"
SOCKETS_TARGET = "/run/ssebench"
# Where a task's reference patch is in its images (copy_from_image gets it from there).
IMAGE_REFERENCE_PATCH = "/ssebench/task/reference.patch"

# --- run labels (spec, "Labels"; docs/writing-a-backend.md, "Run labels") -------------
# Set by the runner, in RunSpec.labels: a backend puts them on the object the run waits
# for (the environment container in sidecar mode) and list_runs selects on them.
RUN_ID_LABEL = _labels.RUN_ID
WEBUI_LABEL = _labels.WEBUI  # "true" on every run; `ssebench runs list` selects on it
TASK_ID_LABEL = _labels.TASK_ID
MODEL_LABEL = _labels.MODEL  # the model, or "none"
AGENT_LABEL = _labels.AGENT
RESULTS_LABEL = _labels.RESULTS  # the run directory on the runner's host
REFERENCE_RUN_LABEL = _labels.REFERENCE_RUN  # "true" for a reference run only
# Set by the backend, from SidecarPair.run_id: both containers and both volumes of a
# sidecar run, so that stop and cleanup find the whole pair.
PAIR_LABEL = _labels.PAIR
# Set by the backend on everything a run makes, for `ssebench runs prune`, which removes
# a run whose deadline passed or whose runner process is gone (see abandoned_reason in
# the CLI): when the run must have ended by itself even if its runner died (Unix time,
# seconds: start + RunSpec.timeout + slack), and which process started it.
DEADLINE_LABEL = _labels.DEADLINE
RUNNER_HOST_LABEL = _labels.RUNNER_HOST  # socket.gethostname() of the runner
RUNNER_PID_LABEL = _labels.RUNNER_PID  # os.getpid() of the runner
# Set by the backend: "true" for a run started with RunSpec.keep. Prune never removes
# it; `ssebench runs remove` does.
KEEP_LABEL = _labels.KEEP
# Set by the backend on a short-lived container of a run that is not the run itself
# (copy_from_image's), beside the run's labels, so prune finds it and lists skip it.
HELPER_LABEL = _labels.HELPER
# Set by the backend when the runner is not root (uid:gid): the container makes the run
# directory root's, and whoever removes the run gives it back to this owner.
RESULTS_OWNER_LABEL = _labels.RESULTS_OWNER
# In RunSpec.env when the runner is not root: uid:gid, as the container sees them, to
# whom the entrypoint gives the run directory back at the end (the container makes it
# root's while it runs). A backend whose containers map IDs (rootless Podman: this
# user is the container's root) rewrites it.
RESULTS_OWNER_VARIABLE = "SSE_RESULTS_OWNER"
# In the runner's environment: how many runs it runs at once (`ssebench eval` sets it to
# --jobs; a user who starts several `ssebench run` side by side may set it). A backend
# may size a run's default CPU limit by it, so that parallel runs do not oversubscribe
# the machine (the Docker backend does, with the runs it sees start and end:
# docs/docker.md).
PARALLEL_RUNS_VARIABLE = "SSEBENCH_PARALLEL_RUNS"

# What `ssebench runs list` asks list_runs for.
LISTED_RUNS = _labels.LISTED_RUNS


@dataclass(frozen=True)
class Mount:
    """A place in the container (target) and where its content comes from (source).

    kind="bind": source is a path on the runner's host. A backend with no access to
    that host does not use it as a path: it gives the container storage of its own at
    the target and, for an artifact, the file's content, which read_content() returns
    (the runner and the backend run in the same process, on the runner's host).
    kind="volume": source is the name of a volume of the backend's platform.
    """

    target: str
    source: str
    kind: MountKind = "bind"
    read_only: bool = False

    def read_content(self) -> bytes:
        """The bytes of a bind-mounted file, for backends that ship it themselves.

        Raises UserError when the mount is a volume or the file cannot be read.
        """
        if self.kind != "bind":
            raise UserError(f"Mount {self.target} is a volume; it has no file content to read")
        try:
            return Path(self.source).read_bytes()
        except OSError as error:
            raise UserError(
                f"Cannot read {self.source} for {self.target}: {error.strerror}"
            ) from None


@dataclass(frozen=True)
class NetworkPolicy:
    """Where the run may connect to.

    restricted: the LiteLLM proxy (proxy_host:proxy_port) and nothing else.
    open: the proxy and the internet (--egress open).
    """

    egress: Egress = "restricted"
    proxy_host: str | None = None
    proxy_port: int | None = None


@dataclass(frozen=True)
class SidecarPair:
    """The second container of a sidecar run and what the two share.

    The environment container (environment_image) holds the task and the daemon; it
    starts first and runs until the agent container (RunSpec.image) exits. Both mount
    the two run-scoped volumes, the source tree (at source_dir) and the daemon's sockets,
    plus the run directory and its archive. The agent container never mounts the task's
    own files. run_id names the pair: both containers and both volumes carry it as the
    ssebench.run label.
    """

    run_id: str
    environment_image: str
    source_dir: str
    volumes: tuple[str, str]
    env: Mapping[str, str] = field(default_factory=dict, repr=False)

    @property
    def source_volume(self) -> str:
        return self.volumes[0]

    @property
    def sockets_volume(self) -> str:
        return self.volumes[1]

    def shared_env(self) -> dict[str, str]:
        """The environment both containers get: the run's env plus the pair's layout."""
        return {
            **self.env,
            "SSE_MODE": "sidecar",
            "SSE_SOURCE_DIR": self.source_dir,
            "SSE_SOCKETS_DIR": SOCKETS_TARGET,
        }

    def environment_env(self) -> dict[str, str]:
        """What the environment container alone gets, on top of shared_env()."""
        return {"SSE_SIDECAR_ROLE": "environment"}

    def shared_mounts(self, results: Mount, archive: Mount) -> tuple[Mount, ...]:
        """The four mounts both containers share: source tree, sockets, results, archive."""
        return (
            Mount(target=self.source_dir, source=self.source_volume, kind="volume"),
            Mount(target=SOCKETS_TARGET, source=self.sockets_volume, kind="volume"),
            results,
            archive,
        )


@dataclass(frozen=True)
class TaskResources:
    """What a task asks of its container (an imported Harbor task's [environment] cpus
    and memory_mb); None: the backend's own limit. A limit the user set for the backend
    (SSEBENCH_DOCKER_CPUS, SSEBENCH_K8S_RESOURCES, ...) comes first."""

    cpus: float | None = None
    memory_mb: int | None = None


@dataclass(frozen=True)
class RunSpec:
    """Everything a backend needs to carry out one run.

    env holds a secret (the run's model key): it is not in repr, and a backend must not
    log it or put it into an error message.
    """

    run_id: str
    task_name: str
    mode: Mode
    image: str
    results: Mount
    archive: Mount
    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    artifacts: tuple[Mount, ...] = ()
    network: NetworkPolicy = field(default_factory=NetworkPolicy)
    platform: str | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    timeout: int = 3600
    keep: bool = False
    sidecar: SidecarPair | None = None
    resources: TaskResources = field(default_factory=TaskResources)


@dataclass(frozen=True)
class RunHandle:
    """What a backend needs to control a run again; returned by start and in RunInfo.

    name is the platform's name of the object the run waits for (a container, a Job);
    details carries backend-specific strings (a namespace, a container ID...).
    """

    backend: str
    run_id: str
    name: str
    details: Mapping[str, str] = field(default_factory=dict)


# In RunHandle.details of a sidecar run on a container CLI: the environment container's
# name (handle.name is the agent container's). environment_container(handle) reads it.
ENVIRONMENT_DETAIL = "environment"


@dataclass(frozen=True)
class RunInfo:
    """A run found by its labels, running or not."""

    run_id: str
    name: str
    state: RunState
    exit_code: int | None
    image: str
    labels: Mapping[str, str]
    created_at: str | None
    handle: RunHandle


@dataclass(frozen=True)
class ImageRequest:
    """What prepare_images needs to know to make a run's images available.

    task_dir is the task's folder on the runner's host (None with a catalog and
    prebuilt); agent_dir is the agent's folder (its Dockerfile context).
    """

    task_id: str
    dataset: str
    agent: str
    agent_version: str
    mode: Mode = "sandbox"
    prebuilt: bool = False
    registry: str = "ssebench"
    tool_version: str = "1"
    platform: str | None = None
    task_dir: Path | None = None
    agent_dir: Path | None = None
    rebuild: bool = False


@dataclass(frozen=True)
class Images:
    """The images of a run: run is the one the run waits for; environment is the
    environment container's image in sidecar mode, else None."""

    run: str
    environment: str | None = None


@dataclass(frozen=True)
class ProxyEndpoint:
    """A backend's own LiteLLM proxy.

    host_url: where ssebench run reaches it to create the run's key.
    service_url: what the run's container gets as SSE_BASE_URL.
    """

    host_url: str
    service_url: str


def prebuilt_images(request: ImageRequest) -> Images:
    """The published image names of a run (spec, "Prebuilt images").

    sandbox: <registry>/agent-<agent>/<task-id>:<agent version>
    sidecar: <registry>/agent-<agent>/sidecar:<agent version> (the agent container) and
             <registry>/tool-sidecar/<task-id>:<tool version> (the environment container)
    """
    registry = request.registry.rstrip("/")
    if request.mode == "sidecar":
        return Images(
            run=f"{registry}/agent-{request.agent}/sidecar:{request.agent_version}",
            environment=f"{registry}/tool-sidecar/{request.task_id}:{request.tool_version}",
        )
    return Images(run=f"{registry}/agent-{request.agent}/{request.task_id}:{request.agent_version}")


def environment_container(handle: RunHandle) -> str:
    """The container that has a run's task, tree and daemon, for exec_container and
    endpoint: a sidecar run's environment container (details[ENVIRONMENT_DETAIL]; the
    agent container shares its network namespace), else handle.name."""
    return handle.details.get(ENVIRONMENT_DETAIL, handle.name)


def container_endpoint(
    handle: RunHandle,
    port: int,
    *,
    running: bool,
    networks: Mapping[str, Any] | None,
    backend: str,
    platform: str,
    preferred: str | None = None,
) -> str:
    """http://address:port of a run's container, from what the CLI's `container
    inspect` says of it: running (State.Running) and networks (NetworkSettings.Networks,
    by network name). The address on the network preferred if it has one, else the
    first network's that has one. A helper for endpoint of a backend on a CLI.

    Raises BackendError when the container does not run, or has no address on a network
    (platform names the networks' kind in the message: "Docker").
    """
    if not running:
        raise BackendError(
            f"The run {handle.run_id} is not running", backend=backend, run_id=handle.run_id
        )
    ordered = sorted((networks or {}).items(), key=lambda item: item[0] != preferred)
    for _network, settings in ordered:
        address = (settings or {}).get("IPAddress")
        if address:
            return f"http://{address}:{port}"
    raise BackendError(
        f"The container of {handle.run_id} has no address on a {platform} network",
        backend=backend,
        run_id=handle.run_id,
    )


class ContextSource(Protocol):
    """What an ImageLayer is made from (a layer of ssebench.image_layers' plan)."""

    def write_context(self, folder: Path) -> None: ...


@dataclass(frozen=True)
class ImageLayer:
    """One image build (ssebench.image_layers plans them).

    kind: case, tool, agent, agent-runtime (a sidecar agent's base) or agent-install
    (an image the agent layer copies files from). image: the name:tag to build.
    labels: to put on the image (they hold the cache key). platform: linux/<arch> or
    None for the builder's own.
    """

    kind: str
    image: str
    dockerfile: Path
    build_args: Mapping[str, str]
    labels: Mapping[str, str]
    cache_key: str
    platform: str | None
    layer: ContextSource = field(repr=False, compare=False)

    def write_context(self, folder: Path) -> None:
        """Lay the build context out in folder, which must be empty."""
        self.layer.write_context(folder)


# Build one layer from its context folder; an image's labels (None: no such image).
BuildContext = Callable[[ImageLayer, Path], None]
ImageLabels = Callable[[str], Mapping[str, str] | None]


@dataclass(frozen=True)
class ImageBuilder:
    """What a backend that builds images lends to `ssebench images publish` and
    `ssebench build-case` (Backend.image_builder()).

    build, image_labels: as for ssebench.image_layers.build_images. tag(image, name):
    give the image in the backend's store a second name. push(name): push the image so
    named to its registry. store: the image store's name in messages ("Docker",
    "Podman"). Each raises UserError on failure.
    """

    build: BuildContext
    image_labels: ImageLabels
    tag: Callable[[str, str], None]
    push: Callable[[str], None]
    store: str


class Backend(abc.ABC):
    """Carries out runs on a container platform.

    A backend is created without arguments and holds no state between calls: what it
    needs to control a run is in the RunHandle that start returns, and it finds runs
    again by their labels. Messages of the errors it raises never contain RunSpec.env.
    """

    name: str = ""
    builds_images: bool = False
    supports_exec: bool = False
    exec_program: str | None = None
    """A container CLI that speaks docker's exec ("docker", "podman"): the default
    exec_argv then runs `<exec_program> exec ... <exec_container(handle)> <command>`."""
    default_parallel_runs: int | None = None
    """How many runs `ssebench eval` runs at once when --jobs is not given. None: the
    number of CPU cores of this machine, right for a local daemon; a cluster backend
    sets a larger number (16, say), since its runs do not use this machine's cores."""
    stop_grace: float = 30.0
    """The grace, in seconds, that ssebench run gives a run it stops on Ctrl-C or
    SIGTERM, before the backend kills its containers."""

    @abc.abstractmethod
    def prepare_images(self, request: ImageRequest) -> Images:
        """Make the run's images available and return their names.

        With request.prebuilt, pull or check the published images (prebuilt_images);
        otherwise build the layers. Raises UserError (or ImageUnavailableError) when a
        layer fails to build or an image cannot be found.
        """

    @abc.abstractmethod
    def copy_from_image(
        self,
        image: str,
        path: str,
        dest: Path,
        platform: str | None,
        *,
        labels: Mapping[str, str] | None = None,
    ) -> None:
        """Copy the file at path out of image into dest without starting a run.

        labels: the run's labels (RunSpec.labels). A backend that makes something for
        the copy (a container, a pod) puts them on it, with the backend's own, so that
        a runner killed during the copy leaves nothing `ssebench runs prune` cannot find.
        Raises RuntimeError on failure.
        """

    @abc.abstractmethod
    def start(self, spec: RunSpec) -> RunHandle:
        """Start the run and return once its containers exist.

        From then on the container's output goes to this process's stdout and stderr as
        it is written. Raises BackendError, and then nothing of the run is left behind.
        """

    @abc.abstractmethod
    def wait(self, handle: RunHandle, timeout: float | None) -> int:
        """Wait for the container the run waits for to exit; return its exit status.

        A stopped container ends with 128 plus the signal: 143 for the SIGTERM of stop.
        Raises TimeoutError when timeout seconds pass first (None waits for ever), and
        BackendError when the run cannot be watched.
        """

    @abc.abstractmethod
    def logs(self, handle: RunHandle, follow: bool = False) -> Iterator[str]:
        """Yield the container's output, stdout and stderr together, a line at a time.

        With follow, until the container exits. Raises BackendError.
        """

    @abc.abstractmethod
    def collect_results(self, handle: RunHandle, dest: Path) -> None:
        """Put the run's results into dest, the run directory, once the container exited.

        dest already holds the runner's skeleton (archive/ and an empty result.json);
        the files the container wrote replace it. Raises BackendError; raises
        ResultsGoneError when the results went before they could be read (the runner
        then records the run as one without a grade).
        """

    @abc.abstractmethod
    def stop(self, handle: RunHandle, grace: float) -> None:
        """Ask the run's containers to stop; kill them after grace seconds. The
        containers stay (cleanup or `ssebench runs remove` removes them).

        Safe to call at any time, also before the container has started, and twice.
        """

    @abc.abstractmethod
    def cleanup(self, handle: RunHandle) -> None:
        """Remove what the run left: containers, volumes, other objects. Best effort:
        never raises for what is already gone. Does nothing for a run started with keep.
        """

    def image_builder(self) -> ImageBuilder | None:
        """For a backend with builds_images: its own callables for the image layers
        (ImageBuilder, also importable from ssebench.image_layers: build a context, read
        an image's labels, tag and push), which `ssebench images publish` and `ssebench
        build-case` use.
        The default: None (those commands refuse the backend).
        """
        return None

    def egress_enforced(self, image: str) -> bool | None:
        """Whether this platform applies a run's NetworkPolicy (spec.network) at all:
        True, False, or None when the backend cannot tell. The runner asks before each
        run, records the answer in summary.json (config.egress_enforced) and warns when
        it is False. image is the run's, for a check that needs a container; a check
        that costs time is made once per process. Raises BackendError when the check
        itself fails. The default: None.
        """
        return None

    def remove_abandoned(self, now: float, host: str) -> list[str]:
        """For prune: remove what runs that are gone left behind apart from their
        containers (a Docker run's archive volume), and name it. now is Unix time,
        host this machine's name. The default: nothing."""
        return []

    @abc.abstractmethod
    def list_runs(self, labels: Mapping[str, str]) -> list[RunInfo]:
        """The runs that carry every label in labels, running or not.

        Raises BackendError when the platform cannot be asked.
        """

    def inspect_run(self, run_id: str) -> RunInfo | None:
        """The run with that ssebench.run-id label, or None.

        Raises BackendError when several runs carry the ID (the caller must choose).
        """
        runs = self.list_runs({RUN_ID_LABEL: run_id})
        if not runs:
            return None
        if len(runs) > 1:
            raise BackendError(
                f"{len(runs)} runs have the ID {run_id!r}", backend=self.name, run_id=run_id
            )
        return runs[0]

    def endpoint(self, handle: RunHandle, port: int) -> str:
        """http://host:port at which this machine reaches port of the run's container.

        The URL stays valid after this process exits and carries no credentials.
        Raises BackendError when the run is not running or the backend cannot do it.
        """
        raise BackendError(
            f"The {self.name or type(self).__name__} backend cannot reach a run's ports",
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
        """The argument vector of a local command that runs command in the container.

        command reaches the container as separate arguments, never through a shell.
        env_names are passed by name: the container gets the caller's values, which
        never appear in the vector. Raises BackendError when not supported.

        The default: with exec_program set (a CLI that speaks docker's exec: "docker",
        "podman"), cli_exec_argv for the container exec_container(handle) names;
        without it, BackendError.
        """
        if self.exec_program is not None:
            return cli_exec_argv(
                self.exec_program,
                self.exec_container(handle),
                command,
                user=user,
                workdir=workdir,
                tty=tty,
                stdin=stdin,
                env_names=env_names,
                backend=self.name,
                run_id=handle.run_id,
            )
        raise BackendError(
            f"The {self.name or type(self).__name__} backend cannot run commands in a run",
            backend=self.name,
            run_id=handle.run_id,
        )

    def exec_container(self, handle: RunHandle) -> str:
        """The container that the default exec_argv runs commands in: handle.name."""
        return handle.name

    def proxy(self) -> ProxyEndpoint | None:
        """The backend's own LiteLLM proxy, or None for the local Compose stack."""
        return None
