# The agent runtime: the task-independent base of a sidecar run's agent container.
# An agent layer (agent.Dockerfile) goes on top of it; the task, its hidden tests and
# its toolchain stay in the environment container. See docs/image-layers.md.
#
# Build context: a directory that holds only
#   ssebench_runtime/   a copy of src/ssebench/runtime (without __pycache__)
# Build args:
#   BASE_IMAGE         a Debian-based image (default debian:bookworm-slim)
#   RUNTIME_VERSION    ssebench_runtime.__version__, for the label (optional)
# Works with BuildKit and with the classic builder (no COPY --chmod, no heredocs).
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}

USER root

# What every agent may rely on, as in a task image: python3 (the runtime and agents
# written in Python) and git (the tree is a git repository).
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      python3 git ca-certificates \
 && rm -rf /var/lib/apt/lists/*

# The image's environment, as the tool layer records it, for the agent's environment.
RUN mkdir -p /opt/ssebench/bin /opt/ssebench/lib \
 && env -0 > /opt/ssebench/image.env

# The agent's user, uid 1000 as in the tool layer: the files it writes in the shared
# source volume belong to the same uid in both containers. Its home is private to it.
RUN set -eu; \
    groupadd --gid 1000 model; \
    useradd --uid 1000 --gid model --home-dir /home/model --no-create-home \
      --shell /bin/bash model; \
    install -d -o model -g model -m 0700 /home/model

COPY ssebench_runtime/ /opt/ssebench/lib/ssebench_runtime/

# /var/lib/ssebench holds the results mount, root-only as in the environment container;
# /run/ssebench is where the sockets volume is mounted.
RUN set -eu; \
    find /opt/ssebench/lib -name __pycache__ -prune -exec rm -rf {} +; \
    cp /opt/ssebench/lib/ssebench_runtime/launcher.py /opt/ssebench/bin/ssebench-entrypoint; \
    python3 -m compileall -q /opt/ssebench/lib; \
    chown -R root:root /opt/ssebench; \
    chmod -R u=rwX,go=rX /opt/ssebench; \
    chmod 0755 /opt/ssebench/bin/ssebench-entrypoint; \
    install -d -o root -g root -m 0700 /var/lib/ssebench; \
    install -d -o root -g root -m 0755 /run/ssebench

ARG RUNTIME_VERSION=unknown
LABEL ssebench.layer=agent-runtime \
      ssebench.runtime-version=${RUNTIME_VERSION}
# --agent-side selects the agent container's role; the agent layer's CMD follows it.
ENTRYPOINT ["python3", "/opt/ssebench/bin/ssebench-entrypoint", "--agent-side"]
CMD []
