# The catalog service of the Helm chart: serves the manifest.json of the dataset bundled
# here (the pilot dataset). Built by `ssebench images build-services`, whose context holds
# ssebench/ (the package) and manifest.json. Python's standard library and PyYAML only.
FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-yaml \
 && rm -rf /var/lib/apt/lists/*
COPY ssebench/ /opt/ssebench/ssebench/
COPY manifest.json /srv/catalog/manifest.json
ENV PYTHONPATH=/opt/ssebench PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
# An unprivileged user that owns nothing: the chart runs it so, read-only.
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["python3", "-m", "ssebench.catalog", "--manifest", "/srv/catalog/manifest.json"]
CMD ["--port", "8080"]
