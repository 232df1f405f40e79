/* The JSON body of POST /v1/flowsamples: closed windows' cells from one poller, with a batch id
 * (the reconciler stores each id once, so a resend is not counted twice) and the collector's
 * per-device counters (datagrams, malformed, ...), which the reconciler exposes in /metrics.
 *
 * {"version":1,"poller":P,"batch":ID,"window_seconds":S,
 *  "devices":[{"device":D,"protocol":"ipfix","datagrams":N,"malformed":N,"records":N,
 *              "unknown_template_sets":N,"undecodable_samples":N,"agg_dropped":N}],
 *  "cells":[{"window_start":RFC3339,"device":D,"src_addr":A,"dst_addr":A,"proto":17,
 *            "dst_port":5001,"samples":N,"sampled_bytes":N,"estimated_bytes":N,
 *            "variance":X,"rate_min":N,"rate_max":N[,"src_site":S,"dst_site":S]}],
 *  "if_counters":[{"device":D,"if_index":N,"at":RFC3339,"in_octets":N,"out_octets":N,
 *                  "in_pkts":N,"out_pkts":N}]}
 * src_site/dst_site: the link the flow crossed (flow_link.h; names from site_names), when known.
 * if_counters: sFlow counter samples (generic interface counters, cumulative, as the agent
 * sent them; "at" is when the datagram arrived), stored beside the SNMP/gNMI counters as a
 * second opinion (pollers/README.md). Left out when there are none. */
#ifndef WL_FLOW_BATCH_H
#define WL_FLOW_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "flow_agg.h"
#include "flow_rec.h"

/* One sFlow counter sample of a device (index into the batch's devices). */
struct flow_batch_ifc {
    uint32_t device;
    int64_t at_us;
    struct flow_ifcounters c;
};

struct flow_batch_device {
    const char *name;
    const char *protocol;
    struct flow_stats st;
    uint64_t agg_dropped;
};

/* malloc'd NUL-terminated JSON, *len its length; NULL on out of memory. device_names[i] names
 * cells' device index i. */
char *flow_batch_json(const char *poller, const char *batch_id, int window_seconds,
                      const struct flow_batch_device *devs, size_t n_devs,
                      const struct flow_cell *cells, size_t n_cells,
                      const struct flow_batch_ifc *ifc, size_t n_ifc, const char *const *site_names,
                      size_t n_sites, size_t *len) __attribute__((warn_unused_result));

#endif
