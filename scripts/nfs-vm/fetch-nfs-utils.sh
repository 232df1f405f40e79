#!/usr/bin/env bash
# Fetches the NFSv3 server helpers for the NFS VM test (once): rpcbind, rpc.mountd and exportfs
# from Debian's packages, with every shared library they load, laid out as a root-filesystem
# overlay in CACHE_DIR/root that run-vm.sh copies into the initramfs.
# Usage: fetch-nfs-utils.sh CACHE_DIR   -> prints CACHE_DIR/root
set -euo pipefail
cache=${1:?usage: fetch-nfs-utils.sh CACHE_DIR}
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)
if [ -f "$cache/root/usr/sbin/rpc.mountd" ]; then echo "$cache/root"; exit 0; fi
rm -rf "$cache/tmp" && mkdir -p "$cache/tmp/deb" "$cache/tmp/x"
pkgs=(rpcbind nfs-kernel-server libtirpc3 libtirpc-common libwrap0)
(cd "$cache/tmp/deb" && apt-get download -q "${pkgs[@]}" >/dev/null 2>&1) ||
  (apt-get update -q >/dev/null 2>&1; cd "$cache/tmp/deb" && apt-get download -q "${pkgs[@]}" >/dev/null 2>&1) ||
  { echo "fetch-nfs-utils: apt-get download ${pkgs[*]} failed" >&2; exit 1; }
for d in "$cache"/tmp/deb/*.deb; do dpkg-deb -x "$d" "$cache/tmp/x"; done
x="$cache/tmp/x"
root="$cache/tmp/root"
mkdir -p "$root/sbin" "$root/usr/sbin" "$root/etc" "$root/lib64" "$root/lib/x86_64-linux-gnu"
cp "$x/sbin/rpcbind" "$root/sbin/"
cp "$x/usr/sbin/rpc.mountd" "$x/usr/sbin/exportfs" "$root/usr/sbin/"
cp "$x/etc/netconfig" "$root/etc/"
# Shared libraries: the downloaded ones first, then this machine's (same Debian release).
libpath="$x/lib/x86_64-linux-gnu:$x/usr/lib/x86_64-linux-gnu"
for b in "$root/sbin/rpcbind" "$root/usr/sbin/rpc.mountd" "$root/usr/sbin/exportfs"; do
  out=$(LD_LIBRARY_PATH="$libpath" ldd "$b")
  if echo "$out" | grep -q 'not found'; then
    echo "fetch-nfs-utils: $b needs libraries this machine lacks:" >&2
    echo "$out" | grep 'not found' >&2; exit 1
  fi
  echo "$out" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' |
    while read -r lib; do cp -L "$lib" "$root/lib/x86_64-linux-gnu/$(basename "$lib")"; done
done
mv "$root/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" "$root/lib64/"
rm -rf "$cache/root" && mv "$root" "$cache/root" && rm -rf "$cache/tmp"
echo "$cache/root"
