/* The reconciler's database glue: loads one window's raw inputs from PostgreSQL, runs the pure
 * reconciliation (recon.h) and alert state machine (alerts.h), and writes heatmap_cells,
 * attribution_rollup, link_windows and gap_alerts in one transaction. */
#ifndef WL_RECON_DB_H
#define WL_RECON_DB_H

#include <libpq-fe.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

/* What one reconciliation did (all counts for that window; spans in microseconds). */
struct recon_db_stats {
    int64_t window_start_us;
    size_t n_samples;       /* counter samples loaded (incl. the neighbours outside the window) */
    size_t n_flows;         /* flow records loaded */
    size_t n_transfers;     /* transfers overlapping the window */
    size_t n_cells;         /* heatmap_cells rows written */
    size_t n_rollup;        /* attribution_rollup rows written */
    size_t n_link_windows;  /* link_windows rows written */
    size_t n_unmapped;      /* flows/transfers whose addresses map to no site (left out) */
    size_t n_cells_lost;    /* cells made incomplete by an agent's lost span (recon_db_lost.c) */
    size_t n_alerts_opened; /* gap_alerts rows inserted as open */
    size_t n_alerts_updated;
    size_t n_alerts_resolved;
    int64_t load_us;    /* reading the raw tables */
    int64_t compute_us; /* recon + alerts in memory */
    int64_t alerts_us;  /* of compute_us: the alerts' evaluation (reads stored history) */
    int64_t write_us;   /* writing the results and committing */
    /* result rows (cells, owner and dependency rollups) written or removed: what changed; a
     * window reconciled again with nothing new writes none */
    long long n_rows_changed;
    /* window_state.last_data_at seen before the inputs were read (INT64_MIN: no row). Pass it to
     * recon_db_mark_done so data that arrived during the reconciliation keeps the window dirty. */
    int64_t seen_last_data_at_us;
};

/* How far from a window (or from a counter sample) an interface's neighbouring counter samples are
 * looked for: max(1 h, 10 windows), in seconds. The loader reads a window's outer samples within
 * it, and ingest (store.c) marks the windows a new sample's intervals touch within it: one
 * definition, so the two always agree. */
int recon_db_neighbour_span_seconds(const struct cfg *cfg);

/* Reconciles the window [window_start_us, window_start_us + cfg->window_seconds): reads
 * counter_samples in and around it (including the last sample before and the first after it, per
 * interface, within max(1 h, 10 windows)), flow_records of the window and transfers overlapping
 * it; replaces that window's heatmap_cells, attribution_rollup and link_windows rows; re-evaluates
 * the gap/over/saturation alerts of the affected pairs from the cells' history, inserting or
 * updating gap_alerts (at most one open per kind and pair) and sending NOTIFY wanledger_alerts
 * (payload: the alert id) for every alert row it changes. All in one transaction, serialised with
 * other reconciliations of the window by an advisory lock, alert phases by another (recon_par.h).
 * window_start_us must be aligned to the window. st may be NULL. 0 on success; -1 with err filled
 * and nothing changed. With analytics.clickhouse the flows are summed by ClickHouse, and a window
 * some of whose reports are still in the ClickHouse outbox (chstore_flush.h) is not computed: 1,
 * err says why, nothing changed, the window stays due. */
int recon_db_reconcile_window(PGconn *db, const struct cfg *cfg, int64_t window_start_us,
                              struct recon_db_stats *st, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* Windows due for reconciliation at now_us, oldest first: grace passed (window end +
 * grace_seconds <= now_us) and either dirty in window_state, or with raw data but never reconciled
 * (no window_state row; searched from the newest reconciled window on, at most one day back).
 * Writes up to max window starts to out and their number to *n. 0 or -1 with err. */
int recon_db_pending_windows(PGconn *db, const struct cfg *cfg, int64_t now_us, int64_t *out,
                             size_t max, size_t *n, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* Marks a window reconciled: dirty = false and reconciled_at = now(), unless new data arrived
 * since seen_last_data_at_us (from recon_db_stats) — then it stays dirty for the next tick.
 * Creates the window_state row when there was none. 0 or -1 with err.
 * Contract with ingest: a commit that adds raw rows touching a window marks it with
 *   INSERT INTO window_state (window_start, window_seconds) VALUES (...)
 *   ON CONFLICT (window_start) DO UPDATE SET dirty = true, last_data_at = clock_timestamp()
 * (a fresh timestamp on every mark: mark_done compares it for equality). */
int recon_db_mark_done(PGconn *db, const struct cfg *cfg, int64_t window_start_us,
                       int64_t seen_last_data_at_us, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* Folds the ended hours' owner rows into attribution_rollup_hourly (sql/020): the hours that
 * ended at least two windows before now_us, have windows in window_state (none dirty, unless
 * the hour ended over 6 hours before) and are not folded,
 * oldest first, at most max_hours, each in a transaction of its own (wl_fold_owner_hour, under
 * the hour's lock: a window of that hour being reconciled waits, and then adds its changes to
 * the folded hour). *hours and *rows (may be NULL): hours folded, hourly rows written.
 * 0 or -1 with err (the hours folded before the error stay folded). */
int recon_db_fold_hours(PGconn *db, const struct cfg *cfg, int64_t now_us, int max_hours,
                        int *hours, long long *rows, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* Tables of a window (heatmap_cells, attribution_packed, dependency_packed) that a reconciliation
 * left unwritten because their rows were those last written (sql/034), since the process
 * started. */
unsigned long long recon_db_unchanged_tables(void);

#endif
