/* The service's own counters, exported at GET /metrics in the Prometheus text format. Updated
 * from the HTTP thread and the reconcile thread (atomics); gauges that live in PostgreSQL (open
 * alerts, dirty windows) are read at scrape time. */
#ifndef WL_METRICS_H
#define WL_METRICS_H

#include <event2/buffer.h>
#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>

enum metrics_endpoint {
    METRICS_EP_ATTRIBUTIONS,
    METRICS_EP_COUNTERS,
    METRICS_EP_TRANSFERS,
    METRICS_EP_API,
    METRICS_EP_PAGES,
    METRICS_EP_OTHER,
    METRICS_EP_N
};

struct metrics;

struct metrics *metrics_new(void);
void metrics_free(struct metrics *m);

/* One answered HTTP request: its endpoint, status and time to answer. */
void metrics_request(struct metrics *m, enum metrics_endpoint ep, int status, int64_t span_ns);
/* Rows of an accepted ingest batch: received, and new to the database. */
void metrics_rows(struct metrics *m, enum metrics_endpoint ep, uint64_t received, uint64_t stored);
/* Records of an accepted transfers batch that were rejected (kept in quarantine.h's table). */
void metrics_rejected(struct metrics *m, enum metrics_endpoint ep, uint64_t n);
/* One window reconciled (ok) or failed, with its span. */
void metrics_reconcile(struct metrics *m, int ok, int64_t span_ns, int64_t window_start_us);
/* n alerts a webhook receiver refused on their own (400/422), logged and set aside. */
void metrics_webhook_refused(struct metrics *m, uint64_t n);
/* One webhook delivery attempt (ok or failed) carrying n alerts. */
void metrics_webhook(struct metrics *m, int ok, uint64_t n_alerts);
/* The webhook's database jobs (its reads of gap_alerts, its delivery records) queued or running:
 * +1 when one is queued, -1 when it is done. */
void metrics_webhook_db(struct metrics *m, int delta);
/* n alerts whose delivery record was not written: the webhook's database queue was full (or out
 * of memory), or the statement failed. */
void metrics_webhook_mark_lost(struct metrics *m, bool queue_full, uint64_t n_alerts);

/* Whether this process is the leader now (leader.h). */
void metrics_leader(struct metrics *m, bool leading);

/* Appends the Prometheus text exposition; db (may be NULL) gives the gauges kept in PostgreSQL. */
void metrics_render(struct metrics *m, PGconn *db, struct evbuffer *out);

#endif
