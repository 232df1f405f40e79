/* Unexplained host pairs from sampled flows (see hm_unrec.h). */
#include "hm_unrec.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hm_fmt.h"
#include "hm_chflows.h"
#include "timeutil.h"

#define Z95                 1.959963984540054
#define HM_UNREC_CANDIDATES 100 /* pairs read to pick the shown ones from */

void hm_unrec_interval(double x, double v, double *lo, double *hi)
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
#define PAIRS_BODY                                                                                 \
    "f AS (SELECT DISTINCT ON (window_start, src_addr, dst_addr, proto, dst_port)"                 \
    "  window_start, src_addr, dst_addr, proto, dst_port, samples, estimated_bytes, variance"      \
    "  FROM flow_samples WHERE window_start >= $1 AND window_start < $2"                           \
    "  AND src_site = $3 AND dst_site = $4 AND ($5::text IS NULL OR device = $5)"                  \
    "  ORDER BY window_start, src_addr, dst_addr, proto, dst_port, samples DESC, device),"         \
    " s AS (SELECT window_start, local_addr AS a, remote_addr AS b, remote_port AS port, proto,"   \
    "  sum(tx_bytes) AS bytes FROM flow_records WHERE window_start >= $1 AND window_start < $2"    \
    "  AND source = 'socket' GROUP BY 1, 2, 3, 4, 5),"                                             \
    " d AS (SELECT window_start, remote_addr AS a, local_addr AS b, local_port AS port, proto,"    \
    "  sum(rx_bytes) AS bytes FROM flow_records WHERE window_start >= $1 AND window_start < $2"    \
    "  AND source = 'socket' GROUP BY 1, 2, 3, 4, 5),"                                             \
    " m AS (SELECT f.*, s.bytes AS src_bytes, d.bytes AS dst_bytes FROM f"                         \
    "  LEFT JOIN s ON s.window_start = f.window_start AND s.a = f.src_addr AND s.b = f.dst_addr"   \
    "   AND s.port = f.dst_port AND s.proto = CASE f.proto WHEN 6 THEN 'tcp' WHEN 17 THEN 'udp'"   \
    "   END"                                                                                       \
    "  LEFT JOIN d ON d.window_start = f.window_start AND d.a = f.src_addr AND d.b = f.dst_addr"   \
    "   AND d.port = f.dst_port AND d.proto = CASE f.proto WHEN 6 THEN 'tcp' WHEN 17 THEN 'udp'"   \
    "   END)"                                                                                      \
    " SELECT host(src_addr), host(dst_addr), proto, dst_port, sum(samples)::text,"                 \
    "  sum(estimated_bytes)::float8, sum(variance),"                                               \
    "  coalesce(sum(greatest(coalesce(src_bytes, 0), coalesce(dst_bytes, 0))), 0)::float8,"        \
    "  bool_or(src_bytes IS NOT NULL), bool_or(dst_bytes IS NOT NULL), count(*)"                   \
    " FROM m GROUP BY 1, 2, 3, 4 ORDER BY 6 DESC"

static const char SQL_PAIRS[] = "WITH " PAIRS_BODY;
/* In ClickHouse mode: the same, flow_records being the CTE of the flows in $6 (hm_chflows.h) */
static const char SQL_PAIRS_CH[] = "WITH " HM_CHFLOWS_CTE(6) PAIRS_BODY;
/* The addresses whose flows SQL_PAIRS_CH needs: both ends of the pair's sampled flows */
static const char SQL_PAIR_ADDRS[] =
    "SELECT DISTINCT host(v.a) FROM flow_samples, LATERAL (VALUES (src_addr), (dst_addr)) v(a)"
    " WHERE window_start >= $1 AND window_start < $2 AND src_site = $3 AND dst_site = $4"
    " AND ($5::text IS NULL OR device = $5)";

int hm_unrec_query(PGconn *db, const struct cfg *cfg, const char *src_site, const char *dst_site,
                   const char *device, int64_t from_us, int64_t to_us, size_t limit,
                   struct hm_unrec_row **rows, size_t *n, char *err, size_t errlen)
{
    *rows = NULL;
    *n = 0;
    char a[TM_RFC3339_LEN], b[TM_RFC3339_LEN];
    const char *p[6] = {tm_format_rfc3339(from_us, a),
                        tm_format_rfc3339(to_us, b),
                        src_site,
                        dst_site,
                        device,
                        NULL};
    char *flows = NULL; /* ClickHouse mode: the raw flows are there (hm_chflows.h) */
    if (cfg->clickhouse.enabled && !(flows = hm_chflows_json(db, &cfg->clickhouse, SQL_PAIR_ADDRS,
                                                             5, p, from_us, to_us, err, errlen)))
        return -1;
    p[5] = flows;
    PGresult *r =
        PQexecParams(db, flows ? SQL_PAIRS_CH : SQL_PAIRS, flows ? 6 : 5, NULL, p, NULL, NULL, 0);
    free(flows);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        snprintf(err, errlen, "unrecorded pairs: %s", PQerrorMessage(db));
        PQclear(r);
        return -1;
    }
    int nt = PQntuples(r);
    struct hm_unrec_row *out = calloc(nt ? (size_t)nt : 1, sizeof(*out));
    if (!out) {
        PQclear(r);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    double ratio = cfg->ratio_without_packets > 0 ? cfg->ratio_without_packets : 1;
    size_t k = 0;
    for (int i = 0; i < nt && k < limit; i++) {
        struct hm_unrec_row *u = &out[k];
        memset(u, 0, sizeof(*u));
        snprintf(u->src_addr, sizeof(u->src_addr), "%s", PQgetvalue(r, i, 0));
        snprintf(u->dst_addr, sizeof(u->dst_addr), "%s", PQgetvalue(r, i, 1));
        u->proto = atoi(PQgetvalue(r, i, 2));
        u->dst_port = atoi(PQgetvalue(r, i, 3));
        u->samples = strtoull(PQgetvalue(r, i, 4), NULL, 10);
        u->estimated_bytes = strtod(PQgetvalue(r, i, 5), NULL);
        hm_unrec_interval(u->estimated_bytes, strtod(PQgetvalue(r, i, 6), NULL), &u->low_bytes,
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

/* Stable partition: pairs no agent recorded first (the blind spots), then the under-reported
 * ones, each still largest first. An under-reported pair is a comparison of two estimates (the
 * agents' payload as IP bytes by a fixed ratio, flows windowed by the exporter's flow end) and
 * can be a few per cent off at the edges of a range; an unrecorded one is not. */
static void unrecorded_first(struct hm_unrec_row *rows, size_t n)
{
    struct hm_unrec_row *tmp = malloc((n ? n : 1) * sizeof(*tmp));
    if (!tmp)
        return; /* order by estimate only */
    size_t k = 0;
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < n; i++)
            if ((strcmp(rows[i].recorded_by, "none") == 0) == (pass == 0))
                tmp[k++] = rows[i];
    memcpy(rows, tmp, n * sizeof(*tmp));
    free(tmp);
}

static const char *proto_name(int p)
{
    return p == 6 ? "tcp" : p == 17 ? "udp" : p == 1 ? "icmp" : p == 58 ? "icmpv6" : NULL;
}

void hm_unrec_describe(const struct hm_unrec_row *r, char *out, size_t len)
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

int hm_unrec_panel(struct evbuffer *out, PGconn *db, const struct cfg *cfg, const char *src,
                   const char *dst, int64_t from_us, int64_t to_us, const struct hm_totals *t,
                   char *err, size_t errlen)
{
    struct hm_unrec_row *rows;
    size_t n;
    if (!cfg)
        return 0; /* the address-to-site and port rules come from the configuration */
    if (hm_unrec_query(db, cfg, src, dst, NULL, from_us, to_us, HM_UNREC_CANDIDATES, &rows, &n, err,
                       errlen) < 0)
        return -1;
    if (n == 0) {
        free(rows);
        return 0; /* no sampled flows for this pair: nothing to add */
    }
    unrecorded_first(rows, n);
    if (n > HM_UNREC_PANEL_ROWS)
        n = HM_UNREC_PANEL_ROWS;
    /* flow estimates are IP bytes; the gap is payload: scale by the cell's payload/observed */
    double to_payload = t->observed > 0 ? (double)t->payload / (double)t->observed : 1;
    evbuffer_add_printf(out,
                        "<div class=\"panel unrecorded\" style=\"margin-top:14px\"><h2>Unexplained "
                        "host pairs (routers' sampled flows)</h2><table><tr><th>source</th>"
                        "<th>destination</th><th>protocol/port</th><th class=\"num\">estimated"
                        "</th><th class=\"num\">95%% interval</th><th class=\"num\">samples</th>"
                        "<th>recorded by</th><th class=\"num\">of the gap</th></tr>");
    for (size_t i = 0; i < n; i++) {
        const struct hm_unrec_row *r = &rows[i];
        char e[HM_FMT_LEN], lo[HM_FMT_LEN], hi[HM_FMT_LEN], sh[HM_FMT_LEN];
        evbuffer_add_printf(out,
                            "<tr class=\"pair\" data-src-addr=\"%s\" data-dst-addr=\"%s\">"
                            "<td>%s</td><td>%s</td><td>",
                            r->src_addr, r->dst_addr, r->src_addr, r->dst_addr);
        const char *pn = proto_name(r->proto);
        if (pn)
            evbuffer_add_printf(out, "%s/%d", pn, r->dst_port);
        else
            evbuffer_add_printf(out, "proto %d", r->proto);
        if (r->service_port)
            evbuffer_add_printf(out, " <span class=\"muted\">(service port)</span>");
        double share =
            t->unattributed > 0 ? r->estimated_bytes * to_payload / (double)t->unattributed : NAN;
        evbuffer_add_printf(
            out,
            "</td><td class=\"num\">%s</td><td class=\"num\">%s &ndash; %s</td>"
            "<td class=\"num\">%llu</td><td>%s</td><td class=\"num\" data-share=\"%.4f\">%s</td>"
            "</tr>",
            hm_fmt_bytes((int64_t)r->estimated_bytes, e), hm_fmt_bytes((int64_t)r->low_bytes, lo),
            hm_fmt_bytes((int64_t)r->high_bytes, hi), (unsigned long long)r->samples,
            strcmp(r->recorded_by, "none") == 0 ? "<b>no agent at either end</b>" : r->recorded_by,
            isnan(share) ? 0 : share, hm_fmt_pct(share, sh));
    }
    evbuffer_add_printf(out, "</table></div>");
    free(rows);
    return 0;
}

/* The gap of src -> dst over the windows of [from_us, to_us) that have both a cell and sampled
 * flows, narrowed to [*from_us, *to_us) from the first to the last such window: unattributed
 * payload bytes and the cells' payload/observed (to scale the flows' IP bytes). 1 when there is
 * such a window, 0 when none, -1 on error. */
static int gap_of(PGconn *db, const char *src, const char *dst, int64_t window_s, int64_t *from_us,
                  int64_t *to_us, double *unattributed, double *to_payload)
{
    static const char sql[] =
        "SELECT (extract(epoch FROM min(c.window_start)) * 1e6)::bigint,"
        " (extract(epoch FROM max(c.window_start)) * 1e6)::bigint,"
        " sum(c.unattributed_bytes)::float8, sum(c.observed_payload_bytes)::float8,"
        " sum(c.observed_bytes)::float8 FROM heatmap_cells c WHERE c.src_site = $1"
        " AND c.dst_site = $2 AND c.window_start >= $3 AND c.window_start < $4 AND EXISTS"
        " (SELECT 1 FROM flow_samples f WHERE f.src_site = $1 AND f.dst_site = $2"
        " AND f.window_start = c.window_start)";
    char a[TM_RFC3339_LEN], b[TM_RFC3339_LEN];
    const char *p[4] = {src, dst, tm_format_rfc3339(*from_us, a), tm_format_rfc3339(*to_us, b)};
    PGresult *r = PQexecParams(db, sql, 4, NULL, p, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        PQclear(r);
        return -1;
    }
    int found = PQntuples(r) == 1 && !PQgetisnull(r, 0, 0);
    if (found) {
        *from_us = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
        *to_us = strtoll(PQgetvalue(r, 0, 1), NULL, 10) + window_s * 1000000LL;
        *unattributed = strtod(PQgetvalue(r, 0, 2), NULL);
        double payload = strtod(PQgetvalue(r, 0, 3), NULL), obs = strtod(PQgetvalue(r, 0, 4), NULL);
        *to_payload = obs > 0 ? payload / obs : 1;
    }
    PQclear(r);
    return found;
}

void hm_unrec_note(PGconn *db, const struct cfg *cfg, const char *src, const char *dst,
                   int64_t from_us, int64_t to_us, char *summary, size_t len)
{
    struct hm_unrec_row *rows = NULL;
    size_t n = 0;
    char err[256];
    if (!cfg)
        return;
    /* inside the caller's transaction a failed query must not abort it: a savepoint */
    bool in_tx = PQtransactionStatus(db) == PQTRANS_INTRANS;
    if (in_tx)
        PQclear(PQexec(db, "SAVEPOINT wl_unrec_note"));
    double gap = 0, to_payload = 1;
    int found = gap_of(db, src, dst, cfg->window_seconds, &from_us, &to_us, &gap, &to_payload);
    int rc = found > 0 ? hm_unrec_query(db, cfg, src, dst, NULL, from_us, to_us,
                                        HM_UNREC_CANDIDATES, &rows, &n, err, sizeof(err))
                       : found;
    if (in_tx)
        PQclear(PQexec(db, rc < 0 ? "ROLLBACK TO SAVEPOINT wl_unrec_note"
                                  : "RELEASE SAVEPOINT wl_unrec_note"));
    if (rc < 0 || found == 0)
        return; /* the summary stays as it was: flows are a hint, not the alert */
    unrecorded_first(rows, n);
    if (n > 0) {
        char d[256], pct[HM_FMT_LEN + 16] = "";
        size_t used = strlen(summary);
        hm_unrec_describe(&rows[0], d, sizeof(d));
        if (gap > 0) { /* its share of the gap, flows' IP bytes as payload like the cell page */
            char p[HM_FMT_LEN];
            snprintf(pct, sizeof(pct), ", %s of the gap",
                     hm_fmt_pct(rows[0].estimated_bytes * to_payload / gap, p));
        }
        if (used < len)
            snprintf(summary + used, len - used, "; top unexplained pair (sampled flows): %s%s", d,
                     pct);
    }
    free(rows);
}
