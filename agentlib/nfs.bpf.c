// SPDX-License-Identifier: GPL-2.0
/* NFS probe, kernel side: bytes, operations, errors and latency of NFS reads, writes and commits
 * per initiating process and superblock, from the nfs tracepoints (records read through local
 * CO-RE definitions, relocated against the nfs module's BTF at load time). */
#include <vmlinux.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "core_fixes.bpf.h"
#include "nfs.h"

#define PF_KTHREAD      0x00200000
#define NFS_SUPER_MAGIC 0x6969

/* The nfs tracepoint records (fs/nfs/nfstrace.h), only the fields read here. The ___wl flavor
 * keeps them apart from a vmlinux.h that has NFS built in; libbpf matches them by base name. */
struct trace_event_raw_nfs_initiate_read___wl {
    dev_t dev;
    u64 fileid;
    loff_t offset;
    u32 count;
} __attribute__((preserve_access_index));

struct trace_event_raw_nfs_readpage_done___wl {
    dev_t dev;
    u64 fileid;
    loff_t offset;
    u32 res_count;
    int error;
} __attribute__((preserve_access_index));

struct trace_event_raw_nfs_initiate_write___wl {
    dev_t dev;
    u64 fileid;
    loff_t offset;
    u32 count;
} __attribute__((preserve_access_index));

struct trace_event_raw_nfs_writeback_done___wl {
    dev_t dev;
    u64 fileid;
    loff_t offset;
    u32 res_count;
    int error;
} __attribute__((preserve_access_index));

struct trace_event_raw_nfs_initiate_commit___wl {
    dev_t dev;
    u64 fileid;
    loff_t offset;
    u32 count;
} __attribute__((preserve_access_index));

struct trace_event_raw_nfs_commit_done___wl {
    dev_t dev;
    u64 fileid;
    loff_t offset;
    int error;
} __attribute__((preserve_access_index));

/* Drain generation: user space flips it, then drains the records of the other one. */
volatile __u32 gen;

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, NFS_STATS_ENTRIES);
    __type(key, struct nfs_stat_key);
    __type(value, struct nfs_stat_val);
} stats SEC(".maps");

/* LRU: a request whose done never comes (cancelled RPC) must not fill the map for good. */
struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, NFS_INFLIGHT_MAX);
    __type(key, struct nfs_inflight_key);
    __type(value, struct nfs_inflight_val);
} inflight SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, NFS_DIRTIER_MAX);
    __type(key, struct nfs_file_key);
    __type(value, struct nfs_owner);
} dirtiers SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, NFS_DROP_NSLOTS);
    __type(key, __u32);
    __type(value, __u64);
} drops SEC(".maps");

static __always_inline void count_drop(__u32 slot)
{
    __u64 *n = bpf_map_lookup_elem(&drops, &slot);
    if (n)
        __sync_fetch_and_add(n, 1);
}

static __always_inline void current_owner(struct task_struct *task, struct nfs_owner *o)
{
    o->tgid = bpf_get_current_pid_tgid() >> 32;
    o->ppid = BPF_CORE_READ(task, real_parent, tgid);
    o->uid = (__u32)bpf_get_current_uid_gid();
    o->cgroup_id = bpf_get_current_cgroup_id();
    o->start_ns = wl_task_start_boottime(BPF_CORE_READ(task, group_leader));
    bpf_get_current_comm(o->comm, sizeof(o->comm));
}

/* Who to credit for I/O starting now: the current user task; in a kernel worker (background
 * write-back, sync(), commits it sends) the last task that dirtied the file, else the worker. */
static __always_inline void initiator(__u32 dev, __u64 fileid, struct nfs_inflight_val *v)
{
    struct task_struct *task = (struct task_struct *)bpf_get_current_task();
    current_owner(task, &v->owner);
    v->credit = NFS_CREDIT_TASK;
    if (!(BPF_CORE_READ(task, flags) & PF_KTHREAD))
        return;
    struct nfs_file_key fk = {.fileid = fileid, .dev = dev};
    struct nfs_owner *d = bpf_map_lookup_elem(&dirtiers, &fk);
    if (d) {
        v->owner = *d;
        v->credit = NFS_CREDIT_DIRTIER;
    } else {
        v->credit = NFS_CREDIT_KERNEL;
    }
}

static __always_inline void on_initiate(__u32 op, __u32 dev, __u64 fileid, __s64 offset,
                                        __u32 count)
{
    struct nfs_inflight_key k = {.fileid = fileid, .offset = offset, .dev = dev, .op = op};
    struct nfs_inflight_val *cur = bpf_map_lookup_elem(&inflight, &k);
    if (cur) { /* the same request key already in flight: its owner and start stand */
        __sync_fetch_and_add(&cur->pending, 1);
        return;
    }
    struct nfs_inflight_val v = {};
    initiator(dev, fileid, &v);
    v.start_ns = bpf_ktime_get_ns();
    v.count = count;
    v.pending = 1;
    if (bpf_map_update_elem(&inflight, &k, &v, BPF_NOEXIST)) {
        cur = bpf_map_lookup_elem(&inflight, &k); /* lost a race to another initiate */
        if (cur)
            __sync_fetch_and_add(&cur->pending, 1);
    }
}

static const struct nfs_stat_val zero_val;

/* Runs in an rpciod worker: finds the initiation and credits its owner, never the worker. */
static __always_inline void on_done(__u32 op, __u32 dev, __u64 fileid, __s64 offset, int error,
                                    __u32 res_count)
{
    struct nfs_inflight_key k = {.fileid = fileid, .offset = offset, .dev = dev, .op = op};
    struct nfs_inflight_val *in = bpf_map_lookup_elem(&inflight, &k);
    if (!in) {
        count_drop(NFS_DROP_UNMATCHED);
        return;
    }
    __u64 now = bpf_ktime_get_ns();
    __u64 us = now > in->start_ns ? (now - in->start_ns) / 1000 : 0;
    struct nfs_stat_key sk = {.dev = dev, .op = op, .credit = in->credit, .gen = gen & 1};
    sk.owner = in->owner;
    /* Bytes the server returned or accepted: a read of the last page asks for the whole page
     * but gets only what is left of the file. */
    __u64 bytes = (error < 0 || op == NFS_OP_COMMIT) ? 0 : res_count;
    __sync_fetch_and_add(&in->pending, -1);
    if (*(volatile __s32 *)&in->pending <= 0)
        bpf_map_delete_elem(&inflight, &k);

    struct nfs_stat_val *sv = bpf_map_lookup_elem(&stats, &sk);
    if (!sv) {
        /* the value (1,376 bytes) is larger than the BPF stack: a zeroed global */
        bpf_map_update_elem(&stats, &sk, &zero_val, BPF_NOEXIST); /* lost race: lookup finds it */
        sv = bpf_map_lookup_elem(&stats, &sk);
        if (!sv) {
            count_drop(NFS_DROP_STATS_FULL);
            return;
        }
    }
    __sync_fetch_and_add(&sv->bytes, bytes);
    __sync_fetch_and_add(&sv->ops, 1);
    if (error < 0)
        __sync_fetch_and_add(&sv->errors, 1);
    __u64 slot = llhist_index_of(us);
    barrier_var(slot); /* the bound check below must be on the register that indexes */
    if (slot < NFS_LAT_SLOTS)
        __sync_fetch_and_add(&sv->latency[slot], 1);
}

SEC("tracepoint/nfs/nfs_initiate_read")
int nfs_initiate_read(struct trace_event_raw_nfs_initiate_read___wl *ctx)
{
    on_initiate(NFS_OP_READ, ctx->dev, ctx->fileid, ctx->offset, ctx->count);
    return 0;
}

SEC("tracepoint/nfs/nfs_readpage_done")
int nfs_readpage_done(struct trace_event_raw_nfs_readpage_done___wl *ctx)
{
    on_done(NFS_OP_READ, ctx->dev, ctx->fileid, ctx->offset, ctx->error, ctx->res_count);
    return 0;
}

SEC("tracepoint/nfs/nfs_initiate_write")
int nfs_initiate_write(struct trace_event_raw_nfs_initiate_write___wl *ctx)
{
    on_initiate(NFS_OP_WRITE, ctx->dev, ctx->fileid, ctx->offset, ctx->count);
    return 0;
}

SEC("tracepoint/nfs/nfs_writeback_done")
int nfs_writeback_done(struct trace_event_raw_nfs_writeback_done___wl *ctx)
{
    on_done(NFS_OP_WRITE, ctx->dev, ctx->fileid, ctx->offset, ctx->error, ctx->res_count);
    return 0;
}

SEC("tracepoint/nfs/nfs_initiate_commit")
int nfs_initiate_commit(struct trace_event_raw_nfs_initiate_commit___wl *ctx)
{
    on_initiate(NFS_OP_COMMIT, ctx->dev, ctx->fileid, ctx->offset, ctx->count);
    return 0;
}

SEC("tracepoint/nfs/nfs_commit_done")
int nfs_commit_done(struct trace_event_raw_nfs_commit_done___wl *ctx)
{
    on_done(NFS_OP_COMMIT, ctx->dev, ctx->fileid, ctx->offset, ctx->error, 0);
    return 0;
}

/* A page of a file becomes dirty, in the dirtying task's context (write(), mmap store): remember
 * that task for the NFS file, so a worker's later write-back is credited to it. On NFS (64-bit)
 * i_ino is the fileid the nfs tracepoints carry. */
static __always_inline void on_dirty(struct address_space *mapping)
{
    struct task_struct *task = (struct task_struct *)bpf_get_current_task();
    if (BPF_CORE_READ(task, flags) & PF_KTHREAD)
        return;
    struct inode *inode = BPF_CORE_READ(mapping, host);
    if (!inode)
        return;
    struct super_block *sb = BPF_CORE_READ(inode, i_sb);
    if (BPF_CORE_READ(sb, s_magic) != NFS_SUPER_MAGIC)
        return;
    struct nfs_file_key fk = {.fileid = BPF_CORE_READ(inode, i_ino),
                              .dev = BPF_CORE_READ(sb, s_dev)};
    struct nfs_owner o = {};
    current_owner(task, &o);
    bpf_map_update_elem(&dirtiers, &fk, &o, BPF_ANY);
}

/* writeback_dirty_folio(folio, mapping) since v5.17 (the folio conversion of
 * mm/page-writeback.c); before it writeback_dirty_page(page, mapping). The loader enables the
 * one the kernel has. */
SEC("raw_tp/writeback_dirty_folio")
int BPF_PROG(nfs_dirty_folio, void *folio, struct address_space *mapping)
{
    on_dirty(mapping);
    return 0;
}

SEC("raw_tp/writeback_dirty_page")
int BPF_PROG(nfs_dirty_page, void *page, struct address_space *mapping)
{
    on_dirty(mapping);
    return 0;
}

char LICENSE[] SEC("license") = "GPL";
