/* Prometheus text for the agent's counters. */
#include "agentmetrics.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "promhttp.h"
#include "report.h"

#define NFS_INDEX_SLOTS (2 * AGENTMETRICS_NFS_SERIES) /* a power of two, at most half full */

struct agentmetrics_nfs_series {
    /* as large as the fields they are copied from, so a label is never cut */
    char server[sizeof(((struct flow_rec *)0)->server)];
    char export_path[sizeof(((struct flow_rec *)0)->export_path)];
    char op[sizeof(((struct flow_rec *)0)->op)];
    char workflow[sizeof(((struct flow_meta *)0)->workflow)];
    char user[sizeof(((struct flow_meta *)0)->user)];
    struct kube_identity kube; /* namespace, pod, container labels */
    uint64_t hash;             /* of the eight labels */
    uint64_t ops, bytes, errors;
    struct llhist hist; /* since the agent started, microseconds */
    struct llhist window_hist;
    uint64_t last_window; /* nfs_windows when last seen */
};

void agentmetrics_drain_time(struct agentmetrics *m, uint64_t ns)
{
    m->drain_ns[m->n_drain % AGENTMETRICS_DRAIN_SAMPLES] = ns;
    m->n_drain++;
    m->drain_ns_sum += ns;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

uint64_t agentmetrics_drain_quantile(const struct agentmetrics *m, double q, size_t *count)
{
    size_t n = m->n_drain < AGENTMETRICS_DRAIN_SAMPLES ? m->n_drain : AGENTMETRICS_DRAIN_SAMPLES;
    uint64_t v[AGENTMETRICS_DRAIN_SAMPLES];
    *count = n;
    if (n == 0)
        return 0;
    memcpy(v, m->drain_ns, n * sizeof(v[0]));
    qsort(v, n, sizeof(v[0]), cmp_u64);
    size_t i = (size_t)(q * (double)(n - 1) + 0.5);
    return v[i < n ? i : n - 1];
}

static uint64_t fnv1a(uint64_t h, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s;; p++) {
        h = (h ^ *p) * 0x100000001b3ULL; /* the NUL too: separates the labels */
        if (!*p)
            return h;
    }
}

#define NFS_LABELS 8

/* The label values of a record, in put_labels' order. */
static void labels_of(const struct flow_rec *r, const char *v[NFS_LABELS])
{
    const struct flow_meta *m = r->meta;
    v[0] = r->server;
    v[1] = r->export_path;
    v[2] = r->op;
    v[3] = m ? m->workflow : "";
    v[4] = m ? m->user : "";
    v[5] = m ? m->kube.namespace_ : "";
    v[6] = m ? m->kube.pod : "";
    v[7] = m ? m->kube.container : "";
}

static void series_labels(const struct agentmetrics_nfs_series *x, const char *v[NFS_LABELS])
{
    v[0] = x->server;
    v[1] = x->export_path;
    v[2] = x->op;
    v[3] = x->workflow;
    v[4] = x->user;
    v[5] = x->kube.namespace_;
    v[6] = x->kube.pod;
    v[7] = x->kube.container;
}

static uint64_t labels_hash(const char *const v[NFS_LABELS])
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (int i = 0; i < NFS_LABELS; i++)
        h = fnv1a(h, v[i]);
    return h;
}

static bool labels_equal(const char *const a[NFS_LABELS], const char *const b[NFS_LABELS])
{
    for (int i = 0; i < NFS_LABELS; i++)
        if (strcmp(a[i], b[i]) != 0)
            return false;
    return true;
}

static void index_put(uint32_t *index, uint64_t hash, size_t series)
{
    size_t at = (size_t)hash & (NFS_INDEX_SLOTS - 1);
    while (index[at])
        at = (at + 1) & (NFS_INDEX_SLOTS - 1);
    index[at] = (uint32_t)series + 1;
}

/* The series of r's labels, created when new; NULL when the table is full or out of memory. */
static struct agentmetrics_nfs_series *nfs_series_of(struct agentmetrics *m,
                                                     const struct flow_rec *r)
{
    const char *lab[NFS_LABELS], *xl[NFS_LABELS];
    labels_of(r, lab);
    if (!m->nfs_index && !(m->nfs_index = calloc(NFS_INDEX_SLOTS, sizeof(*m->nfs_index))))
        return NULL;
    uint64_t h = labels_hash(lab);
    for (size_t at = (size_t)h & (NFS_INDEX_SLOTS - 1); m->nfs_index[at];
         at = (at + 1) & (NFS_INDEX_SLOTS - 1)) {
        struct agentmetrics_nfs_series *x = &m->nfs_series[m->nfs_index[at] - 1];
        series_labels(x, xl);
        if (x->hash == h && labels_equal(xl, lab))
            return x;
    }
    if (m->n_nfs_series == AGENTMETRICS_NFS_SERIES)
        return NULL;
    if (m->n_nfs_series == m->cap_nfs_series) {
        size_t cap = m->cap_nfs_series ? m->cap_nfs_series * 2 : 16;
        struct agentmetrics_nfs_series *v = realloc(m->nfs_series, cap * sizeof(*v));
        if (!v)
            return NULL;
        m->nfs_series = v;
        m->cap_nfs_series = cap;
    }
    struct agentmetrics_nfs_series *x = &m->nfs_series[m->n_nfs_series];
    memset(x, 0, sizeof(*x));
    snprintf(x->server, sizeof(x->server), "%s", r->server);
    snprintf(x->export_path, sizeof(x->export_path), "%s", r->export_path);
    snprintf(x->op, sizeof(x->op), "%s", r->op);
    snprintf(x->workflow, sizeof(x->workflow), "%s", lab[3]);
    snprintf(x->user, sizeof(x->user), "%s", lab[4]);
    snprintf(x->kube.namespace_, sizeof(x->kube.namespace_), "%s", lab[5]);
    snprintf(x->kube.pod, sizeof(x->kube.pod), "%s", lab[6]);
    snprintf(x->kube.container, sizeof(x->kube.container), "%s", lab[7]);
    x->hash = h;
    index_put(m->nfs_index, x->hash, m->n_nfs_series);
    m->n_nfs_series++;
    return x;
}

void agentmetrics_nfs_window(struct agentmetrics *m, const struct nfsops *ops)
{
    m->nfs_windows++;
    for (size_t i = 0; i < m->n_nfs_series; i++)
        memset(&m->nfs_series[i].window_hist, 0, sizeof(m->nfs_series[i].window_hist));
    for (size_t i = 0; i < ops->recs.n; i++) {
        const struct flow_rec *r = &ops->recs.v[i];
        const struct nfsop_detail *d = &ops->detail[i];
        struct agentmetrics_nfs_series *x = nfs_series_of(m, r);
        if (!x) {
            m->nfs_series_overflow++;
            continue;
        }
        x->ops += r->ops;
        x->bytes += r->bytes;
        x->errors += d->errors;
        llhist_merge(&x->hist, &d->latency);
        llhist_merge(&x->window_hist, &d->latency);
        x->last_window = m->nfs_windows;
    }
    size_t kept = 0;
    for (size_t i = 0; i < m->n_nfs_series; i++)
        if (m->nfs_windows - m->nfs_series[i].last_window < AGENTMETRICS_NFS_IDLE)
            m->nfs_series[kept++] = m->nfs_series[i];
    if (kept != m->n_nfs_series) { /* indexes moved: rebuild */
        m->n_nfs_series = kept;
        memset(m->nfs_index, 0, NFS_INDEX_SLOTS * sizeof(*m->nfs_index));
        for (size_t i = 0; i < kept; i++)
            index_put(m->nfs_index, m->nfs_series[i].hash, i);
    }
}

void agentmetrics_free(struct agentmetrics *m)
{
    free(m->nfs_series);
    free(m->nfs_index);
    m->nfs_series = NULL;
    m->nfs_index = NULL;
    m->n_nfs_series = m->cap_nfs_series = 0;
}

/* A label value: cleaned as report strings are (report_clean_text), then written by the one
 * label writer (promhttp_label: \\, \" and \n escaped). */
static void put_label(FILE *f, const char *name, const char *v, bool comma)
{
    char clean[REPORT_CLEAN_LEN(256)];
    report_clean_text(v, clean, sizeof(clean));
    promhttp_label(f, name, clean, comma);
}

static void put_labels(FILE *f, const struct agentmetrics_nfs_series *x)
{
    static const char *const names[NFS_LABELS] = {"server", "export",    "op",  "workflow",
                                                  "user",   "namespace", "pod", "container"};
    const char *v[NFS_LABELS];
    series_labels(x, v);
    for (int i = 0; i < NFS_LABELS; i++)
        put_label(f, names[i], v[i], i > 0);
}

static int cmp_series(const void *a, const void *b)
{
    const char *x[NFS_LABELS], *y[NFS_LABELS];
    series_labels(*(const struct agentmetrics_nfs_series *const *)a, x);
    series_labels(*(const struct agentmetrics_nfs_series *const *)b, y);
    for (int i = 0; i < NFS_LABELS; i++) {
        int c = strcmp(x[i], y[i]);
        if (c)
            return c;
    }
    return 0;
}

static void put_seconds(FILE *f, uint64_t us)
{
    if (us == UINT64_MAX)
        fputs("+Inf", f);
    else
        fprintf(f, "%.6f", (double)us / 1e6);
}

static void render_nfs(FILE *f, const struct agentmetrics *m)
{
    const struct agentmetrics_nfs_series **v = NULL;
    size_t n = m->n_nfs_series;
    if (n && !(v = malloc(n * sizeof(*v))))
        return;
    for (size_t i = 0; i < n; i++)
        v[i] = &m->nfs_series[i];
    if (n)
        qsort(v, n, sizeof(*v), cmp_series);
    static const struct {
        const char *name, *help;
        size_t off;
    } counters[] = {
        {"wanledger_nfs_ops_total", "NFS requests completed (errors included).",
         offsetof(struct agentmetrics_nfs_series, ops)},
        {"wanledger_nfs_bytes_total", "NFS payload bytes of requests completed without error.",
         offsetof(struct agentmetrics_nfs_series, bytes)},
        {"wanledger_nfs_errors_total", "NFS requests completed with an error.",
         offsetof(struct agentmetrics_nfs_series, errors)},
    };
    for (size_t c = 0; c < sizeof(counters) / sizeof(counters[0]); c++) {
        fprintf(f, "# HELP %s %s\n# TYPE %s counter\n", counters[c].name, counters[c].help,
                counters[c].name);
        for (size_t i = 0; i < n; i++) {
            uint64_t val;
            memcpy(&val, (const char *)v[i] + counters[c].off, sizeof(val));
            fprintf(f, "%s{", counters[c].name);
            put_labels(f, v[i]);
            fprintf(f, "} %llu\n", (unsigned long long)val);
        }
    }
    fputs("# HELP wanledger_nfs_latency_seconds NFS request latency, initiate to done (log-linear "
          "buckets, 4 bounds per power of two exported; _sum estimated from bucket midpoints).\n"
          "# TYPE wanledger_nfs_latency_seconds histogram\n",
          f);
    for (size_t i = 0; i < n; i++) {
        const struct llhist *h = &v[i]->hist;
        uint64_t cum = 0;
        size_t b = 0;
        for (size_t k = 0; k < LLHIST_PROM_BOUNDS; k++) {
            for (; b <= llhist_prom_slot(k); b++)
                cum += h->c[b];
            fputs("wanledger_nfs_latency_seconds_bucket{", f);
            put_labels(f, v[i]);
            fputs(",le=\"", f);
            put_seconds(f, llhist_upper(llhist_prom_slot(k)));
            fprintf(f, "\"} %llu\n", (unsigned long long)cum);
        }
        uint64_t total = llhist_total(h);
        fputs("wanledger_nfs_latency_seconds_bucket{", f);
        put_labels(f, v[i]);
        fprintf(f, ",le=\"+Inf\"} %llu\n", (unsigned long long)total);
        fputs("wanledger_nfs_latency_seconds_sum{", f);
        put_labels(f, v[i]);
        fprintf(f, "} %.6f\n", llhist_sum_estimate(h) / 1e6);
        fputs("wanledger_nfs_latency_seconds_count{", f);
        put_labels(f, v[i]);
        fprintf(f, "} %llu\n", (unsigned long long)total);
    }
    fputs("# HELP wanledger_nfs_latency_window_seconds NFS latency quantile over the last window "
          "(upper bound of its log-linear bucket, at most 6.25% above).\n"
          "# TYPE wanledger_nfs_latency_window_seconds summary\n",
          f);
    static const struct {
        const char *label;
        double q;
    } qs[] = {{"0.5", 0.5}, {"0.99", 0.99}, {"0.999", 0.999}, {"1", 1.0}};
    for (size_t i = 0; i < n; i++) {
        if (!llhist_total(&v[i]->window_hist))
            continue;
        for (size_t k = 0; k < sizeof(qs) / sizeof(qs[0]); k++) {
            fputs("wanledger_nfs_latency_window_seconds{", f);
            put_labels(f, v[i]);
            fprintf(f, ",quantile=\"%s\"} ", qs[k].label);
            put_seconds(f, llhist_quantile(&v[i]->window_hist, qs[k].q, NULL));
            fputc('\n', f);
        }
    }
    fputs("# HELP wanledger_nfs_latency_window_requests NFS requests behind the last window's "
          "quantiles.\n"
          "# TYPE wanledger_nfs_latency_window_requests gauge\n",
          f);
    for (size_t i = 0; i < n; i++) {
        uint64_t t = llhist_total(&v[i]->window_hist);
        if (!t)
            continue;
        fputs("wanledger_nfs_latency_window_requests{", f);
        put_labels(f, v[i]);
        fprintf(f, "} %llu\n", (unsigned long long)t);
    }
    fprintf(f,
            "# HELP wanledger_nfs_series_overflow_total NFS records not exported: more than %d "
            "label sets.\n"
            "# TYPE wanledger_nfs_series_overflow_total counter\n"
            "wanledger_nfs_series_overflow_total %llu\n",
            AGENTMETRICS_NFS_SERIES, (unsigned long long)m->nfs_series_overflow);
    free(v);
}

char *agentmetrics_render(const struct agentmetrics *m)
{
    size_t cnt;
    uint64_t p50 = agentmetrics_drain_quantile(m, 0.50, &cnt);
    uint64_t p99 = agentmetrics_drain_quantile(m, 0.99, &cnt);
    uint64_t pmax = agentmetrics_drain_quantile(m, 1.0, &cnt);
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    if (!f)
        return NULL;
    fprintf(f,
            "# HELP wanledger_agent_attach_mode Socket probe attach mode in use.\n"
            "# TYPE wanledger_agent_attach_mode gauge\n"
            "wanledger_agent_attach_mode{mode=\"%s\"} 1\n"
            "# HELP wanledger_agent_nfs_probe NFS probe running (1) or not (0).\n"
            "# TYPE wanledger_agent_nfs_probe gauge\n"
            "wanledger_agent_nfs_probe %d\n"
            "# HELP wanledger_agent_windows_total Windows counted and reported.\n"
            "# TYPE wanledger_agent_windows_total counter\n"
            "wanledger_agent_windows_total %llu\n"
            "# HELP wanledger_agent_events_total Socket send/receive calls counted.\n"
            "# TYPE wanledger_agent_events_total counter\n"
            "wanledger_agent_events_total %llu\n"
            "# HELP wanledger_agent_bytes_total Socket payload bytes counted, by direction.\n"
            "# TYPE wanledger_agent_bytes_total counter\n"
            "wanledger_agent_bytes_total{direction=\"tx\"} %llu\n"
            "wanledger_agent_bytes_total{direction=\"rx\"} %llu\n"
            "# HELP wanledger_agent_dropped_events_total Events lost because a map was full.\n"
            "# TYPE wanledger_agent_dropped_events_total counter\n"
            "wanledger_agent_dropped_events_total %llu\n"
            "# HELP wanledger_agent_flows_seen_total Flows seen in windows, before sampling.\n"
            "# TYPE wanledger_agent_flows_seen_total counter\n"
            "wanledger_agent_flows_seen_total %llu\n"
            "# HELP wanledger_agent_flows_reported_total Flows put in reports.\n"
            "# TYPE wanledger_agent_flows_reported_total counter\n"
            "wanledger_agent_flows_reported_total %llu\n"
            "# HELP wanledger_agent_reports_sent_total Reports the reconciler accepted.\n"
            "# TYPE wanledger_agent_reports_sent_total counter\n"
            "wanledger_agent_reports_sent_total %llu\n"
            "# HELP wanledger_agent_reports_rejected_total Reports the reconciler refused for "
            "good (4xx).\n"
            "# TYPE wanledger_agent_reports_rejected_total counter\n"
            "wanledger_agent_reports_rejected_total %llu\n"
            "# HELP wanledger_agent_send_failures_total POSTs that failed and will be retried.\n"
            "# TYPE wanledger_agent_send_failures_total counter\n"
            "wanledger_agent_send_failures_total %llu\n"
            "# HELP wanledger_agent_reports_spooled Reports waiting in the spool.\n"
            "# TYPE wanledger_agent_reports_spooled gauge\n"
            "wanledger_agent_reports_spooled %llu\n"
            "# HELP wanledger_agent_spool_dropped_total Reports dropped because the spool was "
            "full.\n"
            "# TYPE wanledger_agent_spool_dropped_total counter\n"
            "wanledger_agent_spool_dropped_total %llu\n"
            "# HELP wanledger_agent_drain_errors_total Map drains that failed.\n"
            "# TYPE wanledger_agent_drain_errors_total counter\n"
            "wanledger_agent_drain_errors_total %llu\n"
            "# HELP wanledger_agent_drain_seconds Time to flip, wait and read one map generation, "
            "over the last %zu drains.\n"
            "# TYPE wanledger_agent_drain_seconds summary\n"
            "wanledger_agent_drain_seconds{quantile=\"0.5\"} %.6f\n"
            "wanledger_agent_drain_seconds{quantile=\"0.99\"} %.6f\n"
            "wanledger_agent_drain_seconds{quantile=\"1\"} %.6f\n"
            "wanledger_agent_drain_seconds_sum %.9f\n"
            "wanledger_agent_drain_seconds_count %zu\n",
            m->attach_mode ? m->attach_mode : "none", m->nfs ? 1 : 0,
            (unsigned long long)m->windows, (unsigned long long)m->events,
            (unsigned long long)m->tx_bytes, (unsigned long long)m->rx_bytes,
            (unsigned long long)m->dropped_events, (unsigned long long)m->flows_seen,
            (unsigned long long)m->flows_reported, (unsigned long long)m->reports_sent,
            (unsigned long long)m->reports_rejected, (unsigned long long)m->send_failures,
            (unsigned long long)m->reports_spooled, (unsigned long long)m->spool_dropped,
            (unsigned long long)m->drain_errors, cnt, (double)p50 / 1e9, (double)p99 / 1e9,
            (double)pmax / 1e9, (double)m->drain_ns_sum / 1e9, m->n_drain);
    fprintf(f,
            "# HELP wanledger_agent_late_ticks_total Drains that ran later than the grace after "
            "their window's end; their counts were reported as lost (late_drain).\n"
            "# TYPE wanledger_agent_late_ticks_total counter\n"
            "wanledger_agent_late_ticks_total %llu\n"
            "# HELP wanledger_agent_windows_skipped_total Windows that passed without their drain "
            "because a tick ran late.\n"
            "# TYPE wanledger_agent_windows_skipped_total counter\n"
            "wanledger_agent_windows_skipped_total %llu\n"
            "# HELP wanledger_agent_windows_skipped_unreported_total Of those, windows beyond the "
            "empty reports sent for them (at most 60 per late tick).\n"
            "# TYPE wanledger_agent_windows_skipped_unreported_total counter\n"
            "wanledger_agent_windows_skipped_unreported_total %llu\n"
            "# HELP wanledger_agent_late_bytes_total Bytes counted but reported as lost by late "
            "drains.\n"
            "# TYPE wanledger_agent_late_bytes_total counter\n"
            "wanledger_agent_late_bytes_total %llu\n",
            (unsigned long long)m->late_ticks, (unsigned long long)m->windows_skipped,
            (unsigned long long)m->windows_skipped_unreported, (unsigned long long)m->late_bytes);
    if (m->nfs || m->n_nfs_series)
        render_nfs(f, m);
    if (fclose(f) != 0) {
        free(out);
        return NULL;
    }
    return out;
}
