/* `wanledger report --week 2026-W48`: every figure of the Markdown report equals what the test
 * computes with its own SQL over the seeded heatmap_cells, gap_alerts and attribution_rollup;
 * hostile workflow names stay text; the HTML form carries the coverage-by-day chart; ISO weeks
 * parse as the calendar says. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "harness.h"
#include "hm_cmd.h"
#include "hm_report.h"
#include "hm_seed.h"

/* Two weeks (W47 from 2026-11-16, W48 from 2026-11-23) of 5-minute windows on three pairs.
 * i = window number since the epoch drives the figures: payload 1.0-1.6 GB x scale, coverage
 * 0.62-1.02 (+0.1 on chi->nyc), every 211th window over-attributed (x1.2), every 97th
 * incomplete, and a gap on nyc->chi on Wednesday 2026-11-25 14:00-16:00 (coverage 0.3). */
static const char seed_sql[] =
    "INSERT INTO heatmap_cells (window_start, window_seconds, src_site, dst_site, observed_bytes,"
    " observed_payload_bytes, attributed_bytes, socket_bytes, nfs_bytes, service_bytes,"
    " unattributed_bytes, coverage, status, valid_fraction)"
    " SELECT t, 300, src, dst, (pay * 1.05)::bigint, pay, att, (att * 0.7)::bigint,"
    "  (att * 0.2)::bigint, att - (att * 0.7)::bigint - (att * 0.2)::bigint,"
    "  greatest(pay - att, 0), att::float8 / pay,"
    "  CASE WHEN i % 97 = 0 THEN 'incomplete' WHEN pay < 100000000 THEN 'idle'"
    "   WHEN att::float8 / pay > 1.05 THEN 'over' WHEN att::float8 / pay >= 0.95 THEN 'ok'"
    "   WHEN att::float8 / pay >= 0.80 THEN 'warn' ELSE 'red' END,"
    "  CASE WHEN i % 97 = 0 THEN 0.5 ELSE 1 END"
    " FROM generate_series(timestamptz '2026-11-16T00:00:00Z', timestamptz '2026-11-29T23:55:00Z',"
    "  interval '5 minutes') AS t,"
    " (VALUES ('nyc', 'chi', 1.0), ('chi', 'nyc', 0.5), ('nyc', 'osl', 0.2)) AS p(src, dst, scale),"
    " LATERAL (SELECT extract(epoch from t)::bigint / 300 AS i) AS ii,"
    " LATERAL (SELECT (scale * (1000000000 + (i % 7) * 100000000))::bigint AS pay) AS pp,"
    " LATERAL (SELECT CASE WHEN i % 211 = 0 THEN (pay * 1.2)::bigint"
    "   WHEN src = 'nyc' AND dst = 'chi' AND t >= '2026-11-25T14:00:00Z'"
    "    AND t < '2026-11-25T16:00:00Z' THEN (pay * 0.3)::bigint"
    "   ELSE (pay * (0.62 + (i % 9) * 0.05 + CASE WHEN src = 'chi' THEN 0.1 ELSE 0 END))::bigint"
    "   END AS att) AS aa;"
    "INSERT INTO gap_alerts (kind, src_site, dst_site, state, opened_at, resolved_at,"
    " first_window, last_window, peak_unattributed_bytes, peak_ratio, summary) VALUES"
    " ('gap', 'nyc', 'chi', 'resolved', '2026-11-25T14:15:00Z', '2026-11-25T16:25:00Z',"
    "  '2026-11-25T14:00:00Z', '2026-11-25T16:15:00Z', 900000000, 0.3, 'wednesday gap'),"
    " ('gap', 'nyc', 'chi', 'resolved', '2026-11-27T09:00:00Z', '2026-11-27T09:45:00Z',"
    "  '2026-11-27T08:50:00Z', '2026-11-27T09:35:00Z', 400000000, 0.6, 'short gap'),"
    " ('gap', 'nyc', 'chi', 'resolved', '2026-11-18T09:00:00Z', '2026-11-18T19:00:00Z',"
    "  '2026-11-18T08:50:00Z', '2026-11-18T18:50:00Z', 400000000, 0.6, 'last week'),"
    " ('over', 'chi', 'nyc', 'open', '2026-11-28T10:00:00Z', NULL, '2026-11-28T09:50:00Z',"
    "  '2026-11-29T23:55:00Z', 0, 1.2, 'double counting?');"
    "INSERT INTO attribution_rollup (window_start, src_site, dst_site, source, workflow, user_name,"
    " program, host, bytes) VALUES"
    " ('2026-11-24T10:00:00Z', 'nyc', 'chi', 'socket', 'train-42', 'alice', 'python3', 'h1',"
    "  400000000000),"
    " ('2026-11-24T11:00:00Z', 'nyc', 'chi', 'socket', 'train-42', 'alice', 'python3', 'h1',"
    "  400000000000),"
    " ('2026-11-24T11:00:00Z', 'nyc', 'chi', 'nfs', 'train-42', 'alice', 'python3', 'h1',"
    "  400000000000),"
    " ('2026-11-24T10:00:00Z', 'nyc', 'chi', 'service', 'ingest-7', 'bob', '', '', 300000000000),"
    " ('2026-11-26T10:00:00Z', 'nyc', 'chi', 'service', 'ingest-7', 'bob', '', '', 300000000000),"
    " ('2026-11-26T10:00:00Z', 'nyc', 'chi', 'socket', '<b>|evil|</b>', 'eve', 'nc', 'h9',"
    "  100000000000),"
    " ('2026-11-26T10:00:00Z', 'nyc', 'chi', 'socket', 'backup', 'root', 'rsync', 'h2',"
    "  10000000000),"
    " ('2026-11-26T12:00:00Z', 'chi', 'nyc', 'socket', 'eval-9', 'carol', 'python3', 'h3',"
    "  200000000000),"
    " ('2026-11-26T12:00:00Z', 'chi', 'nyc', 'socket', 'train-42', 'alice', 'python3', 'h4',"
    "  100000000000),"
    " ('2026-11-19T12:00:00Z', 'chi', 'nyc', 'socket', 'old-week', 'carol', 'python3', 'h3',"
    "  900000000000000);";

static const char W48[] = "'2026-11-23T00:00:00Z'";
static const char W49[] = "'2026-11-30T00:00:00Z'";
static const char W47[] = "'2026-11-16T00:00:00Z'";

static PGconn *g_db;
static struct cfg *g_cfg;
static char *g_md;

static int setup(void **state)
{
    (void)state;
    const char *conninfo = th_pg_default();
    char err[256];
    g_db = db_connect_str(conninfo, err, sizeof err);
    assert_non_null(g_db);
    hm_test_exec(g_db, seed_sql);
    g_cfg = hm_test_cfg(conninfo);
    char path[1024];
    snprintf(path, sizeof path, "%s/report-2026-W48.md", hm_test_artifacts());
    char *argv[] = {"report", "--week", "2026-W48", "--format", "md", "--output", path, NULL};
    assert_int_equal(hm_cmd_report(g_cfg, 7, argv), 0);
    g_md = hm_test_slurp(path, NULL);
    assert_non_null(g_md);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    free(g_md);
    cfg_free(g_cfg);
    PQfinish(g_db);
    return 0;
}

/* A query's single value as double / string (via the shared helper). */
static double qd(const char *fmt, ...)
{
    char sql[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    char *v = hm_test_value(g_db, sql);
    double d = v ? strtod(v, NULL) : NAN;
    free(v);
    return d;
}

static char *qs(const char *fmt, ...)
{
    char sql[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    return hm_test_value(g_db, sql);
}

/* Cells of the table row that starts with "| first |" within the section titled heading;
 * unescaped pipes split cells. Returns the number of cells (<= max), each strdup'ed. */
static int md_row(const char *heading, const char *first, char **cells, int max)
{
    const char *sec = strstr(g_md, heading);
    assert_non_null(sec);
    const char *next = strstr(sec + 1, "\n## ");
    char key[256];
    snprintf(key, sizeof key, "\n| %s |", first);
    const char *row = strstr(sec, key);
    if (!row || (next && row > next))
        fail_msg("no row \"%s\" in section \"%s\"", first, heading);
    row += 2;
    int n = 0;
    const char *p = row + 1;
    while (*p && *p != '\n' && n < max) {
        const char *q = p;
        while (*q && *q != '\n' && !(*q == '|' && q[-1] != '\\'))
            q++;
        if (*q != '|')
            break;
        const char *a = p, *b = q;
        while (a < b && *a == ' ')
            a++;
        while (b > a && b[-1] == ' ')
            b--;
        cells[n++] = strndup(a, (size_t)(b - a));
        p = q + 1;
    }
    return n;
}

static void free_cells(char **c, int n)
{
    for (int i = 0; i < n; i++)
        free(c[i]);
}

/* "1.23 TB" -> 1.23e12 */
static double parse_bytes(const char *s)
{
    char unit[8] = {0};
    double v;
    assert_int_equal(sscanf(s, "%lf %7s", &v, unit), 2);
    static const char *const units[] = {"B", "kB", "MB", "GB", "TB", "PB"};
    for (int i = 0; i < 6; i++)
        if (strcmp(unit, units[i]) == 0)
            return v * pow(1000, i);
    fail_msg("unit %s", unit);
    return 0;
}

static void assert_bytes(const char *cell, double want)
{
    double got = parse_bytes(cell);
    /* 3 significant digits: within 0.5 % */
    if (fabs(got - want) > 0.0051 * fabs(want) + 0.5)
        fail_msg("bytes: report says %s, SQL says %.0f", cell, want);
}

static void assert_number(const char *cell, double want, double tol, const char *what)
{
    double got = strtod(cell, NULL);
    if (fabs(got - want) > tol)
        fail_msg("%s: report says %s, SQL says %.4f", what, cell, want);
}

static void check_pair(const char *src, const char *dst)
{
    char first[64], *c[16];
    snprintf(first, sizeof first, "%s \xe2\x86\x92 %s", src, dst);
    int n = md_row("## Coverage per site pair", first, c, 16);
    assert_int_equal(n, 11);
    /* the test's own sums over heatmap_cells for this pair and week */
#define CUR                                                                                        \
    "FROM heatmap_cells WHERE src_site = '%s' AND dst_site = '%s' AND window_start >= %s "         \
    "AND window_start < %s"
    /* volumes and coverage over the complete windows: an incomplete one's are not measured */
#define DONE CUR " AND status <> 'incomplete'"
    double obs = qd("SELECT sum(observed_bytes) " DONE, src, dst, W48, W49);
    double pay = qd("SELECT sum(observed_payload_bytes) " DONE, src, dst, W48, W49);
    double att = qd("SELECT sum(attributed_bytes) " DONE, src, dst, W48, W49);
    double una = qd("SELECT sum(unattributed_bytes) " DONE, src, dst, W48, W49);
    double ppay = qd("SELECT sum(observed_payload_bytes) " DONE, src, dst, W47, W48);
    double patt = qd("SELECT sum(attributed_bytes) " DONE, src, dst, W47, W48);
    assert_true(qd("SELECT count(*) " CUR " AND status = 'incomplete'", src, dst, W48, W49) > 0);
#undef DONE
    double red_h =
        qd("SELECT count(*) * 300 / 3600.0 " CUR " AND status = 'red'", src, dst, W48, W49);
    double inc_h =
        qd("SELECT count(*) * 300 / 3600.0 " CUR " AND status = 'incomplete'", src, dst, W48, W49);
#undef CUR
    assert_bytes(c[1], obs);
    assert_bytes(c[2], pay);
    assert_bytes(c[3], att);
    assert_bytes(c[4], una);
    assert_number(c[5], 100 * att / pay, 0.0501, "coverage");
    assert_non_null(strstr(c[5], "%"));
    assert_number(c[6], 100 * (att / pay - patt / ppay), 0.0501, "change");
    assert_non_null(strstr(c[6], "pp"));
    assert_number(c[7], red_h, 0.0501, "hours red");
    assert_number(c[8], inc_h, 0.0501, "incomplete hours");
    /* alerts opened this week and the longest time one stayed open */
    double n_al = qd("SELECT count(*) FROM gap_alerts WHERE src_site = '%s' AND dst_site = '%s' "
                     "AND opened_at >= %s AND opened_at < %s",
                     src, dst, W48, W49);
    double n_open = qd("SELECT count(*) FROM gap_alerts WHERE src_site = '%s' AND dst_site = '%s' "
                       "AND opened_at >= %s AND opened_at < %s AND resolved_at IS NULL",
                       src, dst, W48, W49);
    char want[64];
    if (n_open > 0)
        snprintf(want, sizeof want, "%.0f (%.0f still open)", n_al, n_open);
    else
        snprintf(want, sizeof want, "%.0f", n_al);
    assert_string_equal(c[9], want);
    if (n_al > 0 && n_open == 0) {
        double longest = qd("SELECT max(extract(epoch from resolved_at - opened_at)) FROM "
                            "gap_alerts WHERE src_site = '%s' AND dst_site = '%s' AND opened_at "
                            ">= %s AND opened_at < %s",
                            src, dst, W48, W49);
        snprintf(want, sizeof want, "%d h %d min", (int)longest / 3600, (int)longest % 3600 / 60);
        assert_string_equal(c[10], want);
    }
    free_cells(c, n);
}

static void test_pairs_table(void **state)
{
    (void)state;
    check_pair("nyc", "chi");
    check_pair("chi", "nyc");
    check_pair("nyc", "osl");
    /* by hand: nyc->chi opened 2 alerts in W48, the longest 14:15-16:25 = 2 h 10 min */
    char *c[16];
    int n = md_row("## Coverage per site pair", "nyc \xe2\x86\x92 chi", c, 16);
    assert_string_equal(c[9], "2");
    assert_string_equal(c[10], "2 h 10 min");
    free_cells(c, n);
}

static void test_largest_gap(void **state)
{
    (void)state;
    /* the hour with the most unattributed payload, by the test's own query */
    char *hour = qs("SELECT to_char(date_trunc('hour', window_start) AT TIME ZONE 'UTC', "
                    "'Dy YYYY-MM-DD HH24:MI') || '|' || src_site || ' \xe2\x86\x92 ' || dst_site "
                    "|| '|' || sum(greatest(unattributed_bytes, 0)) FROM heatmap_cells WHERE "
                    "status <> 'incomplete' AND window_start >= %s AND window_start < %s GROUP BY "
                    "date_trunc('hour', "
                    "window_start), src_site, dst_site ORDER BY sum(greatest(unattributed_bytes, "
                    "0)) DESC LIMIT 1",
                    W48, W49);
    char *when = strtok(hour, "|"), *pair = strtok(NULL, "|"), *bytes = strtok(NULL, "|");
    const char *sec = strstr(g_md, "## Largest unexplained gaps");
    assert_non_null(sec);
    const char *first = strstr(sec, "\n| nyc");
    assert_non_null(first);
    char line[512];
    snprintf(line, sizeof line, "%.*s", (int)strcspn(first + 1, "\n"), first + 1);
    if (!strstr(line, pair) || !strstr(line, when))
        fail_msg("top gap row \"%s\", SQL says %s at %s", line, pair, when);
    char *c[8];
    char key[64];
    snprintf(key, sizeof key, "%s", pair);
    int n = md_row("## Largest unexplained gaps", key, c, 8);
    assert_bytes(c[2], strtod(bytes, NULL));
    free_cells(c, n);
    free(hour);
    /* Wednesday 14:00-16:00 is the seeded gap: the top hour is one of those two */
    assert_true(strstr(line, "2026-11-25 14:00") || strstr(line, "2026-11-25 15:00"));
}

static void test_workflows_and_over(void **state)
{
    (void)state;
    char *c[8];
    int n = md_row("## Largest workflows per pair", "nyc \xe2\x86\x92 chi", c, 8);
    assert_string_equal(c[1], "train-42"); /* 3 x 400 GB, the largest */
    assert_bytes(c[2], qd("SELECT sum(bytes) FROM attribution_rollup WHERE workflow = 'train-42' "
                          "AND src_site = 'nyc' AND dst_site = 'chi' AND window_start >= %s AND "
                          "window_start < %s",
                          W48, W49));
    /* by hand: 1200 of 400x3 + 300x2 + 100 + 10 = 1910 GB */
    assert_number(c[3], 100 * 1.2e12 / 1.91e12, 0.0501, "share");
    free_cells(c, n);
    /* the hostile name is escaped: no HTML, and its pipes do not split the row */
    assert_null(strstr(g_md, "<b>"));
    assert_non_null(strstr(g_md, "&lt;b&gt;\\|evil\\|&lt;/b&gt;"));
    /* last week's workflow is not this week's */
    assert_null(strstr(g_md, "old-week"));
    /* over-attribution: windows over per pair, counted by the test */
    const char *pairs[][2] = {{"nyc", "chi"}, {"chi", "nyc"}, {"nyc", "osl"}};
    for (int i = 0; i < 3; i++) {
        char first[64];
        snprintf(first, sizeof first, "%s \xe2\x86\x92 %s", pairs[i][0], pairs[i][1]);
        double want = qd("SELECT count(*) FROM heatmap_cells WHERE status = 'over' AND src_site = "
                         "'%s' AND dst_site = '%s' AND window_start >= %s AND window_start < %s",
                         pairs[i][0], pairs[i][1], W48, W49);
        assert_true(want > 0);
        n = md_row("## Over-attribution anomalies", first, c, 8);
        assert_number(c[1], want, 0, "windows over");
        free_cells(c, n);
    }
}

static void test_coverage_by_day(void **state)
{
    (void)state;
    char *c[10];
    int n = md_row("## Coverage by day", "nyc \xe2\x86\x92 chi", c, 10);
    assert_int_equal(n, 8);
    for (int d = 0; d < 7; d++) {
        double want = qd("SELECT 100.0 * sum(attributed_bytes) / sum(observed_payload_bytes) FROM "
                         "heatmap_cells WHERE src_site = 'nyc' AND dst_site = 'chi' AND "
                         "status <> 'incomplete' AND "
                         "window_start >= timestamptz %s + %d * interval '1 day' AND "
                         "window_start < timestamptz %s + %d * interval '1 day'",
                         W48, d, W48, d + 1);
        assert_number(c[d + 1], want, 0.0501, "coverage by day");
    }
    free_cells(c, n);
}

static void test_html_and_weeks(void **state)
{
    (void)state;
    char path[1024];
    snprintf(path, sizeof path, "%s/report-2026-W48.html", hm_test_artifacts());
    char *argv[] = {"report", "--week", "2026-W48", "--format", "html", "--output", path, NULL};
    assert_int_equal(hm_cmd_report(g_cfg, 7, argv), 0);
    char *html = hm_test_slurp(path, NULL);
    assert_non_null(html);
    assert_non_null(strstr(html, "<svg class=\"chart\""));
    assert_null(strstr(html, "<b>|evil"));
    assert_non_null(strstr(html, "&lt;b&gt;|evil|&lt;/b&gt;"));
    free(html);
    /* ISO weeks by the calendar: 2026-W48 starts Monday 2026-11-23; 2026 has a week 53
     * (it starts on a Thursday), 2025 does not; 2020 (leap, starts Wednesday) does. */
    int64_t us;
    assert_int_equal(hm_report_parse_week("2026-W48", &us), 0);
    assert_int_equal(us, 1795392000LL * 1000000); /* date -d 2026-11-23T00:00Z +%s */
    assert_int_equal(hm_report_parse_week("2026-W53", &us), 0);
    assert_int_equal(hm_report_parse_week("2020-W53", &us), 0);
    assert_int_equal(hm_report_parse_week("2025-W53", &us), -1);
    assert_int_equal(hm_report_parse_week("2026-W00", &us), -1);
    assert_int_equal(hm_report_parse_week("2026-48", &us), -1);
    char *bad[] = {"report", "--week", "last", NULL};
    assert_int_equal(hm_cmd_report(g_cfg, 3, bad), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pairs_table),        cmocka_unit_test(test_largest_gap),
        cmocka_unit_test(test_workflows_and_over), cmocka_unit_test(test_coverage_by_day),
        cmocka_unit_test(test_html_and_weeks),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
