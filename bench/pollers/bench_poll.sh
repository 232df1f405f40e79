#!/usr/bin/env bash
# One SNMP poll of 1,000 interfaces on a local snmpd: `wanledger poll --once` against
# snmpget + snmpbulkwalk of the same columns and Debian's prometheus-snmp-exporter with a numeric-
# OID module of the same columns, side by side in one run; then 20 snmpd instances (devices) at
# once. Prints p50/p99/max seconds per poll with sample counts, ratios, and snmpd's CPU per poll.
# Usage (root): bench/pollers/bench_poll.sh [BUILD_DIR] [POLLS]   (default build/rel, 10)
set -euo pipefail
BUILD=${1:-build/rel}
POLLS=${2:-10}
HERE=$(cd "$(dirname "$0")" && pwd)
WL=$BUILD/cmd/wanledger
[ -x "$WL" ] || { echo "bench: $WL not built (cmake -S . -B $BUILD && cmake --build $BUILD --target wanledger)" >&2; exit 2; }
command -v prometheus-snmp-exporter >/dev/null || { echo "bench: prometheus-snmp-exporter missing (scripts/install-deps.sh)" >&2; exit 2; }
export MIBS=
NS=wlp-bench; HUB=wlp-bhub; NDEV=20; PAIRS=500; DEVPAIRS=25
DIR=$(mktemp -d /tmp/wlp-bench-XXXXXX)
cleanup() {
  local pids=""
  for f in "$DIR"/*.pid; do [ -f "$f" ] && pids="$pids $(cat "$f")"; done
  for p in $pids; do kill "$p" 2>/dev/null || true; done
  for _ in $(seq 1 100); do
    alive=0; for p in $pids; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ $alive = 0 ] && break; sleep 0.1
  done
  ip netns del $NS 2>/dev/null || true; ip netns del $HUB 2>/dev/null || true
  for i in $(seq 1 $NDEV); do ip netns del wlp-bd$i 2>/dev/null || true; done
  rm -rf "$DIR"
}
trap cleanup EXIT

snmpd_conf() { # $1 file, $2 agentaddress, $3 allowed source
  printf 'agentaddress %s\nrocommunity public %s\nrwcommunity private %s\n' "$2" "$3" "$3" > "$1"
}
start_snmpd() { # $1 netns, $2 name
  mkdir -p "$DIR/$2.persist"
  SNMP_PERSISTENT_DIR=$DIR/$2.persist ip netns exec "$1" snmpd -C -c "$DIR/$2.conf" \
    -p "$DIR/$2.pid" -Lf "$DIR/$2.log" -I -smux
}

echo "setting up $NS: $PAIRS veth pairs ($((2 * PAIRS)) interfaces) and snmpd"
ip netns add $NS
ip -n $NS link set lo up
for i in $(seq 1 $PAIRS); do echo "link add v$i type veth peer name w$i"; done | ip -n $NS -batch -
snmpd_conf "$DIR/big.conf" udp:127.0.0.1:16161 127.0.0.1
start_snmpd $NS big
sleep 1
# no cache reloads during the measured polls (all tools equal): nsCacheTimeout of ifTable 3600 s
ip netns exec $NS snmpset -v2c -c private 127.0.0.1:16161 1.3.6.1.4.1.8072.1.5.3.1.2.1.3.6.1.2.1.2.2 i 3600 >/dev/null
ip netns exec $NS snmpbulkwalk -v2c -c public -Cr50 127.0.0.1:16161 1.3.6.1.2.1.31.1.1.1.1 >/dev/null

echo "setting up $NDEV devices: namespaces wlp-bd1..$NDEV with $((2 * DEVPAIRS)) interfaces each, snmpd on 10.88.N.2:161"
ip netns add $HUB; ip -n $HUB link set lo up
for i in $(seq 1 $NDEV); do
  ip netns add wlp-bd$i; ip -n wlp-bd$i link set lo up
  ip link add wlpbh$i netns $HUB type veth peer name uplink netns wlp-bd$i
  ip -n $HUB addr add 10.88.$i.1/30 dev wlpbh$i; ip -n $HUB link set wlpbh$i up
  ip -n wlp-bd$i addr add 10.88.$i.2/30 dev uplink; ip -n wlp-bd$i link set uplink up
  for j in $(seq 1 $DEVPAIRS); do echo "link add v$j type veth peer name w$j"; done | ip -n wlp-bd$i -batch -
  snmpd_conf "$DIR/d$i.conf" udp:10.88.$i.2:161 10.88.$i.1
  start_snmpd wlp-bd$i d$i
done
sleep 1
for i in $(seq 1 $NDEV); do
  ip netns exec $HUB snmpset -v2c -c private 10.88.$i.2:161 1.3.6.1.4.1.8072.1.5.3.1.2.1.3.6.1.2.1.2.2 i 3600 >/dev/null
done

python3 "$HERE/bench_poll.py" --dir "$DIR" --wl "$WL" --polls "$POLLS" --ns $NS --hub $HUB \
  --pairs $PAIRS --ndev $NDEV --devpairs $DEVPAIRS
