#!/usr/bin/env bash
# The seed's incident, compressed in time, played over a running stack (stack.sh up):
#   1 normal load: workflow train-42 in chi reads from nyc's data server (sockets, agents at both
#     ends), dupedog copies nyc->chi for alice (service log; its port is left out of socket
#     counts), osl chatters with nyc (via chi) and chi                          -> green cells
#   2 misconfiguration: 12 jobs of workflow backtest-17 in chi read one big file straight from
#     nyc's data server instead of chi's cache    -> nyc->chi saturates, `saturation` alert
#     whose throttle proposal for backtest-17 the demo config enforces at once (stack.sh:
#     auto_enforce_workflows); nyc-data's agent limits what its data server sends the jobs (the
#     sender side), chi-gpu's what they receive  -> backtest-17 held at its cap, nyc->chi under
#                                                   0.90, the alert resolved in phase 2
#   3 blind spot: nyc's filer replicates to chi's filer, no agent at either end
#                                                 -> nyc->chi coverage red, `gap` alert
#   4 fix: replication stops, the backtest jobs read from chi's cache        -> alerts resolve
#
#   scenario.sh --run DIR --build DIR [--prefix P] [--window S] [--windows N1,N2,N3,N4]
#               [--each-window CMD] [--normal SECONDS]
#
# With --normal, only the normal load of phase 1 runs, for SECONDS (at most 3600), and no
# phases are played (the demo keeps the stack busy with it after the scenario).
#
# Phases start on window boundaries and last N windows each (default 4,7,4,5: phase 2
# has windows after the throttle took hold, for the saturation alert to resolve in). Every load
# is bounded in bytes and seconds and ends by itself at its phase's end. Writes DIR/scenario/
# timeline.env (phase start times, epoch seconds) and each load's own byte counts
# (DIR/scenario/*.out, one JSON line per process). CMD, if given, runs once per window, a few
# seconds after the window closed (the demo prints the heatmap with it).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
RUN= BUILD= PREFIX=${WLE_PREFIX:-wle-} WINDOW=10 WINDOWS=4,7,4,5 EACH= NORMAL=
while [ $# -gt 0 ]; do
  case $1 in
  --run) RUN=$2; shift 2 ;;
  --build) BUILD=$2; shift 2 ;;
  --prefix) PREFIX=$2; shift 2 ;;
  --window) WINDOW=$2; shift 2 ;;
  --windows) WINDOWS=$2; shift 2 ;;
  --each-window) EACH=$2; shift 2 ;;
  --normal) NORMAL=$2; shift 2 ;;
  *) echo "scenario.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[ -n "$RUN" ] && [ -n "$BUILD" ] || { echo "usage: scenario.sh --run DIR --build DIR ..." >&2; exit 2; }
TRAFFIC=$BUILD/tests/e2e/wl-traffic
S=$RUN/scenario
rm -rf "$S"
mkdir -p "$S/pids"
IFS=, read -r N1 N2 N3 N4 <<<"$WINDOWS"

now() { date +%s.%N; }
say() { printf '%s scenario: %s\n' "$(date -u +%H:%M:%S)" "$*"; }
# Seconds from now until epoch t (fractional, >= 0.5 so a load always has time to start).
until_t() { awk -v t="$1" -v n="$(now)" 'BEGIN { d = t - n; if (d < 0.5) d = 0.5; printf "%.3f", d }'; }

# load NAME NETNS WORKFLOW|- wl-traffic-args...: one bounded load process in the background.
load() {
  local name=$1 ns=$2 wf=$3
  shift 3
  local envs=()
  [ "$wf" != - ] && envs=(WANLEDGER_WORKFLOW="$wf")
  ip netns exec "${PREFIX}$ns" env "${envs[@]}" "$TRAFFIC" "$@" >"$S/$name.out" 2>"$S/$name.err" &
  echo $! >"$S/pids/$name.pid"
}

stop_loads() {
  local f
  for f in "$S"/pids/*.pid; do
    [ -e "$f" ] && kill "$(cat "$f")" 2>/dev/null || true
  done
}
trap 'stop_loads' EXIT

next_each=0
# Sleeps until epoch t, running the per-window command after each window closed.
sleep_until() {
  local t=$1
  while :; do
    local n
    n=$(now)
    if [ -n "$EACH" ] && awk -v a="$next_each" -v n="$n" 'BEGIN { exit !(a > 0 && n >= a) }'; then
      bash -c "$EACH" || true
      next_each=$(awk -v a="$next_each" -v w="$WINDOW" 'BEGIN { printf "%.0f", a + w }')
      continue
    fi
    awk -v t="$t" -v n="$n" 'BEGIN { exit !(n >= t) }' && return 0
    local target=$t
    if [ -n "$EACH" ] && awk -v a="$next_each" -v t="$t" 'BEGIN { exit !(a > 0 && a < t) }'; then
      target=$next_each
    fi
    sleep "$(awk -v t="$target" -v n="$(now)" 'BEGIN { d = t - n; if (d > 1) d = 1; if (d < 0.05) d = 0.05; printf "%.3f", d }')"
  done
}

# The normal load: train-42 reads nyc data, dupedog copies nyc->chi for alice, osl chatters with
# nyc (routed via chi) and with chi. Rates are payload bits per second.
normal_load() {
  local end=$1
  load train-42 chi-gpu train-42 get --to 10.1.0.10:9000 --bytes 25M --rate 40M --count 10000 \
    --seconds "$(until_t "$end")"
  load dupedog chi-dd copy-alice get --to 10.1.0.11:7100 --bytes 5M --rate 40M --count 10000 \
    --tag requester=alice --tag workflow=train-42 --seconds "$(until_t "$end")"
  load chatter-osl-nyc osl-lab chatter get --to 10.1.0.10:9000 --bytes 2M --rate 12M \
    --count 10000 --seconds "$(until_t "$end")"
  load chatter-chi-osl osl-lab chatter get --to 10.2.0.12:9000 --bytes 2M --rate 12M \
    --count 10000 --seconds "$(until_t "$end")"
}

if [ -n "$NORMAL" ]; then
  [ "$NORMAL" -ge 1 ] && [ "$NORMAL" -le 3600 ] || { echo "scenario.sh: --normal: 1..3600" >&2; exit 2; }
  T0=$(date +%s)
  [ -n "$EACH" ] && next_each=$(((T0 + WINDOW - 1) / WINDOW * WINDOW + 6))
  normal_load $((T0 + NORMAL))
  sleep_until $((T0 + NORMAL))
  exit 0
fi

T0=$(date +%s)
P1=$(((T0 + 5 + WINDOW - 1) / WINDOW * WINDOW)) # >= 5 s of warm-up, on a boundary
P2=$((P1 + N1 * WINDOW))
P3=$((P2 + N2 * WINDOW))
P4=$((P3 + N3 * WINDOW))
END=$((P4 + N4 * WINDOW))
# The per-window command: 6 s after each boundary (grace 5 s + a tick).
[ -n "$EACH" ] && next_each=$((P1 + 6))
cat >"$S/timeline.env" <<EOF
WINDOW=$WINDOW
P1_START=$P1
P2_START=$P2
P3_START=$P3
P4_START=$P4
END=$END
EOF

say "normal load starts; phase 1 at $(date -u -d @$P1 +%H:%M:%S), scenario ends $(date -u -d @$END +%H:%M:%S)"
# One window past END, so the last window is whole and what follows (the demo) joins without a gap.
normal_load $((END + WINDOW))

sleep_until $P1
say "phase 1: normal load (train-42 reads nyc data, dupedog copies for alice, osl chatters)"
echo "phase 1" >"$S/phase"
sleep_until $P2
say "phase 2: 12 jobs of backtest-17 in chi read one big file straight from nyc"
echo "phase 2" >"$S/phase"
for i in $(seq 1 12); do
  load "backtest-$i" chi-gpu backtest-17 get --to 10.1.0.10:9000 --bytes 200M --count 1000 \
    --seconds "$(until_t $P4)"
done
sleep_until $P3
say "phase 3: nyc filer replicates to chi filer (no recorder at either end)"
echo "phase 3" >"$S/phase"
load replication nyc-filer - put --to 10.2.0.20:8800 --bytes 100M --count 1000 --parallel 16 \
  --seconds "$(until_t $P4)"
sleep_until $P4
say "phase 4: fix: replication stopped, backtest-17 reads from chi's cache"
echo "phase 4" >"$S/phase"
for i in $(seq 1 12); do
  load "fixed-$i" chi-gpu backtest-17 get --to 10.2.0.12:9000 --bytes 200M --count 1000 \
    --rate 4M --seconds "$(until_t $END)"
done
sleep_until $END
echo "done" >"$S/phase"
# Every load ends by its own deadline; wait for their byte counts.
for f in "$S"/pids/*.pid; do
  pid=$(cat "$f")
  for _ in $(seq $((WINDOW * 10 + 50))); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
done
rep_tx=$(sed -n 's/.*"tx_bytes":\([0-9]*\).*/\1/p' "$S/replication.out" 2>/dev/null || true)
echo "REPLICATION_TX_BYTES=${rep_tx:-0}" >>"$S/timeline.env"
say "scenario over: replication sent ${rep_tx:-?} bytes"
# The last windows close after END + grace: let the reconciler see them.
sleep_until $((END + 7))
