/* `wanledger ship --metrics ADDR`: what ship has done, for Prometheus — lines read, records sent,
 * records rejected (by the reconciler: quarantined; by ship: not JSON, over-long), lag behind
 * each log's end, POSTs and the last accepted one. ship.c updates the counters (atomics); the
 * scrape runs on promhttp's thread. */
#ifndef WL_SHIP_METRICS_H
#define WL_SHIP_METRICS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct ship_log_metrics {
    const char *path;                /* the log, as a label */
    _Atomic uint64_t offset;         /* bytes shipped (or skipped) from its start */
    _Atomic uint64_t lines_read;     /* complete lines consumed */
    _Atomic uint64_t records_sent;   /* records the reconciler accepted (stored or duplicate) */
    _Atomic uint64_t rejected_here;  /* lines ship skipped: not a JSON object, over-long */
    _Atomic uint64_t rejected_there; /* records the reconciler refused (kept in its quarantine) */
};

struct ship_metrics {
    struct ship_log_metrics *logs;
    size_t n_logs;
    _Atomic uint64_t posts_ok, posts_failed;
    _Atomic int64_t last_success_us; /* 0: none yet */
};

/* The exposition (malloc'd); arg is a struct ship_metrics. The lag is each log's size now
 * (stat) minus its offset. */
char *ship_metrics_render(void *arg);

/* "rejected":N of a /v1/transfers answer, 0 when absent (older reconcilers). */
uint64_t ship_metrics_rejected_in(const char *answer);

#endif
