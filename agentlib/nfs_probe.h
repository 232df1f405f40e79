/* NFS probe, user side: loads nfs.bpf.c, drains per-initiator NFS records each window and joins
 * each superblock to its server address and export from /proc/self/mountinfo. */
#ifndef WL_NFS_PROBE_H
#define WL_NFS_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent_nfs_hook.h"
#include "nfs.h"

struct nfs_probe;

/* The agent's seam (agent_nfs_hook.h): open/drain/close of this probe, draining read and write
 * records into the agent's flowset as FLOW_SRC_NFS flows (commits carry no payload and are left
 * out there; nfs_probe_drain reports them). */
extern const struct agent_nfs_hook nfs_probe_hook;

/* One drained record: what an owner did on one NFS mount in one window. Strings are never NULL
 * ("" when the superblock is no longer in mountinfo); all pointers are valid only during the
 * callback. */
struct nfs_probe_record {
    const struct nfs_owner *owner; /* initiator: tgid, uid, cgroup id, start_ns, comm */
    uint32_t dev;                  /* kernel dev_t of the superblock */
    const char *op;                /* "read", "write" or "commit" */
    const char *credit;            /* "task", "dirtier" (worker write-back) or "kernel" */
    const char *server;            /* "127.0.0.1:2049", "[fd00::1]:2049" */
    const char *export;            /* "/srv/data" (the path on the server) */
    const char *mountpoint;        /* where it is mounted here */
    const char *fstype;            /* "nfs" or "nfs4" */
    uint64_t bytes;                /* payload bytes of requests completed without error */
    uint64_t ops;                  /* completed requests (RPCs), errors included */
    uint64_t errors;
    const __u32
        *latency; /* NFS_LAT_SLOTS log-linear buckets of us (llhist_layout.h); sums to ops */
};

typedef void (*nfs_probe_record_fn)(const struct nfs_probe_record *rec, void *arg);

/* Losses since the previous drain. */
struct nfs_probe_drops {
    uint64_t stats_full; /* records that did not fit in the kernel map */
    uint64_t unmatched;  /* done events whose initiation was not seen */
};

/* Loads and attaches the probe. Returns NULL when it cannot run, with why filled ("unavailable:
 * this kernel has no NFS client ..." when there is no nfs module BTF nor nfs tracepoints, or the
 * libbpf error). Needs CAP_BPF/root and tracefs mounted. */
struct nfs_probe *nfs_probe_open(char *why, size_t why_len) __attribute__((warn_unused_result));

/* Drains every record of the current window: calls fn once per record, then forgets them. A
 * kernel update racing the drain lands in the next window. drops may be NULL. Returns 0, or -1
 * with err filled. */
int nfs_probe_drain(struct nfs_probe *p, nfs_probe_record_fn fn, void *arg,
                    struct nfs_probe_drops *drops, char *err, size_t err_len)
    __attribute__((warn_unused_result));

/* Detaches and frees; accepts NULL. */
void nfs_probe_close(struct nfs_probe *p);

/* An NFS mount from one /proc/self/mountinfo line. */
struct nfs_probe_mount {
    uint32_t dev; /* major << 20 | minor, as the nfs tracepoints carry it */
    char server[64];
    char export[256];
    char mountpoint[256];
    char fstype[8];
};

/* Parses one mountinfo line (without or with its newline). Returns 1 and fills m for an nfs or
 * nfs4 mount, 0 for any other filesystem, -1 for a malformed line. */
int nfs_probe_parse_mountinfo_line(const char *line, struct nfs_probe_mount *m);

#endif
