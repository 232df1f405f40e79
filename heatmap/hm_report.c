/* The weekly coverage review (see hm_report.h). */
#include "hm_report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cell_status.h"
#include "hm_chart.h"
#include "hm_chflows.h"
#include "hm_esc.h"
#include "hm_fmt.h"
#include "hm_html.h"
#include "hm_sql.h"
#include "timeutil.h"

#define DAY_US        (86400LL * TM_USEC_PER_SEC)
#define WEEK_US       (7 * DAY_US)
#define TOP_GAPS      10
#define TOP_WORKFLOWS 3
#define CHART_PAIRS   8

int hm_report_parse_week(const char *s, int64_t *week_us)
{
    int year, week, used = 0;
    if (!s || sscanf(s, "%4d-W%2d%n", &year, &week, &used) != 2 || used != 8 || s[used] ||
        year < 1970 || week < 1 || week > 53)
        return -1;
    struct tm jan4 = {.tm_year = year - 1900, .tm_mon = 0, .tm_mday = 4};
    time_t t = timegm(&jan4);
    struct tm tm;
    gmtime_r(&t, &tm);
    int wd = tm.tm_wday == 0 ? 7 : tm.tm_wday; /* Monday 1 .. Sunday 7 */
    int64_t monday = ((int64_t)t - (wd - 1) * 86400LL + (week - 1) * 7 * 86400LL) * TM_USEC_PER_SEC;
    char check[16];
    hm_report_week_label(monday, check);
    if (strcmp(check, s) != 0)
        return -1; /* week 53 of a 52-week year */
    *week_us = monday;
    return 0;
}

void hm_report_week_label(int64_t us, char buf[16])
{
    time_t t = (time_t)(us / TM_USEC_PER_SEC);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, 16, "%G-W%V", &tm);
}

/* ---- one writer for Markdown and HTML tables ---- */

struct rep {
    struct evbuffer *out;
    enum hm_report_format f;
    const char *align; /* per column 'l' or 'r' of the open table */
    int col;
};

static void h2(struct rep *r, const char *title, const char *note)
{
    if (r->f == HM_REPORT_MD) {
        evbuffer_add_printf(r->out, "\n## %s\n\n", title);
        if (note)
            evbuffer_add_printf(r->out, "%s\n\n", note);
    } else {
        evbuffer_add_printf(r->out, "<div class=\"panel\" style=\"margin-top:14px\"><h2>%s</h2>",
                            title);
        if (note)
            evbuffer_add_printf(r->out, "<p class=\"muted\">%s</p>", note);
    }
}

static void section_end(struct rep *r)
{
    if (r->f == HM_REPORT_HTML)
        evbuffer_add_printf(r->out, "</div>");
}

static void table(struct rep *r, const char *align, const char *const *heads)
{
    r->align = align;
    size_t n = strlen(align);
    if (r->f == HM_REPORT_MD) {
        evbuffer_add_printf(r->out, "|");
        for (size_t i = 0; i < n; i++)
            evbuffer_add_printf(r->out, " %s |", heads[i]);
        evbuffer_add_printf(r->out, "\n|");
        for (size_t i = 0; i < n; i++)
            evbuffer_add_printf(r->out, "%s|", align[i] == 'r' ? "---:" : "---");
        evbuffer_add_printf(r->out, "\n");
    } else {
        evbuffer_add_printf(r->out, "<table><tr>");
        for (size_t i = 0; i < n; i++)
            evbuffer_add_printf(r->out, "<th%s>%s</th>", align[i] == 'r' ? " class=\"num\"" : "",
                                heads[i]);
        evbuffer_add_printf(r->out, "</tr>");
    }
}

static void row(struct rep *r)
{
    r->col = 0;
    evbuffer_add_printf(r->out, r->f == HM_REPORT_MD ? "|" : "<tr>");
}

static void row_end(struct rep *r)
{
    evbuffer_add_printf(r->out, r->f == HM_REPORT_MD ? "\n" : "</tr>");
}

/* A cell of our own text (numbers, units): written as is. */
static void cell(struct rep *r, const char *text)
{
    if (r->f == HM_REPORT_MD)
        evbuffer_add_printf(r->out, " %s |", text);
    else
        evbuffer_add_printf(r->out, "<td%s>%s</td>",
                            r->align[r->col] == 'r' ? " class=\"num\"" : "", text);
    r->col++;
}

/* A cell holding a name from outside: escaped for the format. */
static void cell_name(struct rep *r, const char *name)
{
    if (r->f == HM_REPORT_MD) {
        evbuffer_add_printf(r->out, " ");
        if (name[0])
            hm_esc_md(r->out, name);
        else
            evbuffer_add_printf(r->out, "(none)");
        evbuffer_add_printf(r->out, " |");
    } else {
        evbuffer_add_printf(r->out, "<td>");
        if (name[0])
            hm_esc_html(r->out, name);
        else
            evbuffer_add_printf(r->out, "<span class=\"muted\">(none)</span>");
        evbuffer_add_printf(r->out, "</td>");
    }
    r->col++;
}

static void cell_pair(struct rep *r, const char *src, const char *dst)
{
    if (r->f == HM_REPORT_MD) {
        evbuffer_add_printf(r->out, " ");
        hm_esc_md(r->out, src);
        evbuffer_add_printf(r->out, " \xe2\x86\x92 ");
        hm_esc_md(r->out, dst);
        evbuffer_add_printf(r->out, " |");
    } else {
        evbuffer_add_printf(r->out, "<td>");
        hm_esc_html(r->out, src);
        evbuffer_add_printf(r->out, " \xe2\x86\x92 ");
        hm_esc_html(r->out, dst);
        evbuffer_add_printf(r->out, "</td>");
    }
    r->col++;
}

static void table_end(struct rep *r, int rows, const char *empty)
{
    if (rows == 0) {
        row(r);
        size_t n = strlen(r->align);
        for (size_t i = 0; i < n; i++)
            cell(r, i == 0 ? empty : "");
        row_end(r);
    }
    if (r->f == HM_REPORT_HTML)
        evbuffer_add_printf(r->out, "</table>");
}

static void para(struct rep *r, const char *text)
{
    if (r->f == HM_REPORT_MD)
        evbuffer_add_printf(r->out, "%s\n", text);
    else
        evbuffer_add_printf(r->out, "<p>%s</p>", text);
}

/* ---- sections ---- */

static char *hours(double seconds, char buf[HM_FMT_LEN])
{
    snprintf(buf, HM_FMT_LEN, "%.1f h", seconds / 3600.0);
    return buf;
}

static char *pp_change(double now, double before, char buf[HM_FMT_LEN])
{
    if (isnan(now) || isnan(before))
        snprintf(buf, HM_FMT_LEN, "n/a");
    else if (fabs(now - before) * 100.0 < 0.05)
        snprintf(buf, HM_FMT_LEN, "0.0 pp"); /* never "-0.0" */
    else
        snprintf(buf, HM_FMT_LEN, "%+.1f pp", (now - before) * 100.0);
    return buf;
}

static double ratio(int64_t a, int64_t b)
{
    return b > 0 ? (double)a / (double)b : NAN;
}

/* The weekly coverage per pair: $1 week start, $2 week end, $3 previous week start (us). */
#define PAIRS_WEEK HM_SQL_TS(1)
#define PAIRS_END  HM_SQL_TS(2)
#define PAIRS_PREV HM_SQL_TS(3)
static const char PAIRS_SQL[] =
    "WITH cur AS (SELECT * FROM coverage_weekly WHERE week_start = " PAIRS_WEEK "), prev AS "
    "(SELECT * FROM coverage_weekly WHERE week_start = " PAIRS_PREV "), hrs AS (SELECT "
    "src_site, dst_site, coalesce(sum(window_seconds) FILTER (WHERE status = 'red'), "
    "0)::bigint AS red_s, coalesce(sum(window_seconds) FILTER (WHERE status = "
    "'incomplete'), 0)::bigint AS inc_s FROM heatmap_cells WHERE window_start >= " PAIRS_WEEK
    " AND window_start < " PAIRS_END " GROUP BY 1, 2), al AS (SELECT src_site, dst_site, "
    "count(*) AS n, count(*) FILTER (WHERE resolved_at IS NULL) AS still_open, "
    "max(extract(epoch from coalesce(resolved_at, now()) - opened_at))::bigint AS "
    "longest_s FROM gap_alerts WHERE opened_at >= " PAIRS_WEEK " AND opened_at < " PAIRS_END
    " GROUP "
    "BY 1, 2) SELECT cur.src_site, cur.dst_site, cur.observed_bytes, "
    "cur.observed_payload_bytes, cur.attributed_bytes, cur.unattributed_bytes, "
    "prev.observed_payload_bytes, prev.attributed_bytes, hrs.red_s, hrs.inc_s, "
    "coalesce(al.n, 0), coalesce(al.still_open, 0), al.longest_s FROM cur LEFT JOIN "
    "prev USING (src_site, dst_site) LEFT JOIN hrs USING (src_site, dst_site) LEFT "
    "JOIN al USING (src_site, dst_site) ORDER BY cur.observed_payload_bytes DESC "
    "NULLS LAST, 1, 2";
#undef PAIRS_WEEK
#undef PAIRS_END
#undef PAIRS_PREV

static int pairs_section(struct rep *r, PGconn *db, const char *const *p, const char *prev_label,
                         char *err, size_t errlen)
{
    /* $1 week start, $2 week end, $3 previous week start (us) */
    PGresult *q = pgc_query(db, "reading coverage_weekly", PAIRS_SQL, 3, p, err, errlen);
    if (!q)
        return -1;
    int64_t tp = 0, ta = 0, to = 0, pp = 0, pa = 0;
    for (int i = 0; i < PQntuples(q); i++) {
        to += hm_sql_i64(q, i, 2);
        tp += hm_sql_i64(q, i, 3);
        ta += hm_sql_i64(q, i, 4);
        pp += hm_sql_i64(q, i, 6);
        pa += hm_sql_i64(q, i, 7);
    }
    char a[HM_FMT_LEN], b[HM_FMT_LEN], c[HM_FMT_LEN], d[HM_FMT_LEN], e[HM_FMT_LEN], line[512];
    snprintf(line, sizeof line,
             "%sAll pairs:%s observed %s on the wire (%s payload), attributed %s, coverage %s "
             "(%s vs %s).",
             r->f == HM_REPORT_MD ? "**" : "<b>", r->f == HM_REPORT_MD ? "**" : "</b>",
             hm_fmt_bytes(to, a), hm_fmt_bytes(tp, b), hm_fmt_bytes(ta, c),
             hm_fmt_pct(ratio(ta, tp), d), pp_change(ratio(ta, tp), ratio(pa, pp), e), prev_label);
    para(r, line);
    char note[512];
    snprintf(note, sizeof note,
             "Volumes and coverage summed over the week's complete windows; incomplete ones "
             "are left out. Change: coverage points against %s. Hours red / incomplete: time "
             "the pair spent in that status (incomplete = a poll gap or an agent's lost span).",
             prev_label);
    h2(r, "Coverage per site pair", note);
    static const char *const heads[] = {
        "pair",   "observed",  "payload",          "attributed",    "unattributed", "coverage",
        "change", "hours red", "incomplete hours", "alerts opened", "longest open"};
    table(r, "lrrrrrrrrrr", heads);
    for (int i = 0; i < PQntuples(q); i++) {
        char o[HM_FMT_LEN], pl[HM_FMT_LEN], at[HM_FMT_LEN], un[HM_FMT_LEN], cv[HM_FMT_LEN];
        char ch[HM_FMT_LEN], hr[HM_FMT_LEN], hi[HM_FMT_LEN], al[HM_FMT_LEN], lo[HM_FMT_LEN];
        double cov = ratio(hm_sql_i64(q, i, 4), hm_sql_i64(q, i, 3));
        double prev = hm_sql_null(q, i, 6) ? NAN : ratio(hm_sql_i64(q, i, 7), hm_sql_i64(q, i, 6));
        int64_t n_al = hm_sql_i64(q, i, 10), still = hm_sql_i64(q, i, 11);
        if (still)
            snprintf(al, sizeof al, "%lld (%lld still open)", (long long)n_al, (long long)still);
        else
            snprintf(al, sizeof al, "%lld", (long long)n_al);
        row(r);
        cell_pair(r, hm_sql_str(q, i, 0), hm_sql_str(q, i, 1));
        cell(r, hm_fmt_bytes(hm_sql_i64(q, i, 2), o));
        cell(r, hm_fmt_bytes(hm_sql_i64(q, i, 3), pl));
        cell(r, hm_fmt_bytes(hm_sql_i64(q, i, 4), at));
        cell(r, hm_fmt_bytes(hm_sql_i64(q, i, 5), un));
        cell(r, hm_fmt_pct(cov, cv));
        cell(r, pp_change(cov, prev, ch));
        cell(r, hours((double)hm_sql_i64(q, i, 8), hr));
        cell(r, hours((double)hm_sql_i64(q, i, 9), hi));
        cell(r, al);
        cell(r, n_al ? hm_fmt_duration(hm_sql_i64(q, i, 12), lo) : "\xe2\x80\x94");
        row_end(r);
    }
    table_end(r, PQntuples(q), "no reconciled windows this week");
    section_end(r);
    PQclear(q);
    return 0;
}

static int gaps_section(struct rep *r, PGconn *db, const char *const *p, char *err, size_t errlen)
{
    PGresult *q = pgc_query(
        db, "reading the largest gaps",
        "SELECT src_site, dst_site, " HM_SQL_US(
            "date_trunc('hour', window_start)") ", "
                                                "sum(greatest(unattributed_bytes, 0))::bigint AS "
                                                "gap, sum(attributed_bytes)::bigint, "
                                                "sum(observed_payload_bytes)::bigint, count(*) "
                                                "FILTER (WHERE status = 'red') "
                                                "FROM heatmap_cells WHERE wl_known(status) "
                                                "AND window_start "
                                                ">= " HM_SQL_TS(1) " AND window_start < " HM_SQL_TS(
                                                    2) " GROUP BY 1, 2, 3 HAVING "
                                                       "sum(greatest(unattributed_bytes, 0)) > 0 "
                                                       "ORDER BY gap DESC, 3, 1, 2 LIMIT 10",
        2, p, err, errlen);
    if (!q)
        return -1;
    h2(r, "Largest unexplained gaps",
       "The hours (UTC) with the most unattributed payload, any pair.");
    static const char *const heads[] = {"pair", "hour (UTC)", "unattributed",
                                        "coverage in that hour", "red windows"};
    table(r, "llrrr", heads);
    for (int i = 0; i < PQntuples(q); i++) {
        char t[HM_FMT_LEN], e[HM_FMT_LEN], u[HM_FMT_LEN], cv[HM_FMT_LEN], when[96], nr[24];
        int64_t h = hm_sql_i64(q, i, 2);
        time_t tt = (time_t)(h / TM_USEC_PER_SEC);
        struct tm tm;
        gmtime_r(&tt, &tm);
        char day[16];
        strftime(day, sizeof day, "%a", &tm);
        snprintf(when, sizeof when, "%s %.16s\xe2\x80\x93%s", day, hm_fmt_time(h, t),
                 hm_fmt_hhmm(h + 3600 * TM_USEC_PER_SEC, e));
        snprintf(nr, sizeof nr, "%lld", (long long)hm_sql_i64(q, i, 6));
        row(r);
        cell_pair(r, hm_sql_str(q, i, 0), hm_sql_str(q, i, 1));
        cell(r, when);
        cell(r, hm_fmt_bytes(hm_sql_i64(q, i, 3), u));
        cell(r, hm_fmt_pct(ratio(hm_sql_i64(q, i, 4), hm_sql_i64(q, i, 5)), cv));
        cell(r, nr);
        row_end(r);
    }
    table_end(r, PQntuples(q), "no unexplained traffic this week");
    section_end(r);
    PQclear(q);
    return 0;
}

#define HOSTS_BODY                                                                                 \
    "f AS (SELECT DISTINCT ON (window_start, src_addr, dst_addr, proto, dst_port)"                 \
    " window_start, src_addr, dst_addr, src_site, dst_site, estimated_bytes FROM flow_samples"     \
    " WHERE window_start >= " HM_SQL_TS(1) " AND window_start < " HM_SQL_TS(                       \
        2) " ORDER BY window_start, src_addr, dst_addr, proto, dst_port, samples DESC, device),"   \
           " u AS (SELECT * FROM f WHERE NOT EXISTS (SELECT 1 FROM flow_records x WHERE"           \
           " x.window_start = f.window_start AND ((x.local_addr = f.src_addr AND x.remote_addr ="  \
           " f.dst_addr) OR (x.local_addr = f.dst_addr AND x.remote_addr = f.src_addr)))),"        \
           " h AS (SELECT window_start, src_addr AS host, src_site AS site, dst_addr AS peer,"     \
           " estimated_bytes FROM u UNION ALL SELECT window_start, dst_addr, dst_site, src_addr,"  \
           " estimated_bytes FROM u)"                                                              \
           " SELECT host(host), coalesce(min(site), ''), count(DISTINCT window_start),"            \
           " sum(estimated_bytes)::bigint, count(DISTINCT peer) FROM h GROUP BY host"              \
           " ORDER BY 3 DESC, 4 DESC, 1 LIMIT 10"

/* In ClickHouse mode flow_records is the CTE of the week's flows in $3 (hm_chflows.h), read for
 * the addresses of the week's sampled flows. */
static const char SQL_HOST_ADDRS[] =
    "SELECT DISTINCT host(v.a) FROM flow_samples, LATERAL (VALUES (src_addr), (dst_addr)) v(a)"
    " WHERE window_start >= " HM_SQL_TS(1) " AND window_start < " HM_SQL_TS(2);

/* Hosts at either end of sampled flows (flow_samples, one exporter per pair and window) that no
 * agent reported in that window: where to install an agent next (heatmap/hm_unrec.h). */
static int hosts_section(struct rep *r, PGconn *db, const struct cfg *cfg, const char *const *p,
                         int64_t week_us, char *err, size_t errlen)
{
    char *flows = NULL;
    if (cfg->clickhouse.enabled &&
        !(flows = hm_chflows_json(db, &cfg->clickhouse, SQL_HOST_ADDRS, 2, p, week_us,
                                  week_us + WEEK_US, err, errlen)))
        return -1;
    const char *p3[3] = {p[0], p[1], flows};
    PGresult *q = pgc_query(db, "reading the hosts behind unexplained bytes",
                            flows ? "WITH " HM_CHFLOWS_CTE(3) HOSTS_BODY : "WITH " HOSTS_BODY,
                            flows ? 3 : 2, p3, err, errlen);
    free(flows);
    if (!q)
        return -1;
    h2(r, "Hosts behind unexplained bytes",
       "From the routers' sampled flows: hosts at either end of traffic that no agent reported, "
       "by the number of windows they carried it in. Where to install an agent next.");
    static const char *const heads[] = {"host", "site", "windows", "estimated bytes", "peers"};
    table(r, "llrrr", heads);
    for (int i = 0; i < PQntuples(q); i++) {
        char b[HM_FMT_LEN];
        row(r);
        cell(r, hm_sql_str(q, i, 0));
        cell_name(r, hm_sql_str(q, i, 1));
        cell(r, hm_sql_str(q, i, 2));
        cell(r, hm_fmt_bytes(hm_sql_i64(q, i, 3), b));
        cell(r, hm_sql_str(q, i, 4));
        row_end(r);
    }
    table_end(r, PQntuples(q), "no sampled flows without an agent this week");
    section_end(r);
    PQclear(q);
    return 0;
}

static int workflows_section(struct rep *r, PGconn *db, const char *const *p, char *err,
                             size_t errlen)
{
    PGresult *q =
        pgc_query(db, "reading attribution_rollup",
                  /* a week: the whole hours from attribution_rollup_hourly (sql/013) */
                  "WITH w AS (SELECT src_site, dst_site, workflow, sum(bytes)::bigint AS bytes "
                  "FROM wl_attribution_range(" HM_SQL_TS(1) ", " HM_SQL_TS(
                      2) ") GROUP BY 1, 2, 3), "
                         "ranked AS (SELECT *, row_number() OVER "
                         "(PARTITION BY src_site, dst_site ORDER BY "
                         "bytes DESC, "
                         "workflow) AS rank, sum(bytes) OVER (PARTITION "
                         "BY src_site, dst_site) AS pair_total, "
                         "max(bytes) OVER (PARTITION BY src_site, "
                         "dst_site) AS pair_max FROM w) "
                         "SELECT src_site, dst_site, workflow, bytes, "
                         "pair_total FROM ranked WHERE rank <= 3 "
                         "ORDER BY pair_max DESC, 1, 2, rank",
                  2, p, err, errlen);
    if (!q)
        return -1;
    h2(r, "Largest workflows per pair", "Attributed bytes after de-duplication, top 3 per pair.");
    static const char *const heads[] = {"pair", "workflow", "bytes", "share of attributed"};
    table(r, "llrr", heads);
    for (int i = 0; i < PQntuples(q); i++) {
        char b[HM_FMT_LEN], s[HM_FMT_LEN];
        row(r);
        cell_pair(r, hm_sql_str(q, i, 0), hm_sql_str(q, i, 1));
        cell_name(r, hm_sql_str(q, i, 2));
        cell(r, hm_fmt_bytes(hm_sql_i64(q, i, 3), b));
        cell(r, hm_fmt_pct(ratio(hm_sql_i64(q, i, 3), hm_sql_i64(q, i, 4)), s));
        row_end(r);
    }
    table_end(r, PQntuples(q), "nothing attributed this week");
    section_end(r);
    PQclear(q);
    return 0;
}

static int over_section(struct rep *r, PGconn *db, const char *const *p, char *err, size_t errlen)
{
    PGresult *q =
        pgc_query(db, "reading over-attribution",
                  "SELECT src_site, dst_site, count(*), max(coverage), "
                  "(array_agg(" HM_SQL_US(
                      "window_start") " ORDER BY coverage DESC))[1], "
                                      "sum(attributed_bytes - observed_payload_bytes)::bigint "
                                      "FROM heatmap_cells WHERE status = 'over' AND window_start "
                                      ">= " HM_SQL_TS(1) " AND window_start < " HM_SQL_TS(
                                          2) " GROUP BY 1, 2 ORDER BY 3 DESC, 1, 2",
                  2, p, err, errlen);
    if (!q)
        return -1;
    h2(r, "Over-attribution anomalies",
       "Windows where more was attributed than the link carried: a sign of double counting "
       "(a flow seen twice, a service transfer also counted as sockets).");
    static const char *const heads[] = {"pair", "windows over", "worst coverage", "worst window",
                                        "excess attributed"};
    table(r, "lrrlr", heads);
    for (int i = 0; i < PQntuples(q); i++) {
        char n[24], cv[HM_FMT_LEN], t[HM_FMT_LEN], x[HM_FMT_LEN];
        snprintf(n, sizeof n, "%lld", (long long)hm_sql_i64(q, i, 2));
        row(r);
        cell_pair(r, hm_sql_str(q, i, 0), hm_sql_str(q, i, 1));
        cell(r, n);
        cell(r, hm_fmt_pct(hm_sql_f64(q, i, 3), cv));
        cell(r, hm_fmt_time(hm_sql_i64(q, i, 4), t));
        cell(r, hm_fmt_bytes(hm_sql_i64(q, i, 5), x));
        row_end(r);
    }
    table_end(r, PQntuples(q), "none this week");
    section_end(r);
    PQclear(q);
    return 0;
}

/* Throttle rules in force during the week (issue 12): proposals and rules, with what their
 * hosts passed, delayed and dropped. */
static int throttle_section(struct rep *r, PGconn *db, const char *const *p, char *err,
                            size_t errlen)
{
    PGresult *q = pgc_query(
        db, "reading throttle rules",
        "SELECT r.id, r.selector_kind || ' ' || r.selector_value, r.rate_bps, r.mode || CASE WHEN "
        "r.status = 'proposed' THEN ' (proposal)' ELSE '' END, r.created_by, coalesce((SELECT "
        "sum(delayed_bytes) FROM throttle_host_stats h WHERE h.rule_id = r.id), 0)::bigint, "
        "coalesce((SELECT sum(dropped_bytes) FROM throttle_host_stats h WHERE h.rule_id = r.id), "
        "0)::bigint, r.reason FROM throttle_rules r WHERE r.created_at < " HM_SQL_TS(
            2) " AND coalesce(r.revoked_at, r.expires_at) >= " HM_SQL_TS(1) " ORDER BY r.id",
        2, p, err, errlen);
    if (!q)
        return -1;
    h2(r, "Throttle rules",
       "Rules and proposals in force during the week. NFS sent by the kernel's RPC client is "
       "never throttled: act at the NFS server or export.");
    static const char *const heads[] = {"id", "selector", "rate",    "mode",
                                        "by", "delayed",  "dropped", "reason"};
    table(r, "llrllrrl", heads);
    for (int i = 0; i < PQntuples(q); i++) {
        char rt[HM_FMT_LEN], dl[HM_FMT_LEN], dr[HM_FMT_LEN];
        row(r);
        cell(r, hm_sql_str(q, i, 0));
        cell(r, hm_sql_str(q, i, 1));
        cell(r, hm_fmt_bps(hm_sql_f64(q, i, 2), rt));
        cell(r, hm_sql_str(q, i, 3));
        cell(r, hm_sql_str(q, i, 4));
        cell(r, hm_fmt_bytes(hm_sql_i64(q, i, 5), dl));
        cell(r, hm_fmt_bytes(hm_sql_i64(q, i, 6), dr));
        cell(r, hm_sql_str(q, i, 7));
        row_end(r);
    }
    table_end(r, PQntuples(q), "none this week");
    section_end(r);
    PQclear(q);
    return 0;
}

static const char *const pair_colours[CHART_PAIRS] = {"#2f6fde", "#d62839", "#2f9e5a", "#7e4bc4",
                                                      "#e08a1e", "#17a398", "#5b6470", "#c2185b"};

static int days_section(struct rep *r, PGconn *db, const struct cfg *cfg, const char *const *p,
                        int64_t week_us, char *err, size_t errlen)
{
    PGresult *q = pgc_query(
        db, "reading coverage by day",
        "SELECT src_site, dst_site, ((" HM_SQL_US(
            "window_start") " - $1::bigint) / 86400000000)::int, "
                            "sum(attributed_bytes)::bigint, sum(observed_payload_bytes)::bigint, "
                            "sum(sum(observed_payload_bytes)) OVER (PARTITION BY src_site, "
                            "dst_site) AS pair_total "
                            "FROM heatmap_cells WHERE wl_known(status) AND window_start "
                            ">= " HM_SQL_TS(1) " AND window_start < " HM_SQL_TS(
                                2) " GROUP BY 1, 2, 3 ORDER BY "
                                   "pair_total DESC NULLS "
                                   "LAST, 1, 2, 3",
        2, p, err, errlen);
    if (!q)
        return -1;
    /* pairs in order of volume (their rows are consecutive); coverage per day. names point
     * into q, which lives until the end of the section */
    size_t rows = (size_t)PQntuples(q), np = 0;
    const char **names = calloc(2 * rows + 2, sizeof *names);
    double(*cov)[7] = calloc(rows + 1, sizeof *cov);
    if (!names || !cov) {
        free(names), free(cov);
        PQclear(q);
        snprintf(err, errlen, "coverage by day: out of memory");
        return -1;
    }
    for (size_t i = 0; i < rows; i++) {
        const char *s = hm_sql_str(q, (int)i, 0), *d = hm_sql_str(q, (int)i, 1);
        if (np == 0 || strcmp(names[2 * (np - 1)], s) || strcmp(names[2 * (np - 1) + 1], d)) {
            names[2 * np] = s;
            names[2 * np + 1] = d;
            for (int k = 0; k < 7; k++)
                cov[np][k] = NAN;
            np++;
        }
        int day = (int)hm_sql_i64(q, (int)i, 2);
        if (day >= 0 && day < 7 && !hm_sql_null(q, (int)i, 4))
            cov[np - 1][day] = ratio(hm_sql_i64(q, (int)i, 3), hm_sql_i64(q, (int)i, 4));
    }
    h2(r, "Coverage by day",
       "Attributed / observed payload per UTC day; the chart shows the 8 busiest pairs.");
    if (r->f == HM_REPORT_HTML && np > 0) {
        int64_t x[7];
        for (int k = 0; k < 7; k++)
            x[k] = week_us + k * DAY_US;
        size_t ns = np < CHART_PAIRS ? np : CHART_PAIRS;
        struct hm_chart_series se[CHART_PAIRS];
        char label[CHART_PAIRS][160];
        for (size_t i = 0; i < ns; i++) {
            snprintf(label[i], sizeof label[i], "%.60s \xe2\x86\x92 %.60s", names[2 * i],
                     names[2 * i + 1]);
            se[i] = (struct hm_chart_series){label[i], pair_colours[i], cov[i], false, false};
        }
        double th[2] = {cell_th_green(cfg), cell_th_red(cfg)};
        struct hm_chart ch = {.width = 1000,
                              .height = 300,
                              .n = 7,
                              .x_us = x,
                              .x_step_us = DAY_US,
                              .n_series = ns,
                              .series = se,
                              .y_kind = HM_Y_RATIO,
                              .n_hlines = 2,
                              .hlines = th,
                              .aria = "coverage by day per site pair"};
        hm_chart_svg(r->out, &ch);
    }
    const char *heads[8] = {"pair"};
    char day_heads[7][24];
    for (int k = 0; k < 7; k++) {
        time_t tt = (time_t)((week_us + k * DAY_US) / TM_USEC_PER_SEC);
        struct tm tm;
        gmtime_r(&tt, &tm);
        strftime(day_heads[k], sizeof day_heads[k], "%a %d %b", &tm);
        heads[k + 1] = day_heads[k];
    }
    table(r, "lrrrrrrr", heads);
    for (size_t i = 0; i < np; i++) {
        row(r);
        cell_pair(r, names[2 * i], names[2 * i + 1]);
        for (int k = 0; k < 7; k++) {
            char c[HM_FMT_LEN];
            cell(r, isnan(cov[i][k]) ? "\xe2\x80\x94" : hm_fmt_pct(cov[i][k], c));
        }
        row_end(r);
    }
    table_end(r, (int)np, "no reconciled windows this week");
    section_end(r);
    free(names);
    free(cov);
    PQclear(q);
    return 0;
}

static int render(struct evbuffer *out, PGconn *db, const struct cfg *cfg, int64_t week_us,
                  enum hm_report_format fmt, char *err, size_t errlen)
{
    struct rep r = {.out = out, .f = fmt};
    char label[16], prev_label[16], t1[HM_FMT_LEN], t2[HM_FMT_LEN], gen[HM_FMT_LEN];
    hm_report_week_label(week_us, label);
    hm_report_week_label(week_us - WEEK_US, prev_label);
    char a[24], b[24], c[24];
    const char *p[3] = {hm_sql_i64_text(week_us, a), hm_sql_i64_text(week_us + WEEK_US, b),
                        hm_sql_i64_text(week_us - WEEK_US, c)};
    char title[128];
    snprintf(title, sizeof title, "WAN coverage review \xe2\x80\x94 %s", label);
    int64_t now = tm_now_us();
    if (fmt == HM_REPORT_MD) {
        evbuffer_add_printf(out, "# %s\n\n", title);
        evbuffer_add_printf(out,
                            "Week %s to %s. Generated %s by `wanledger report` from "
                            "heatmap_cells, coverage_weekly, attribution_rollup and gap_alerts. "
                            "Coverage = attributed / observed payload; volumes in decimal units "
                            "(1 GB = 10^9 bytes).\n\n",
                            hm_fmt_time(week_us, t1), hm_fmt_time(week_us + WEEK_US, t2),
                            hm_fmt_time(now, gen));
    } else {
        hm_html_open(out, title, NULL, 0);
        evbuffer_add_printf(out,
                            "<h1>%s</h1><p class=\"muted\">Week %s to %s. Coverage = attributed "
                            "/ observed payload; volumes in decimal units (1 GB = 10<sup>9</sup> "
                            "bytes).</p>",
                            title, hm_fmt_time(week_us, t1), hm_fmt_time(week_us + WEEK_US, t2));
    }
    if (pairs_section(&r, db, p, prev_label, err, errlen) < 0)
        return -1;
    if (days_section(&r, db, cfg, p, week_us, err, errlen) < 0 ||
        gaps_section(&r, db, p, err, errlen) < 0 ||
        hosts_section(&r, db, cfg, p, week_us, err, errlen) < 0 ||
        workflows_section(&r, db, p, err, errlen) < 0 || over_section(&r, db, p, err, errlen) < 0 ||
        throttle_section(&r, db, p, err, errlen) < 0)
        return -1;
    if (fmt == HM_REPORT_HTML)
        hm_html_close(out, now);
    return 0;
}

int hm_report_render(struct evbuffer *out, PGconn *db, const struct cfg *cfg, int64_t week_us,
                     enum hm_report_format fmt, char *err, size_t errlen)
{
    int began = hm_sql_read_begin(db); /* every section from one snapshot */
    int rc = render(out, db, cfg, week_us, fmt, err, errlen);
    hm_sql_read_end(db, began);
    return rc;
}
