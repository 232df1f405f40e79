/* `wanledger ship`'s /metrics (see ship_metrics.h). */
#include "ship_metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "jsonv.h"
#include "promhttp.h"

struct family {
    const char *name, *type, *help;
};

static void head(FILE *f, const struct family *fam)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", fam->name, fam->help, fam->name, fam->type);
}

static void per_log(FILE *f, const struct ship_metrics *m, const struct family *fam,
                    uint64_t (*value)(const struct ship_log_metrics *), const char *extra)
{
    head(f, fam);
    for (size_t i = 0; i < m->n_logs; i++) {
        fprintf(f, "%s{", fam->name);
        promhttp_label(f, "log", m->logs[i].path, false);
        fprintf(f, "%s} %llu\n", extra ? extra : "", (unsigned long long)value(&m->logs[i]));
    }
}

static uint64_t v_read(const struct ship_log_metrics *l)
{
    return atomic_load(&l->lines_read);
}

static uint64_t v_sent(const struct ship_log_metrics *l)
{
    return atomic_load(&l->records_sent);
}

static uint64_t v_lag(const struct ship_log_metrics *l)
{
    struct stat st;
    uint64_t off = atomic_load(&l->offset);
    if (stat(l->path, &st) != 0 || (uint64_t)st.st_size <= off)
        return 0; /* gone, or truncated (read again from its start by ship) */
    return (uint64_t)st.st_size - off;
}

char *ship_metrics_render(void *arg)
{
    const struct ship_metrics *m = arg;
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    if (!f)
        return NULL;
    static const struct family read = {"wanledger_ship_lines_read_total", "counter",
                                       "Complete log lines consumed (shipped, skipped, blank)."};
    static const struct family sent = {
        "wanledger_ship_records_sent_total", "counter",
        "Records the reconciler accepted (stored, or duplicates of stored ones)."};
    static const struct family rej = {
        "wanledger_ship_records_rejected_total", "counter",
        "Records not stored: by=\"reconciler\" refused and kept in its rejected_records, "
        "by=\"ship\" skipped here (not a JSON object, over-long)."};
    static const struct family lag = {"wanledger_ship_lag_bytes", "gauge",
                                      "Bytes of the log not yet shipped (its size now minus the "
                                      "offset shipped)."};
    per_log(f, m, &read, v_read, NULL);
    per_log(f, m, &sent, v_sent, NULL);
    head(f, &rej);
    for (size_t i = 0; i < m->n_logs; i++)
        for (int by = 0; by < 2; by++) {
            fprintf(f, "%s{", rej.name);
            promhttp_label(f, "log", m->logs[i].path, false);
            promhttp_label(f, "by", by ? "ship" : "reconciler", true);
            fprintf(f, "} %llu\n",
                    (unsigned long long)(by ? atomic_load(&m->logs[i].rejected_here)
                                            : atomic_load(&m->logs[i].rejected_there)));
        }
    per_log(f, m, &lag, v_lag, NULL);
    int64_t last = atomic_load(&m->last_success_us);
    fprintf(f,
            "# HELP wanledger_ship_posts_total POSTs to /v1/transfers, by result (ok: 2xx).\n"
            "# TYPE wanledger_ship_posts_total counter\n"
            "wanledger_ship_posts_total{result=\"ok\"} %llu\n"
            "wanledger_ship_posts_total{result=\"error\"} %llu\n"
            "# HELP wanledger_ship_last_success_timestamp_seconds When the reconciler last "
            "accepted a POST (0: not yet).\n"
            "# TYPE wanledger_ship_last_success_timestamp_seconds gauge\n"
            "wanledger_ship_last_success_timestamp_seconds %lld.%06lld\n",
            (unsigned long long)atomic_load(&m->posts_ok),
            (unsigned long long)atomic_load(&m->posts_failed), (long long)(last / 1000000),
            (long long)(last % 1000000));
    if (fclose(f) != 0) {
        free(out);
        return NULL;
    }
    return out;
}

uint64_t ship_metrics_rejected_in(const char *answer)
{
    struct jv *root;
    size_t n;
    struct jv_error e;
    uint64_t r = 0;
    if (!answer)
        return 0;
    struct jv_doc *d = jv_parse(answer, strlen(answer), false, &root, &n, &e);
    if (d && !jv_u64(jv_get(root, "rejected"), &r))
        r = 0;
    jv_doc_free(d);
    return r;
}
