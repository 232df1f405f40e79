#!/usr/bin/env bash
# The README's test command: installs what the tests need (Debian packages), builds the sanitizer
# configuration (ASan+UBSan) and runs every test with ctest. Tests start their own servers
# (PostgreSQL clusters, snmpd, network namespaces, the reconciler, a qemu VM) and stop them.
# With CI=true a test that needs root, BPF or a server must run: any skip fails the run.
#   scripts/test.sh [ctest args...]     e.g. scripts/test.sh -L unit
# As root, or as a user with sudo (it re-executes itself under sudo; WL_NO_SUDO=1: stay).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/as-root.sh"
wl_as_root "${BASH_SOURCE[0]}" "$@"
cd "$(dirname "$0")/.."
root=$(pwd)
bash scripts/install-deps.sh
if [ "$(id -u)" -eq 0 ]; then
  mountpoint -q /sys/kernel/tracing 2>/dev/null || mount -t tracefs nodev /sys/kernel/tracing || true
  mountpoint -q /sys/fs/bpf 2>/dev/null || mount -t bpf bpf /sys/fs/bpf || true
fi
build=${WL_TEST_BUILD:-$root/build/test}
cmake -S "$root" -B "$build" -DWL_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build "$build" -j"$(nproc)"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$root/tests/lsan.supp:print_suppressions=0}
log=$build/ctest.log
set +e
(cd "$build" && ctest --output-on-failure --timeout 1200 "$@") 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e
if [ "${CI:-}" = "true" ] && grep -Eq '\*\*\*Skipped|Not Run|Skipped:' "$log"; then
  echo "test.sh: a test was skipped or not run under CI=true; every test must run in CI" >&2
  grep -E '\*\*\*Skipped|Not Run|SKIP:' "$log" >&2 || true
  exit 1
fi
exit "$rc"
