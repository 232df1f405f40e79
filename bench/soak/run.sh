#!/bin/sh
# Builds an optimised tree (no sanitizers) and runs the open-loop soak:
#   bench/soak/run.sh [SECONDS] [RATE]     (default 600 s at 200 requests/s)
set -eu
SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${WL_BENCH_BUILD:-$SRC/build/rel}
cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DWL_SANITIZE=OFF >/dev/null
nice cmake --build "$BUILD" -j2 --target wanledger bench_soak >/dev/null
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
WL_BUILD_DIR="$BUILD" "$BUILD/bench/soak/bench_soak" "${1:-600}" "${2:-200}"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
