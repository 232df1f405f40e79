#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (-DWL_FUZZ=ON) and runs each for a bounded time on a
# copy of its seed corpus. Longer runs: WL_FUZZ_SECONDS=3600 tests/fuzz/run.sh . build/fuzz
# (or run one target by hand: build/fuzz/tests/fuzz/fuzz_ingest -max_total_time=3600 DIR SEEDS).
#   run.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$(cd "$1" && pwd)
build=$2
secs=${WL_FUZZ_SECONDS:-20}
targets="jsonv ingest config gnmic time flows"
if ! command -v clang >/dev/null; then
  echo "fuzz: clang is not installed (scripts/install-deps.sh installs clang and libclang-rt-14-dev)" >&2
  [ "${CI:-}" = "true" ] && exit 1
  exit 77
fi
cmake -S "$src" -B "$build" -DWL_FUZZ=ON -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug \
  ${CMAKE_C_COMPILER_LAUNCHER:+-DCMAKE_C_COMPILER_LAUNCHER=$CMAKE_C_COMPILER_LAUNCHER} >/dev/null
cmake --build "$build" -j"${WL_FUZZ_JOBS:-2}" --target fuzz_all >/dev/null
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
rc=0
for t in $targets; do
  work=$build/corpus-run/$t
  mkdir -p "$work"
  # -max_len: bodies up to 64 KiB; crashes are written to $build/crash-*
  bin=$build/tests/fuzz/fuzz_$t seeds=$src/tests/fuzz/corpus/$t
  if [ "$t" = flows ]; then bin=$build/tests/flows/fuzz_flows seeds=$src/tests/flows/fuzz-seed; fi
  if "$bin" -max_total_time="$secs" -max_len=65536 -timeout=10 \
       -rss_limit_mb=2048 -artifact_prefix="$build/crash-$t-" -print_final_stats=1 \
       "$work" "$seeds" >"$build/fuzz-$t.log" 2>&1; then
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$build/fuzz-$t.log" | grep -o '[0-9]*$' || true)
    echo "fuzz_$t: ${execs:-?} executions in ${secs} s, no crash"
  else
    echo "fuzz_$t: FAILED (see $build/fuzz-$t.log and $build/crash-$t-*)" >&2
    tail -40 "$build/fuzz-$t.log" >&2
    rc=1
  fi
done
exit $rc
