/* Key and value structs the NFS probe (nfs.bpf.c) and its user side (nfs_probe.c) share;
 * fixed-width types only, laid out without implicit padding so both sides hash the same bytes. */
#ifndef WL_NFS_H
#define WL_NFS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif
#include "llhist_layout.h"

#define NFS_COMM_LEN 16
/* Latency buckets: log-linear in microseconds, 16 per power of two (llhist_layout.h). */
#define NFS_LAT_SLOTS LLHIST_SLOTS
/* Records per generation: each value holds 337 32-bit bucket counters (1,376 bytes), so 4,096
 * records preallocate about 6 MB of kernel memory. */
#define NFS_STATS_ENTRIES 4096
#define NFS_INFLIGHT_MAX  16384
#define NFS_DIRTIER_MAX   65536

/* NFS operations a record counts. */
#define NFS_OP_READ   0
#define NFS_OP_WRITE  1
#define NFS_OP_COMMIT 2
#define NFS_OP_COUNT  3

/* How the initiator of a record was found: TASK, the user task that started the I/O (read,
 * close, fsync); DIRTIER, a kernel worker wrote back pages and the last task that dirtied them is
 * credited; KERNEL, a kernel worker and no dirtier was known. */
#define NFS_CREDIT_TASK    0
#define NFS_CREDIT_DIRTIER 1
#define NFS_CREDIT_KERNEL  2

/* Who initiated: a process (tgid + its leader's start time, so pid reuse makes a new owner) with
 * the parent, uid, cgroup and comm it had when it started or dirtied the I/O. 48 bytes. */
struct nfs_owner {
    __u32 tgid;
    __u32 ppid; /* real parent's tgid */
    __u32 uid;
    __u32 pad;
    __u64 cgroup_id;
    __u64 start_ns; /* task group leader's start_boottime, ns since boot */
    char comm[NFS_COMM_LEN];
};

/* One record: an owner's operations of one kind on one NFS superblock in one generation. */
struct nfs_stat_key {
    struct nfs_owner owner;
    __u32 dev;   /* the superblock's kernel dev_t (major << 20 | minor), as in mountinfo */
    __u8 op;     /* NFS_OP_* */
    __u8 credit; /* NFS_CREDIT_* */
    __u8 gen;    /* drain generation (0 or 1) the update landed in */
    __u8 pad;
};

/* Counters of one record; updated with atomic adds (one shared hash, not per-CPU). A window's
 * record never sees 2^32 requests, so the bucket counters are 32-bit. */
struct nfs_stat_val {
    __u64 bytes;                  /* bytes of the completed requests without error */
    __u64 ops;                    /* completed requests (RPCs), errors included */
    __u64 errors;                 /* completed with an error */
    __u32 latency[NFS_LAT_SLOTS]; /* initiate -> done in us, llhist_index_of(); sums to ops */
    __u32 pad;
};

/* A request between its initiate event (initiator's context) and its done event (rpciod). */
struct nfs_inflight_key {
    __u64 fileid;
    __s64 offset;
    __u32 dev;
    __u32 op;
};

struct nfs_inflight_val {
    struct nfs_owner owner;
    __u64 start_ns; /* bpf_ktime_get_ns() at the first initiate */
    __u32 count;    /* bytes asked for */
    /* Requests in flight under this key: two commits of one file can overlap (close() in the
     * writer and the flusher's write_inode); each done takes one. */
    __s32 pending;
    __u8 credit;
    __u8 pad[7];
};

/* The last user task that dirtied pages of a file, for write-back done later by a worker. */
struct nfs_file_key {
    __u64 fileid;
    __u32 dev;
    __u32 pad;
};

/* Indexes of the `drops` array. */
#define NFS_DROP_STATS_FULL 0 /* a new record did not fit in `stats` */
#define NFS_DROP_UNMATCHED  1 /* a done event without its initiate (evicted, or started before) */
#define NFS_DROP_NSLOTS     2

#endif
