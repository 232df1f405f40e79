/* The reconcile loop thread (see loop.h). */
#include "loop.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "db.h"
#include "fold_thread.h"
#include "log.h"
#include "recon_db.h"
#include "recon_par.h"
#include "retention.h"
#include "ticker.h"
#include "throttle_propose.h"
#include "timeutil.h"

#define PENDING_BATCH  512 /* windows listed per query; a pass repeats the query */
#define PASS_ROUNDS    64  /* bound on repeated listings in one pass (late data keeps coming) */
#define PRUNE_EVERY_US (86400LL * TM_USEC_PER_SEC) /* retention runs once a day (leader only) */
#define BEHIND_WINDOWS 8 /* more windows due than this: reconcile the newest first */

struct loop {
    const struct cfg *cfg;
    struct metrics *metrics;
    const struct leader *leader;
    struct ticker tk;
    struct fold_thread *fold; /* the owner-hour fold, beside this loop */
};

int loop_pass(PGconn *db, const struct cfg *cfg, struct metrics *m, int64_t now_us,
              struct loop_pass_stats *st, char *err, size_t errlen)
{
    st->reconciled = st->failed = 0;
    int64_t due[PENDING_BATCH];
    for (int round = 0; round < PASS_ROUNDS; round++) {
        size_t n = 0;
        if (recon_db_pending_windows(db, cfg, now_us, due, PENDING_BATCH, &n, err, errlen) < 0)
            return -1;
        size_t done_before = st->reconciled;
        /* behind (a backlog, e.g. one long transfer record marked many windows): newest first,
         * so the windows people look at now are not late; otherwise in time order */
        bool behind = n > BEHIND_WINDOWS;
        int64_t order[PENDING_BATCH];
        for (size_t k = 0; k < n; k++)
            order[k] = due[behind ? n - 1 - k : k];
        /* several windows due: split them over cores (recon_par.h) */
        struct recon_par_stats ps = {0};
        recon_par_run(db, cfg, m, order, n, n > 1 ? recon_par_workers() : 1, &ps);
        st->reconciled += ps.reconciled;
        st->failed += ps.failed;
        /* list again only when the listing was full and progress was made */
        if (n < PENDING_BATCH || st->reconciled == done_before)
            break;
    }
    char terr[512];
    if (st->reconciled && thr_propose_run(db, cfg, terr, sizeof(terr)) < 0)
        log_error("throttle", "proposals: %s", terr);
    return 0;
}

/* Retention (retention.h): once a day, and once when this process starts leading. */
static void prune(PGconn *db, const struct cfg *cfg)
{
    char err[512];
    struct retention_stats rs;
    if (retention_prune(db, cfg, tm_now_us(), 0, &rs, err, sizeof(err)) != 0) {
        log_error("retention", "%s", err);
        return;
    }
    long long rows = 0;
    for (int i = 0; i < RETENTION_TABLES; i++)
        rows += rs.deleted[i];
    if (rs.partitions_dropped || rows)
        log_info("retention", "dropped %d raw partition(s), deleted %lld result row(s)",
                 rs.partitions_dropped, rows);
}

static void *run(void *arg)
{
    struct loop *l = arg;
    const struct cfg *cfg = l->cfg;
    PGconn *db = NULL;
    char err[512];
    int64_t last_err_log = 0, last_prune = 0;
    while (!ticker_stopping(&l->tk)) {
        if (!leader_is(l->leader)) {
            /* a follower: another reconciler runs the loop; check again within a poll */
            last_prune = 0; /* prune once on becoming the leader */
            (void)ticker_wait_ms(&l->tk, LEADER_POLL_MS / 2);
            continue;
        }
        if (!db || PQstatus(db) != CONNECTION_OK) {
            if (db)
                PQfinish(db);
            db = db_connect(cfg, err, sizeof(err));
        }
        struct loop_pass_stats st = {0};
        if (!db || loop_pass(db, cfg, l->metrics, tm_now_us(), &st, err, sizeof(err)) < 0) {
            if (tm_now_us() - last_err_log > 60 * TM_USEC_PER_SEC) {
                log_error("reconcile", "pass failed: %s", err);
                last_err_log = tm_now_us();
            }
        } else if (st.reconciled || st.failed) {
            log_info("reconcile", "%zu window(s) reconciled, %zu failed", st.reconciled, st.failed);
        }
        if (db && tm_now_us() - last_prune >= PRUNE_EVERY_US) {
            last_prune = tm_now_us();
            prune(db, cfg);
        }
        if (!ticker_wait_ms(&l->tk, (cfg->tick_seconds > 0 ? cfg->tick_seconds : 5) * 1000LL))
            break;
    }
    if (db)
        PQfinish(db);
    return NULL;
}

struct loop *loop_start(const struct cfg *cfg, struct metrics *m, const struct leader *ld,
                        char *err, size_t errlen)
{
    struct loop *l = calloc(1, sizeof(*l));
    if (!l) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    l->cfg = cfg;
    l->metrics = m;
    l->leader = ld;
    l->fold = fold_thread_start(cfg, ld, err, errlen);
    if (!l->fold) {
        free(l);
        return NULL;
    }
    int rc = ticker_start(&l->tk, run, l);
    if (rc != 0) {
        snprintf(err, errlen, "cannot start the reconcile thread: error %d", rc);
        fold_thread_stop(l->fold);
        free(l);
        return NULL;
    }
    return l;
}

void loop_stop(struct loop *l)
{
    if (!l)
        return;
    ticker_stop(&l->tk);
    fold_thread_stop(l->fold);
    free(l);
}
