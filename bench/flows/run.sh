#!/usr/bin/env bash
# bench/flows/run.sh CAPTURE [N]: the same IPFIX capture (length-prefixed datagrams, as written by
# `flow_replay record`) decoded in process, then replayed open-loop over loopback at several
# rates, once to `wanledger poll` (its flow collector) and once to nfdump's nfcapd, N datagrams
# per rate (default 200000). Per receiver and rate: datagrams it counted, flows/records decoded,
# and its CPU time (utime+stime from /proc) per 1,000 datagrams. Needs a release build in
# build/rel (flow_replay, wanledger) and nfdump. No root.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cap=$1
n=${2:-200000}
bin=$root/build/rel
rep=$bin/bench/flows/flow_replay
work=$(mktemp -d /tmp/wl-bench-flows.XXXXXX)
trap 'rm -rf "$work"' EXIT
per=$(python3 -c "import struct,sys
d=open(sys.argv[1],'rb').read();o=0;k=0
while o+4<=len(d):
  l=struct.unpack('<I',d[o:o+4])[0];o+=4+l;k+=1
print(k)" "$cap")
rounds=$(( (n + per - 1) / per ))
echo "capture: $per datagrams, replayed $rounds times per rate ($((per * rounds)) datagrams)"
"$rep" decode "$cap" "$rounds"

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
port_a=$(( 20000 + RANDOM % 10000 )); port_b=$(( port_a + 1 ))
cat >"$work/config.json" <<JSON
{"window_seconds": 60, "database": "host=/nonexistent", "listen": "127.0.0.1:1",
 "sites": [{"name": "a", "prefixes": ["10.81.1.0/24"]}, {"name": "b", "prefixes": ["10.81.2.0/24"]}],
 "devices": [{"name": "r1", "site": "a", "flows": {"listen": "127.0.0.1:$port_a", "protocol": "ipfix"}}],
 "links": [{"device": "r1", "interface": "x", "site": "a", "peer_site": "b", "circuit": "ab"}]}
JSON
printf '| offered datagrams/s | receiver | datagrams counted | records decoded | CPU ms per 1,000 datagrams |\n|---|---|---|---|---|\n' >"$work/table.md"
for rate in 20000 100000 300000; do
  # wanledger poll: the flow collector alone (--stdout prints the final batch with its counters)
  "$bin/cmd/wanledger" --config "$work/config.json" poll --no-snmp --stdout >"$work/wl.out" 2>"$work/wl.err" &
  wl=$!
  sleep 0.5
  t0=$(cpu_ticks $wl)
  "$rep" send "$cap" "$port_a" "$rate" "$rounds" >"$work/send.txt"
  sleep 1
  t1=$(cpu_ticks $wl)
  kill $wl; wait $wl 2>/dev/null || true
  read -r dg rc < <(python3 -c "import json,sys
last=[json.loads(l) for l in open(sys.argv[1]) if l.strip()][-1]
d=last['devices'][0]; print(d['datagrams'], d['records'])" "$work/wl.out")
  echo "| $rate | wanledger poll | $dg | $rc | $(python3 -c "print(f'{($t1-$t0)*1000/$hz/max($dg,1)*1000:.1f}')") |" >>"$work/table.md"
  # nfcapd
  mkdir -p "$work/nf-$rate"
  nfcapd -b 127.0.0.1 -p "$port_b" -w "$work/nf-$rate" -t 3600 -B 8388608 >"$work/nf.log" 2>&1 &
  nf=$!
  sleep 0.5
  t0=$(cpu_ticks $nf)
  "$rep" send "$cap" "$port_b" "$rate" "$rounds" >"$work/send-nf.txt"
  sleep 1
  t1=$(cpu_ticks $nf)
  kill $nf; wait $nf 2>/dev/null || true
  flows=$(nfdump -R "$work/nf-$rate" -I 2>/dev/null | awk '/^Flows:/ {print $2; exit}')
  pk=$(nfdump -R "$work/nf-$rate" -I 2>/dev/null | awk '/^Sequence failures:/ {print $3; exit}')
  echo "| $rate | nfcapd (nfdump 1.7.1) | – | ${flows:-?} | $(python3 -c "print(f'{($t1-$t0)*1000/$hz/max($per*$rounds,1)*1000:.1f}')") |" >>"$work/table.md"
  echo "rate $rate: $(cat "$work/send.txt")"
done
cat "$work/table.md"
