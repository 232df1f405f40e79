/* The ClickHouse outbox flusher (see chstore_flush.h). */
#include "chstore_flush.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "chstore.h"
#include "chstore_block.h"
#include "db.h"
#include "flow_row.h"
#include "log.h"
#include "timeutil.h"

static atomic_ullong rows_inserted, inserts_ok, inserts_failed, deferred;

void chflush_note_deferred(void)
{
    atomic_fetch_add(&deferred, 1);
}

/* A pending report whose flows are in ch_outbox (sql/017): not one of flow_records' */
#define LEGACY_OUTBOXED                                                                            \
    "EXISTS (SELECT 1 FROM ch_outbox o WHERE o.agent_id = flow_reports.agent_id"                   \
    " AND o.seq = flow_reports.seq AND o.window_start = flow_reports.window_start)"

/* The legacy outbox (databases written before sql/017, and tests/analytics/test_ch_store.c's
 * fixture): pending reports whose flows are rows of flow_records. */
/* The pending reports of window $1 whose flows fit $2 rows (at least the first report), in one
 * order: the same set for the SELECT and the UPDATE of one REPEATABLE READ transaction. */
/* (The COPY in ship() spells the same set with literals.) */
#define KEYS                                                                                       \
    "WITH k AS (SELECT agent_id, seq FROM (SELECT agent_id, seq, n_flows,"                         \
    " sum(n_flows) OVER (ORDER BY agent_id, seq) AS cum FROM flow_reports"                         \
    " WHERE ch_pending AND window_start = $1::timestamptz AND NOT " LEGACY_OUTBOXED ") x"          \
    " WHERE cum - n_flows < $2::bigint) "

struct buf {
    char *p;
    size_t n, cap;
};

static int buf_need(struct buf *b, size_t more)
{
    if (b->n + more <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 1 << 16;
    while (cap < b->n + more)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p)
        return -1;
    b->p = p;
    b->cap = cap;
    return 0;
}

/* Runs sql (a COPY … TO STDOUT) into b: PostgreSQL's COPY text is what ClickHouse's
 * TabSeparated reads (\N for NULL, backslash escapes). *rows = lines. 0 or -1 with err. */
static int copy_out(PGconn *db, const char *sql, struct buf *b, size_t *rows, char *err,
                    size_t errlen)
{
    *rows = 0;
    PGresult *r = PQexec(db, sql);
    if (PQresultStatus(r) != PGRES_COPY_OUT) {
        snprintf(err, errlen, "clickhouse outbox: reading flows: %s", PQresultErrorMessage(r));
        PQclear(r);
        return -1;
    }
    PQclear(r);
    int rc = 0;
    for (;;) {
        char *line = NULL;
        int n = PQgetCopyData(db, &line, 0);
        if (n < 0)
            break; /* -1: done; -2: error, reported by the result below */
        if (rc == 0 && buf_need(b, (size_t)n) == 0) {
            memcpy(b->p + b->n, line, (size_t)n);
            b->n += (size_t)n;
            (*rows)++; /* libpq returns one row per call */
        } else if (rc == 0) {
            snprintf(err, errlen, "clickhouse outbox: out of memory after %zu rows", *rows);
            rc = -1;
        }
        PQfreemem(line);
    }
    r = PQgetResult(db);
    if (PQresultStatus(r) != PGRES_COMMAND_OK && rc == 0) {
        snprintf(err, errlen, "clickhouse outbox: reading flows: %s", PQresultErrorMessage(r));
        rc = -1;
    }
    PQclear(r);
    while ((r = PQgetResult(db)))
        PQclear(r);
    return rc;
}

static PGresult *q(PGconn *db, const char *what, const char *sql, int n, const char *const *p,
                   char *err, size_t errlen)
{
    PGresult *r = PQexecParams(db, sql, n, NULL, p, NULL, NULL, 0);
    ExecStatusType s = PQresultStatus(r);
    if (s == PGRES_TUPLES_OK || s == PGRES_COMMAND_OK)
        return r;
    snprintf(err, errlen, "clickhouse outbox: %s: %s", what, PQresultErrorMessage(r));
    size_t l = strlen(err);
    while (l && (err[l - 1] == '\n' || err[l - 1] == ' '))
        err[--l] = 0;
    PQclear(r);
    return NULL;
}

/* Inside the transaction: true when this process is the one flusher (an advisory lock held
 * until the transaction ends), -1 on error. */
static int lock_flusher(PGconn *db, char *err, size_t errlen)
{
    PGresult *r =
        q(db, "locking", "SELECT pg_try_advisory_xact_lock(hashtext('wanledger.chflush'))", 0, NULL,
          err, errlen);
    if (!r)
        return -1;
    bool mine = PQgetvalue(r, 0, 0)[0] == 't';
    PQclear(r);
    return mine;
}

/* Inside the transaction: the legacy outbox. Picks the window, reads, inserts, marks. */
static int ship_legacy(PGconn *db, const struct cfg *cfg, struct chflush_batch *b, char *err,
                       size_t errlen)
{
    const struct cfg_clickhouse *ch = &cfg->clickhouse;
    int mine = lock_flusher(db, err, errlen);
    if (mine <= 0)
        return mine; /* an error, or another reconciler's flusher is at it */
    PGresult *r =
        q(db, "oldest window",
          "SELECT window_start::text FROM flow_reports WHERE ch_pending AND NOT " LEGACY_OUTBOXED
          " ORDER BY window_start LIMIT 1",
          0, NULL, err, errlen);
    if (!r)
        return -1;
    if (PQntuples(r) == 0) {
        PQclear(r);
        return 0;
    }
    char ws[64], lim[24];
    snprintf(ws, sizeof ws, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
    snprintf(lim, sizeof lim, "%d", ch->batch_rows);
    const char *params[] = {ws, lim};
    char cols[1024], names[768], sql[4096];
    if (flow_row_list(cols, sizeof cols, FRL_PG_EXPORT, FLOW_ROW_ALL, NULL, NULL) < 0 ||
        flow_row_list(names, sizeof names, FRL_NAMES, FLOW_ROW_ALL, NULL, NULL) < 0) {
        snprintf(err, errlen, "clickhouse outbox: column list too long");
        return -1;
    }
    /* COPY takes no parameters: the window is PostgreSQL's own text of it, quoted by libpq, and
     * the limit a number; the UPDATE below names the same set with parameters */
    char *ws_lit = PQescapeLiteral(db, ws, strlen(ws));
    if (!ws_lit) {
        snprintf(err, errlen, "clickhouse outbox: %s", PQerrorMessage(db));
        return -1;
    }
    snprintf(sql, sizeof sql,
             "COPY (WITH k AS (SELECT agent_id, seq FROM (SELECT agent_id, seq, n_flows,"
             " sum(n_flows) OVER (ORDER BY agent_id, seq) AS cum FROM flow_reports"
             " WHERE ch_pending AND window_start = %s::timestamptz AND NOT " LEGACY_OUTBOXED
             ") x WHERE cum - n_flows < %s)"
             " SELECT %s FROM flow_records JOIN k USING (agent_id, seq)"
             " WHERE window_start = %s::timestamptz) TO STDOUT",
             ws_lit, lim, cols, ws_lit);
    PQfreemem(ws_lit);
    struct buf data = {0};
    size_t rows = 0;
    int rc = copy_out(db, sql, &data, &rows, err, errlen);
    if (rc < 0) {
        free(data.p);
        return -1;
    }
    if (rows) {
        char ins[1024];
        snprintf(ins, sizeof ins, "INSERT INTO %s (%s) FORMAT TabSeparated", chstore_table(ch),
                 names);
        struct httpc_response resp;
        rc = chstore_exec(ch, ins, data.p, data.n, ch->cluster ? "insert_distributed_sync=1" : NULL,
                          &resp, err, errlen);
        free(data.p);
        if (rc < 0)
            return -1;
        httpc_response_free(&resp);
    } else {
        free(data.p);
    }
    r = q(db, "marking reports",
          KEYS "UPDATE flow_reports f SET ch_pending = false FROM k"
               " WHERE f.window_start = $1::timestamptz AND f.agent_id = k.agent_id"
               " AND f.seq = k.seq AND f.ch_pending",
          2, params, err, errlen);
    if (!r)
        return -1;
    b->reports = (size_t)atol(PQcmdTuples(r));
    b->rows = rows;
    PQclear(r);
    return 0;
}

static uint32_t be32(const char *p)
{
    const unsigned char *u = (const unsigned char *)p;
    return (uint32_t)u[0] << 24 | (uint32_t)u[1] << 16 | (uint32_t)u[2] << 8 | u[3];
}

/* The outbox blocks ch_outbox holds: up to $1 rows' worth of the oldest (at least one), read in
 * binary (the block as stored, no hex). */
static const char SQL_OUTBOX_READ[] =
    "WITH k AS (SELECT id FROM (SELECT id, n_rows, sum(n_rows) OVER (ORDER BY id) AS cum"
    " FROM ch_outbox ORDER BY id LIMIT $1::bigint) x WHERE cum - n_rows < $1::bigint)"
    " SELECT o.id::text, o.n_rows, o.raw_bytes, o.coding, o.block FROM ch_outbox o JOIN k"
    " USING (id) ORDER BY o.id";

/* After ClickHouse's 200: the blocks leave the outbox and their reports are marked, together. */
static const char SQL_OUTBOX_DONE[] =
    "WITH d AS (DELETE FROM ch_outbox WHERE id = ANY($1::bigint[])"
    " RETURNING agent_id, seq, window_start)"
    " UPDATE flow_reports f SET ch_pending = false FROM d WHERE f.agent_id = d.agent_id"
    " AND f.seq = d.seq AND f.window_start = d.window_start AND f.ch_pending";

/* Decodes the blocks of r (SQL_OUTBOX_READ's binary result) one after another into data, their
 * ids into ids ("{1,2,...}"). 0 or -1 with err. */
static int outbox_concat(PGresult *r, struct buf *data, struct buf *ids, size_t *rows, char *err,
                         size_t errlen)
{
    int n = PQntuples(r);
    size_t total = 0;
    for (int i = 0; i < n; i++)
        total += be32(PQgetvalue(r, i, 2));
    if (buf_need(data, total) < 0 || buf_need(ids, (size_t)n * 21 + 3) < 0) {
        snprintf(err, errlen, "clickhouse outbox: out of memory for %zu bytes", total);
        return -1;
    }
    ids->p[ids->n++] = '{';
    for (int i = 0; i < n; i++) {
        size_t raw = be32(PQgetvalue(r, i, 2));
        char coding[16];
        snprintf(coding, sizeof coding, "%.*s", PQgetlength(r, i, 3), PQgetvalue(r, i, 3));
        if (chblock_decode(coding, PQgetvalue(r, i, 4), (size_t)PQgetlength(r, i, 4), raw,
                           data->p + data->n) < 0) {
            snprintf(err, errlen, "clickhouse outbox: block %.*s does not decode (%s, %zu bytes)",
                     PQgetlength(r, i, 0), PQgetvalue(r, i, 0), coding, raw);
            return -1;
        }
        data->n += raw;
        *rows += be32(PQgetvalue(r, i, 1));
        ids->n += (size_t)snprintf(ids->p + ids->n, 22, "%s%.*s", i ? "," : "",
                                   PQgetlength(r, i, 0), PQgetvalue(r, i, 0));
    }
    ids->p[ids->n++] = '}';
    ids->p[ids->n] = 0;
    return 0;
}

/* Inside the transaction: the outbox of sql/017. Reads the oldest blocks, inserts them as one
 * TabSeparated INSERT, and after the 200 deletes them and marks their reports. */
static int ship_outbox(PGconn *db, const struct cfg *cfg, struct chflush_batch *b, char *err,
                       size_t errlen)
{
    const struct cfg_clickhouse *ch = &cfg->clickhouse;
    int mine = lock_flusher(db, err, errlen);
    if (mine <= 0)
        return mine;
    char lim[24];
    snprintf(lim, sizeof lim, "%d", ch->batch_rows);
    const char *p[] = {lim};
    PGresult *r = PQexecParams(db, SQL_OUTBOX_READ, 1, NULL, p, NULL, NULL, 1);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        snprintf(err, errlen, "clickhouse outbox: reading blocks: %s", PQresultErrorMessage(r));
        PQclear(r);
        return -1;
    }
    if (PQntuples(r) == 0) {
        PQclear(r);
        return 0;
    }
    struct buf data = {0}, ids = {0};
    size_t rows = 0;
    int rc = outbox_concat(r, &data, &ids, &rows, err, errlen);
    PQclear(r);
    if (rc == 0) {
        char names[768], ins[1024];
        if (flow_row_list(names, sizeof names, FRL_NAMES, FLOW_ROW_ALL, NULL, NULL) < 0)
            abort(); /* a fixed list that fits: only a change to flow_row.c can get here */
        snprintf(ins, sizeof ins, "INSERT INTO %s (%s) FORMAT TabSeparated", chstore_table(ch),
                 names);
        struct httpc_response resp;
        rc = chstore_exec(ch, ins, data.p, data.n, ch->cluster ? "insert_distributed_sync=1" : NULL,
                          &resp, err, errlen);
        if (rc == 0)
            httpc_response_free(&resp);
    }
    free(data.p);
    if (rc == 0) {
        const char *d[] = {ids.p};
        rc = (r = q(db, "marking reports", SQL_OUTBOX_DONE, 1, d, err, errlen)) ? 0 : -1;
        if (r) {
            b->reports = (size_t)atol(PQcmdTuples(r));
            b->rows = rows;
            b->more = rows * 10 >= (size_t)ch->batch_rows * 9;
            PQclear(r);
        }
    }
    free(ids.p);
    return rc;
}

typedef int (*ship_fn)(PGconn *, const struct cfg *, struct chflush_batch *, char *, size_t);

/* One shipment in its own REPEATABLE READ transaction (the legacy SELECT and UPDATE must name
 * the same set); nothing is marked unless ClickHouse answered 200 and PostgreSQL committed. */
static int in_tx(PGconn *db, const struct cfg *cfg, ship_fn ship, struct chflush_batch *b,
                 char *err, size_t errlen)
{
    memset(b, 0, sizeof *b);
    PGresult *r = q(db, "BEGIN", "BEGIN ISOLATION LEVEL REPEATABLE READ", 0, NULL, err, errlen);
    if (!r)
        return -1;
    PQclear(r);
    int rc = ship(db, cfg, b, err, errlen);
    if (rc == 0 && !(r = q(db, "COMMIT", "COMMIT", 0, NULL, err, errlen)))
        rc = -1;
    if (rc == 0) {
        PQclear(r);
        atomic_fetch_add(&rows_inserted, b->rows);
        if (b->reports)
            atomic_fetch_add(&inserts_ok, 1);
        return 0;
    }
    PQclear(PQexec(db, "ROLLBACK"));
    memset(b, 0, sizeof *b);
    atomic_fetch_add(&inserts_failed, 1);
    return -1;
}

int chflush_once(PGconn *db, const struct cfg *cfg, struct chflush_batch *b, char *err,
                 size_t errlen)
{
    static atomic_uint round;
    if (in_tx(db, cfg, ship_outbox, b, err, errlen) < 0)
        return -1;
    /* the legacy outbox when the new one is empty, and every 16th round under a steady stream,
     * so that old pending windows are not starved */
    if (b->reports && atomic_fetch_add(&round, 1) % 16 != 15)
        return 0;
    struct chflush_batch l;
    if (in_tx(db, cfg, ship_legacy, &l, err, errlen) < 0)
        return -1;
    b->reports += l.reports;
    b->rows += l.rows;
    b->more = b->more || l.reports; /* the legacy outbox goes a window at a time */
    return 0;
}

int chflush_drain(PGconn *db, const struct cfg *cfg, char *err, size_t errlen)
{
    for (int i = 0; i < 1000000; i++) { /* bounded: each round ships at least one report */
        struct chflush_batch b;
        if (chflush_once(db, cfg, &b, err, errlen) < 0)
            return -1;
        if (!b.reports)
            return 0;
    }
    return 0;
}

struct chflush {
    const struct cfg *cfg;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
};

/* Waits ms milliseconds or until stopped; true when stopped. */
static bool wait_ms(struct chflush *f, long ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L)
        ts.tv_sec++, ts.tv_nsec -= 1000000000L;
    pthread_mutex_lock(&f->mu);
    while (ms > 0 && !f->stop && pthread_cond_timedwait(&f->cv, &f->mu, &ts) == 0)
        ;
    bool stop = f->stop;
    pthread_mutex_unlock(&f->mu);
    return stop;
}

static void *run(void *arg)
{
    struct chflush *f = arg;
    const struct cfg *cfg = f->cfg;
    PGconn *db = NULL;
    bool schema = false;
    long backoff = 0;
    int64_t last_log = 0, last_prune = INT64_MIN / 2; /* once an hour, first at start */
    char err[512];
    for (;;) {
        int rc = -1;
        struct chflush_batch b = {0};
        if (!db || PQstatus(db) != CONNECTION_OK) {
            if (db)
                PQfinish(db);
            db = db_connect(cfg, err, sizeof err);
        }
        if (db && !schema)
            schema = chstore_ensure_schema(&cfg->clickhouse, err, sizeof err) == 0;
        if (db && schema)
            rc = chflush_once(db, cfg, &b, err, sizeof err);
        if (schema && tm_mono_ns() - last_prune > 3600 * INT64_C(1000000000)) {
            int dropped = 0;
            char perr[512];
            last_prune = tm_mono_ns();
            if (chstore_prune(&cfg->clickhouse, cfg->retention_raw_days, tm_now_us(), &dropped,
                              perr, sizeof perr) < 0)
                log_error("clickhouse", "retention: %s", perr);
            else if (dropped)
                log_info("clickhouse", "retention: dropped %d day partition(s)", dropped);
        }
        if (rc == 0) {
            if (backoff)
                log_info("clickhouse", "outbox flushing again");
            backoff = 0;
            if (b.more && !wait_ms(f, 0))
                continue; /* a full block: more is waiting */
        } else {
            schema = false; /* a restarted server may have lost a fresh database */
            backoff = backoff ? (backoff * 2 > 10000 ? 10000 : backoff * 2) : 500;
            int64_t now = tm_mono_ns();
            if (now - last_log > 60 * INT64_C(1000000000)) {
                log_error("clickhouse", "outbox: %s (retrying; flows wait in PostgreSQL)", err);
                last_log = now;
            }
        }
        if (wait_ms(f, backoff ? backoff : CHFLUSH_PARTIAL_MS))
            break;
    }
    if (db)
        PQfinish(db);
    return NULL;
}

struct chflush *chflush_start(const struct cfg *cfg, char *err, size_t errlen)
{
    struct chflush *f = calloc(1, sizeof *f);
    if (!f) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    f->cfg = cfg;
    pthread_mutex_init(&f->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&f->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&f->thread, NULL, run, f) != 0) {
        snprintf(err, errlen, "cannot start the ClickHouse flusher thread");
        pthread_cond_destroy(&f->cv);
        pthread_mutex_destroy(&f->mu);
        free(f);
        return NULL;
    }
    return f;
}

void chflush_stop(struct chflush *f)
{
    if (!f)
        return;
    pthread_mutex_lock(&f->mu);
    f->stop = true;
    pthread_cond_signal(&f->cv);
    pthread_mutex_unlock(&f->mu);
    pthread_join(f->thread, NULL);
    pthread_cond_destroy(&f->cv);
    pthread_mutex_destroy(&f->mu);
    free(f);
}

void chflush_metrics(PGconn *db, struct evbuffer *out)
{
    long long reports = 0, flows = 0, windows = 0;
    PGresult *r =
        db ? PQexec(db, "SELECT count(*), coalesce(sum(n_flows), 0),"
                        " count(DISTINCT window_start) FROM flow_reports WHERE ch_pending")
           : NULL;
    if (r && PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1) {
        reports = atoll(PQgetvalue(r, 0, 0));
        flows = atoll(PQgetvalue(r, 0, 1));
        windows = atoll(PQgetvalue(r, 0, 2));
    }
    PQclear(r);
    long long blocks = 0, brows = 0, braw = 0, bstored = 0;
    r = db ? PQexec(db, "SELECT count(*), coalesce(sum(n_rows), 0), coalesce(sum(raw_bytes), 0),"
                        " coalesce(sum(octet_length(block)), 0) FROM ch_outbox")
           : NULL;
    if (r && PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1) {
        blocks = atoll(PQgetvalue(r, 0, 0));
        brows = atoll(PQgetvalue(r, 0, 1));
        braw = atoll(PQgetvalue(r, 0, 2));
        bstored = atoll(PQgetvalue(r, 0, 3));
    }
    PQclear(r);
    evbuffer_add_printf(
        out,
        "# HELP wanledger_clickhouse_outbox_blocks Reports waiting in ch_outbox as one compressed "
        "ClickHouse block each (the rest of outbox_reports wait as flow_records rows).\n"
        "# TYPE wanledger_clickhouse_outbox_blocks gauge\n"
        "wanledger_clickhouse_outbox_blocks %lld\n"
        "# HELP wanledger_clickhouse_outbox_block_rows Flow records in those blocks.\n"
        "# TYPE wanledger_clickhouse_outbox_block_rows gauge\n"
        "wanledger_clickhouse_outbox_block_rows %lld\n"
        "# HELP wanledger_clickhouse_outbox_bytes Bytes of those blocks as stored (compressed).\n"
        "# TYPE wanledger_clickhouse_outbox_bytes gauge\n"
        "wanledger_clickhouse_outbox_bytes %lld\n"
        "# HELP wanledger_clickhouse_outbox_raw_bytes Bytes of those blocks as TabSeparated.\n"
        "# TYPE wanledger_clickhouse_outbox_raw_bytes gauge\n"
        "wanledger_clickhouse_outbox_raw_bytes %lld\n",
        blocks, brows, bstored, braw);
    evbuffer_add_printf(
        out,
        "# HELP wanledger_clickhouse_outbox_reports Acknowledged reports whose flows are not yet "
        "confirmed in ClickHouse (they wait in PostgreSQL).\n"
        "# TYPE wanledger_clickhouse_outbox_reports gauge\n"
        "wanledger_clickhouse_outbox_reports %lld\n"
        "# HELP wanledger_clickhouse_outbox_flows Flow records of those reports.\n"
        "# TYPE wanledger_clickhouse_outbox_flows gauge\n"
        "wanledger_clickhouse_outbox_flows %lld\n"
        "# HELP wanledger_clickhouse_windows_waiting Windows not reconciled from ClickHouse until "
        "their flows are all there.\n"
        "# TYPE wanledger_clickhouse_windows_waiting gauge\n"
        "wanledger_clickhouse_windows_waiting %lld\n"
        "# HELP wanledger_clickhouse_rows_inserted_total Flow records this process inserted into "
        "ClickHouse (a re-sent block counts again; ClickHouse keeps one copy).\n"
        "# TYPE wanledger_clickhouse_rows_inserted_total counter\n"
        "wanledger_clickhouse_rows_inserted_total %llu\n"
        "# HELP wanledger_clickhouse_inserts_total Outbox blocks shipped and marked.\n"
        "# TYPE wanledger_clickhouse_inserts_total counter\n"
        "wanledger_clickhouse_inserts_total %llu\n"
        "# HELP wanledger_clickhouse_insert_failures_total Outbox blocks that failed (re-sent "
        "later).\n"
        "# TYPE wanledger_clickhouse_insert_failures_total counter\n"
        "wanledger_clickhouse_insert_failures_total %llu\n"
        "# HELP wanledger_clickhouse_deferred_total Reconciliations put off because the window's "
        "flows were not all in ClickHouse.\n"
        "# TYPE wanledger_clickhouse_deferred_total counter\n"
        "wanledger_clickhouse_deferred_total %llu\n",
        reports, flows, windows, (unsigned long long)atomic_load(&rows_inserted),
        (unsigned long long)atomic_load(&inserts_ok),
        (unsigned long long)atomic_load(&inserts_failed),
        (unsigned long long)atomic_load(&deferred));
}
