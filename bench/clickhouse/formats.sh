#!/usr/bin/env bash
# The ClickHouse server's CPU for the same 500,000 flow records inserted over HTTP as TabSeparated
# (what the flusher sent before session 24), RowBinary, Native in 1,000-row blocks (one per agent
# report, what it sends now), 100,000-row blocks and one block (Native1m: max_block_size 10^6, so
# the server's squashing has nothing to append), and through clickhouse-client (TabSeparated
# parsed in the client, sent as Native over the TCP protocol), alternating, ROUNDS times.
#   bench/clickhouse/formats.sh [ROUNDS]      (default 3; needs clickhouse-server, python3, curl)
# One scratch clickhouse-server 18.16 on loopback, stopped by pid at the end. Rows: socket flows
# shaped like drive.py's (table schema: reconciler/flow_row.c's ch_type of every column).
set -euo pipefail
ROUNDS=${1:-3}
W=$(mktemp -d /tmp/wl-chformats-XXXXXX)
CHPID=""
cleanup() {
  if [ -n "$CHPID" ]; then kill "$CHPID" 2>/dev/null || true; while kill -0 "$CHPID" 2>/dev/null; do sleep 0.1; done; fi
  rm -rf "$W"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
HTTP=$(free_port) TCP=$(free_port) ISP=$(free_port)
mkdir -p "$W/d"
cat > "$W/d/config.xml" <<XML
<?xml version="1.0"?>
<yandex>
 <logger><level>warning</level><log>$W/d/server.log</log><errorlog>$W/d/err.log</errorlog><console>0</console></logger>
 <http_port>$HTTP</http_port><tcp_port>$TCP</tcp_port><interserver_http_port>$ISP</interserver_http_port>
 <listen_host>127.0.0.1</listen_host>
 <path>$W/d/data/</path><tmp_path>$W/d/tmp/</tmp_path><user_files_path>$W/d/uf/</user_files_path><format_schema_path>$W/d/fs/</format_schema_path>
 <mark_cache_size>5368709120</mark_cache_size><max_concurrent_queries>50</max_concurrent_queries>
 <users_config>users.xml</users_config><default_profile>default</default_profile><default_database>default</default_database><timezone>UTC</timezone>
</yandex>
XML
cat > "$W/d/users.xml" <<XML
<?xml version="1.0"?>
<yandex><profiles><default><max_memory_usage>2000000000</max_memory_usage></default></profiles>
<users><default><password></password><networks><ip>127.0.0.1</ip></networks><profile>default</profile><quota>default</quota></default></users>
<quotas><default></default></quotas></yandex>
XML
clickhouse-server --config-file="$W/d/config.xml" >"$W/d/stdout.log" 2>&1 &
CHPID=$!
URL="http://127.0.0.1:$HTTP/"
q() { curl -sf "$URL${2:-}" --data-binary "$1"; }
for _ in $(seq 1 300); do q 'SELECT 1' >/dev/null 2>&1 && break; sleep 0.1; done
python3 - "$W/rows.tsv" <<'PY'
import random, sys
random.seed(7)
ws = 1764700000 // 60 * 60
with open(sys.argv[1], "w") as out:
    for r in range(500):
        agent = "agent-%04d" % (r % 50); host = "host-%04d.site%03d.example" % (r % 50, r % 25)
        for i in range(1000):
            la = "10.%d.%d.%d" % (r % 25, i % 250, 1 + (i * 7) % 250)
            ra = "10.%d.%d.%d" % ((r + 3) % 25, (i * 3) % 250, 1 + i % 250)
            cols = [str(ws), agent, str(r // 50 + 1), str(i), host, "socket", "tcp", la, str(40000 + i), ra,
                    str(443 if i % 3 else 5201), random.choice(["client", "server"]),
                    str(random.randint(1000, 10**9)), str(random.randint(100, 10**7)),
                    "\\N", "\\N", "\\N", "\\N", "0", "0", str(1000 + i % 300), str(1000 + i % 20),
                    "user%d" % (i % 20), random.choice(["rsync", "python3", "curl"]), "wf-%d" % (i % 9),
                    "\\N", "", "", ""]
            out.write("\t".join(cols) + "\n")
PY
DDL="(window_start DateTime, agent_id String, seq UInt64, idx UInt32, host String, source String, proto Nullable(String), local_addr Nullable(String), local_port Nullable(UInt16), remote_addr Nullable(String), remote_port Nullable(UInt16), role Nullable(String), tx_bytes UInt64, rx_bytes UInt64, nfs_server Nullable(String), nfs_port Nullable(UInt16), nfs_export Nullable(String), nfs_op Nullable(String), nfs_bytes UInt64, nfs_ops UInt64, pid Nullable(UInt32), uid Nullable(UInt32), user_name Nullable(String), program Nullable(String), workflow Nullable(String), container Nullable(String), namespace String, pod String, container_name String) ENGINE = ReplacingMergeTree PARTITION BY toYYYYMMDD(window_start) ORDER BY (window_start, agent_id, seq, idx)"
q "CREATE TABLE default.src $DDL"
curl -sf "${URL}?query=INSERT%20INTO%20default.src%20FORMAT%20TabSeparated" --data-binary @"$W/rows.tsv"
SEL="SELECT * FROM default.src ORDER BY agent_id, seq, idx FORMAT"
q "$SEL TabSeparated" > "$W/TabSeparated"
q "$SEL RowBinary" > "$W/RowBinary"
q "$SEL Native" "?max_block_size=1000" > "$W/Native1k"
q "$SEL Native" "?max_block_size=100000" > "$W/Native100k"
q "$SEL Native" "?max_block_size=1000000" > "$W/Native1m"
N=$(q "SELECT count() FROM default.src")
echo "rows: $N; bytes: $(for f in TabSeparated RowBinary Native1k Native100k Native1m; do printf '%s %s  ' $f "$(stat -c %s "$W/$f")"; done)"
echo "machine: $(nproc) cores; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
cpu() { awk '{print $14 + $15}' "/proc/$CHPID/stat"; }
tck=$(getconf CLK_TCK)
for round in $(seq 1 "$ROUNDS"); do
  for how in TabSeparated RowBinary Native1k Native100k Native1m client; do
    q "DROP TABLE IF EXISTS default.t"
    q "CREATE TABLE default.t $DDL"
    c0=$(cpu); t0=$(date +%s.%N); extra=""
    if [ "$how" = client ]; then
      /usr/bin/time -f '%U %S' -o "$W/ctime" clickhouse-client --port "$TCP" \
        --query "INSERT INTO default.t FORMAT TabSeparated" < "$W/TabSeparated"
      extra=$(awk '{printf " client_cpu_s=%.2f", $1 + $2}' "$W/ctime")
    else
      fmt=${how%%[0-9]*}
      curl -sf "${URL}?query=INSERT%20INTO%20default.t%20FORMAT%20$fmt" --data-binary @"$W/$how"
    fi
    t1=$(date +%s.%N); c1=$(cpu)
    got=$(q "SELECT count() FROM default.t")
    [ "$got" = "$N" ] || { echo "$how: $got rows, not $N" >&2; exit 1; }
    awk -v r="$round" -v h="$how" -v w="$(echo "$t1 - $t0" | bc)" -v c="$((c1 - c0))" -v t="$tck" -v n="$N" -v e="$extra" \
      -v l="$(cut -d' ' -f1 /proc/loadavg)" \
      'BEGIN { printf "round %s %-12s wall %.2f s, server CPU %.2f s (%.2f us per flow)%s, load %s\n", r, h, w, c / t, c / t / n * 1e6, e, l }'
  done
done
