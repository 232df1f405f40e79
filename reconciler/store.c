/* Durable storage of ingest batches (see store.h). */
#include "store.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chstore_block.h"
#include "chstore_queue.h"
#include "db.h"
#include "flow_pack.h"
#include "flow_row.h"
#include "gaps.h"
#include "nasin.h"
#include "recon_db.h"
#include "store_internal.h"
#include "timeutil.h"

static const char SQL_STAGING[] =
    "CREATE TEMP TABLE IF NOT EXISTS wl_counter_in ("
    " device text, interface text, at timestamptz, poller text, uptime_cs bigint,"
    " in_octets numeric(20,0), out_octets numeric(20,0), in_pkts numeric(20,0),"
    " out_pkts numeric(20,0), speed_bps bigint, counter_bits smallint, discontinuity_cs bigint)"
    " ON COMMIT DELETE ROWS;"
    "CREATE TEMP TABLE IF NOT EXISTS wl_transfer_in ("
    " service text, id text, requester text, workflow text, src text, dst text, bytes bigint,"
    " start_at timestamptz, end_at timestamptz) ON COMMIT DELETE ROWS";

const char STORE_SQL_REPORT[] =
    "INSERT INTO flow_reports (agent_id, seq, host, window_start, window_seconds, dropped_events,"
    " sampling_k, sampling_threshold, flows_seen, n_flows, spool_dropped_reports, local_sites,"
    " ch_pending) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12::text[],"
    " $13::boolean AND $10::int > 0) ON CONFLICT DO NOTHING RETURNING 1";

/* With ClickHouse, for a report with flows: its row, its flows as one outbox block and its
 * window's mark ($17: window_seconds) in one statement, all or nothing when the report is a
 * resend (ON CONFLICT: r is empty). Returns 1 for a fresh report. */
static const char SQL_REPORT_OUTBOX[] = STORE_SQL_ROW_OUTBOX_CTES
    ","
    " m AS (INSERT INTO window_state (window_start, window_seconds, dirty, last_data_at)"
    " SELECT $4::timestamptz, $17::int, true, clock_timestamp() FROM r"
    " ON CONFLICT (window_start) DO UPDATE SET dirty = true, last_data_at = clock_timestamp())"
    " SELECT (SELECT count(*) FROM r), (SELECT id FROM o)";

static const char SQL_MARK_ONE[] = "WITH w AS (SELECT $2::timestamptz AS ws)" MARK_WINDOWS;

/* A sample at t changes the intervals (prev, t] and (t, next] of its interface: mark exactly the
 * windows those intervals touch. prev and next are the neighbours already stored (the statement's
 * snapshot does not see the rows it inserts, so two samples of one interface in one batch each
 * reach back to the stored one: a superset, never less), looked up within $2 seconds — the same
 * bound the reconciliation uses to find a window's outer samples. Without a neighbour only t's own
 * window changes. Marking a fixed span of windows around t instead made every poll re-reconcile
 * windows whose intervals it never touched. */
static const char SQL_COUNTERS[] =
    "WITH ins AS (INSERT INTO counter_samples (device, interface, at, poller, uptime_cs,"
    " in_octets, out_octets, in_pkts, out_pkts, speed_bps, counter_bits, discontinuity_cs)"
    " SELECT * FROM wl_counter_in ON CONFLICT DO NOTHING RETURNING device, interface, at),"
    " span AS (SELECT"
    "  coalesce((SELECT max(c.at) FROM counter_samples c WHERE c.device = ins.device"
    "   AND c.interface = ins.interface AND c.at < ins.at"
    "   AND c.at >= ins.at - make_interval(secs => $2::int)), ins.at) AS lo,"
    "  coalesce((SELECT min(c.at) FROM counter_samples c WHERE c.device = ins.device"
    "   AND c.interface = ins.interface AND c.at > ins.at"
    "   AND c.at <= ins.at + make_interval(secs => $2::int)), ins.at) AS hi"
    "  FROM ins),"
    " w AS (SELECT DISTINCT to_timestamp(k * $1::int) AS ws FROM span,"
    "  generate_series(floor(extract(epoch FROM lo) / $1::int)::bigint,"
    "                  floor(extract(epoch FROM hi) / $1::int)::bigint) AS k),"
    " mark AS (" MARK_WINDOWS ")"
    " SELECT count(*) FROM ins";

/* A transfer is spread over [start, end]: every window of that span changes. Up to 10 windows
 * are marked here; a longer span becomes one window_ranges row that the reconcile loop expands
 * newest first (sql/004_window_ranges.sql), so one long record costs one row here. */
static const char SQL_TRANSFERS[] =
    "WITH ins AS (INSERT INTO transfers (service, id, requester, workflow, src, dst, bytes,"
    " start_at, end_at) SELECT * FROM wl_transfer_in ON CONFLICT DO NOTHING"
    " RETURNING start_at, end_at),"
    " span AS (SELECT to_timestamp(floor(extract(epoch FROM start_at) / $1::int) * $1::int) AS lo,"
    "  to_timestamp(floor(extract(epoch FROM end_at) / $1::int) * $1::int) AS hi FROM ins),"
    " w AS (SELECT DISTINCT generate_series(lo, hi, make_interval(secs => $1::int)) AS ws"
    "  FROM span WHERE hi - lo < make_interval(secs => 10 * $1::int)),"
    " rng AS (INSERT INTO window_ranges (lo, hi, window_seconds)"
    "  SELECT lo, hi, $1::int FROM span WHERE hi - lo >= make_interval(secs => 10 * $1::int)),"
    " mark AS (" MARK_WINDOWS ")"
    " SELECT count(*) FROM ins";

void store_set_err(char *err, size_t errlen, const char *what, const char *msg)
{
    snprintf(err, errlen, "%s: %s", what, msg);
    size_t n = strlen(err);
    while (n && (err[n - 1] == '\n' || err[n - 1] == ' '))
        err[--n] = 0;
}

struct store *store_new(const struct cfg *cfg)
{
    struct store *st = calloc(1, sizeof(*st));
    if (st)
        st->cfg = cfg;
    return st;
}

struct store *store_open(const struct cfg *cfg, char *err, size_t errlen)
{
    struct store *st = store_new(cfg);
    if (!st) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    st->db = db_connect(cfg, err, errlen);
    if (!st->db) {
        free(st);
        return NULL;
    }
    return st;
}

void store_close(struct store *st)
{
    if (!st)
        return;
    if (st->db)
        PQfinish(st->db);
    free(st);
}

PGconn *store_db(struct store *st)
{
    /* a connection left in pipeline mode (a pipeline cut short: pgc_pipeline) is not reused */
    if (st->db && PQstatus(st->db) == CONNECTION_OK && PQpipelineStatus(st->db) == PQ_PIPELINE_OFF)
        return st->db;
    char err[512];
    if (st->db)
        PQfinish(st->db);
    st->staged = false;
    memset(&st->prep, 0, sizeof st->prep);
    st->db = db_connect(st->cfg, err, sizeof(err));
    return st->db;
}

/* Runs a statement expected to return rows or nothing; *ntuples and the first value (as a
 * number) are returned when asked. */
static int run(PGconn *db, const char *what, const char *sql, int nparams,
               const char *const *params, long *first_value, int *ntuples, char *err, size_t errlen)
{
    PGresult *r =
        nparams ? PQexecParams(db, sql, nparams, NULL, params, NULL, NULL, 0) : PQexec(db, sql);
    ExecStatusType s = PQresultStatus(r);
    if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK) {
        store_set_err(err, errlen, what, PQresultErrorMessage(r));
        PQclear(r);
        return -1;
    }
    if (ntuples)
        *ntuples = PQntuples(r);
    if (first_value)
        *first_value = PQntuples(r) > 0 ? atol(PQgetvalue(r, 0, 0)) : 0;
    PQclear(r);
    return 0;
}

int store_outbox_params(const struct ingest_batch *b, struct chblock *blk, char nrows[24],
                        char raw[24], const char **p, int *lens, int *fmts, char *err,
                        size_t errlen)
{
    if (!blk->data && (!b->native || chblock_build(b->native, b->window_start_us, b->report[0],
                                                   b->report[1], blk) < 0)) {
        snprintf(err, errlen, "ch_outbox: cannot build the ClickHouse block (%s)",
                 b->native ? "out of memory"
                           : "the report was parsed without analytics.clickhouse");
        return -1;
    }
    snprintf(nrows, 24, "%zu", b->n_rows);
    snprintf(raw, 24, "%zu", blk->raw_len);
    p[INGEST_REPORT_PARAMS] = nrows;
    p[INGEST_REPORT_PARAMS + 1] = raw;
    p[INGEST_REPORT_PARAMS + 2] = blk->coding;
    p[INGEST_REPORT_PARAMS + 3] = blk->data;
    lens[INGEST_REPORT_PARAMS + 3] = (int)blk->len;
    fmts[INGEST_REPORT_PARAMS + 3] = 1;
    return 0;
}

/* The report's flows as one ClickHouse outbox row instead of n_rows flow_records rows: the raw
 * flows live in ClickHouse (docs/design.md "ClickHouse store"), PostgreSQL keeps them only until
 * the flusher has them confirmed there. *fresh: 0 for a resend (nothing written). */
static int write_report_outbox(struct store *st, const struct ingest_batch *b, const char *wsec,
                               int *fresh, char *err, size_t errlen)
{
    struct chblock blk = {0};
    char nrows[24], raw[24];
    enum { N = INGEST_REPORT_PARAMS + 5 };
    const char *p[N];
    int lens[N] = {0}, fmts[N] = {0};
    memcpy(p, b->report, sizeof b->report);
    if (store_outbox_params(b, &blk, nrows, raw, p, lens, fmts, err, errlen) < 0)
        return -1;
    p[INGEST_REPORT_PARAMS + 4] = wsec;
    PGresult *r = PQexecParams(st->db, SQL_REPORT_OUTBOX, N, NULL, p, lens, fmts, 0);
    int rc = 0;
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) {
        store_set_err(err, errlen, "flow_reports/ch_outbox", PQresultErrorMessage(r));
        rc = -1;
    } else {
        *fresh = atoi(PQgetvalue(r, 0, 0));
        if (*fresh) /* handed to the flusher in memory after COMMIT (chstore_queue.h) */
            chq_hold(&st->held, atoll(PQgetvalue(r, 0, 1)), b->n_rows, &blk);
    }
    PQclear(r);
    chblock_free(&blk);
    return rc;
}

/* The day's partition of flow_packed (sql/024; wl_ensure_partitions names them) that a report's
 * flows go to, as binary COPY of packed rows (flow_pack.h): COPY into the partition itself, not
 * through the parent, spares the server the tuple routing set up per COPY (a report is one
 * window, so one day; reconciler/README.md "Round trips and COPY target"). */
void store_copy_target_sql(int64_t window_start_us, char *out, size_t len)
{
    char table[64];
    db_partition_name("flow_packed", window_start_us, table, sizeof table);
    flow_pack_copy_sql(table, out, len);
}

int store_pack_flows(struct flow_pack *p, const struct ingest_batch *b, bool header, bool trailer,
                     char *err, size_t errlen)
{
    char m[300] = "packing flow records: out of memory";
    if ((header && flow_pack_header(p) < 0) ||
        flow_pack_rows(p, b->copy, b->copy_len, m, sizeof m) < 0 ||
        (trailer && flow_pack_trailer(p) < 0)) {
        store_set_err(err, errlen, "flow_records", m);
        return -1;
    }
    return 0;
}

/* A report in one transaction of four round trips, PostgreSQL only: {BEGIN, its flow_reports
 * row} in one pipeline, the flows' COPY (two: libpq waits for the server's CopyInResponse), then
 * {window mark, seq gaps, COMMIT} in one pipeline. With ClickHouse the row and the outbox block
 * are one statement (SQL_REPORT_OUTBOX, binary parameter) after a BEGIN of its own. The window's
 * mark comes last: it locks the window's window_state row until the commit, and every report of
 * the window waits for that lock (marking first would serialise their COPYs). */
static int write_attributions(struct store *st, const struct ingest_batch *b,
                              struct store_result *res, char *err, size_t errlen)
{
    char wsec[16];
    snprintf(wsec, sizeof(wsec), "%d", st->cfg->window_seconds);
    int fresh = 0;
    bool outbox = b->n_rows && st->cfg->clickhouse.enabled;
    if (outbox) {
        if (run(st->db, "BEGIN", "BEGIN", 0, NULL, NULL, NULL, err, errlen) < 0 ||
            write_report_outbox(st, b, wsec, &fresh, err, errlen) < 0)
            return -1;
    } else {
        /* the report's row; ch_pending is true only for a report with flows (chstore_flush.h) */
        const char *params[INGEST_REPORT_PARAMS + 1];
        memcpy(params, b->report, sizeof b->report);
        params[INGEST_REPORT_PARAMS] = st->cfg->clickhouse.enabled ? "true" : "false";
        struct pgc_stmt first[2] = {
            {.what = "BEGIN", .sql = "BEGIN"},
            {.what = "flow_reports",
             .sql = STORE_SQL_REPORT,
             .name = STORE_SQL_REPORT_NAME,
             .nparams = INGEST_REPORT_PARAMS + 1,
             .params = params},
        };
        if (pgc_pipeline_prep(st->db, &st->prep, first, 2, err, errlen) < 0)
            return -1;
        fresh = first[1].ntuples;
        if (fresh && b->n_rows) {
            char sql[1200];
            store_copy_target_sql(b->window_start_us, sql, sizeof sql);
            struct flow_pack pk = {0};
            int rc = store_pack_flows(&pk, b, true, true, err, errlen);
            if (rc == 0)
                rc = pgc_copy_in(st->db, "flow_records", sql, pk.out.p, pk.out.n, err, errlen);
            flow_pack_free(&pk);
            if (rc < 0)
                return -1;
        }
    }
    if (!fresh) /* a resend: the report and its flows are already stored */
        return run(st->db, "COMMIT", "COMMIT", 0, NULL, NULL, NULL, err, errlen);
    if (nasin_store(st->db, b->nas, st->cfg->window_seconds, err, errlen) < 0)
        return -1;
    const char *mark[2] = {wsec, b->report[3]};
    struct gaps_params gp;
    struct pgc_stmt last[3] = {{.what = "window_state",
                                .sql = SQL_MARK_ONE,
                                .name = "wl_st_mark_one",
                                .nparams = 2,
                                .params = mark}};
    int k = outbox ? 0 : 1; /* the outbox statement marked the window already */
    gaps_stmt(b, st->cfg->window_seconds, &gp, &last[k]);
    last[k + 1] = (struct pgc_stmt){.what = "COMMIT", .sql = "COMMIT"};
    if (pgc_pipeline_prep(st->db, &st->prep, last, k + 2, err, errlen) < 0)
        return -1;
    res->gaps = (size_t)last[k].first_value;
    res->stored = b->n_rows;
    return 0;
}

static int write_staged(struct store *st, const struct ingest_batch *b, struct store_result *res,
                        char *err, size_t errlen)
{
    if (!st->staged) {
        if (run(st->db, "staging tables", SQL_STAGING, 0, NULL, NULL, NULL, err, errlen) < 0)
            return -1;
        st->staged = true;
    }
    bool counters = b->kind == INGEST_COUNTERS;
    if (pgc_copy_in(st->db, counters ? "counter_samples" : "transfers",
                    counters ? "COPY wl_counter_in FROM STDIN" : "COPY wl_transfer_in FROM STDIN",
                    b->copy, b->copy_len, err, errlen) < 0)
        return -1;
    char wsec[16], span[16];
    snprintf(wsec, sizeof(wsec), "%d", st->cfg->window_seconds);
    snprintf(span, sizeof(span), "%d", recon_db_neighbour_span_seconds(st->cfg));
    const char *params[2] = {wsec, span};
    long stored = 0;
    if (run(st->db, counters ? "counter_samples" : "transfers",
            counters ? SQL_COUNTERS : SQL_TRANSFERS, counters ? 2 : 1, params, &stored, NULL, err,
            errlen) < 0)
        return -1;
    res->stored = (size_t)stored;
    return 0;
}

int store_ensure_days(struct store *st, const int64_t *days, size_t n, char *err, size_t errlen)
{
    /* only the days that hold rows (ingest bounds their number), one call per run of days;
     * days are sorted and distinct */
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j + 1 < n && days[j + 1] == days[j] + 1)
            j++;
        if (db_ensure_partitions(st->db, days[i] * 86400 * TM_USEC_PER_SEC,
                                 days[j] * 86400 * TM_USEC_PER_SEC, err, errlen) < 0)
            return -1;
        i = j + 1;
    }
    return 0;
}

static int write_once(struct store *st, const struct ingest_batch *b, struct store_result *res,
                      char *err, size_t errlen)
{
    if (b->n_rows == 0 && b->kind != INGEST_ATTRIBUTIONS)
        return 0;
    /* partitions first, in their own transaction: a rollback of ours must not undo them */
    if (store_ensure_days(st, b->days, b->n_days, err, errlen) < 0)
        return -1;
    int rc;
    if (b->kind == INGEST_ATTRIBUTIONS) {
        rc = write_attributions(st, b, res, err, errlen); /* its BEGIN and COMMIT pipelined */
    } else {
        rc = run(st->db, "BEGIN", "BEGIN", 0, NULL, NULL, NULL, err, errlen);
        if (rc == 0)
            rc = write_staged(st, b, res, err, errlen);
        if (rc == 0)
            rc = run(st->db, "COMMIT", "COMMIT", 0, NULL, NULL, NULL, err, errlen);
    }
    chq_release(&st->held, rc == 0); /* after COMMIT: queued for the flusher */
    if (rc < 0) {
        PGresult *r = PQexec(st->db, "ROLLBACK");
        PQclear(r);
        res->stored = 0;
        res->gaps = 0;
        /* the staging tables may have been created in the transaction just rolled back: a
         * later batch must create them again (CREATE ... IF NOT EXISTS costs nothing when they
         * do exist). Believing them staged made every later batch of this worker fail. */
        st->staged = false;
    }
    return rc;
}

int store_write(struct store *st, const struct ingest_batch *b, struct store_result *res, char *err,
                size_t errlen)
{
    res->received = b->n_rows;
    res->stored = 0;
    res->gaps = 0;
    for (int attempt = 0; attempt < 2; attempt++) {
        if (!store_db(st)) {
            snprintf(err, errlen, "database unreachable");
            return -1;
        }
        if (write_once(st, b, res, err, errlen) == 0)
            return 0;
        /* a partition this process made was dropped by another one's prune: make it again */
        if (PQstatus(st->db) == CONNECTION_OK && attempt == 0 &&
            (b->n_rows || b->kind == INGEST_ATTRIBUTIONS) &&
            db_partitions_stale(st->db, b->min_us, b->max_us))
            continue;
        if (PQstatus(st->db) == CONNECTION_OK)
            return -1; /* a real error, not a lost connection: do not retry */
    }
    return -1;
}
