#!/usr/bin/env bash
# Flow records/s into ClickHouse through wanledger (agent reports over HTTP -> PostgreSQL commit of
# the report row + one compressed outbox block, and 200 -> flusher -> ClickHouse INSERT … FORMAT
# Native) side by side with clickhouse-client inserting the same rows (a TabSeparated file) into
# an identical table, and with a PostgreSQL-only wanledger acknowledging the same
# reports (flow_records COPY): the acknowledgement latency the ClickHouse mode must not exceed.
#   [CONNS=N] [ROUNDS=R] [BATCH_ROWS=N] [CH_PATH=shards|distributed] bench/clickhouse/run.sh
#   [REPORTS] [SHARDS]
#     REPORTS x 1,000 flows (default 200); SHARDS 1 or 2 (two servers on loopback behind a
#     Distributed table); BATCH_ROWS: analytics.clickhouse.batch_rows (default 1,000,000, the
#     configuration's default);
#     CH_PATH (2 shards): shards (default) lists every shard's HTTP URL in shard_urls, so the
#     flusher inserts into each shard's local table; distributed inserts through the
#     Distributed table as before; CONNS: keep-alive connections posting (default 2); ROUNDS:
#     after the five steps, wanledger and clickhouse-client again R times, alternating which
#     goes first, with the median ratio (drive.py step 6)
# Everything runs from a scratch directory and is stopped by pid at the end.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${WL_BENCH_BUILD:-$SRC/build/rel}
REPORTS=${1:-200}
SHARDS=${2:-1}
SCRATCH=/tmp/wl-chbench-XXXXXX
# shellcheck source=../lib/scratch.sh
. "$SRC/bench/lib/scratch.sh"
PASS=bench-ch-secret
printf '%s\n' "$PASS" > "$W/ch.pass"
chmod 600 "$W/ch.pass"

declare -a HTTP TCP CHPIDS
for i in $(seq 1 "$SHARDS"); do HTTP[$i]=$(free_port); TCP[$i]=$(free_port); done
REMOTE=""
if [ "$SHARDS" -gt 1 ]; then
  REMOTE="<remote_servers><bench>"
  for i in $(seq 1 "$SHARDS"); do
    REMOTE+="<shard><replica><host>127.0.0.1</host><port>${TCP[$i]}</port><user>default</user><password>$PASS</password></replica></shard>"
  done
  REMOTE+="</bench></remote_servers>"
fi
ch_start() { # N
  local d="$W/ch$1"
  mkdir -p "$d"
  cat > "$d/config.xml" <<XML
<?xml version="1.0"?>
<yandex>
 <logger><level>warning</level><log>$d/server.log</log><errorlog>$d/err.log</errorlog><console>0</console></logger>
 <http_port>${HTTP[$1]}</http_port><tcp_port>${TCP[$1]}</tcp_port><interserver_http_port>$(free_port)</interserver_http_port>
 <listen_host>127.0.0.1</listen_host>
 <path>$d/data/</path><tmp_path>$d/tmp/</tmp_path><user_files_path>$d/uf/</user_files_path><format_schema_path>$d/fs/</format_schema_path>
 <mark_cache_size>5368709120</mark_cache_size><max_concurrent_queries>50</max_concurrent_queries>
 <users_config>users.xml</users_config><default_profile>default</default_profile><default_database>default</default_database><timezone>UTC</timezone>
 $REMOTE
</yandex>
XML
  cat > "$d/users.xml" <<XML
<?xml version="1.0"?>
<yandex><profiles><default><max_memory_usage>2000000000</max_memory_usage></default></profiles>
<users><default><password>$PASS</password><networks><ip>127.0.0.1</ip></networks><profile>default</profile><quota>default</quota></default></users>
<quotas><default></default></quotas></yandex>
XML
  clickhouse-server --config-file="$d/config.xml" >"$d/stdout.log" 2>&1 &
  PIDS+=($!)
  CHPIDS+=($!)
  for _ in $(seq 1 300); do
    curl -sf -u "default:$PASS" "http://127.0.0.1:${HTTP[$1]}/" --data-binary 'SELECT 1' >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "clickhouse $1 did not start" >&2; exit 1
}
for i in $(seq 1 "$SHARDS"); do ch_start "$i"; done
PGPORT=$(free_port)
CONNINFO=$(bash "$SRC/scripts/pg.sh" start "$W/pg" "$PGPORT" | tail -1)
PORT=$(free_port)
CLUSTER=null; [ "$SHARDS" -gt 1 ] && CLUSTER='"bench"'
SHARD_URLS=""
if [ "$SHARDS" -gt 1 ] && [ "${CH_PATH:-shards}" = shards ]; then
  SHARD_URLS=', "shard_urls": ['
  sep=""
  for i in $(seq 1 "$SHARDS"); do SHARD_URLS+="$sep\"http://127.0.0.1:${HTTP[$i]}\""; sep=","; done
  SHARD_URLS+=']'
fi
printf '{"agent": ["bench-agent-token-0123456789"]}\n' > "$W/tokens.json"
chmod 600 "$W/tokens.json"
cat > "$W/config.json" <<JSON
{"window_seconds": 60, "grace_seconds": 90, "tick_seconds": 3600,
 "database": "$CONNINFO", "listen": "127.0.0.1:$PORT", "tokens_file": "tokens.json",
 "limits": {"max_body_bytes": 67108864},
 "sites": [{"name": "nyc", "prefixes": ["10.1.0.0/16"]}, {"name": "chi", "prefixes": ["10.2.0.0/16"]}],
 "analytics": {"clickhouse": {"url": "http://127.0.0.1:${HTTP[1]}", "database": "wanledger",
   "cluster": $CLUSTER$SHARD_URLS, "password_file": "ch.pass", "batch_rows": ${BATCH_ROWS:-1000000}, "timeout_ms": 60000}}}
JSON
"$BUILD/cmd/wanledger" --config "$W/config.json" migrate >/dev/null
"$BUILD/cmd/wanledger" --config "$W/config.json" reconcile >"$W/reconcile.log" 2>&1 &
WL=$!
PIDS+=($WL)
# the PostgreSQL-only reference: same server, its own database, no analytics section
psql "$CONNINFO" -qc "CREATE DATABASE wl_pgonly" >/dev/null
PGPORT_WL=$(free_port)
python3 - "$W/config.json" "$W/config-pg.json" "$PGPORT_WL" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
del c["analytics"]
c["database"] = c["database"].replace("dbname=wanledger", "dbname=wl_pgonly")
c["listen"] = "127.0.0.1:" + sys.argv[3]
json.dump(c, open(sys.argv[2], "w"))
PY
"$BUILD/cmd/wanledger" --config "$W/config-pg.json" migrate >/dev/null
"$BUILD/cmd/wanledger" --config "$W/config-pg.json" reconcile >"$W/reconcile-pg.log" 2>&1 &
WLPG=$!
PIDS+=($WLPG)
echo "machine: $(nproc) cores; load before: $(cut -d' ' -f1-3 /proc/loadavg); insert path: $([ -n "$SHARD_URLS" ] && echo 'straight to each shard (shard_urls)' || echo 'through flow_records')"
if [ -n "${PERF_OUT:-}" ]; then # PERF_OUT=FILE: a perf profile of the ClickHouse-mode wanledger
  perf record -F 499 ${PERF_CG:--g} -p "$WL" -o "$PERF_OUT" >/dev/null 2>&1 &
  PIDS+=($!)
fi
export WL_BENCH_POST="$BUILD/bench/reconciler/bench_post" # the sender (ingestlib.post_all)
python3 "$SRC/bench/clickhouse/drive.py" --port "$PORT" --wl-pid "$WL" --conninfo "$CONNINFO" \
  --pg-port "$PGPORT_WL" --wlpg-pid "$WLPG" --pg-data "$W/pg/data" --ch "${HTTP[*]}" --tcp "${TCP[*]}" --ch-pids "${CHPIDS[*]}" \
  --password "$PASS" --reports "$REPORTS" --conns "${CONNS:-2}" --rounds "${ROUNDS:-0}" --dir "$W"
