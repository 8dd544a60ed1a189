# Claude Code's install image: the native `claude` binary of the pinned
# @anthropic-ai/claude-code, under /opt/ssebench/agent-install/, and nothing else.
#
# Build context: a copy of this folder (package.json + package-lock.json pin the
# package and its per-platform packages with their sha512 integrity) and build-ca/,
# which holds ca-bundle.crt when the host reaches the npm registry through its own CA.
# Build arg BASE_IMAGE: a Debian-based image (default debian:bookworm-slim).
#
# The builder stage takes node and npm from Debian and runs `npm ci`, which checks
# every tarball against the lock file. The package's postinstall only copies the
# platform's binary into place (and wants a newer node than Debian's), so scripts are
# off and the binary is copied from the platform package itself. The final stage
# holds that binary alone (about 400 MB): it needs glibc, not node, and no CA bundle.
# Debian's npm does not know the "libc" field, so it also fetches the musl build,
# which stays in the builder.
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE} AS builder

# The same first step as the other npm agents' install images, word for word, so that
# Docker's build cache makes this layer once for all of them.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      nodejs npm ripgrep ca-certificates \
 && rm -rf /var/lib/apt/lists/*

# Only the pins: an edit of the wrapper does not download the package again.
WORKDIR /build
COPY package.json package-lock.json /build/
COPY build-ca/ /tmp/build-ca/
RUN set -eu; \
    if [ -f /tmp/build-ca/ca-bundle.crt ]; then \
      export NODE_EXTRA_CA_CERTS=/tmp/build-ca/ca-bundle.crt; \
      npm config set cafile /tmp/build-ca/ca-bundle.crt; \
    fi; \
    npm ci --ignore-scripts --no-audit --no-fund --loglevel=error; \
    case "$(dpkg --print-architecture)" in \
      amd64) platform=linux-x64 ;; \
      arm64) platform=linux-arm64 ;; \
      *) echo "claude-code: no Claude Code binary for $(dpkg --print-architecture)" >&2; exit 1 ;; \
    esac; \
    binary="node_modules/@anthropic-ai/claude-code-${platform}/claude"; \
    [ -f "$binary" ] || { echo "claude-code: npm ci did not install $binary" >&2; exit 1; }; \
    install -d -m 0755 /opt/ssebench/agent-install/bin; \
    install -m 0755 "$binary" /opt/ssebench/agent-install/bin/claude; \
    version="$(node -p 'require("./node_modules/@anthropic-ai/claude-code/package.json").version')"; \
    printf '%s\n' "$version" > /opt/ssebench/agent-install/VERSION; \
    /opt/ssebench/agent-install/bin/claude --version; \
    rm -rf /root/.npm /root/.npmrc /tmp/build-ca

FROM scratch
COPY --from=builder /opt/ssebench/agent-install/ /opt/ssebench/agent-install/
