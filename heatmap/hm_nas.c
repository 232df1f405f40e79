/* The NAS view's read side: three grouped queries over nas_windows, quantiles from the merged
 * buckets (hm_nas.h). */
#include "hm_nas.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pgc.h"
#include "timeutil.h"

#define NAS_WHERE                                                                                  \
    " FROM nas_windows WHERE window_start >= $1::timestamptz AND window_start < $2::timestamptz"   \
    " AND ($3::text IS NULL OR server = $3) AND ($4::text IS NULL OR export = $4)"
#define NAS_SUMS                                                                                   \
    " sum(ops)::bigint, sum(bytes)::bigint, sum(errors)::bigint, sum(detail_ops)::bigint,"         \
    " coalesce(wl_llhist_sum(latency_us), '{}')"

static const char SQL_WINDOWS[] =
    "SELECT server, port, export, (extract(epoch FROM window_start) * 1000000)::bigint," NAS_SUMS
        NAS_WHERE " GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4 DESC";
static const char SQL_OPS[] = "SELECT server, port, export, op," NAS_SUMS NAS_WHERE
                              " GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4";
static const char SQL_OWNERS[] =
    "SELECT server, port, export, host, workflow, user_name, program, namespace, pod, "
    "container," NAS_SUMS NAS_WHERE " GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10"
    " ORDER BY 1, 2, 3, 11 DESC, 4, 5, 6, 7, 8, 9, 10";

int hm_nas_parse_buckets(const char *text, struct llhist *h)
{
    memset(h, 0, sizeof(*h));
    const char *p = text;
    if (*p++ != '{')
        return -1;
    if (*p == '}')
        return p[1] ? -1 : 0;
    for (size_t k = 0;; k++) {
        if (k >= LLHIST_SLOTS || *p < '0' || *p > '9')
            return -1;
        char *end;
        unsigned long long v = strtoull(p, &end, 10);
        h->c[k] = v;
        p = end;
        if (*p == '}')
            return p[1] ? -1 : 0;
        if (*p++ != ',')
            return -1;
    }
}

static struct hm_nas_lat lat_of(const struct llhist *h)
{
    struct hm_nas_lat l = {.count = llhist_total(h)};
    l.p50 = llhist_quantile(h, 0.5, NULL);
    l.p99 = llhist_quantile(h, 0.99, NULL);
    l.p999 = llhist_quantile(h, 0.999, NULL);
    l.max = llhist_quantile(h, 1.0, NULL);
    return l;
}

static uint64_t u64(const PGresult *r, int row, int col)
{
    return strtoull(PQgetvalue(r, row, col), NULL, 10);
}

/* Columns from `first`: ops, bytes, errors, detail_ops, buckets; h gets the buckets. */
static int figures(const PGresult *r, int row, int first, struct hm_nas_figures *f,
                   struct llhist *h)
{
    f->ops = u64(r, row, first);
    f->bytes = u64(r, row, first + 1);
    f->errors = u64(r, row, first + 2);
    f->detail_ops = u64(r, row, first + 3);
    if (hm_nas_parse_buckets(PQgetvalue(r, row, first + 4), h) < 0)
        return -1;
    f->lat = lat_of(h);
    return 0;
}

static void add_figures(struct hm_nas_figures *dst, const struct hm_nas_figures *src)
{
    dst->ops += src->ops;
    dst->bytes += src->bytes;
    dst->errors += src->errors;
    dst->detail_ops += src->detail_ops;
}

/* The instance of row `row` (columns server, port, export): rows come in the instances' order,
 * so a cursor finds it; NULL when the row's instance is not there (a row written between the
 * queries). */
static struct hm_nas_instance *instance_of(struct hm_nas_result *r, const PGresult *res, int row,
                                           size_t *cursor)
{
    const char *server = PQgetvalue(res, row, 0), *export_path = PQgetvalue(res, row, 2);
    int port = atoi(PQgetvalue(res, row, 1));
    for (size_t n = 0; n < r->n_inst; n++) {
        struct hm_nas_instance *in = &r->inst[(*cursor + n) % r->n_inst];
        if (in->port == port && strcmp(in->server, server) == 0 &&
            strcmp(in->export_path, export_path) == 0) {
            *cursor = (*cursor + n) % r->n_inst;
            return in;
        }
    }
    return NULL;
}

static int load_windows(struct hm_nas_result *r, const PGresult *res, struct llhist *h)
{
    int n = PQntuples(res);
    r->inst = calloc((size_t)n + 1, sizeof(*r->inst));
    if (!r->inst)
        return -1;
    for (int i = 0; i < n; i++) {
        struct hm_nas_instance *in = r->n_inst ? &r->inst[r->n_inst - 1] : NULL;
        const char *server = PQgetvalue(res, i, 0), *export_path = PQgetvalue(res, i, 2);
        int port = atoi(PQgetvalue(res, i, 1));
        if (!in || in->port != port || strcmp(in->server, server) != 0 ||
            strcmp(in->export_path, export_path) != 0) {
            in = &r->inst[r->n_inst++];
            in->server = server;
            in->port = port;
            in->export_path = export_path;
            in->windows = calloc((size_t)(n - i), sizeof(*in->windows));
            if (!in->windows)
                return -1;
        }
        struct hm_nas_window *w = &in->windows[in->n_windows++];
        w->start_us = strtoll(PQgetvalue(res, i, 3), NULL, 10);
        if (figures(res, i, 4, &w->f, h) < 0)
            return -1;
        add_figures(&in->total, &w->f);
        llhist_merge(&in->hist, h);
    }
    for (size_t k = 0; k < r->n_inst; k++)
        r->inst[k].total.lat = lat_of(&r->inst[k].hist);
    return 0;
}

static int load_ops(struct hm_nas_result *r, const PGresult *res, struct llhist *h)
{
    size_t cur = 0;
    for (int i = 0; i < PQntuples(res); i++) {
        struct hm_nas_instance *in = instance_of(r, res, i, &cur);
        if (!in)
            continue;
        const char *op = PQgetvalue(res, i, 3);
        struct hm_nas_figures *f = strcmp(op, "read") == 0    ? &in->read
                                   : strcmp(op, "write") == 0 ? &in->write
                                                              : NULL;
        if (f && figures(res, i, 4, f, h) < 0)
            return -1;
    }
    return 0;
}

static int load_owners(struct hm_nas_result *r, const PGresult *res, struct llhist *h)
{
    size_t cur = 0;
    for (int i = 0; i < PQntuples(res); i++) {
        struct hm_nas_instance *in = instance_of(r, res, i, &cur);
        if (!in)
            continue;
        in->n_owners_all++;
        if (in->n_owners >= HM_NAS_MAX_OWNERS)
            continue;
        if (!in->owners && !(in->owners = calloc(HM_NAS_MAX_OWNERS, sizeof(*in->owners))))
            return -1;
        struct hm_nas_owner *o = &in->owners[in->n_owners++];
        o->host = PQgetvalue(res, i, 3);
        o->workflow = PQgetvalue(res, i, 4);
        o->user = PQgetvalue(res, i, 5);
        o->program = PQgetvalue(res, i, 6);
        o->namespace_ = PQgetvalue(res, i, 7);
        o->pod = PQgetvalue(res, i, 8);
        o->container = PQgetvalue(res, i, 9);
        if (figures(res, i, 10, &o->f, h) < 0)
            return -1;
    }
    return 0;
}

static int by_ops_desc(const void *a, const void *b)
{
    const struct hm_nas_instance *x = a, *y = b;
    return x->total.ops < y->total.ops ? 1 : x->total.ops > y->total.ops ? -1 : 0;
}

int hm_nas_run(PGconn *db, const struct cfg *cfg, const struct hm_nas_query *q,
               struct hm_nas_result *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof(*r));
    r->q = *q;
    r->window_seconds = cfg->window_seconds;
    int64_t wus = (int64_t)cfg->window_seconds * TM_USEC_PER_SEC;
    int64_t first =
        q->from_us % wus == 0 ? q->from_us : tm_window_start(q->from_us, cfg->window_seconds) + wus;
    r->span_seconds =
        q->to_us > first ? ((q->to_us - first + wus - 1) / wus) * cfg->window_seconds : 0;
    char from[TM_RFC3339_LEN], to[TM_RFC3339_LEN];
    const char *params[4] = {tm_format_rfc3339(q->from_us, from), tm_format_rfc3339(q->to_us, to),
                             q->server, q->export_path};
    static const char *const sql[3] = {SQL_WINDOWS, SQL_OPS, SQL_OWNERS};
    for (int k = 0; k < 3; k++)
        if (!(r->res[k] = pgc_query(db, "reading nas_windows", sql[k], 4, params, err, errlen)))
            goto fail;
    struct llhist *h = malloc(sizeof(*h));
    int rc = !h || load_windows(r, r->res[0], h) < 0 || load_ops(r, r->res[1], h) < 0 ||
                     load_owners(r, r->res[2], h) < 0
                 ? -1
                 : 0;
    free(h);
    if (rc < 0) {
        snprintf(err, errlen, "nas_windows: out of memory or a malformed latency_us array");
        goto fail;
    }
    if (r->n_inst > 1) { /* the owners' cursors are done: the order may change now */
        qsort(r->inst, r->n_inst, sizeof(*r->inst), by_ops_desc);
    }
    return 0;
fail:
    hm_nas_result_free(r);
    return -1;
}

void hm_nas_result_free(struct hm_nas_result *r)
{
    for (size_t i = 0; i < r->n_inst; i++) {
        free(r->inst[i].windows);
        free(r->inst[i].owners);
    }
    free(r->inst);
    for (int k = 0; k < 3; k++)
        PQclear(r->res[k]);
    memset(r, 0, sizeof(*r));
}
