#!/usr/bin/env bash
# The whole wanledger stack on one machine, over the simulated sites of topology.sh: snmpd in
# every site router (the "switch"), the poller, the reconciler (heatmap on loopback), one agent
# per host that has a recorder (filtered to its own network namespace), the "dupedog" transfer
# service on a pair of hosts with its logs shipped by `wanledger ship`, and the data servers the
# scenario's load reads from. Used by demo.sh and by the end-to-end test.
#
#   stack.sh up   --run DIR --build DIR --db CONNINFO [--port P] [--webhook URL]
#                 [--prefix P] [--window S] [--lifetime S] [--gnmi-site SITE|none]
#                 [--gnmi-port P] [--flow-site SITE|none] [--flow-port P]
#   stack.sh down --run DIR [--prefix P]
#   stack.sh status --run DIR
#
# Everything it starts is recorded in DIR/pids (stopped by `down`, and by `up` when it is run
# again); logs go to DIR/logs. The configuration it writes is DIR/config.json. One router
# (--gnmi-site, default osl) is polled through gnmic-format events on the poller's gNMI TCP
# listener (scripts/gnmi-feed.sh stands in for gnmic) instead of SNMP; its snmpd runs anyway.
# One router (--flow-site, default nyc) exports sampled flows of its WAN interfaces (softflowd,
# IPFIX, 1 in 10) over its management veth (topology.sh mgmt) to the poller's flow collector,
# which names the host pairs behind a red cell.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cmd=${1:-}
shift || true
RUN= BUILD= DB= PORT=7070 WEBHOOK= PREFIX=${WLE_PREFIX:-wle-} WINDOW=10 LIFETIME=3600
GNMI_SITE=osl GNMI_PORT=57400 FLOW_SITE=nyc FLOW_PORT=4739
while [ $# -gt 0 ]; do
  case $1 in
  --run) RUN=$2; shift 2 ;;
  --build) BUILD=$2; shift 2 ;;
  --db) DB=$2; shift 2 ;;
  --port) PORT=$2; shift 2 ;;
  --webhook) WEBHOOK=$2; shift 2 ;;
  --prefix) PREFIX=$2; shift 2 ;;
  --window) WINDOW=$2; shift 2 ;;
  --lifetime) LIFETIME=$2; shift 2 ;;
  --gnmi-site) GNMI_SITE=$2; shift 2 ;;
  --gnmi-port) GNMI_PORT=$2; shift 2 ;;
  --flow-site) FLOW_SITE=$2; shift 2 ;;
  --flow-port) FLOW_PORT=$2; shift 2 ;;
  *) echo "stack.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[ -n "$RUN" ] || { echo "stack.sh: --run DIR is required" >&2; exit 2; }
mkdir -p "$RUN"
RUN=$(cd "$RUN" && pwd)
PIDS=$RUN/pids
LOGS=$RUN/logs
export MIBS= MIBDIRS=/nonexistent # numeric OIDs only: Debian ships no IETF MIBs

log() { printf '%s stack: %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

# start NAME NETNS|- CMD...: runs CMD in the background (inside NETNS unless "-"), records pid.
# Each runs in a session of its own, so Ctrl-C in the demo's terminal does not reach it (the
# demo's --keep leaves it running; `down` stops it by its pid).
start() {
  local name=$1 ns=$2
  shift 2
  mkdir -p "$PIDS" "$LOGS"
  if [ "$ns" = - ]; then
    setsid "$@" >>"$LOGS/$name.log" 2>&1 </dev/null &
  else
    setsid ip netns exec "$ns" "$@" >>"$LOGS/$name.log" 2>&1 </dev/null &
  fi
  echo $! >"$PIDS/$name.pid"
}

stop_all() {
  [ -d "$PIDS" ] || return 0
  local f pid
  for f in "$PIDS"/*.pid; do
    [ -e "$f" ] || continue
    pid=$(cat "$f")
    kill "$pid" 2>/dev/null || true
  done
  for _ in $(seq 50); do
    local alive=0
    for f in "$PIDS"/*.pid; do
      [ -e "$f" ] || continue
      kill -0 "$(cat "$f")" 2>/dev/null && alive=1
    done
    [ $alive = 0 ] && break
    sleep 0.1
  done
  for f in "$PIDS"/*.pid; do
    [ -e "$f" ] || continue
    kill -9 "$(cat "$f")" 2>/dev/null || true
    rm -f "$f"
  done
}

wait_port() {
  local port=$1 secs=$2
  for _ in $(seq $((secs * 10))); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

wait_file() {
  for _ in $(seq $(($2 * 10))); do [ -e "$1" ] && return 0; sleep 0.1; done
  return 1
}

write_config() {
  umask 077
  token() { head -c 18 /dev/urandom | base64 | tr '+/' 'xy'; }
  if [ ! -f "$RUN/tokens.json" ]; then
    cat >"$RUN/tokens.json" <<EOF
{"agent": ["agent-$(token)"], "poller": ["poller-$(token)"],
 "service": ["service-$(token)"], "reader": ["reader-$(token)"],
 "operator": ["operator-$(token)"]}
EOF
  fi
  sed -n 's/.*"agent": \["\([^"]*\)".*/\1/p' "$RUN/tokens.json" >"$RUN/agent.token"
  echo public >"$RUN/community"
  umask 022
  local devices="" site sep=""
  for site in nyc chi osl; do
    if [ "$site" = "$GNMI_SITE" ]; then
      devices+="$sep
    {\"name\": \"$site-r\", \"site\": \"$site\", \"gnmi\": {}}"
    else
      devices+="$sep
    {\"name\": \"$site-r\", \"site\": \"$site\", \"snmp\": {\"address\": \"unix:$RUN/snmp/$site.sock\",
     \"version\": \"2c\", \"community_file\": \"community\", \"interval_seconds\": 2}}"
    fi
    if [ "$site" = "$FLOW_SITE" ]; then
      devices="${devices%\}}, \"flows\": {\"listen\": \"$(flow_collector):$FLOW_PORT\", \"protocol\": \"ipfix\"}}"
    fi
    sep=,
  done
  local gnmi_listen=""
  [ "$GNMI_SITE" != none ] && gnmi_listen=", \"gnmi_tcp_listen\": \"127.0.0.1:$GNMI_PORT\""
  local webhooks="[]"
  [ -n "$WEBHOOK" ] && webhooks="[\"$WEBHOOK\"]"
  cat >"$RUN/config.json" <<EOF
{
  "window_seconds": $WINDOW, "grace_seconds": 5, "tick_seconds": 1,
  "database": "$DB",
  "listen": "127.0.0.1:$PORT",
  "tokens_file": "tokens.json",
  "open_on_loopback": true,
  "sites": [{"name": "nyc", "prefixes": ["10.1.0.0/16"]},
            {"name": "chi", "prefixes": ["10.2.0.0/16"]},
            {"name": "osl", "prefixes": ["10.3.0.0/16"]}],
  "devices": [$devices],
  "links": [
    {"device": "nyc-r", "interface": "wan-chi", "site": "nyc", "peer_site": "chi",
     "circuit": "nyc-chi-1", "capacity_bps": 200000000},
    {"device": "chi-r", "interface": "wan-nyc", "site": "chi", "peer_site": "nyc",
     "circuit": "nyc-chi-1", "capacity_bps": 200000000},
    {"device": "chi-r", "interface": "wan-osl", "site": "chi", "peer_site": "osl",
     "circuit": "chi-osl-1", "capacity_bps": 100000000},
    {"device": "osl-r", "interface": "wan-chi", "site": "osl", "peer_site": "chi",
     "circuit": "chi-osl-1", "capacity_bps": 100000000}],
  "routes": [{"src": "nyc", "dst": "osl", "via": ["chi"]},
             {"src": "osl", "dst": "nyc", "via": ["chi"]}],
  "dedup": {"nfs_ports": [2049],
            "services": [{"name": "dupedog", "ports": [7100], "users": ["dupedog"]}]},
  "endpoints": [{"name": "nyc-data (big file)", "address": "10.1.0.10", "ports": [9000]},
                {"name": "chi-cache", "address": "10.2.0.12", "ports": [9000]}],
  "thresholds": {"green": 0.95, "red": 0.80, "min_gap_bytes": 5000000, "over": 1.05,
                 "alert_windows": 2, "resolve_windows": 2, "saturation": 0.90,
                 "counter_staleness_seconds": 1},
  "alerts": {"webhooks": $webhooks, "resend_seconds": 30},
  "throttle": {"auto_enforce_workflows": ["backtest-17"], "proposal_ttl_seconds": 600},
  "poller": {"spool_dir": "$RUN/spool/poller"$gnmi_listen}
}
EOF
}

# The collector's address on the flow site's management veth.
flow_collector() {
  "$here/topology.sh" mgmt --prefix "$PREFIX" | awk -v s="$FLOW_SITE" '$1 == s { print $2 }'
}

# softflowd in the flow site's router: one per WAN interface, IPFIX, systematic 1-in-10 sampling,
# flows expired every 2 s (so a window's bytes reach the collector well within its 5 s close
# delay), each with its interface's ifIndex in the records.
start_flow_exporters() {
  local ns="${PREFIX}${FLOW_SITE}-r" dev idx col
  command -v softflowd >/dev/null || { log "softflowd is not installed (scripts/install-deps.sh)"; return 1; }
  col=$(flow_collector)
  for dev in $(ip netns exec "$ns" ls /sys/class/net | grep '^wan-'); do
    idx=$(ip netns exec "$ns" cat "/sys/class/net/$dev/ifindex")
    start "softflowd-$FLOW_SITE-$dev" "$ns" softflowd -d -i "$idx:$dev" -v 10 -s 10 \
      -n "$col:$FLOW_PORT" -B 16777216 -t maxlife=2 -t udp=1 -t expint=1 \
      -p "$RUN/softflowd-$dev.pid" -c "$RUN/softflowd-$dev.ctl"
  done
}

# snmpd in a router namespace, answering on a unix socket in RUN/snmp (reachable from the root
# namespace without any route into the simulated sites), with its interface cache off.
start_snmpd() {
  local site=$1 ns="${PREFIX}${site}-r" dir=$RUN/snmp
  mkdir -p "$dir/persist-$site"
  rm -f "$dir/$site.sock"
  cat >"$dir/$site.conf" <<EOF
agentaddress unix:$dir/$site.sock
com2secunix rosec $dir/$site.sock public
com2secunix rwsec $dir/$site.sock private
group rogrp v2c rosec
group rwgrp v2c rwsec
view all included .1
access rogrp "" any noauth exact all none none
access rwgrp "" any noauth exact all all none
dontLogTCPWrappersConnects yes
EOF
  SNMP_PERSISTENT_DIR=$dir/persist-$site start "snmpd-$site" "$ns" \
    snmpd -f -Lf "$LOGS/snmpd-$site.log" -C -c "$dir/$site.conf" -M /dev/null
  wait_file "$dir/$site.sock" 10 || { log "snmpd in $ns did not start"; return 1; }
  # nsCacheTimeout of the interface table (FACTS.md): 0 instead of 3 s (lost on restart), so
  # every poll reads the kernel's counters fresh. With 1 s, 10 s windows read up to 10 % off at
  # every change of rate (two windows "over" at load onset, a throttled window back above 90 %
  # right after the throttle bound) -- thresholds.counter_staleness_seconds is what the
  # reconciler allows for that on real devices; here it stays 1 s for the 2 s poll interval.
  local ok=0
  for _ in $(seq 20); do
    if snmpset -M /dev/null -v2c -c private -t 1 -r 0 "unix:$dir/$site.sock" \
      1.3.6.1.4.1.8072.1.5.3.1.2.1.3.6.1.2.1.2.2 i 0 >/dev/null 2>&1; then ok=1; break; fi
    sleep 0.2
  done
  [ $ok = 1 ] || { log "snmpset nsCacheTimeout on $site failed"; return 1; }
}

up() {
  [ -n "$BUILD" ] && [ -n "$DB" ] || { echo "stack.sh up: --build and --db are required" >&2; exit 2; }
  local WL=$BUILD/cmd/wanledger AGENT=$BUILD/agentlib/wanledger-agent TRAFFIC=$BUILD/tests/e2e/wl-traffic
  [ -x "$WL" ] || { echo "stack.sh: $WL is not built" >&2; exit 1; }
  [ -x "$TRAFFIC" ] || { echo "stack.sh: $TRAFFIC is not built" >&2; exit 1; }
  stop_all
  "$here/topology.sh" up --prefix "$PREFIX"
  write_config
  mkdir -p "$RUN/dupedog" "$RUN/spool" "$LOGS"
  log "migrating $DB"
  "$WL" --config "$RUN/config.json" migrate >>"$LOGS/migrate.log" 2>&1 ||
    { log "migrate failed: $(tail -3 "$LOGS/migrate.log")"; exit 1; }
  local site
  for site in nyc chi osl; do start_snmpd "$site"; done
  log "snmpd up in ${PREFIX}nyc-r, ${PREFIX}chi-r, ${PREFIX}osl-r"

  start reconciler - "$WL" --config "$RUN/config.json" reconcile
  if ! wait_port "$PORT" 20; then
    log "reconciler did not listen on 127.0.0.1:$PORT: $(tail -3 "$LOGS/reconciler.log")"
    exit 1
  fi
  start poller - "$WL" --config "$RUN/config.json" poll --name stack-poller
  if [ "$GNMI_SITE" != none ]; then
    wait_port "$GNMI_PORT" 20 || { log "poller did not listen for gNMI on $GNMI_PORT"; exit 1; }
    start "gnmi-feed-$GNMI_SITE" - "$here/gnmi-feed.sh" --netns "${PREFIX}${GNMI_SITE}-r" \
      --source "$GNMI_SITE-r" --to "127.0.0.1:$GNMI_PORT" --seconds "$LIFETIME"
    log "reconciler on http://127.0.0.1:$PORT, poller: SNMP for 2 routers, gNMI events for $GNMI_SITE-r"
  else
    log "reconciler on http://127.0.0.1:$PORT, poller: SNMP for 3 routers"
  fi

  if [ "$FLOW_SITE" != none ]; then
    start_flow_exporters || exit 1
    log "softflowd in ${PREFIX}${FLOW_SITE}-r exports to $(flow_collector):$FLOW_PORT"
  fi

  # Agents: one per host with a recorder, filtered to that host's namespace.
  local ns site host addr agent n=0
  if [ -x "$AGENT" ]; then
    while read -r ns site host addr agent; do
      [ "$agent" = agent ] || continue
      mkdir -p "$RUN/spool/agent-$host"
      start "agent-$host" - "$AGENT" --reconciler "http://127.0.0.1:$PORT" \
        --token-file "$RUN/agent.token" --window "$WINDOW" --netns "/run/netns/$ns" \
        --host "$host" --spool "$RUN/spool/agent-$host" --workflow-env WANLEDGER_WORKFLOW \
        --throttle-interval 2
      n=$((n + 1))
    done < <("$here/topology.sh" hosts --prefix "$PREFIX")
    log "$n agents started"
  else
    log "WARNING: $AGENT is not built: no agents (every cell will read as unattributed)"
  fi

  # Data servers: nyc's data server and chi's cache (socket reads), chi's filer (replication
  # target), and dupedog on its port 7100 at both ends, logging every copy it serves.
  local T=$LIFETIME
  start srv-nyc-data "${PREFIX}nyc-data" "$TRAFFIC" serve --listen 10.1.0.10:9000 --seconds "$T"
  start srv-chi-cache "${PREFIX}chi-cache" "$TRAFFIC" serve --listen 10.2.0.12:9000 --seconds "$T"
  start srv-chi-filer "${PREFIX}chi-filer" "$TRAFFIC" serve --listen 10.2.0.20:8800 --seconds "$T"
  start dupedog-nyc "${PREFIX}nyc-dd" "$TRAFFIC" serve --listen 10.1.0.11:7100 --seconds "$T" \
    --service dupedog --log "$RUN/dupedog/nyc-dd.log"
  start dupedog-chi "${PREFIX}chi-dd" "$TRAFFIC" serve --listen 10.2.0.11:7100 --seconds "$T" \
    --service dupedog --log "$RUN/dupedog/chi-dd.log"
  touch "$RUN/dupedog/nyc-dd.log" "$RUN/dupedog/chi-dd.log"
  start ship - "$WL" --config "$RUN/config.json" ship --state "$RUN/dupedog/ship.state" \
    "$RUN/dupedog/nyc-dd.log" "$RUN/dupedog/chi-dd.log"
  log "data servers, dupedog and its shipper started"
  sleep 1
  local f bad=0
  for f in "$PIDS"/*.pid; do
    if ! kill -0 "$(cat "$f")" 2>/dev/null; then
      log "$(basename "$f" .pid) exited early: $(tail -2 "$LOGS/$(basename "$f" .pid).log" | tr '\n' ' ')"
      bad=1
    fi
  done
  return $bad
}

status() {
  local f
  for f in "$PIDS"/*.pid; do
    [ -e "$f" ] || continue
    if kill -0 "$(cat "$f")" 2>/dev/null; then echo "running $(basename "$f" .pid)"; else echo "dead    $(basename "$f" .pid)"; fi
  done
}

case $cmd in
up) up ;;
down) stop_all; "$here/topology.sh" down --prefix "$PREFIX" ;;
status) status ;;
*) echo "usage: stack.sh up|down|status --run DIR ..." >&2; exit 2 ;;
esac
