/* What a workflow (program, user) talks to, and what moving it would do to the circuits
 * (docs/design.md "Dependency map"). Pure: rows of dependency_rollup and heatmap_cells in, the
 * endpoints, the circuits crossed today and, with a target site, the per-circuit-direction change
 * out. A "circuit direction" here is one hop of a site pair's path (cfg_path), the unit a
 * heatmap cell measures (parallel circuits between two sites add up). */
#ifndef WL_HM_DEPS_PLAN_H
#define WL_HM_DEPS_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

/* One dependency_rollup row (summed over the selector's owners). Strings borrowed. */
struct hm_dep_row {
    int64_t window_us;
    int local_site, remote_site;
    const char *kind, *endpoint;
    uint64_t bytes_out, bytes_in, connections;
};

/* One heatmap cell: what the counters saw on a hop in a window. */
struct hm_dep_cell {
    int64_t window_us;
    int src_site, dst_site;
    bool has_observed;
    uint64_t observed_bytes;
    uint64_t capacity_bps; /* 0: unknown */
};

struct hm_dep_endpoint {
    int local_site, remote_site;
    const char *kind, *endpoint; /* borrowed from the rows */
    uint64_t bytes_out, bytes_in, connections;
    double share;                       /* of the selector's bytes (both ways) */
    uint64_t peak_out_bps, peak_in_bps; /* busiest window's average rate */
};

struct hm_dep_circuit {
    int src_site, dst_site; /* one hop direction */
    uint64_t bytes_now;     /* the selector's bytes on it over the span, as it runs today */
    uint64_t bytes_moved;   /* the same if it ran at the target site (0 without a target) */
    uint64_t capacity_bps;  /* largest capacity seen in the span's cells */
    bool has_util;          /* a cell with capacity existed in some window */
    double peak_util_now;   /* max over windows of observed / capacity */
    double peak_util_moved; /* max over windows of (observed − now + moved) / capacity */
    int64_t peak_window_now_us, peak_window_moved_us;
    bool exceeds_now, exceeds_moved; /* peak above the saturation threshold */
};

struct hm_dep_plan {
    int move_to; /* site index or -1 */
    uint64_t total_bytes;
    uint64_t unrouted_bytes;           /* pairs with no path of circuits (cfg_path found none) */
    struct hm_dep_endpoint *endpoints; /* bytes descending */
    size_t n_endpoints;
    struct hm_dep_circuit *circuits; /* by (src, dst) */
    size_t n_circuits;
};

/* Builds the plan; move_to -1 for none. 0, or -1 with err (out of memory). */
int hm_deps_plan(const struct cfg *cfg, const struct hm_dep_row *rows, size_t n_rows,
                 const struct hm_dep_cell *cells, size_t n_cells, int move_to,
                 struct hm_dep_plan *out, char *err, size_t errlen)
    __attribute__((warn_unused_result));
void hm_deps_plan_free(struct hm_dep_plan *p);
/* Bytes (both ways) of the endpoints with this local site and, when remote_site >= 0, this remote
 * site: the Sankey's owner -> site and site -> site links (JSON and page). */
uint64_t hm_deps_site_bytes(const struct hm_dep_plan *p, int local_site, int remote_site);

#endif
