/* The NAS view's read side: two ordered queries over nas_windows streamed row by row (libpq's
 * single-row mode: memory holds the result, not the rows), buckets merged and quantiles taken
 * here (hm_nas.h). Merging in SQL (an aggregate over bigint[]) cost ~0.1 ms per row: 1.2 s for
 * 5,000 rows; here it is a parse and 337 additions. */
#include "hm_nas.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pgc.h"
#include "timeutil.h"

#define NAS_WHERE                                                                                  \
    " FROM nas_windows WHERE window_start >= $1::timestamptz AND window_start < $2::timestamptz"   \
    " AND ($3::text IS NULL OR server = $3) AND ($4::text IS NULL OR export = $4)"
/* columns 0-2 the instance, then 3 op, 4 window start (us), 5-9 ops bytes errors detail buckets */
static const char SQL_BY_WINDOW[] =
    "SELECT server, port, export, op, (extract(epoch FROM window_start) * 1000000)::bigint, ops,"
    " bytes, errors, detail_ops, latency_us" NAS_WHERE
    " ORDER BY server, port, export, window_start DESC";
/* columns 0-2 the instance, 3-9 the owner, 10-14 ops bytes errors detail buckets */
static const char SQL_BY_OWNER[] =
    "SELECT server, port, export, host, workflow, user_name, program, namespace, pod, container,"
    " ops, bytes, errors, detail_ops, latency_us" NAS_WHERE
    " ORDER BY server, port, export, host, workflow, user_name, program, namespace, pod,"
    " container";

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
        h->c[k] = strtoull(p, &end, 10);
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

static uint64_t u64(const PGresult *r, int col)
{
    return strtoull(PQgetvalue(r, 0, col), NULL, 10);
}

/* Adds the row's ops, bytes, errors, detail_ops (from column first) to f; its buckets to h. */
static int add_row(const PGresult *r, int first, struct hm_nas_figures *f, struct llhist *h,
                   struct llhist *row)
{
    f->ops += u64(r, first);
    f->bytes += u64(r, first + 1);
    f->errors += u64(r, first + 2);
    f->detail_ops += u64(r, first + 3);
    if (hm_nas_parse_buckets(PQgetvalue(r, 0, first + 4), row) < 0)
        return -1;
    llhist_merge(h, row);
    return 0;
}

static bool grow(void **p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return true;
    size_t n = *cap ? *cap * 2 : 16;
    while (n < need)
        n *= 2;
    void *q = realloc(*p, n * size);
    if (!q)
        return false;
    memset((char *)q + *cap * size, 0, (n - *cap) * size);
    *p = q;
    *cap = n;
    return true;
}

static bool same_instance(const struct hm_nas_instance *in, const PGresult *r)
{
    return in && in->port == atoi(PQgetvalue(r, 0, 1)) &&
           strcmp(in->server, PQgetvalue(r, 0, 0)) == 0 &&
           strcmp(in->export_path, PQgetvalue(r, 0, 2)) == 0;
}

struct pass {
    struct hm_nas_result *r;
    struct llhist acc, row; /* the current window's or owner's buckets; one row's */
    size_t cursor;          /* pass 2: the instance rows are at */
    bool oom;
};

/* Pass 1 (by instance, newest window first): instances, their windows and operations. */
static void close_window(struct pass *p)
{
    struct hm_nas_instance *in = p->r->n_inst ? &p->r->inst[p->r->n_inst - 1] : NULL;
    if (in && in->n_windows)
        in->windows[in->n_windows - 1].f.lat = lat_of(&p->acc);
    memset(&p->acc, 0, sizeof p->acc);
}

static int window_row(struct pass *p, const PGresult *r)
{
    struct hm_nas_result *res = p->r;
    struct hm_nas_instance *in = res->n_inst ? &res->inst[res->n_inst - 1] : NULL;
    int64_t ws = strtoll(PQgetvalue(r, 0, 4), NULL, 10);
    if (!same_instance(in, r)) {
        close_window(p);
        if (!grow((void **)&res->inst, &res->cap_inst, res->n_inst + 1, sizeof(*res->inst)))
            return -1;
        in = &res->inst[res->n_inst++];
        in->server = strdup(PQgetvalue(r, 0, 0));
        in->export_path = strdup(PQgetvalue(r, 0, 2));
        in->port = atoi(PQgetvalue(r, 0, 1));
        if (!in->server || !in->export_path)
            return -1;
    }
    if (!in->n_windows || in->windows[in->n_windows - 1].start_us != ws) {
        close_window(p);
        if (!grow((void **)&in->windows, &in->cap_windows, in->n_windows + 1, sizeof(*in->windows)))
            return -1;
        in->windows[in->n_windows++].start_us = ws;
    }
    struct hm_nas_window *w = &in->windows[in->n_windows - 1];
    const char *op = PQgetvalue(r, 0, 3);
    bool read = strcmp(op, "read") == 0;
    if (add_row(r, 5, &w->f, &p->acc, &p->row) < 0)
        return -1;
    /* the row's buckets are in p->row: the instance and its operation get them too */
    llhist_merge(&in->hist, &p->row);
    llhist_merge(read ? &in->read_hist : &in->write_hist, &p->row);
    for (int k = 0; k < 2; k++) {
        struct hm_nas_figures *f = k == 0 ? &in->total : read ? &in->read : &in->write;
        f->ops += u64(r, 5);
        f->bytes += u64(r, 6);
        f->errors += u64(r, 7);
        f->detail_ops += u64(r, 8);
    }
    return 0;
}

/* Pass 2 (by instance, then owner): every owner's figures. */
static void close_owner(struct pass *p)
{
    struct hm_nas_instance *in = p->r->n_inst ? &p->r->inst[p->cursor] : NULL;
    if (in && in->n_owners)
        in->owners[in->n_owners - 1].f.lat = lat_of(&p->acc);
    memset(&p->acc, 0, sizeof p->acc);
}

static bool same_owner(const struct hm_nas_owner *o, const PGresult *r)
{
    const char *k[7] = {o->host,       o->workflow, o->user,     o->program,
                        o->namespace_, o->pod,      o->container};
    for (int i = 0; i < 7; i++)
        if (strcmp(k[i], PQgetvalue(r, 0, 3 + i)) != 0)
            return false;
    return true;
}

static int owner_row(struct pass *p, const PGresult *r)
{
    struct hm_nas_result *res = p->r;
    if (!res->n_inst)
        return 0;
    struct hm_nas_instance *in = &res->inst[p->cursor];
    if (!same_instance(in, r)) {
        size_t k = p->cursor;
        while (k < res->n_inst && !same_instance(&res->inst[k], r))
            k++;
        if (k == res->n_inst)
            return 0; /* not in the first pass (the snapshot makes this impossible): skipped */
        close_owner(p);
        p->cursor = k;
        in = &res->inst[k];
    }
    if (!in->n_owners || !same_owner(&in->owners[in->n_owners - 1], r)) {
        close_owner(p);
        if (!grow((void **)&in->owners, &in->cap_owners, in->n_owners + 1, sizeof(*in->owners)))
            return -1;
        struct hm_nas_owner *o = &in->owners[in->n_owners++];
        const char **k[7] = {&o->host,       &o->workflow, &o->user,     &o->program,
                             &o->namespace_, &o->pod,      &o->container};
        for (int i = 0; i < 7; i++)
            if (!(*k[i] = strdup(PQgetvalue(r, 0, 3 + i))))
                return -1;
    }
    return add_row(r, 10, &in->owners[in->n_owners - 1].f, &p->acc, &p->row);
}

/* Runs sql in single-row mode, handing each row to fn. 0, or -1 with err. */
static int stream(PGconn *db, const char *sql, const char *const *params, struct pass *p,
                  int (*fn)(struct pass *, const PGresult *), char *err, size_t errlen)
{
    if (!PQsendQueryParams(db, sql, 4, NULL, params, NULL, NULL, 0) || !PQsetSingleRowMode(db)) {
        snprintf(err, errlen, "reading nas_windows: %s", PQerrorMessage(db));
        return -1;
    }
    int rc = 0;
    PGresult *r;
    while ((r = PQgetResult(db))) { /* every result is read, also after a failure */
        ExecStatusType st = PQresultStatus(r);
        if (st == PGRES_SINGLE_TUPLE) {
            if (rc == 0 && fn(p, r) < 0) {
                snprintf(err, errlen, "nas_windows: out of memory or a malformed latency_us");
                rc = -1;
            }
        } else if (st != PGRES_TUPLES_OK && rc == 0) {
            snprintf(err, errlen, "reading nas_windows: %s", PQresultErrorMessage(r));
            rc = -1;
        }
        PQclear(r);
    }
    return rc;
}

static void owner_free(struct hm_nas_owner *o)
{
    free((char *)o->host);
    free((char *)o->workflow);
    free((char *)o->user);
    free((char *)o->program);
    free((char *)o->namespace_);
    free((char *)o->pod);
    free((char *)o->container);
}

static int owner_by_ops(const void *a, const void *b)
{
    const struct hm_nas_owner *x = a, *y = b;
    if (x->f.ops != y->f.ops)
        return x->f.ops < y->f.ops ? 1 : -1;
    return a < b ? -1 : a > b; /* ties keep the query's order: the answer is repeatable */
}

static int inst_by_ops(const void *a, const void *b)
{
    const struct hm_nas_instance *x = a, *y = b;
    if (x->total.ops != y->total.ops)
        return x->total.ops < y->total.ops ? 1 : -1;
    return a < b ? -1 : a > b;
}

/* Owners busiest first, the top HM_NAS_MAX_OWNERS kept; instances busiest first. */
static void finish(struct hm_nas_result *r)
{
    for (size_t i = 0; i < r->n_inst; i++) {
        struct hm_nas_instance *in = &r->inst[i];
        in->total.lat = lat_of(&in->hist);
        in->read.lat = lat_of(&in->read_hist);
        in->write.lat = lat_of(&in->write_hist);
        in->n_owners_all = in->n_owners;
        if (in->n_owners > 1)
            qsort(in->owners, in->n_owners, sizeof(*in->owners), owner_by_ops);
        while (in->n_owners > HM_NAS_MAX_OWNERS)
            owner_free(&in->owners[--in->n_owners]);
    }
    if (r->n_inst > 1)
        qsort(r->inst, r->n_inst, sizeof(*r->inst), inst_by_ops);
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
    struct pass *p = calloc(1, sizeof(*p));
    int rc = -1;
    bool in_tx = false;
    if (!p) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    p->r = r;
    /* both passes read one snapshot: the owners add up to the instances' totals */
    if (pgc_exec(db, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", err, errlen) < 0)
        goto done;
    in_tx = true;
    if (stream(db, SQL_BY_WINDOW, params, p, window_row, err, errlen) < 0)
        goto done;
    close_window(p);
    if (stream(db, SQL_BY_OWNER, params, p, owner_row, err, errlen) < 0)
        goto done;
    close_owner(p);
    finish(r);
    rc = 0;
done:
    if (in_tx) {
        char e2[256];
        if (pgc_exec(db, rc == 0 ? "COMMIT" : "ROLLBACK", e2, sizeof e2) < 0 && rc == 0) {
            snprintf(err, errlen, "%s", e2);
            rc = -1;
        }
    }
    free(p);
    if (rc < 0)
        hm_nas_result_free(r);
    return rc;
}

void hm_nas_result_free(struct hm_nas_result *r)
{
    for (size_t i = 0; i < r->n_inst; i++) {
        struct hm_nas_instance *in = &r->inst[i];
        for (size_t k = 0; k < in->n_owners; k++)
            owner_free(&in->owners[k]);
        free(in->owners);
        free(in->windows);
        free((char *)in->server);
        free((char *)in->export_path);
    }
    free(r->inst);
    memset(r, 0, sizeof(*r));
}
