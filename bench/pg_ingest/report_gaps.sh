#!/usr/bin/env bash
# PostgreSQL's cost per agent report of the seq-gap bookkeeping (wl_record_report, sql/028 +
# sql/033's agent_report_tail) against the lookups it replaced (sql/025's wl_record_report_gaps,
# which found the previous and next stored seq in every day's partition), with a month of
# reports kept: open-loop pgbench, the two databases alternated ROUNDS times in one run.
#   [WL_BUILD_DIR=DIR] [DAYS=33] [RATE=800] [DURATION=8] bench/pg_ingest/report_gaps.sh [ROUNDS]
# Each database: the schema (`wanledger migrate`), day partitions for DAYS days back and 2 ahead,
# 1,000 agents with one report an hour on every past day (seqs consecutive; each agent's tail
# row as its first report after sql/033 would leave it), then RATE
# transactions a second for DURATION seconds over 2 connections, each what ingest does for a fresh
# report: its flow_reports row and wl_record_report in one transaction (reconciler/store.c), the
# agent's next seq (in order, the usual case). "old" has sql/033 undone (its trigger dropped,
# 025's and 028's functions put back with 030's plan setting). Latency is from each transaction's
# scheduled start (pgbench --rate), so a slower database shows its queueing too; the transactions
# run with synchronous_commit off, so that the figure is the statements' work, not the disk's
# flush (a CHECKPOINT after the fill, before the first round).
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${WL_BUILD_DIR:-$SRC/build/rel}
ROUNDS=${1:-3}
DAYS=${DAYS:-33}
RATE=${RATE:-800}
SECS=${DURATION:-8}
SCRATCH=/tmp/wl-reportgaps-XXXXXX
# shellcheck source=../lib/scratch.sh
. "$SRC/bench/lib/scratch.sh"
PGPORT=$(free_port)
CONNINFO=$(bash "$SRC/scripts/pg.sh" start "$W/pg" "$PGPORT" | tail -1)
printf '{"agent": ["bench-agent-token-0123456789"]}\n' >"$W/tokens.json"
chmod 600 "$W/tokens.json"
for db in new old; do
  psql "$CONNINFO" -qc "CREATE DATABASE wl_$db" >/dev/null
  cat >"$W/config-$db.json" <<JSON
{"window_seconds": 60, "database": "${CONNINFO/dbname=wanledger/dbname=wl_$db}",
 "listen": "127.0.0.1:1", "tokens_file": "tokens.json",
 "sites": [{"name": "nyc", "prefixes": ["10.1.0.0/16"]}, {"name": "chi", "prefixes": ["10.2.0.0/16"]}]}
JSON
  "$BUILD/cmd/wanledger" --config "$W/config-$db.json" migrate >/dev/null
  psql "${CONNINFO/dbname=wanledger/dbname=wl_$db}" -q -v ON_ERROR_STOP=1 <<SQL >/dev/null
SELECT wl_ensure_partitions(current_date - $DAYS, current_date + 1);
CREATE TABLE bench_agents (agent int PRIMARY KEY, seq bigint NOT NULL);
ALTER TABLE flow_reports DISABLE TRIGGER flow_reports_tail;
INSERT INTO flow_reports (agent_id, seq, host, window_start, window_seconds, n_flows, local_sites)
SELECT 'agent-' || a, h, 'host-' || a,
       date_trunc('day', now()) - interval '$DAYS days' + make_interval(hours => h::int), 60, 10,
       '{nyc}'
  FROM generate_series(1, 1000) a, generate_series(0, $DAYS * 24 - 1) h;
INSERT INTO bench_agents SELECT a, $DAYS * 24 - 1 FROM generate_series(1, 1000) a;
ALTER TABLE flow_reports ENABLE TRIGGER flow_reports_tail;
-- each agent's tail as its first report after sql/033 leaves it (exact: nothing stored above)
INSERT INTO agent_report_tail (agent_id, seq, window_start, exact)
SELECT 'agent-' || a, $DAYS * 24 - 1,
       date_trunc('day', now()) - interval '$DAYS days' + make_interval(hours => $DAYS * 24 - 1),
       true
  FROM generate_series(1, 1000) a;
VACUUM ANALYZE flow_reports;
VACUUM ANALYZE bench_agents;
VACUUM ANALYZE agent_report_tail;
SQL
done
# "old": what ran before sql/033
{
  echo "BEGIN; DROP TRIGGER flow_reports_tail ON flow_reports;"
  sed -n '/^CREATE OR REPLACE FUNCTION wl_record_report_gaps/,/^END \$\$;/p' "$SRC/sql/025_late_gaps.sql"
  sed -n '/^CREATE FUNCTION wl_record_report(/,/^END \$\$;/p' "$SRC/sql/028_report_sites.sql" |
    sed 's/^CREATE FUNCTION/CREATE OR REPLACE FUNCTION/'
  echo "ALTER FUNCTION wl_record_report(text, bigint, timestamptz, int, bigint, timestamptz,"
  echo "  timestamptz, text, text[]) SET plan_cache_mode = force_generic_plan;"
  echo "ALTER FUNCTION wl_record_report_gaps(text, bigint, timestamptz, int, bigint, timestamptz,"
  echo "  timestamptz, text) RESET plan_cache_mode;"
  echo "COMMIT;"
} | psql "${CONNINFO/dbname=wanledger/dbname=wl_old}" -q -v ON_ERROR_STOP=1 >/dev/null
psql "$CONNINFO" -qc CHECKPOINT >/dev/null
cat >"$W/report.sql" <<'SQL'
\set a random(1, 1000)
BEGIN;
UPDATE bench_agents SET seq = seq + 1 WHERE agent = :a RETURNING seq AS s \gset
INSERT INTO flow_reports (agent_id, seq, host, window_start, window_seconds, n_flows) VALUES ('agent-' || :a, :s, 'host-' || :a, date_bin('60 s', now(), timestamptz 'epoch'), 60, 10) ON CONFLICT DO NOTHING RETURNING 1;
SELECT wl_record_report('agent-' || :a, :s, date_bin('60 s', now(), timestamptz 'epoch'), 60, 0, NULL, NULL, NULL, '{nyc}');
COMMIT;
SQL
echo "machine: $(nproc) cores; load before: $(cut -d' ' -f1-3 /proc/loadavg); build $BUILD ($(git -C "$SRC" rev-parse --short HEAD)); $DAYS days of 1,000 agents' reports kept, $(psql "${CONNINFO/dbname=wanledger/dbname=wl_new}" -Atc "SELECT count(*) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhparent WHERE c.relname = 'flow_reports'") day partitions; $RATE tx/s open loop for $SECS s, 2 connections; synchronous_commit off (the bookkeeping's cost, not the disk's flush)"
echo "| round | database | tx (n) | latency p50 / p99 / p999 / max (ms) | wl_record_report (ms, mean) | INSERT (ms, mean) | gap rows | load after |"
echo "|---|---|---|---|---|---|---|---|"
# warm-up, not reported: each database's first run after the fill ran 2-5x slower (its pages and
# plans cold)
for db in new old; do
  (cd "$W" && PGOPTIONS='-c synchronous_commit=off' pgbench -n -M prepared -c 2 -j 2 -R "$RATE" \
    -T 3 -f "$W/report.sql" "${CONNINFO/dbname=wanledger/dbname=wl_$db}" >/dev/null 2>&1)
done
for r in $(seq 1 "$ROUNDS"); do
  order="new old"
  [ $((r % 2)) -eq 0 ] && order="old new"
  for db in $order; do
    rm -rf "$W/log-$db"
    mkdir -p "$W/log-$db"
    out=$(cd "$W/log-$db" && PGOPTIONS='-c synchronous_commit=off' pgbench -n -M prepared -c 2 -j 2 -R "$RATE" -T "$SECS" -r -l \
      -f "$W/report.sql" "${CONNINFO/dbname=wanledger/dbname=wl_$db}" 2>&1)
    rec=$(grep -E '^\s+[0-9.]+\s+[0-9]+\s+SELECT wl_record_report' <<<"$out" | awk '{print $1}')
    ins=$(grep -E '^\s+[0-9.]+\s+[0-9]+\s+INSERT INTO flow_reports' <<<"$out" | awk '{print $1}')
    gaps=$(psql "${CONNINFO/dbname=wanledger/dbname=wl_$db}" -Atc "SELECT count(*) FROM agent_gaps")
    # pgbench -l: "client tx latency_us script_no epoch_s epoch_us schedule_lag_us"; with --rate
    # the latency is from the scheduled start
    stats=$(cat "$W/log-$db"/pgbench_log.* | python3 -c '
import sys
v = sorted(int(l.split()[2]) for l in sys.stdin if l.strip())
q = lambda p: v[min(len(v) - 1, int(p * len(v)))] / 1000
print(f"{len(v)} | {q(0.5):.2f} / {q(0.99):.2f} / {q(0.999):.2f} / {v[-1] / 1000:.2f}")')
    echo "| $r | $db | $stats | $rec | $ins | $gaps | $(cut -d' ' -f1-3 /proc/loadavg) |"
  done
done
