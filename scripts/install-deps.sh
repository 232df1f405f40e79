#!/usr/bin/env bash
# Installs every Debian package wanledger builds, tests and demos with. Idempotent: does nothing
# when all are present. Needs root (CI and the demo run as root).
set -euo pipefail
PKGS=(build-essential cmake pkg-config clang llvm libbpf-dev bpftool libelf-dev zlib1g-dev
      libzstd-dev libsnmp-dev snmpd snmp libpq-dev postgresql libevent-dev libcjson-dev
      libcmocka-dev iproute2 iperf3 ethtool procps psmisc curl python3 chromium
      libxml2-utils clang-format docker-compose busybox-static qemu-system-x86 cpio bpftrace
      prometheus-snmp-exporter softflowd pmacct nfdump tshark tcpdump prometheus
      libmsgpack-dev zstd gzip prometheus-alertmanager
      libssl-dev openssl libclang-rt-14-dev clickhouse-server clickhouse-client)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then exit 0; fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing packages ${missing[*]} and not root; run as root" >&2; exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
# Debian's snmpd package starts a system snmpd on 127.0.0.1:161; our tests run their own. Stop
# (and disable) only that packaged service, through its service manager: never other snmpd
# processes on the host (a test's, or someone else's).
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
  systemctl disable --now snmpd.service >/dev/null 2>&1 || true
elif [ -x /etc/init.d/snmpd ]; then
  # the init script stops the daemon of its own pid file (/run/snmpd.pid) only
  if command -v service >/dev/null 2>&1; then
    service snmpd stop >/dev/null 2>&1 || true
  else
    /etc/init.d/snmpd stop >/dev/null 2>&1 || true
  fi
  update-rc.d snmpd disable >/dev/null 2>&1 || true
fi
# Debian's prometheus and prometheus-alertmanager packages start system services on :9090 and
# :9093; the tests start their own on free ports (test_alertmanager) or only run promtool/amtool.
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
  systemctl disable --now prometheus.service prometheus-alertmanager.service >/dev/null 2>&1 || true
fi
