/* Leadership by a PostgreSQL advisory lock (see leader.h). */
#include "leader.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "db.h"
#include "log.h"
#include "ticker.h"
#include "timeutil.h"

struct leader {
    const struct cfg *cfg;
    struct metrics *metrics;
    struct ticker tk;
    _Atomic bool leading;
    _Atomic uint64_t term;
    PGconn *first_db; /* the session of the first round, made by leader_start */
};

/* One statement returning one boolean; -1 when it failed (the session is then suspect). */
static int query_bool(PGconn *db, const char *sql)
{
    PGresult *r = PQexec(db, sql);
    int v = -1;
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
        v = PQgetvalue(r, 0, 0)[0] == 't';
    PQclear(r);
    return v;
}

static void set_leading(struct leader *l, bool v, const char *why)
{
    if (atomic_load(&l->leading) == v)
        return;
    if (v)
        atomic_fetch_add(&l->term, 1);
    atomic_store(&l->leading, v);
    if (l->metrics)
        metrics_leader(l->metrics, v);
    if (v)
        log_info("leader", "this reconciler leads now: it runs the reconcile loop and delivers "
                           "webhooks");
    else
        log_warn("leader", "no longer the leader: %s", why);
}

/* One round: connect if needed, then try the lock (follower) or check the session (leader). */
static PGconn *round_once(struct leader *l, PGconn *db, int64_t *last_err_us)
{
    char err[512];
    if (db && PQstatus(db) != CONNECTION_OK) {
        set_leading(l, false, "the database connection was lost");
        PQfinish(db);
        db = NULL;
    }
    if (!db) {
        db = db_connect(l->cfg, err, sizeof(err));
        if (!db) {
            if (tm_now_us() - *last_err_us > 60 * TM_USEC_PER_SEC) {
                log_warn("leader", "%s", err);
                *last_err_us = tm_now_us();
            }
            return NULL;
        }
    }
    int v = atomic_load(&l->leading)
                ? query_bool(db, "SELECT true")
                : query_bool(db, "SELECT pg_try_advisory_lock(hashtext('wanledger.leader'))");
    if (v < 0) {
        set_leading(l, false, "the database connection failed");
        PQfinish(db);
        return NULL;
    }
    if (v && !atomic_load(&l->leading))
        set_leading(l, true, NULL);
    return db;
}

static void *run(void *arg)
{
    struct leader *l = arg;
    PGconn *db = l->first_db;
    int64_t last_err = 0;
    bool first = true; /* leader_start ran the first round */
    l->first_db = NULL;
    while (!ticker_stopping(&l->tk)) {
        if (!first)
            db = round_once(l, db, &last_err);
        first = false;
        if (!ticker_wait_ms(&l->tk, LEADER_POLL_MS))
            break;
    }
    set_leading(l, false, "shutting down");
    if (db)
        PQfinish(db); /* ends the session: the lock is released */
    return NULL;
}

struct leader *leader_start(const struct cfg *cfg, struct metrics *m, char *err, size_t errlen)
{
    struct leader *l = calloc(1, sizeof(*l));
    if (!l) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    l->cfg = cfg;
    l->metrics = m;
    if (m)
        metrics_leader(m, false);
    /* the first round here, so that a lone reconciler leads before its loop starts (its first
     * pass then runs at start-up, as it did before there were leaders) */
    int64_t last_err = 0;
    l->first_db = round_once(l, NULL, &last_err);
    int rc = ticker_start(&l->tk, run, l);
    if (rc != 0) {
        snprintf(err, errlen, "cannot start the leader thread: error %d", rc);
        if (l->first_db)
            PQfinish(l->first_db);
        free(l);
        return NULL;
    }
    return l;
}

void leader_stop(struct leader *l)
{
    if (!l)
        return;
    ticker_stop(&l->tk);
    free(l);
}

bool leader_is(const struct leader *l)
{
    return !l || atomic_load(&((struct leader *)l)->leading);
}

uint64_t leader_term(const struct leader *l)
{
    return l ? atomic_load(&((struct leader *)l)->term) : 1;
}
