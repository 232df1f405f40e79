/* The reconciler's database glue: one window's raw rows in, recon_run, results and alerts out, in
 * one transaction. */
#include "recon_db.h"

#include <arpa/inet.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "alerts.h"
#include "hm_unrec.h"
#include "recon.h"
#include "timeutil.h"

/* int64 microseconds <-> timestamptz, exactly (no float round trip) */

/* How far around a window the neighbouring counter samples are looked for. */
static int64_t lookaround_us(const struct cfg *cfg)
{
    int64_t ten = (int64_t)cfg->window_seconds * 10 * TM_USEC_PER_SEC;
    return ten > 3600 * TM_USEC_PER_SEC ? ten : 3600 * TM_USEC_PER_SEC;
}

/* ---- small libpq helpers ---- */

static void set_err(char *err, size_t errlen, const char *what, const PGresult *r, PGconn *db)
{
    const char *m = r ? PQresultErrorMessage(r) : PQerrorMessage(db);
    snprintf(err, errlen, "%s: %s", what, m && *m ? m : "unknown error");
    size_t n = strlen(err);
    while (n && err[n - 1] == '\n')
        err[--n] = '\0';
}

/* Runs sql with text parameters; returns the result (PGRES_TUPLES_OK / COMMAND_OK) or NULL with
 * err filled. */
static PGresult *q(PGconn *db, const char *what, char *err, size_t errlen, const char *sql, int n,
                   const char *const *params)
{
    PGresult *r = PQexecParams(db, sql, n, NULL, params, NULL, NULL, 0);
    ExecStatusType st = PQresultStatus(r);
    if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK)
        return r;
    set_err(err, errlen, what, r, db);
    PQclear(r);
    return NULL;
}

static const char *val(const PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col) ? NULL : PQgetvalue(r, row, col);
}

static int64_t val_i64(const PGresult *r, int row, int col, int64_t dflt)
{
    const char *v = val(r, row, col);
    return v ? strtoll(v, NULL, 10) : dflt;
}

static uint64_t val_u64(const PGresult *r, int row, int col, bool *has)
{
    const char *v = val(r, row, col);
    if (has)
        *has = v != NULL;
    return v ? strtoull(v, NULL, 10) : 0;
}

#define NUM_LEN 32 /* a decimal int64 */

static void fmt_i64(char buf[NUM_LEN], int64_t v)
{
    snprintf(buf, NUM_LEN, "%" PRId64, v);
}

static void fmt_ts(char buf[TM_RFC3339_LEN], int64_t us)
{
    tm_format_rfc3339(us, buf);
}

/* A growable text buffer for COPY data and array literals. */
struct sbuf {
    char *p;
    size_t n, cap;
    bool oom;
};

static void sb_add(struct sbuf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->n + n + 1 > b->cap) {
        size_t c = b->cap ? b->cap * 2 : 4096;
        while (c < b->n + n + 1)
            c *= 2;
        char *p = realloc(b->p, c);
        if (!p) {
            b->oom = true;
            return;
        }
        b->p = p;
        b->cap = c;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

__attribute__((format(printf, 2, 3))) static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof tmp) {
        sb_add(b, tmp, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big) {
        b->oom = true;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    sb_add(b, big, (size_t)n);
    free(big);
}

/* Microseconds from the Unix epoch to PostgreSQL's (2000-01-01T00:00:00Z). */
#define PG_EPOCH_OFFSET_US (INT64_C(946684800) * TM_USEC_PER_SEC)

/* An unsigned big-endian integer of n bytes (binary COPY). */
static void sb_be(struct sbuf *b, uint64_t v, int n)
{
    uint8_t out[8];
    for (int i = 0; i < n; i++)
        out[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
    sb_add(b, (const char *)out, (size_t)n);
}

/* A COPY text-format field (then a tab or newline is added by the caller). */
static void sb_copy_text(struct sbuf *b, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '\\':
            sb_add(b, "\\\\", 2);
            break;
        case '\t':
            sb_add(b, "\\t", 2);
            break;
        case '\n':
            sb_add(b, "\\n", 2);
            break;
        case '\r':
            sb_add(b, "\\r", 2);
            break;
        default:
            sb_add(b, s, 1);
        }
    }
}

/* An element of a text[] array literal: "…" with \ and " escaped. */
static void sb_array_elem(struct sbuf *b, const char *s, bool first)
{
    if (!first)
        sb_add(b, ",", 1);
    sb_add(b, "\"", 1);
    for (; *s; s++) {
        if (*s == '\\' || *s == '"')
            sb_add(b, "\\", 1);
        sb_add(b, s, 1);
    }
    sb_add(b, "\"", 1);
}

static int copy_in(PGconn *db, const char *sql, const struct sbuf *data, char *err, size_t errlen)
{
    PGresult *r = PQexec(db, sql);
    if (PQresultStatus(r) != PGRES_COPY_IN) {
        set_err(err, errlen, sql, r, db);
        PQclear(r);
        return -1;
    }
    PQclear(r);
    int rc = 0;
    if (data->n && PQputCopyData(db, data->p, (int)data->n) != 1)
        rc = -1;
    if (PQputCopyEnd(db, rc ? "client error" : NULL) != 1)
        rc = -1;
    r = PQgetResult(db);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
        set_err(err, errlen, sql, r, db);
        rc = -1;
    }
    PQclear(r);
    while ((r = PQgetResult(db)))
        PQclear(r);
    return rc;
}

/* ---- loading the window's inputs ---- */

struct inputs {
    PGresult *samples_r, *flows_r, *transfers_r;
    struct recon_sample *samples;
    size_t n_samples;
    struct recon_flow *flows;
    size_t n_flows;
    struct recon_transfer *transfers;
    size_t n_transfers;
};

static void inputs_free(struct inputs *in)
{
    PQclear(in->samples_r);
    PQclear(in->flows_r);
    PQclear(in->transfers_r);
    free(in->samples);
    free(in->flows);
    free(in->transfers);
}

static int link_of(const struct cfg *cfg, const char *device, const char *interface)
{
    for (size_t i = 0; i < cfg->n_links; i++)
        if (strcmp(cfg->links[i].device, device) == 0 &&
            strcmp(cfg->links[i].interface, interface) == 0)
            return (int)i;
    return -1;
}

static const char sample_cols[] =
    "s.device, s.interface, (extract(epoch from s.at) * 1000000)::bigint, s.uptime_cs, "
    "s.discontinuity_cs, s.counter_bits, "
    "s.in_octets::text, s.out_octets::text, s.in_pkts::text, s.out_pkts::text, s.speed_bps";

static int load_samples(PGconn *db, const struct cfg *cfg, int64_t ws, struct inputs *in, char *err,
                        size_t errlen)
{
    if (cfg->n_links == 0)
        return 0;
    struct sbuf devs = {0}, ifs = {0};
    sb_add(&devs, "{", 1);
    sb_add(&ifs, "{", 1);
    for (size_t i = 0; i < cfg->n_links; i++) {
        sb_array_elem(&devs, cfg->links[i].device, i == 0);
        sb_array_elem(&ifs, cfg->links[i].interface, i == 0);
    }
    sb_add(&devs, "}", 1);
    sb_add(&ifs, "}", 1);
    char from[TM_RFC3339_LEN], to[TM_RFC3339_LEN], back[TM_RFC3339_LEN], ahead[TM_RFC3339_LEN];
    int64_t we = ws + (int64_t)cfg->window_seconds * TM_USEC_PER_SEC;
    fmt_ts(from, ws);
    fmt_ts(to, we);
    fmt_ts(back, ws - lookaround_us(cfg));
    fmt_ts(ahead, we + lookaround_us(cfg));
    const char *params[] = {devs.p, ifs.p, from, to, back, ahead};
    static const char sql[] =
        "WITH l(device, interface) AS (SELECT * FROM unnest($1::text[], $2::text[]))"
        " SELECT * FROM ("
        "  SELECT %1$s FROM counter_samples s JOIN l USING (device, interface)"
        "  WHERE s.at >= $3::timestamptz AND s.at <= $4::timestamptz) w"
        " UNION ALL SELECT p.* FROM l CROSS JOIN LATERAL ("
        "  SELECT %1$s FROM counter_samples s"
        "  WHERE s.device = l.device AND s.interface = l.interface"
        "   AND s.at < $3::timestamptz AND s.at >= $5::timestamptz"
        "  ORDER BY s.at DESC LIMIT 1) p"
        " UNION ALL SELECT n.* FROM l CROSS JOIN LATERAL ("
        "  SELECT %1$s FROM counter_samples s"
        "  WHERE s.device = l.device AND s.interface = l.interface"
        "   AND s.at > $4::timestamptz AND s.at <= $6::timestamptz"
        "  ORDER BY s.at LIMIT 1) n";
    char full[4096];
    snprintf(full, sizeof full, sql, sample_cols);
    int rc = -1;
    if (devs.oom || ifs.oom) {
        snprintf(err, errlen, "loading counter samples: out of memory");
        goto cleanup;
    }
    in->samples_r = q(db, "loading counter samples", err, errlen, full, 6, params);
    if (!in->samples_r)
        goto cleanup;
    int n = PQntuples(in->samples_r);
    in->samples = calloc((size_t)n + 1, sizeof *in->samples);
    if (!in->samples) {
        snprintf(err, errlen, "loading counter samples: out of memory");
        goto cleanup;
    }
    const PGresult *r = in->samples_r;
    for (int i = 0; i < n; i++) {
        int link = link_of(cfg, PQgetvalue(r, i, 0), PQgetvalue(r, i, 1));
        if (link < 0)
            continue;
        struct recon_sample *s = &in->samples[in->n_samples++];
        s->link = link;
        s->at_us = val_i64(r, i, 2, 0);
        s->uptime_cs = val_i64(r, i, 3, -1);
        s->discontinuity_cs = val_i64(r, i, 4, 0);
        s->counter_bits = (int)val_i64(r, i, 5, 64);
        s->in_octets = val_u64(r, i, 6, &s->has_in_octets);
        s->out_octets = val_u64(r, i, 7, &s->has_out_octets);
        s->in_pkts = val_u64(r, i, 8, &s->has_in_pkts);
        s->out_pkts = val_u64(r, i, 9, &s->has_out_pkts);
        int64_t speed = val_i64(r, i, 10, 0);
        s->speed_bps = speed > 0 ? (uint64_t)speed : 0;
    }
    rc = 0;
cleanup:
    free(devs.p);
    free(ifs.p);
    return rc;
}

/* Binary result fields (network order): int4/int8, and inet as family (2 = IPv4, 3 = IPv6),
 * bits, is_cidr, length, address. libpq ends every value with a zero byte, so text fields read
 * as C strings. */
static int64_t bin_int(const PGresult *r, int row, int col, int64_t dflt)
{
    if (PQgetisnull(r, row, col))
        return dflt;
    const uint8_t *p = (const uint8_t *)PQgetvalue(r, row, col);
    int len = PQgetlength(r, row, col);
    uint64_t v = 0;
    for (int i = 0; i < len; i++)
        v = v << 8 | p[i];
    if (len == 4)
        return (int32_t)(uint32_t)v;
    return (int64_t)v;
}

static void bin_inet(const PGresult *r, int row, int col, struct recon_addr *a)
{
    memset(a, 0, sizeof *a);
    if (PQgetisnull(r, row, col) || PQgetlength(r, row, col) < 4)
        return;
    const uint8_t *p = (const uint8_t *)PQgetvalue(r, row, col);
    int len = PQgetlength(r, row, col);
    if (p[0] == 2 && p[3] == 4 && len >= 8) {
        a->family = AF_INET;
        memcpy(a->addr, p + 4, 4);
    } else if (p[0] == 3 && p[3] == 16 && len >= 20) {
        a->family = AF_INET6;
        memcpy(a->addr, p + 4, 16);
    }
}

static int load_flows(PGconn *db, int64_t ws, struct inputs *in, char *err, size_t errlen)
{
    char from[TM_RFC3339_LEN];
    fmt_ts(from, ws);
    const char *params[] = {from};
    /* binary results: no number or address formatting on the server, no parsing here */
    PGresult *r = PQexecParams(db,
                               "SELECT source, proto, local_addr, local_port, remote_addr,"
                               " remote_port, role, tx_bytes, rx_bytes, nfs_server, nfs_port,"
                               " nfs_op, nfs_bytes, host, user_name, program, workflow"
                               " FROM flow_records WHERE window_start = $1::timestamptz",
                               1, NULL, params, NULL, NULL, 1);
    in->flows_r = r;
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        set_err(err, errlen, "loading flow records", r, db);
        return -1;
    }
    int n = PQntuples(r);
    in->flows = calloc((size_t)n + 1, sizeof *in->flows);
    if (!in->flows) {
        snprintf(err, errlen, "loading flow records: out of memory");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        struct recon_flow *f = &in->flows[in->n_flows++];
        const char *source = PQgetvalue(r, i, 0), *v;
        f->host = val(r, i, 13);
        f->user = val(r, i, 14);
        f->program = val(r, i, 15);
        f->workflow = val(r, i, 16);
        bin_inet(r, i, 2, &f->local);
        if (strcmp(source, "nfs") == 0) {
            f->source = RECON_FLOW_NFS;
            bin_inet(r, i, 9, &f->nfs_server);
            f->nfs_port = (uint16_t)bin_int(r, i, 10, 0);
            v = val(r, i, 11);
            f->nfs_op = v && strcmp(v, "write") == 0 ? RECON_NFS_WRITE : RECON_NFS_READ;
            int64_t b = bin_int(r, i, 12, 0);
            f->nfs_bytes = b > 0 ? (uint64_t)b : 0;
            continue;
        }
        f->source = RECON_FLOW_SOCKET;
        v = val(r, i, 1);
        f->proto = v && strcmp(v, "udp") == 0 ? IPPROTO_UDP : IPPROTO_TCP;
        f->local_port = (uint16_t)bin_int(r, i, 3, 0);
        bin_inet(r, i, 4, &f->remote);
        f->remote_port = (uint16_t)bin_int(r, i, 5, 0);
        v = val(r, i, 6);
        f->role = !v                         ? RECON_ROLE_UNKNOWN
                  : strcmp(v, "client") == 0 ? RECON_ROLE_CLIENT
                  : strcmp(v, "server") == 0 ? RECON_ROLE_SERVER
                                             : RECON_ROLE_UNKNOWN;
        int64_t tx = bin_int(r, i, 7, 0), rx = bin_int(r, i, 8, 0);
        f->tx_bytes = tx > 0 ? (uint64_t)tx : 0;
        f->rx_bytes = rx > 0 ? (uint64_t)rx : 0;
    }
    return 0;
}

static int load_transfers(PGconn *db, const struct cfg *cfg, int64_t ws, struct inputs *in,
                          char *err, size_t errlen)
{
    char from[TM_RFC3339_LEN], to[TM_RFC3339_LEN];
    fmt_ts(from, ws);
    fmt_ts(to, ws + (int64_t)cfg->window_seconds * TM_USEC_PER_SEC);
    const char *params[] = {from, to};
    static const char sql[] =
        "SELECT service, requester, workflow, src, dst, bytes,"
        " (extract(epoch FROM start_at) * 1000000)::bigint,"
        " (extract(epoch FROM end_at) * 1000000)::bigint"
        " FROM transfers WHERE start_at < $2::timestamptz AND end_at >= $1::timestamptz";
    in->transfers_r = q(db, "loading transfers", err, errlen, sql, 2, params);
    if (!in->transfers_r)
        return -1;
    const PGresult *r = in->transfers_r;
    int n = PQntuples(r);
    in->transfers = calloc((size_t)n + 1, sizeof *in->transfers);
    if (!in->transfers) {
        snprintf(err, errlen, "loading transfers: out of memory");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        struct recon_transfer *t = &in->transfers[in->n_transfers++];
        t->service = val(r, i, 0);
        t->requester = val(r, i, 1);
        t->workflow = val(r, i, 2);
        t->src = val(r, i, 3);
        t->dst = val(r, i, 4);
        int64_t b = val_i64(r, i, 5, 0);
        t->bytes = b > 0 ? (uint64_t)b : 0;
        t->start_us = val_i64(r, i, 6, 0);
        t->end_us = val_i64(r, i, 7, 0);
    }
    return 0;
}

/* ---- writing the window's results ---- */

static const char *site_name(const struct cfg *cfg, int i)
{
    return cfg->sites[i].name;
}

static const char *const merge_prepare[] = {
    "CREATE TEMP TABLE IF NOT EXISTS wl_rollup_new (LIKE attribution_rollup) "
    "ON COMMIT DELETE ROWS",
    "TRUNCATE wl_rollup_new",
    NULL,
};

static const char *const merge_apply[] = {
    "DELETE FROM attribution_rollup a WHERE a.window_start = $1::timestamptz AND NOT EXISTS "
    "(SELECT 1 FROM wl_rollup_new n WHERE (n.window_start, "
    "n.src_site, n.dst_site, n.source, n.workflow, n.user_name, n.program, n.host) = "
    "(a.window_start, a.src_site, a.dst_site, a.source, a.workflow, a.user_name, a.program, "
    "a.host))",
    "INSERT INTO attribution_rollup (window_start, src_site, dst_site, source, workflow, "
    "user_name, program, host, bytes) SELECT window_start, src_site, dst_site, source, workflow, "
    "user_name, program, host, bytes FROM wl_rollup_new ON CONFLICT (window_start, src_site, "
    "dst_site, source, workflow, user_name, program, host) DO UPDATE SET bytes = EXCLUDED.bytes "
    "WHERE attribution_rollup.bytes <> EXCLUDED.bytes",
    NULL,
};

/* Runs each statement of a NULL-terminated list, with $1 = window start where used; 0 or -1. */
static int exec_all(PGconn *db, const char *const *params, char *err, size_t errlen,
                    const char *const *sqls)
{
    for (; *sqls; sqls++) {
        int n = strstr(*sqls, "$1") ? 1 : 0;
        PGresult *r = q(db, "writing attribution_rollup", err, errlen, *sqls, n, params);
        if (!r)
            return -1;
        PQclear(r);
    }
    return 0;
}

static int write_results(PGconn *db, const struct cfg *cfg, int64_t ws,
                         const struct recon_result *res, char *err, size_t errlen)
{
    char from[TM_RFC3339_LEN], tsbuf[TM_RFC3339_LEN];
    fmt_ts(from, ws);
    tm_format_rfc3339(ws, tsbuf);
    const char *params[] = {from};
    static const char *const dels[] = {
        "DELETE FROM heatmap_cells WHERE window_start = $1::timestamptz",
        "DELETE FROM link_windows WHERE window_start = $1::timestamptz",
    };
    for (size_t i = 0; i < 2; i++) {
        PGresult *r = q(db, "clearing the window's results", err, errlen, dels[i], 1, params);
        if (!r)
            return -1;
        PQclear(r);
    }
    /* The rollup is the big table (a row per pair and owner): the first reconciliation of a
     * window COPYs it in; later ones merge, touching only the rows that changed. */
    PGresult *er =
        q(db, "reading attribution_rollup", err, errlen,
          "SELECT EXISTS (SELECT 1 FROM attribution_rollup WHERE window_start = $1::timestamptz)",
          1, params);
    if (!er)
        return -1;
    bool merge = PQgetvalue(er, 0, 0)[0] == 't';
    PQclear(er);
    struct sbuf b = {0};
    int rc = -1;
    for (size_t i = 0; i < res->n_cells; i++) {
        const struct recon_cell *c = &res->cells[i];
        sb_printf(&b, "%s\t%d\t", tsbuf, cfg->window_seconds);
        sb_copy_text(&b, site_name(cfg, c->src_site));
        sb_add(&b, "\t", 1);
        sb_copy_text(&b, site_name(cfg, c->dst_site));
        if (c->has_link)
            sb_printf(&b, "\t%" PRIu64 "\t%" PRIu64, c->observed_bytes, c->observed_payload_bytes);
        else
            sb_add(&b, "\t\\N\t\\N", 6);
        sb_printf(&b, "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64, c->attributed_bytes,
                  c->socket_bytes, c->nfs_bytes, c->service_bytes);
        if (c->has_link)
            sb_printf(&b, "\t%" PRIu64, c->unattributed_bytes);
        else
            sb_add(&b, "\t\\N", 3);
        if (c->has_coverage)
            sb_printf(&b, "\t%.17g", c->coverage);
        else
            sb_add(&b, "\t\\N", 3);
        sb_printf(&b, "\t%s\t%.17g\t%" PRIu64 "\n", recon_status_name(c->status), c->valid_fraction,
                  c->capacity_bps);
    }
    if (b.oom)
        goto oom;
    if (copy_in(db,
                "COPY heatmap_cells (window_start, window_seconds, src_site, dst_site, "
                "observed_bytes, observed_payload_bytes, attributed_bytes, socket_bytes, "
                "nfs_bytes, service_bytes, unattributed_bytes, coverage, status, valid_fraction, "
                "capacity_bps) FROM STDIN",
                &b, err, errlen))
        goto cleanup;
    b.n = 0;
    /* binary COPY: the server parses no timestamps or numbers for the biggest table */
    sb_add(&b, "PGCOPY\n\377\r\n\0\0\0\0\0\0\0\0\0", 19);
    int64_t ws_pg = ws - PG_EPOCH_OFFSET_US;
    for (size_t i = 0; i < res->n_rollup; i++) {
        const struct recon_rollup *r = &res->rollup[i];
        const char *fields[] = {site_name(cfg, r->src_site),
                                site_name(cfg, r->dst_site),
                                r->source,
                                r->workflow,
                                r->user,
                                r->program,
                                r->host};
        sb_be(&b, 9, 2);
        sb_be(&b, 8, 4);
        sb_be(&b, (uint64_t)ws_pg, 8);
        for (size_t k = 0; k < 7; k++) {
            size_t len = strlen(fields[k]);
            sb_be(&b, len, 4);
            sb_add(&b, fields[k], len);
        }
        sb_be(&b, 8, 4);
        sb_be(&b, r->bytes, 8);
    }
    sb_be(&b, 0xffff, 2);
    if (b.oom)
        goto oom;
    if (merge && exec_all(db, params, err, errlen, merge_prepare))
        goto cleanup;
    if (copy_in(db,
                merge ? "COPY wl_rollup_new (window_start, src_site, dst_site, source, workflow, "
                        "user_name, program, host, bytes) FROM STDIN (FORMAT binary)"
                      : "COPY attribution_rollup (window_start, src_site, dst_site, source, "
                        "workflow, user_name, program, host, bytes) FROM STDIN (FORMAT binary)",
                &b, err, errlen))
        goto cleanup;
    if (merge && exec_all(db, params, err, errlen, merge_apply))
        goto cleanup;
    b.n = 0;
    for (size_t i = 0; i < res->n_links; i++) {
        const struct recon_link_obs *o = &res->links[i];
        const struct cfg_link *l = &cfg->links[o->link];
        sb_printf(&b, "%s\t", tsbuf);
        const char *fields[] = {o->circuit, site_name(cfg, o->src_site),
                                site_name(cfg, o->dst_site), l->device, l->interface};
        for (size_t k = 0; k < 5; k++) {
            sb_copy_text(&b, fields[k]);
            sb_add(&b, "\t", 1);
        }
        sb_printf(&b, "%s\t%" PRIu64 "\t%" PRIu64 "\t%.17g\t%" PRIu64,
                  o->out_counter ? "out" : "in", o->observed_bytes, o->observed_payload_bytes,
                  o->valid_fraction, o->capacity_bps);
        if (o->has_utilization)
            sb_printf(&b, "\t%.17g\n", o->utilization);
        else
            sb_add(&b, "\t\\N\n", 4);
    }
    if (b.oom)
        goto oom;
    if (copy_in(db,
                "COPY link_windows (window_start, circuit, src_site, dst_site, device, interface, "
                "counter, observed_bytes, observed_payload_bytes, valid_fraction, capacity_bps, "
                "utilization) FROM STDIN",
                &b, err, errlen))
        goto cleanup;
    rc = 0;
    goto cleanup;
oom:
    snprintf(err, errlen, "writing results: out of memory");
cleanup:
    free(b.p);
    return rc;
}

/* ---- alerts ---- */

/* A (kind, pair) whose alerts this window may change. */
struct cand {
    enum alert_kind kind;
    int src, dst;
};

struct stored {
    int64_t id;
    enum alert_kind kind;
    int src, dst;
    struct alert_row row;
    uint64_t peak_unattributed_bytes;
    double peak_ratio;
};

static int add_cand(struct cand **c, size_t *n, size_t *cap, enum alert_kind kind, int src, int dst)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 32;
        struct cand *p = realloc(*c, nc * sizeof *p);
        if (!p)
            return -1;
        *c = p;
        *cap = nc;
    }
    (*c)[(*n)++] = (struct cand){.kind = kind, .src = src, .dst = dst};
    return 0;
}

static int cmp_cand(const void *a, const void *b)
{
    const struct cand *x = a, *y = b;
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    if (x->src != y->src)
        return x->src < y->src ? -1 : 1;
    return (x->dst > y->dst) - (x->dst < y->dst);
}

/* Sorts the candidates and drops duplicates; returns the new count. */
static size_t unique_cands(struct cand *c, size_t n)
{
    if (n == 0)
        return 0;
    qsort(c, n, sizeof *c, cmp_cand);
    size_t k = 1;
    for (size_t i = 1; i < n; i++)
        if (cmp_cand(&c[i], &c[k - 1]) != 0)
            c[k++] = c[i];
    return k;
}

/* The rows of one pair in a history result ordered by (src_site, dst_site, window_start). */
struct span {
    uint64_t pair; /* src << 32 | dst (site indexes) */
    int start, count;
};

static int cmp_span(const void *a, const void *b)
{
    const struct span *x = a, *y = b;
    return (x->pair > y->pair) - (x->pair < y->pair);
}

static uint64_t pair_of(int src, int dst)
{
    return ((uint64_t)(uint32_t)src << 32) | (uint32_t)dst;
}

/* One span per pair of h, sorted by pair for bsearch; NULL on out of memory. */
static struct span *pair_spans(const struct cfg *cfg, const PGresult *h, size_t *n_spans)
{
    int n = PQntuples(h);
    struct span *sp = malloc(((size_t)n + 1) * sizeof *sp);
    if (!sp)
        return NULL;
    size_t k = 0;
    for (int i = 0; i < n; i++) {
        const char *src = PQgetvalue(h, i, 0), *dst = PQgetvalue(h, i, 1);
        if (k && strcmp(src, PQgetvalue(h, i - 1, 0)) == 0 &&
            strcmp(dst, PQgetvalue(h, i - 1, 1)) == 0) {
            sp[k - 1].count++;
            continue;
        }
        sp[k++] = (struct span){.pair = pair_of(cfg_site_index(cfg, src), cfg_site_index(cfg, dst)),
                                .start = i,
                                .count = 1};
    }
    if (k)
        qsort(sp, k, sizeof *sp, cmp_span);
    *n_spans = k;
    return sp;
}

/* The saturation summary of an episode: circuit, capacity and top workflows of its last hit
 * window, read back from link_windows and attribution_rollup (this window's are written). */
static int saturation_summary(PGconn *db, const struct cfg *cfg, const struct cand *c,
                              const struct alert_episode *ep, char *summary, size_t len,
                              char *circuit, size_t circuit_len, char *err, size_t errlen)
{
    char w[TM_RFC3339_LEN];
    fmt_ts(w, ep->last_window_us);
    const char *params[] = {w, site_name(cfg, c->src), site_name(cfg, c->dst)};
    PGresult *lr = q(db, "reading link_windows", err, errlen,
                     "SELECT circuit, capacity_bps FROM link_windows"
                     " WHERE window_start = $1::timestamptz AND src_site = $2 AND dst_site = $3"
                     " ORDER BY utilization DESC NULLS LAST LIMIT 1",
                     3, params);
    if (!lr)
        return -1;
    PGresult *wr = q(db, "reading attribution_rollup", err, errlen,
                     "SELECT workflow, sum(bytes)::bigint, sum(sum(bytes)) OVER ()::bigint"
                     " FROM attribution_rollup"
                     " WHERE window_start = $1::timestamptz AND src_site = $2 AND dst_site = $3"
                     " GROUP BY workflow ORDER BY 2 DESC, 1 LIMIT 3",
                     3, params);
    if (!wr) {
        PQclear(lr);
        return -1;
    }
    struct alert_workflow top[3];
    size_t n_top = 0;
    uint64_t total = 0;
    for (int i = 0; i < PQntuples(wr) && n_top < 3; i++) {
        top[n_top].workflow = PQgetvalue(wr, i, 0);
        top[n_top++].bytes = val_u64(wr, i, 1, NULL);
        total = val_u64(wr, i, 2, NULL);
    }
    const char *circ = PQntuples(lr) ? PQgetvalue(lr, 0, 0) : "";
    uint64_t cap = PQntuples(lr) ? val_u64(lr, 0, 1, NULL) : 0;
    snprintf(circuit, circuit_len, "%s", circ);
    alerts_summary_saturation(summary, len, site_name(cfg, c->src), site_name(cfg, c->dst), circ,
                              ep, cap, top, n_top, total);
    PQclear(lr);
    PQclear(wr);
    return 0;
}

/* The alert row changes of one reconciliation, collected as array literals and written with
 * one statement per kind of change (a few round trips even when thousands of pairs change).
 * Order matters for the one-open-per-(kind, pair) index: withdrawals, then resolutions, then
 * (re)openings and updates of open rows, then new rows. */
enum { B_WITHDRAW, B_RESOLVE, B_KEEP_OPEN, B_INSERT, B_N };

#define B_MAX_COLS 10

struct batch {
    size_t n, cap;
    struct sbuf col[B_MAX_COLS]; /* text[] literals, one per column */
    int64_t *ids;                /* updates: the row; inserts: 0 */
    bool *was_open, *now_open;
};

static int batch_add(struct batch *b, int64_t id, bool was_open, bool now_open,
                     const char *const *vals, size_t n_vals)
{
    if (b->n == b->cap) {
        size_t c = b->cap ? b->cap * 2 : 64;
        int64_t *ids = realloc(b->ids, c * sizeof *ids);
        if (ids)
            b->ids = ids;
        bool *wo = realloc(b->was_open, c * sizeof *wo);
        if (wo)
            b->was_open = wo;
        bool *no = realloc(b->now_open, c * sizeof *no);
        if (no)
            b->now_open = no;
        if (!ids || !wo || !no)
            return -1;
        b->cap = c;
    }
    b->ids[b->n] = id;
    b->was_open[b->n] = was_open;
    b->now_open[b->n] = now_open;
    for (size_t k = 0; k < n_vals; k++) {
        if (b->n == 0)
            sb_add(&b->col[k], "{", 1);
        sb_array_elem(&b->col[k], vals[k], b->n == 0);
    }
    b->n++;
    return 0;
}

static void batch_free(struct batch *b)
{
    for (size_t k = 0; k < B_MAX_COLS; k++)
        free(b->col[k].p);
    free(b->ids);
    free(b->was_open);
    free(b->now_open);
}

/* Queues one action for candidate c (a saturation summary reads the database). */
static int queue_action(PGconn *db, const struct cfg *cfg, const struct cand *c,
                        const struct alert_action *a, const struct alert_episode *eps,
                        const struct stored *rows, struct batch *bs, char *err, size_t errlen)
{
    char id[NUM_LEN];
    if (a->kind == ALERT_WITHDRAW) {
        fmt_i64(id, rows[a->row].id);
        const char *vals[] = {id};
        return batch_add(&bs[B_WITHDRAW], rows[a->row].id, true, false, vals, 1);
    }
    const struct alert_episode *e = &eps[a->episode];
    char summary[1024] = "", circuit[256] = "";
    if (e->n_hits == 0) {
        /* an alert carried on from before the replayed windows, with no hit since: the row
         * keeps its summary ("" below) */
    } else if (c->kind == ALERT_SATURATION) {
        if (saturation_summary(db, cfg, c, e, summary, sizeof summary, circuit, sizeof circuit, err,
                               errlen))
            return -1;
    } else {
        alerts_summary_cells(summary, sizeof summary, c->kind, site_name(cfg, c->src),
                             site_name(cfg, c->dst), e, cfg->window_seconds);
        if (c->kind == ALERT_GAP) /* name the top host pair behind the gap (sampled flows) */
            hm_unrec_note(db, cfg, site_name(cfg, c->src), site_name(cfg, c->dst),
                          e->last_window_us, e->last_window_us + cfg->window_seconds * 1000000LL,
                          summary, sizeof summary);
    }
    char first[TM_RFC3339_LEN], last[TM_RFC3339_LEN], peak[NUM_LEN], ratio[40];
    fmt_ts(first, e->first_window_us);
    fmt_ts(last, e->last_window_us);
    fmt_i64(peak, (int64_t)e->peak_unattributed_bytes);
    snprintf(ratio, sizeof ratio, "%.17g", e->peak_ratio);
    const char *state = e->resolved ? "resolved" : "open";
    if (a->kind == ALERT_INSERT) {
        const char *vals[] = {alerts_kind_name(c->kind),
                              site_name(cfg, c->src),
                              site_name(cfg, c->dst),
                              state,
                              first,
                              last,
                              peak,
                              ratio,
                              summary,
                              circuit};
        return batch_add(&bs[B_INSERT], 0, false, !e->resolved, vals, 10);
    }
    const struct stored *row = &rows[a->row];
    fmt_i64(id, row->id);
    const char *vals[] = {id, state, first, last, peak, ratio, summary, circuit};
    return batch_add(&bs[e->resolved ? B_RESOLVE : B_KEEP_OPEN], row->id, row->row.open,
                     !e->resolved, vals, 8);
}

static const char sql_withdraw[] =
    "UPDATE gap_alerts SET state = 'resolved', resolved_at = now(), resolved_sent = false,"
    "  summary = coalesce(summary, '') || ' (withdrawn: later data cleared its windows)'"
    " WHERE id = ANY ($1::bigint[]) AND state = 'open'"
    " RETURNING id";

/* Only rows that really change are written (and so returned, counted and notified). */
static const char sql_update[] =
    "UPDATE gap_alerts g SET state = u.state,"
    "  resolved_at = CASE WHEN u.state = 'open' THEN NULL"
    "                     WHEN g.state = 'open' THEN now() ELSE g.resolved_at END,"
    "  resolved_sent = CASE WHEN g.state <> u.state THEN false ELSE g.resolved_sent END,"
    "  first_window = least(g.first_window, u.first_window), last_window = u.last_window,"
    "  peak_unattributed_bytes = greatest(g.peak_unattributed_bytes, u.peak),"
    "  peak_ratio = greatest(g.peak_ratio, u.ratio),"
    "  summary = CASE WHEN u.summary = '' THEN g.summary ELSE u.summary END,"
    "  circuit = CASE WHEN u.circuit = '' THEN g.circuit ELSE u.circuit END"
    " FROM unnest($1::bigint[], $2::text[], $3::timestamptz[], $4::timestamptz[],"
    "             $5::bigint[], $6::float8[], $7::text[], $8::text[])"
    "   AS u(id, state, first_window, last_window, peak, ratio, summary, circuit)"
    " WHERE g.id = u.id"
    "  AND (g.state <> u.state OR g.last_window IS DISTINCT FROM u.last_window"
    "       OR g.first_window > u.first_window"
    "       OR (u.summary <> '' AND g.summary IS DISTINCT FROM u.summary)"
    "       OR coalesce(g.peak_unattributed_bytes, -1) < u.peak"
    "       OR coalesce(g.peak_ratio, -1) < u.ratio)"
    " RETURNING g.id";

/* WITH ORDINALITY + ORDER BY: RETURNING follows the queued order. */
static const char sql_insert[] =
    "INSERT INTO gap_alerts (kind, src_site, dst_site, state, opened_at, resolved_at,"
    "  first_window, last_window, peak_unattributed_bytes, peak_ratio, summary, circuit)"
    " SELECT kind, src, dst, state, now(), CASE WHEN state = 'resolved' THEN now() END,"
    "  first_window, last_window, peak, ratio, summary, circuit"
    " FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[],"
    "             $6::timestamptz[], $7::bigint[], $8::float8[], $9::text[], $10::text[])"
    "   WITH ORDINALITY"
    "   AS u(kind, src, dst, state, first_window, last_window, peak, ratio, summary, circuit, i)"
    " ORDER BY i"
    " RETURNING id";

/* Writes the queued changes in order; counts the rows that really changed and NOTIFYs each. */
static int flush_batches(PGconn *db, struct batch *bs, struct recon_db_stats *st, char *err,
                         size_t errlen)
{
    static const int n_cols[B_N] = {
        [B_WITHDRAW] = 1, [B_RESOLVE] = 8, [B_KEEP_OPEN] = 8, [B_INSERT] = 10};
    static const char *const sqls[B_N] = {[B_WITHDRAW] = sql_withdraw,
                                          [B_RESOLVE] = sql_update,
                                          [B_KEEP_OPEN] = sql_update,
                                          [B_INSERT] = sql_insert};
    struct sbuf ids = {0};
    size_t n_ids = 0;
    int rc = -1;
    sb_add(&ids, "{", 1);
    for (int k = 0; k < B_N; k++) {
        struct batch *b = &bs[k];
        if (b->n == 0)
            continue;
        const char *params[B_MAX_COLS];
        for (int c = 0; c < n_cols[k]; c++) {
            sb_add(&b->col[c], "}", 1);
            if (b->col[c].oom)
                goto oom;
            params[c] = b->col[c].p;
        }
        PGresult *r = q(db, "writing gap_alerts", err, errlen, sqls[k], n_cols[k], params);
        if (!r)
            goto cleanup;
        for (int i = 0; i < PQntuples(r); i++) {
            int64_t id = val_i64(r, i, 0, 0);
            size_t j = (size_t)i;
            if (k != B_INSERT)
                for (j = 0; j < b->n && b->ids[j] != id; j++)
                    ;
            bool was_open = j < b->n && b->was_open[j], now_open = j < b->n && b->now_open[j];
            if (!was_open && now_open)
                st->n_alerts_opened++;
            else if (was_open && !now_open)
                st->n_alerts_resolved++;
            else if (k == B_INSERT)
                st->n_alerts_resolved++; /* a past episode that late data revealed, over */
            else
                st->n_alerts_updated++;
            sb_array_elem(&ids, PQgetvalue(r, i, 0), n_ids++ == 0);
        }
        PQclear(r);
    }
    sb_add(&ids, "}", 1);
    if (ids.oom)
        goto oom;
    if (n_ids) {
        const char *params[] = {ids.p};
        PGresult *r = q(db, "NOTIFY wanledger_alerts", err, errlen,
                        "SELECT pg_notify('wanledger_alerts', id::text)"
                        " FROM unnest($1::bigint[]) AS id",
                        1, params);
        if (!r)
            goto cleanup;
        PQclear(r);
    }
    rc = 0;
    goto cleanup;
oom:
    snprintf(err, errlen, "writing gap_alerts: out of memory");
cleanup:
    free(ids.p);
    return rc;
}

/* Re-evaluates the alerts of every candidate from its stored history. */
static int evaluate_alerts(PGconn *db, const struct cfg *cfg, int64_t ws,
                           const struct recon_result *res, struct recon_db_stats *st, char *err,
                           size_t errlen)
{
    int rc = -1;
    int64_t W = (int64_t)cfg->window_seconds * TM_USEC_PER_SEC;
    /* far enough back to see a run of alert_windows hits or resolve_windows clears through
     * some incomplete windows */
    int64_t margin = (int64_t)(cfg->alert_windows + cfg->resolve_windows + 2) * 4 * W;
    struct cand *cands = NULL;
    size_t n_cands = 0, cap_cands = 0;
    struct stored *rows = NULL;
    PGresult *rr = NULL, *hr = NULL, *sr = NULL;
    struct alert_window *hist = NULL;
    struct alert_episode *eps = NULL;
    struct alert_action *acts = NULL;
    struct alert_row *crow = NULL;
    struct stored *crow_full = NULL;
    struct span *cell_spans = NULL, *sat_spans = NULL;
    struct batch batches[B_N];
    memset(batches, 0, sizeof batches);
    size_t n_cell_spans = 0, n_sat_spans = 0;
    struct sbuf srcs = {0}, dsts = {0}, kinds = {0};

    /* History is replayed from `since` on; an alert open since before then carries on from its
     * row. The rows it can touch: open ones, and any that end at or after `since`. */
    int64_t since = ws - margin;
    char lo[TM_RFC3339_LEN];
    fmt_ts(lo, since);
    const char *p1[] = {lo};
    static const char rows_sql[] =
        "SELECT id, kind, src_site, dst_site, state = 'open',"
        " (extract(epoch from first_window) * 1000000)::bigint,"
        " (extract(epoch from last_window) * 1000000)::bigint,"
        " coalesce(peak_unattributed_bytes, 0), coalesce(peak_ratio, 0)"
        " FROM gap_alerts WHERE state = 'open' OR last_window >= $1::timestamptz"
        " ORDER BY first_window, id";
    rr = q(db, "reading gap_alerts", err, errlen, rows_sql, 1, p1);
    if (!rr)
        goto cleanup;
    int n_rows = PQntuples(rr);
    rows = calloc((size_t)n_rows + 1, sizeof *rows);
    if (!rows)
        goto oom;
    size_t nr = 0;
    for (int i = 0; i < n_rows; i++) {
        int kind = alerts_kind_parse(PQgetvalue(rr, i, 1));
        int src = cfg_site_index(cfg, PQgetvalue(rr, i, 2));
        int dst = cfg_site_index(cfg, PQgetvalue(rr, i, 3));
        if (kind < 0 || src < 0 || dst < 0)
            continue; /* a site no longer configured: its alerts stay as they are */
        struct stored *s = &rows[nr++];
        s->kind = (enum alert_kind)kind;
        s->src = src;
        s->dst = dst;
        s->id = s->row.id = val_i64(rr, i, 0, 0);
        s->row.open = PQgetvalue(rr, i, 4)[0] == 't';
        s->row.first_window_us = val_i64(rr, i, 5, ws);
        s->row.last_window_us = val_i64(rr, i, 6, ws);
        s->peak_unattributed_bytes = val_u64(rr, i, 7, NULL);
        s->peak_ratio = strtod(PQgetvalue(rr, i, 8), NULL);
        if (s->row.open && add_cand(&cands, &n_cands, &cap_cands, s->kind, src, dst))
            goto oom;
    }
    /* this window's hits */
    for (size_t i = 0; i < res->n_cells; i++) {
        const struct recon_cell *c = &res->cells[i];
        for (int k = ALERT_GAP; k <= ALERT_OVER; k++)
            if (alerts_mark_cell((enum alert_kind)k, c->status) == ALERT_HIT &&
                add_cand(&cands, &n_cands, &cap_cands, (enum alert_kind)k, c->src_site,
                         c->dst_site))
                goto oom;
    }
    for (size_t i = 0; i < res->n_links; i++) {
        const struct recon_link_obs *o = &res->links[i];
        if (alerts_mark_saturation(cfg, o, 1) == ALERT_HIT &&
            add_cand(&cands, &n_cands, &cap_cands, ALERT_SATURATION, o->src_site, o->dst_site))
            goto oom;
    }
    n_cands = unique_cands(cands, n_cands);
    if (n_cands == 0) {
        rc = 0;
        goto cleanup;
    }

    /* the candidates' histories, oldest first */
    sb_add(&srcs, "{", 1);
    sb_add(&dsts, "{", 1);
    sb_add(&kinds, "{", 1);
    for (size_t i = 0; i < n_cands; i++) {
        sb_array_elem(&srcs, site_name(cfg, cands[i].src), i == 0);
        sb_array_elem(&dsts, site_name(cfg, cands[i].dst), i == 0);
        sb_array_elem(&kinds, alerts_kind_name(cands[i].kind), i == 0);
    }
    sb_add(&srcs, "}", 1);
    sb_add(&dsts, "}", 1);
    sb_add(&kinds, "}", 1);
    if (srcs.oom || dsts.oom || kinds.oom)
        goto oom;
    char sinces[TM_RFC3339_LEN];
    fmt_ts(sinces, since);
    const char *p2[] = {srcs.p, dsts.p, kinds.p, sinces};
    static const char cells_sql[] =
        "WITH c(src_site, dst_site, kind) AS ("
        "  SELECT * FROM unnest($1::text[], $2::text[], $3::text[]))"
        " SELECT DISTINCT ON (h.src_site, h.dst_site, h.window_start)"
        "  h.src_site, h.dst_site, (extract(epoch FROM h.window_start) * 1000000)::bigint,"
        "  h.status, coalesce(h.unattributed_bytes, 0), coalesce(h.observed_payload_bytes, 0),"
        "  h.coverage"
        " FROM heatmap_cells h JOIN c USING (src_site, dst_site)"
        " WHERE c.kind IN ('gap', 'over') AND h.window_start >= $4::timestamptz"
        " ORDER BY h.src_site, h.dst_site, h.window_start";
    hr = q(db, "reading cell history", err, errlen, cells_sql, 4, p2);
    if (!hr)
        goto cleanup;
    char sat[40], minvalid[40];
    snprintf(sat, sizeof sat, "%.17g", cfg->saturation);
    snprintf(minvalid, sizeof minvalid, "%.17g", RECON_MIN_VALID_FRACTION);
    const char *p3[] = {srcs.p, dsts.p, kinds.p, sinces, sat, minvalid};
    static const char links_sql[] =
        "WITH c(src_site, dst_site, kind) AS ("
        "  SELECT * FROM unnest($1::text[], $2::text[], $3::text[]) AS u(src_site, dst_site, kind)"
        "  WHERE u.kind = 'saturation')"
        " SELECT l.src_site, l.dst_site, (extract(epoch FROM l.window_start) * 1000000)::bigint,"
        "  CASE WHEN bool_or(l.valid_fraction >= $6::float8 AND l.utilization > $5::float8)"
        "       THEN 'hit'"
        "       WHEN bool_or(l.valid_fraction >= $6::float8) THEN 'clear'"
        "       ELSE 'neutral' END,"
        "  coalesce(max(l.utilization) FILTER (WHERE l.valid_fraction >= $6::float8), 0),"
        "  sum(l.observed_payload_bytes)::bigint"
        " FROM link_windows l JOIN c USING (src_site, dst_site)"
        " WHERE l.window_start >= $4::timestamptz"
        " GROUP BY l.src_site, l.dst_site, l.window_start"
        " ORDER BY l.src_site, l.dst_site, l.window_start";
    sr = q(db, "reading link history", err, errlen, links_sql, 6, p3);
    if (!sr)
        goto cleanup;
    size_t max_hist = (size_t)PQntuples(hr) + (size_t)PQntuples(sr) + 1;
    hist = calloc(max_hist, sizeof *hist);
    eps = calloc(max_hist, sizeof *eps);
    crow = calloc(nr + 1, sizeof *crow);
    crow_full = calloc(nr + 1, sizeof *crow_full);
    acts = calloc(max_hist + nr + 1, sizeof *acts);
    cell_spans = pair_spans(cfg, hr, &n_cell_spans);
    sat_spans = pair_spans(cfg, sr, &n_sat_spans);
    if (!hist || !eps || !crow || !crow_full || !acts || !cell_spans || !sat_spans)
        goto oom;
    for (size_t ci = 0; ci < n_cands; ci++) {
        const struct cand *c = &cands[ci];
        const PGresult *h = c->kind == ALERT_SATURATION ? sr : hr;
        struct span key = {.pair = pair_of(c->src, c->dst)};
        const struct span *sp =
            c->kind == ALERT_SATURATION
                ? (n_sat_spans ? bsearch(&key, sat_spans, n_sat_spans, sizeof key, cmp_span) : NULL)
                : (n_cell_spans ? bsearch(&key, cell_spans, n_cell_spans, sizeof key, cmp_span)
                                : NULL);
        size_t n = 0;
        for (int i = sp ? sp->start : 0; sp && i < sp->start + sp->count; i++) {
            struct alert_window *w = &hist[n++];
            memset(w, 0, sizeof *w);
            w->window_start_us = val_i64(h, i, 2, 0);
            if (c->kind == ALERT_SATURATION) {
                const char *m = PQgetvalue(h, i, 3);
                w->mark = m[0] == 'h' ? ALERT_HIT : m[0] == 'c' ? ALERT_CLEAR : ALERT_NEUTRAL;
                w->ratio = strtod(PQgetvalue(h, i, 4), NULL);
                w->observed_payload_bytes = val_u64(h, i, 5, NULL);
            } else {
                int status = recon_status_parse(PQgetvalue(h, i, 3));
                w->mark = status < 0 ? ALERT_NEUTRAL
                                     : alerts_mark_cell(c->kind, (enum recon_status)status);
                w->unattributed_bytes = val_u64(h, i, 4, NULL);
                w->observed_payload_bytes = val_u64(h, i, 5, NULL);
                bool has_cov;
                double cov = PQgetisnull(h, i, 6) ? 0 : strtod(PQgetvalue(h, i, 6), NULL);
                has_cov = !PQgetisnull(h, i, 6);
                w->ratio = c->kind == ALERT_GAP ? (has_cov ? 1 - cov : 0) : cov;
            }
        }
        size_t n_crow = 0;
        struct alert_episode before, *open_before = NULL;
        for (size_t i = 0; i < nr; i++) {
            if (rows[i].kind != c->kind || rows[i].src != c->src || rows[i].dst != c->dst)
                continue;
            crow_full[n_crow] = rows[i];
            crow[n_crow++] = rows[i].row;
            if (rows[i].row.open && rows[i].row.first_window_us < since) {
                /* n_hits = 0 marks "no figures of its own": the row keeps its summary */
                memset(&before, 0, sizeof before);
                before.first_window_us = before.opened_window_us = rows[i].row.first_window_us;
                before.last_window_us = rows[i].row.last_window_us;
                before.peak_unattributed_bytes = rows[i].peak_unattributed_bytes;
                before.peak_ratio = rows[i].peak_ratio;
                open_before = &before;
            }
        }
        size_t n_eps = alerts_replay(cfg->alert_windows, cfg->resolve_windows, hist, n, open_before,
                                     eps, max_hist);
        size_t n_acts = alerts_match(eps, n_eps, crow, n_crow, acts);
        for (size_t i = 0; i < n_acts; i++)
            if (queue_action(db, cfg, c, &acts[i], eps, crow_full, batches, err, errlen))
                goto cleanup;
    }
    if (flush_batches(db, batches, st, err, errlen))
        goto cleanup;
    rc = 0;
    goto cleanup;
oom:
    snprintf(err, errlen, "evaluating alerts: out of memory");
cleanup:
    PQclear(rr);
    PQclear(hr);
    PQclear(sr);
    free(rows);
    free(cands);
    free(hist);
    free(eps);
    free(acts);
    free(crow);
    free(crow_full);
    free(cell_spans);
    free(sat_spans);
    for (int k = 0; k < B_N; k++)
        batch_free(&batches[k]);
    free(srcs.p);
    free(dsts.p);
    free(kinds.p);
    return rc;
}

/* ---- the public entry points ---- */

int recon_db_reconcile_window(PGconn *db, const struct cfg *cfg, int64_t window_start_us,
                              struct recon_db_stats *st, char *err, size_t errlen)
{
    struct recon_db_stats local;
    if (!st)
        st = &local;
    memset(st, 0, sizeof *st);
    st->window_start_us = window_start_us;
    st->seen_last_data_at_us = INT64_MIN;
    if (!tm_is_aligned(window_start_us, cfg->window_seconds)) {
        snprintf(err, errlen, "reconcile: window_start %" PRId64 " us is not a multiple of %d s",
                 window_start_us, cfg->window_seconds);
        return -1;
    }
    struct inputs in;
    memset(&in, 0, sizeof in);
    struct recon_result res;
    memset(&res, 0, sizeof res);
    int rc = -1;
    bool in_tx = false;
    int64_t t0 = tm_mono_ns();
    PGresult *r = q(db, "BEGIN", err, errlen, "BEGIN", 0, NULL);
    if (!r)
        return -1;
    PQclear(r);
    in_tx = true;
    /* one reconciliation at a time: alert rows are read, then written */
    r = q(db, "locking", err, errlen,
          "SELECT pg_advisory_xact_lock(hashtext('wanledger.reconcile'))", 0, NULL);
    if (!r)
        goto cleanup;
    PQclear(r);
    char from[TM_RFC3339_LEN];
    fmt_ts(from, window_start_us);
    const char *p1[] = {from};
    /* read before the inputs: data committed after this keeps the window dirty */
    r = q(db, "reading window_state", err, errlen,
          "SELECT (extract(epoch from last_data_at) * 1000000)::bigint FROM window_state WHERE "
          "window_start = $1::timestamptz",
          1, p1);
    if (!r)
        goto cleanup;
    if (PQntuples(r))
        st->seen_last_data_at_us = val_i64(r, 0, 0, INT64_MIN);
    PQclear(r);
    if (load_samples(db, cfg, window_start_us, &in, err, errlen) ||
        load_flows(db, window_start_us, &in, err, errlen) ||
        load_transfers(db, cfg, window_start_us, &in, err, errlen))
        goto cleanup;
    st->n_samples = in.n_samples;
    st->n_flows = in.n_flows;
    st->n_transfers = in.n_transfers;
    int64_t t1 = tm_mono_ns();
    struct recon_input ri = {.window_start_us = window_start_us,
                             .samples = in.samples,
                             .n_samples = in.n_samples,
                             .flows = in.flows,
                             .n_flows = in.n_flows,
                             .transfers = in.transfers,
                             .n_transfers = in.n_transfers};
    if (recon_run(cfg, &ri, &res, err, errlen))
        goto cleanup;
    int64_t t2 = tm_mono_ns();
    st->n_cells = res.n_cells;
    st->n_rollup = res.n_rollup;
    st->n_link_windows = res.n_links;
    st->n_unmapped = res.n_unmapped;
    if (write_results(db, cfg, window_start_us, &res, err, errlen))
        goto cleanup;
    int64_t t3 = tm_mono_ns();
    if (evaluate_alerts(db, cfg, window_start_us, &res, st, err, errlen))
        goto cleanup;
    int64_t t4 = tm_mono_ns();
    r = q(db, "COMMIT", err, errlen, "COMMIT", 0, NULL);
    if (!r)
        goto cleanup;
    PQclear(r);
    in_tx = false;
    st->load_us = (t1 - t0) / 1000;
    st->compute_us = ((t2 - t1) + (t4 - t3)) / 1000;
    st->write_us = ((t3 - t2) + (tm_mono_ns() - t4)) / 1000;
    rc = 0;
cleanup:
    if (in_tx) {
        PGresult *rb = PQexec(db, "ROLLBACK");
        PQclear(rb);
    }
    recon_result_free(&res);
    inputs_free(&in);
    return rc;
}

int recon_db_pending_windows(PGconn *db, const struct cfg *cfg, int64_t now_us, int64_t *out,
                             size_t max, size_t *n, char *err, size_t errlen)
{
    *n = 0;
    int64_t W = (int64_t)cfg->window_seconds * TM_USEC_PER_SEC;
    /* the newest window whose grace has passed: start + W + grace <= now */
    int64_t upper = tm_window_start(now_us - W - (int64_t)cfg->grace_seconds * TM_USEC_PER_SEC,
                                    cfg->window_seconds);
    char up[TM_RFC3339_LEN], lo[TM_RFC3339_LEN], ws[NUM_LEN], lim[NUM_LEN];
    fmt_ts(up, upper);
    fmt_ts(lo, now_us - 86400 * TM_USEC_PER_SEC);
    snprintf(ws, sizeof ws, "%d", cfg->window_seconds);
    snprintf(lim, sizeof lim, "%zu", max);
    const char *params[] = {up, lo, ws, lim};
    /* A counter sample also feeds the window before its own (its interval reaches back). */
    static const char sql[] =
        "WITH b AS ("
        "  SELECT greatest(coalesce((SELECT max(window_start) FROM window_state"
        "                            WHERE reconciled_at IS NOT NULL), $2::timestamptz),"
        "                  $2::timestamptz) AS lo),"
        " sample_ws(ws) AS ("
        "  SELECT DISTINCT to_timestamp(floor(extract(epoch FROM s.at) / $3::int) * $3::int)"
        "  FROM counter_samples s, b"
        "  WHERE s.at >= b.lo AND s.at < $1::timestamptz + 2 * $3::int * interval '1 second'),"
        " raw(ws) AS ("
        "  SELECT ws FROM sample_ws"
        "  UNION SELECT ws - $3::int * interval '1 second' FROM sample_ws"
        "  UNION SELECT DISTINCT f.window_start FROM flow_reports f, b"
        "   WHERE f.window_start >= b.lo AND f.window_start <= $1::timestamptz"
        "  UNION SELECT DISTINCT to_timestamp(floor(extract(epoch FROM t.start_at) / $3::int)"
        "                                    * $3::int)"
        "   FROM transfers t, b WHERE t.start_at >= b.lo AND t.start_at <= $1::timestamptz),"
        " due(ws) AS ("
        "  SELECT ws FROM raw, b WHERE ws >= b.lo AND ws <= $1::timestamptz"
        "   AND NOT EXISTS (SELECT 1 FROM window_state w WHERE w.window_start = raw.ws)"
        "  UNION SELECT window_start FROM window_state"
        "   WHERE dirty AND window_start <= $1::timestamptz)"
        " SELECT (extract(epoch FROM ws) * 1000000)::bigint FROM due ORDER BY ws LIMIT $4::bigint";
    PGresult *r = q(db, "finding pending windows", err, errlen, sql, 4, params);
    if (!r)
        return -1;
    for (int i = 0; i < PQntuples(r) && *n < max; i++) {
        int64_t w = val_i64(r, i, 0, 0);
        if (tm_is_aligned(w, cfg->window_seconds))
            out[(*n)++] = w;
    }
    PQclear(r);
    return 0;
}

int recon_db_mark_done(PGconn *db, const struct cfg *cfg, int64_t window_start_us,
                       int64_t seen_last_data_at_us, char *err, size_t errlen)
{
    char w[TM_RFC3339_LEN], seen[NUM_LEN], secs[NUM_LEN];
    fmt_ts(w, window_start_us);
    fmt_i64(seen, seen_last_data_at_us);
    snprintf(secs, sizeof secs, "%d", cfg->window_seconds);
    const char *params[] = {w, secs, seen_last_data_at_us == INT64_MIN ? NULL : seen};
    static const char sql[] =
        "INSERT INTO window_state (window_start, window_seconds, dirty, reconciled_at)"
        " VALUES ($1::timestamptz, $2::int, false, now())"
        " ON CONFLICT (window_start) DO UPDATE SET reconciled_at = now(),"
        "  dirty = CASE WHEN $3::bigint IS NOT NULL AND"
        "                    (extract(epoch FROM window_state.last_data_at) * 1000000)::bigint"
        "                    = $3::bigint"
        "          THEN false ELSE window_state.dirty END";
    PGresult *r = q(db, "marking the window reconciled", err, errlen, sql, 3, params);
    if (!r)
        return -1;
    PQclear(r);
    return 0;
}
