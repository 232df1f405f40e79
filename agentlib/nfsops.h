/* One window's NFS operations for /metrics: every record the NFS probe drained (commits too),
 * each with the detail the report leaves out (errors, latency histogram). */
#ifndef WL_NFSOPS_H
#define WL_NFSOPS_H

#include <stddef.h>
#include <stdint.h>

#include "flowset.h"
#include "llhist.h"

struct nfsop_detail {
    uint64_t errors;       /* requests completed with an error */
    struct llhist latency; /* initiate -> done, microseconds; sums to the record's ops */
};

/* recs.v[i] (source FLOW_SRC_NFS: owner, server, export_path, op "read"/"write"/"commit",
 * bytes, ops; meta once joined) goes with detail[i]. */
struct nfsops {
    struct flowset recs;
    struct nfsop_detail *detail;
    size_t detail_cap;
};

/* Appends a zeroed record and its zeroed detail; NULL when out of memory. */
struct flow_rec *nfsops_add(struct nfsops *o, struct nfsop_detail **detail);
void nfsops_clear(struct nfsops *o);
void nfsops_free(struct nfsops *o);

#endif
