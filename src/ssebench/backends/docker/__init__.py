"""The Docker backend: runs on the daemon the `docker` CLI is set up for.

Every call goes through the docker CLI (never a shell, never the Python SDK), so the
user's docker contexts, DOCKER_HOST and credentials apply as they do on the command
line; a few reads (listing runs, whether a container exists, the volumes and the
containers that carry a label) go instead to the Engine API on the daemon's Unix
socket (engine.py) when it is the daemon the CLI would use, since the CLI costs a
process per call there. The run's container runs in
the foreground of a `docker run` process, whose output reaches this process's stdout
and stderr as it is written. The run's environment reaches docker through an env file
that is a pipe the docker command inherits (/dev/fd/N): no value of it is ever on a
command line or on disk, so no kill at any moment can leave it behind.

The backend holds no state between calls: a RunHandle names the container, and runs
are found again by their labels. The one exception is an optimisation inside a single
process: the `docker run` processes this process started, kept so wait can reap them
(children.py).

A sidecar run is two containers and two volumes, all labelled ssebench.run=<pair ID>.
The environment container (ssebench-<pair ID>, the one with the run's labels, which
list_runs finds) starts detached first; its output is followed onto this process's
output. The agent container (ssebench-<pair ID>-agent) then runs in the foreground and
shares the environment container's network namespace, so the agent reaches the daemon
on 127.0.0.1 and endpoint() reaches both from the environment container's address. A
sidecar run's handle names the agent container (the one the run waits for) and carries
the pair's ID and the environment container's name, from which stop, cleanup and logs
find the rest.

Every run is on a network of its own (network.py), made before its container and
removed with it; the proxy joins it under the same name for every run, and an
open-egress run's network is kept off private ranges and this host by firewall rules
(firewall.py).

The agent's archive (/tmp/sse-archive) is a volume of the run's own,
ssebench-<run id>-archive, never a folder of the host (archive.py): nothing the agent
makes there reaches the host as it made it. After the run, collect_results streams the
volume out (a tar stream, the Engine API's or `docker cp`'s, of a helper container that
mounts it and never starts) into the
run directory's archive/ through the same extractor as the Kubernetes read-out, with the
same limits (links, FIFOs and devices skipped, setuid stripped, size, file and depth
caps). The volume and the helper carry ssebench.archive-of=<run id>, by which cleanup
removes them, and the runner's host and process, by which prune removes those whose
run is gone (cleanup.py). During the run the dialog is read from the run's daemon.

The modules: backend (the Backend class: images, start, wait, stop, reaching a run),
names (container, volume and handle detail names), containers (the `docker run`
commands, limits, the environment pipe), children (the docker processes this process
started), commands (small docker calls shared by the others), archive, logs, listing
(finding runs again), cleanup (removing a run, prune), network and firewall, engine
(the Engine API client).
"""

from __future__ import annotations

# typing.TYPE_CHECKING without importing typing: see cli/main.py.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ssebench.backends.docker.backend import DockerBackend

__all__ = ["DockerBackend"]


def __getattr__(name: str) -> Any:
    # DockerBackend on its first use: `ssebench runs list` imports the listing module
    # alone, and with this package's import that would bring in the whole backend.
    if name == "DockerBackend":
        from ssebench.backends.docker.backend import DockerBackend

        return DockerBackend
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
