/* The drill-down page of one site pair (see hm_cell.h). */
#include "hm_cell.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hm_chart.h"
#include "hm_esc.h"
#include "hm_fmt.h"
#include "hm_gaps.h"
#include "hm_grid.h"
#include "hm_grid_svg.h"
#include "hm_heatmap_html.h"
#include "hm_html.h"
#include "hm_sql.h"
#include "hm_status.h"
#include "hm_throttle.h"
#include "hm_unrec.h"
#include "timeutil.h"

#define CHART_WINDOWS 120 /* windows before and including the chosen one */
#define CHART_POINTS  240 /* at most, for a range */
#define TOP_N         10

struct cell_view {
    const char *src, *dst;
    struct hm_span span;
    int64_t from_us, to_us; /* the windows summed */
    int window_seconds;
    bool has_prev, has_next;
    int64_t prev_us, next_us;
    struct hm_totals t;
    enum cell_status status;
    double coverage;
    double valid_fraction;
    int64_t capacity_bps;
    bool any_nfs; /* NFS bytes in any window of the span, incomplete ones too */
};

/* Finds the span's windows for this pair. 1 when found, 0 when the pair has none, -1 error. */
static int resolve(PGconn *db, struct cell_view *v, char *err, size_t errlen)
{
    char a[24], b[24];
    const char *p[3] = {v->src, v->dst, NULL};
    PGresult *r;
    if (v->span.kind == HM_SPAN_LATEST) {
        r = pgc_query(db, "finding the pair's latest window",
                      "SELECT " HM_SQL_US("max(window_start)") " FROM heatmap_cells WHERE "
                                                               "src_site = $1 AND dst_site = $2",
                      2, p, err, errlen);
        if (!r)
            return -1;
        bool none = hm_sql_null(r, 0, 0);
        v->span.window_us = hm_sql_i64(r, 0, 0);
        PQclear(r);
        if (none)
            return 0;
        v->span.kind = HM_SPAN_WINDOW;
    }
    if (v->span.kind == HM_SPAN_WINDOW) {
        p[2] = hm_sql_i64_text(v->span.window_us, a);
        r = pgc_query(
            db, "reading the pair's window",
            "SELECT (SELECT max(window_seconds) FROM heatmap_cells WHERE src_site = $1 AND "
            "dst_site = $2 AND window_start = " HM_SQL_TS(3) "), (SELECT " HM_SQL_US(
                "max(window_start)") " FROM heatmap_cells WHERE src_site = $1 AND dst_site = $2 "
                                     "AND window_start < " HM_SQL_TS(3) "), (SELECT " HM_SQL_US(
                                         "min(window_start)") " FROM heatmap_cells WHERE src_site "
                                                              "= $1 AND dst_site = $2 AND "
                                                              "window_start > " HM_SQL_TS(3) ")",
            3, p, err, errlen);
        if (!r)
            return -1;
        bool none = hm_sql_null(r, 0, 0);
        v->window_seconds = (int)hm_sql_i64(r, 0, 0);
        v->has_prev = !hm_sql_null(r, 0, 1);
        v->prev_us = hm_sql_i64(r, 0, 1);
        v->has_next = !hm_sql_null(r, 0, 2);
        v->next_us = hm_sql_i64(r, 0, 2);
        PQclear(r);
        if (none)
            return 0;
        v->from_us = v->span.window_us;
        v->to_us = v->from_us + v->window_seconds * TM_USEC_PER_SEC;
    } else {
        v->from_us = v->span.from_us;
        v->to_us = v->span.to_us;
    }
    p[2] = hm_sql_i64_text(v->from_us, a);
    const char *q[4] = {p[0], p[1], p[2], hm_sql_i64_text(v->to_us, b)};
    r = pgc_query(db, "reading the pair's cells",
                  "SELECT min(status), min(coverage), min(window_seconds), avg(valid_fraction), "
                  "max(capacity_bps), " HM_GRID_SUMS_SQL ", coalesce(sum(nfs_bytes), 0) > 0 "
                  "FROM heatmap_cells WHERE src_site = "
                  "$1 AND dst_site = $2 AND window_start >= " HM_SQL_TS(
                      3) " AND window_start < " HM_SQL_TS(4),
                  4, q, err, errlen);
    if (!r)
        return -1;
    hm_totals_from_row(r, 0, 5, &v->t);
    v->any_nfs = !hm_sql_null(r, 0, 5 + HM_GRID_SUMS_NCOL) &&
                 strcmp(hm_sql_str(r, 0, 5 + HM_GRID_SUMS_NCOL), "t") == 0;
    int found = v->t.n_windows > 0;
    if (found) {
        v->status = hm_status_of_totals(&v->t, hm_status_parse(hm_sql_str(r, 0, 0)), NULL);
        /* one window: its stored coverage, none when incomplete (a poll gap's is of part of it) */
        v->coverage = v->t.n_windows == 1 && v->status != CELL_INCOMPLETE && !hm_sql_null(r, 0, 1)
                          ? hm_sql_f64(r, 0, 1)
                          : hm_totals_coverage(&v->t);
        if (v->span.kind == HM_SPAN_RANGE)
            v->window_seconds = (int)hm_sql_i64(r, 0, 2);
        v->valid_fraction = hm_sql_f64(r, 0, 3);
        v->capacity_bps = hm_sql_i64(r, 0, 4);
    }
    PQclear(r);
    return found;
}

static void pair_title(struct evbuffer *out, const char *src, const char *dst)
{
    hm_esc_html(out, src);
    evbuffer_add_printf(out, " \xe2\x86\x92 ");
    hm_esc_html(out, dst);
}

static void cell_link(struct evbuffer *out, const char *base, const struct cell_view *v,
                      int64_t window_us, const char *text)
{
    char t[HM_FMT_LEN];
    evbuffer_add_printf(out, "<a href=\"");
    hm_esc_html(out, base);
    evbuffer_add_printf(out, "/heatmap/cell?src=");
    hm_esc_url(out, v->src);
    evbuffer_add_printf(out, "&amp;dst=");
    hm_esc_url(out, v->dst);
    evbuffer_add_printf(out, "&amp;window=%s\">%s</a>", hm_fmt_rfc3339(window_us, t), text);
}

static int chart(struct evbuffer *out, PGconn *db, const struct cell_view *v, const struct cfg *cfg,
                 char *err, size_t errlen)
{
    int64_t w = (v->window_seconds > 0 ? v->window_seconds : 60) * TM_USEC_PER_SEC;
    int64_t from, to, step = w;
    if (v->span.kind == HM_SPAN_RANGE) {
        from = v->from_us - ((v->from_us % w) + w) % w;
        to = v->to_us;
        int64_t nwin = (to - from + w - 1) / w;
        step = w * ((nwin + CHART_POINTS - 1) / CHART_POINTS);
        from = from - ((from % step) + step) % step;
    } else {
        from = v->from_us - (CHART_WINDOWS - 1) * w;
        to = v->to_us;
    }
    size_t n = (size_t)((to - from + step - 1) / step);
    int64_t *x = calloc(n, sizeof *x);
    double *ys = malloc(5 * n * sizeof *ys);
    signed char *st = malloc(n);
    if (!x || !ys || !st) {
        free(x), free(ys), free(st);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        x[i] = from + (int64_t)i * step;
        st[i] = CELL_NONE;
        for (int k = 0; k < 5; k++)
            ys[k * n + i] = NAN;
    }
    char a[24], b[24], c[24], d[24];
    const char *p[5] = {v->src, v->dst, hm_sql_i64_text(from, a), hm_sql_i64_text(to, b),
                        hm_sql_i64_text(step, c)};
    (void)d;
    PGresult *r = pgc_query(
        db, "reading the pair's history",
        "SELECT ((" HM_SQL_US(
            "window_start") " - $3::bigint) / $5::bigint) AS k, min(status), " HM_GRID_SUMS_SQL
                            " FROM heatmap_cells WHERE src_site = $1 AND dst_site = $2 AND "
                            "window_start >= " HM_SQL_TS(3) " AND window_start < " HM_SQL_TS(
                                4) " GROUP BY 1 ORDER BY 1",
        5, p, err, errlen);
    if (!r) {
        free(x), free(ys), free(st);
        return -1;
    }
    for (int i = 0; i < PQntuples(r); i++) {
        int64_t k = hm_sql_i64(r, i, 0);
        if (k < 0 || (size_t)k >= n)
            continue;
        struct hm_totals t;
        hm_totals_from_row(r, i, 2, &t);
        st[k] = (signed char)hm_status_of_totals(&t, hm_status_parse(hm_sql_str(r, i, 1)), cfg);
        if (t.seconds <= 0)
            continue; /* every window of the point incomplete: no rate (a gap, not a zero) */
        double secs = (double)t.seconds; /* the rates are over the windows the sums are of */
        ys[0 * n + k] = t.socket * 8.0 / secs;
        ys[1 * n + k] = t.nfs * 8.0 / secs;
        ys[2 * n + k] = t.service * 8.0 / secs;
        ys[3 * n + k] = t.payload * 8.0 / secs;
        ys[4 * n + k] = t.observed * 8.0 / secs;
    }
    PQclear(r);
    struct hm_chart_series se[] = {
        {"socket", "#2f6fde", ys + 0 * n, true, false},
        {"NFS", "#e08a1e", ys + 1 * n, true, false},
        {"service", "#17a398", ys + 2 * n, true, false},
        {"observed payload", "#111111", ys + 3 * n, false, false},
        {"observed on the wire", "#8a929c", ys + 4 * n, false, true},
    };
    struct hm_chart ch = {
        .width = 1040,
        .height = 300,
        .n = n,
        .x_us = x,
        .x_step_us = step,
        .n_series = 5,
        .series = se,
        .y_kind = HM_Y_BPS,
        .mark_from_us = v->from_us,
        .mark_to_us = v->to_us,
        .status = st,
        .aria = "observed versus attributed traffic per source over time, bit/s",
    };
    char sd[HM_FMT_LEN];
    evbuffer_add_printf(out,
                        "<div class=\"panel\"><h2>Observed vs attributed by source (average "
                        "bit/s per %s; highlighted: the span shown above)</h2>",
                        hm_fmt_duration(step / TM_USEC_PER_SEC, sd));
    hm_chart_svg(out, &ch);
    evbuffer_add_printf(out, "</div>");
    free(x), free(ys), free(st);
    return 0;
}

/* The Kubernetes identity of an owner as one name, namespace/pod/container ('' outside pods;
 * sql/015_kube_owner.sql). */
#define POD_EXPR                                                                                   \
    "CASE WHEN pod = '' THEN '' ELSE concat_ws('/', nullif(namespace, ''), pod, "                  \
    "nullif(container_name, '')) END"

/* column: a column of attribution_rollup, or "pod" (POD_EXPR). */
static int top_table(struct evbuffer *out, PGconn *db, const struct cell_view *v,
                     const char *column, const char *heading, char *err, size_t errlen)
{
    char a[24], b[24], sql[768];
    const char *p[4] = {v->src, v->dst, hm_sql_i64_text(v->from_us, a),
                        hm_sql_i64_text(v->to_us, b)};
    /* column comes from a fixed list in this file, never from the request */
    snprintf(sql, sizeof sql,
             "SELECT %s, sum(bytes)::bigint, string_agg(DISTINCT source, ', ' ORDER BY source) "
             "FROM attribution_rollup WHERE src_site = $1 AND dst_site = $2 AND window_start "
             ">= " HM_SQL_TS(3) " AND window_start < " HM_SQL_TS(
                 4) " GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT %d",
             strcmp(column, "pod") == 0 ? POD_EXPR : column, TOP_N);
    PGresult *r = pgc_query(db, "reading attribution_rollup", sql, 4, p, err, errlen);
    if (!r)
        return -1;
    evbuffer_add_printf(out,
                        "<div class=\"panel tops\" data-dimension=\"%s\"><h2>Top %s</h2><table>"
                        "<tr><th>%s</th><th>source</th><th class=\"num\">bytes</th><th "
                        "class=\"num\">of payload</th></tr>",
                        column, heading, heading);
    for (int i = 0; i < PQntuples(r); i++) {
        char by[HM_FMT_LEN], sh[HM_FMT_LEN];
        int64_t bytes = hm_sql_i64(r, i, 1);
        const char *name = hm_sql_str(r, i, 0);
        evbuffer_add_printf(out, "<tr class=\"who\"><td>");
        const char *dep = strcmp(column, "workflow") == 0    ? "workflow"
                          : strcmp(column, "program") == 0   ? "program"
                          : strcmp(column, "user_name") == 0 ? "user"
                                                             : NULL;
        if (name[0] && dep) {
            /* what this owner talks to over the same span (the /heatmap/deps page) */
            char t1[HM_FMT_LEN], t2[HM_FMT_LEN];
            evbuffer_add_printf(out, "<a class=\"deps\" href=\"deps?%s=", dep);
            hm_esc_url(out, name);
            evbuffer_add_printf(out, "&amp;from=%s&amp;to=%s\">", hm_fmt_rfc3339(v->from_us, t1),
                                hm_fmt_rfc3339(v->to_us, t2));
            hm_esc_html(out, name);
            evbuffer_add_printf(out, "</a>");
        } else if (name[0])
            hm_esc_html(out, name);
        else
            evbuffer_add_printf(out, "<span class=\"muted\">(none)</span>");
        evbuffer_add_printf(out, "</td><td>");
        hm_esc_html(out, hm_sql_str(r, i, 2));
        evbuffer_add_printf(out, "</td><td class=\"num\">%s</td><td class=\"num\">%s</td></tr>",
                            hm_fmt_bytes(bytes, by),
                            hm_fmt_pct(v->t.payload > 0 ? (double)bytes / v->t.payload : NAN, sh));
    }
    if (PQntuples(r) == 0)
        evbuffer_add_printf(out, "<tr><td colspan=\"4\" class=\"muted\">nothing attributed"
                                 "</td></tr>");
    int64_t rest = v->t.payload - v->t.attributed;
    if (rest > 0) {
        char by[HM_FMT_LEN], sh[HM_FMT_LEN];
        evbuffer_add_printf(out,
                            "<tr class=\"unattributed\"><td><i>unattributed remainder</i></td>"
                            "<td></td><td class=\"num\">%s</td><td class=\"num\">%s</td></tr>",
                            hm_fmt_bytes(rest, by), hm_fmt_pct((double)rest / v->t.payload, sh));
    }
    evbuffer_add_printf(out, "</table></div>");
    PQclear(r);
    return 0;
}

static int counters(struct evbuffer *out, PGconn *db, const struct cell_view *v, char *err,
                    size_t errlen)
{
    char a[24], b[24];
    const char *p[4] = {v->src, v->dst, hm_sql_i64_text(v->from_us, a),
                        hm_sql_i64_text(v->to_us, b)};
    PGresult *r = pgc_query(
        db, "reading link_windows",
        "SELECT circuit, device, interface, counter, coalesce(sum(observed_bytes),0)::bigint, "
        "coalesce(sum(observed_payload_bytes),0)::bigint, avg(valid_fraction), max(capacity_bps), "
        "max(utilization), count(*) FROM link_windows WHERE src_site = $1 AND dst_site = $2 AND "
        "window_start >= " HM_SQL_TS(3) " AND window_start < " HM_SQL_TS(
            4) " GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3",
        4, p, err, errlen);
    if (!r)
        return -1;
    evbuffer_add_printf(out,
                        "<div class=\"panel\" style=\"margin-top:14px\"><h2>Circuits and counters "
                        "behind the observed figure</h2><table class=\"circuits\"><tr><th>circuit"
                        "</th><th>device</th><th>interface</th><th>counter</th><th class=\"num\">"
                        "observed</th><th class=\"num\">payload est.</th><th class=\"num\">"
                        "counter coverage</th><th class=\"num\">capacity</th><th class=\"num\">"
                        "peak utilization</th></tr>");
    for (int i = 0; i < PQntuples(r); i++) {
        char o[HM_FMT_LEN], pl[HM_FMT_LEN], vf[HM_FMT_LEN], cap[HM_FMT_LEN], ut[HM_FMT_LEN];
        const char *ctr = hm_sql_str(r, i, 3);
        evbuffer_add_printf(out, "<tr><td>");
        hm_esc_html(out, hm_sql_str(r, i, 0));
        evbuffer_add_printf(out, "</td><td>");
        hm_esc_html(out, hm_sql_str(r, i, 1));
        evbuffer_add_printf(out, "</td><td>");
        hm_esc_html(out, hm_sql_str(r, i, 2));
        evbuffer_add_printf(out, "</td><td>");
        if (strcmp(ctr, "out") == 0)
            evbuffer_add_printf(out, "out (sender side)");
        else if (strcmp(ctr, "in") == 0)
            evbuffer_add_printf(out, "in (receiver side)");
        else
            hm_esc_html(out, ctr);
        int64_t capbps = hm_sql_i64(r, i, 7);
        evbuffer_add_printf(out,
                            "</td><td class=\"num\">%s</td><td class=\"num\">%s</td><td "
                            "class=\"num\">%s</td><td class=\"num\">%s</td><td class=\"num\">%s"
                            "</td></tr>",
                            hm_fmt_bytes(hm_sql_i64(r, i, 4), o),
                            hm_fmt_bytes(hm_sql_i64(r, i, 5), pl),
                            hm_fmt_pct(hm_sql_f64(r, i, 6), vf),
                            capbps > 0 ? hm_fmt_bps((double)capbps, cap) : "unknown",
                            hm_fmt_pct(hm_sql_f64(r, i, 8), ut));
    }
    if (PQntuples(r) == 0)
        evbuffer_add_printf(out, "<tr><td colspan=\"9\" class=\"muted\">no link counters for "
                                 "this pair in this span (status no_counter: nothing measures "
                                 "it)</td></tr>");
    evbuffer_add_printf(out, "</table></div>");
    PQclear(r);
    return 0;
}

static void summary(struct evbuffer *out, const struct cell_view *v)
{
    char a[HM_FMT_LEN], b[HM_FMT_LEN], c[HM_FMT_LEN], d[HM_FMT_LEN], e[HM_FMT_LEN];
    char f[HM_FMT_LEN], g[HM_FMT_LEN], h[HM_FMT_LEN], k[HM_FMT_LEN];
    int64_t rest = v->t.payload - v->t.attributed;
    if (v->t.seconds > 0) /* the seconds of the windows summed: none when all are incomplete */
        hm_fmt_bps(v->t.observed * 8.0 / (double)v->t.seconds, k);
    else
        snprintf(k, sizeof k, "unknown");
    evbuffer_add_printf(
        out,
        "<div class=\"kpis\"><div class=\"kpi\"><b>%s</b><span>coverage (attributed / "
        "payload)</span></div><div class=\"kpi\"><b>%s</b><span>observed on the wire, avg "
        "%s</span></div><div class=\"kpi\"><b>%s</b><span>observed payload (estimate)</span>"
        "</div><div class=\"kpi\"><b>%s</b><span>attributed: socket %s, NFS %s, service %s"
        "</span></div><div class=\"kpi\" data-unattributed-bytes=\"%lld\"><b>%s</b><span>"
        "unattributed remainder</span></div>",
        hm_fmt_pct(v->coverage, a), hm_totals_bytes(&v->t, v->t.observed, b), k,
        hm_totals_bytes(&v->t, v->t.payload, c), hm_totals_bytes(&v->t, v->t.attributed, d),
        hm_totals_bytes(&v->t, v->t.socket, e), hm_totals_bytes(&v->t, v->t.nfs, f),
        hm_totals_bytes(&v->t, v->t.service, g), (long long)(rest > 0 ? rest : 0),
        hm_totals_bytes(&v->t, rest > 0 ? rest : 0, h));
    if (v->t.n_status[CELL_INCOMPLETE] > 0)
        evbuffer_add_printf(out,
                            "<div class=\"kpi\" data-incomplete-windows=\"%d\"><b>%d of %d</b>"
                            "<span>windows incomplete (a poll gap or an agent's lost span): "
                            "left out of these figures; the counters below are all the "
                            "switches counted</span></div>",
                            v->t.n_status[CELL_INCOMPLETE], v->t.n_status[CELL_INCOMPLETE],
                            v->t.n_windows);
    if (v->capacity_bps > 0)
        evbuffer_add_printf(out,
                            "<div class=\"kpi\"><b>%s</b><span>capacity; counters cover "
                            "%s of the span</span></div>",
                            hm_fmt_bps((double)v->capacity_bps, a),
                            hm_fmt_pct(v->valid_fraction, b));
    evbuffer_add_printf(out, "</div>");
    if (v->any_nfs) /* NFS on the pair: who loads the filers, and the latency they see */
        evbuffer_add_printf(out,
                            "<p class=\"nas-link\"><a href=\"nas?from=%s&amp;to=%s\">NAS view: "
                            "which pods and workflows load the filers in this span, with their "
                            "latency</a></p>",
                            hm_fmt_rfc3339(v->from_us, a), hm_fmt_rfc3339(v->to_us, b));
}

/* Every alert of the pair, open ones first (as hm_alerts_load orders them). */
static void alerts_table(struct evbuffer *out, const struct hm_alert *al, size_t n, int64_t now)
{
    evbuffer_add_printf(out,
                        "<div class=\"panel\" style=\"margin-top:14px\"><h2>Alerts on this pair "
                        "(latest 50)</h2><table class=\"pair-alerts\"><tr><th>kind</th><th>state"
                        "</th><th>opened</th><th>open for</th><th>windows</th><th class=\"num\">"
                        "peak unattributed</th><th>summary</th></tr>");
    for (size_t i = 0; i < n; i++) {
        char t[HM_FMT_LEN], d[HM_FMT_LEN], w1[HM_FMT_LEN], w2[HM_FMT_LEN], pk[HM_FMT_LEN];
        int64_t end = al[i].resolved_us ? al[i].resolved_us : now;
        evbuffer_add_printf(out,
                            "<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s\xe2\x80\x93%s"
                            "</td><td class=\"num\">%s</td><td>",
                            al[i].kind, al[i].state, hm_fmt_time(al[i].opened_us, t),
                            hm_fmt_duration((end - al[i].opened_us) / TM_USEC_PER_SEC, d),
                            hm_fmt_hhmm(al[i].first_window_us, w1),
                            hm_fmt_hhmm(al[i].last_window_us, w2),
                            hm_fmt_bytes(al[i].peak_unattributed, pk));
        hm_esc_html(out, al[i].summary);
        evbuffer_add_printf(out, "</td></tr>");
    }
    if (n == 0)
        evbuffer_add_printf(out, "<tr><td colspan=\"7\" class=\"muted\">no alerts</td></tr>");
    evbuffer_add_printf(out, "</table></div>");
}

static int cell_html(struct evbuffer *out, PGconn *db, const struct cfg *cfg, const char *src,
                     const char *dst, const struct hm_span *span, const char *base, char *err,
                     size_t errlen)
{
    struct cell_view v = {.src = src, .dst = dst, .span = *span};
    if (cfg && cfg->window_seconds > 0 && v.span.kind == HM_SPAN_WINDOW)
        v.span.window_us = tm_window_start(v.span.window_us, cfg->window_seconds);
    int found = resolve(db, &v, err, errlen);
    if (found < 0)
        return 500;
    if (found == 0) {
        snprintf(err, errlen, "no heatmap rows for %.100s -> %.100s in this span", src, dst);
        return 404;
    }
    v.status = hm_status_of_totals(&v.t, v.status, cfg);
    struct hm_alert *al = NULL;
    size_t n_al = 0;
    if (hm_alerts_load(db, src, dst, &al, &n_al, err, errlen) < 0)
        return 500;
    int64_t now = tm_now_us();
    struct evbuffer *title = evbuffer_new();
    char t[HM_FMT_LEN], t2[HM_FMT_LEN];
    if (!title) {
        hm_alerts_free(al, n_al);
        snprintf(err, errlen, "out of memory");
        return 500;
    }
    evbuffer_add_printf(title, "%s \xe2\x86\x92 %s", src, dst);
    evbuffer_add(title, "", 1);
    char home[512];
    if (base)
        snprintf(home, sizeof home, "%s/heatmap", base);
    hm_html_open(out, (const char *)evbuffer_pullup(title, -1), base ? home : NULL, 0);
    evbuffer_free(title);

    const struct hm_status_info *si = hm_status_info(v.status);
    evbuffer_add_printf(out, "<div class=\"bar\"><h1 class=\"pair\" data-src=\"");
    hm_esc_html(out, src);
    evbuffer_add_printf(out, "\" data-dst=\"");
    hm_esc_html(out, dst);
    evbuffer_add_printf(out, "\" data-status=\"%s\" data-coverage=\"", si->name);
    if (!isnan(v.coverage))
        evbuffer_add_printf(out, "%.4f", v.coverage);
    evbuffer_add_printf(out, "\">");
    pair_title(out, src, dst);
    evbuffer_add_printf(out, "</h1><span class=\"status\">");
    hm_svg_swatch(out, v.status, 30, 20);
    evbuffer_add_printf(out, "%s</span><span class=\"span\">", si->label);
    if (v.span.kind == HM_SPAN_RANGE)
        evbuffer_add_printf(out, "%s \xe2\x80\x93 %s, %d windows", hm_fmt_time(v.from_us, t),
                            hm_fmt_time(v.to_us, t2), v.t.n_windows);
    else
        evbuffer_add_printf(out, "window %s (%d s)", hm_fmt_time(v.from_us, t), v.window_seconds);
    evbuffer_add_printf(out, "</span>");
    if (base) {
        evbuffer_add_printf(out, "<nav>");
        if (v.span.kind == HM_SPAN_WINDOW && v.has_prev)
            cell_link(out, base, &v, v.prev_us, "\xe2\x80\xb9 previous");
        if (v.span.kind == HM_SPAN_WINDOW && v.has_next)
            cell_link(out, base, &v, v.next_us, "next \xe2\x80\xba");
        evbuffer_add_printf(out, "<a href=\"");
        hm_esc_html(out, base);
        if (v.span.kind == HM_SPAN_RANGE)
            evbuffer_add_printf(out, "/heatmap?from=%s&amp;to=%s\">\xe2\x86\x91 heatmap</a>",
                                hm_fmt_rfc3339(v.from_us, t), hm_fmt_rfc3339(v.to_us, t2));
        else
            evbuffer_add_printf(out, "/heatmap?window=%s\">\xe2\x86\x91 heatmap</a>",
                                hm_fmt_rfc3339(v.from_us, t));
        evbuffer_add_printf(out, "</nav>");
    }
    evbuffer_add_printf(out, "</div>");
    size_t open = 0;
    while (open < n_al && strcmp(al[open].state, "open") == 0)
        open++;
    if (open) {
        evbuffer_add_printf(out,
                            "<div class=\"banner alerts\"><h2>%zu open alert%s on this "
                            "pair</h2>",
                            open, open > 1 ? "s" : "");
        hm_alerts_html(out, al, open, NULL, now);
        evbuffer_add_printf(out, "</div>");
    }
    summary(out, &v);
    int rc = 200;
    if (hm_gaps_html(out, db, v.src, v.dst, v.from_us, v.to_us, err, errlen) < 0) {
        rc = 500;
        goto done;
    }
    if (chart(out, db, &v, cfg, err, errlen) < 0) {
        rc = 500;
        goto done;
    }
    evbuffer_add_printf(out, "<div class=\"cols\">");
    static const char *const dims[][2] = {{"workflow", "workflows"},
                                          {"user_name", "users"},
                                          {"program", "programs"},
                                          {"host", "hosts"},
                                          {"pod", "pods (namespace/pod/container)"}};
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
        if (top_table(out, db, &v, dims[i][0], dims[i][1], err, errlen) < 0) {
            rc = 500;
            goto done;
        }
    evbuffer_add_printf(out, "</div>");
    if (hm_unrec_panel(out, db, cfg, src, dst, v.from_us, v.to_us, &v.t, err, errlen) < 0) {
        rc = 500;
        goto done;
    }
    if (counters(out, db, &v, err, errlen) < 0) {
        rc = 500;
        goto done;
    }
    evbuffer_add_printf(out, "<div class=\"alerts-table\">");
    alerts_table(out, al, n_al, now);
    evbuffer_add_printf(out, "</div>");
    hm_throttle_panel(out, db, src, dst); /* says so itself when it cannot read the rules */
    hm_html_close(out, now);
done:
    hm_alerts_free(al, n_al);
    return rc;
}

int hm_cell_html(struct evbuffer *out, PGconn *db, const struct cfg *cfg, const char *src,
                 const char *dst, const struct hm_span *span, const char *base, char *err,
                 size_t errlen)
{
    int began = hm_sql_read_begin(db); /* one snapshot for every query of the page */
    int rc = cell_html(out, db, cfg, src, dst, span, base, err, errlen);
    hm_sql_read_end(db, began);
    return rc;
}
