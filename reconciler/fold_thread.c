/* The owner-hour fold thread (see fold_thread.h). */
#include "fold_thread.h"

#include <libpq-fe.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "db.h"
#include "log.h"
#include "recon_db.h"
#include "ticker.h"
#include "timeutil.h"

#define FOLD_EVERY_MS 30000 /* an hour ends once an hour: a look every 30 s is plenty */

struct fold_thread {
    const struct cfg *cfg;
    const struct leader *leader;
    struct ticker tk;
    pthread_mutex_t mu;
    PGcancel *cancel; /* the thread's connection's, while it has one */
};

static void set_cancel(struct fold_thread *f, PGconn *db)
{
    pthread_mutex_lock(&f->mu);
    if (f->cancel)
        PQfreeCancel(f->cancel);
    f->cancel = db ? PQgetCancel(db) : NULL;
    pthread_mutex_unlock(&f->mu);
}

static void fold_once(PGconn *db, const struct cfg *cfg)
{
    char err[512];
    int hours = 0;
    long long rows = 0;
    int64_t t0 = tm_mono_ns();
    if (recon_db_fold_hours(db, cfg, tm_now_us(), 1, &hours, &rows, err, sizeof(err)) != 0) {
        log_error("reconcile", "folding owner hours: %s", err);
        return;
    }
    if (hours)
        log_info("reconcile", "folded %d hour(s) of owner rows into %lld hourly row(s) in %.1f s",
                 hours, rows, (double)(tm_mono_ns() - t0) / 1e9);
}

static void *run(void *arg)
{
    struct fold_thread *f = arg;
    PGconn *db = NULL;
    char err[512];
    int64_t last_err_log = 0;
    while (!ticker_stopping(&f->tk)) {
        if (leader_is(f->leader)) {
            if (db && PQstatus(db) != CONNECTION_OK) {
                set_cancel(f, NULL);
                PQfinish(db);
                db = NULL;
            }
            if (!db) {
                db = db_connect(f->cfg, err, sizeof(err));
                if (db)
                    set_cancel(f, db);
                else if (tm_now_us() - last_err_log > 60 * TM_USEC_PER_SEC) {
                    log_error("reconcile", "owner-hour fold: %s", err);
                    last_err_log = tm_now_us();
                }
            }
            if (db)
                fold_once(db, f->cfg);
        }
        /* one hour a round: a backlog of H ended hours takes H rounds */
        if (!ticker_wait_ms(&f->tk, FOLD_EVERY_MS))
            break;
    }
    set_cancel(f, NULL);
    if (db)
        PQfinish(db);
    return NULL;
}

struct fold_thread *fold_thread_start(const struct cfg *cfg, const struct leader *ld, char *err,
                                      size_t errlen)
{
    struct fold_thread *f = calloc(1, sizeof(*f));
    if (!f) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    f->cfg = cfg;
    f->leader = ld;
    pthread_mutex_init(&f->mu, NULL);
    int rc = ticker_start(&f->tk, run, f);
    if (rc != 0) {
        snprintf(err, errlen, "cannot start the owner-hour fold thread: error %d", rc);
        pthread_mutex_destroy(&f->mu);
        free(f);
        return NULL;
    }
    return f;
}

void fold_thread_stop(struct fold_thread *f)
{
    if (!f)
        return;
    pthread_mutex_lock(&f->mu);
    if (f->cancel) {
        char e[256];
        (void)PQcancel(f->cancel, e, sizeof(e)); /* nothing running: nothing happens */
    }
    pthread_mutex_unlock(&f->mu);
    ticker_stop(&f->tk);
    pthread_mutex_destroy(&f->mu);
    free(f);
}
