/* Per-window aggregation of decoded flow observations: one cell per (window, exporting device,
 * source address, destination address, protocol, destination port) holding the number of sampled
 * packets, their bytes, the estimate scaled by each packet's sampling rate and the estimate's
 * variance (pollers/README.md "Flow samples": X = sum w*b, V = sum w(w-1)*b^2). Pure: no I/O,
 * no clock; the collector feeds it and takes closed windows out. */
#ifndef WL_FLOW_AGG_H
#define WL_FLOW_AGG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "flow_rec.h"

struct flow_cell {
    int64_t window_start_us;
    uint32_t device; /* index into the configuration's devices */
    uint8_t family;
    uint8_t src[16], dst[16];
    uint8_t proto;
    uint16_t dport;
    uint64_t samples;       /* sampled packets */
    uint64_t sampled_bytes; /* their IP bytes */
    uint64_t estimated_bytes;
    double variance;
    uint32_t rate_min, rate_max;
    uint32_t in_if, out_if; /* interfaces of the cell's first record (0 = not given) */
    int src_site, dst_site; /* set by the collector from the link (flow_link.h); -1 = unknown */
};

struct flow_agg;

struct flow_agg *flow_agg_new(int window_seconds, size_t max_cells)
    __attribute__((warn_unused_result));
void flow_agg_free(struct flow_agg *a);

/* Adds r (seen by device) to its window: r->end_ms when known, else at_us. Returns 0, or -1 when
 * the table is full (the record is counted in flow_agg_dropped, never silently lost). */
int flow_agg_add(struct flow_agg *a, uint32_t device, const struct flow_rec *r, int64_t at_us);

/* Moves every cell of windows starting before before_us into *out (malloc'd array, caller frees;
 * *n its length), ordered by window. 0 or -1 (out of memory: nothing moved). */
int flow_agg_take(struct flow_agg *a, int64_t before_us, struct flow_cell **out, size_t *n)
    __attribute__((warn_unused_result));

size_t flow_agg_cells(const struct flow_agg *a);
uint64_t flow_agg_dropped(const struct flow_agg *a);

#endif
