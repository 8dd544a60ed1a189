# The install image of an agent without install.Dockerfile: only an empty
# /opt/ssebench/agent-install/, so that agent.Dockerfile copies from an install image
# for every agent. Build context: an empty folder. Built once (ssebench/agent-install-empty:1).
FROM scratch
COPY . /opt/ssebench/agent-install/
