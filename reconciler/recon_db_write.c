/* Writing one window's results: heatmap_cells, attribution_rollup and link_windows. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recon_db_internal.h"

const char *rdb_site_name(const struct cfg *cfg, int i)
{
    return cfg->sites[i].name;
}

/* The columns of a rollup row, in the order fill_rollup writes them (the owner: sql/001, 015). */
#define ROLLUP_COLS                                                                                \
    "window_start, src_site, dst_site, source, workflow, user_name, program, host, bytes, "        \
    "namespace, pod, container_name"

static const char *const merge_prepare[] = {
    "CREATE TEMP TABLE IF NOT EXISTS wl_rollup_new (LIKE attribution_rollup) "
    "ON COMMIT DELETE ROWS",
    "TRUNCATE wl_rollup_new",
    NULL,
};

static const char *const merge_apply[] = {
    "DELETE FROM attribution_rollup a WHERE a.window_start = $1::timestamptz AND NOT EXISTS "
    "(SELECT 1 FROM wl_rollup_new n WHERE (n.window_start, "
    "n.src_site, n.dst_site, n.source, n.workflow, n.user_name, n.program, n.host, n.namespace, "
    "n.pod, n.container_name) = (a.window_start, a.src_site, a.dst_site, a.source, a.workflow, "
    "a.user_name, a.program, a.host, a.namespace, a.pod, a.container_name))",
    "INSERT INTO attribution_rollup (" ROLLUP_COLS ") SELECT " ROLLUP_COLS
    " FROM wl_rollup_new ON CONFLICT (window_start, src_site, dst_site, source, workflow, "
    "user_name, program, host, namespace, pod, container_name) DO UPDATE SET bytes = "
    "EXCLUDED.bytes WHERE attribution_rollup.bytes <> EXCLUDED.bytes",
    NULL,
};

/* Runs each statement of a NULL-terminated list, with $1 = window start where used; 0 or -1. */
static int exec_all(PGconn *db, const char *const *params, char *err, size_t errlen,
                    const char *const *sqls)
{
    for (; *sqls; sqls++) {
        int n = strstr(*sqls, "$1") ? 1 : 0;
        PGresult *r = rdb_q(db, "writing attribution_rollup", err, errlen, *sqls, n, params);
        if (!r)
            return -1;
        PQclear(r);
    }
    return 0;
}

/* The window's cells as COPY text rows of heatmap_cells. */
static void fill_cells(struct rdb_sbuf *b, const struct cfg *cfg, const char *tsbuf,
                       const struct recon_result *res)
{
    for (size_t i = 0; i < res->n_cells; i++) {
        const struct recon_cell *c = &res->cells[i];
        rdb_sb_printf(b, "%s\t%d\t", tsbuf, cfg->window_seconds);
        rdb_sb_copy_text(b, rdb_site_name(cfg, c->src_site));
        rdb_sb_add(b, "\t", 1);
        rdb_sb_copy_text(b, rdb_site_name(cfg, c->dst_site));
        if (c->has_link)
            rdb_sb_printf(b, "\t%" PRIu64 "\t%" PRIu64, c->observed_bytes,
                          c->observed_payload_bytes);
        else
            rdb_sb_add(b, "\t\\N\t\\N", 6);
        rdb_sb_printf(b, "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64, c->attributed_bytes,
                      c->socket_bytes, c->nfs_bytes, c->service_bytes);
        if (c->has_link)
            rdb_sb_printf(b, "\t%" PRIu64, c->unattributed_bytes);
        else
            rdb_sb_add(b, "\t\\N", 3);
        if (c->has_coverage)
            rdb_sb_printf(b, "\t%.17g", c->coverage);
        else
            rdb_sb_add(b, "\t\\N", 3);
        rdb_sb_printf(b, "\t%s\t%.17g\t%" PRIu64 "\n", recon_status_name(c->status),
                      c->valid_fraction, c->capacity_bps);
    }
}

/* The window's rollup as binary COPY data of attribution_rollup. */
static void fill_rollup(struct rdb_sbuf *b, const struct cfg *cfg, int64_t ws,
                        const struct recon_result *res)
{
    /* binary COPY: the server parses no timestamps or numbers for the biggest table */
    rdb_sb_add(b, "PGCOPY\n\377\r\n\0\0\0\0\0\0\0\0\0", 19);
    int64_t ws_pg = ws - RDB_PG_EPOCH_OFFSET_US;
    for (size_t i = 0; i < res->n_rollup; i++) {
        const struct recon_rollup *r = &res->rollup[i];
        const char *fields[] = {rdb_site_name(cfg, r->src_site),
                                rdb_site_name(cfg, r->dst_site),
                                r->source,
                                r->workflow,
                                r->user,
                                r->program,
                                r->host};
        const char *kube[] = {r->kube.ns, r->kube.pod, r->kube.container};
        rdb_sb_be(b, 12, 2);
        rdb_sb_be(b, 8, 4);
        rdb_sb_be(b, (uint64_t)ws_pg, 8);
        for (size_t k = 0; k < 7; k++) {
            size_t len = strlen(fields[k]);
            rdb_sb_be(b, len, 4);
            rdb_sb_add(b, fields[k], len);
        }
        rdb_sb_be(b, 8, 4);
        rdb_sb_be(b, r->bytes, 8);
        for (size_t k = 0; k < 3; k++) {
            size_t len = strlen(kube[k]);
            rdb_sb_be(b, len, 4);
            rdb_sb_add(b, kube[k], len);
        }
    }
    rdb_sb_be(b, 0xffff, 2);
}

/* The window's circuit directions as COPY text rows of link_windows. */
static void fill_links(struct rdb_sbuf *b, const struct cfg *cfg, const char *tsbuf,
                       const struct recon_result *res)
{
    for (size_t i = 0; i < res->n_links; i++) {
        const struct recon_link_obs *o = &res->links[i];
        const struct cfg_link *l = &cfg->links[o->link];
        rdb_sb_printf(b, "%s\t", tsbuf);
        const char *fields[] = {o->circuit, rdb_site_name(cfg, o->src_site),
                                rdb_site_name(cfg, o->dst_site), l->device, l->interface};
        for (size_t k = 0; k < 5; k++) {
            rdb_sb_copy_text(b, fields[k]);
            rdb_sb_add(b, "\t", 1);
        }
        rdb_sb_printf(b, "%s\t%" PRIu64 "\t%" PRIu64 "\t%.17g\t%" PRIu64,
                      o->out_counter ? "out" : "in", o->observed_bytes, o->observed_payload_bytes,
                      o->valid_fraction, o->capacity_bps);
        if (o->has_utilization)
            rdb_sb_printf(b, "\t%.17g\n", o->utilization);
        else
            rdb_sb_add(b, "\t\\N\n", 4);
    }
}

int rdb_write_results(PGconn *db, const struct cfg *cfg, int64_t ws, const struct recon_result *res,
                      char *err, size_t errlen)
{
    char from[TM_RFC3339_LEN], tsbuf[TM_RFC3339_LEN];
    rdb_fmt_ts(from, ws);
    tm_format_rfc3339(ws, tsbuf);
    const char *params[] = {from};
    static const char *const dels[] = {
        "DELETE FROM heatmap_cells WHERE window_start = $1::timestamptz",
        "DELETE FROM link_windows WHERE window_start = $1::timestamptz",
    };
    for (size_t i = 0; i < 2; i++) {
        PGresult *r = rdb_q(db, "clearing the window's results", err, errlen, dels[i], 1, params);
        if (!r)
            return -1;
        PQclear(r);
    }
    /* The rollup is the big table (a row per pair and owner): the first reconciliation of a
     * window COPYs it in; later ones merge, touching only the rows that changed. */
    PGresult *er = rdb_q(
        db, "reading attribution_rollup", err, errlen,
        "SELECT EXISTS (SELECT 1 FROM attribution_rollup WHERE window_start = $1::timestamptz)", 1,
        params);
    if (!er)
        return -1;
    bool merge = PQgetvalue(er, 0, 0)[0] == 't';
    PQclear(er);
    struct rdb_sbuf b = {0};
    int rc = -1;
    fill_cells(&b, cfg, tsbuf, res);
    if (b.oom)
        goto oom;
    if (rdb_copy_in(
            db,
            "COPY heatmap_cells (window_start, window_seconds, src_site, dst_site, "
            "observed_bytes, observed_payload_bytes, attributed_bytes, socket_bytes, "
            "nfs_bytes, service_bytes, unattributed_bytes, coverage, status, valid_fraction, "
            "capacity_bps) FROM STDIN",
            &b, err, errlen))
        goto cleanup;
    b.n = 0;
    fill_rollup(&b, cfg, ws, res);
    if (b.oom)
        goto oom;
    if (merge && exec_all(db, params, err, errlen, merge_prepare))
        goto cleanup;
    if (rdb_copy_in(db,
                    merge ? "COPY wl_rollup_new (" ROLLUP_COLS ") FROM STDIN (FORMAT binary)"
                          : "COPY attribution_rollup (" ROLLUP_COLS ") FROM STDIN (FORMAT binary)",
                    &b, err, errlen))
        goto cleanup;
    if (merge && exec_all(db, params, err, errlen, merge_apply))
        goto cleanup;
    b.n = 0;
    fill_links(&b, cfg, tsbuf, res);
    if (b.oom)
        goto oom;
    if (rdb_copy_in(
            db,
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
