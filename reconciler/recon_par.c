/* Parallel reconciliation of a list of windows (recon_par.h). */
#include "recon_par.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "chstore_flush.h"
#include "db.h"
#include "log.h"
#include "recon_db.h"
#include "timeutil.h"

struct par {
    const struct cfg *cfg;
    struct metrics *m;
    const int64_t *windows;
    size_t n;
    atomic_size_t next, reconciled, failed;
};

struct worker {
    struct par *p;
    PGconn *db; /* NULL: connect in the thread */
    pthread_t th;
    int started;
};

int recon_par_workers(void)
{
    const char *e = getenv("WL_RECONCILE_WORKERS");
    if (e && *e) {
        char *end;
        long v = strtol(e, &end, 10);
        if (*end == 0 && v >= 1 && v <= RECON_PAR_MAX_WORKERS)
            return (int)v;
        log_error("reconcile", "WL_RECONCILE_WORKERS=%s is not 1..%d: using 1", e,
                  RECON_PAR_MAX_WORKERS);
        return 1;
    }
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    return c < 1 ? 1 : c > 4 ? 4 : (int)c;
}

static void one_window(struct par *p, PGconn *db, int64_t ws)
{
    char ctx[TM_RFC3339_LEN + 8], werr[512];
    tm_format_rfc3339(ws, ctx);
    struct recon_db_stats rs = {0};
    int64_t t0 = tm_mono_ns();
    int rc = recon_db_reconcile_window(db, p->cfg, ws, &rs, werr, sizeof(werr));
    if (rc == 0)
        rc = recon_db_mark_done(db, p->cfg, ws, rs.seen_last_data_at_us, werr, sizeof(werr));
    int64_t span = tm_mono_ns() - t0;
    if (p->m)
        metrics_reconcile(p->m, rc == 0, span, ws);
    if (rc > 0) { /* its flows are not all in ClickHouse yet: stays due */
        chflush_note_deferred();
        log_debug(ctx, "waiting: %s", werr);
        return;
    }
    if (rc < 0) {
        log_error(ctx, "reconciliation failed: %s", werr);
        atomic_fetch_add(&p->failed, 1);
        return;
    }
    atomic_fetch_add(&p->reconciled, 1);
    log_debug(ctx,
              "reconciled in %.3f s: %zu samples, %zu flows, %zu transfers -> %zu cells,"
              " %zu rollup rows; alerts %zu opened, %zu resolved",
              (double)span / 1e9, rs.n_samples, rs.n_flows, rs.n_transfers, rs.n_cells, rs.n_rollup,
              rs.n_alerts_opened, rs.n_alerts_resolved);
}

static void *work(void *arg)
{
    struct worker *w = arg;
    struct par *p = w->p;
    PGconn *db = w->db;
    if (!db) {
        char err[512];
        db = db_connect(p->cfg, err, sizeof(err));
        if (!db) {
            log_error("reconcile", "extra worker connection: %s", err);
            return NULL;
        }
    }
    for (;;) {
        size_t i = atomic_fetch_add(&p->next, 1);
        if (i >= p->n)
            break;
        one_window(p, db, p->windows[i]);
    }
    if (!w->db)
        PQfinish(db);
    return NULL;
}

void recon_par_run(PGconn *db, const struct cfg *cfg, struct metrics *m, const int64_t *windows,
                   size_t n, int workers, struct recon_par_stats *st)
{
    struct par p = {.cfg = cfg, .m = m, .windows = windows, .n = n};
    atomic_init(&p.next, 0);
    atomic_init(&p.reconciled, 0);
    atomic_init(&p.failed, 0);
    if (workers < 1)
        workers = 1;
    if (workers > RECON_PAR_MAX_WORKERS)
        workers = RECON_PAR_MAX_WORKERS;
    if ((size_t)workers > n)
        workers = n ? (int)n : 1;
    struct worker w[RECON_PAR_MAX_WORKERS] = {{0}};
    int used = 1;
    for (int i = 1; i < workers; i++) {
        w[i].p = &p;
        if (pthread_create(&w[i].th, NULL, work, &w[i]) == 0) {
            w[i].started = 1;
            used++;
        }
    }
    w[0].p = &p;
    w[0].db = db;
    work(&w[0]); /* this thread works too, on the caller's connection */
    for (int i = 1; i < workers; i++)
        if (w[i].started)
            pthread_join(w[i].th, NULL);
    st->reconciled = atomic_load(&p.reconciled);
    st->failed = atomic_load(&p.failed);
    st->workers = used;
}
