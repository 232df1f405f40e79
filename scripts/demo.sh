#!/usr/bin/env bash
# The README's main command: wanledger explaining a real (simulated) WAN on this machine.
#
#   scripts/demo.sh [--duration S] [--keep] [--port P] [--no-deps]
#   scripts/demo.sh --stop          (tear down what --keep left running)
# As root, or as a user with sudo (it re-executes itself under sudo).
#
# Installs the Debian packages (scripts/install-deps.sh), builds into ./.wanledger/build, starts a
# PostgreSQL cluster in ./.wanledger/pg, brings up three sites in network namespaces with snmpd,
# the poller, the reconciler, agents and the dupedog service (scripts/stack.sh), then plays the
# seed's incident (scripts/scenario.sh): normal load, a misconfigured workflow saturating
# nyc->chi, a filer replication nobody records, the fix. The terminal heatmap is printed whenever
# a window changes it, the page is at http://127.0.0.1:PORT/heatmap, and alerts arrive at a
# local webhook receiver (./.wanledger/run/alerts.ndjson). Afterwards the normal load keeps
# running until Ctrl-C or --duration seconds; then everything is torn down (--keep: left up).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/as-root.sh"
wl_as_root "${BASH_SOURCE[0]}" "$@"

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
STATE=$root/.wanledger
BUILD=$STATE/build
RUN=$STATE/run
PG=$STATE/pg
PORT=7070
WEBHOOK_PORT=9093
DURATION=
KEEP=0
DEPS=1
STOP=0
while [ $# -gt 0 ]; do
  case $1 in
  --duration) DURATION=$2; shift 2 ;;
  --keep) KEEP=1; shift ;;
  --port) PORT=$2; shift 2 ;;
  --no-deps) DEPS=0; shift ;;
  --stop) STOP=1; shift ;;
  -h | --help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "demo.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
if [ -n "$DURATION" ] && ! [[ $DURATION =~ ^[0-9]+$ ]]; then
  echo "demo.sh: --duration: expected seconds, got '$DURATION'" >&2
  exit 2
fi
[ "$(id -u)" -eq 0 ] || { echo "demo.sh: needs root (network namespaces, eBPF, PostgreSQL as postgres): run it as root or install sudo" >&2; exit 1; }

bold=$'\e[1m' dim=$'\e[2m' off=$'\e[0m'
say() { printf '%s%s demo:%s %s\n' "$bold" "$(date -u +%H:%M:%S)" "$off" "$*"; }

webhook_pid=
teardown() {
  say "tearing down: stack, network namespaces, PostgreSQL"
  [ -n "$webhook_pid" ] && kill "$webhook_pid" 2>/dev/null || true
  "$here/stack.sh" down --run "$RUN" >/dev/null 2>&1 || true
  "$here/pg.sh" stop "$PG" >/dev/null 2>&1 || true
}

if [ $STOP = 1 ]; then
  teardown
  exit 0
fi

if [ $DEPS = 1 ]; then
  say "installing dependencies (scripts/install-deps.sh)"
  "$here/install-deps.sh"
fi

say "building into $BUILD"
mkdir -p "$STATE"
cmake -S "$root" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$STATE/cmake.log" 2>&1 ||
  { tail -20 "$STATE/cmake.log"; exit 1; }
nice cmake --build "$BUILD" -j2 --target wanledger wanledger-agent wl-traffic wl-http-sink \
  >"$STATE/build.log" 2>&1 || { tail -30 "$STATE/build.log"; exit 1; }
WL=$BUILD/cmd/wanledger

say "starting PostgreSQL in $PG"
DB=$("$here/pg.sh" start "$PG")

cleanup_on_exit() {
  local rc=$?
  if [ $KEEP = 1 ]; then
    say "--keep: the stack stays up. Heatmap: http://127.0.0.1:$PORT/heatmap; stop with: $0 --stop"
  else
    teardown
  fi
  exit $rc
}
trap cleanup_on_exit EXIT
trap 'exit 130' INT TERM

# The alerts' webhook receiver (Alertmanager API v2 path), started first so the stack records it
# with its own processes.
"$here/stack.sh" down --run "$RUN" >/dev/null 2>&1 || true # a stack an earlier --keep left up
mkdir -p "$RUN/pids" "$RUN/logs"
setsid "$BUILD/tests/e2e/wl-http-sink" --listen "127.0.0.1:$WEBHOOK_PORT" --out "$RUN/alerts.ndjson" \
  --seconds 86400 >>"$RUN/logs/webhook.log" 2>&1 </dev/null &
webhook_pid=$!

say "bringing up the sites and the stack"
"$here/stack.sh" up --run "$RUN" --build "$BUILD" --db "$DB" --port "$PORT" \
  --webhook "http://127.0.0.1:$WEBHOOK_PORT/api/v2/alerts" --lifetime 86400
echo "$webhook_pid" >"$RUN/pids/webhook.pid" # stack.sh up clears pids it did not start

cat <<EOF

${bold}wanledger demo${off}: three sites, nyc (10.1/16) -- 200 Mbit/s -- chi (10.2/16) -- 100 Mbit/s -- osl (10.3/16)
  heatmap page:   http://127.0.0.1:$PORT/heatmap   (open from this machine)
  terminal:       $WL --config $RUN/config.json heatmap --format ansi
  alerts:         $RUN/alerts.ndjson (webhook receiver), or: $WL --config $RUN/config.json alerts
  logs:           $RUN/logs/

EOF

# Printed once per window by the scenario: the heatmap when the picture changed, else one line.
export WL RUN PORT
show_window() {
  local digest prev cfg=$RUN/config.json
  digest=$("$WL" --config "$cfg" heatmap --format ansi --color never 2>/dev/null |
    grep -E '^ *(nyc|chi|osl) |Open alerts|^  (gap|over|saturation) ' |
    sed -E 's/[0-9.]+ *(%|MB|kB|GB|B)//g; s/open [0-9]+ [a-z]+ since.*//' | md5sum | cut -c1-12)
  prev=$(cat "$RUN/.last-digest" 2>/dev/null || true)
  local phase
  phase=$(cat "$RUN/scenario/phase" 2>/dev/null || echo "")
  if [ "$digest" != "$prev" ]; then
    echo "$digest" >"$RUN/.last-digest"
    echo
    # The grid and the open alerts; the 24-hour strip and the legend only once, at the start.
    "$WL" --config "$cfg" heatmap --format ansi --color always 2>/dev/null |
      awk -v full="$([ -z "$prev" ] && echo 1)" '
        /^Last 24 hours|^Legend:/ { skip = !full }
        /^Open alerts/ { skip = 0 }
        !skip'
    echo "  page: http://127.0.0.1:$PORT/heatmap"
    # The picture of each phase, for the README.
    [ -n "$phase" ] && "$WL" --config "$cfg" heatmap --format svg \
      --output "$RUN/heatmap-${phase// /-}.svg" >/dev/null 2>&1 || true
  else
    printf '%s  %s window %s UTC: heatmap unchanged%s\n' "$(tput dim 2>/dev/null || true)" \
      "${phase:-}" "$(date -u +%H:%M:%S)" "$(tput sgr0 2>/dev/null || true)"
  fi
}
export -f show_window
rm -f "$RUN/.last-digest"

say "playing the scenario (about 3 minutes): phases 1 normal, 2 saturation, 3 blind spot, 4 fix"
"$here/scenario.sh" --run "$RUN" --build "$BUILD" --each-window show_window

say "scenario done. Alerts raised and resolved:"
"$WL" --config "$RUN/config.json" alerts 2>/dev/null || true
echo "  webhook deliveries: $(wc -l <"$RUN/alerts.ndjson" 2>/dev/null || echo 0) (in $RUN/alerts.ndjson)"
say "throttle rules the saturation proposed (id, selector, rate, mode, ...):"
"$WL" --config "$RUN/config.json" throttle list --all 2>/dev/null || true

if [ -n "$DURATION" ]; then
  say "normal load continues for $DURATION s (Ctrl-C to stop)"
  left=$DURATION
else
  say "normal load continues until Ctrl-C (heatmap: http://127.0.0.1:$PORT/heatmap)"
  left=-1
fi
while [ "$left" != 0 ]; do
  chunk=600
  [ "$left" -gt 0 ] && [ "$left" -lt $chunk ] && chunk=$left
  "$here/scenario.sh" --run "$RUN" --build "$BUILD" --normal "$chunk" --each-window show_window
  [ "$left" -gt 0 ] && left=$((left - chunk))
done
