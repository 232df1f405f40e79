#!/usr/bin/env bash
# Assembles the NFS test VM's initramfs and boots it under qemu (TCG), the serial console going
# to WORK_DIR/console.log. The VM has no network device: NFS runs over its own loopback.
# Usage: run-vm.sh KERNEL_DIR WORK_DIR NFSVM_BIN INIT_SCRIPT CONF_FILE OVERLAY_DIR|- [TIMEOUT_S]
# OVERLAY_DIR (from fetch-nfs-utils.sh) is copied over the root: rpcbind and rpc.mountd.
set -euo pipefail
kdir=${1:?kernel dir (from fetch-kernel.sh)}; work=${2:?work dir}; nfsvm=${3:?nfsvm binary}
init=${4:?init script}; conf=${5:?conf file}; overlay=${6:?overlay dir or -}; limit=${7:-600}
busybox=$(command -v busybox || true)
bb_ldd=$( [ -n "$busybox" ] && ldd "$busybox" 2>&1 || true)
[[ $bb_ldd == *"not a dynamic executable"* ]] ||
  { echo "run-vm: a static busybox is needed (Debian package busybox-static)" >&2; exit 1; }
command -v qemu-system-x86_64 >/dev/null || { echo "run-vm: qemu-system-x86_64 missing" >&2; exit 1; }
command -v cpio >/dev/null || { echo "run-vm: cpio missing" >&2; exit 1; }

root="$work/root"
rm -rf "$root" && mkdir -p "$root"/{bin,dev,proc,sys,tmp,etc,lib/modules,mnt}
chmod 755 "$root"   # rpcbind refuses calls when / is not 755
cp "$busybox" "$root/bin/busybox"
for a in $("$busybox" --list); do [ "$a" = busybox ] || ln -sf busybox "$root/bin/$a"; done
cp "$nfsvm" "$root/bin/nfsvm"
for w in wl-reader wl-writer wl-flusher wl-syncer wl-pod; do ln -sf nfsvm "$root/bin/$w"; done
cp "$kdir"/modules/*.ko "$root/lib/modules/"
cp "$init" "$root/init" && chmod 755 "$root/init"
cp "$conf" "$root/etc/nfsvm.conf"
if [ "$overlay" != - ]; then cp -a "$overlay"/. "$root"/; fi
# NFSVM_AGENT: a (dynamically linked) wanledger-agent to run in the VM, with its libraries.
if [ -n "${NFSVM_AGENT:-}" ]; then
  mkdir -p "$root/lib/x86_64-linux-gnu" "$root/lib64"
  cp "$NFSVM_AGENT" "$root/bin/wanledger-agent"
  ldd "$NFSVM_AGENT" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' |
    while read -r lib; do
      case $lib in
        */ld-linux-x86-64.so.2) cp -L "$lib" "$root/lib64/" ;;
        *) cp -L "$lib" "$root/lib/x86_64-linux-gnu/" ;;
      esac
    done
fi
(cd "$root" && find . | cpio -o -H newc --quiet) > "$work/initramfs.cpio"

rm -f "$work/console.log"
SECONDS=0
set +e
timeout --kill-after=10 "$limit" nice qemu-system-x86_64 -accel tcg -machine q35 -cpu max \
  -smp "${NFSVM_SMP:-2}" -m 1024 -nic none -display none -no-reboot \
  -serial "file:$work/console.log" -monitor none \
  -kernel "$kdir/vmlinux" -initrd "$work/initramfs.cpio" \
  -append "console=ttyS0 panic=-1 rdinit=/init quiet loglevel=4"
rc=$?
set -e
echo "run-vm: qemu exited $rc after $SECONDS s" >&2
exit $rc
