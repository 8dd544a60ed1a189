"""The Podman backend: runs on the Podman that the `podman` command is set up for
(rootful as root, rootless as any other user), through its CLI.

It is written against the public extension API only (ssebench.extensions and
ssebench.image_layers; tests/unit/test_podman_imports.py checks that), as a third-party
backend would be, and mirrors what the Docker backend does where Podman can:

- images: the layers of ssebench.image_layers, built with `podman build`; an image
  whose cache-key label matches is not built again. Podman reaches no registry on a
  machine like the build machine, so a base image must be in its store already
  (scripts/seed-podman-base-image.sh copies the one Docker has);
- a run's container runs in the foreground of a `podman run` process, whose output
  reaches this process's stdout and stderr as it is written; the run directory and its
  archive are bind-mounted (results come back through the shared mount);
- the environment reaches podman by name only (`--env NAME`, the value in the podman
  process's own environment), never on a command line;
- restricted egress: a network of the run's own made with `--internal` (no route out
  of the host); open egress: Podman's default network;
- hardening: every capability dropped but the entrypoint's, no-new-privileges, memory,
  CPU and process limits; and explicit ulimits, because Podman otherwise asks for the
  host's maximum open files and processes, which a process with lower hard limits may
  not grant ("error setting rlimit type 7");
- a sidecar run is two containers and two volumes labelled ssebench.run=<pair ID>: the
  environment container (with the run's labels, which list_runs finds) detached, and
  the agent container in the foreground in its network namespace. The handle names the
  agent container and carries the pair's ID and the environment container's name.

Runs are found again by their labels; the backend holds no state between calls but the
`podman run` processes this process started, kept so wait can reap them.
"""

from ssebench.backends.podman.backend import PodmanBackend

__all__ = ["PodmanBackend"]
