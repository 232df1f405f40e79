/* The reconciler's database glue: one window's raw rows in (recon_db_load.c), recon_run, results
 * (recon_db_write.c) and alerts (recon_db_alerts.c) out, in one transaction. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "recon_db_internal.h"

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
    struct rdb_inputs in;
    memset(&in, 0, sizeof in);
    struct recon_result res;
    memset(&res, 0, sizeof res);
    int rc = -1;
    bool in_tx = false;
    int64_t t0 = tm_mono_ns();
    PGresult *r = rdb_q(db, "BEGIN", err, errlen, "BEGIN", 0, NULL);
    if (!r)
        return -1;
    PQclear(r);
    in_tx = true;
    char from[TM_RFC3339_LEN];
    rdb_fmt_ts(from, window_start_us);
    const char *p1[] = {from};
    /* one reconciliation of this window at a time (two-key lock space: never the global one) */
    r = rdb_q(db, "locking the window", err, errlen,
              "SELECT pg_advisory_xact_lock(hashtext('wanledger.reconcile.window'),"
              " hashtext($1::timestamptz::text))",
              1, p1);
    if (!r)
        goto cleanup;
    PQclear(r);
    long long n_reported = 0;
    if (rdb_set_budget(db, window_start_us, &n_reported, err, errlen))
        goto cleanup;
    /* read before the inputs: data committed after this keeps the window dirty */
    r = rdb_q(db, "reading window_state", err, errlen,
              "SELECT (extract(epoch from last_data_at) * 1000000)::bigint FROM window_state WHERE "
              "window_start = $1::timestamptz",
              1, p1);
    if (!r)
        goto cleanup;
    if (PQntuples(r))
        st->seen_last_data_at_us = rdb_val_i64(r, 0, 0, INT64_MIN);
    PQclear(r);
    /* flows: from ClickHouse when configured (1: the window waits for its outbox) */
    int lf = cfg->clickhouse.enabled
                 ? rdb_load_flows_ch(db, cfg, window_start_us, n_reported, &in, err, errlen)
                 : rdb_load_flows(db, window_start_us, &in, err, errlen);
    if (lf > 0) {
        rc = 1;
        goto cleanup;
    }
    if (lf < 0 || rdb_load_samples(db, cfg, window_start_us, &in, err, errlen) ||
        rdb_load_transfers(db, cfg, window_start_us, &in, err, errlen))
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
                             .order = in.order,
                             .rank = in.rank,
                             .transfers = in.transfers,
                             .n_transfers = in.n_transfers};
    if (recon_run(cfg, &ri, &res, err, errlen))
        goto cleanup;
    if (rdb_apply_lost_spans(db, cfg, window_start_us, &res, &st->n_cells_lost, err, errlen))
        goto cleanup;
    int64_t t2 = tm_mono_ns();
    st->n_cells = res.n_cells;
    st->n_rollup = res.n_rollup;
    st->n_link_windows = res.n_links;
    st->n_unmapped = res.n_unmapped;
    /* writers of one hour one at a time (sql/020's wl_hour_lock, also taken by the hour's fold):
     * recon_db_diff.c adds this window's changes to that hour's rollup rows; order window ->
     * hour -> alerts, the same in every transaction */
    r = rdb_q(db, "locking the hour", err, errlen,
              "SELECT wl_hour_lock(date_bin('1 hour', $1::timestamptz, timestamptz 'epoch'))", 1,
              p1);
    if (!r)
        goto cleanup;
    PQclear(r);
    /* a big window's owner rows on a second connection meanwhile (recon_db_side.c), else here */
    struct rdb_side *side = rdb_side_start(db, cfg, window_start_us, &res);
    bool written =
        rdb_write_results(db, cfg, window_start_us, &res, &st->n_rows_changed, err, errlen) == 0 &&
        rdb_write_deps(db, cfg, window_start_us, &res, &st->n_rows_changed, err, errlen) == 0;
    if (rdb_side_finish(side, written, &st->n_rows_changed) != 0 && written)
        written = rdb_write_owners(db, cfg, from, window_start_us, &res, &st->n_rows_changed, err,
                                   errlen) == 0;
    if (!written)
        goto cleanup;
    int64_t t3 = tm_mono_ns();
    /* one alert evaluation at a time, held to COMMIT: alert rows are read, then written, from the
     * cells of the windows committed before (recon_par.h). Loading, computing and writing this
     * window's own rows overlap with other windows' (no row is shared). */
    r = rdb_q(db, "locking", err, errlen,
              "SELECT pg_advisory_xact_lock(hashtext('wanledger.reconcile'))", 0, NULL);
    if (!r)
        goto cleanup;
    PQclear(r);
    if (rdb_evaluate_alerts(db, cfg, window_start_us, &res, st, err, errlen))
        goto cleanup;
    int64_t t4 = tm_mono_ns();
    r = rdb_q(db, "COMMIT", err, errlen, "COMMIT", 0, NULL);
    if (!r)
        goto cleanup;
    PQclear(r);
    in_tx = false;
    st->load_us = (t1 - t0) / 1000;
    st->compute_us = ((t2 - t1) + (t4 - t3)) / 1000;
    st->alerts_us = (t4 - t3) / 1000;
    st->write_us = ((t3 - t2) + (tm_mono_ns() - t4)) / 1000;
    rc = 0;
cleanup:
    if (in_tx) {
        PGresult *rb = PQexec(db, "ROLLBACK");
        PQclear(rb);
    }
    recon_result_free(&res);
    rdb_inputs_free(&in);
    return rc;
}
