/* Reconciling a list of windows on several PostgreSQL connections at once. Each window is one
 * recon_db_reconcile_window + recon_db_mark_done, as the loop does one after another; the
 * windows' loading and computing overlap, their alert phases are serialised by
 * recon_db_reconcile_window's advisory lock (taken just before the alerts), so the result is the
 * one some serial order of the same windows gives. */
#ifndef WL_RECON_PAR_H
#define WL_RECON_PAR_H

#include <libpq-fe.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "metrics.h"

#define RECON_PAR_MAX_WORKERS 8

struct recon_par_stats {
    size_t reconciled; /* windows reconciled and marked done */
    size_t failed;     /* windows left dirty (logged) */
    int workers;       /* connections used (1 = db alone) */
};

/* The number of workers the loop uses: WL_RECONCILE_WORKERS (1..8) if set, else the number of
 * online cores capped at 4. */
int recon_par_workers(void);

/* Reconciles windows[0..n) in that order of start (workers take the next one as they finish):
 * worker 0 uses db, the others open their own connection with cfg->database (and close it at
 * the end); a worker that cannot connect is left out (with a log line), never the windows.
 * m may be NULL. */
void recon_par_run(PGconn *db, const struct cfg *cfg, struct metrics *m, const int64_t *windows,
                   size_t n, int workers, struct recon_par_stats *st);

#endif
