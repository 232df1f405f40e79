/* Raw flows from ClickHouse for the heatmap's PostgreSQL queries (see hm_chflows.h). */
#include "hm_chflows.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chhttp.h"
#include "pgc.h"

/* An address as PostgreSQL's host() writes it: hex digits, '.', ':' (IPv6). Anything else is
 * left out of the list rather than quoted into ClickHouse SQL. */
static int plain_addr(const char *s)
{
    size_t n = strlen(s);
    return n > 0 && n < 64 && strspn(s, "0123456789abcdefABCDEF.:") == n;
}

/* "'a', 'b', …" of the addresses in r's first column into a malloc'd string; *count = listed. */
static char *addr_list(PGresult *r, size_t *count)
{
    int nt = PQntuples(r);
    char *out = malloc((size_t)nt * 68 + 1);
    if (!out)
        return NULL;
    size_t at = 0;
    *count = 0;
    for (int i = 0; i < nt; i++) {
        const char *a = PQgetvalue(r, i, 0);
        if (PQgetisnull(r, i, 0) || !plain_addr(a))
            continue;
        at += (size_t)sprintf(out + at, "%s'%s'", *count ? ", " : "", a);
        (*count)++;
    }
    out[at] = 0;
    return out;
}

/* ClickHouse's JSONEachRow answer (one object per line) as one JSON array, in place. */
static char *as_array(char *body, size_t len)
{
    char *out = malloc(len + 3);
    if (!out)
        return NULL;
    size_t at = 0;
    out[at++] = '[';
    for (size_t i = 0; i < len; i++) {
        if (body[i] == '\n') {
            if (i + 1 < len)
                out[at++] = ',';
        } else {
            out[at++] = body[i];
        }
    }
    out[at++] = ']';
    out[at] = 0;
    return out;
}

char *hm_chflows_json(PGconn *db, const struct cfg_clickhouse *ch, const char *addr_sql, int n,
                      const char *const *params, int64_t from_us, int64_t to_us, char *err,
                      size_t errlen)
{
    PGresult *r =
        pgc_query(db, "listing the sampled flows' addresses", addr_sql, n, params, err, errlen);
    if (!r)
        return NULL;
    size_t count = 0;
    char *list = addr_list(r, &count);
    PQclear(r);
    if (!list) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (count == 0) {
        free(list);
        return strdup("[]");
    }
    /* Unix seconds of the range, rounded outward: windows start on whole seconds */
    int64_t from_s = from_us / 1000000, to_s = (to_us + 999999) / 1000000;
    size_t cap = strlen(list) * 2 + 1024;
    char *sql = malloc(cap);
    if (!sql) {
        free(list);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    snprintf(sql, cap,
             "SELECT concat(toString(window_start, 'UTC'), '+00') AS ws, source, proto,"
             " local_addr, local_port, remote_addr, remote_port, sum(tx_bytes) AS tx,"
             " sum(rx_bytes) AS rx FROM %s.flow_records FINAL"
             " WHERE window_start >= toDateTime(%" PRId64 ") AND window_start < toDateTime(%" PRId64
             ") AND (local_addr IN (%s) OR remote_addr IN (%s))"
             " GROUP BY window_start, source, proto, local_addr, local_port, remote_addr,"
             " remote_port FORMAT JSONEachRow",
             ch->database, from_s, to_s, list, list);
    free(list);
    struct httpc_response resp;
    int rc = chhttp_exec(ch, sql, NULL, 0, NULL, &resp, err, errlen);
    free(sql);
    if (rc < 0)
        return NULL;
    char *json = as_array(resp.body ? resp.body : "", resp.body ? resp.body_len : 0);
    httpc_response_free(&resp);
    if (!json)
        snprintf(err, errlen, "out of memory");
    return json;
}
