# The install image of the opencode agent: OpenCode's native binary, pinned by
# package-lock.json (npm's sha512 integrity for opencode-ai and its per-platform
# package), and ripgrep, which OpenCode's search tools run and would otherwise try to
# download on first use. Task-independent; the agent layer copies
# /opt/ssebench/agent-install/ into the task's image.
#
# Build context: this folder, plus build-ca/ca-bundle.crt when npm needs a CA of this
# machine's (images.add_build_ca). The CA stays in the builder stage.
# Build arg: BASE_IMAGE, a Debian-based image (default debian:bookworm-slim).
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE} AS builder

# The same first step as the other npm agents' install images, word for word, so that
# Docker's build cache makes this layer once for all of them.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      nodejs npm ripgrep ca-certificates \
 && rm -rf /var/lib/apt/lists/*

# The wildcard makes the CA optional: build-ca/'s file lands in /tmp/npm-project/ when
# the context has one, and the COPY still has its two lock files when it has none.
COPY package.json package-lock.json build-ca* /tmp/npm-project/
WORKDIR /tmp/npm-project
# opencode-ai's own install script only links the platform's binary into its node
# package; nothing here runs that package, so scripts stay off.
RUN set -eu; \
    if [ -f ca-bundle.crt ]; then npm config set cafile "$PWD/ca-bundle.crt"; fi; \
    npm ci --ignore-scripts --no-audit --no-fund --omit=dev; \
    npm config delete cafile; \
    # x64: the baseline build, which needs no AVX2, so the image runs on any x86-64 host.
    case "$(dpkg --print-architecture)" in \
      amd64) platform=linux-x64-baseline ;; \
      arm64) platform=linux-arm64 ;; \
      *) echo "opencode install: no OpenCode binary for $(dpkg --print-architecture)" >&2; exit 1 ;; \
    esac; \
    binary="node_modules/opencode-$platform/bin/opencode"; \
    [ -x "$binary" ] || { echo "opencode install: npm ci did not install $binary" >&2; exit 1; }; \
    install -d -m 0755 /opt/ssebench/agent-install/bin; \
    install -m 0755 "$binary" /opt/ssebench/agent-install/bin/opencode; \
    install -m 0755 /usr/bin/rg /opt/ssebench/agent-install/bin/rg; \
    HOME=/tmp/opencode-home /opt/ssebench/agent-install/bin/opencode --version; \
    cd /; rm -rf /tmp/npm-project /tmp/opencode-home /root/.npm /root/.npmrc

FROM scratch
COPY --from=builder /opt/ssebench/agent-install/ /opt/ssebench/agent-install/
