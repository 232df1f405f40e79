/* The agent's own counters and drain-time distribution, rendered as Prometheus text. */
#ifndef WL_AGENTMETRICS_H
#define WL_AGENTMETRICS_H

#include <stddef.h>
#include <stdint.h>

#include "nfsops.h"

#define AGENTMETRICS_DRAIN_SAMPLES 1024 /* the last N drains */
#define AGENTMETRICS_NFS_SERIES    4096 /* NFS label sets kept; more are counted, not exported */
#define AGENTMETRICS_NFS_IDLE      60   /* windows an NFS label set may stay idle before removal */

struct agentmetrics_nfs_series; /* agentmetrics.c */

struct agentmetrics {
    const char *attach_mode; /* "tp_btf", "fentry", "kprobe" */
    const char *nfs;         /* NFS hook name, or NULL when not running */
    uint64_t windows;
    uint64_t events; /* socket calls counted (tx + rx) */
    uint64_t tx_bytes, rx_bytes;
    uint64_t dropped_events;
    uint64_t flows_seen; /* summed over windows, before sampling */
    uint64_t flows_reported;
    uint64_t reports_sent, reports_rejected, send_failures, spool_dropped;
    uint64_t reports_spooled; /* waiting now */
    uint64_t drain_errors;
    /* late ticks (agent_main.c, README.md "Late ticks"): ticks that ran late, the windows they
     * skipped, of those the ones beyond the empty reports sent, and the bytes reported as lost */
    uint64_t late_ticks, windows_skipped, windows_skipped_unreported, late_bytes;
    uint64_t drain_ns[AGENTMETRICS_DRAIN_SAMPLES];
    size_t n_drain;        /* total drains recorded (ring index = n % N) */
    uint64_t drain_ns_sum; /* over every drain recorded */
    /* NFS per (server, export, op, workflow, user), from agentmetrics_nfs_window */
    struct agentmetrics_nfs_series *nfs_series;
    size_t n_nfs_series, cap_nfs_series;
    uint32_t *nfs_index; /* open addressing over label-set hashes: series index + 1, 0 = free */
    uint64_t nfs_windows;
    uint64_t nfs_series_overflow; /* records whose label set did not fit */
};

void agentmetrics_drain_time(struct agentmetrics *m, uint64_t ns);
/* Quantile q in [0,1] of the recorded drain times in ns (0 when none); count gets the samples. */
uint64_t agentmetrics_drain_quantile(const struct agentmetrics *m, double q, size_t *count);
/* Adds one window's NFS records (owners joined: meta gives workflow and user) to the per (server,
 * export, op, workflow, user) counters and histograms, and makes them the "last window" of the
 * quantile gauges. Label sets idle for AGENTMETRICS_NFS_IDLE windows are removed. */
void agentmetrics_nfs_window(struct agentmetrics *m, const struct nfsops *ops);
/* Frees what agentmetrics_nfs_window allocated; the counters stay. */
void agentmetrics_free(struct agentmetrics *m);
/* Prometheus text exposition (malloc'd), NULL when out of memory. */
char *agentmetrics_render(const struct agentmetrics *m);

#endif
