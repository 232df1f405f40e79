/* The flows of one window, whatever probe they came from (socket, NFS): a growable array of
 * records that the probes fill, the metadata join completes, sampling thins and the report
 * serialises. */
#ifndef WL_FLOWSET_H
#define WL_FLOWSET_H

#include <stddef.h>
#include <stdint.h>

#include "kubepods.h"
#include "llhist.h"

enum flow_source { FLOW_SRC_SOCKET = 0, FLOW_SRC_NFS = 1 };

/* Owner of a flow as the kernel recorded it (stays valid after the process exits). */
struct flow_owner {
    uint32_t pid;
    uint32_t ppid;
    uint32_t uid;
    uint64_t cgroup_id;
    uint64_t start_ns; /* process start, ns since boot (CLOCK_BOOTTIME) */
    char comm[16];
};

/* Metadata joined in user space (procmeta.c); empty strings when unknown. */
struct flow_meta {
    char user[64];
    char exe[256];
    char workflow[128];
    char cgroup[256];
    char container[80];
    char pod_uid[40];
    struct kube_identity kube; /* namespace, pod, container name (kubepods.h); "" unknown */
    char unit[128];
    char slurm_job[32];
};

struct flow_rec {
    enum flow_source source;
    struct flow_owner owner;
    /* socket; for nfs, family + laddr are the client's own address (0: unknown) */
    uint8_t family; /* AF_INET / AF_INET6 */
    uint8_t proto;  /* IPPROTO_TCP / IPPROTO_UDP */
    uint8_t laddr[16], raddr[16];
    uint16_t lport, rport;
    uint32_t netns;
    int role; /* WL_ROLE_* from socket.h */
    uint64_t tx_bytes, rx_bytes, tx_calls, rx_calls;
    /* nfs */
    char server[48]; /* "10.1.0.50:2049", "[fd00::50]:2049" */
    char export_path[128];
    char op[8]; /* "read" / "write" */
    /* nfs: request latency in us, in the window's nfsops (valid until its next drain); NULL:
     * not known */
    const struct llhist *latency;
    uint64_t errors; /* nfs: requests completed with an error; known when latency is not NULL */
    uint64_t bytes, ops;
    /* filled after the drain: owned by the procmeta cache, valid until its next prune */
    const struct flow_meta *meta;
};

struct flowset {
    struct flow_rec *v;
    size_t n, cap;
};

/* Appends a zeroed record and returns it, or NULL when out of memory. */
struct flow_rec *flowset_add(struct flowset *fs);
void flowset_clear(struct flowset *fs);
void flowset_free(struct flowset *fs);
/* The byte weight sampling uses: tx+rx for sockets, bytes for NFS. */
uint64_t flowset_weight(const struct flow_rec *r);

#endif
