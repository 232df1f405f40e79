#!/bin/sh
# /init of the NFS test VM: loads the NFS modules, serves a tmpfs export over loopback with the
# kernel nfsd, mounts it (NFSv4.2, then NFSv3), runs `nfsvm run` on each mount with caches
# dropped, prints everything on the serial console and powers off. Settings: /etc/nfsvm.conf.
export PATH=/bin
say() { echo "NFSVM $*"; }
fail() {
  say "FAIL $*"
  ps -o pid,user,args | sed "s/^/NFSDIAG /"; netstat -lnp 2>/dev/null | sed "s/^/NFSDIAG /"
  dmesg | tail -15 | sed "s/^/NFSDIAG /"
  poweroff -f
}

mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tracefs nodev /sys/kernel/tracing
mount -t tmpfs tmp /tmp
. /etc/nfsvm.conf
MOUNTD_PORT=${MOUNTD_PORT:-20048}
AGENT_METRICS=127.0.0.1:9465
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
# Shortest grace (in case ending it below does not take) and lease, before nfsd starts.
echo 10 > /proc/fs/nfsd/nfsv4gracetime || say "nfsv4gracetime not set"
echo 10 > /proc/fs/nfsd/nfsv4leasetime || say "nfsv4leasetime not set"
if [ -x /usr/sbin/rpc.mountd ]; then
  # NFSv3 and v4 with Debian's rpcbind and rpc.mountd (fetch-nfs-utils.sh): nfsd registers
  # with rpcbind, mountd answers MOUNT and fills the kernel's export caches.
  mkdir -p /run/rpcbind /var/lib/nfs && ln -s /run /var/run
  # rpcbind binds to the "sunrpc" service: without /etc/services only its unix socket works.
  printf 'sunrpc 111/tcp portmapper\nsunrpc 111/udp portmapper\n' > /etc/services
  printf 'tcp 6 TCP\nudp 17 UDP\n' > /etc/protocols
  echo "127.0.0.1 localhost" > /etc/hosts
  echo "root:x:0:0:root:/:/bin/sh" > /etc/passwd
  echo "_rpc:x:100:65534::/run/rpcbind:/bin/false" >> /etc/passwd
  printf 'root:x:0:\nnogroup:x:65534:\n' > /etc/group
  echo "/srv 127.0.0.1(rw,fsid=0,insecure,no_subtree_check,no_root_squash)" > /etc/exports
  /sbin/rpcbind || fail "rpcbind"
  /usr/sbin/exportfs -r || fail "exportfs"
  /usr/sbin/rpc.mountd -p "$MOUNTD_PORT" || fail "rpc.mountd"
else
  # NFSv4 only, no rpcbind or mountd: fill the export caches by hand (what mountd would
  # answer). Client 127.0.0.1 is in domain "nfsd"; /srv has fsid 0 (the NFSv4 root);
  # flags 0x2402 = insecure | no_subtree_check | fsid.
  exp=2147483647
  echo "nfsd 127.0.0.1 $exp nfsd" > /proc/net/rpc/auth.unix.ip/channel || fail "auth.unix.ip"
  echo "nfsd /srv $exp 9218 65534 65534 0" > /proc/net/rpc/nfsd.export/channel || fail "export"
  echo "nfsd 1 \\x00000000 $exp /srv" > /proc/net/rpc/nfsd.fh/channel || fail "nfsd.fh"
  echo "-2 -3 +4 +4.1 +4.2" > /proc/fs/nfsd/versions || fail "versions"
fi
echo "tcp 2049" > /proc/fs/nfsd/portlist || fail "portlist"
echo 4 > /proc/fs/nfsd/threads || fail "threads"
echo Y > /proc/fs/nfsd/v4_end_grace 2>/dev/null || say "v4_end_grace refused: waiting out the grace"
# Short write-back delays so the flusher writes back the flusher workload's pages in seconds.
echo 100 > /proc/sys/vm/dirty_expire_centisecs || fail "dirty_expire_centisecs"
echo 50 > /proc/sys/vm/dirty_writeback_centisecs || fail "dirty_writeback_centisecs"
say "server up uptime_s=$(cut -d' ' -f1 /proc/uptime)"

# A Kubernetes pod as a node shows it: its cgroup (systemd driver, containerd) and the kubelet's
# log directories (kubernetes pkg/kubelet/kuberuntime/helpers.go BuildContainerLogsDirectory,
# kuberuntime_container.go legacyLogSymlink). nfsvm's wl-pod workload joins the cgroup.
POD_UID=5f3c2a10-7b7e-4c1e-9d2a-0123456789ab
POD_UID_=5f3c2a10_7b7e_4c1e_9d2a_0123456789ab
POD_CID=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
mkdir -p /sys/fs/cgroup
mount -t cgroup2 cgroup2 /sys/fs/cgroup || fail "mount cgroup2"
NFSVM_POD_CGROUP=/sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod$POD_UID_.slice/cri-containerd-$POD_CID.scope
mkdir -p "$NFSVM_POD_CGROUP" || fail "pod cgroup"
export NFSVM_POD_CGROUP
mkdir -p /var/log/pods/nas-test_loader-0_$POD_UID/loader /var/log/pods/nas-test_loader-0_$POD_UID/sidecar /var/log/containers
: > /var/log/pods/nas-test_loader-0_$POD_UID/loader/0.log
ln -s /var/log/pods/nas-test_loader-0_$POD_UID/loader/0.log /var/log/containers/loader-0_nas-test_loader-$POD_CID.log

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
  # The client's own per-op RPC counts of this mount (the only NFS mount now), before and after.
  grep -E '^[[:space:]]+(READ|WRITE|COMMIT):' /proc/self/mountstats | sed "s/^[[:space:]]*/NFSSTAT $phase before /"
  agent_pid=
  if [ -x /bin/wanledger-agent ]; then
    # The real agent: a report every second and one at SIGTERM (nfsvm sends it while the
    # workloads still live, after scraping its /metrics).
    mkdir -p /tmp/spool
    ASAN_OPTIONS=detect_leaks=0 wanledger-agent --stdout --window 1 --spool /tmp/spool \
      --metrics "$AGENT_METRICS" > /tmp/agent-$phase.out 2> /tmp/agent-$phase.log &
    agent_pid=$!
    i=0
    until grep -q "reporting to stdout" /tmp/agent-$phase.log; do
      i=$((i + 1))
      if [ $i -gt 1800 ] || ! kill -0 $agent_pid 2>/dev/null; then
        sed 's/^/NFSAGENTLOG /' /tmp/agent-$phase.log; fail "agent did not start"
      fi
      usleep 100000
    done
    say "agent up $phase uptime_s=$(cut -d' ' -f1 /proc/uptime)"
  fi
  NFSVM_AGENT_PID=$agent_pid NFSVM_AGENT_METRICS=${agent_pid:+$AGENT_METRICS} nfsvm run "$phase" "/mnt/$phase" "$WRITE_SIZE" "$FLUSH_SIZE" "$SYNC_SIZE" ||
    say "run $phase failed"
  if [ -n "$agent_pid" ]; then
    wait $agent_pid
    sed "s/^/NFSAGENT $phase /" /tmp/agent-$phase.out
    sed "s/^/NFSAGENTLOG $phase /" /tmp/agent-$phase.log
  fi
  grep -E '^[[:space:]]+(READ|WRITE|COMMIT):' /proc/self/mountstats | sed "s/^[[:space:]]*/NFSSTAT $phase after /"
  # Socket view of the same traffic: the port 2049 sockets belong to no process (the kernel).
  nfsvm sockets "$phase"
  umount "/mnt/$phase" || say "umount $phase failed"
done
say "end uptime_s=$(cut -d' ' -f1 /proc/uptime)"
poweroff -f
