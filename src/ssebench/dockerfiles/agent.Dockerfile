# The agent layer: one agent on a tool layer. The image's CMD is the agent's command,
# which the tool layer's entrypoint runs as the user model.
#
# Build context: the agent's directory (src/ssebench/agents/<name>/, or a user's), holding
#   agent.json   {"name", "version", "description", ...}
#   run          the agent's executable (a script with a shebang)
# Build args:
#   BASE_IMAGE     the tool layer image, or the agent runtime in sidecar mode (required)
#   INSTALL_IMAGE  the agent's install image (ssebench/agent-install/<name>:<versions>,
#                  from its install.Dockerfile) or, for an agent without one, the empty
#                  ssebench/agent-install-empty:1 (required)
#   AGENT_NAME     agent.json's name (required; [a-z0-9][a-z0-9._-]*)
#   AGENT_VERSION  agent.json's version (required)
#
# The agent is installed in /opt/ssebench/agents/<name>/, and its install image's
# /opt/ssebench/agent-install/ in /opt/ssebench/agents/<name>/install/ (owned by root;
# the modes are the install image's). That copy comes last and is not touched by a
# RUN afterwards: a chmod over it would store the upstream program a second time. The
# agent's folder itself must not hold install/. The CMD cannot name that
# path: Dockerfile variables are not expanded in CMD, and a shell-form CMD would put
# a shell between the entrypoint and the agent. So /opt/ssebench/agent is a link to
# the installed agent's directory and the CMD is the same for every agent:
#   CMD ["/opt/ssebench/agent/run"]  ->  /opt/ssebench/agents/<name>/run
# This keeps the file an ordinary Dockerfile that plain build args fill in (no
# template rendering), with BuildKit or the classic builder.
ARG BASE_IMAGE
ARG INSTALL_IMAGE
FROM ${INSTALL_IMAGE} AS install

FROM ${BASE_IMAGE}

ARG AGENT_NAME
ARG AGENT_VERSION
COPY . /opt/ssebench/agents/${AGENT_NAME}/
# ${VAR:-} because an ARG that was not passed is unset, and set -u would hide the message.
RUN set -eu; \
    case "${AGENT_NAME:-}" in \
      ''|[!a-z0-9]*|*[!a-z0-9._-]*) \
        echo "agent layer: AGENT_NAME '${AGENT_NAME:-}' is missing or not [a-z0-9][a-z0-9._-]*" >&2; \
        exit 1 ;; \
    esac; \
    [ -n "${AGENT_VERSION:-}" ] || { echo "agent layer: AGENT_VERSION is required" >&2; exit 1; }; \
    cd "/opt/ssebench/agents/${AGENT_NAME}"; \
    [ -f run ] || { echo "agent layer: the agent has no run script" >&2; exit 1; }; \
    [ ! -e install ] || { echo "agent layer: the agent folder must not hold install/" >&2; exit 1; }; \
    python3 -c 'import json, sys; name = json.load(open("agent.json"))["name"]; \
sys.exit(0 if name == sys.argv[1] else "agent layer: agent.json names " + repr(name))' \
      "${AGENT_NAME}"; \
    chown -R root:root .; \
    chmod -R u=rwX,go=rX .; \
    chmod 0755 run; \
    ln -sfn "agents/${AGENT_NAME}" /opt/ssebench/agent
COPY --chown=0:0 --from=install /opt/ssebench/agent-install/ /opt/ssebench/agents/${AGENT_NAME}/install/

# ssebench.layer replaces the tool layer's value: the label names the image's top layer.
LABEL ssebench.layer=agent \
      ssebench.agent=${AGENT_NAME} \
      ssebench.agent-version=${AGENT_VERSION}
CMD ["/opt/ssebench/agent/run"]
