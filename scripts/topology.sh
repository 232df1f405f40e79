#!/usr/bin/env bash
# The simulated WAN: three sites (nyc, chi, osl), each a router namespace with a LAN bridge and a
# few host namespaces, joined by WAN circuits (veth pairs rate-capped with tbf, offloads off so
# interface counters count frames as a switch would). osl reaches nyc via chi.
#
#   topology.sh up|down|status|hosts|mgmt [--prefix P]  (default prefix "wle-", or $WLE_PREFIX)
#
# Idempotent: `up` creates only what is missing and re-applies addresses, routes and qdiscs;
# `down` kills what runs inside the namespaces and deletes them; both succeed when run twice.
# Namespaces: ${P}nyc-r, ${P}nyc-data, …; `hosts` prints "netns site host address agent" lines.
# Management network: every router has a point-to-point veth "mgmt" to the root namespace (a /30
# per site, 10.254.H.4·octet/30, H from the prefix), so what runs in a router (a flow exporter)
# reaches a collector in the root namespace at a routed address, as a router reaches its
# collector; `mgmt` prints "site collector_address router_address" lines.
set -euo pipefail

PREFIX=${WLE_PREFIX:-wle-}
cmd=${1:-}
shift || true
while [ $# -gt 0 ]; do
  case $1 in
  --prefix) PREFIX=$2; shift 2 ;;
  *) echo "topology.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done

# Sites: name, second octet of the /16.
SITES=(nyc:1 chi:2 osl:3)
# Hosts: site, host name, last octet, whether it has a recorder (agent). The filers record nothing:
# they are the scenario's blind spot.
HOSTS=(
  nyc:data:10:agent
  nyc:dd:11:agent
  nyc:filer:20:none
  chi:gpu:10:agent
  chi:dd:11:agent
  chi:cache:12:agent
  chi:filer:20:none
  osl:lab:10:agent
)
# WAN circuits: site a, site b, rate, interface names in a's and b's router, /30 subnet.
CIRCUITS=(
  nyc:chi:200mbit:10.255.12
  chi:osl:100mbit:10.255.23
)

site_octet() {
  local s
  for s in "${SITES[@]}"; do
    [ "${s%%:*}" = "$1" ] && { echo "${s##*:}"; return; }
  done
  echo "topology.sh: unknown site $1" >&2
  exit 2
}

ns_exists() { [ -e "/run/netns/$1" ]; }
inns() { ip netns exec "$@"; }

ensure_ns() {
  local ns=$1
  ns_exists "$ns" || ip netns add "$ns"
  inns "$ns" ip link set lo up
  # No IPv6 chatter (router solicitations, MLD) on the circuits: only the traffic we make.
  inns "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
}

# Creates the veth pair a(in ns_a) <-> b(in ns_b) unless a exists in ns_a.
ensure_veth() {
  local ns_a=$1 if_a=$2 ns_b=$3 if_b=$4
  if ! inns "$ns_a" ip link show "$if_a" >/dev/null 2>&1; then
    # Stale half of an earlier pair (peer namespace recreated): remove it first.
    inns "$ns_b" ip link del "$if_b" >/dev/null 2>&1 || true
    local tmp_a="wlt$$a" tmp_b="wlt$$b"
    ip link add "$tmp_a" type veth peer name "$tmp_b"
    ip link set "$tmp_a" netns "$ns_a"
    ip link set "$tmp_b" netns "$ns_b"
    inns "$ns_a" ip link set "$tmp_a" name "$if_a"
    inns "$ns_b" ip link set "$tmp_b" name "$if_b"
  fi
  inns "$ns_a" ip link set "$if_a" up
  inns "$ns_b" ip link set "$if_b" up
}

wan_shape() {
  local ns=$1 dev=$2 rate=$3
  inns "$ns" ethtool -K "$dev" tso off gso off gro off >/dev/null 2>&1 ||
    inns "$ns" ethtool -K "$dev" tso off gso off gro off
  # burst >= rate/HZ; a 50 ms queue so that TCP fills the circuit without heavy loss.
  inns "$ns" tc qdisc replace dev "$dev" root tbf rate "$rate" burst 256kb latency 50ms
}

# The management /30 of a site: "collector_address router_address" (10.254.H.4·oct + 1, + 2, H a
# hash of the prefix, so concurrent topologies of other prefixes rarely share a subnet).
mgmt_addrs() {
  local oct h
  oct=$(site_octet "$1")
  h=$(($(printf '%s' "$PREFIX" | cksum | cut -d' ' -f1) % 256))
  echo "10.254.$h.$((4 * oct + 1)) 10.254.$h.$((4 * oct + 2))"
}

# The root-namespace end of a router's management veth: at most 15 characters, unique per prefix.
mgmt_ifname() {
  echo "wlm$(printf '%s' "$PREFIX" | cksum | cut -d' ' -f1 | tail -c 9 | head -c 8)${1:0:1}"
}

mgmt_up() {
  local site=$1 r="${PREFIX}$1-r" dev col rtr
  dev=$(mgmt_ifname "$site")
  read -r col rtr <<<"$(mgmt_addrs "$site")"
  if ! inns "$r" ip link show mgmt >/dev/null 2>&1; then
    ip link del "$dev" >/dev/null 2>&1 || true # stale half of an earlier pair
    ip link add "$dev" type veth peer name mgmt netns "$r"
  fi
  sysctl -qw "net.ipv6.conf.$dev.disable_ipv6=1"
  inns "$r" sysctl -qw net.ipv6.conf.mgmt.disable_ipv6=1
  ip link set "$dev" up
  inns "$r" ip link set mgmt up
  ip addr replace "$col/30" dev "$dev"
  inns "$r" ip addr replace "$rtr/30" dev mgmt
}

up() {
  local s name oct r h site host last agent ns
  for s in "${SITES[@]}"; do
    name=${s%%:*}
    oct=${s##*:}
    r="${PREFIX}${name}-r"
    ensure_ns "$r"
    inns "$r" sysctl -qw net.ipv4.ip_forward=1
    inns "$r" ip link show lan >/dev/null 2>&1 || inns "$r" ip link add lan type bridge
    inns "$r" ip link set lan up
    inns "$r" ip addr replace "10.${oct}.0.1/16" dev lan
    mgmt_up "$name"
  done
  for h in "${HOSTS[@]}"; do
    IFS=: read -r site host last agent <<<"$h"
    oct=$(site_octet "$site")
    ns="${PREFIX}${site}-${host}"
    r="${PREFIX}${site}-r"
    ensure_ns "$ns"
    ensure_veth "$ns" eth0 "$r" "h-${host}"
    inns "$r" ip link set "h-${host}" master lan
    inns "$ns" ip addr replace "10.${oct}.0.${last}/16" dev eth0
    inns "$ns" ip route replace default via "10.${oct}.0.1"
  done
  local c a b rate net ra rb
  for c in "${CIRCUITS[@]}"; do
    IFS=: read -r a b rate net <<<"$c"
    ra="${PREFIX}${a}-r"
    rb="${PREFIX}${b}-r"
    ensure_veth "$ra" "wan-${b}" "$rb" "wan-${a}"
    inns "$ra" ip addr replace "${net}.1/30" dev "wan-${b}"
    inns "$rb" ip addr replace "${net}.2/30" dev "wan-${a}"
    wan_shape "$ra" "wan-${b}" "$rate"
    wan_shape "$rb" "wan-${a}" "$rate"
  done
  # Routes between site prefixes: nyc-chi and chi-osl direct, nyc-osl via chi.
  inns "${PREFIX}nyc-r" ip route replace 10.2.0.0/16 via 10.255.12.2
  inns "${PREFIX}nyc-r" ip route replace 10.3.0.0/16 via 10.255.12.2
  inns "${PREFIX}chi-r" ip route replace 10.1.0.0/16 via 10.255.12.1
  inns "${PREFIX}chi-r" ip route replace 10.3.0.0/16 via 10.255.23.2
  inns "${PREFIX}osl-r" ip route replace 10.1.0.0/16 via 10.255.23.1
  inns "${PREFIX}osl-r" ip route replace 10.2.0.0/16 via 10.255.23.1
}

all_ns() {
  local s h site host rest
  for s in "${SITES[@]}"; do echo "${PREFIX}${s%%:*}-r"; done
  for h in "${HOSTS[@]}"; do
    IFS=: read -r site host rest <<<"$h"
    echo "${PREFIX}${site}-${host}"
  done
}

down() {
  local ns pids
  for ns in $(all_ns); do
    ns_exists "$ns" || continue
    # Everything running in our namespaces was started by us (agents' children, snmpd, load).
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    [ -n "$pids" ] && kill $pids 2>/dev/null || true
  done
  for ns in $(all_ns); do
    ns_exists "$ns" || continue
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    if [ -n "$pids" ]; then
      sleep 1
      pids=$(ip netns pids "$ns" 2>/dev/null || true)
      [ -n "$pids" ] && kill -9 $pids 2>/dev/null || true
    fi
    ip netns del "$ns"
  done
}

status() {
  local ns missing=0
  for ns in $(all_ns); do
    if ns_exists "$ns"; then echo "up      $ns"; else echo "missing $ns"; missing=1; fi
  done
  return $missing
}

hosts() {
  local h site host last agent
  for h in "${HOSTS[@]}"; do
    IFS=: read -r site host last agent <<<"$h"
    echo "${PREFIX}${site}-${host} ${site} ${site}-${host} 10.$(site_octet "$site").0.${last} ${agent}"
  done
}

mgmt() {
  local s
  for s in "${SITES[@]}"; do echo "${s%%:*} $(mgmt_addrs "${s%%:*}")"; done
}

case $cmd in
mgmt) mgmt ;;
up) [ "$(id -u)" -eq 0 ] || { echo "topology.sh: needs root" >&2; exit 1; }; up ;;
down) [ "$(id -u)" -eq 0 ] || { echo "topology.sh: needs root" >&2; exit 1; }; down ;;
status) status ;;
hosts) hosts ;;
*) echo "usage: topology.sh up|down|status|hosts|mgmt [--prefix P]" >&2; exit 2 ;;
esac
