#!/usr/bin/env bash
# Flow records/s into PostgreSQL through wanledger (agent reports over HTTP -> JSON validation ->
# flow_records COPY + commit per report -> 200) side by side with `psql \copy` of the same rows
# into a table LIKE flow_records INCLUDING ALL, ROUNDS times in one run; with WL_OTHER_BUILDS,
# more wanledgers (other builds, e.g. main's) on their own databases of the same server take the
# same reports in every round, in rotating order (A/B within one run).
#   [WL_BUILD_DIR=DIR] [WL_OTHER_BUILDS="NAME=DIR ..."] [CONNS=N] [DAYS=N] [PERF_OUT=FILE] [PGLOG=1]
#   bench/pg_ingest/run.sh [REPORTS] [ROUNDS]
#     REPORTS x 1,000 flows per round (default 300), ROUNDS (default 3); root (PostgreSQL runs as
#     the postgres user, scripts/pg.sh: fsync and synchronous_commit on). PERF_OUT: a perf
#     profile of the tested wanledger and the PostgreSQL server over every round.
# Everything runs from a scratch directory and is stopped by pid at the end.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${WL_BUILD_DIR:-$SRC/build/rel}
REPORTS=${1:-300}
ROUNDS=${2:-3}
SCRATCH=/tmp/wl-pgbench-XXXXXX
# shellcheck source=../lib/scratch.sh
. "$SRC/bench/lib/scratch.sh"
PGPORT=$(free_port)
CONNINFO=$(bash "$SRC/scripts/pg.sh" start "$W/pg" "$PGPORT" | tail -1)
printf '{"agent": ["bench-agent-token-0123456789"]}\n' > "$W/tokens.json"
chmod 600 "$W/tokens.json"
start_wl() { # NAME BUILD -> prints "port pid"
  local port db=wl_$1
  port=$(free_port)
  psql "$CONNINFO" -qc "CREATE DATABASE $db" >/dev/null
  cat > "$W/config-$1.json" <<JSON
{"window_seconds": 60, "grace_seconds": 90, "tick_seconds": 3600,
 "database": "${CONNINFO/dbname=wanledger/dbname=$db}", "listen": "127.0.0.1:$port", "tokens_file": "tokens.json",
 "limits": {"max_body_bytes": 67108864},
 "sites": [{"name": "nyc", "prefixes": ["10.1.0.0/16"]}, {"name": "chi", "prefixes": ["10.2.0.0/16"]}]}
JSON
  "$2/cmd/wanledger" --config "$W/config-$1.json" migrate >/dev/null
  if [ -n "${DAYS:-}" ]; then # DAYS=N: day partitions N days back, as a server keeping N days has
    psql "${CONNINFO/dbname=wanledger/dbname=$db}" -qc \
      "SELECT wl_ensure_partitions(current_date - $DAYS, current_date + 1)" >/dev/null
  fi
  "$2/cmd/wanledger" --config "$W/config-$1.json" reconcile >"$W/reconcile-$1.log" 2>&1 &
  echo "$port $!"
}
if [ -n "${PGLOG:-}" ]; then # PGLOG=1: every statement's duration, summed per kind at the end
  psql "$CONNINFO" -qc "ALTER SYSTEM SET log_min_duration_statement = 0" -c "SELECT pg_reload_conf()" >/dev/null
fi
read -r PORT WL < <(start_wl test "$BUILD")
PIDS+=("$WL")
ARGS=(--conninfo "$CONNINFO" --pg-data "$W/pg/data" --dir "$W" --reports "$REPORTS" --rounds "$ROUNDS"
      --conns "${CONNS:-2}" --test "$PORT:$WL:wl_test")
for nb in ${WL_OTHER_BUILDS:-}; do # NAME=DIR ...: more wanledgers, each on its own database
  read -r BPORT BWL < <(start_wl "${nb%%=*}" "${nb#*=}")
  PIDS+=("$BWL")
  ARGS+=(--other "${nb%%=*}:$BPORT:$BWL:wl_${nb%%=*}")
done
echo "machine: $(nproc) cores; load before: $(cut -d' ' -f1-3 /proc/loadavg); test build $BUILD ($(git -C "$SRC" rev-parse --short HEAD)$(git -C "$SRC" diff --quiet HEAD -- . || echo '+changes')), others: ${WL_OTHER_BUILDS:-none}"
[ -n "${PERF_OUT:-}" ] && ARGS+=(--perf "$PERF_OUT")
export WL_BENCH_POST="$BUILD/bench/reconciler/bench_post" # the sender (ingestlib.post_all)
python3 "$SRC/bench/pg_ingest/drive.py" "${ARGS[@]}"
if [ -n "${PGLOG:-}" ]; then
  python3 - "$W/pg/server.log" <<'PY'
import re, sys, collections
tot, cnt = collections.Counter(), collections.Counter()
for line in open(sys.argv[1], errors="replace"):
    m = re.search(r"duration: ([0-9.]+) ms\s+(?:statement|execute [^:]*|parse [^:]*|bind [^:]*): (.{0,60})", line)
    if m:
        k = re.sub(r"\s+", " ", m.group(2))[:48]
        tot[k] += float(m.group(1)); cnt[k] += 1
print("PostgreSQL statement time by kind (PGLOG=1; every step of every round):")
for k, v in tot.most_common(12):
    print("  %9.1f ms  n=%6d  %7.3f ms each  %s" % (v, cnt[k], v / cnt[k], k))
PY
fi
