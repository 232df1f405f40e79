/* The alerts glue: re-evaluates the gap/over/saturation alerts of the pairs a window changed from
 * the stored cell history (alerts.h), and writes the gap_alerts rows that change, with a NOTIFY
 * wanledger_alerts each. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hm_unrec.h"
#include "recon_db_internal.h"
#include "throttle_propose.h"

/* A (kind, pair) whose alerts this window may change. */
struct cand {
    enum alert_kind kind;
    int src, dst;
};

struct stored {
    int64_t id;
    enum alert_kind kind;
    int src, dst;
    struct alert_row row;
    uint64_t peak_unattributed_bytes;
    double peak_ratio;
};

static int add_cand(struct cand **c, size_t *n, size_t *cap, enum alert_kind kind, int src, int dst)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 32;
        struct cand *p = realloc(*c, nc * sizeof *p);
        if (!p)
            return -1;
        *c = p;
        *cap = nc;
    }
    (*c)[(*n)++] = (struct cand){.kind = kind, .src = src, .dst = dst};
    return 0;
}

static int cmp_cand(const void *a, const void *b)
{
    const struct cand *x = a, *y = b;
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    if (x->src != y->src)
        return x->src < y->src ? -1 : 1;
    return (x->dst > y->dst) - (x->dst < y->dst);
}

/* Sorts the candidates and drops duplicates; returns the new count. */
static size_t unique_cands(struct cand *c, size_t n)
{
    if (n == 0)
        return 0;
    qsort(c, n, sizeof *c, cmp_cand);
    size_t k = 1;
    for (size_t i = 1; i < n; i++)
        if (cmp_cand(&c[i], &c[k - 1]) != 0)
            c[k++] = c[i];
    return k;
}

/* The rows of one pair in a history result ordered by (src_site, dst_site, window_start). */
struct span {
    uint64_t pair; /* src << 32 | dst (site indexes) */
    int start, count;
};

static int cmp_span(const void *a, const void *b)
{
    const struct span *x = a, *y = b;
    return (x->pair > y->pair) - (x->pair < y->pair);
}

static uint64_t pair_of(int src, int dst)
{
    return ((uint64_t)(uint32_t)src << 32) | (uint32_t)dst;
}

/* One span per pair of h, sorted by pair for bsearch; NULL on out of memory. */
static struct span *pair_spans(const struct cfg *cfg, const PGresult *h, size_t *n_spans)
{
    int n = PQntuples(h);
    struct span *sp = malloc(((size_t)n + 1) * sizeof *sp);
    if (!sp)
        return NULL;
    size_t k = 0;
    for (int i = 0; i < n; i++) {
        const char *src = PQgetvalue(h, i, 0), *dst = PQgetvalue(h, i, 1);
        if (k && strcmp(src, PQgetvalue(h, i - 1, 0)) == 0 &&
            strcmp(dst, PQgetvalue(h, i - 1, 1)) == 0) {
            sp[k - 1].count++;
            continue;
        }
        sp[k++] = (struct span){.pair = pair_of(cfg_site_index(cfg, src), cfg_site_index(cfg, dst)),
                                .start = i,
                                .count = 1};
    }
    if (k)
        qsort(sp, k, sizeof *sp, cmp_span);
    *n_spans = k;
    return sp;
}

/* The saturation summary of an episode: circuit, capacity and top workflows of its last hit
 * window, read back from link_windows and attribution_rollup (this window's are written). */
static int saturation_summary(PGconn *db, const struct cfg *cfg, const struct cand *c,
                              const struct alert_episode *ep, char *summary, size_t len,
                              char *circuit, size_t circuit_len, char *err, size_t errlen)
{
    char w[TM_RFC3339_LEN];
    rdb_fmt_ts(w, ep->last_window_us);
    const char *params[] = {w, rdb_site_name(cfg, c->src), rdb_site_name(cfg, c->dst)};
    PGresult *lr = rdb_q(db, "reading link_windows", err, errlen,
                         "SELECT circuit, capacity_bps FROM link_windows"
                         " WHERE window_start = $1::timestamptz AND src_site = $2 AND dst_site = $3"
                         " ORDER BY utilization DESC NULLS LAST LIMIT 1",
                         3, params);
    if (!lr)
        return -1;
    PGresult *wr = rdb_q(db, "reading attribution_rollup", err, errlen,
                         "SELECT workflow, sum(bytes)::bigint, sum(sum(bytes)) OVER ()::bigint"
                         " FROM attribution_rollup"
                         " WHERE window_start = $1::timestamptz AND src_site = $2 AND dst_site = $3"
                         " GROUP BY workflow ORDER BY 2 DESC, 1 LIMIT 3",
                         3, params);
    if (!wr) {
        PQclear(lr);
        return -1;
    }
    struct alert_workflow top[3];
    size_t n_top = 0;
    uint64_t total = 0;
    for (int i = 0; i < PQntuples(wr) && n_top < 3; i++) {
        top[n_top].workflow = PQgetvalue(wr, i, 0);
        top[n_top++].bytes = rdb_val_u64(wr, i, 1, NULL);
        total = rdb_val_u64(wr, i, 2, NULL);
    }
    const char *circ = PQntuples(lr) ? PQgetvalue(lr, 0, 0) : "";
    uint64_t cap = PQntuples(lr) ? rdb_val_u64(lr, 0, 1, NULL) : 0;
    snprintf(circuit, circuit_len, "%s", circ);
    alerts_summary_saturation(summary, len, rdb_site_name(cfg, c->src), rdb_site_name(cfg, c->dst),
                              circ, ep, cap, top, n_top, total);
    rdb_fmt_ts(w, ep->first_window_us); /* and the throttle rules proposed for it */
    thr_propose_note(db, params[1], params[2], w, summary, len);
    PQclear(lr);
    PQclear(wr);
    return 0;
}

/* The alert row changes of one reconciliation, collected as array literals and written with
 * one statement per kind of change (a few round trips even when thousands of pairs change).
 * Order matters for the one-open-per-(kind, pair) index: withdrawals, then resolutions, then
 * (re)openings and updates of open rows, then new rows. */
enum { B_WITHDRAW, B_RESOLVE, B_KEEP_OPEN, B_INSERT, B_N };

#define B_MAX_COLS 10

struct batch {
    size_t n, cap;
    struct rdb_sbuf col[B_MAX_COLS]; /* text[] literals, one per column */
    int64_t *ids;                    /* updates: the row; inserts: 0 */
    bool *was_open, *now_open;
};

static int batch_add(struct batch *b, int64_t id, bool was_open, bool now_open,
                     const char *const *vals, size_t n_vals)
{
    if (b->n == b->cap) {
        size_t c = b->cap ? b->cap * 2 : 64;
        int64_t *ids = realloc(b->ids, c * sizeof *ids);
        if (ids)
            b->ids = ids;
        bool *wo = realloc(b->was_open, c * sizeof *wo);
        if (wo)
            b->was_open = wo;
        bool *no = realloc(b->now_open, c * sizeof *no);
        if (no)
            b->now_open = no;
        if (!ids || !wo || !no)
            return -1;
        b->cap = c;
    }
    b->ids[b->n] = id;
    b->was_open[b->n] = was_open;
    b->now_open[b->n] = now_open;
    for (size_t k = 0; k < n_vals; k++) {
        if (b->n == 0)
            rdb_sb_add(&b->col[k], "{", 1);
        rdb_sb_array_elem(&b->col[k], vals[k], b->n == 0);
    }
    b->n++;
    return 0;
}

static void batch_free(struct batch *b)
{
    for (size_t k = 0; k < B_MAX_COLS; k++)
        free(b->col[k].p);
    free(b->ids);
    free(b->was_open);
    free(b->now_open);
}

/* Queues one action for candidate c (a saturation summary reads the database). */
static int queue_action(PGconn *db, const struct cfg *cfg, const struct cand *c,
                        const struct alert_action *a, const struct alert_episode *eps,
                        const struct stored *rows, struct batch *bs, char *err, size_t errlen)
{
    char id[RDB_NUM_LEN];
    if (a->kind == ALERT_WITHDRAW) {
        rdb_fmt_i64(id, rows[a->row].id);
        const char *vals[] = {id};
        return batch_add(&bs[B_WITHDRAW], rows[a->row].id, true, false, vals, 1);
    }
    const struct alert_episode *e = &eps[a->episode];
    char summary[1024] = "", circuit[256] = "";
    if (e->n_hits == 0) {
        /* an alert carried on from before the replayed windows, with no hit since: the row
         * keeps its summary ("" below) */
    } else if (c->kind == ALERT_SATURATION) {
        if (saturation_summary(db, cfg, c, e, summary, sizeof summary, circuit, sizeof circuit, err,
                               errlen))
            return -1;
    } else {
        alerts_summary_cells(summary, sizeof summary, c->kind, rdb_site_name(cfg, c->src),
                             rdb_site_name(cfg, c->dst), e, cfg->window_seconds);
        if (c->kind == ALERT_GAP) { /* name the top host pair behind the gap (sampled flows) */
            /* over the episode's last 30 windows: the newest one's flows may not be in yet */
            int64_t w_us = cfg->window_seconds * 1000000LL, from = e->first_window_us;
            if (from < e->last_window_us - 29 * w_us)
                from = e->last_window_us - 29 * w_us;
            hm_unrec_note(db, cfg, rdb_site_name(cfg, c->src), rdb_site_name(cfg, c->dst), from,
                          e->last_window_us + w_us, summary, sizeof summary);
        }
    }
    char first[TM_RFC3339_LEN], last[TM_RFC3339_LEN], peak[RDB_NUM_LEN], ratio[40];
    rdb_fmt_ts(first, e->first_window_us);
    rdb_fmt_ts(last, e->last_window_us);
    rdb_fmt_i64(peak, (int64_t)e->peak_unattributed_bytes);
    snprintf(ratio, sizeof ratio, "%.17g", e->peak_ratio);
    const char *state = e->resolved ? "resolved" : "open";
    if (a->kind == ALERT_INSERT) {
        const char *vals[] = {alerts_kind_name(c->kind),
                              rdb_site_name(cfg, c->src),
                              rdb_site_name(cfg, c->dst),
                              state,
                              first,
                              last,
                              peak,
                              ratio,
                              summary,
                              circuit};
        return batch_add(&bs[B_INSERT], 0, false, !e->resolved, vals, 10);
    }
    const struct stored *row = &rows[a->row];
    rdb_fmt_i64(id, row->id);
    const char *vals[] = {id, state, first, last, peak, ratio, summary, circuit};
    return batch_add(&bs[e->resolved ? B_RESOLVE : B_KEEP_OPEN], row->id, row->row.open,
                     !e->resolved, vals, 8);
}

static const char sql_withdraw[] =
    "UPDATE gap_alerts SET state = 'resolved', resolved_at = now(), resolved_sent = false,"
    "  summary = coalesce(summary, '') || ' (withdrawn: later data cleared its windows)'"
    " WHERE id = ANY ($1::bigint[]) AND state = 'open'"
    " RETURNING id";

/* Only rows that really change are written (and so returned, counted and notified). */
static const char sql_update[] =
    "UPDATE gap_alerts g SET state = u.state,"
    "  resolved_at = CASE WHEN u.state = 'open' THEN NULL"
    "                     WHEN g.state = 'open' THEN now() ELSE g.resolved_at END,"
    "  resolved_sent = CASE WHEN g.state <> u.state THEN false ELSE g.resolved_sent END,"
    "  first_window = least(g.first_window, u.first_window), last_window = u.last_window,"
    "  peak_unattributed_bytes = greatest(g.peak_unattributed_bytes, u.peak),"
    "  peak_ratio = greatest(g.peak_ratio, u.ratio),"
    "  summary = CASE WHEN u.summary = '' THEN g.summary ELSE u.summary END,"
    "  circuit = CASE WHEN u.circuit = '' THEN g.circuit ELSE u.circuit END"
    " FROM unnest($1::bigint[], $2::text[], $3::timestamptz[], $4::timestamptz[],"
    "             $5::bigint[], $6::float8[], $7::text[], $8::text[])"
    "   AS u(id, state, first_window, last_window, peak, ratio, summary, circuit)"
    " WHERE g.id = u.id"
    "  AND (g.state <> u.state OR g.last_window IS DISTINCT FROM u.last_window"
    "       OR g.first_window > u.first_window"
    "       OR (u.summary <> '' AND g.summary IS DISTINCT FROM u.summary)"
    "       OR coalesce(g.peak_unattributed_bytes, -1) < u.peak"
    "       OR coalesce(g.peak_ratio, -1) < u.ratio)"
    " RETURNING g.id";

/* WITH ORDINALITY + ORDER BY: RETURNING follows the queued order. */
static const char sql_insert[] =
    "INSERT INTO gap_alerts (kind, src_site, dst_site, state, opened_at, resolved_at,"
    "  first_window, last_window, peak_unattributed_bytes, peak_ratio, summary, circuit)"
    " SELECT kind, src, dst, state, now(), CASE WHEN state = 'resolved' THEN now() END,"
    "  first_window, last_window, peak, ratio, summary, circuit"
    " FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[],"
    "             $6::timestamptz[], $7::bigint[], $8::float8[], $9::text[], $10::text[])"
    "   WITH ORDINALITY"
    "   AS u(kind, src, dst, state, first_window, last_window, peak, ratio, summary, circuit, i)"
    " ORDER BY i"
    " RETURNING id";

/* Writes the queued changes in order; counts the rows that really changed and NOTIFYs each. */
static int flush_batches(PGconn *db, struct batch *bs, struct recon_db_stats *st, char *err,
                         size_t errlen)
{
    static const int n_cols[B_N] = {
        [B_WITHDRAW] = 1, [B_RESOLVE] = 8, [B_KEEP_OPEN] = 8, [B_INSERT] = 10};
    static const char *const sqls[B_N] = {[B_WITHDRAW] = sql_withdraw,
                                          [B_RESOLVE] = sql_update,
                                          [B_KEEP_OPEN] = sql_update,
                                          [B_INSERT] = sql_insert};
    struct rdb_sbuf ids = {0};
    size_t n_ids = 0;
    int rc = -1;
    rdb_sb_add(&ids, "{", 1);
    for (int k = 0; k < B_N; k++) {
        struct batch *b = &bs[k];
        if (b->n == 0)
            continue;
        const char *params[B_MAX_COLS];
        for (int c = 0; c < n_cols[k]; c++) {
            rdb_sb_add(&b->col[c], "}", 1);
            if (b->col[c].oom)
                goto oom;
            params[c] = b->col[c].p;
        }
        PGresult *r = rdb_q(db, "writing gap_alerts", err, errlen, sqls[k], n_cols[k], params);
        if (!r)
            goto cleanup;
        for (int i = 0; i < PQntuples(r); i++) {
            int64_t id = rdb_val_i64(r, i, 0, 0);
            size_t j = (size_t)i;
            if (k != B_INSERT)
                for (j = 0; j < b->n && b->ids[j] != id; j++)
                    ;
            bool was_open = j < b->n && b->was_open[j], now_open = j < b->n && b->now_open[j];
            if (!was_open && now_open)
                st->n_alerts_opened++;
            else if (was_open && !now_open)
                st->n_alerts_resolved++;
            else if (k == B_INSERT)
                st->n_alerts_resolved++; /* a past episode that late data revealed, over */
            else
                st->n_alerts_updated++;
            rdb_sb_array_elem(&ids, PQgetvalue(r, i, 0), n_ids++ == 0);
        }
        PQclear(r);
    }
    rdb_sb_add(&ids, "}", 1);
    if (ids.oom)
        goto oom;
    if (n_ids) {
        const char *params[] = {ids.p};
        PGresult *r = rdb_q(db, "NOTIFY wanledger_alerts", err, errlen,
                            "SELECT pg_notify('wanledger_alerts', id::text)"
                            " FROM unnest($1::bigint[]) AS id",
                            1, params);
        if (!r)
            goto cleanup;
        PQclear(r);
    }
    rc = 0;
    goto cleanup;
oom:
    snprintf(err, errlen, "writing gap_alerts: out of memory");
cleanup:
    free(ids.p);
    return rc;
}

/* The state of one rdb_evaluate_alerts call, shared by its phases. */
struct eval {
    const struct cfg *cfg;
    int64_t ws;
    int64_t since; /* history is replayed from here on */
    struct cand *cands;
    size_t n_cands, cap_cands;
    struct stored *rows; /* the gap_alerts rows this window can touch */
    size_t nr;
    PGresult *rr, *hr, *sr; /* rows, cell history, link history */
    size_t max_hist;
    struct alert_window *hist;
    struct alert_episode *eps;
    struct alert_action *acts;
    struct alert_row *crow;
    struct stored *crow_full;
    struct span *cell_spans, *sat_spans;
    size_t n_cell_spans, n_sat_spans;
    struct batch batches[B_N];
    struct rdb_sbuf srcs, dsts, kinds;
};

#define EVAL_OOM (-2) /* a phase's "out of memory" (err not filled yet) */

static void eval_free(struct eval *e)
{
    PQclear(e->rr);
    PQclear(e->hr);
    PQclear(e->sr);
    free(e->rows);
    free(e->cands);
    free(e->hist);
    free(e->eps);
    free(e->acts);
    free(e->crow);
    free(e->crow_full);
    free(e->cell_spans);
    free(e->sat_spans);
    for (int k = 0; k < B_N; k++)
        batch_free(&e->batches[k]);
    free(e->srcs.p);
    free(e->dsts.p);
    free(e->kinds.p);
}

/* Phase 1: the stored rows; an open one makes its (kind, pair) a candidate. An alert open since
 * before `since` carries on from its row. The rows it can touch: open ones, and any that end at
 * or after `since`. */
static int eval_read_rows(PGconn *db, struct eval *e, char *err, size_t errlen)
{
    char lo[TM_RFC3339_LEN];
    rdb_fmt_ts(lo, e->since);
    const char *p1[] = {lo};
    static const char rows_sql[] =
        "SELECT id, kind, src_site, dst_site, state = 'open',"
        " (extract(epoch from first_window) * 1000000)::bigint,"
        " (extract(epoch from last_window) * 1000000)::bigint,"
        " coalesce(peak_unattributed_bytes, 0), coalesce(peak_ratio, 0)"
        " FROM gap_alerts WHERE state = 'open' OR last_window >= $1::timestamptz"
        " ORDER BY first_window, id";
    e->rr = rdb_q(db, "reading gap_alerts", err, errlen, rows_sql, 1, p1);
    if (!e->rr)
        return -1;
    PGresult *rr = e->rr;
    int n_rows = PQntuples(rr);
    e->rows = calloc((size_t)n_rows + 1, sizeof *e->rows);
    if (!e->rows)
        return EVAL_OOM;
    for (int i = 0; i < n_rows; i++) {
        int kind = alerts_kind_parse(PQgetvalue(rr, i, 1));
        int src = cfg_site_index(e->cfg, PQgetvalue(rr, i, 2));
        int dst = cfg_site_index(e->cfg, PQgetvalue(rr, i, 3));
        if (kind < 0 || src < 0 || dst < 0)
            continue; /* a site no longer configured: its alerts stay as they are */
        struct stored *s = &e->rows[e->nr++];
        s->kind = (enum alert_kind)kind;
        s->src = src;
        s->dst = dst;
        s->id = s->row.id = rdb_val_i64(rr, i, 0, 0);
        s->row.open = PQgetvalue(rr, i, 4)[0] == 't';
        s->row.first_window_us = rdb_val_i64(rr, i, 5, e->ws);
        s->row.last_window_us = rdb_val_i64(rr, i, 6, e->ws);
        s->peak_unattributed_bytes = rdb_val_u64(rr, i, 7, NULL);
        s->peak_ratio = strtod(PQgetvalue(rr, i, 8), NULL);
        if (s->row.open && add_cand(&e->cands, &e->n_cands, &e->cap_cands, s->kind, src, dst))
            return EVAL_OOM;
    }
    return 0;
}

/* Phase 2: this window's hits make their (kind, pair) candidates too. */
static int eval_add_hits(struct eval *e, const struct recon_result *res)
{
    for (size_t i = 0; i < res->n_cells; i++) {
        const struct recon_cell *c = &res->cells[i];
        for (int k = ALERT_GAP; k <= ALERT_OVER; k++)
            if (alerts_mark_cell(e->cfg, (enum alert_kind)k, c->status, c->has_coverage,
                                 c->coverage) == ALERT_HIT &&
                add_cand(&e->cands, &e->n_cands, &e->cap_cands, (enum alert_kind)k, c->src_site,
                         c->dst_site))
                return EVAL_OOM;
    }
    for (size_t i = 0; i < res->n_links; i++) {
        const struct recon_link_obs *o = &res->links[i];
        if (alerts_mark_saturation(e->cfg, o, 1) == ALERT_HIT &&
            add_cand(&e->cands, &e->n_cands, &e->cap_cands, ALERT_SATURATION, o->src_site,
                     o->dst_site))
            return EVAL_OOM;
    }
    e->n_cands = unique_cands(e->cands, e->n_cands);
    return 0;
}

/* Phase 3: the candidates' cell and link histories, oldest first, and the replay buffers. */
static int eval_read_histories(PGconn *db, struct eval *e, char *err, size_t errlen)
{
    const struct cfg *cfg = e->cfg;
    rdb_sb_add(&e->srcs, "{", 1);
    rdb_sb_add(&e->dsts, "{", 1);
    rdb_sb_add(&e->kinds, "{", 1);
    for (size_t i = 0; i < e->n_cands; i++) {
        rdb_sb_array_elem(&e->srcs, rdb_site_name(cfg, e->cands[i].src), i == 0);
        rdb_sb_array_elem(&e->dsts, rdb_site_name(cfg, e->cands[i].dst), i == 0);
        rdb_sb_array_elem(&e->kinds, alerts_kind_name(e->cands[i].kind), i == 0);
    }
    rdb_sb_add(&e->srcs, "}", 1);
    rdb_sb_add(&e->dsts, "}", 1);
    rdb_sb_add(&e->kinds, "}", 1);
    if (e->srcs.oom || e->dsts.oom || e->kinds.oom)
        return EVAL_OOM;
    char sinces[TM_RFC3339_LEN];
    rdb_fmt_ts(sinces, e->since);
    const char *p2[] = {e->srcs.p, e->dsts.p, e->kinds.p, sinces};
    /* per candidate pair, its rows by the pair index (LATERAL, OFFSET 0: never flattened into
     * a join the planner may turn round). As a plain join, statistics that call heatmap_cells
     * empty (analyzed after a bulk delete or while the table was small, with this window's
     * cells just written) made it loop over the cells with the candidates inside: 129 s for
     * 10,000 candidates, against 0.07 s this way whatever the statistics */
    static const char cells_sql[] =
        "WITH c AS (SELECT DISTINCT u.src_site, u.dst_site"
        "  FROM unnest($1::text[], $2::text[], $3::text[]) AS u(src_site, dst_site, kind)"
        "  WHERE u.kind IN ('gap', 'over'))"
        " SELECT c.src_site, c.dst_site, (extract(epoch FROM h.window_start) * 1000000)::bigint,"
        "  h.status, coalesce(h.unattributed_bytes, 0), coalesce(h.observed_payload_bytes, 0),"
        "  h.coverage"
        " FROM c CROSS JOIN LATERAL (SELECT * FROM heatmap_cells h WHERE h.src_site = c.src_site"
        "  AND h.dst_site = c.dst_site AND h.window_start >= $4::timestamptz OFFSET 0) h"
        " ORDER BY c.src_site, c.dst_site, h.window_start";
    e->hr = rdb_q(db, "reading cell history", err, errlen, cells_sql, 4, p2);
    if (!e->hr)
        return -1;
    char sat[40], minvalid[40];
    snprintf(sat, sizeof sat, "%.17g", cfg->saturation);
    snprintf(minvalid, sizeof minvalid, "%.17g", CELL_MIN_VALID_FRACTION);
    const char *p3[] = {e->srcs.p, e->dsts.p, e->kinds.p, sinces, sat, minvalid};
    static const char links_sql[] =
        "WITH c(src_site, dst_site, kind) AS ("
        "  SELECT * FROM unnest($1::text[], $2::text[], $3::text[]) AS u(src_site, dst_site, kind)"
        "  WHERE u.kind = 'saturation')"
        " SELECT l.src_site, l.dst_site, (extract(epoch FROM l.window_start) * 1000000)::bigint,"
        "  CASE WHEN bool_or(l.valid_fraction >= $6::float8 AND l.utilization > $5::float8)"
        "       THEN 'hit'"
        "       WHEN bool_or(l.valid_fraction >= $6::float8) THEN 'clear'"
        "       ELSE 'neutral' END,"
        "  coalesce(max(l.utilization) FILTER (WHERE l.valid_fraction >= $6::float8), 0),"
        "  sum(l.observed_payload_bytes)::bigint"
        " FROM link_windows l JOIN c USING (src_site, dst_site)"
        " WHERE l.window_start >= $4::timestamptz"
        " GROUP BY l.src_site, l.dst_site, l.window_start"
        " ORDER BY l.src_site, l.dst_site, l.window_start";
    e->sr = rdb_q(db, "reading link history", err, errlen, links_sql, 6, p3);
    if (!e->sr)
        return -1;
    e->max_hist = (size_t)PQntuples(e->hr) + (size_t)PQntuples(e->sr) + 1;
    e->hist = calloc(e->max_hist, sizeof *e->hist);
    e->eps = calloc(e->max_hist, sizeof *e->eps);
    e->crow = calloc(e->nr + 1, sizeof *e->crow);
    e->crow_full = calloc(e->nr + 1, sizeof *e->crow_full);
    e->acts = calloc(e->max_hist + e->nr + 1, sizeof *e->acts);
    e->cell_spans = pair_spans(cfg, e->hr, &e->n_cell_spans);
    e->sat_spans = pair_spans(cfg, e->sr, &e->n_sat_spans);
    if (!e->hist || !e->eps || !e->crow || !e->crow_full || !e->acts || !e->cell_spans ||
        !e->sat_spans)
        return EVAL_OOM;
    return 0;
}

/* Candidate c's history as alert windows in e->hist; returns their number. */
static size_t eval_history(struct eval *e, const struct cand *c)
{
    const PGresult *h = c->kind == ALERT_SATURATION ? e->sr : e->hr;
    struct span key = {.pair = pair_of(c->src, c->dst)};
    const struct span *sp =
        c->kind == ALERT_SATURATION
            ? (e->n_sat_spans ? bsearch(&key, e->sat_spans, e->n_sat_spans, sizeof key, cmp_span)
                              : NULL)
            : (e->n_cell_spans ? bsearch(&key, e->cell_spans, e->n_cell_spans, sizeof key, cmp_span)
                               : NULL);
    size_t n = 0;
    for (int i = sp ? sp->start : 0; sp && i < sp->start + sp->count; i++) {
        struct alert_window *w = &e->hist[n++];
        memset(w, 0, sizeof *w);
        w->window_start_us = rdb_val_i64(h, i, 2, 0);
        if (c->kind == ALERT_SATURATION) {
            const char *m = PQgetvalue(h, i, 3);
            w->mark = m[0] == 'h' ? ALERT_HIT : m[0] == 'c' ? ALERT_CLEAR : ALERT_NEUTRAL;
            w->ratio = strtod(PQgetvalue(h, i, 4), NULL);
            w->observed_payload_bytes = rdb_val_u64(h, i, 5, NULL);
        } else {
            int status = recon_status_parse(PQgetvalue(h, i, 3));
            bool has_cov = !PQgetisnull(h, i, 6);
            double cov = has_cov ? strtod(PQgetvalue(h, i, 6), NULL) : 0;
            w->mark = status < 0 ? ALERT_NEUTRAL
                                 : alerts_mark_cell(e->cfg, c->kind, (enum cell_status)status,
                                                    has_cov, cov);
            w->unattributed_bytes = rdb_val_u64(h, i, 4, NULL);
            w->observed_payload_bytes = rdb_val_u64(h, i, 5, NULL);
            w->ratio = c->kind == ALERT_GAP ? (has_cov ? 1 - cov : 0) : cov;
        }
    }
    return n;
}

/* Phase 4, per candidate: replay its history into episodes, match them with its stored rows and
 * queue the resulting actions. */
static int eval_candidate(PGconn *db, struct eval *e, const struct cand *c, char *err,
                          size_t errlen)
{
    size_t n = eval_history(e, c);
    size_t n_crow = 0;
    struct alert_episode before, *open_before = NULL;
    for (size_t i = 0; i < e->nr; i++) {
        const struct stored *r = &e->rows[i];
        if (r->kind != c->kind || r->src != c->src || r->dst != c->dst)
            continue;
        e->crow_full[n_crow] = *r;
        e->crow[n_crow++] = r->row;
        if (r->row.open && r->row.first_window_us < e->since) {
            /* n_hits = 0 marks "no figures of its own": the row keeps its summary */
            memset(&before, 0, sizeof before);
            before.first_window_us = before.opened_window_us = r->row.first_window_us;
            before.last_window_us = r->row.last_window_us;
            before.peak_unattributed_bytes = r->peak_unattributed_bytes;
            before.peak_ratio = r->peak_ratio;
            open_before = &before;
        }
    }
    size_t n_eps = alerts_replay(e->cfg->alert_windows, e->cfg->resolve_windows, e->hist, n,
                                 open_before, e->eps, e->max_hist);
    size_t n_acts = alerts_match(e->eps, n_eps, e->crow, n_crow, e->acts);
    for (size_t i = 0; i < n_acts; i++)
        if (queue_action(db, e->cfg, c, &e->acts[i], e->eps, e->crow_full, e->batches, err, errlen))
            return -1;
    return 0;
}

/* Re-evaluates the alerts of every candidate from its stored history, in phases: the stored rows
 * and this window's hits name the candidates, their histories are read, each is replayed and
 * matched with its rows, and the changes are written in order. */
int rdb_evaluate_alerts(PGconn *db, const struct cfg *cfg, int64_t ws,
                        const struct recon_result *res, struct recon_db_stats *st, char *err,
                        size_t errlen)
{
    int64_t W = (int64_t)cfg->window_seconds * TM_USEC_PER_SEC;
    /* far enough back to see a run of alert_windows hits or resolve_windows clears through
     * some incomplete windows */
    int64_t margin = (int64_t)(cfg->alert_windows + cfg->resolve_windows + 2) * 4 * W;
    struct eval e;
    memset(&e, 0, sizeof e);
    e.cfg = cfg;
    e.ws = ws;
    e.since = ws - margin;
    int rc = eval_read_rows(db, &e, err, errlen);
    if (rc == 0)
        rc = eval_add_hits(&e, res);
    if (rc == 0 && e.n_cands > 0) {
        rc = eval_read_histories(db, &e, err, errlen);
        for (size_t ci = 0; rc == 0 && ci < e.n_cands; ci++)
            rc = eval_candidate(db, &e, &e.cands[ci], err, errlen);
        if (rc == 0 && flush_batches(db, e.batches, st, err, errlen))
            rc = -1;
    }
    if (rc == EVAL_OOM) {
        snprintf(err, errlen, "evaluating alerts: out of memory");
        rc = -1;
    }
    eval_free(&e);
    return rc;
}
