# The Codex CLI of the codex agent, installed once per upstream version and copied into
# each task's image by the agent layer. Build context: this folder, plus
# build-ca/ca-bundle.crt when the package registry needs a CA of this machine's.
#
# The builder installs the pinned package (package.json + package-lock.json, each
# tarball checked against its sha512 "integrity") with Debian's node and npm. Codex is a
# static (musl) Rust binary in a per-platform package; the final stage holds only that
# binary and the two helpers it runs (ripgrep, bubblewrap) in the package's own layout,
# so the agent runs on any Linux task image without node, and no CA is left in it.
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE} AS builder

# The same first step as the other npm agents' install images, word for word, so that
# Docker's build cache makes this layer once for all of them.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      nodejs npm ripgrep ca-certificates \
 && rm -rf /var/lib/apt/lists/*
ENV DEBIAN_FRONTEND=noninteractive \
    NPM_CONFIG_UPDATE_NOTIFIER=false \
    NPM_CONFIG_FUND=false \
    NPM_CONFIG_AUDIT=false

# The whole folder: build-ca/ is there only on machines that need it.
COPY . /tmp/context/
RUN set -eu; \
    mkdir -p /opt/build; \
    cp /tmp/context/package.json /tmp/context/package-lock.json /opt/build/; \
    if [ -f /tmp/context/build-ca/ca-bundle.crt ]; then \
      export NODE_EXTRA_CA_CERTS=/tmp/context/build-ca/ca-bundle.crt; \
      export NPM_CONFIG_CAFILE=/tmp/context/build-ca/ca-bundle.crt; \
    fi; \
    cd /opt/build; \
    npm ci --ignore-scripts --no-audit --no-fund; \
    case "$(uname -m)" in \
      x86_64) triple=x86_64-unknown-linux-musl ;; \
      aarch64) triple=aarch64-unknown-linux-musl ;; \
      *) echo "codex: no Codex build for $(uname -m)" >&2; exit 1 ;; \
    esac; \
    vendor=$(ls -d node_modules/@openai/codex-linux-*/vendor/$triple); \
    target=/opt/ssebench/agent-install; \
    mkdir -p $target/bin $target/codex-path $target/codex-resources; \
    cp $vendor/codex-package.json $target/; \
    cp $vendor/bin/codex $target/bin/; \
    cp $vendor/codex-path/rg $target/codex-path/; \
    cp $vendor/codex-resources/bwrap $target/codex-resources/; \
    chmod -R a+rX,go-w $target; \
    $target/bin/codex --version; \
    rm -rf /tmp/context /opt/build /root/.npm

FROM scratch
COPY --from=builder /opt/ssebench/agent-install/ /opt/ssebench/agent-install/
