#!/usr/bin/env bash
# Starts or stops a real snmpd inside a network namespace, configured the way the poller tests use
# it (for the e2e helper and demos): community "public" (read) and "private" (write, for the
# nsCacheTimeout SET), SNMPv3 user "wluser" SHA/AES authPriv with passwords "authpass123" /
# "privpass123", private pidfile, persistent dir and log under DIR; secrets written to
# DIR/community, DIR/authpw, DIR/privpw for the wanledger config's *_file keys.
#   wlp_snmpd.sh start NETNS AGENTADDR DIR [CACHE_SECONDS]   e.g. start wlp-r1 udp:10.1.255.1:161 /tmp/x 1
#   wlp_snmpd.sh stop DIR
set -euo pipefail
export MIBS=
case "${1:-}" in
start)
  ns=$2; addr=$3; dir=$4; cache=${5:-1}
  mkdir -p "$dir/persist"
  cat > "$dir/snmpd.conf" <<CONF
agentaddress $addr
rocommunity public default
rwcommunity private default
createUser wluser SHA "authpass123" AES "privpass123"
rouser wluser authpriv
CONF
  printf 'public\n' > "$dir/community"; printf 'authpass123\n' > "$dir/authpw"
  printf 'privpass123\n' > "$dir/privpw"
  SNMP_PERSISTENT_DIR=$dir/persist ip netns exec "$ns" snmpd -C -c "$dir/snmpd.conf" \
    -p "$dir/snmpd.pid" -Lf "$dir/snmpd.log" -I -smux
  target=${addr#udp:}
  for _ in $(seq 1 100); do
    if ip netns exec "$ns" snmpget -v2c -c public -t 0.2 -r 0 "$target" 1.3.6.1.2.1.1.3.0 \
        >/dev/null 2>&1; then
      # interface cache: CACHE_SECONDS instead of 3 s (lost when snmpd restarts)
      ip netns exec "$ns" snmpset -v2c -c private "$target" \
        1.3.6.1.4.1.8072.1.5.3.1.2.1.3.6.1.2.1.2.2 i "$cache" >/dev/null
      exit 0
    fi
    sleep 0.05
  done
  echo "wlp_snmpd: snmpd in $ns on $addr did not answer; see $dir/snmpd.log" >&2; exit 1 ;;
stop)
  dir=$2
  [ -f "$dir/snmpd.pid" ] || exit 0
  pid=$(cat "$dir/snmpd.pid"); kill "$pid" 2>/dev/null || exit 0
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || exit 0; sleep 0.05; done
  kill -9 "$pid" 2>/dev/null || true ;;
*) sed -n '2,9p' "$0" >&2; exit 2 ;;
esac
