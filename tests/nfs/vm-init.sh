#!/bin/sh
# /init of the NFS test VM: loads the NFS modules, serves a tmpfs export over loopback with the
# kernel nfsd, mounts it (NFSv4.2, then NFSv3), runs `nfsvm run` on each mount with caches
# dropped, prints everything on the serial console and powers off. Settings: /etc/nfsvm.conf.
export PATH=/bin
say() { echo "NFSVM $*"; }
fail() { say "FAIL $*"; poweroff -f; }

mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tracefs nodev /sys/kernel/tracing
mount -t tmpfs tmp /tmp
. /etc/nfsvm.conf
say "boot kernel=$(uname -r) cpus=$(nproc) uptime_s=$(cut -d' ' -f1 /proc/uptime)"
ip link set lo up || fail "lo up"

for m in sunrpc grace lockd nfs_acl auth_rpcgss nfsd netfs fscache nfs dns_resolver nfsv4 nfsv3; do
  insmod /lib/modules/$m.ko || fail "insmod $m"
done
[ -e /sys/kernel/btf/nfs ] || fail "no /sys/kernel/btf/nfs"

# The export: a tmpfs (exportable with an explicit fsid) holding the files the reader reads.
mkdir -p /srv /mnt
mount -t tmpfs -o mode=755,size=256m srv /srv
head -c "$READ_A" /dev/urandom > /srv/read-a
head -c "$READ_B" /dev/urandom > /srv/read-b
head -c "$READ_C" /dev/urandom > /srv/read-c

mount -t nfsd nfsd /proc/fs/nfsd || fail "mount nfsd"
# Fill the export caches by hand (what mountd would answer): client 127.0.0.1 is in domain
# "nfsd"; /srv has fsid 0 (the NFSv4 root); flags 0x2402 = insecure | no_subtree_check | fsid.
exp=2147483647
echo "nfsd 127.0.0.1 $exp nfsd" > /proc/net/rpc/auth.unix.ip/channel || fail "auth.unix.ip"
echo "nfsd /srv $exp 9218 65534 65534 0" > /proc/net/rpc/nfsd.export/channel || fail "nfsd.export"
echo "nfsd 1 \\x00000000 $exp /srv" > /proc/net/rpc/nfsd.fh/channel || fail "nfsd.fh"
echo "$NFSD_VERSIONS" > /proc/fs/nfsd/versions || fail "versions"
echo "tcp 2049" > /proc/fs/nfsd/portlist || fail "portlist"
echo 4 > /proc/fs/nfsd/threads || fail "threads"
echo Y > /proc/fs/nfsd/v4_end_grace
# Short write-back delays so the flusher writes back the flusher workload's pages in seconds.
echo 100 > /proc/sys/vm/dirty_expire_centisecs
echo 50 > /proc/sys/vm/dirty_writeback_centisecs
say "server up uptime_s=$(cut -d' ' -f1 /proc/uptime)"

for phase in $PHASES; do
  case $phase in
    v4) nfsvm mount 127.0.0.1:/ /mnt/v4 nfs4 "vers=4.2,addr=127.0.0.1,proto=tcp" || fail "mount v4" ;;
    v3) nfsvm mount 127.0.0.1:/srv /mnt/v3 nfs \
          "vers=3,addr=127.0.0.1,proto=tcp,port=2049,mountaddr=127.0.0.1,mountport=$MOUNTD_PORT,mountproto=tcp,nolock" \
          || fail "mount v3" ;;
  esac
  say "mounted $phase uptime_s=$(cut -d' ' -f1 /proc/uptime)"
  grep " /mnt/$phase " /proc/self/mountinfo | sed 's/^/NFSMOUNT /'
  sync
  echo 3 > /proc/sys/vm/drop_caches
  nfsvm run "$phase" "/mnt/$phase" "$WRITE_SIZE" "$FLUSH_SIZE" || say "run $phase failed"
  # Socket view of the same traffic: who owns the port 2049 sockets (kernel: no process).
  netstat -tnp 2>/dev/null | grep ':2049 ' | sed 's/^/NFSSOCK /'
  umount "/mnt/$phase" || say "umount $phase failed"
done
say "end uptime_s=$(cut -d' ' -f1 /proc/uptime)"
poweroff -f
