/* The seam between the agent and the NFS probe (agentlib/nfs_probe.{h,c}, nfs.bpf.c, owned by
 * the NFS work). The NFS side defines, in nfs_probe.h/.c:
 *
 *     extern const struct agent_nfs_hook nfs_probe_hook;
 *
 * agentlib/CMakeLists.txt defines WL_HAVE_NFS_PROBE for wanledger-agent when nfs_probe.c and the
 * nfs_skel BPF object are in the build (option WL_NFS_PROBE, default ON), and agent_main.c then
 * opens the hook next to the socket probe and drains it every window into the same flowset, right
 * after the socket drain. */
#ifndef WL_AGENT_NFS_HOOK_H
#define WL_AGENT_NFS_HOOK_H

#include <stddef.h>
#include <stdint.h>

#include "flowset.h"
#include "nfsops.h"

struct agent_opts;

struct agent_nfs_hook {
    const char *name; /* for the log and /metrics, e.g. "nfs" */
    /* Loads and attaches. NULL with `why` filled when NFS cannot be traced here (no NFS client in
     * the kernel, no nfs tracepoints): the agent logs why and runs with sockets only. */
    void *(*open)(const struct agent_opts *opts, char *why, size_t whylen);
    /* Appends the window's NFS records to out, each with source FLOW_SRC_NFS, owner (pid of the
     * task that initiated the I/O, ppid, uid, cgroup_id, start_ns, comm), server "addr:port",
     * export_path, op "read"/"write", bytes and ops; adds events lost since the previous drain
     * to *dropped. When ops is not NULL, also appends every record there (commits too, op
     * "commit") with its errors and latency histogram, for /metrics. Must lose nothing between
     * two drains (the same two-generation rule as the socket probe). Returns 0 or -1 with err
     * (the agent logs it and reports the sockets). */
    int (*drain)(void *h, struct flowset *out, struct nfsops *ops, uint64_t *dropped, char *err,
                 size_t errlen);
    void (*close)(void *h); /* accepts NULL */
};

#endif
