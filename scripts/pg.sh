#!/usr/bin/env bash
# A persistent PostgreSQL 15 cluster in a folder of its own (the demo's: ./.wanledger/pg), run as
# the postgres user on a loopback port with trust auth for local connections only.
#
#   pg.sh start DIR [PORT]   initdb when DIR holds no cluster, start it, create database
#                            "wanledger"; prints the libpq conninfo. PORT defaults to 55432
#                            (or the port DIR was last started on).
#   pg.sh stop DIR           fast shutdown (no-op when not running)
#   pg.sh status DIR         exit 0 and the conninfo when running, 3 when not
#   pg.sh conninfo DIR       the conninfo only
set -euo pipefail

PGBIN=${PGBIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
cmd=${1:-}
dir=${2:-}
if [ -z "$cmd" ] || [ -z "$dir" ]; then
  echo "usage: pg.sh start|stop|status|conninfo DIR [PORT]" >&2
  exit 2
fi
[ -x "$PGBIN/pg_ctl" ] || { echo "pg.sh: no PostgreSQL server binaries in '$PGBIN'" >&2; exit 1; }
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
data="$dir/data"

as_pg() { runuser -u postgres -- "$@"; }

port_of() {
  if [ -n "${1:-}" ]; then echo "$1"; elif [ -f "$dir/port" ]; then cat "$dir/port"; else echo 55432; fi
}

conninfo() { echo "host=127.0.0.1 port=$(port_of) dbname=wanledger user=postgres"; }

running() { [ -f "$data/postmaster.pid" ] && as_pg "$PGBIN/pg_ctl" -D "$data" status >/dev/null 2>&1; }

case $cmd in
start)
  port=$(port_of "${3:-}")
  # The postgres user must reach DIR: every parent needs o+x (they are root-owned 755 here).
  chown postgres:postgres "$dir"
  if [ ! -f "$data/PG_VERSION" ]; then
    as_pg "$PGBIN/initdb" -D "$data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 ||
      { echo "pg.sh: initdb failed, see $dir/initdb.log" >&2; exit 1; }
  fi
  echo "$port" >"$dir/port"
  mkdir -p "$dir/sock"
  chown postgres:postgres "$dir/sock"
  if ! running; then
    # acknowledged must mean durable: the reconciler answers 2xx after COMMIT, so commits wait
    # for the WAL flush (synchronous_commit=off lost acknowledged batches on a crash)
    as_pg "$PGBIN/pg_ctl" -D "$data" -l "$dir/server.log" -w -t 60 \
      -o "-p $port -c listen_addresses=127.0.0.1 -k $dir/sock -c synchronous_commit=on -c fsync=on" \
      start >/dev/null ||
      { echo "pg.sh: server did not start, see $dir/server.log" >&2; exit 1; }
  fi
  if ! as_pg "$PGBIN/psql" -h 127.0.0.1 -p "$port" -U postgres -Atqc \
    "SELECT 1 FROM pg_database WHERE datname = 'wanledger'" postgres | grep -q 1; then
    as_pg "$PGBIN/createdb" -h 127.0.0.1 -p "$port" -U postgres wanledger
  fi
  conninfo
  ;;
stop)
  if running; then as_pg "$PGBIN/pg_ctl" -D "$data" -m fast -w stop >/dev/null; fi
  ;;
status)
  if running; then conninfo; else echo "pg.sh: not running in $dir" >&2; exit 3; fi
  ;;
conninfo) conninfo ;;
*) echo "usage: pg.sh start|stop|status|conninfo DIR [PORT]" >&2; exit 2 ;;
esac
