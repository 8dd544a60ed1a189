# A PostgreSQL for the Helm chart's StatefulSet (postgres.image), from Debian's
# packages, for clusters that cannot pull postgres:16 (k8s-local, docs/helm.md). It
# takes what the chart gives the official image: POSTGRES_USER, POSTGRES_DB,
# POSTGRES_PASSWORD and PGDATA, the user 999, pg_isready on the PATH.
FROM debian:bookworm-slim
ENV DEBIAN_FRONTEND=noninteractive
# The user first, so the package keeps the uid and gid 999 the chart runs as.
RUN groupadd --system --gid 999 postgres \
 && useradd --system --uid 999 --gid 999 --home-dir /var/lib/postgresql --shell /bin/sh postgres \
 && apt-get update \
 && apt-get install -y --no-install-recommends postgresql-15 \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /var/lib/postgresql/data /run/postgresql \
 && chown -R postgres:postgres /var/lib/postgresql /run/postgresql
COPY entrypoint.sh /usr/local/bin/ssebench-postgres
RUN chmod 0755 /usr/local/bin/ssebench-postgres
ENV PATH=/usr/lib/postgresql/15/bin:$PATH PGDATA=/var/lib/postgresql/data
USER 999:999
EXPOSE 5432
ENTRYPOINT ["/usr/local/bin/ssebench-postgres"]
