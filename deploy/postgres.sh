#!/usr/bin/env bash
# A local PostgreSQL 15 for tests and the demo (127.0.0.1 + a socket under .state/),
# from Debian's packages. Idempotent.
#   deploy/postgres.sh up      start (initdb on first use), create role+database; prints the URL
#   deploy/postgres.sh down    stop it if this project started it
#   deploy/postgres.sh url     print the SQLAlchemy URL
#   deploy/postgres.sh status  exit 0 when it answers
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
state=${PGMPI_STATE_DIR:-$top/.state}/postgres
port=${PGMPI_PG_PORT:-55432}
db=${PGMPI_PG_DB:-pgmpi}
role=${PGMPI_PG_USER:-pgmpi}
password=${PGMPI_PG_PASSWORD:-pgmpi}
bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)
url="postgresql+psycopg://$role:$password@127.0.0.1:$port/$db"

as_pg() { if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
ready() { "$bindir/pg_isready" -q -h 127.0.0.1 -p "$port" 2>/dev/null; }

case "${1:-}" in
  up)
    [ -n "$bindir" ] || { echo "postgres.sh: PostgreSQL is not installed (deploy/install-packages.sh cluster)" >&2; exit 1; }
    mkdir -p "$state"
    [ "$(id -u)" -eq 0 ] && chown postgres:postgres "$state"
    if [ ! -f "$state/data/PG_VERSION" ]; then
      as_pg "$bindir/initdb" -D "$state/data" -A trust -U postgres >"$state/initdb.log" 2>&1 \
        || { cat "$state/initdb.log" >&2; exit 1; }
    fi
    if ready; then
      echo "postgres.sh: already running on 127.0.0.1:$port"
    else
      as_pg "$bindir/pg_ctl" -D "$state/data" -l "$state/server.log" -w -t 60 \
        -o "-p $port -k $state -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" start >/dev/null \
        || { echo "postgres.sh: PostgreSQL did not start; log:" >&2; tail -n 20 "$state/server.log" >&2; exit 1; }
      touch "$state/started-by-us"
      echo "postgres.sh: started on 127.0.0.1:$port (state $state)"
    fi
    psql_() { as_pg psql -h "$state" -p "$port" -U postgres -v ON_ERROR_STOP=1 -qtAc "$1"; }
    [ "$(psql_ "SELECT 1 FROM pg_roles WHERE rolname='$role'")" = 1 ] \
      || psql_ "CREATE ROLE $role LOGIN PASSWORD '$password' CREATEDB"
    [ "$(psql_ "SELECT 1 FROM pg_database WHERE datname='$db'")" = 1 ] \
      || psql_ "CREATE DATABASE $db OWNER $role"
    echo "$url"
    ;;
  down)
    if [ -f "$state/started-by-us" ] && ready; then
      as_pg "$bindir/pg_ctl" -D "$state/data" -m fast -w stop >/dev/null
      rm -f "$state/started-by-us"
      echo "postgres.sh: stopped"
    else
      echo "postgres.sh: not started by this project; left alone"
    fi
    ;;
  url) echo "$url" ;;
  status) ready ;;
  *) echo "usage: $0 up|down|url|status" >&2; exit 2 ;;
esac
