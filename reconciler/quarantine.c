/* Keeping and reporting a transfer batch's rejected records (see quarantine.h). */
#include "quarantine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonw.h"

/* Text arrays for unnest(): one parameter per column, each a PostgreSQL array literal. */
static void array_text(struct evbuffer *a, const char *s, size_t n, int first)
{
    evbuffer_add(a, first ? "{\"" : ",\"", 2);
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '"' || s[i] == '\\')
            evbuffer_add(a, "\\", 1);
        evbuffer_add(a, &s[i], 1);
    }
    evbuffer_add(a, "\"", 1);
}

static char *take(struct evbuffer *b)
{
    evbuffer_add(b, "}", 1);
    return jw_take(b, NULL);
}

int qr_keep(struct ingest_batch *b, long i, struct ingest_error *e, const char *raw, size_t len)
{
    struct ingest_reject *r = realloc(b->rejects, (b->n_rejects + 1) * sizeof(*r));
    if (r)
        b->rejects = r;
    char *copy = r ? malloc(len + 1) : NULL;
    if (!copy) {
        e->status = 500;
        snprintf(e->msg, sizeof(e->msg), "out of memory");
        snprintf(e->path, sizeof(e->path), "$");
        return -1;
    }
    memcpy(copy, raw, len);
    copy[len] = 0;
    r = &b->rejects[b->n_rejects++];
    r->index = i;
    snprintf(r->msg, sizeof(r->msg), "%s", e->msg);
    snprintf(r->path, sizeof(r->path), "%s", e->path);
    r->raw = copy;
    r->raw_len = len;
    memset(e, 0, sizeof(*e));
    return 0;
}

int qr_write(PGconn *db, const struct ingest_batch *b, const char *peer, char *err, size_t errlen)
{
    err[0] = 0;
    if (b->n_rejects == 0)
        return 0;
    if (!db) {
        snprintf(err, errlen, "database unreachable");
        return -1;
    }
    struct evbuffer *col[4] = {evbuffer_new(), evbuffer_new(), evbuffer_new(), evbuffer_new()};
    char *arr[4] = {0};
    int rc = -1;
    for (int k = 0; k < 4; k++)
        if (!col[k])
            goto cleanup;
    for (size_t i = 0; i < b->n_rejects; i++) {
        const struct ingest_reject *r = &b->rejects[i];
        char idx[24];
        snprintf(idx, sizeof(idx), "%ld", r->index);
        array_text(col[0], idx, strlen(idx), i == 0);
        array_text(col[1], r->msg, strlen(r->msg), i == 0);
        array_text(col[2], r->path, strlen(r->path), i == 0);
        array_text(col[3], r->raw, r->raw_len, i == 0);
    }
    for (int k = 0; k < 4; k++)
        if (!(arr[k] = take(col[k])))
            goto cleanup;
    const char *params[6] = {"transfers", peer, arr[0], arr[1], arr[2], arr[3]};
    PGresult *res = PQexecParams(
        db,
        "INSERT INTO rejected_records (endpoint, peer, record_index, error, path, raw, raw_digest)"
        " SELECT $1, $2, i::int, e, p, r, md5(r || p)"
        " FROM unnest($3::text[], $4::text[], $5::text[], $6::text[]) AS u(i, e, p, r)"
        " ON CONFLICT (endpoint, raw_digest) DO NOTHING",
        6, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(res) == PGRES_COMMAND_OK)
        rc = 0;
    else
        snprintf(err, errlen, "keeping %zu rejected records: %s", b->n_rejects,
                 PQresultErrorMessage(res));
    PQclear(res);
cleanup:
    if (rc < 0 && !err[0])
        snprintf(err, errlen, "out of memory");
    for (int k = 0; k < 4; k++) {
        if (col[k])
            evbuffer_free(col[k]);
        free(arr[k]);
    }
    return rc;
}

void qr_reply(struct evbuffer *out, const struct ingest_batch *b, const struct store_result *res)
{
    size_t listed = b->n_rejects < QR_MAX_LISTED ? b->n_rejects : QR_MAX_LISTED;
    evbuffer_add_printf(out,
                        "{\"received\":%zu,\"stored\":%zu,\"duplicate\":%zu,\"rejected\":%zu,"
                        "\"errors_listed\":%zu,\"errors\":[",
                        b->n_records, res->stored, res->received - res->stored, b->n_rejects,
                        listed);
    for (size_t i = 0; i < listed; i++) {
        const struct ingest_reject *r = &b->rejects[i];
        evbuffer_add_printf(out, "%s{\"index\":%ld,\"error\":", i ? "," : "", r->index);
        jw_str(out, r->msg);
        evbuffer_add(out, ",\"path\":", 8);
        jw_str(out, r->path);
        evbuffer_add(out, "}", 1);
    }
    evbuffer_add(out, "]}\n", 3);
}
