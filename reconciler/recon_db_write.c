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

int rdb_site_cmp(const struct cfg *cfg, int a, int b)
{
    return a == b ? 0 : strcmp(rdb_site_name(cfg, a), rdb_site_name(cfg, b));
}

/* The window's cells as COPY text rows of heatmap_cells; true when they come in the primary
 * key's order (recon.c sorts them by site index: so whenever the configuration lists the sites
 * in name order; strcmp's byte order is the code point order of the C.UTF-8 databases). */
static bool fill_cells(struct rdb_sbuf *b, const struct cfg *cfg, const char *tsbuf,
                       const struct recon_result *res)
{
    bool ordered = true;
    for (size_t i = 0; i < res->n_cells; i++) {
        const struct recon_cell *c = &res->cells[i];
        if (i && ordered) {
            const struct recon_cell *p = &res->cells[i - 1];
            int o = rdb_site_cmp(cfg, p->src_site, c->src_site);
            ordered = (o ? o : rdb_site_cmp(cfg, p->dst_site, c->dst_site)) < 0;
        }
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
    return ordered;
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

#define CELL_COLS                                                                                  \
    "window_start, window_seconds, src_site, dst_site, observed_bytes, observed_payload_bytes, "   \
    "attributed_bytes, socket_bytes, nfs_bytes, service_bytes, unattributed_bytes, coverage, "     \
    "status, valid_fraction, capacity_bps"

#define CELLS_HOURLY_UPSERT                                                                        \
    " ON CONFLICT (hour_start, src_site, dst_site) DO UPDATE SET "                                 \
    "windows = h.windows + EXCLUDED.windows, seconds = h.seconds + EXCLUDED.seconds, "             \
    "observed_bytes = h.observed_bytes + EXCLUDED.observed_bytes, "                                \
    "observed_payload_bytes = h.observed_payload_bytes + EXCLUDED.observed_payload_bytes, "        \
    "attributed_bytes = h.attributed_bytes + EXCLUDED.attributed_bytes, "                          \
    "socket_bytes = h.socket_bytes + EXCLUDED.socket_bytes, "                                      \
    "nfs_bytes = h.nfs_bytes + EXCLUDED.nfs_bytes, "                                               \
    "service_bytes = h.service_bytes + EXCLUDED.service_bytes, "                                   \
    "unattributed_bytes = h.unattributed_bytes + EXCLUDED.unattributed_bytes, "                    \
    "n_ok = h.n_ok + EXCLUDED.n_ok, n_warn = h.n_warn + EXCLUDED.n_warn, "                         \
    "n_red = h.n_red + EXCLUDED.n_red, n_over = h.n_over + EXCLUDED.n_over, "                      \
    "n_idle = h.n_idle + EXCLUDED.n_idle, n_incomplete = h.n_incomplete + EXCLUDED.n_incomplete, " \
    "n_no_counter = h.n_no_counter + EXCLUDED.n_no_counter"

/* The byte sums and seconds leave out the incomplete windows (sql/026, wl_known). */
#define KNOWN_SUM(col) "coalesce(sum(wl_sign * " col ") FILTER (WHERE wl_known(status)), 0)"

/* The signed rows' sums per hour and pair, added to heatmap_cells_hourly (sql/013's columns).
 * In key order: the btree's pages are then visited once each (without the sort the 1 M window's
 * owner upsert took 20.4 s instead of 8.5 s in bench_fleet), and concurrent writers lock rows in
 * one order as 013's triggers do. */
/* clang-format off */
static const char cells_hourly[] =
    "INSERT INTO heatmap_cells_hourly AS h SELECT date_bin('1 hour', window_start, timestamptz "
    "'epoch'), src_site, dst_site, sum(wl_sign), " KNOWN_SUM("window_seconds") ", "
    KNOWN_SUM("observed_bytes") ", " KNOWN_SUM("observed_payload_bytes") ", "
    KNOWN_SUM("attributed_bytes") ", " KNOWN_SUM("socket_bytes") ", " KNOWN_SUM("nfs_bytes") ", "
    KNOWN_SUM("service_bytes") ", " KNOWN_SUM("unattributed_bytes") ", "
    "coalesce(sum(wl_sign) FILTER (WHERE status = 'ok'), 0), "
    "coalesce(sum(wl_sign) FILTER (WHERE status = 'warn'), 0), "
    "coalesce(sum(wl_sign) FILTER (WHERE status = 'red'), 0), "
    "coalesce(sum(wl_sign) FILTER (WHERE status = 'over'), 0), "
    "coalesce(sum(wl_sign) FILTER (WHERE status = 'idle'), 0), "
    "coalesce(sum(wl_sign) FILTER (WHERE status = 'incomplete'), 0), "
    "coalesce(sum(wl_sign) FILTER (WHERE status = 'no_counter'), 0) "
    "FROM %s GROUP BY 1, 2, 3 ORDER BY 1, 2, 3" CELLS_HOURLY_UPSERT;
/* clang-format on */

/* The same for a window's first write, COPYed straight in: one cell per pair, so each row is its
 * pair's sums (the sums of one row, NULLs as 0 as above, 0 for an incomplete window), read back
 * through the primary key in key order; no hash aggregate and no sort (0.85 s of 2.2 s for
 * 93,000 cells at 500 sites on a scratch server). */
static const char cells_hourly_first[] =
    "INSERT INTO heatmap_cells_hourly AS h SELECT date_bin('1 hour', window_start, timestamptz "
    "'epoch'), src_site, dst_site, 1, k * window_seconds, k * coalesce(observed_bytes, 0), "
    "k * coalesce(observed_payload_bytes, 0), k * coalesce(attributed_bytes, 0), "
    "k * coalesce(socket_bytes, 0), k * coalesce(nfs_bytes, 0), k * coalesce(service_bytes, 0), "
    "k * coalesce(unattributed_bytes, 0), (status = 'ok')::int, (status = 'warn')::int, "
    "(status = 'red')::int, (status = 'over')::int, (status = 'idle')::int, "
    "(status = 'incomplete')::int, (status = 'no_counter')::int FROM heatmap_cells, "
    "LATERAL (SELECT wl_known(status)::int AS k) kk "
    "WHERE window_start = '%s'::timestamptz ORDER BY src_site, dst_site" CELLS_HOURLY_UPSERT;

static const struct rdb_diff_table cells_table = {
    "heatmap_cells",
    CELL_COLS,
    "window_start, src_site, dst_site",
    "window_seconds, observed_bytes, observed_payload_bytes, attributed_bytes, socket_bytes, "
    "nfs_bytes, service_bytes, unattributed_bytes, coverage, status, valid_fraction, capacity_bps",
    false,
    cells_hourly,
    NULL,
    true,
    false, /* set per window: fill_cells */
    cells_hourly_first,
    NULL,
};

int rdb_result_writer(PGconn *db, char *err, size_t errlen)
{
    /* this transaction keeps the hourly rollups itself (sql/018: the triggers stand aside) and
     * the result digests (sql/034: its statements keep them; ROW EXCLUSIVE on result_digests from
     * before the first read of stored rows to COMMIT, so another writer's change to these tables
     * forgets the digests after this transaction, or this one sees the change) */
    PGresult *r = rdb_q(db, "writing results", err, errlen,
                        "SELECT set_config('wanledger.hourly_writer', 'on', true), "
                        "set_config('wanledger.result_writer', 'on', true)",
                        0, NULL);
    if (!r)
        return -1;
    PQclear(r);
    r = rdb_q(db, "writing results", err, errlen, "LOCK TABLE result_digests IN ROW EXCLUSIVE MODE",
              0, NULL);
    if (!r)
        return -1;
    PQclear(r);
    return 0;
}

int rdb_write_results(PGconn *db, const struct cfg *cfg, int64_t ws, const struct recon_result *res,
                      long long *changed, char *err, size_t errlen)
{
    char from[TM_RFC3339_LEN], tsbuf[TM_RFC3339_LEN];
    rdb_fmt_ts(from, ws);
    tm_format_rfc3339(ws, tsbuf);
    const char *params[] = {from};
    if (rdb_result_writer(db, err, errlen))
        return -1;
    PGresult *r = rdb_q(db, "clearing the window's results", err, errlen,
                        "DELETE FROM link_windows WHERE window_start = $1::timestamptz", 1, params);
    if (!r)
        return -1;
    PQclear(r);
    struct rdb_sbuf b = {0};
    struct rdb_diff_counts dc;
    int rc = -1;
    /* cells in key order go straight in however many (no temp table and ORDER BY) */
    struct rdb_diff_table cells = cells_table;
    cells.ordered = fill_cells(&b, cfg, tsbuf, res);
    if (b.oom)
        goto oom;
    if (rdb_diff_write(db, &cells, from, &b, (long long)res->n_cells, &dc, err, errlen))
        goto cleanup;
    *changed += dc.written + dc.removed;
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
