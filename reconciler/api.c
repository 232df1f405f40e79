/* GET /api/v1/cells and /api/v1/top (see api.h). */
#include "api.h"

#include <sys/queue.h>

#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonw.h"
#include "timeutil.h"
#include "top.h"

#define TOP_ROWS 50

int api_parse_time(const char *s, int64_t now_us, int64_t *us)
{
    int64_t d;
    if (tm_parse_rfc3339(s, us) == 0)
        return 0;
    if (strpbrk(s, "smhdw") && tm_parse_duration(s, &d) == 0)
        return __builtin_sub_overflow(now_us, d, us) ? -1 : 0;
    return tm_parse_epoch(s, us);
}

int api_range(const char *from_s, const char *to_s, int64_t now_us, int64_t default_to_us,
              int64_t *from, int64_t *to, const char **msg, const char **path)
{
    *to = default_to_us;
    *path = "to";
    if (to_s && api_parse_time(to_s, now_us, to) < 0) {
        *msg = "expected an RFC 3339 time, epoch seconds or a duration ago";
        return -1;
    }
    /* parsed times lie in years 0000..9999 and durations below 9e18 us, but every step is
     * checked anyway: a wrapped difference would bypass the span limit below */
    if (__builtin_sub_overflow(*to, (int64_t)API_DEFAULT_SPAN_S * TM_USEC_PER_SEC, from)) {
        *msg = "time out of range";
        return -1;
    }
    *path = "from";
    if (from_s && api_parse_time(from_s, now_us, from) < 0) {
        *msg = "expected an RFC 3339 time, epoch seconds or a duration ago";
        return -1;
    }
    if (*from > *to) {
        *msg = "from is after to";
        return -1;
    }
    int64_t span;
    if (__builtin_sub_overflow(*to, *from, &span) ||
        span > (int64_t)API_MAX_SPAN_S * TM_USEC_PER_SEC) {
        *msg = "the range is longer than 7 days";
        return -1;
    }
    return 0;
}

/* from/to of a query with their defaults ([to - 1 h, now)) and bounds. */
static int range_of(const struct evkeyvalq *q, const struct cfg *cfg, int64_t *from, int64_t *to,
                    struct evbuffer *out)
{
    (void)cfg;
    int64_t now = tm_now_us();
    const char *msg, *path;
    if (api_range(evhttp_find_header(q, "from"), evhttp_find_header(q, "to"), now, now, from, to,
                  &msg, &path) < 0) {
        jw_error(out, msg, path);
        return 400;
    }
    return 0;
}

static const char SQL_CELLS[] =
    "SELECT to_char(window_start AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),"
    " window_seconds, src_site, dst_site, observed_bytes,"
    " observed_payload_bytes, attributed_bytes, socket_bytes, nfs_bytes, service_bytes,"
    " unattributed_bytes, coverage, status, valid_fraction, capacity_bps"
    " FROM heatmap_cells WHERE window_start >= $1 AND window_start < $2"
    " AND ($3::text IS NULL OR src_site = $3) AND ($4::text IS NULL OR dst_site = $4)"
    " ORDER BY window_start, src_site, dst_site LIMIT 200000";

static const char *const CELL_FIELDS[] = {
    "window_start",   "window_seconds",         "src_site",           "dst_site",
    "observed_bytes", "observed_payload_bytes", "attributed_bytes",   "socket_bytes",
    "nfs_bytes",      "service_bytes",          "unattributed_bytes", "coverage",
    "status",         "valid_fraction",         "capacity_bps"};

int api_query(const char *query, struct evkeyvalq *q, struct evbuffer *out)
{
    TAILQ_INIT(q);
    if (query && evhttp_parse_query_str(query, q) < 0) {
        jw_error(out, "malformed query string", "?");
        return 400;
    }
    return 0;
}

int api_site_pair(const struct evkeyvalq *q, const struct cfg *cfg, const char **src,
                  const char **dst, struct evbuffer *out)
{
    *src = evhttp_find_header(q, "src");
    *dst = evhttp_find_header(q, "dst");
    if (!*src || cfg_site_index(cfg, *src) < 0) {
        jw_error(out, "expected a configured site name", "src");
        return 400;
    }
    if (!*dst || cfg_site_index(cfg, *dst) < 0) {
        jw_error(out, "expected a configured site name", "dst");
        return 400;
    }
    return 0;
}

int api_cells(PGconn *db, const struct cfg *cfg, const char *query, struct evbuffer *out)
{
    struct evkeyvalq q;
    if (api_query(query, &q, out) != 0)
        return 400;
    int64_t from, to;
    int status = range_of(&q, cfg, &from, &to, out);
    if (status) {
        evhttp_clear_headers(&q);
        return status;
    }
    char a[TM_RFC3339_LEN], b[TM_RFC3339_LEN];
    const char *params[4] = {tm_format_rfc3339(from, a), tm_format_rfc3339(to, b),
                             evhttp_find_header(&q, "src"), evhttp_find_header(&q, "dst")};
    PGresult *r = PQexecParams(db, SQL_CELLS, 4, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        jw_error(out, PQresultErrorMessage(r), "");
        PQclear(r);
        evhttp_clear_headers(&q);
        return 500;
    }
    struct jw w;
    jw_init(&w, out);
    jw_begin_object(&w);
    jw_kv_str(&w, "from", a);
    jw_kv_str(&w, "to", b);
    jw_key(&w, "cells");
    jw_begin_array(&w);
    for (int i = 0; i < PQntuples(r); i++) {
        jw_begin_object(&w);
        for (int c = 0; c < (int)(sizeof(CELL_FIELDS) / sizeof(CELL_FIELDS[0])); c++) {
            jw_key(&w, CELL_FIELDS[c]);
            if (PQgetisnull(r, i, c))
                jw_null(&w);
            else if (c == 0 || c == 2 || c == 3 || c == 12)
                jw_string(&w, PQgetvalue(r, i, c));
            else /* numeric columns as PostgreSQL prints them: exact */
                jw_raw(&w, PQgetvalue(r, i, c), (size_t)PQgetlength(r, i, c));
        }
        jw_end(&w);
    }
    jw_end(&w);
    jw_end(&w);
    evbuffer_add(out, "\n", 1);
    PQclear(r);
    evhttp_clear_headers(&q);
    return 200;
}

int api_top(PGconn *db, const struct cfg *cfg, const char *query, struct evbuffer *out)
{
    struct evkeyvalq q;
    if (api_query(query, &q, out) != 0)
        return 400;
    const char *src, *dst;
    int64_t from, to;
    int status = api_site_pair(&q, cfg, &src, &dst, out);
    if (!status)
        status = range_of(&q, cfg, &from, &to, out);
    if (status) {
        evhttp_clear_headers(&q);
        return status;
    }
    struct top_result tr;
    char err[512];
    if (top_query(db, src, dst, from, to, cfg->window_seconds, TOP_ROWS, &tr, err, sizeof(err)) <
        0) {
        jw_error(out, err, "");
        status = 500;
    } else {
        top_json(out, &tr);
        status = 200;
    }
    top_result_free(&tr);
    evhttp_clear_headers(&q);
    return status;
}
