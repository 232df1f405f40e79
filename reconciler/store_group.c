/* Grouped commit of agent reports (see store_group.h). */
#include "store_group.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chstore_block.h"
#include "chstore_queue.h"
#include "gaps.h"
#include "log.h"
#include "nasin.h"
#include "pgc.h"
#include "flow_pack.h"
#include "store_internal.h"
#include "timeutil.h"

/* With ClickHouse, a report with flows: its row and its flows as one outbox block in one
 * statement (store_internal.h), nothing when the row exists (r empty). One row (the outbox id)
 * for a fresh report. Its window is marked with the group's. */
static const char SQL_ROW_OUTBOX[] = STORE_SQL_ROW_OUTBOX_CTES " SELECT id FROM o";

/* Every window of the group's fresh reports, distinct and in time order ($2, a timestamptz[]):
 * rows are locked in the array's order, so two groups never wait for each other in a cycle. */
static const char SQL_MARK_MANY[] =
    "WITH w AS (SELECT unnest($2::timestamptz[]) AS ws)" MARK_WINDOWS;

/* reports per ingest transaction of agent reports */
static const unsigned SIZES[] = {1, 2, 4, 8, 16};
#define N_SIZES (sizeof SIZES / sizeof SIZES[0])
static atomic_ullong size_bucket[N_SIZES + 1], commits, reports, fallbacks;

static void observe(size_t n)
{
    size_t k = 0;
    while (k < N_SIZES && n > SIZES[k])
        k++;
    atomic_fetch_add(&size_bucket[k], 1);
    atomic_fetch_add(&commits, 1);
    atomic_fetch_add(&reports, n);
}

bool store_groupable(const struct ingest_batch *b)
{
    return b->kind == INGEST_ATTRIBUTIONS && nasin_rows(b->nas) == 0;
}

/* A member of the group: the item's index (arrival order) and its key. */
struct member {
    size_t idx;
    const struct ingest_batch *b;
    long long seq;
    bool fresh;
    long outbox_id;
};

static int member_cmp(const void *x, const void *y)
{
    const struct member *a = x, *b = y;
    int c = strcmp(a->b->report[0], b->b->report[0]);
    if (c)
        return c;
    if (a->seq != b->seq)
        return a->seq < b->seq ? -1 : 1;
    if (a->b->window_start_us != b->b->window_start_us)
        return a->b->window_start_us < b->b->window_start_us ? -1 : 1;
    return a->idx < b->idx ? -1 : a->idx > b->idx; /* an exact resend: the first to arrive wins */
}

static int i64_cmp(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return a < b ? -1 : a > b;
}

static size_t sort_distinct(int64_t *v, size_t n)
{
    qsort(v, n, sizeof *v, i64_cmp);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (k == 0 || v[k - 1] != v[i])
            v[k++] = v[i];
    return k;
}

static int64_t day_of(int64_t us)
{
    int64_t d = 86400 * TM_USEC_PER_SEC;
    return us >= 0 ? us / d : -((-us + d - 1) / d);
}

/* The rows of every fresh member in mem[0..m) of day into its partition, in one COPY. */
static int copy_day(PGconn *db, const struct member *mem, size_t m, int64_t day, char *err,
                    size_t errlen)
{
    const size_t chunk = 1u << 20;
    char sql[1200];
    store_copy_target_sql(day * 86400 * TM_USEC_PER_SEC, sql, sizeof sql);
    PGresult *r = PQexec(db, sql);
    if (PQresultStatus(r) != PGRES_COPY_IN) {
        store_set_err(err, errlen, "flow_records",
                      r ? PQresultErrorMessage(r) : PQerrorMessage(db));
        PQclear(r);
        return -1;
    }
    PQclear(r);
    /* the members' packed rows (flow_pack.h) in one binary COPY stream */
    struct flow_pack pk = {0};
    bool first = true;
    int rc = 0;
    for (size_t i = 0; i < m && rc == 0; i++) {
        const struct ingest_batch *b = mem[i].b;
        if (!mem[i].fresh || !b->n_rows || day_of(b->window_start_us) != day)
            continue;
        rc = store_pack_flows(&pk, b, first, false, err, errlen);
        first = false;
    }
    if (rc == 0 && !first && flow_pack_trailer(&pk) < 0) {
        store_set_err(err, errlen, "flow_records", "packing flow records: out of memory");
        rc = -1;
    }
    for (size_t off = 0; off < pk.out.n && rc == 0; off += chunk) {
        size_t n = pk.out.n - off < chunk ? pk.out.n - off : chunk;
        if (PQputCopyData(db, pk.out.p + off, (int)n) != 1) {
            store_set_err(err, errlen, "flow_records", PQerrorMessage(db));
            rc = -1;
        }
    }
    flow_pack_free(&pk);
    if (PQputCopyEnd(db, rc == 0 ? NULL : "aborted by the client") != 1 && rc == 0) {
        store_set_err(err, errlen, "flow_records", PQerrorMessage(db));
        rc = -1;
    }
    while ((r = PQgetResult(db)) != NULL) {
        if (PQresultStatus(r) != PGRES_COMMAND_OK && rc == 0) {
            store_set_err(err, errlen, "flow_records", PQresultErrorMessage(r));
            rc = -1;
        }
        PQclear(r);
    }
    return rc;
}

void store_group_prepare(const struct cfg *cfg, const struct ingest_batch *b, struct chblock *blk)
{
    memset(blk, 0, sizeof *blk);
    if (cfg->clickhouse.enabled && b->n_rows && b->native &&
        chblock_build(b->native, b->window_start_us, b->report[0], b->report[1], blk) < 0)
        memset(blk, 0, sizeof *blk);
}

/* What the first round trip needs per member: its statement's parameters. */
struct row_args {
    const char *p[INGEST_REPORT_PARAMS + 4];
    int lens[INGEST_REPORT_PARAMS + 4], fmts[INGEST_REPORT_PARAMS + 4]; /* the block binary */
    char nrows[24], raw[24];
    struct chblock blk;
};

/* BEGIN and every member's row (and outbox block) in one pipeline; fills mem[].fresh. */
static int write_rows(struct store *st, struct sg_item *it, struct member *mem, size_t m,
                      struct row_args *a, char *err, size_t errlen)
{
    bool ch = st->cfg->clickhouse.enabled;
    struct pgc_stmt s[1 + SG_MAX_REPORTS] = {{.what = "BEGIN", .sql = "BEGIN"}};
    for (size_t i = 0; i < m; i++) {
        const struct ingest_batch *b = mem[i].b;
        memcpy(a[i].p, b->report, sizeof b->report);
        s[1 + i] = (struct pgc_stmt){.what = "flow_reports",
                                     .sql = STORE_SQL_REPORT,
                                     .name = STORE_SQL_REPORT_NAME,
                                     .nparams = INGEST_REPORT_PARAMS + 1,
                                     .params = a[i].p};
        a[i].p[INGEST_REPORT_PARAMS] = ch ? "true" : "false";
        if (!ch || !b->n_rows)
            continue;
        struct chblock *pre = &it[mem[i].idx].blk; /* built where it was parsed */
        if (pre->data) {
            a[i].blk = *pre;
            memset(pre, 0, sizeof *pre);
        }
        if (store_outbox_params(b, &a[i].blk, a[i].nrows, a[i].raw, a[i].p, a[i].lens, a[i].fmts,
                                err, errlen) < 0)
            return -1;
        s[1 + i].what = "flow_reports/ch_outbox";
        s[1 + i].sql = SQL_ROW_OUTBOX;
        s[1 + i].name = "wl_sg_row_outbox";
        s[1 + i].nparams = INGEST_REPORT_PARAMS + 4;
        s[1 + i].lengths = a[i].lens;
        s[1 + i].formats = a[i].fmts;
    }
    if (pgc_pipeline_prep(st->db, &st->prep, s, (int)(1 + m), err, errlen) < 0)
        return -1;
    for (size_t i = 0; i < m; i++) {
        mem[i].fresh = s[1 + i].ntuples > 0;
        mem[i].outbox_id = s[1 + i].first_value;
    }
    return 0;
}

/* The mark of every fresh member's window, their gaps and the COMMIT in one pipeline. */
static int write_last(struct store *st, struct sg_item *it, const struct member *mem, size_t m,
                      char *err, size_t errlen)
{
    int64_t ws[SG_MAX_REPORTS];
    size_t nw = 0;
    for (size_t i = 0; i < m; i++)
        if (mem[i].fresh)
            ws[nw++] = mem[i].b->window_start_us;
    nw = sort_distinct(ws, nw);
    char arr[SG_MAX_REPORTS * (TM_RFC3339_LEN + 3) + 3], t[TM_RFC3339_LEN];
    size_t off = 0;
    arr[off++] = '{';
    for (size_t i = 0; i < nw; i++)
        off += (size_t)snprintf(arr + off, sizeof arr - off, "%s\"%s\"", i ? "," : "",
                                tm_format_rfc3339(ws[i], t));
    snprintf(arr + off, sizeof arr - off, "}");
    char wsec[16];
    snprintf(wsec, sizeof wsec, "%d", st->cfg->window_seconds);
    const char *mark[2] = {wsec, arr};
    struct pgc_stmt s[2 + SG_MAX_REPORTS];
    struct gaps_params gp[SG_MAX_REPORTS];
    size_t gap_of[SG_MAX_REPORTS];
    int n = 0;
    if (nw)
        s[n++] = (struct pgc_stmt){.what = "window_state",
                                   .sql = SQL_MARK_MANY,
                                   .name = "wl_sg_mark",
                                   .nparams = 2,
                                   .params = mark};
    int first_gap = n;
    for (size_t i = 0; i < m; i++)
        if (mem[i].fresh) {
            gap_of[n - first_gap] = mem[i].idx;
            gaps_stmt(mem[i].b, st->cfg->window_seconds, &gp[n - first_gap], &s[n]);
            n++;
        }
    int n_gaps = n - first_gap;
    s[n++] = (struct pgc_stmt){.what = "COMMIT", .sql = "COMMIT"};
    if (pgc_pipeline_prep(st->db, &st->prep, s, n, err, errlen) < 0)
        return -1;
    for (int g = 0; g < n_gaps; g++)
        it[gap_of[g]].res.gaps = (size_t)s[first_gap + g].first_value;
    return 0;
}

/* The group's transaction: rows, one COPY per day (PostgreSQL only), marks, gaps, COMMIT. On -1
 * the transaction is not committed (the caller rolls back). */
static int group_once(struct store *st, struct sg_item *it, struct member *mem, size_t m, char *err,
                      size_t errlen)
{
    if (!store_db(st)) {
        snprintf(err, errlen, "database unreachable");
        return -1;
    }
    int64_t days[SG_MAX_REPORTS * INGEST_MAX_DAYS];
    size_t nd = 0;
    for (size_t i = 0; i < m; i++)
        for (size_t k = 0; k < mem[i].b->n_days; k++)
            days[nd++] = mem[i].b->days[k];
    nd = sort_distinct(days, nd);
    if (store_ensure_days(st, days, nd, err, errlen) < 0)
        return -1;
    struct row_args a[SG_MAX_REPORTS];
    memset(a, 0, sizeof a);
    int rc = write_rows(st, it, mem, m, a, err, errlen);
    if (rc == 0 && st->cfg->clickhouse.enabled) {
        for (size_t i = 0; i < m; i++) /* handed to the flusher after COMMIT (chstore_queue.h) */
            if (mem[i].fresh && a[i].blk.data)
                chq_hold(&st->held, mem[i].outbox_id, mem[i].b->n_rows, &a[i].blk);
    } else if (rc == 0) {
        int64_t fd[SG_MAX_REPORTS];
        size_t nf = 0;
        for (size_t i = 0; i < m; i++)
            if (mem[i].fresh && mem[i].b->n_rows)
                fd[nf++] = day_of(mem[i].b->window_start_us);
        nf = sort_distinct(fd, nf);
        for (size_t d = 0; d < nf && rc == 0; d++)
            rc = copy_day(st->db, mem, m, fd[d], err, errlen);
    }
    for (size_t i = 0; i < m; i++)
        chblock_free(&a[i].blk);
    if (rc == 0)
        rc = write_last(st, it, mem, m, err, errlen);
    return rc;
}

static void write_alone(struct store *st, struct sg_item *it)
{
    it->rc = store_write(st, it->b, &it->res, it->err, sizeof it->err);
    observe(1);
}

static void write_group(struct store *st, struct sg_item *it, size_t n);

void store_write_group(struct store *st, struct sg_item *it, size_t n)
{
    write_group(st, it, n);
    for (size_t i = 0; i < n; i++) /* not used: written alone, or not fresh */
        chblock_free(&it[i].blk);
}

static void write_group(struct store *st, struct sg_item *it, size_t n)
{
    struct member mem[SG_MAX_REPORTS];
    bool in_group[SG_MAX_REPORTS * 4];
    size_t m = 0;
    if (n > sizeof in_group / sizeof in_group[0]) { /* more than the workers ever hand over */
        for (size_t i = 0; i < n; i++)
            write_alone(st, &it[i]);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const struct ingest_batch *b = it[i].b;
        it[i].res = (struct store_result){.received = b->n_rows};
        it[i].rc = 0;
        it[i].err[0] = 0;
        long long seq = strtoll(b->report[1], NULL, 10);
        bool ok = store_groupable(b) && m < SG_MAX_REPORTS;
        for (size_t k = 0; k < m && ok; k++) /* one seq per agent, or exact resends of it */
            if (!strcmp(mem[k].b->report[0], b->report[0]))
                ok = mem[k].seq == seq && mem[k].b->window_start_us == b->window_start_us;
        in_group[i] = ok;
        if (ok)
            mem[m++] = (struct member){.idx = i, .b = b, .seq = seq};
    }
    /* one report goes the group's way too when its ClickHouse block is built already (not
     * compressed twice); otherwise alone, as store_write writes it */
    if (m >= 2 || (m == 1 && it[mem[0].idx].blk.data)) {
        qsort(mem, m, sizeof mem[0], member_cmp); /* the rows' lock order */
        char err[512];
        if (group_once(st, it, mem, m, err, sizeof err) == 0) {
            chq_release(&st->held, true);
            for (size_t i = 0; i < m; i++)
                it[mem[i].idx].res.stored = mem[i].fresh ? mem[i].b->n_rows : 0;
            observe(m);
        } else {
            if (st->db && PQstatus(st->db) == CONNECTION_OK &&
                PQpipelineStatus(st->db) == PQ_PIPELINE_OFF)
                PQclear(PQexec(st->db, "ROLLBACK"));
            chq_release(&st->held, false);
            if (m >= 2) {
                atomic_fetch_add(&fallbacks, 1);
                log_info("ingest",
                         "grouped commit of %zu reports rolled back (%s): writing them"
                         " one by one",
                         m, err);
            }
            for (size_t i = 0; i < n; i++) /* every report alone, in arrival order */
                write_alone(st, &it[i]);
            return;
        }
    } else if (m == 1) {
        write_alone(st, &it[mem[0].idx]);
    }
    for (size_t i = 0; i < n; i++) /* after the group: they see its committed rows */
        if (!in_group[i])
            write_alone(st, &it[i]);
}

void store_group_metrics(struct evbuffer *out)
{
    evbuffer_add_printf(out, "# HELP wanledger_ingest_commit_reports Agent reports per ingest "
                             "transaction (grouped commit: store_group.h; reports with NAS rows, "
                             "written alone, are not counted).\n"
                             "# TYPE wanledger_ingest_commit_reports histogram\n");
    unsigned long long cum = 0;
    for (size_t k = 0; k < N_SIZES; k++) {
        cum += atomic_load(&size_bucket[k]);
        evbuffer_add_printf(out, "wanledger_ingest_commit_reports_bucket{le=\"%u\"} %llu\n",
                            SIZES[k], cum);
    }
    cum += atomic_load(&size_bucket[N_SIZES]);
    evbuffer_add_printf(out,
                        "wanledger_ingest_commit_reports_bucket{le=\"+Inf\"} %llu\n"
                        "wanledger_ingest_commit_reports_sum %llu\n"
                        "wanledger_ingest_commit_reports_count %llu\n"
                        "# HELP wanledger_ingest_group_fallbacks_total Grouped commits rolled back "
                        "and written again one report at a time (one report failed, a deadlock, "
                        "a lost connection).\n"
                        "# TYPE wanledger_ingest_group_fallbacks_total counter\n"
                        "wanledger_ingest_group_fallbacks_total %llu\n",
                        cum, (unsigned long long)atomic_load(&reports),
                        (unsigned long long)atomic_load(&commits),
                        (unsigned long long)atomic_load(&fallbacks));
}
