# Sourced by the ingest benchmarks' run.sh (bench/clickhouse, bench/pg_ingest) after they set SRC
# (the source tree), BUILD (the release build folder) and SCRATCH (a mktemp template): builds
# wanledger there; makes the scratch directory W (mode 755: PostgreSQL runs as the postgres user);
# PIDS, the processes to interrupt and wait for at exit, after which the scratch PostgreSQL in
# $W/pg is stopped and W removed; free_port, a free loopback port.
cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWL_SANITIZE=OFF >/dev/null
nice cmake --build "$BUILD" -j2 --target wanledger >/dev/null
W=$(mktemp -d "$SCRATCH")
chmod 755 "$W"
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -INT "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do while kill -0 "$p" 2>/dev/null; do sleep 0.1; done; done
  bash "$SRC/scripts/pg.sh" stop "$W/pg" >/dev/null 2>&1 || true
  rm -rf "$W"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
