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

#include "chshard.h"
#include "chstore.h"
#include "chstore_block.h"
#include "chstore_queue.h"
#include "db.h"
#include "flow_row.h"
#include "growbuf.h"
#include "log.h"
#include "timeutil.h"

static atomic_ullong rows_inserted, inserts_ok, inserts_failed, deferred, shard_inserts;

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

/* Room for total bytes in an empty buffer, without copying what it held. */
static int buf_reserve(struct buf *b, size_t total)
{
    b->p = gb_fresh(b->p, &b->cap, total);
    return b->p ? 0 : -1;
}

/* Room for more bytes after what b holds (copy_out asks once per row: the test stays inline). */
static int buf_need(struct buf *b, size_t more)
{
    if (b->n + more <= b->cap)
        return 0;
    char *p = gb_grow(b->p, &b->cap, b->n + more, 1 << 16);
    if (!p)
        return -1;
    b->p = p;
    return 0;
}

/* The rows of one shipment: one buffer for one INSERT through flow_records, or with
 * shard_urls one per shard (chshard.h). The shard map is read from the cluster at the first
 * shipment and again every SHARDS_REFRESH_S, or after a failed shipment; shipments hold it while
 * they split and insert (one at a time: the flusher's advisory lock serialises them anyway). */
#define SHARDS_REFRESH_S 60

struct parts {
    const struct chshard *sh; /* NULL: one INSERT through flow_records */
    size_t n;
    struct buf *b;
};

static pthread_mutex_t shard_mu = PTHREAD_MUTEX_INITIALIZER;
static struct chshard shard_map;
static const struct cfg_clickhouse *shard_cfg; /* the configuration shard_map was read for */
static int64_t shard_read_ns;
/* The parts' buffers, kept from one shipment to the next while shipments keep coming: a batch's
 * megabytes written into pages already mapped, not into fresh ones each time (the first write to
 * a fresh page, and a realloc's copy, were a fifth of the process's CPU while ingesting). Freed
 * after PARTS_KEEP_S without a shipment. */
#define PARTS_KEEP_S 30
static struct buf *kept;
static size_t n_kept;
static int64_t kept_used_ns;

/* Locks the shard map (read when due) and sets up ps; -1 with err (the map could not be read:
 * nothing is shipped). parts_done always follows. */
static int parts_begin(const struct cfg_clickhouse *ch, struct parts *ps, char *err, size_t errlen)
{
    memset(ps, 0, sizeof *ps);
    pthread_mutex_lock(&shard_mu);
    if (ch->n_shard_urls) {
        int64_t now = tm_mono_ns();
        if (shard_cfg != ch || now - shard_read_ns > SHARDS_REFRESH_S * INT64_C(1000000000)) {
            chshard_free(&shard_map);
            shard_cfg = NULL;
            if (chshard_resolve(ch, &shard_map, err, errlen) < 0)
                return -1;
            shard_cfg = ch;
            shard_read_ns = now;
        }
        ps->sh = &shard_map;
    }
    ps->n = ps->sh ? ps->sh->n : 1;
    if (n_kept < ps->n) {
        struct buf *k = realloc(kept, ps->n * sizeof *k);
        if (!k) {
            snprintf(err, errlen, "clickhouse outbox: out of memory");
            return -1;
        }
        memset(k + n_kept, 0, (ps->n - n_kept) * sizeof *k);
        kept = k;
        n_kept = ps->n;
    }
    ps->b = kept;
    for (size_t i = 0; i < ps->n; i++)
        ps->b[i].n = 0;
    return 0;
}

/* After a failure the map is read again next time (a shard may have moved). */
static void parts_done(struct parts *ps, bool failed)
{
    kept_used_ns = tm_mono_ns();
    if (failed)
        shard_cfg = NULL;
    pthread_mutex_unlock(&shard_mu);
    memset(ps, 0, sizeof *ps);
}

/* Room in each part for the blocks of sent_len[i] bytes (framed, as sent) headed to key[i], made
 * before framing: one allocation per part at most, none once the kept buffers are big enough. */
static int parts_reserve(struct parts *ps, const uint64_t *key, const size_t *sent_len, size_t n,
                         char *err, size_t errlen)
{
    size_t *total = calloc(ps->n, sizeof *total);
    if (!total) {
        snprintf(err, errlen, "clickhouse outbox: out of memory");
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        total[ps->sh ? chshard_of(ps->sh, key[i]) : 0] += sent_len[i];
    int rc = 0;
    for (size_t i = 0; i < ps->n && rc == 0; i++)
        if (buf_reserve(&ps->b[i], total[i]) < 0) {
            snprintf(err, errlen, "clickhouse outbox: out of memory for %zu bytes", total[i]);
            rc = -1;
        }
    free(total);
    return rc;
}

/* The kept buffers freed once no shipment has used them for PARTS_KEEP_S. */
static void parts_trim(int64_t now)
{
    pthread_mutex_lock(&shard_mu);
    if (n_kept && now - kept_used_ns > PARTS_KEEP_S * INT64_C(1000000000)) {
        for (size_t i = 0; i < n_kept; i++)
            free(kept[i].p);
        free(kept);
        kept = NULL;
        n_kept = 0;
    }
    pthread_mutex_unlock(&shard_mu);
}

/* Where the rows of a report with sharding key key go. */
static struct buf *parts_for(struct parts *ps, uint64_t key)
{
    return &ps->b[ps->sh ? chshard_of(ps->sh, key) : 0];
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
     * the limit a number; the UPDATE below names the same set with parameters. Each report's
     * packed rows are unpacked on their own (a LATERAL subquery per report, OFFSET 0 so that it
     * is not flattened): a join with the flow_records view unpacked the whole window for every
     * batch before keeping the batch's reports, O(window) per batch. */
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
             " SELECT %s FROM (SELECT f.* FROM k, LATERAL (SELECT * FROM flow_records r"
             " WHERE r.window_start = %s::timestamptz AND r.agent_id = k.agent_id"
             " AND r.seq = k.seq OFFSET 0) f) q) TO STDOUT",
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

/* The outbox blocks ch_outbox holds: up to $1 rows' worth of the oldest (at least one) in the
 * oldest one's format (sql/035: Native, or TabSeparated from before), read in binary (the block as
 * stored, no hex). $2: the ids this process holds in memory (chstore_queue.h), shipped from there
 * instead. */
static const char SQL_OUTBOX_READ[] =
    "WITH f AS (SELECT format FROM ch_outbox WHERE id <> ALL($2::bigint[]) ORDER BY id LIMIT 1),"
    " k AS (SELECT id FROM (SELECT id, n_rows, sum(n_rows) OVER (ORDER BY id) AS cum"
    " FROM ch_outbox WHERE id <> ALL($2::bigint[]) AND format = (SELECT format FROM f)"
    " ORDER BY id LIMIT $1::bigint) x WHERE cum - n_rows < $1::bigint)"
    " SELECT o.id::text, o.n_rows, o.raw_bytes, o.coding, o.block, o.agent_id, o.seq, o.format"
    " FROM ch_outbox o JOIN k"
    " USING (id) ORDER BY o.id";

/* After ClickHouse's 200: the blocks leave the outbox and their reports are marked, together. */
static const char SQL_OUTBOX_DONE[] =
    "WITH d AS (DELETE FROM ch_outbox WHERE id = ANY($1::bigint[])"
    " RETURNING agent_id, seq, window_start)"
    " UPDATE flow_reports f SET ch_pending = false FROM d WHERE f.agent_id = d.agent_id"
    " AND f.seq = d.seq AND f.window_start = d.window_start AND f.ch_pending";

static uint64_t be64(const char *p)
{
    return (uint64_t)be32(p) << 32 | be32(p + 4);
}

/* Frames the blocks of r (SQL_OUTBOX_READ's binary result) one after another into their parts,
 * their ids into ids ("{1,2,...}"). 0 or -1 with err. */
static int outbox_concat(PGresult *r, struct parts *ps, struct buf *ids, size_t *rows, char *err,
                         size_t errlen)
{
    int n = PQntuples(r);
    if (buf_need(ids, (size_t)n * 21 + 3) < 0) {
        snprintf(err, errlen, "clickhouse outbox: out of memory");
        return -1;
    }
    ids->p[ids->n++] = '{';
    uint64_t *key = malloc(((size_t)n + 1) * sizeof *key);
    size_t *sent_len = malloc(((size_t)n + 1) * sizeof *sent_len);
    int rc = key && sent_len ? 0 : -1;
    for (int i = 0; i < n && rc == 0; i++) {
        key[i] = chshard_key(PQgetvalue(r, i, 5), (size_t)PQgetlength(r, i, 5),
                             be64(PQgetvalue(r, i, 6)));
        sent_len[i] = CHBLOCK_FRAME_HEAD + (size_t)PQgetlength(r, i, 4);
    }
    if (rc < 0)
        snprintf(err, errlen, "clickhouse outbox: out of memory");
    else
        rc = parts_reserve(ps, key, sent_len, (size_t)n, err, errlen);
    free(sent_len);
    if (rc < 0) {
        free(key);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        size_t raw = be32(PQgetvalue(r, i, 2)), stored = (size_t)PQgetlength(r, i, 4);
        struct buf *data = parts_for(ps, key[i]);
        if (buf_need(data, CHBLOCK_FRAME_HEAD + stored) < 0) {
            free(key);
            snprintf(err, errlen, "clickhouse outbox: out of memory for %zu bytes", stored);
            return -1;
        }
        char coding[16];
        snprintf(coding, sizeof coding, "%.*s", PQgetlength(r, i, 3), PQgetvalue(r, i, 3));
        size_t framed = chblock_frame(coding, PQgetvalue(r, i, 4), stored, raw, data->p + data->n);
        if (!framed) {
            snprintf(err, errlen,
                     "clickhouse outbox: block %.*s cannot be sent (coding %s, %zu bytes stored)",
                     PQgetlength(r, i, 0), PQgetvalue(r, i, 0), coding, stored);
            free(key);
            return -1;
        }
        data->n += framed;
        *rows += be32(PQgetvalue(r, i, 1));
        ids->n += (size_t)snprintf(ids->p + ids->n, 22, "%s%.*s", i ? "," : "",
                                   PQgetlength(r, i, 0), PQgetvalue(r, i, 0));
    }
    free(key);
    ids->p[ids->n++] = '}';
    ids->p[ids->n] = 0;
    return 0;
}

/* One INSERT … FORMAT fmt ("Native", or "TabSeparated" for rows from before sql/035) of the parts
 * (blocks of ClickHouse's compressed format one after another, chblock_frame: the server
 * decompresses them, decompress=1): through flow_records, or one per shard into its
 * flow_records_local at once. 0 after every 200, or -1 with err. */
static int insert_blocks(const struct cfg_clickhouse *ch, const struct parts *ps, const char *fmt,
                         char *err, size_t errlen)
{
    char names[768], ins[1024];
    if (flow_row_list(names, sizeof names, FRL_NAMES, FLOW_ROW_ALL, NULL, NULL) < 0)
        abort(); /* a fixed list that fits: only a change to flow_row.c can get here */
    if (ps->sh) {
        snprintf(ins, sizeof ins, "INSERT INTO %s.flow_records_local (%s) FORMAT %s", ch->database,
                 names, fmt);
        char **data = calloc(ps->n, sizeof *data);
        size_t *len = calloc(ps->n, sizeof *len);
        int rc = -1;
        if (data && len) {
            unsigned long long sent = 0;
            for (size_t i = 0; i < ps->n; i++)
                data[i] = ps->b[i].p, len[i] = ps->b[i].n, sent += len[i] > 0;
            rc = chshard_insert(ps->sh, ins, "decompress=1", data, len, err, errlen);
            if (rc == 0)
                atomic_fetch_add(&shard_inserts, sent);
        } else {
            snprintf(err, errlen, "clickhouse outbox: out of memory");
        }
        free(data);
        free(len);
        return rc;
    }
    snprintf(ins, sizeof ins, "INSERT INTO %s (%s) FORMAT %s", chstore_table(ch), names, fmt);
    struct httpc_response resp;
    int rc = chstore_exec(ch, ins, ps->b[0].p, ps->b[0].n,
                          ch->cluster ? "decompress=1&insert_distributed_sync=1" : "decompress=1",
                          &resp, err, errlen);
    if (rc == 0)
        httpc_response_free(&resp);
    return rc;
}

/* Inside the transaction: the outbox of sql/017. Reads the oldest blocks, inserts them as one
 * INSERT in their format, and after the 200 deletes them and marks their reports. */
static int ship_outbox(PGconn *db, const struct cfg *cfg, struct chflush_batch *b, char *err,
                       size_t errlen)
{
    const struct cfg_clickhouse *ch = &cfg->clickhouse;
    int mine = lock_flusher(db, err, errlen);
    if (mine <= 0)
        return mine;
    char lim[24];
    snprintf(lim, sizeof lim, "%d", ch->batch_rows);
    char *queued = chq_ids();
    if (!queued) {
        snprintf(err, errlen, "clickhouse outbox: out of memory");
        return -1;
    }
    const char *p[] = {lim, queued};
    PGresult *r = PQexecParams(db, SQL_OUTBOX_READ, 2, NULL, p, NULL, NULL, 1);
    free(queued);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        snprintf(err, errlen, "clickhouse outbox: reading blocks: %s", PQresultErrorMessage(r));
        PQclear(r);
        return -1;
    }
    if (PQntuples(r) == 0) {
        PQclear(r);
        return 0;
    }
    struct buf ids = {0};
    struct parts ps;
    size_t rows = 0;
    /* every row read has the first one's format (SQL_OUTBOX_READ) */
    const char *fmt = strncmp(PQgetvalue(r, 0, 7), "tsv", 4) == 0 ? "TabSeparated" : "Native";
    int rc = parts_begin(ch, &ps, err, errlen);
    if (rc == 0)
        rc = outbox_concat(r, &ps, &ids, &rows, err, errlen);
    PQclear(r);
    if (rc == 0)
        rc = insert_blocks(ch, &ps, fmt, err, errlen);
    parts_done(&ps, rc != 0);
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

/* The rows of ch_outbox among $1 still there, locked until the transaction ends: a row shipped
 * from the table meanwhile (another reconciler, or read before it was queued) is gone and its
 * memory copy is skipped, so that no block goes twice while both copies exist. */
static const char SQL_MEM_LOCK[] =
    "SELECT id FROM ch_outbox WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE";

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Inside the transaction: frames the blocks of list whose ids r (SQL_MEM_LOCK) returned into
 * their parts. 0 or -1 with err. */
static int memory_concat(PGresult *r, const struct chq_block *list, struct parts *ps, size_t *rows,
                         size_t *blocks, char *err, size_t errlen)
{
    int n = PQntuples(r);
    int64_t *ids = malloc(((size_t)n + 1) * sizeof *ids);
    if (!ids) {
        snprintf(err, errlen, "clickhouse outbox: out of memory");
        return -1;
    }
    for (int i = 0; i < n; i++)
        ids[i] = atoll(PQgetvalue(r, i, 0));
    qsort(ids, (size_t)n, sizeof *ids, cmp_i64); /* ORDER BY id: already sorted; cheap */
    size_t nblk = 0;
    for (const struct chq_block *b = list; b; b = b->next)
        nblk++;
    uint64_t *key = malloc((nblk + 1) * sizeof *key);
    size_t *sent_len = malloc((nblk + 1) * sizeof *sent_len);
    int rc = key && sent_len ? 0 : -1;
    nblk = 0;
    for (const struct chq_block *b = list; b && rc == 0; b = b->next)
        if (bsearch(&b->id, ids, (size_t)n, sizeof *ids, cmp_i64)) {
            key[nblk] = b->blk.key;
            sent_len[nblk++] = CHBLOCK_FRAME_HEAD + b->blk.len;
        }
    if (rc < 0)
        snprintf(err, errlen, "clickhouse outbox: out of memory");
    else
        rc = parts_reserve(ps, key, sent_len, nblk, err, errlen);
    free(key);
    free(sent_len);
    for (const struct chq_block *b = list; b && rc == 0; b = b->next) {
        if (!bsearch(&b->id, ids, (size_t)n, sizeof *ids, cmp_i64))
            continue; /* shipped already, from ch_outbox */
        struct buf *data = parts_for(ps, b->blk.key);
        size_t framed = buf_need(data, CHBLOCK_FRAME_HEAD + b->blk.len) < 0
                            ? 0
                            : chblock_frame(b->blk.coding, b->blk.data, b->blk.len, b->blk.raw_len,
                                            data->p + data->n);
        if (!framed) {
            snprintf(err, errlen, "clickhouse outbox: block %lld cannot be sent from memory",
                     (long long)b->id);
            rc = -1;
            break;
        }
        data->n += framed;
        *rows += b->rows;
        (*blocks)++;
    }
    free(ids);
    return rc;
}

/* Ships blocks taken from the in-memory queue (chstore_queue.h) without reading them back: in
 * one READ COMMITTED transaction the advisory lock, their ch_outbox rows locked, one INSERT of
 * those still there, and after the 200 the rows deleted and their reports marked
 * (SQL_OUTBOX_DONE), committed. Takes list: freed when shipped, put back at the head of the
 * queue when anything failed or another process is the flusher. 0 with b filled, 1 when
 * another process is the flusher, or -1 with err. */
static int ship_memory(PGconn *db, const struct cfg *cfg, struct chq_block *list,
                       struct chflush_batch *b, char *err, size_t errlen)
{
    memset(b, 0, sizeof *b);
    size_t nblk = 0;
    for (struct chq_block *l = list; l; l = l->next)
        nblk++;
    struct buf ids = {0};
    if (buf_need(&ids, nblk * 21 + 3) < 0) {
        snprintf(err, errlen, "clickhouse outbox: out of memory");
        chq_putback(list);
        return -1;
    }
    ids.p[ids.n++] = '{';
    for (struct chq_block *l = list; l; l = l->next)
        ids.n +=
            (size_t)snprintf(ids.p + ids.n, 22, "%s%lld", l == list ? "" : ",", (long long)l->id);
    ids.p[ids.n++] = '}';
    ids.p[ids.n] = 0;
    const char *p[] = {ids.p};
    size_t rows = 0, nship = 0;
    int rc = -1, mine = 0;
    PGresult *r = q(db, "BEGIN", "BEGIN ISOLATION LEVEL READ COMMITTED", 0, NULL, err, errlen);
    if (r) {
        PQclear(r);
        mine = lock_flusher(db, err, errlen);
        rc = mine < 0 ? -1 : 0;
    }
    if (mine > 0 && (r = q(db, "locking blocks", SQL_MEM_LOCK, 1, p, err, errlen))) {
        struct parts ps;
        rc = parts_begin(&cfg->clickhouse, &ps, err, errlen);
        if (rc == 0)
            rc = memory_concat(r, list, &ps, &rows, &nship, err, errlen);
        PQclear(r);
        if (rc == 0 && rows)
            rc = insert_blocks(&cfg->clickhouse, &ps, "Native", err, errlen); /* built here */
        parts_done(&ps, rc != 0);
        if (rc == 0 && rows) {
            rc = (r = q(db, "marking reports", SQL_OUTBOX_DONE, 1, p, err, errlen)) ? 0 : -1;
            if (r)
                b->reports = (size_t)atol(PQcmdTuples(r));
            PQclear(r);
        }
        if (rc == 0 && !(r = q(db, "COMMIT", "COMMIT", 0, NULL, err, errlen)))
            rc = -1;
        if (rc == 0)
            PQclear(r);
    } else if (mine > 0) {
        rc = -1;
    }
    free(ids.p);
    if (rc < 0 || mine <= 0)
        PQclear(PQexec(db, "ROLLBACK"));
    if (rc < 0 || mine == 0) {
        chq_putback(list); /* still in ch_outbox as well; retried from memory */
        memset(b, 0, sizeof *b);
        if (rc < 0)
            atomic_fetch_add(&inserts_failed, 1);
        return rc < 0 ? -1 : 1;
    }
    chq_free_list(list);
    chq_note_shipped(nship);
    b->rows = rows;
    atomic_fetch_add(&rows_inserted, rows);
    if (b->reports)
        atomic_fetch_add(&inserts_ok, 1);
    return 0;
}

struct chflush {
    const struct cfg *cfg;
    pthread_t thread;
    atomic_bool stop;
};

/* Whether the queued blocks go now: batch_rows of them; or the oldest has waited
 * CHFLUSH_PARTIAL_MS; or nothing new came for CHFLUSH_QUIET_MS and the last insert is
 * CHFLUSH_MIN_GAP_MS ago. Otherwise *next_ns: when they would. */
static bool memory_due(const struct chq_state *s, size_t batch, int64_t now, int64_t last_insert,
                       int64_t *next_ns)
{
    const int64_t ms = 1000000;
    *next_ns = INT64_MAX;
    if (!s->rows)
        return false;
    if (s->rows >= batch)
        return true;
    int64_t quiet = s->last_ns + CHFLUSH_QUIET_MS * ms;
    if (last_insert + CHFLUSH_MIN_GAP_MS * ms > quiet)
        quiet = last_insert + CHFLUSH_MIN_GAP_MS * ms;
    int64_t full = s->first_ns + CHFLUSH_PARTIAL_MS * ms;
    *next_ns = quiet < full ? quiet : full;
    return now >= *next_ns;
}

/* One round: the queued blocks when due, and ch_outbox (what is not queued: after a restart, an
 * overflow, another process's) every CHFLUSH_PARTIAL_MS or at once after a full batch. 0 with
 * *more (a full batch went) and *busy (another process is the flusher), or -1 with err. */
static int round_once(PGconn *db, const struct cfg *cfg, int64_t *last_table, int64_t *last_insert,
                      bool *more, bool *busy, char *err, size_t errlen)
{
    size_t batch = (size_t)cfg->clickhouse.batch_rows;
    struct chq_state s;
    int64_t next, now = tm_mono_ns();
    chq_state(&s);
    *more = false;
    if (memory_due(&s, batch, now, *last_insert, &next)) {
        struct chflush_batch b;
        int rc = ship_memory(db, cfg, chq_take(batch), &b, err, errlen);
        if (rc < 0)
            return -1;
        *busy = rc == 1;
        if (b.reports)
            *last_insert = now;
        chq_state(&s);
        *more = b.reports && s.rows >= batch;
    }
    if (now - *last_table >= CHFLUSH_PARTIAL_MS * INT64_C(1000000)) {
        struct chflush_batch b;
        *last_table = now;
        if (chflush_once(db, cfg, &b, err, errlen) < 0)
            return -1;
        if (b.reports)
            *last_insert = now;
        if (b.more)
            *last_table = INT64_MIN / 2, *more = true;
    }
    return 0;
}

static void prune_hourly(const struct cfg *cfg, int64_t *last_prune)
{
    if (tm_mono_ns() - *last_prune <= 3600 * INT64_C(1000000000))
        return;
    int dropped = 0;
    char perr[512];
    *last_prune = tm_mono_ns();
    if (chstore_prune(&cfg->clickhouse, cfg->retention_raw_days, tm_now_us(), &dropped, perr,
                      sizeof perr) < 0)
        log_error("clickhouse", "retention: %s", perr);
    else if (dropped)
        log_info("clickhouse", "retention: dropped %d day partition(s)", dropped);
}

static void *run(void *arg)
{
    struct chflush *f = arg;
    const struct cfg *cfg = f->cfg;
    PGconn *db = NULL;
    bool schema = false;
    long backoff = 0;
    int64_t last_log = 0, last_prune = INT64_MIN / 2; /* once an hour, first at start */
    int64_t last_table = INT64_MIN / 2, last_insert = INT64_MIN / 2;
    char err[512];
    while (!atomic_load(&f->stop)) {
        int rc = -1;
        bool more = false, busy = false;
        if (!db || PQstatus(db) != CONNECTION_OK) {
            if (db)
                PQfinish(db);
            db = db_connect(cfg, err, sizeof err);
        }
        if (db && !schema)
            schema = chstore_ensure_schema(&cfg->clickhouse, err, sizeof err) == 0;
        if (db && schema)
            rc = round_once(db, cfg, &last_table, &last_insert, &more, &busy, err, sizeof err);
        if (schema)
            prune_hourly(cfg, &last_prune);
        int64_t now = tm_mono_ns();
        parts_trim(now);
        if (rc == 0) {
            if (backoff)
                log_info("clickhouse", "outbox flushing again");
            backoff = 0;
            if (more)
                continue; /* a full batch: more is waiting */
            if (busy) {   /* another reconciler's flusher holds the lock for its insert */
                chq_wait(now + CHFLUSH_QUIET_MS * INT64_C(1000000), SIZE_MAX);
                continue;
            }
            struct chq_state s;
            int64_t until = last_table + CHFLUSH_PARTIAL_MS * INT64_C(1000000), next;
            chq_state(&s);
            memory_due(&s, (size_t)cfg->clickhouse.batch_rows, now, last_insert, &next);
            chq_wait(next < until ? next : until, (size_t)cfg->clickhouse.batch_rows);
            continue;
        }
        schema = false; /* a restarted server may have lost a fresh database */
        backoff = backoff ? (backoff * 2 > 10000 ? 10000 : backoff * 2) : 500;
        if (now - last_log > 60 * INT64_C(1000000000)) {
            log_error("clickhouse", "outbox: %s (retrying; flows wait in PostgreSQL)", err);
            last_log = now;
        }
        chq_wait(now + backoff * INT64_C(1000000), SIZE_MAX);
    }
    chq_enable(false); /* what is still queued is in ch_outbox */
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
    atomic_init(&f->stop, false);
    chq_enable(true);
    if (pthread_create(&f->thread, NULL, run, f) != 0) {
        snprintf(err, errlen, "cannot start the ClickHouse flusher thread");
        chq_enable(false);
        free(f);
        return NULL;
    }
    return f;
}

void chflush_stop(struct chflush *f)
{
    if (!f)
        return;
    atomic_store(&f->stop, true);
    chq_kick();
    pthread_join(f->thread, NULL);
    parts_trim(INT64_MAX);
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
        "# HELP wanledger_clickhouse_outbox_raw_bytes Bytes of those blocks decoded (Native, or "
        "TabSeparated for rows from before sql/035).\n"
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
        "# HELP wanledger_clickhouse_shard_inserts_total INSERTs sent straight to a shard's local "
        "table (analytics.clickhouse.shard_urls), one per shard with rows.\n"
        "# TYPE wanledger_clickhouse_shard_inserts_total counter\n"
        "wanledger_clickhouse_shard_inserts_total %llu\n"
        "# HELP wanledger_clickhouse_deferred_total Reconciliations put off because the window's "
        "flows were not all in ClickHouse.\n"
        "# TYPE wanledger_clickhouse_deferred_total counter\n"
        "wanledger_clickhouse_deferred_total %llu\n",
        reports, flows, windows, (unsigned long long)atomic_load(&rows_inserted),
        (unsigned long long)atomic_load(&inserts_ok),
        (unsigned long long)atomic_load(&inserts_failed),
        (unsigned long long)atomic_load(&shard_inserts),
        (unsigned long long)atomic_load(&deferred));
    chq_metrics(out);
}
