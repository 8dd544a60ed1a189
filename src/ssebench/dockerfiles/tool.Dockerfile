# The tool layer: the ssebench runtime (entrypoint, daemon, evaluator) on a case image.
# See docs/container-contract.md for what the runtime does in the container.
#
# Build context: a directory that holds only
#   ssebench_runtime/   a copy of src/ssebench/runtime (without __pycache__)
# Build args:
#   BASE_IMAGE         the case image (required)
#   RUNTIME_VERSION    ssebench_runtime.__version__, for the label (optional)
# Works with BuildKit and with the classic builder (no COPY --chmod, no heredocs).
ARG BASE_IMAGE
FROM ${BASE_IMAGE}

USER root

# The case image's environment (toolchain variables such as GOPATH), recorded before
# this layer declares anything: the runtime gives it to the agent and to the task's
# commands, which otherwise get a clean environment. NUL-separated, as env -0 writes it.
RUN mkdir -p /opt/ssebench/bin /opt/ssebench/lib \
 && env -0 > /opt/ssebench/image.env

# The agent's user (model) and the task commands' user (sse-runner). An image that
# has them already keeps them; one whose uid is taken gets the next free uid (the
# runtime looks users up by name). Each gets its own home, private to it.
RUN set -eu; \
    shell=/bin/sh; [ -x /bin/bash ] && shell=/bin/bash; \
    ensure_user() { \
      name=$1; uid=$2; home=$3; \
      if ! id -u "$name" >/dev/null 2>&1; then \
        if getent passwd "$uid" >/dev/null; then \
          echo "tool layer: uid $uid is taken; $name gets another uid"; uid_option=""; \
        else uid_option="--uid $uid"; fi; \
        if ! getent group "$name" >/dev/null; then \
          if getent group "$uid" >/dev/null; then groupadd "$name"; \
          else groupadd --gid "$uid" "$name"; fi; \
        fi; \
        useradd $uid_option --gid "$name" --home-dir "$home" --no-create-home \
          --shell "$shell" "$name"; \
      fi; \
      home=$(getent passwd "$name" | cut -d: -f6); \
      if [ -z "$home" ] || [ "$home" = / ] || [ "$home" = /nonexistent ]; then \
        home=$3; usermod --home "$home" "$name"; \
      fi; \
      mkdir -p "$home"; \
      chown "$name:$(id -gn "$name")" "$home"; \
      chmod 0700 "$home"; \
    }; \
    ensure_user model 1000 /home/model; \
    ensure_user sse-runner 1001 /home/sse-runner

COPY ssebench_runtime/ /opt/ssebench/lib/ssebench_runtime/

# /var/lib/ssebench holds the results mount: root-only, so only root reaches the grade.
# /var/lib/ssebench-grade holds the root-only copy of the base commit and the scratch
# trees where task commands run. /run/ssebench holds the daemon's sockets.
RUN set -eu; \
    find /opt/ssebench/lib -name __pycache__ -prune -exec rm -rf {} +; \
    cp /opt/ssebench/lib/ssebench_runtime/launcher.py /opt/ssebench/bin/ssebench-entrypoint; \
    python3 -m compileall -q /opt/ssebench/lib; \
    chown -R root:root /opt/ssebench; \
    chmod -R u=rwX,go=rX /opt/ssebench; \
    chmod 0755 /opt/ssebench/bin/ssebench-entrypoint; \
    install -d -o root -g root -m 0700 /var/lib/ssebench; \
    install -d -o root -g root -m 0711 /var/lib/ssebench-grade; \
    install -d -o root -g root -m 0755 /run/ssebench

ARG RUNTIME_VERSION=unknown
LABEL ssebench.layer=tool \
      ssebench.runtime-version=${RUNTIME_VERSION}
EXPOSE 4263
ENTRYPOINT ["python3", "/opt/ssebench/bin/ssebench-entrypoint"]
# The agent layer sets the command; a tool image run on its own has no agent.
CMD []
