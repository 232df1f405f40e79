/* Who used a site pair over a time range (see top.h). */
#include "top.h"

#include <stdlib.h>
#include <string.h>

#include "jsonw.h"
#include "timeutil.h"

/* The totals and the rows are those of the complete windows (docs/design.md "Sums over many
 * windows"): an incomplete window's payload and gap are not of the whole window, so its owners'
 * shares of them would be invented; it is counted apart. */
static const char SQL_TOTALS[] =
    "SELECT count(*), coalesce(sum(observed_payload_bytes) FILTER (WHERE wl_known(status)), 0),"
    " coalesce(sum(attributed_bytes) FILTER (WHERE wl_known(status)), 0),"
    " coalesce(sum(greatest(unattributed_bytes, 0)) FILTER (WHERE wl_known(status)), 0),"
    " count(*) FILTER (WHERE NOT wl_known(status))"
    " FROM heatmap_cells WHERE src_site = $1 AND dst_site = $2"
    " AND window_start >= $3 AND window_start < $4";

static const char SQL_ROWS[] =
    "SELECT source, workflow, user_name, program, sum(bytes)::text AS b, namespace, pod,"
    " container_name FROM attribution_rollup a WHERE src_site = $1 AND dst_site = $2"
    " AND window_start >= $3 AND window_start < $4 AND NOT EXISTS (SELECT 1 FROM heatmap_cells c"
    " WHERE c.window_start = a.window_start AND c.src_site = $1 AND c.dst_site = $2"
    " AND NOT wl_known(c.status))"
    " GROUP BY source, workflow, user_name, program, namespace, pod, container_name"
    " ORDER BY sum(bytes) DESC, source, workflow, user_name, program, namespace, pod,"
    " container_name";

int top_query(PGconn *db, const char *src, const char *dst, int64_t from_us, int64_t to_us,
              int window_seconds, size_t limit, struct top_result *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof(*r));
    char from[TM_RFC3339_LEN], to[TM_RFC3339_LEN];
    const char *params[4] = {src, dst, tm_format_rfc3339(from_us, from),
                             tm_format_rfc3339(to_us, to)};
    r->src = strdup(src);
    r->dst = strdup(dst);
    r->from_us = from_us;
    r->to_us = to_us;
    r->window_seconds = window_seconds;
    PGresult *q = PQexecParams(db, SQL_TOTALS, 4, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(q) != PGRES_TUPLES_OK || PQntuples(q) != 1) {
        snprintf(err, errlen, "heatmap_cells: %s", PQresultErrorMessage(q));
        PQclear(q);
        return -1;
    }
    r->windows = strtoull(PQgetvalue(q, 0, 0), NULL, 10);
    r->observed_payload_bytes = strtoull(PQgetvalue(q, 0, 1), NULL, 10);
    r->attributed_bytes = strtoull(PQgetvalue(q, 0, 2), NULL, 10);
    r->unattributed_bytes = strtoull(PQgetvalue(q, 0, 3), NULL, 10);
    r->incomplete_windows = strtoull(PQgetvalue(q, 0, 4), NULL, 10);
    PQclear(q);

    q = PQexecParams(db, SQL_ROWS, 4, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(q) != PGRES_TUPLES_OK) {
        snprintf(err, errlen, "attribution_rollup: %s", PQresultErrorMessage(q));
        PQclear(q);
        return -1;
    }
    size_t n = (size_t)PQntuples(q);
    r->rows = calloc(n < limit ? n + 1 : limit + 1, sizeof(*r->rows));
    if (!r->rows) {
        snprintf(err, errlen, "out of memory");
        PQclear(q);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t b = strtoull(PQgetvalue(q, (int)i, 4), NULL, 10);
        if (i >= limit) {
            r->other_bytes += b;
            continue;
        }
        struct top_row *row = &r->rows[r->n_rows++];
        row->source = strdup(PQgetvalue(q, (int)i, 0));
        row->workflow = strdup(PQgetvalue(q, (int)i, 1));
        row->user = strdup(PQgetvalue(q, (int)i, 2));
        row->program = strdup(PQgetvalue(q, (int)i, 3));
        row->ns = strdup(PQgetvalue(q, (int)i, 5));
        row->pod = strdup(PQgetvalue(q, (int)i, 6));
        row->container = strdup(PQgetvalue(q, (int)i, 7));
        row->bytes = b;
    }
    PQclear(q);
    return 0;
}

void top_result_free(struct top_result *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n_rows; i++) {
        free(r->rows[i].source);
        free(r->rows[i].workflow);
        free(r->rows[i].user);
        free(r->rows[i].program);
        free(r->rows[i].ns);
        free(r->rows[i].pod);
        free(r->rows[i].container);
    }
    free(r->rows);
    free(r->src);
    free(r->dst);
    memset(r, 0, sizeof(*r));
}

double top_share(const struct top_result *r, uint64_t bytes)
{
    uint64_t base = r->observed_payload_bytes ? r->observed_payload_bytes : r->attributed_bytes;
    return base ? (double)bytes / (double)base : 0;
}

static const char *or_dash(const char *s)
{
    return s && *s ? s : "-";
}

void top_print(FILE *f, const struct top_result *r)
{
    char from[TM_RFC3339_LEN], to[TM_RFC3339_LEN];
    fprintf(f, "%s -> %s, window starts %s .. %s: %llu windows of %d s\n", r->src, r->dst,
            tm_format_rfc3339(r->from_us, from), tm_format_rfc3339(r->to_us, to),
            (unsigned long long)r->windows, r->window_seconds);
    if (r->incomplete_windows)
        fprintf(f,
                "%llu of them incomplete (a poll gap or an agent's lost span): left out of "
                "every figure below\n",
                (unsigned long long)r->incomplete_windows);
    fprintf(f, "observed payload %llu bytes, attributed %llu bytes, unattributed %llu bytes\n",
            (unsigned long long)r->observed_payload_bytes, (unsigned long long)r->attributed_bytes,
            (unsigned long long)r->unattributed_bytes);
    fprintf(f, "shares are of the %s\n\n",
            r->observed_payload_bytes ? "observed payload" : "attributed bytes (no counters)");
    fprintf(f, "%-8s %-24s %-16s %-20s %-40s %20s %7s\n", "SOURCE", "WORKFLOW", "USER", "PROGRAM",
            "POD (NAMESPACE/POD/CONTAINER)", "BYTES", "SHARE");
    for (size_t i = 0; i < r->n_rows; i++) {
        const struct top_row *w = &r->rows[i];
        char pod[3 * 1100] = "-";
        if (w->pod && *w->pod)
            snprintf(pod, sizeof pod, "%s/%s/%s", or_dash(w->ns), w->pod, or_dash(w->container));
        fprintf(f, "%-8s %-24s %-16s %-20s %-40s %20llu %6.1f%%\n", w->source, or_dash(w->workflow),
                or_dash(w->user), or_dash(w->program), pod, (unsigned long long)w->bytes,
                100 * top_share(r, w->bytes));
    }
    if (r->other_bytes)
        fprintf(f, "%-112s %20llu %6.1f%%\n", "(other attributed rows)",
                (unsigned long long)r->other_bytes, 100 * top_share(r, r->other_bytes));
    if (r->observed_payload_bytes)
        fprintf(f, "%-112s %20llu %6.1f%%\n", "(unattributed)",
                (unsigned long long)r->unattributed_bytes,
                100 * top_share(r, r->unattributed_bytes));
}

void top_json(struct evbuffer *out, const struct top_result *r)
{
    char from[TM_RFC3339_LEN], to[TM_RFC3339_LEN];
    struct jw w;
    jw_init(&w, out);
    jw_begin_object(&w);
    jw_kv_str(&w, "src", r->src);
    jw_kv_str(&w, "dst", r->dst);
    jw_kv_str(&w, "from", tm_format_rfc3339(r->from_us, from));
    jw_kv_str(&w, "to", tm_format_rfc3339(r->to_us, to));
    jw_kv_i64(&w, "window_seconds", r->window_seconds);
    jw_kv_u64(&w, "windows", (uint64_t)r->windows);
    jw_kv_u64(&w, "incomplete_windows", (uint64_t)r->incomplete_windows);
    jw_kv_u64(&w, "observed_payload_bytes", (uint64_t)r->observed_payload_bytes);
    jw_kv_u64(&w, "attributed_bytes", (uint64_t)r->attributed_bytes);
    jw_kv_u64(&w, "unattributed_bytes", (uint64_t)r->unattributed_bytes);
    jw_kv_fixed(&w, "unattributed_share",
                r->observed_payload_bytes ? top_share(r, r->unattributed_bytes) : 0.0, 6);
    jw_kv_u64(&w, "other_bytes", (uint64_t)r->other_bytes);
    jw_key(&w, "rows");
    jw_begin_array(&w);
    for (size_t i = 0; i < r->n_rows; i++) {
        const struct top_row *row = &r->rows[i];
        jw_begin_object(&w);
        jw_kv_str(&w, "source", row->source);
        jw_kv_str(&w, "workflow", row->workflow);
        jw_kv_str(&w, "user", row->user);
        jw_kv_str(&w, "program", row->program);
        if (row->pod && *row->pod) { /* the Kubernetes identity: only for owners in pods */
            jw_kv_str(&w, "namespace", row->ns);
            jw_kv_str(&w, "pod", row->pod);
            jw_kv_str(&w, "container", row->container);
        }
        jw_kv_u64(&w, "bytes", (uint64_t)row->bytes);
        jw_kv_fixed(&w, "share", top_share(r, row->bytes), 6);
        jw_end(&w);
    }
    jw_end(&w);
    jw_end(&w);
    evbuffer_add(out, "\n", 1);
}
