/* Unexplained host pairs from sampled flows (see unrec.h). */
#include "unrec.h"

#include <sys/queue.h>

#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "jsonw.h"
#include "timeutil.h"

#define Z95 1.959963984540054

void unrec_interval(double x, double v, double *lo, double *hi)
{
    if (!(v > 0) || !(x > 0)) {
        *lo = *hi = x;
        return;
    }
    double n = x * x / v;
    double l = 1 - 1 / (9 * n) - Z95 / (3 * sqrt(n));
    double u = 1 - 1 / (9 * (n + 1)) + Z95 / (3 * sqrt(n + 1));
    double ln = l > 0 ? n * l * l * l : 0;
    double un = (n + 1) * u * u * u;
    *lo = x * ln / n;
    *hi = x * un / n;
}

/* Per window: one exporter per pair (most samples), the agents' bytes for the same pair from
 * either end; then summed over the windows. $1 from, $2 to, $3 src site, $4 dst site, $5 one
 * exporting device or NULL. */
static const char SQL_PAIRS[] =
    "WITH f AS (SELECT DISTINCT ON (window_start, src_addr, dst_addr, proto, dst_port)"
    "  window_start, src_addr, dst_addr, proto, dst_port, samples, estimated_bytes, variance"
    "  FROM flow_samples WHERE window_start >= $1 AND window_start < $2"
    "  AND src_site = $3 AND dst_site = $4 AND ($5::text IS NULL OR device = $5)"
    "  ORDER BY window_start, src_addr, dst_addr, proto, dst_port, samples DESC, device),"
    " s AS (SELECT window_start, local_addr AS a, remote_addr AS b, remote_port AS port, proto,"
    "  sum(tx_bytes) AS bytes FROM flow_records WHERE window_start >= $1 AND window_start < $2"
    "  AND source = 'socket' GROUP BY 1, 2, 3, 4, 5),"
    " d AS (SELECT window_start, remote_addr AS a, local_addr AS b, local_port AS port, proto,"
    "  sum(rx_bytes) AS bytes FROM flow_records WHERE window_start >= $1 AND window_start < $2"
    "  AND source = 'socket' GROUP BY 1, 2, 3, 4, 5),"
    " m AS (SELECT f.*, s.bytes AS src_bytes, d.bytes AS dst_bytes FROM f"
    "  LEFT JOIN s ON s.window_start = f.window_start AND s.a = f.src_addr AND s.b = f.dst_addr"
    "   AND s.port = f.dst_port AND s.proto = CASE f.proto WHEN 6 THEN 'tcp' WHEN 17 THEN 'udp'"
    "   END"
    "  LEFT JOIN d ON d.window_start = f.window_start AND d.a = f.src_addr AND d.b = f.dst_addr"
    "   AND d.port = f.dst_port AND d.proto = CASE f.proto WHEN 6 THEN 'tcp' WHEN 17 THEN 'udp'"
    "   END)"
    " SELECT host(src_addr), host(dst_addr), proto, dst_port, sum(samples)::text,"
    "  sum(estimated_bytes)::float8, sum(variance),"
    "  coalesce(sum(greatest(coalesce(src_bytes, 0), coalesce(dst_bytes, 0))), 0)::float8,"
    "  bool_or(src_bytes IS NOT NULL), bool_or(dst_bytes IS NOT NULL), count(*)"
    " FROM m GROUP BY 1, 2, 3, 4 ORDER BY 6 DESC";

int unrec_query(PGconn *db, const struct cfg *cfg, const char *src_site, const char *dst_site,
                const char *device, int64_t from_us, int64_t to_us, size_t limit,
                struct unrec_row **rows, size_t *n, char *err, size_t errlen)
{
    *rows = NULL;
    *n = 0;
    char a[TM_RFC3339_LEN], b[TM_RFC3339_LEN];
    const char *p[5] = {tm_format_rfc3339(from_us, a), tm_format_rfc3339(to_us, b), src_site,
                        dst_site, device};
    PGresult *r = PQexecParams(db, SQL_PAIRS, 5, NULL, p, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        snprintf(err, errlen, "unrecorded pairs: %s", PQerrorMessage(db));
        PQclear(r);
        return -1;
    }
    int nt = PQntuples(r);
    struct unrec_row *out = calloc(nt ? (size_t)nt : 1, sizeof(*out));
    if (!out) {
        PQclear(r);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    double ratio = cfg->ratio_without_packets > 0 ? cfg->ratio_without_packets : 1;
    size_t k = 0;
    for (int i = 0; i < nt && k < limit; i++) {
        struct unrec_row *u = &out[k];
        memset(u, 0, sizeof(*u));
        snprintf(u->src_addr, sizeof(u->src_addr), "%s", PQgetvalue(r, i, 0));
        snprintf(u->dst_addr, sizeof(u->dst_addr), "%s", PQgetvalue(r, i, 1));
        u->proto = atoi(PQgetvalue(r, i, 2));
        u->dst_port = atoi(PQgetvalue(r, i, 3));
        u->samples = strtoull(PQgetvalue(r, i, 4), NULL, 10);
        u->estimated_bytes = strtod(PQgetvalue(r, i, 5), NULL);
        unrec_interval(u->estimated_bytes, strtod(PQgetvalue(r, i, 6), NULL), &u->low_bytes,
                       &u->high_bytes);
        u->recorded_bytes = strtod(PQgetvalue(r, i, 7), NULL) / ratio;
        bool sb = PQgetvalue(r, i, 8)[0] == 't', db_ = PQgetvalue(r, i, 9)[0] == 't';
        snprintf(u->recorded_by, sizeof(u->recorded_by), "%s",
                 sb && db_ ? "both"
                 : sb      ? "src"
                 : db_     ? "dst"
                           : "none");
        u->windows = atoi(PQgetvalue(r, i, 10));
        u->service_port =
            u->dst_port > 0 && u->dst_port < 65536 && cfg_is_dedup_port(cfg, (uint16_t)u->dst_port);
        if (strcmp(u->recorded_by, "none") != 0 && u->recorded_bytes >= u->low_bytes)
            continue; /* explained: an agent accounts for it */
        k++;
    }
    PQclear(r);
    *rows = out;
    *n = k;
    return 0;
}

static const char *proto_name(int p)
{
    return p == 6 ? "tcp" : p == 17 ? "udp" : p == 1 ? "icmp" : p == 58 ? "icmpv6" : NULL;
}

void unrec_describe(const struct unrec_row *r, char *out, size_t len)
{
    const char *pn = proto_name(r->proto);
    char proto[16];
    if (pn)
        snprintf(proto, sizeof(proto), "%s", pn);
    else
        snprintf(proto, sizeof(proto), "proto %d", r->proto);
    snprintf(out, len, "%s -> %s %s/%d ~%.3g MB [%.3g-%.3g MB], %s", r->src_addr, r->dst_addr,
             proto, r->dst_port, r->estimated_bytes / 1e6, r->low_bytes / 1e6, r->high_bytes / 1e6,
             strcmp(r->recorded_by, "none") == 0 ? "no agent at either end" : "agents report less");
}

int unrec_api(PGconn *db, const struct cfg *cfg, const char *query, struct evbuffer *out)
{
    struct evkeyvalq q;
    TAILQ_INIT(&q);
    if (query && evhttp_parse_query_str(query, &q) < 0) {
        jw_error(out, "malformed query string", "?");
        return 400;
    }
    int status = 0;
    const char *src = evhttp_find_header(&q, "src"), *dst = evhttp_find_header(&q, "dst");
    const char *f = evhttp_find_header(&q, "from"), *t = evhttp_find_header(&q, "to");
    const char *device = evhttp_find_header(&q, "device");
    int64_t now = tm_now_us(), from, to = now;
    if (!src || cfg_site_index(cfg, src) < 0) {
        jw_error(out, "expected a configured site name", "src");
        status = 400;
    } else if (!dst || cfg_site_index(cfg, dst) < 0) {
        jw_error(out, "expected a configured site name", "dst");
        status = 400;
    } else if (t && api_parse_time(t, now, &to) < 0) {
        jw_error(out, "expected an RFC 3339 time, epoch seconds or a duration ago", "to");
        status = 400;
    } else if ((from = to - (int64_t)API_DEFAULT_SPAN_S * 1000000LL),
               f && api_parse_time(f, now, &from) < 0) {
        jw_error(out, "expected an RFC 3339 time, epoch seconds or a duration ago", "from");
        status = 400;
    } else if (device && (cfg_device_index(cfg, device) < 0 ||
                          !cfg->devices[cfg_device_index(cfg, device)].has_flows)) {
        jw_error(out, "expected a configured device with a \"flows\" section", "device");
        status = 400;
    } else if (from > to || to - from > (int64_t)API_MAX_SPAN_S * 1000000LL) {
        jw_error(out, "expected from <= to, at most 7 days apart", "from");
        status = 400;
    }
    if (status) {
        evhttp_clear_headers(&q);
        return status;
    }
    struct unrec_row *rows;
    size_t n;
    char err[512];
    if (unrec_query(db, cfg, src, dst, device, from, to, 100, &rows, &n, err, sizeof(err)) < 0) {
        jw_error(out, err, "");
        evhttp_clear_headers(&q);
        return 500;
    }
    char a[TM_RFC3339_LEN], b[TM_RFC3339_LEN];
    evbuffer_add_printf(out, "{\"src\":");
    jw_str(out, src);
    evbuffer_add_printf(out, ",\"dst\":");
    jw_str(out, dst);
    evbuffer_add_printf(out, ",\"from\":\"%s\",\"to\":\"%s\",\"rows\":[",
                        tm_format_rfc3339(from, a), tm_format_rfc3339(to, b));
    for (size_t i = 0; i < n; i++) {
        const struct unrec_row *r = &rows[i];
        evbuffer_add_printf(
            out,
            "%s{\"src_addr\":\"%s\",\"dst_addr\":\"%s\",\"proto\":%d,\"dst_port\":%d,"
            "\"estimated_bytes\":%.0f,\"low_bytes\":%.0f,\"high_bytes\":%.0f,\"samples\":%llu,"
            "\"recorded_by\":\"%s\",\"recorded_bytes\":%.0f,\"status\":\"%s\","
            "\"service_port\":%s,\"windows\":%d}",
            i ? "," : "", r->src_addr, r->dst_addr, r->proto, r->dst_port, r->estimated_bytes,
            r->low_bytes, r->high_bytes, (unsigned long long)r->samples, r->recorded_by,
            r->recorded_bytes,
            strcmp(r->recorded_by, "none") == 0 ? "unrecorded" : "under_reported",
            r->service_port ? "true" : "false", r->windows);
    }
    evbuffer_add_printf(out, "]}\n");
    free(rows);
    evhttp_clear_headers(&q);
    return 200;
}
