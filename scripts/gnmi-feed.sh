#!/usr/bin/env bash
# A stand-in for gnmic (not packaged for Debian): reads the WAN interface counters of a router
# namespace every INTERVAL seconds and streams them, in gnmic's `format: event` JSON, over TCP to
# `wanledger poll`'s gnmi_tcp_listen, the way gnmic's tcp output would.
#
#   gnmi-feed.sh --netns NS --source NAME --to HOST:PORT [--interval S] [--seconds T]
#
# Bounded: stops after T seconds (default 3600). Only interfaces named wan-* are sent.
set -euo pipefail
NS= SOURCE= TO= INTERVAL=2 SECONDS_MAX=3600
while [ $# -gt 0 ]; do
  case $1 in
  --netns) NS=$2; shift 2 ;;
  --source) SOURCE=$2; shift 2 ;;
  --to) TO=$2; shift 2 ;;
  --interval) INTERVAL=$2; shift 2 ;;
  --seconds) SECONDS_MAX=$2; shift 2 ;;
  *) echo "gnmi-feed.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[ -n "$NS" ] && [ -n "$SOURCE" ] && [ -n "$TO" ] ||
  { echo "usage: gnmi-feed.sh --netns NS --source NAME --to HOST:PORT" >&2; exit 2; }
host=${TO%:*}
port=${TO##*:}
end=$(($(date +%s) + SECONDS_MAX))

connect() {
  while [ "$(date +%s)" -lt $end ]; do
    if exec 3<>"/dev/tcp/$host/$port"; then return 0; fi 2>/dev/null
    sleep 1
  done
  return 1
}
connect || exit 1

P=/interfaces/interface/state
# One notification per interface: the counters the reconciler needs, as gnmic would flatten them.
sample() {
  ip netns exec "$NS" sh -c '
    for d in /sys/class/net/wan-*; do
      [ -e "$d" ] || continue
      s=$d/statistics
      echo "${d##*/} $(cat $s/rx_bytes) $(cat $s/tx_bytes) $(cat $s/rx_packets) $(cat $s/tx_packets)"
    done'
}

while [ "$(date +%s)" -lt $end ]; do
  ts=$(date +%s%N)
  msg="["
  sep=
  while read -r ifname rxb txb rxp txp; do
    msg+="$sep{\"name\":\"wan-counters\",\"timestamp\":$ts,\"tags\":{\"source\":\"$SOURCE\",\"interface_name\":\"$ifname\"},\"values\":{\"$P/counters/in-octets\":$rxb,\"$P/counters/out-octets\":$txb,\"$P/counters/in-unicast-pkts\":$rxp,\"$P/counters/out-unicast-pkts\":$txp,\"$P/counters/last-clear\":0}}"
    sep=,
  done < <(sample)
  msg+="]"
  if ! printf '%s\n' "$msg" >&3 2>/dev/null; then
    exec 3>&- || true
    connect || exit 1
  fi
  sleep "$INTERVAL"
done
