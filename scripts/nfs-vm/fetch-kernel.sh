#!/usr/bin/env bash
# Fetches Debian's 6.1 kernel for the NFS VM test into a cache dir (once): the uncompressed
# vmlinux (booted by qemu through its PVH note) and the NFS client/server modules.
# Usage: fetch-kernel.sh CACHE_DIR   -> prints CACHE_DIR/<release> holding vmlinux and modules/
set -euo pipefail
cache=${1:?usage: fetch-kernel.sh CACHE_DIR}
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)
if [ -f "$cache/current" ] && [ -f "$cache/$(cat "$cache/current")/vmlinux" ]; then
  echo "$cache/$(cat "$cache/current")"; exit 0
fi
# Newest plain (not cloud, not rt) 6.1 image in the apt lists.
pkg=$(apt-cache search --names-only '^linux-image-6\.1\.0-[0-9]+-amd64$' | awk '{print $1}' |
      sort -V | tail -1)
if [ -z "$pkg" ]; then
  apt-get update -q >/dev/null
  pkg=$(apt-cache search --names-only '^linux-image-6\.1\.0-[0-9]+-amd64$' | awk '{print $1}' |
        sort -V | tail -1)
fi
[ -n "$pkg" ] || { echo "fetch-kernel: no linux-image-6.1.0-*-amd64 in the apt lists" >&2; exit 1; }
rel=${pkg#linux-image-}
dir="$cache/$rel"
rm -rf "$dir.tmp" && mkdir -p "$dir.tmp/deb"
# A stale apt list may name a version the mirror no longer has: update once and retry.
(cd "$dir.tmp/deb" && apt-get download -q "$pkg" >/dev/null 2>&1) ||
  (apt-get update -q >/dev/null 2>&1; cd "$dir.tmp/deb" && apt-get download -q "$pkg" >/dev/null 2>&1) ||
  { echo "fetch-kernel: apt-get download $pkg failed" >&2; exit 1; }
dpkg-deb -x "$dir.tmp"/deb/*.deb "$dir.tmp/root"
# The bzImage holds an XZ stream: decompress from its magic to get the ELF vmlinux.
python3 - "$dir.tmp/root/boot/vmlinuz-$rel" "$dir.tmp/vmlinux" <<'PY'
import lzma, sys
data = open(sys.argv[1], 'rb').read()
at = data.find(b'\xfd7zXZ\x00')
if at < 0:
    sys.exit('fetch-kernel: no XZ stream in ' + sys.argv[1])
out = lzma.LZMADecompressor().decompress(data[at:])
if out[:4] != b'\x7fELF':
    sys.exit('fetch-kernel: decompressed kernel is not ELF')
open(sys.argv[2], 'wb').write(out)
PY
mkdir -p "$dir.tmp/modules"
m="$dir.tmp/root/lib/modules/$rel/kernel"
for ko in net/sunrpc/sunrpc.ko fs/nfs_common/grace.ko fs/lockd/lockd.ko fs/nfs_common/nfs_acl.ko \
          net/sunrpc/auth_gss/auth_rpcgss.ko fs/nfsd/nfsd.ko fs/netfs/netfs.ko \
          fs/fscache/fscache.ko fs/nfs/nfs.ko net/dns_resolver/dns_resolver.ko fs/nfs/nfsv4.ko \
          fs/nfs/nfsv3.ko; do
  [ -f "$m/$ko" ] || { echo "fetch-kernel: $pkg has no $ko" >&2; exit 1; }
  cp "$m/$ko" "$dir.tmp/modules/"
done
cp "$dir.tmp/root/boot/config-$rel" "$dir.tmp/config"
rm -rf "$dir.tmp/deb" "$dir.tmp/root" "$dir"
mv "$dir.tmp" "$dir"
echo "$rel" > "$cache/current"
echo "$dir"
