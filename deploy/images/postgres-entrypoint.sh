#!/bin/sh
# Start PostgreSQL; on the first start make the cluster in $PGDATA with the superuser
# $POSTGRES_USER (password $POSTGRES_PASSWORD, password logins over TCP) and the
# database $POSTGRES_DB, as the official image does. The password goes through a file
# and psql's \getenv, never through a command line.
set -eu
: "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD must be set}"
data=${PGDATA:-/var/lib/postgresql/data}
user=${POSTGRES_USER:-postgres}
export POSTGRES_USER="$user" POSTGRES_DB="${POSTGRES_DB:-$user}"
if [ ! -s "$data/PG_VERSION" ]; then
  mkdir -p "$data"
  chmod 0700 "$data"
  secret=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" > "$secret"
  initdb -D "$data" -U "$user" --auth-local=trust --auth-host=scram-sha-256 \
    --pwfile="$secret" >/dev/null
  rm -f "$secret"
  echo "host all all all scram-sha-256" >> "$data/pg_hba.conf"
  pg_ctl -D "$data" -o "-c listen_addresses='' -c unix_socket_directories=/run/postgresql" \
    -w start >/dev/null
  if [ "$POSTGRES_DB" != postgres ]; then
    printf '%s\n' '\getenv db POSTGRES_DB' '\getenv owner POSTGRES_USER' \
      'CREATE DATABASE :"db" OWNER :"owner";' |
      psql -v ON_ERROR_STOP=1 -q -h /run/postgresql -U "$user" postgres
  fi
  pg_ctl -D "$data" -m fast -w stop >/dev/null
fi
exec postgres -D "$data" -c listen_addresses='*' -c unix_socket_directories=/run/postgresql
