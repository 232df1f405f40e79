/* rdb_load_flows (recon_db_internal.h): a big window's flow records read by two helper
 * connections at once, in the reconcile transaction's snapshot.
 *
 * The server's side of the load (scan, then a send function per column) is the bound once the
 * client parses the COPY as it arrives (recon_db_flows.c), and it runs on one core. The reconcile
 * transaction is READ COMMITTED, so each of its statements has a snapshot of its own: it cannot
 * read half of the rows itself and have another connection read the other half "in the same
 * snapshot". So it only exports one — `pg_export_snapshot()` in the statement that counts the
 * window's reported flows, i.e. a snapshot taken after window_state was read, as the one
 * SELECT's was — and two helper connections (BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY;
 * SET TRANSACTION SNAPSHOT) read the packed rows (sql/024) with (hashtext(agent_id) # seq) & 1
 * = 0 and = 1 (every row is in exactly one), each with its ctid (every flow of a row has its
 * row's). Each helper's statement is the one-COPY load's plus that
 * filter, without parallel workers or synchronized scans (its own transaction's settings), so
 * its rows come in heap order, which is checked. The two halves go into one array, part 0's
 * flows first, each part in its own slot, sized by the counting statement from the reports'
 * n_flows per part; each flow's row's ctid is its rank (recon_input.rank), so recon_run meets the
 * flows in the heap order the one statement returns without a merge: merging copied the whole
 * array once more into memory not touched yet (5 M flows, 900 MB: 2.4 s of page faults on one
 * core here). The reconcile transaction itself runs one more read-only statement and nothing else
 * changes: its locks, its atomicity and its writes are as
 * before. Any failure of a helper (cannot connect, snapshot gone, an error, rows out of order)
 * makes the load fall back to the one COPY on the main connection, logged as a warning; so does a
 * part with more flows than its reports count (fewer: the second part moves down). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hugealloc.h"
#include "log.h"
#include "pgc.h"
#include "recon_db_internal.h"

long long rdb_load_split_above = 500000;
long long rdb_load_splits, rdb_load_split_fallbacks;

struct helper {
    const struct rdb_conn_params *params; /* the main connection's */
    const char *snapshot, *timeout;
    int64_t ws;
    int part;
    pthread_t th;
    PGconn *conn;
    struct rdb_flow_part out;
    int rc;
    char err[512];
};

static int helper_begin(struct helper *h)
{
    char *snap = PQescapeLiteral(h->conn, h->snapshot, strlen(h->snapshot));
    char *tmo = PQescapeLiteral(h->conn, h->timeout, strlen(h->timeout));
    char sql[512];
    int rc = -1;
    if (snap && tmo) {
        snprintf(sql, sizeof sql,
                 "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY; SET TRANSACTION SNAPSHOT %s;"
                 " SET LOCAL statement_timeout = %s; SET LOCAL max_parallel_workers_per_gather = 0;"
                 " SET LOCAL synchronize_seqscans = off",
                 snap, tmo);
        rc = pgc_exec(h->conn, sql, h->err, sizeof h->err);
    } else {
        snprintf(h->err, sizeof h->err, "out of memory");
    }
    PQfreemem(snap);
    PQfreemem(tmo);
    return rc < 0 ? -1 : 0;
}

static void *helper_run(void *arg)
{
    struct helper *h = arg;
    h->rc = -1;
    h->conn = rdb_conn_helper(h->params);
    if (PQstatus(h->conn) != CONNECTION_OK) {
        snprintf(h->err, sizeof h->err, "connecting: %s", PQerrorMessage(h->conn));
        return NULL;
    }
    if (helper_begin(h) < 0 ||
        rdb_flows_copy(h->conn, h->ws, h->part, &h->out, h->err, sizeof h->err) < 0)
        return NULL;
    for (size_t i = 1; i < h->out.n; i++)
        if (h->out.tid[i] < h->out.tid[i - 1]) { /* a row's flows share its ctid */
            snprintf(h->err, sizeof h->err, "rows not in heap order (row %zu)", i);
            return NULL;
        }
    if (pgc_exec(h->conn, "COMMIT", h->err, sizeof h->err) < 0)
        return NULL;
    h->rc = 0;
    return NULL;
}

/* The two parts (one array, part 1's slot after part 0's) into in, ranked by ctid. */
static void join_parts(struct rdb_flow_part *a, struct rdb_flow_part *b, struct rdb_inputs *in)
{
    if (a->n < a->cap) { /* fewer flows than counted: close the gap */
        memmove(a->flows + a->n, b->flows, b->n * sizeof *b->flows);
        memmove(a->tid + a->n, b->tid, b->n * sizeof *b->tid);
    }
    in->flows = a->flows;
    in->rank = a->tid;
    in->n_flows = a->n + b->n;
    rdb_strtab_chain(a->strs, b->strs);
    in->strs = a->strs;
    a->strs = b->strs = NULL;
}

/* 0: in holds the window's flows; -1: err says why (the caller falls back). */
static int load_split(PGconn *db, int64_t ws, size_t n_all, size_t n_part0, const char *snapshot,
                      const char *timeout, struct rdb_inputs *in, char *err, size_t errlen)
{
    struct rdb_conn_params cp;
    bool have_params = rdb_conn_params_of(db, &cp) == 0;
    struct helper h[2];
    memset(h, 0, sizeof h);
    int rc = -1;
    if (n_part0 > n_all)
        n_part0 = n_all;
    struct recon_flow *flows = huge_alloc((n_all + 1) * sizeof *flows);
    uint64_t *tid = huge_alloc((n_all + 1) * sizeof *tid);
    if (!have_params || !flows || !tid) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    for (int k = 0; k < 2; k++)
        h[k] = (struct helper){.params = &cp,
                               .snapshot = snapshot,
                               .timeout = timeout,
                               .ws = ws,
                               .part = k,
                               .out = {.flows = flows + (k ? n_part0 : 0),
                                       .tid = tid + (k ? n_part0 : 0),
                                       .cap = k ? n_all - n_part0 : n_part0,
                                       .fixed = true},
                               .rc = -1}; /* until it has run and succeeded */
    /* part 1 on a thread, part 0 on this one */
    bool threaded = pthread_create(&h[1].th, NULL, helper_run, &h[1]) == 0;
    if (!threaded)
        snprintf(h[1].err, sizeof h[1].err, "cannot start a thread");
    helper_run(&h[0]);
    if (threaded)
        pthread_join(h[1].th, NULL);
    for (int k = 0; k < 2; k++)
        if (h[k].rc < 0) {
            for (char *c = h[k].err; *c; c++)
                if (*c == '\n' || *c == '\t')
                    *c = ' '; /* libpq's messages end in a newline */
            snprintf(err, errlen, "helper %d: %s", k, h[k].err);
            goto out;
        }
    join_parts(&h[0].out, &h[1].out, in);
    flows = NULL;
    tid = NULL;
    rc = 0;
out:
    for (int k = 0; k < 2; k++) {
        PQfinish(h[k].conn);
        rdb_flow_part_free(&h[k].out);
    }
    huge_free(flows);
    huge_free(tid);
    rdb_conn_params_free(&cp);
    return rc;
}

int rdb_load_flows(PGconn *db, int64_t ws, struct rdb_inputs *in, char *err, size_t errlen)
{
    char from[TM_RFC3339_LEN], above[RDB_NUM_LEN];
    rdb_fmt_ts(from, ws);
    rdb_fmt_i64(above, rdb_load_split_above);
    const char *p[] = {from, above};
    /* the parts as rdb_flows_copy selects them: a report's flow_packed rows have its agent and seq
     */
    PGresult *r = rdb_q(db, "counting the window's flow records", err, errlen,
                        "SELECT n, CASE WHEN n >= $2::bigint THEN pg_export_snapshot() END,"
                        " current_setting('statement_timeout'), n0"
                        " FROM (SELECT coalesce(sum(n_flows), 0)::bigint AS n,"
                        " coalesce(sum(n_flows) FILTER (WHERE (hashtext(agent_id)::int8 # seq) & 1"
                        " = 0), 0)::bigint AS n0 FROM flow_reports"
                        " WHERE window_start = $1::timestamptz) s",
                        2, p);
    if (!r)
        return -1;
    if (!PQgetisnull(r, 0, 1)) {
        char why[600];
        long long n_all = rdb_val_i64(r, 0, 0, 0), n0 = rdb_val_i64(r, 0, 3, 0);
        int rc = load_split(db, ws, (size_t)(n_all > 0 ? n_all : 0), (size_t)(n0 > 0 ? n0 : 0),
                            PQgetvalue(r, 0, 1), PQgetvalue(r, 0, 2), in, why, sizeof why);
        if (rc == 0) {
            PQclear(r);
            __atomic_fetch_add(&rdb_load_splits, 1, __ATOMIC_RELAXED);
            return 0;
        }
        __atomic_fetch_add(&rdb_load_split_fallbacks, 1, __ATOMIC_RELAXED);
        log_warn("reconcile",
                 "window %s: reading its flows over two connections failed (%s);"
                 " reading them over this one",
                 from, why);
    }
    PQclear(r);
    struct rdb_flow_part all = {0};
    int rc = rdb_flows_copy(db, ws, -1, &all, err, errlen);
    in->flows = all.flows;
    in->n_flows = all.n;
    in->strs = all.strs;
    free(all.tid);
    return rc;
}
