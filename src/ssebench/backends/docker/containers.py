"""The `docker run` commands of a run: hardening, limits, labels, mounts, and the
environment as an env file that is a pipe (never on a command line or on disk)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import socket
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from ssebench.backends.docker.names import (
    OWNER_DETAIL,
    RESULTS_DETAIL,
    agent_container_name,
    container_name,
)
from ssebench.errors import BackendError, UserError
from ssebench.extensions import (
    DEADLINE_LABEL,
    KEEP_LABEL,
    PAIR_LABEL,
    PARALLEL_RUNS_VARIABLE,
    RESULTS_OWNER_LABEL,
    RUNNER_HOST_LABEL,
    RUNNER_PID_LABEL,
    Mount,
    RunSpec,
    SidecarPair,
    TaskResources,
)
from ssebench.host.docker_cli import DOCKER

# The container enforces the run's timeout itself; past this margin a janitor may
# treat a container whose runner died as abandoned.
DEADLINE_SLACK_SECONDS = 1800
# The capabilities the entrypoint needs (chown the tree, switch to the run's users, end
# the agent's processes); everything else is dropped.
TASK_CAPABILITIES = ("CHOWN", "DAC_OVERRIDE", "FOWNER", "SETGID", "SETUID", "KILL")
MEMORY_VARIABLE = "SSEBENCH_DOCKER_MEMORY"
CPUS_VARIABLE = "SSEBENCH_DOCKER_CPUS"
PIDS_VARIABLE = "SSEBENCH_DOCKER_PIDS"
DEFAULT_MEMORY = "4g"
DEFAULT_CPUS = 2
DEFAULT_PIDS = 4096
# A restricted run has no way out, and Docker's DNS answers a name outside the run's
# network only when the lookup times out: 5 s, twice, by default. One try of a second
# makes what cannot work fail at once (hidden tests that fetch their data while graded
# waited minutes on lookups); the names of the run's network (the proxy's) are
# answered at once all the same.
RESTRICTED_DNS_OPTIONS = ("timeout:1", "attempts:1")
# What an environment pipe is asked to hold (Linux lets a user ask for up to 1 MiB).
ENV_PIPE_BYTES = 1 << 20
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


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
    def from_environment(cls, task: TaskResources | None = None) -> ResourceLimits:
        """The user's variables, else what the task asks for, else the defaults."""
        task = task or TaskResources()
        cpus = (
            os.environ.get(CPUS_VARIABLE)
            or (task_cpus(task.cpus, os.cpu_count()) if task.cpus else None)
            or default_cpus(os.cpu_count(), parallel_runs())
        )
        memory = (
            os.environ.get(MEMORY_VARIABLE)
            or (f"{task.memory_mb}m" if task.memory_mb else None)
            or DEFAULT_MEMORY
        )
        pids = os.environ.get(PIDS_VARIABLE) or str(DEFAULT_PIDS)
        if not pids.isdigit() or int(pids) < 1:
            raise UserError(f"{PIDS_VARIABLE} must be a positive number of processes")
        return cls(memory=memory, cpus=cpus, pids=int(pids))

    def argv(self) -> list[str]:
        return [
            "--memory",
            self.memory,
            "--cpus",
            self.cpus,
            "--pids-limit",
            str(self.pids),
        ]


def task_cpus(asked: float, cores: int | None) -> str:
    """A task's CPUs as --cpus: no more than the machine has (the engine refuses a
    container more CPUs than there are; entrypoint.log records what it got)."""
    return f"{min(asked, float(cores or 1)):g}"


def parallel_runs() -> int:
    """$SSEBENCH_PARALLEL_RUNS, else 1. Raises UserError for a value that is not a
    positive whole number."""
    value = os.environ.get(PARALLEL_RUNS_VARIABLE) or "1"
    if not value.isdigit() or int(value) < 1:
        raise UserError(
            f"{PARALLEL_RUNS_VARIABLE} must be a positive whole number of runs, such as 2; "
            f"it is {value!r}"
        )
    return int(value)


def default_cpus(cores: int | None, runs_at_once: int) -> str:
    """A run's --cpus when SSEBENCH_DOCKER_CPUS is not set: its share of the machine's
    cores when runs_at_once run together, so that `eval --jobs N` does not give N runs
    more CPUs than the machine has; at least one CPU (a run is never starved below one
    core), at most DEFAULT_CPUS (one run does not take a large machine)."""
    share = (cores or 1) / max(1, runs_at_once)
    return f"{round(min(float(DEFAULT_CPUS), max(1.0, share)), 2):g}"


def hardening_argv() -> list[str]:
    """Only the capabilities the entrypoint needs to set the run up and switch users;
    the agent's processes then end with none (the runtime drops them)."""
    argv = ["--cap-drop", "ALL"]
    for capability in TASK_CAPABILITIES:
        argv += ["--cap-add", capability]
    return [*argv, "--security-opt", "no-new-privileges"]


def docker_run_argv(
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
    # A container in another's network namespace (sidecar's agent) shares its resolver.
    if spec.network.egress == "restricted" and not network.startswith("container:"):
        for option in RESTRICTED_DNS_OPTIONS:
            argv += ["--dns-opt", option]
    argv += hardening_argv() + (limits or ResourceLimits.from_environment(spec.resources)).argv()
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


def owner_labels(spec: RunSpec, now: float) -> dict[str, str]:
    """Who started the run and until when it may run: what prune judges it by."""
    deadline = int(now) + spec.timeout + DEADLINE_SLACK_SECONDS
    return {
        DEADLINE_LABEL: str(deadline),
        RUNNER_HOST_LABEL: socket.gethostname(),
        RUNNER_PID_LABEL: str(os.getpid()),
    }


def owner_details(spec: RunSpec) -> dict[str, str]:
    """What cleanup needs to give the run directory back to an unprivileged runner."""
    owner = results_owner()
    if owner is None:
        return {}
    return {OWNER_DETAIL: owner, RESULTS_DETAIL: spec.results.source}


def listed_labels(spec: RunSpec, now: float) -> dict[str, str]:
    """The labels of the container the web UI lists: the run's, plus the backend's."""
    labels = {**spec.labels, **owner_labels(spec, now), KEEP_LABEL: str(spec.keep).lower()}
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
    return docker_run_argv(
        spec,
        name=name,
        image=spec.image,
        network=network,
        env_file=env_file,
        labels=listed_labels(spec, now),
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
    limits = limits or ResourceLimits.from_environment(spec.resources)
    environment_name = container_name(pair.run_id)
    shared = pair.shared_mounts(spec.results, spec.archive)
    environment = docker_run_argv(
        spec,
        name=environment_name,
        image=pair.environment_image,
        network=network,
        env_file=env_files[0],
        labels={**listed_labels(spec, now), PAIR_LABEL: pair.run_id},
        mounts=shared,
        limits=limits,
        detach=True,
    )
    agent = docker_run_argv(
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
