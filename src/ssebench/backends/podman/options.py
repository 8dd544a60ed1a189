"""The options of a run's containers: names, hardening, limits, mounts, environment
and labels, as `podman run` takes them."""

from __future__ import annotations

import os
import re
import resource
import socket
import time
from collections.abc import Mapping

from ssebench.extensions import (
    DEADLINE_LABEL,
    KEEP_LABEL,
    RESULTS_OWNER_VARIABLE,
    RUNNER_HOST_LABEL,
    RUNNER_PID_LABEL,
    BackendError,
    Mount,
    TaskResources,
)

# The capabilities the entrypoint needs (chown the tree, switch to the run's users, end
# the agent's processes); everything else is dropped. The same set as the Docker backend.
TASK_CAPABILITIES = ("CHOWN", "DAC_OVERRIDE", "FOWNER", "SETGID", "SETUID", "KILL")
MEMORY = "4g"
PIDS = 4096
# The ulimits a container asks for: at most these, and never more than this process's
# own hard limits, which are all an unprivileged or confined Podman may grant. Processes:
# the pids limit anyway; a build's RUN step is refused nproc at this process's own hard
# limit (buildah runs it under a lower one).
MAX_OPEN_FILES = 65536
MAX_PROCESSES = PIDS
# Past the run's own timeout by this much, prune may treat a run whose runner died as
# abandoned (ssebench.deadline).
DEADLINE_SLACK_SECONDS = 1800
_NAME_FORBIDDEN = re.compile(r"[^a-zA-Z0-9_.-]")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def container_name(run_id: str) -> str:
    """ssebench-<run id> within Podman's name rules; also the run's network's name."""
    return f"ssebench-{_NAME_FORBIDDEN.sub('-', run_id)}"


def agent_container_name(pair_id: str) -> str:
    return f"{container_name(pair_id)}-agent"


def _limit(resource_kind: int, ceiling: int) -> int:
    _soft, hard = resource.getrlimit(resource_kind)
    return ceiling if hard == resource.RLIM_INFINITY else min(hard, ceiling)


def ulimit_argv() -> list[str]:
    """Explicit open-file and process limits no higher than this process's own."""
    files = _limit(resource.RLIMIT_NOFILE, MAX_OPEN_FILES)
    processes = _limit(resource.RLIMIT_NPROC, MAX_PROCESSES)
    return ["--ulimit", f"nofile={files}:{files}", "--ulimit", f"nproc={processes}:{processes}"]


def hardening_argv(task: TaskResources | None = None) -> list[str]:
    """Capabilities, limits (what the task asks for, else ours) and ulimits."""
    task = task or TaskResources()
    argv = ["--cap-drop", "ALL"]
    for capability in TASK_CAPABILITIES:
        argv += ["--cap-add", capability]
    # At most the machine's CPUs: Podman, like Docker, refuses more.
    cores = os.cpu_count() or 1
    cpus = f"{min(task.cpus, cores):g}" if task.cpus else str(min(2, cores))
    memory = f"{task.memory_mb}m" if task.memory_mb else MEMORY
    limits = ["--memory", memory, "--cpus", cpus, "--pids-limit", str(PIDS)]
    return [*argv, "--security-opt", "no-new-privileges", *limits, *ulimit_argv()]


def mount_option(mount: Mount) -> str:
    """The --mount value of mount. Podman splits it at commas, so a source or target
    holding one is refused rather than quoted."""
    for value in (mount.source, mount.target):
        if "," in value or "\n" in value:
            raise BackendError(f"Podman cannot mount a path with a comma: {value!r}")
    fields = [f"type={mount.kind}", f"source={mount.source}", f"target={mount.target}"]
    if mount.read_only:
        fields.append("readonly")
    return ",".join(fields)


def rootless() -> bool:
    """Podman runs rootless for any user but root."""
    return os.geteuid() != 0


def env_by_name(env: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
    """The `--env NAME` options for env and the environment of the podman process that
    carries the values: none of them is ever on a command line.

    Rootless, this user is the container's root: the run directory goes back to 0:0 as
    the container sees it (RESULTS_OWNER_VARIABLE), which is this user outside.
    """
    if rootless() and RESULTS_OWNER_VARIABLE in env:
        env = {**env, RESULTS_OWNER_VARIABLE: "0:0"}
    argv: list[str] = []
    for name in env:
        if not ENV_NAME.match(name):
            raise BackendError(f"The environment variable name {name!r} is not valid")
        argv += ["--env", name]
    return argv, {**os.environ, **env}


def owner_labels(timeout: int, keep: bool) -> dict[str, str]:
    """Who started the run and until when it may run, as `ssebench runs prune` reads
    them (the backend's duty: docs/writing-a-backend.md, "Run labels")."""
    return {
        DEADLINE_LABEL: str(int(time.time()) + timeout + DEADLINE_SLACK_SECONDS),
        RUNNER_HOST_LABEL: socket.gethostname(),
        RUNNER_PID_LABEL: str(os.getpid()),
        KEEP_LABEL: str(keep).lower(),
    }


def label_argv(labels: Mapping[str, str]) -> list[str]:
    argv: list[str] = []
    for key, value in labels.items():
        argv += ["--label", f"{key}={value}"]
    return argv
