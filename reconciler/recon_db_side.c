/* The side write (recon_db_internal.h, docs/design.md "The side write"): a big window's owner
 * rows go to PostgreSQL on a helper connection while the reconcile transaction writes its cells,
 * links and dependency rows.
 *
 * Why: in a window's write the server works and the reconciler waits, one statement at a time,
 * with the second core idle. At 5 M flow records (bench_fleet with WL_BENCH_PGLOG) the owner
 * numbering and attribution_packed took 1.2-1.6 s of the write's 3.5-4 s; the cells with their
 * hourly rows, the links and dependency_packed 1.7-2.0 s. Two connections write both at once.
 *
 * How it stays one result: the helper's transaction takes nothing the reconcile transaction
 * holds or waits for (it sets the same writer settings, so no trigger of sql/018 or sql/034
 * takes a table lock; ROW EXCLUSIVE on result_digests is shared with the reconcile
 * transaction's; its rows, owners and digests are other rows). It runs inside the reconcile
 * transaction's window and hour locks: it starts after they are taken and commits before they
 * are released (the reconcile transaction commits after rdb_side_finish), so no other writer of
 * the window or hour runs beside it. It commits only when the reconcile transaction's own
 * writes have succeeded. Its COMMIT comes first: if the reconcile transaction then fails (its
 * alerts, its COMMIT, a crash in between), the window is not marked reconciled and is
 * reconciled again, and that run finds these rows stored with their digests and leaves them (or
 * writes the difference, late data having come): nothing is lost or written twice. Readers may
 * see a window's owner rows a moment before its cells.
 *
 * Any failure of the helper (cannot connect, a statement's error, its COMMIT's) is logged and
 * the reconcile transaction writes the rows itself. After a COMMIT whose outcome is unknown that
 * is still safe: the rows are then either stored (and compared) or not, and a COMMIT landing
 * after the reconcile transaction read them meets its rows' primary keys and fails one of the
 * two. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "pgc.h"
#include "recon_db_internal.h"

/* A lock the helper waits for longer than this is given up, and the rows written on the one
 * connection. Nothing it locks is held by the reconcile transaction, which waits for it; should
 * a change ever make it so, the window stalls this long instead of its statement timeout. */
#define RDB_SIDE_LOCK_TIMEOUT "30s"

long long rdb_write_split_above = 100000;
long long rdb_write_splits, rdb_write_split_fallbacks;

struct rdb_side {
    struct rdb_conn_params params;
    const struct cfg *cfg;
    int64_t ws;
    const struct recon_result *res;
    char timeout[64], work_mem[64]; /* the reconcile transaction's */
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int verdict; /* 0 until rdb_side_finish: 1 commit, -1 roll back */
    PGconn *conn;
    long long changed;
    int rc; /* 0 committed */
    char err[512];
};

static int side_begin(struct rdb_side *s)
{
    const char *p[] = {s->timeout, s->work_mem};
    if (pgc_exec(s->conn, "BEGIN", s->err, sizeof s->err) < 0)
        return -1;
    PGresult *r = rdb_q(s->conn, "setting the transaction up", s->err, sizeof s->err,
                        "SELECT set_config('statement_timeout', $1, true),"
                        " set_config('work_mem', $2, true), set_config('TimeZone', 'UTC', true),"
                        " set_config('client_min_messages', 'warning', true),"
                        " set_config('lock_timeout', '" RDB_SIDE_LOCK_TIMEOUT "', true)",
                        2, p);
    if (!r)
        return -1;
    PQclear(r);
    return rdb_result_writer(s->conn, s->err, sizeof s->err);
}

/* The verdict of rdb_side_finish, waited for. */
static int side_verdict(struct rdb_side *s)
{
    pthread_mutex_lock(&s->mu);
    while (!s->verdict)
        pthread_cond_wait(&s->cv, &s->mu);
    int v = s->verdict;
    pthread_mutex_unlock(&s->mu);
    return v;
}

static void *side_run(void *arg)
{
    struct rdb_side *s = arg;
    char from[TM_RFC3339_LEN];
    rdb_fmt_ts(from, s->ws);
    s->rc = -1;
    s->conn = rdb_conn_helper(&s->params);
    if (PQstatus(s->conn) != CONNECTION_OK) {
        snprintf(s->err, sizeof s->err, "connecting: %s", PQerrorMessage(s->conn));
        return NULL;
    }
    bool written = side_begin(s) == 0 && rdb_write_owners(s->conn, s->cfg, from, s->ws, s->res,
                                                          &s->changed, s->err, sizeof s->err) == 0;
    if (!written) {
        PQclear(PQexec(s->conn, "ROLLBACK"));
        return NULL;
    }
    if (side_verdict(s) < 0) {
        PQclear(PQexec(s->conn, "ROLLBACK"));
        snprintf(s->err, sizeof s->err, "rolled back: the window's other writes failed");
        return NULL;
    }
    if (pgc_exec(s->conn, "COMMIT", s->err, sizeof s->err) == 0)
        s->rc = 0;
    return NULL;
}

struct rdb_side *rdb_side_start(PGconn *db, const struct cfg *cfg, int64_t ws,
                                const struct recon_result *res)
{
    if ((long long)(res->n_rollup + res->n_deps) < rdb_write_split_above)
        return NULL;
    struct rdb_side *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    char e[256];
    PGresult *r =
        rdb_q(db, "reading the transaction's settings", e, sizeof e,
              "SELECT current_setting('statement_timeout'), current_setting('work_mem')", 0, NULL);
    if (!r) {
        log_warn("reconcile", "the side write: %s; writing on one connection", e);
        free(s);
        return NULL;
    }
    snprintf(s->timeout, sizeof s->timeout, "%s", PQgetvalue(r, 0, 0));
    snprintf(s->work_mem, sizeof s->work_mem, "%s", PQgetvalue(r, 0, 1));
    PQclear(r);
    s->cfg = cfg;
    s->ws = ws;
    s->res = res;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    if (rdb_conn_params_of(db, &s->params) != 0 || pthread_create(&s->th, NULL, side_run, s) != 0) {
        rdb_conn_params_free(&s->params);
        pthread_mutex_destroy(&s->mu);
        pthread_cond_destroy(&s->cv);
        free(s);
        return NULL;
    }
    return s;
}

int rdb_side_finish(struct rdb_side *s, bool ok, long long *changed)
{
    if (!s)
        return 1;
    pthread_mutex_lock(&s->mu);
    s->verdict = ok ? 1 : -1;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->th, NULL);
    PQfinish(s->conn);
    int rc = 1;
    if (s->rc == 0) {
        *changed += s->changed;
        __atomic_fetch_add(&rdb_write_splits, 1, __ATOMIC_RELAXED);
        rc = 0;
    } else if (ok) {
        for (char *c = s->err; *c; c++)
            if (*c == '\n' || *c == '\t')
                *c = ' '; /* libpq's messages end in a newline */
        char from[TM_RFC3339_LEN];
        rdb_fmt_ts(from, s->ws);
        __atomic_fetch_add(&rdb_write_split_fallbacks, 1, __ATOMIC_RELAXED);
        log_warn("reconcile",
                 "window %s: writing its owner rows on a second connection failed"
                 " (%s); writing them on this one",
                 from, s->err);
    }
    rdb_conn_params_free(&s->params);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s);
    return rc;
}
