#!/bin/sh
# Builds an optimised tree (no sanitizers) and runs the reconciler benchmark in one go:
#   bench/reconciler/run.sh [ROUNDS]     (ROUNDS x 100,000 flow records ingested; default 10)
set -eu
SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${WL_BENCH_BUILD:-$SRC/build/rel}
cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DWL_SANITIZE=OFF >/dev/null
nice cmake --build "$BUILD" -j2 --target wanledger bench_reconciler >/dev/null
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
WL_BUILD_DIR="$BUILD" "$BUILD/bench/reconciler/bench_reconciler" "${1:-10}"
