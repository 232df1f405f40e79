/* NFS flows' NAS detail: validation into rows, and their sum into nas_windows (nasin.h). */
#include "nasin.h"

#include <arpa/inet.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "jsonw.h"
#include "llhist.h"
#include "pgc.h"

struct nas_batch {
    struct evbuffer *rows; /* a JSON array of row objects, for jsonb_to_recordset */
    struct jw w;
    size_t n;
};

static int nbad(struct ingest_error *e, long idx, const char *member, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int nbad(struct ingest_error *e, long idx, const char *member, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
    va_end(ap);
    snprintf(e->path, sizeof(e->path), "$.flows[%ld].%s", idx, member);
    e->status = 422;
    return -1;
}

static bool small_uint(const struct jv *v, uint64_t *out)
{
    if (!v || v->type != JV_NUMBER || !v->is_int || (v->neg && v->u) || v->overflow ||
        v->u > INT64_MAX)
        return false;
    *out = v->u;
    return true;
}

/* "latency_us" into h (left empty when absent). */
static int parse_latency(const struct jv *f, long idx, struct llhist *h, struct ingest_error *e)
{
    const struct jv *lat = jv_get(f, "latency_us");
    if (!lat || lat->type == JV_NULL)
        return 0;
    if (lat->type != JV_OBJECT)
        return nbad(e, idx, "latency_us", "expected an object, got %s", jv_type_name(lat));
    const struct jv *bk = jv_get(lat, "buckets");
    if (!bk || bk->type != JV_ARRAY)
        return nbad(e, idx, "latency_us.buckets", "expected an array of [lower_us, count], got %s",
                    jv_type_name(bk));
    char member[64];
    long k = 0;
    long last = -1;
    uint64_t total = 0;
    for (const struct jv *b = bk->child; b; b = b->next, k++) {
        snprintf(member, sizeof member, "latency_us.buckets[%ld]", k);
        uint64_t lower, count;
        if (b->type != JV_ARRAY || b->n != 2 || !small_uint(b->child, &lower) ||
            !small_uint(b->child->next, &count))
            return nbad(e, idx, member, "expected [lower_us, count], two non-negative integers");
        size_t i = llhist_index(lower);
        if (llhist_lower(i) != lower)
            return nbad(e, idx, member,
                        "%" PRIu64 " is not a bucket's lower bound (common/llhist_layout.h)",
                        lower);
        if ((long)i <= last)
            return nbad(e, idx, member, "buckets must be in increasing order, each once");
        last = (long)i;
        if (__builtin_add_overflow(total, count, &total) || total > INT64_MAX)
            return nbad(e, idx, member, "the counts' sum does not fit in 63 bits");
        h->c[i] = count;
    }
    const struct jv *cnt = jv_get(lat, "count");
    uint64_t said;
    if (cnt && cnt->type != JV_NULL) {
        if (!small_uint(cnt, &said))
            return nbad(e, idx, "latency_us.count", "expected a non-negative integer");
        if (said != total)
            return nbad(e, idx, "latency_us.count",
                        "%" PRIu64 " differs from the buckets' sum %" PRIu64, said, total);
    }
    return 0;
}

static void kv_name(struct jw *w, const char *key, const char *v)
{
    jw_kv_str(w, key, v ? v : "");
}

int nasin_flow(struct nas_batch **nbp, const struct jv *f, long idx,
               const struct nasin_flow_args *a, struct ingest_error *e)
{
    uint64_t errors = 0;
    bool has_errors = false;
    const struct jv *ev = jv_get(f, "errors");
    if (ev && ev->type != JV_NULL) {
        if (!small_uint(ev, &errors))
            return nbad(e, idx, "errors", "expected a non-negative integer, got %s",
                        jv_type_name(ev));
        if (errors > a->ops)
            return nbad(e, idx, "errors", "%" PRIu64 " errors in %" PRIu64 " ops", errors, a->ops);
        has_errors = true;
    }
    struct llhist *h = calloc(1, sizeof(*h));
    if (!h)
        goto oom;
    if (parse_latency(f, idx, h, e) < 0) {
        free(h);
        return -1;
    }
    /* the server's address in one text form, whatever the agent wrote ("::ffff:…", zeros) */
    unsigned char bin[16];
    char server[INET6_ADDRSTRLEN];
    int fam = strchr(a->server, ':') ? AF_INET6 : AF_INET;
    if (inet_pton(fam, a->server, bin) != 1 || !inet_ntop(fam, bin, server, sizeof server))
        snprintf(server, sizeof server, "%s", a->server); /* ingest.c checked it parses */
    struct nas_batch *nb = *nbp;
    if (!nb) {
        nb = calloc(1, sizeof(*nb));
        if (!nb || !(nb->rows = evbuffer_new())) {
            free(nb);
            free(h);
            goto oom;
        }
        jw_init(&nb->w, nb->rows);
        jw_begin_array(&nb->w);
        *nbp = nb;
    }
    struct jw *w = &nb->w;
    jw_begin_object(w);
    jw_kv_str(w, "ws", a->ws_text);
    jw_kv_str(w, "server", server);
    jw_kv_i64(w, "port", a->port);
    kv_name(w, "export", a->export_path);
    kv_name(w, "op", a->op);
    kv_name(w, "host", a->host);
    kv_name(w, "workflow", a->workflow);
    kv_name(w, "user_name", a->user);
    kv_name(w, "program", a->program);
    kv_name(w, "namespace", a->ns); /* the owner's, checked where it is read (ingest_owner.c) */
    kv_name(w, "pod", a->pod);
    kv_name(w, "container", a->container_name);
    jw_kv_u64(w, "ops", a->ops);
    jw_kv_u64(w, "bytes", a->bytes);
    jw_kv_u64(w, "errors", errors);
    jw_kv_u64(w, "detail_ops", has_errors ? a->ops : 0);
    jw_key(w, "lat");
    jw_begin_array(w);
    size_t top = LLHIST_SLOTS;
    while (top && !h->c[top - 1])
        top--;
    for (size_t i = 0; i < top; i++)
        jw_u64(w, h->c[i]);
    jw_end(w);
    jw_end(w);
    free(h);
    nb->n++;
    return 0;
oom:
    e->status = 500;
    snprintf(e->msg, sizeof(e->msg), "out of memory");
    snprintf(e->path, sizeof(e->path), "$");
    return -1;
}

size_t nasin_rows(const struct nas_batch *nb)
{
    return nb ? nb->n : 0;
}

void nasin_free(struct nas_batch *nb)
{
    if (!nb)
        return;
    if (nb->rows)
        evbuffer_free(nb->rows);
    free(nb);
}

/* One statement: the batch's rows summed per key (one report may name a key twice), in key
 * order (two workers adding to the same rows lock them in one order: no deadlock), added to
 * the stored rows. */
static const char SQL_NAS[] =
    "INSERT INTO nas_windows AS n (window_start, window_seconds, server, port, export, op, host,"
    " workflow, user_name, program, namespace, pod, container, ops, bytes, errors, detail_ops,"
    " latency_us)"
    " SELECT r.ws, $2::int, r.server, r.port, r.export, r.op, r.host, r.workflow, r.user_name,"
    "  r.program, r.namespace, r.pod, r.container, sum(r.ops), sum(r.bytes), sum(r.errors),"
    "  sum(r.detail_ops), coalesce(wl_llhist_sum(r.lat), '{}')"
    " FROM jsonb_to_recordset($1::jsonb) AS r(ws timestamptz, server text, port int, export text,"
    "  op text, host text, workflow text, user_name text, program text, namespace text,"
    "  pod text, container text, ops bigint, bytes bigint, errors bigint, detail_ops bigint,"
    "  lat bigint[])"
    " GROUP BY 1, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13 ORDER BY 1, 3, 4, 5, 6, 7, 8, 9, 10, 11,"
    "  12, 13"
    " ON CONFLICT (window_start, server, port, export, op, host, workflow, user_name, program,"
    "  namespace, pod, container) DO UPDATE SET ops = n.ops + EXCLUDED.ops,"
    "  bytes = n.bytes + EXCLUDED.bytes, errors = n.errors + EXCLUDED.errors,"
    "  detail_ops = n.detail_ops + EXCLUDED.detail_ops,"
    "  latency_us = wl_llhist_add(n.latency_us, EXCLUDED.latency_us)";

int nasin_store(PGconn *db, const struct nas_batch *nb, int window_seconds, char *err,
                size_t errlen)
{
    if (!nb || !nb->n)
        return 0;
    /* the open array's text, closed here: nb stays as it is (store_write may try twice) */
    size_t len = evbuffer_get_length(nb->rows);
    char *text = malloc(len + 2);
    if (!text) {
        snprintf(err, errlen, "nas_windows: out of memory");
        return -1;
    }
    evbuffer_copyout(nb->rows, text, len);
    text[len] = ']';
    text[len + 1] = 0;
    char wsec[16];
    snprintf(wsec, sizeof wsec, "%d", window_seconds);
    const char *params[2] = {text, wsec};
    PGresult *r = PQexecParams(db, SQL_NAS, 2, NULL, params, NULL, NULL, 0);
    free(text);
    int rc = 0;
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
        snprintf(err, errlen, "nas_windows: %s", PQresultErrorMessage(r));
        rc = -1;
    }
    PQclear(r);
    return rc;
}
