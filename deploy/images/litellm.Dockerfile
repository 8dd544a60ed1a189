# The LiteLLM proxy of the Helm chart: the local stack's proxy (the same pinned, hashed
# requirements, deploy/compose/litellm/requirements.txt) with the configuration that
# `ssebench proxy config` generates from models/, at /etc/litellm/config.yaml.
FROM debian:bookworm-slim
ENV DEBIAN_FRONTEND=noninteractive PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-venv ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY requirements.txt /opt/litellm/requirements.txt
COPY build-ca/ /tmp/build-ca/
RUN set -eu; \
    python3 -m venv /opt/litellm/venv; \
    cert=""; \
    if [ -f /tmp/build-ca/ca-bundle.crt ]; then cert="--cert /tmp/build-ca/ca-bundle.crt"; fi; \
    /opt/litellm/venv/bin/pip install --no-cache-dir $cert \
        --require-hashes --only-binary=:all: -r /opt/litellm/requirements.txt; \
    rm -rf /tmp/build-ca; \
    /opt/litellm/venv/bin/litellm --version >/dev/null
COPY config.yaml /etc/litellm/config.yaml
ENV PATH=/opt/litellm/venv/bin:$PATH
EXPOSE 4000
ENTRYPOINT ["litellm", "--host", "0.0.0.0", "--port", "4000"]
CMD ["--config", "/etc/litellm/config.yaml"]
