# hello-agent's install image: cowsay from PyPI, pinned by hash, under
# /opt/ssebench/agent-install/lib. ssebench builds it once for every task
# (ssebench/agent-install/hello-agent:6.1-1) from a copy of this folder plus
# build-ca/ (ca-bundle.crt in it when this machine's package index needs its CA),
# and the agent layer copies /opt/ssebench/agent-install/ to
# /opt/ssebench/agents/hello-agent/install/.
ARG BASE_IMAGE=debian:bookworm-slim

# The builder stage: its tools and the CA bundle stay here.
FROM ${BASE_IMAGE} AS builder
ENV DEBIAN_FRONTEND=noninteractive PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3-pip \
    && rm -rf /var/lib/apt/lists/*
COPY requirements.txt /tmp/hello-agent/requirements.txt
COPY build-ca/ /tmp/build-ca/
RUN set -eu; \
    cert=""; \
    if [ -f /tmp/build-ca/ca-bundle.crt ]; then cert="--cert /tmp/build-ca/ca-bundle.crt"; fi; \
    python3 -m pip install $cert --no-deps --require-hashes --only-binary :all: \
        --target /opt/ssebench/agent-install/lib -r /tmp/hello-agent/requirements.txt; \
    chmod -R go=rX /opt/ssebench/agent-install

# The install image holds the installed program and nothing else.
FROM scratch
COPY --from=builder /opt/ssebench/agent-install/ /opt/ssebench/agent-install/
