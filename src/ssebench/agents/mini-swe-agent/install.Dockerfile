# mini-swe-agent's install image: a complete Python (interpreter, standard library,
# the shared libraries they load) with mini-swe-agent and its dependencies, under
# /opt/ssebench/agent-install/, and nothing else.
#
# Build context: this folder (requirements.txt pins every package with its hashes),
# plus build-ca/ca-bundle.crt when the host reaches the package index through its own
# CA (images.add_build_ca). Build arg BASE_IMAGE: a Debian-based image (default
# debian:bookworm-slim).
#
# Why a whole Python: the agent runs inside the task's image, whose python3 may be
# another version, or lack pip and venv; a venv would only point at the builder's
# interpreter. So the builder copies Debian's python3.11 with its standard library and
# every shared library they link that is not glibc's (found with ldd) into the
# install, and pip installs the pinned packages (binary wheels only, each checked
# against its hash) beside them. bin/python3 runs it with PYTHONHOME and
# LD_LIBRARY_PATH pointing there. The limits: the task image must be Linux x86_64
# with glibc 2.36 or newer (bookworm's; every image here is built on bookworm), and
# the packages are those of Python 3.11.
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE} AS builder

USER root
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      python3 python3-pip ca-certificates \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /build
# The pins and the CA only (build-ca* matches nothing without one): the agent layer
# copies the rest of the folder, so an edited wrapper reuses this stage's layers.
COPY requirements.txt build-ca* /build/
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1
RUN set -eu; \
    home=/opt/ssebench/agent-install/python; \
    version="$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')"; \
    [ "$version" = 3.11 ] || { echo "mini-swe-agent: requirements.txt is for Python 3.11, the builder has $version" >&2; exit 1; }; \
    install -d "$home/bin" "$home/lib" "$home/lib/native"; \
    cp -a "/usr/bin/python$version" "$home/bin/python$version"; \
    cp -a "/usr/lib/python$version" "$home/lib/python$version"; \
    rm -rf "$home/lib/python$version/test" "$home/lib/python$version/__pycache__"; \
    cert=""; \
    if [ -f ca-bundle.crt ]; then cert="--cert /build/ca-bundle.crt"; fi; \
    python3 -m pip install --no-cache-dir $cert --break-system-packages \
        --require-hashes --no-deps --only-binary=:all: \
        --target "$home/lib/python3/dist-packages" -r requirements.txt; \
    rm -rf /build/ca-bundle.crt /root/.cache
RUN set -eu; \
    home=/opt/ssebench/agent-install/python; \
    version=3.11; \
    find "$home" -type f \( -name '*.so' -o -name '*.so.*' -o -path "$home/bin/*" \) \
        -exec ldd {} \; 2>/dev/null \
      | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u \
      | grep -v -E '/(libc|libm|libpthread|libdl|librt|libresolv|libutil|ld-linux[^/]*)\.so' \
      | while read -r library; do cp -L "$library" "$home/lib/native/"; done; \
    # Bytecode, made once here: the agent's user cannot write beside the sources, and
    # LiteLLM takes many seconds to compile at every start. Unchecked: the install
    # never changes, whatever times a copy gives its files.
    find "$home" -name __pycache__ -prune -exec rm -rf {} +; \
    PYTHONHOME="$home" LD_LIBRARY_PATH="$home/lib/native" "$home/bin/python$version" -s \
      -m compileall -q -j 0 --invalidation-mode unchecked-hash "$home/lib" >/dev/null; \
    printf '%s\n' \
      '#!/bin/sh' \
      '# The install'"'"'s own Python, whatever the image has: see install.Dockerfile.' \
      'home="$(dirname "$(dirname "$(readlink -f "$0")")")/python"' \
      'PYTHONHOME="$home" LD_LIBRARY_PATH="$home/lib/native" \' \
      "  exec \"\$home/bin/python$version\" -s \"\$@\"" \
      > /opt/ssebench/agent-install/bin-python3; \
    install -d /opt/ssebench/agent-install/bin; \
    install -m 0755 /opt/ssebench/agent-install/bin-python3 /opt/ssebench/agent-install/bin/python3; \
    rm /opt/ssebench/agent-install/bin-python3; \
    grep -m1 '^mini-swe-agent==' requirements.txt | cut -d= -f3 | cut -d' ' -f1 \
      > /opt/ssebench/agent-install/VERSION

# The install must work on its own: no Debian python3 on the path, no build CA.
FROM ${BASE_IMAGE} AS check
COPY --from=builder /opt/ssebench/agent-install/ /opt/ssebench/agent-install/
RUN set -eu; \
    ! command -v python3 >/dev/null 2>&1 || { echo "mini-swe-agent: the check stage has a python3" >&2; exit 1; }; \
    cd /tmp; \
    MSWEA_SILENT_STARTUP=1 MSWEA_GLOBAL_CONFIG_DIR=/tmp/mswea LITELLM_LOCAL_MODEL_COST_MAP=True \
      /opt/ssebench/agent-install/bin/python3 -c 'import ssl, sqlite3, ctypes, minisweagent, litellm; \
from minisweagent.agents.default import DefaultAgent; \
from minisweagent.models.litellm_model import LitellmModel; \
from minisweagent.environments.local import LocalEnvironment; \
print("mini-swe-agent", minisweagent.__version__, "litellm ok")'; \
    rm -rf /tmp/mswea

# Copied from the check stage, so that no build skips it.
FROM scratch
COPY --from=check /opt/ssebench/agent-install/ /opt/ssebench/agent-install/
