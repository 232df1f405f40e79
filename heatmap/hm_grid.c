/* Loading the heatmap grid from heatmap_cells and gap_alerts (see hm_grid.h). */
#include "hm_grid.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hm_sql.h"
#include "timeutil.h"

#define HOUR_US (3600 * TM_USEC_PER_SEC)
/* spans longer than this read the hourly rollup for their whole hours */
#define HOURLY_FROM_US (6 * HOUR_US)
/* min(status) of the windows behind an hourly row (text order, as min(status) per window) */
#define MIN_STATUS_SQL                                                                             \
    "CASE WHEN n_idle > 0 THEN 'idle' WHEN n_incomplete > 0 THEN 'incomplete' WHEN "               \
    "n_no_counter > 0 THEN 'no_counter' WHEN n_ok > 0 THEN 'ok' WHEN n_over > 0 THEN 'over' "      \
    "WHEN n_red > 0 THEN 'red' ELSE 'warn' END"

void hm_totals_from_row(const PGresult *r, int row, int col, struct hm_totals *t)
{
    memset(t, 0, sizeof *t);
    t->observed = hm_sql_i64(r, row, col + 0);
    t->payload = hm_sql_i64(r, row, col + 1);
    t->attributed = hm_sql_i64(r, row, col + 2);
    t->socket = hm_sql_i64(r, row, col + 3);
    t->nfs = hm_sql_i64(r, row, col + 4);
    t->service = hm_sql_i64(r, row, col + 5);
    t->unattributed = hm_sql_i64(r, row, col + 6);
    t->seconds = hm_sql_i64(r, row, col + 7);
    t->n_windows = (int)hm_sql_i64(r, row, col + 8);
    for (int s = 0; s < CELL_N_STATUS; s++)
        t->n_status[s] = (int)hm_sql_i64(r, row, col + 9 + s);
}

/* Index of name in the grid's site list, adding it when add is set; -1 when absent. */
static int site_index(struct hm_grid *g, const char *name, bool add)
{
    for (size_t i = 0; i < g->n_sites; i++)
        if (strcmp(g->sites[i], name) == 0)
            return (int)i;
    if (!add)
        return -1;
    char **s = realloc(g->sites, (g->n_sites + 1) * sizeof *s);
    if (!s)
        return -1;
    g->sites = s;
    g->sites[g->n_sites] = strdup(name);
    if (!g->sites[g->n_sites])
        return -1;
    return (int)g->n_sites++;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

struct hm_pair *hm_grid_pair(const struct hm_grid *g, size_t src, size_t dst)
{
    return &g->pairs[src * g->n_sites + dst];
}

void hm_alerts_free(struct hm_alert *a, size_t n)
{
    for (size_t i = 0; a && i < n; i++) {
        free(a[i].src);
        free(a[i].dst);
        free(a[i].summary);
        free(a[i].circuit);
    }
    free(a);
}

int hm_alerts_load(PGconn *db, const char *src, const char *dst, struct hm_alert **out, size_t *n,
                   char *err, size_t errlen)
{
    static const char cols[] =
        "SELECT id, kind, state, src_site, dst_site, coalesce(summary,''), "
        "circuit, " HM_SQL_US("opened_at") ", " HM_SQL_US("resolved_at") ", " HM_SQL_US(
            "first_window") ", " HM_SQL_US("last_window") ", peak_unattributed_bytes, "
                                                          "peak_ratio FROM gap_alerts ";
    char sql[1024];
    PGresult *r;
    if (src) {
        snprintf(sql, sizeof sql,
                 "%s WHERE src_site = $1 AND dst_site = $2 "
                 "ORDER BY (state = 'open') DESC, opened_at DESC LIMIT 50",
                 cols);
        const char *p[2] = {src, dst};
        r = pgc_query(db, "reading gap_alerts", sql, 2, p, err, errlen);
    } else {
        snprintf(sql, sizeof sql, "%s WHERE state = 'open' ORDER BY opened_at, id", cols);
        r = pgc_query(db, "reading gap_alerts", sql, 0, NULL, err, errlen);
    }
    if (!r)
        return -1;
    int rows = PQntuples(r);
    struct hm_alert *a = calloc(rows ? (size_t)rows : 1, sizeof *a);
    if (!a) {
        PQclear(r);
        snprintf(err, errlen, "reading gap_alerts: out of memory");
        return -1;
    }
    for (int i = 0; i < rows; i++) {
        a[i].id = hm_sql_i64(r, i, 0);
        snprintf(a[i].kind, sizeof a[i].kind, "%s", hm_sql_str(r, i, 1));
        snprintf(a[i].state, sizeof a[i].state, "%s", hm_sql_str(r, i, 2));
        a[i].src = strdup(hm_sql_str(r, i, 3));
        a[i].dst = strdup(hm_sql_str(r, i, 4));
        a[i].summary = strdup(hm_sql_str(r, i, 5));
        a[i].circuit = strdup(hm_sql_str(r, i, 6));
        a[i].opened_us = hm_sql_i64(r, i, 7);
        a[i].resolved_us = hm_sql_i64(r, i, 8);
        a[i].first_window_us = hm_sql_i64(r, i, 9);
        a[i].last_window_us = hm_sql_i64(r, i, 10);
        a[i].peak_unattributed = hm_sql_i64(r, i, 11);
        a[i].peak_ratio = hm_sql_f64(r, i, 12);
        if (!a[i].src || !a[i].dst || !a[i].summary || !a[i].circuit) {
            hm_alerts_free(a, (size_t)rows);
            PQclear(r);
            snprintf(err, errlen, "reading gap_alerts: out of memory");
            return -1;
        }
    }
    PQclear(r);
    *out = a;
    *n = (size_t)rows;
    return 0;
}

/* Resolves LATEST to the newest window and finds the window length and neighbours. */
static int resolve_span(PGconn *db, struct hm_grid *g, char *err, size_t errlen)
{
    char a[24];
    PGresult *r;
    if (g->span.kind == HM_SPAN_LATEST) {
        r = pgc_query(db, "finding the latest window",
                      "SELECT " HM_SQL_US("max(window_start)") " FROM heatmap_cells", 0, NULL, err,
                      errlen);
        if (!r)
            return -1;
        bool none = hm_sql_null(r, 0, 0);
        g->span.window_us = hm_sql_i64(r, 0, 0);
        PQclear(r);
        if (none)
            return 0; /* nothing reconciled yet: an empty grid */
        g->span.kind = HM_SPAN_WINDOW;
    }
    if (g->span.kind == HM_SPAN_WINDOW) {
        const char *p[1] = {hm_sql_i64_text(g->span.window_us, a)};
        r = pgc_query(
            db, "reading the window",
            "SELECT (SELECT max(window_seconds) FROM heatmap_cells WHERE window_start "
            "= " HM_SQL_TS(1) "), (SELECT " HM_SQL_US(
                "max(window_start)") " FROM heatmap_cells WHERE "
                                     "window_start < " HM_SQL_TS(1) "), (SELECT " HM_SQL_US(
                                         "min(window_start)") " FROM heatmap_cells WHERE "
                                                              "window_start > " HM_SQL_TS(1) ")",
            1, p, err, errlen);
        if (!r)
            return -1;
        g->window_seconds = (int)hm_sql_i64(r, 0, 0);
        g->has_prev = !hm_sql_null(r, 0, 1);
        g->prev_us = hm_sql_i64(r, 0, 1);
        g->has_next = !hm_sql_null(r, 0, 2);
        g->next_us = hm_sql_i64(r, 0, 2);
        PQclear(r);
        g->from_us = g->span.window_us;
        g->to_us =
            g->span.window_us + (g->window_seconds > 0 ? g->window_seconds : 1) * TM_USEC_PER_SEC;
    } else {
        g->from_us = g->span.from_us;
        g->to_us = g->span.to_us;
        const char *p[2] = {hm_sql_i64_text(g->from_us, a), NULL};
        char b[24];
        p[1] = hm_sql_i64_text(g->to_us, b);
        r = pgc_query(
            db, "reading the range",
            "SELECT min(window_seconds) FROM heatmap_cells WHERE window_start >= " HM_SQL_TS(
                1) " AND window_start < " HM_SQL_TS(2),
            2, p, err, errlen);
        if (!r)
            return -1;
        g->window_seconds = (int)hm_sql_i64(r, 0, 0);
        PQclear(r);
    }
    return 0;
}

static int alloc_pairs(struct hm_grid *g)
{
    size_t n = g->n_sites;
    g->pairs = calloc(n > 0 ? n * n : 1, sizeof *g->pairs);
    if (!g->pairs)
        return -1;
    for (size_t i = 0; i < n * n; i++) {
        g->pairs[i].status = CELL_NONE;
        g->pairs[i].coverage = NAN;
        for (int h = 0; h < HM_STRIP_HOURS; h++) {
            g->pairs[i].strip[h] = CELL_NONE;
            g->pairs[i].strip_coverage[h] = NAN;
        }
    }
    return 0;
}

/* Sites only known from the data go after the n_cfg configured ones, sorted. */
static int load_pairs(PGconn *db, struct hm_grid *g, const struct cfg *cfg, size_t n_cfg, char *err,
                      size_t errlen)
{
    char a[24], b[24];
    const char *p[2] = {hm_sql_i64_text(g->from_us, a), hm_sql_i64_text(g->to_us, b)};
    /* longer than HOURLY_FROM_US: the whole hours from heatmap_cells_hourly (sql/013), the
     * edges from heatmap_cells; the same sums either way, min(coverage) only per window */
    PGresult *r =
        g->to_us - g->from_us > HOURLY_FROM_US
            ? pgc_query(db, "reading heatmap_cells_hourly",
                        "SELECT src_site, dst_site, " MIN_STATUS_SQL ", NULL::float8, "
                        "observed_bytes, observed_payload_bytes, attributed_bytes, socket_bytes, "
                        "nfs_bytes, service_bytes, unattributed_bytes, seconds, windows, n_ok, "
                        "n_warn, n_red, n_over, n_idle, n_incomplete, n_no_counter FROM "
                        "wl_cells_range(" HM_SQL_TS(1) ", " HM_SQL_TS(2) ")",
                        2, p, err, errlen)
            : pgc_query(db, "reading heatmap_cells",
                        "SELECT src_site, dst_site, min(status), min(coverage), " HM_GRID_SUMS_SQL
                        " FROM heatmap_cells WHERE window_start >= " HM_SQL_TS(
                            1) " AND window_start < " HM_SQL_TS(2) " GROUP BY 1, 2",
                        2, p, err, errlen);
    if (!r)
        return -1;
    /* first pass: sites */
    for (int i = 0; i < PQntuples(r); i++) {
        if (site_index(g, hm_sql_str(r, i, 0), true) < 0 ||
            site_index(g, hm_sql_str(r, i, 1), true) < 0) {
            PQclear(r);
            snprintf(err, errlen, "out of memory");
            return -1;
        }
    }
    if (g->n_sites > n_cfg)
        qsort(g->sites + n_cfg, g->n_sites - n_cfg, sizeof *g->sites, cmp_str);
    if (alloc_pairs(g) < 0) {
        PQclear(r);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (int i = 0; i < PQntuples(r); i++) {
        int s = site_index(g, hm_sql_str(r, i, 0), false);
        int d = site_index(g, hm_sql_str(r, i, 1), false);
        struct hm_pair *pp = hm_grid_pair(g, (size_t)s, (size_t)d);
        hm_totals_from_row(r, i, 4, &pp->t);
        pp->status = hm_status_of_totals(&pp->t, hm_status_parse(hm_sql_str(r, i, 2)), cfg);
        /* one window: its stored coverage, none when incomplete (a poll gap's is of part of it) */
        if (pp->t.n_windows == 1 && pp->status != CELL_INCOMPLETE && !hm_sql_null(r, i, 3))
            pp->coverage = hm_sql_f64(r, i, 3);
        else
            pp->coverage = hm_totals_coverage(&pp->t);
        hm_totals_add(&g->all, &pp->t);
        g->has_data = true;
    }
    PQclear(r);
    return 0;
}

static int load_strip(PGconn *db, struct hm_grid *g, const struct cfg *cfg, char *err,
                      size_t errlen)
{
    int64_t last = g->to_us - 1;
    int64_t last_hour = last - ((last % HOUR_US) + HOUR_US) % HOUR_US;
    g->strip_from_us = last_hour - (HM_STRIP_HOURS - 1) * HOUR_US;
    char a[24], b[24];
    const char *p[2] = {hm_sql_i64_text(g->strip_from_us, a),
                        hm_sql_i64_text(last_hour + HOUR_US, b)};
    /* only what the status rule and the bar height need, from the hourly rollup (sql/013: UTC
     * hours, kept equal to the per-window rows' sums) */
    PGresult *r = pgc_query(db, "reading the hourly strip",
                            "SELECT src_site, dst_site, " MIN_STATUS_SQL ", " HM_SQL_US(
                                "hour_start") ", observed_payload_bytes, attributed_bytes, "
                                              "windows, n_incomplete, n_no_counter FROM "
                                              "heatmap_cells_hourly WHERE hour_start >= " HM_SQL_TS(
                                                  1) " AND hour_start < " HM_SQL_TS(2),
                            2, p, err, errlen);
    if (!r)
        return -1;
    for (int i = 0; i < PQntuples(r); i++) {
        int s = site_index(g, hm_sql_str(r, i, 0), false);
        int d = site_index(g, hm_sql_str(r, i, 1), false);
        if (s < 0 || d < 0)
            continue; /* a pair without data in the span itself */
        int64_t k = (hm_sql_i64(r, i, 3) - g->strip_from_us) / HOUR_US;
        if (k < 0 || k >= HM_STRIP_HOURS)
            continue;
        struct hm_totals t = {0};
        t.payload = hm_sql_i64(r, i, 4);
        t.attributed = hm_sql_i64(r, i, 5);
        t.n_windows = (int)hm_sql_i64(r, i, 6);
        t.n_status[CELL_INCOMPLETE] = (int)hm_sql_i64(r, i, 7);
        t.n_status[CELL_NO_COUNTER] = (int)hm_sql_i64(r, i, 8);
        struct hm_pair *pp = hm_grid_pair(g, (size_t)s, (size_t)d);
        pp->strip[k] =
            (signed char)hm_status_of_totals(&t, hm_status_parse(hm_sql_str(r, i, 2)), cfg);
        pp->strip_coverage[k] = (float)hm_totals_coverage(&t);
    }
    PQclear(r);
    return 0;
}

int hm_grid_load(PGconn *db, const struct cfg *cfg, const struct hm_span *span,
                 struct hm_grid **out, char *err, size_t errlen)
{
    int began = 0;
    struct hm_grid *g = calloc(1, sizeof *g);
    if (!g) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    g->span = *span;
    g->latest = span->kind == HM_SPAN_LATEST;
    /* a time inside a window means that window */
    if (cfg && cfg->window_seconds > 0 && g->span.kind == HM_SPAN_WINDOW)
        g->span.window_us = tm_window_start(g->span.window_us, cfg->window_seconds);
    g->generated_us = tm_now_us();
    for (size_t i = 0; cfg && i < cfg->n_sites; i++)
        if (site_index(g, cfg->sites[i].name, true) < 0)
            goto fail_oom;
    size_t n_cfg = g->n_sites;
    began = hm_sql_read_begin(db);
    if (resolve_span(db, g, err, errlen) < 0)
        goto fail;
    if (hm_alerts_load(db, NULL, NULL, &g->alerts, &g->n_alerts, err, errlen) < 0)
        goto fail;
    if (g->span.kind == HM_SPAN_LATEST) {
        /* no data at all: an empty grid of the configured sites */
        if (alloc_pairs(g) < 0)
            goto fail_oom;
    } else {
        if (load_pairs(db, g, cfg, n_cfg, err, errlen) < 0 ||
            load_strip(db, g, cfg, err, errlen) < 0)
            goto fail;
    }
    for (size_t i = 0; i < g->n_alerts; i++) {
        int s = site_index(g, g->alerts[i].src, false);
        int d = site_index(g, g->alerts[i].dst, false);
        if (s >= 0 && d >= 0)
            hm_grid_pair(g, (size_t)s, (size_t)d)->n_open_alerts++;
    }
    hm_sql_read_end(db, began);
    *out = g;
    return 0;
fail_oom:
    snprintf(err, errlen, "out of memory");
fail:
    hm_sql_read_end(db, began);
    hm_grid_free(g);
    return -1;
}

void hm_grid_free(struct hm_grid *g)
{
    if (!g)
        return;
    for (size_t i = 0; i < g->n_sites; i++)
        free(g->sites[i]);
    free(g->sites);
    free(g->pairs);
    hm_alerts_free(g->alerts, g->n_alerts);
    free(g);
}
