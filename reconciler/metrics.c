/* Prometheus metrics of `wanledger reconcile` (see metrics.h). */
#include "metrics.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "chstore_flush.h"
#include "flowin.h"
#include "gaps.h"
#include "recon_db.h"
#include "store_group.h"

/* Latency histogram buckets, seconds. */
static const double BUCKETS[] = {0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
#define N_BUCKETS (sizeof(BUCKETS) / sizeof(BUCKETS[0]))

/* Status codes kept apart; anything else is counted as its class ("2xx", …). */
static const int CODES[] = {200, 400, 401, 403, 404, 405, 413, 415, 422, 429, 500, 503};
#define N_CODES (sizeof(CODES) / sizeof(CODES[0]))

static const char *const EP_NAMES[METRICS_EP_N] = {"attributions", "counters", "transfers",
                                                   "api",          "pages",    "other"};

struct histogram {
    _Atomic uint64_t bucket[N_BUCKETS]; /* cumulative at render time, not here */
    _Atomic uint64_t count;
    _Atomic uint64_t sum_ns;
};

struct metrics {
    _Atomic uint64_t requests[METRICS_EP_N][N_CODES + 1]; /* last: other codes */
    struct histogram request_seconds[METRICS_EP_N];
    _Atomic uint64_t rows_received[METRICS_EP_N];
    _Atomic uint64_t rows_stored[METRICS_EP_N];
    _Atomic uint64_t rows_rejected[METRICS_EP_N];
    _Atomic uint64_t reconcile_ok, reconcile_failed;
    struct histogram reconcile_seconds;
    _Atomic int64_t last_reconciled_window_us;
    _Atomic uint64_t webhook_ok, webhook_failed, webhook_alerts, webhook_refused;
    _Atomic int64_t webhook_db_pending;
    _Atomic uint64_t webhook_lost_full, webhook_lost_error;
    _Atomic int leader;
};

struct metrics *metrics_new(void)
{
    return calloc(1, sizeof(struct metrics));
}

void metrics_free(struct metrics *m)
{
    free(m);
}

static void observe(struct histogram *h, int64_t span_ns)
{
    double s = (double)span_ns / 1e9;
    for (size_t i = 0; i < N_BUCKETS; i++)
        if (s <= BUCKETS[i]) {
            atomic_fetch_add(&h->bucket[i], 1);
            break;
        }
    atomic_fetch_add(&h->count, 1);
    atomic_fetch_add(&h->sum_ns, span_ns > 0 ? (uint64_t)span_ns : 0);
}

void metrics_leader(struct metrics *m, bool leading)
{
    atomic_store(&m->leader, leading ? 1 : 0);
}

void metrics_request(struct metrics *m, enum metrics_endpoint ep, int status, int64_t span_ns)
{
    size_t k = N_CODES;
    for (size_t i = 0; i < N_CODES; i++)
        if (CODES[i] == status)
            k = i;
    atomic_fetch_add(&m->requests[ep][k], 1);
    observe(&m->request_seconds[ep], span_ns);
}

void metrics_rows(struct metrics *m, enum metrics_endpoint ep, uint64_t received, uint64_t stored)
{
    atomic_fetch_add(&m->rows_received[ep], received);
    atomic_fetch_add(&m->rows_stored[ep], stored);
}

void metrics_webhook_refused(struct metrics *m, uint64_t n)
{
    atomic_fetch_add(&m->webhook_refused, n);
}

void metrics_rejected(struct metrics *m, enum metrics_endpoint ep, uint64_t n)
{
    atomic_fetch_add(&m->rows_rejected[ep], n);
}

void metrics_reconcile(struct metrics *m, int ok, int64_t span_ns, int64_t window_start_us)
{
    if (ok) {
        atomic_fetch_add(&m->reconcile_ok, 1);
        observe(&m->reconcile_seconds, span_ns);
        int64_t prev = atomic_load(&m->last_reconciled_window_us);
        while (window_start_us > prev &&
               !atomic_compare_exchange_weak(&m->last_reconciled_window_us, &prev, window_start_us))
            ;
    } else {
        atomic_fetch_add(&m->reconcile_failed, 1);
    }
}

void metrics_webhook_db(struct metrics *m, int delta)
{
    atomic_fetch_add(&m->webhook_db_pending, delta);
}

void metrics_webhook_mark_lost(struct metrics *m, bool queue_full, uint64_t n_alerts)
{
    atomic_fetch_add(queue_full ? &m->webhook_lost_full : &m->webhook_lost_error, n_alerts);
}

void metrics_webhook(struct metrics *m, int ok, uint64_t n_alerts)
{
    if (ok) {
        atomic_fetch_add(&m->webhook_ok, 1);
        atomic_fetch_add(&m->webhook_alerts, n_alerts);
    } else {
        atomic_fetch_add(&m->webhook_failed, 1);
    }
}

static void render_histogram(struct evbuffer *out, const char *name, const char *labels,
                             struct histogram *h)
{
    uint64_t cum = 0;
    const char *sep = labels[0] ? "," : "";
    for (size_t i = 0; i < N_BUCKETS; i++) {
        cum += atomic_load(&h->bucket[i]);
        evbuffer_add_printf(out, "%s_bucket{%s%sle=\"%g\"} %llu\n", name, labels, sep, BUCKETS[i],
                            (unsigned long long)cum);
    }
    uint64_t count = atomic_load(&h->count);
    evbuffer_add_printf(out, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels, sep,
                        (unsigned long long)count);
    evbuffer_add_printf(out, "%s_sum{%s} %.6f\n", name, labels,
                        (double)atomic_load(&h->sum_ns) / 1e9);
    evbuffer_add_printf(out, "%s_count{%s} %llu\n", name, labels, (unsigned long long)count);
}

static void render_db_gauges(PGconn *db, struct evbuffer *out)
{
    if (!db || PQstatus(db) != CONNECTION_OK)
        return;
    PGresult *r = PQexec(db, "SELECT k.kind, count(a.id) FROM unnest(ARRAY['gap','over',"
                             "'saturation']) AS k(kind) LEFT JOIN gap_alerts a"
                             " ON a.kind = k.kind AND a.state = 'open' GROUP BY k.kind");
    if (PQresultStatus(r) == PGRES_TUPLES_OK) {
        evbuffer_add_printf(out, "# HELP wanledger_alerts_open Alerts open now, by kind.\n"
                                 "# TYPE wanledger_alerts_open gauge\n");
        for (int i = 0; i < PQntuples(r); i++)
            evbuffer_add_printf(out, "wanledger_alerts_open{kind=\"%s\"} %s\n", PQgetvalue(r, i, 0),
                                PQgetvalue(r, i, 1));
    }
    PQclear(r);
    r = PQexec(db, "SELECT count(*) FROM rejected_records");
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
        evbuffer_add_printf(out,
                            "# HELP wanledger_rejected_records Records kept in quarantine "
                            "(wanledger rejects).\n# TYPE wanledger_rejected_records gauge\n"
                            "wanledger_rejected_records %s\n",
                            PQgetvalue(r, 0, 0));
    PQclear(r);
    r = PQexec(db, "SELECT count(*) FROM window_state WHERE dirty");
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
        evbuffer_add_printf(out,
                            "# HELP wanledger_windows_dirty Windows waiting for (re)reconciliation."
                            "\n# TYPE wanledger_windows_dirty gauge\nwanledger_windows_dirty %s\n",
                            PQgetvalue(r, 0, 0));
    PQclear(r);
    gaps_render_metrics(db, out);
}

void metrics_render(struct metrics *m, PGconn *db, struct evbuffer *out)
{
    evbuffer_add_printf(out, "# HELP wanledger_http_requests_total HTTP requests answered, by "
                             "endpoint and status code.\n"
                             "# TYPE wanledger_http_requests_total counter\n");
    for (int ep = 0; ep < METRICS_EP_N; ep++)
        for (size_t k = 0; k <= N_CODES; k++) {
            uint64_t v = atomic_load(&m->requests[ep][k]);
            if (!v)
                continue;
            if (k < N_CODES)
                evbuffer_add_printf(out,
                                    "wanledger_http_requests_total{endpoint=\"%s\",code=\"%d\"} "
                                    "%llu\n",
                                    EP_NAMES[ep], CODES[k], (unsigned long long)v);
            else
                evbuffer_add_printf(out,
                                    "wanledger_http_requests_total{endpoint=\"%s\",code=\"other\"}"
                                    " %llu\n",
                                    EP_NAMES[ep], (unsigned long long)v);
        }
    evbuffer_add_printf(out, "# HELP wanledger_http_request_seconds Time to answer a request.\n"
                             "# TYPE wanledger_http_request_seconds histogram\n");
    for (int ep = 0; ep < METRICS_EP_N; ep++) {
        char labels[64];
        snprintf(labels, sizeof(labels), "endpoint=\"%s\"", EP_NAMES[ep]);
        render_histogram(out, "wanledger_http_request_seconds", labels, &m->request_seconds[ep]);
    }
    evbuffer_add_printf(out, "# HELP wanledger_ingest_rows_total Rows in accepted batches.\n"
                             "# TYPE wanledger_ingest_rows_total counter\n");
    for (int ep = METRICS_EP_ATTRIBUTIONS; ep <= METRICS_EP_TRANSFERS; ep++)
        evbuffer_add_printf(out, "wanledger_ingest_rows_total{endpoint=\"%s\"} %llu\n",
                            EP_NAMES[ep], (unsigned long long)atomic_load(&m->rows_received[ep]));
    evbuffer_add_printf(out, "# HELP wanledger_ingest_rows_stored_total Rows new to the database "
                             "(the rest were resends).\n"
                             "# TYPE wanledger_ingest_rows_stored_total counter\n");
    for (int ep = METRICS_EP_ATTRIBUTIONS; ep <= METRICS_EP_TRANSFERS; ep++)
        evbuffer_add_printf(out, "wanledger_ingest_rows_stored_total{endpoint=\"%s\"} %llu\n",
                            EP_NAMES[ep], (unsigned long long)atomic_load(&m->rows_stored[ep]));
    evbuffer_add_printf(out,
                        "# HELP wanledger_ingest_rows_rejected_total Records of accepted "
                        "batches refused one by one and kept in rejected_records.\n"
                        "# TYPE wanledger_ingest_rows_rejected_total counter\n"
                        "wanledger_ingest_rows_rejected_total{endpoint=\"transfers\"} %llu\n",
                        (unsigned long long)atomic_load(&m->rows_rejected[METRICS_EP_TRANSFERS]));
    evbuffer_add_printf(out,
                        "# HELP wanledger_reconcile_windows_total Window reconciliations.\n"
                        "# TYPE wanledger_reconcile_windows_total counter\n"
                        "wanledger_reconcile_windows_total{result=\"ok\"} %llu\n"
                        "wanledger_reconcile_windows_total{result=\"error\"} %llu\n",
                        (unsigned long long)atomic_load(&m->reconcile_ok),
                        (unsigned long long)atomic_load(&m->reconcile_failed));
    evbuffer_add_printf(out, "# HELP wanledger_reconcile_seconds Time to reconcile one window.\n"
                             "# TYPE wanledger_reconcile_seconds histogram\n");
    render_histogram(out, "wanledger_reconcile_seconds", "", &m->reconcile_seconds);
    evbuffer_add_printf(out,
                        "# HELP wanledger_reconcile_tables_unchanged_total Result tables of a "
                        "window reconciled again left unwritten: their rows were those last "
                        "written (result_digests).\n"
                        "# TYPE wanledger_reconcile_tables_unchanged_total counter\n"
                        "wanledger_reconcile_tables_unchanged_total %llu\n",
                        recon_db_unchanged_tables());
    evbuffer_add_printf(out,
                        "# HELP wanledger_reconcile_last_window_seconds Start of the newest "
                        "window reconciled, epoch seconds.\n"
                        "# TYPE wanledger_reconcile_last_window_seconds gauge\n"
                        "wanledger_reconcile_last_window_seconds %lld\n",
                        (long long)(atomic_load(&m->last_reconciled_window_us) / 1000000));
    evbuffer_add_printf(out,
                        "# HELP wanledger_webhook_posts_total Webhook POSTs, by result.\n"
                        "# TYPE wanledger_webhook_posts_total counter\n"
                        "wanledger_webhook_posts_total{result=\"ok\"} %llu\n"
                        "wanledger_webhook_posts_total{result=\"error\"} %llu\n"
                        "# HELP wanledger_webhook_alerts_total Alerts delivered to webhooks.\n"
                        "# TYPE wanledger_webhook_alerts_total counter\n"
                        "wanledger_webhook_alerts_total %llu\n",
                        (unsigned long long)atomic_load(&m->webhook_ok),
                        (unsigned long long)atomic_load(&m->webhook_failed),
                        (unsigned long long)atomic_load(&m->webhook_alerts));
    evbuffer_add_printf(out,
                        "# HELP wanledger_webhook_alerts_refused_total Alerts a webhook receiver "
                        "refused on their own (400/422), logged and not re-sent for an hour.\n"
                        "# TYPE wanledger_webhook_alerts_refused_total counter\n"
                        "wanledger_webhook_alerts_refused_total %llu\n",
                        (unsigned long long)atomic_load(&m->webhook_refused));
    evbuffer_add_printf(out,
                        "# HELP wanledger_webhook_db_jobs_pending The webhook's reads of "
                        "gap_alerts and delivery records queued or running on its database "
                        "thread.\n"
                        "# TYPE wanledger_webhook_db_jobs_pending gauge\n"
                        "wanledger_webhook_db_jobs_pending %lld\n"
                        "# HELP wanledger_webhook_marks_lost_total Alerts delivered whose delivery "
                        "was not recorded in gap_alerts (its queue full, or the statement "
                        "failed): a later leader may send them again; a resolution is recorded "
                        "again at the next poll.\n"
                        "# TYPE wanledger_webhook_marks_lost_total counter\n"
                        "wanledger_webhook_marks_lost_total{reason=\"queue_full\"} %llu\n"
                        "wanledger_webhook_marks_lost_total{reason=\"error\"} %llu\n",
                        (long long)atomic_load(&m->webhook_db_pending),
                        (unsigned long long)atomic_load(&m->webhook_lost_full),
                        (unsigned long long)atomic_load(&m->webhook_lost_error));
    evbuffer_add_printf(out,
                        "# HELP wanledger_leader 1 when this reconciler holds the leader lock "
                        "(runs the reconcile loop and delivers webhooks).\n"
                        "# TYPE wanledger_leader gauge\nwanledger_leader %d\n",
                        atomic_load(&m->leader));
    render_db_gauges(db, out);
    flowin_metrics(db, out);  /* the flow collectors' drops, reported with their batches */
    chflush_metrics(db, out); /* the ClickHouse outbox (0 without ClickHouse) */
    store_group_metrics(out); /* reports per ingest commit, grouped commits rolled back */
}
