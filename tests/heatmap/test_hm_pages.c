/* The heatmap page and the cell page served over real HTTP (libevent) from a real PostgreSQL,
 * loaded in headless Chromium: screenshots kept under the build dir, the DOM holds one cell per
 * pair with the seeded status, hostile names stay text. Also the 400/404 answers, the standalone
 * SVG (parsed by xmllint) and the terminal view (colour on a pty, plain text on a pipe). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <event2/buffer.h>
#include <pty.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "db.h"
#include "harness.h"
#include "hm_cmd.h"
#include "hm_pages.h"
#include "hm_seed.h"

#define L          "'2026-11-29T18:53:00Z'"
#define HOSTILE_WF "<script>alert(1)</script><img src=x onerror=alert(2)>"

/* The latest window L holds one cell per status (values chosen by hand):
 *   nyc->chi red        payload 10 GB, attributed 6 GB  -> coverage 0.60, unattributed 4 GB
 *   chi->nyc ok         payload 5 GB,  attributed 4.9 GB -> 0.98
 *   nyc->osl warn       payload 2 GB,  attributed 1.7 GB -> 0.85
 *   osl->nyc over       payload 1 GB,  attributed 1.12 GB -> 1.12
 *   chi->osl idle       payload 50 MB
 *   osl->chi incomplete valid_fraction 0.6
 *   nyc->lon no_counter no observed figure, 0.2 GB attributed by a service
 * lon->* has no row: no cell. History for the strips: nyc->chi and chi->nyc, 6 hours before L. */
static const char seed_sql[] =
    "INSERT INTO heatmap_cells (window_start, window_seconds, src_site, dst_site, observed_bytes,"
    " observed_payload_bytes, attributed_bytes, socket_bytes, nfs_bytes, service_bytes,"
    " unattributed_bytes, coverage, status, valid_fraction, capacity_bps) VALUES"
    " (" L ", 60, 'nyc', 'chi', 10600000000, 10000000000, 6000000000, 4000000000, 1500000000,"
    "  500000000, 4000000000, 0.6, 'red', 1, 200000000000),"
    " (" L ", 60, 'chi', 'nyc', 5300000000, 5000000000, 4900000000, 4900000000, 0, 0, 100000000,"
    "  0.98, 'ok', 1, 200000000000),"
    " (" L ", 60, 'nyc', 'osl', 2100000000, 2000000000, 1700000000, 1700000000, 0, 0, 300000000,"
    "  0.85, 'warn', 1, 10000000000),"
    " (" L ", 60, 'osl', 'nyc', 1050000000, 1000000000, 1120000000, 1120000000, 0, 0, 0, 1.12,"
    "  'over', 1, 10000000000),"
    " (" L ", 60, 'chi', 'osl', 52000000, 50000000, 10000000, 10000000, 0, 0, 40000000, 0.2,"
    "  'idle', 1, 10000000000),"
    " (" L ", 60, 'osl', 'chi', 3100000000, 3000000000, 2000000000, 2000000000, 0, 0, 1000000000,"
    "  0.6667, 'incomplete', 0.6, 10000000000),"
    " (" L ", 60, 'nyc', 'lon', NULL, NULL, 200000000, 0, 0, 200000000, NULL, NULL,"
    "  'no_counter', 0, 0);"
    /* 6 hours of history: coverage falls hour by hour on nyc->chi */
    "INSERT INTO heatmap_cells (window_start, window_seconds, src_site, dst_site, observed_bytes,"
    " observed_payload_bytes, attributed_bytes, socket_bytes, nfs_bytes, service_bytes,"
    " unattributed_bytes, coverage, status)"
    " SELECT t, 60, p.src, p.dst, 8400000000, 8000000000, (8000000000 * c)::bigint,"
    "  (8000000000 * c * 0.7)::bigint, (8000000000 * c * 0.2)::bigint,"
    "  (8000000000 * c * 0.1)::bigint, (8000000000 * (1 - c))::bigint, c,"
    "  CASE WHEN c >= 0.95 THEN 'ok' WHEN c >= 0.8 THEN 'warn' ELSE 'red' END"
    " FROM generate_series(timestamptz " L " - interval '6 hours', timestamptz " L
    "  - interval '1 minute', interval '1 minute') AS t,"
    " (VALUES ('nyc', 'chi'), ('chi', 'nyc')) AS p(src, dst),"
    " LATERAL (SELECT CASE WHEN p.src = 'chi' THEN 0.97"
    "   ELSE 0.99 - 0.07 * floor(extract(epoch from (timestamptz " L " - t)) / -3600 + 6)"
    "   END AS c) AS cc;"
    "INSERT INTO attribution_rollup (window_start, src_site, dst_site, source, workflow, user_name,"
    " program, host, bytes) VALUES"
    " (" L ", 'nyc', 'chi', 'socket', 'train-42', 'alice', 'python3', 'nyc-gpu-17', 3000000000),"
    " (" L ", 'nyc', 'chi', 'socket', '" HOSTILE_WF "', 'mallory\"><b>x</b>', 'rsync',"
    "  'nyc-gpu-3', 1000000000),"
    " (" L ", 'nyc', 'chi', 'nfs', 'train-42', 'alice', 'python3', 'nyc-gpu-17', 1500000000),"
    " (" L ", 'nyc', 'chi', 'service', 'ingest-7', 'bob', 'dupedog', 'nyc-dtn-1', 500000000);"
    "INSERT INTO link_windows (window_start, circuit, src_site, dst_site, device, interface,"
    " counter, observed_bytes, observed_payload_bytes, valid_fraction, capacity_bps, utilization)"
    " VALUES (" L ", 'nyc-chi-1', 'nyc', 'chi', 'nyc-border-1', 'et-0/0/1', 'out', 6000000000,"
    "  5700000000, 1, 100000000000, 0.8),"
    " (" L ", 'nyc-chi-2', 'nyc', 'chi', 'chi-border-2', 'et-0/0/2', 'in', 4600000000,"
    "  4300000000, 1, 100000000000, 0.61);"
    "INSERT INTO gap_alerts (kind, src_site, dst_site, state, opened_at, resolved_at, first_window,"
    " last_window, peak_unattributed_bytes, peak_ratio, summary) VALUES"
    " ('gap', 'nyc', 'chi', 'open', timestamptz " L " - interval '4 minutes', NULL,"
    "  timestamptz " L " - interval '3 minutes', " L ", 4000000000, 0.6,"
    "  'nyc->chi: 40% of the payload has no owner for 3 windows'),"
    " ('over', 'osl', 'nyc', 'open', timestamptz " L " - interval '10 minutes', NULL,"
    "  timestamptz " L " - interval '9 minutes', " L ", 0, 1.12,"
    "  '\"><script>alert(3)</script>'),"
    " ('gap', 'nyc', 'chi', 'resolved', timestamptz " L " - interval '5 hours', timestamptz " L
    "  - interval '4 hours', timestamptz " L " - interval '5 hours', timestamptz " L
    "  - interval '4 hours', 2500000000, 0.7, 'earlier gap');";

struct expect {
    const char *src, *dst, *status;
};
static const struct expect cells[] = {
    {"nyc", "chi", "red"},        {"chi", "nyc", "ok"},   {"nyc", "osl", "warn"},
    {"osl", "nyc", "over"},       {"chi", "osl", "idle"}, {"osl", "chi", "incomplete"},
    {"nyc", "lon", "no_counter"},
};
#define N_CELLS (sizeof cells / sizeof cells[0])

static const char *g_conninfo;
static struct cfg *g_cfg;
static struct hm_test_server *g_srv;
static int g_port;

static int setup(void **state)
{
    (void)state;
    th_require(access("/usr/bin/chromium", X_OK) == 0, "Debian's chromium is not installed");
    th_require(access("/usr/bin/xmllint", X_OK) == 0, "xmllint (libxml2-utils) is not installed");
    g_conninfo = th_pg_default();
    char err[256];
    PGconn *db = db_connect_str(g_conninfo, err, sizeof err);
    assert_non_null(db);
    hm_test_exec(db, seed_sql);
    PQfinish(db);
    g_cfg = hm_test_cfg(g_conninfo);
    g_srv = hm_test_server_start(g_conninfo, g_cfg, &g_port);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    hm_test_server_stop(g_srv);
    cfg_free(g_cfg);
    return 0;
}

/* Loads url in headless Chromium: a PNG screenshot to png and the DOM to dom. */
static void chromium(const char *url, const char *png, const char *dom, int width, int height)
{
    const char *tmp = th_tmpdir("hm-chromium");
    static const char flags[] = "--headless --no-sandbox --disable-gpu --no-first-run "
                                "--disable-background-networking --disable-component-update "
                                "--disable-sync --hide-scrollbars";
    int rc = th_sh("timeout 120 chromium %s --user-data-dir='%s/shot' --window-size=%d,%d "
                   "--screenshot='%s' '%s' >'%s/shot.log' 2>&1",
                   flags, tmp, width, height, png, url, tmp);
    assert_int_equal(rc, 0);
    rc = th_sh("timeout 120 chromium %s --user-data-dir='%s/dom' --dump-dom '%s' >'%s' "
               "2>'%s/dom.log'",
               flags, tmp, url, dom, tmp);
    assert_int_equal(rc, 0);
    size_t len = 0;
    char *p = hm_test_slurp(png, &len);
    assert_non_null(p);
    assert_true(len > 10000); /* a real picture, not an error stub */
    assert_memory_equal(p, "\x89PNG", 4);
    free(p);
}

/* The attribute value of name inside the tag starting at tag (NULL when absent). */
static char *attr(const char *tag, const char *name)
{
    const char *end = strchr(tag, '>');
    char key[64];
    snprintf(key, sizeof key, " %s=\"", name);
    const char *p = strstr(tag, key);
    if (!p || (end && p > end))
        return NULL;
    p += strlen(key);
    const char *q = strchr(p, '"');
    return strndup(p, (size_t)(q - p));
}

static void test_heatmap_page_in_chromium(void **state)
{
    (void)state;
    char url[256], png[1024], dom[1024];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/heatmap", g_port);
    snprintf(png, sizeof png, "%s/heatmap.png", hm_test_artifacts());
    snprintf(dom, sizeof dom, "%s/heatmap.dom.html", hm_test_artifacts());
    chromium(url, png, dom, 1400, 1000);
    char *html = hm_test_slurp(dom, NULL);
    assert_non_null(html);
    /* one cell per pair with data, each with the seeded status */
    assert_int_equal(hm_test_count(html, "<g class=\"cell\""), N_CELLS);
    size_t found = 0;
    for (const char *p = strstr(html, "<g class=\"cell\""); p;
         p = strstr(p + 1, "<g class=\"cell\"")) {
        char *src = attr(p, "data-src"), *dst = attr(p, "data-dst");
        char *st = attr(p, "data-status"), *cov = attr(p, "data-coverage");
        assert_non_null(src);
        assert_non_null(dst);
        assert_non_null(st);
        assert_non_null(cov);
        for (size_t i = 0; i < N_CELLS; i++)
            if (strcmp(cells[i].src, src) == 0 && strcmp(cells[i].dst, dst) == 0) {
                assert_string_equal(st, cells[i].status);
                found++;
            }
        if (strcmp(src, "nyc") == 0 && strcmp(dst, "chi") == 0)
            assert_string_equal(cov, "0.6000");
        free(src), free(dst), free(st), free(cov);
    }
    assert_int_equal(found, N_CELLS);
    /* volumes with units: nyc->chi observed 10.6 GB, unattributed 4 GB */
    assert_non_null(strstr(html, "10.6 GB"));
    assert_non_null(strstr(html, "4.00 GB"));
    /* a legend entry per status, the open alerts beside the grid, hostile summary as text */
    assert_int_equal(hm_test_count(html, "class=\"legend-item\""), 7);
    assert_int_equal(hm_test_count(html, "<li class=\"alert"), 2);
    assert_null(strstr(html, "<script"));
    assert_non_null(strstr(html, "&lt;script&gt;alert(3)&lt;/script&gt;"));
    /* the strip: 6 hours of history for the two pairs (hours with rows are drawn with a title) */
    assert_true(hm_test_count(html, "class=\"hour\"") == N_CELLS * 24);
    free(html);
}

static void test_cell_page_in_chromium(void **state)
{
    (void)state;
    char url[256], png[1024], dom[1024];
    snprintf(url, sizeof url,
             "http://127.0.0.1:%d/heatmap/cell?src=nyc&dst=chi&window=2026-11-29T18:53:00Z",
             g_port);
    snprintf(png, sizeof png, "%s/cell.png", hm_test_artifacts());
    snprintf(dom, sizeof dom, "%s/cell.dom.html", hm_test_artifacts());
    chromium(url, png, dom, 1200, 1900);
    char *html = hm_test_slurp(dom, NULL);
    assert_non_null(html);
    /* the hostile workflow and user are text: no element was made from them */
    assert_null(strstr(html, "<script"));
    assert_null(strstr(html, "<img"));
    assert_null(strstr(html, "<b>x</b>"));
    assert_non_null(
        strstr(html, "&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;"));
    /* top workflows: train-42 = 3 GB socket + 1.5 GB NFS = 4.5 GB = 45.0 % of the 10 GB payload */
    const char *wf = strstr(html, "data-dimension=\"workflow\"");
    assert_non_null(wf);
    const char *t42 = strstr(wf, "train-42");
    assert_non_null(t42);
    assert_non_null(strstr(t42, "4.50 GB"));
    assert_non_null(strstr(t42, "45.0 %"));
    /* unattributed remainder 10 GB - 6 GB = 4 GB (40.0 %) */
    assert_non_null(strstr(html, "data-unattributed-bytes=\"4000000000\""));
    assert_non_null(strstr(wf, "40.0 %"));
    /* the circuits and counters behind the observed figure */
    assert_non_null(strstr(html, "nyc-chi-1"));
    assert_non_null(strstr(html, "nyc-border-1"));
    assert_non_null(strstr(html, "chi-border-2"));
    assert_non_null(strstr(html, "in (receiver side)"));
    /* the chart: areas for the three sources and the observed lines */
    assert_int_equal(hm_test_count(html, "class=\"area\""), 3);
    assert_int_equal(hm_test_count(html, "class=\"line\""), 2);
    /* the open alert as a banner; the resolved one in the table */
    assert_non_null(strstr(html, "1 open alert on this pair"));
    assert_non_null(strstr(html, "earlier gap"));
    assert_non_null(strstr(html, "data-status=\"red\""));
    free(html);
}

static void test_bad_requests(void **state)
{
    (void)state;
    struct evbuffer *out = evbuffer_new();
    const char *ct = NULL;
    char err[256];
    PGconn *db = db_connect_str(g_conninfo, err, sizeof err);
    assert_non_null(db);
    assert_int_equal(hm_page_heatmap(db, g_cfg, "window=yesterday", out, &ct), 400);
    assert_string_equal(ct, "application/json");
    evbuffer_add(out, "", 1);
    char *body = (char *)evbuffer_pullup(out, -1);
    assert_non_null(strstr(body, "\"path\":\"window\""));
    assert_non_null(strstr(body, "yesterday"));
    evbuffer_drain(out, evbuffer_get_length(out));
    assert_int_equal(hm_page_heatmap(db, g_cfg, "from=2026-11-29T18:00:00Z", out, &ct), 400);
    evbuffer_drain(out, evbuffer_get_length(out));
    assert_int_equal(hm_page_cell(db, g_cfg, "dst=chi", out, &ct), 400);
    evbuffer_drain(out, evbuffer_get_length(out));
    assert_int_equal(hm_page_cell(db, g_cfg, "src=lon&dst=nyc", out, &ct), 404);
    evbuffer_drain(out, evbuffer_get_length(out));
    /* a range sums the windows: nyc->chi over the last hour = 59 history windows + L */
    assert_int_equal(
        hm_page_heatmap(db, g_cfg, "from=2026-11-29T17:54:00Z&to=2026-11-29T18:54:00Z", out, &ct),
        200);
    evbuffer_add(out, "", 1);
    body = (char *)evbuffer_pullup(out, -1);
    /* 59 history windows x 8.4 GB + 10.6 GB at L = 506.2 GB on the wire */
    const char *nc = strstr(body, "data-src=\"nyc\" data-dst=\"chi\"");
    bool ok = strstr(body, "sum of 60 windows of 60 s") && nc &&
              strstr(nc, "data-observed-bytes=\"506200000000\"");
    evbuffer_drain(out, evbuffer_get_length(out));
    /* the drill-down over the same range: 60 windows, 506.2 GB observed */
    ok = ok && hm_page_cell(db, g_cfg,
                            "src=nyc&dst=chi&from=2026-11-29T17:54:00Z&to=2026-11-29T18:54:00Z",
                            out, &ct) == 200;
    evbuffer_add(out, "", 1);
    body = (char *)evbuffer_pullup(out, -1);
    ok = ok && strstr(body, "60 windows") && strstr(body, "506 GB");
    evbuffer_drain(out, evbuffer_get_length(out));
    /* a range with no rows: the configured sites, no cells, still a page */
    ok = ok && hm_page_heatmap(db, g_cfg, "from=2020-01-01T00:00:00Z&to=2020-01-02T00:00:00Z", out,
                               &ct) == 200;
    evbuffer_add(out, "", 1);
    body = (char *)evbuffer_pullup(out, -1);
    ok = ok && hm_test_count(body, "<g class=\"cell\"") == 0 && strstr(body, ">lon<");
    evbuffer_free(out);
    PQfinish(db);
    assert_true(ok);
}

static void test_svg_file_parses(void **state)
{
    (void)state;
    char path[1024];
    snprintf(path, sizeof path, "%s/heatmap.svg", hm_test_artifacts());
    char *argv[] = {"heatmap",  "--format", "svg", "--window", "2026-11-29T18:53:00Z",
                    "--output", path,       NULL};
    assert_int_equal(hm_cmd_heatmap(g_cfg, 7, argv), 0);
    assert_int_equal(th_sh("xmllint --noout '%s'", path), 0);
    char cmd[1200];
    snprintf(cmd, sizeof cmd,
             "xmllint --xpath \"count(//*[local-name()='g'][@class='cell'])\" '%s'", path);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char got[32] = {0};
    assert_non_null(fgets(got, sizeof got, p));
    pclose(p);
    assert_int_equal(atoi(got), (int)N_CELLS);
    /* bad options are usage errors (exit 2) and write nothing */
    char *bad[] = {"heatmap", "--format", "png", NULL};
    assert_int_equal(hm_cmd_heatmap(g_cfg, 3, bad), 2);
    char *bad2[] = {"heatmap", "--window", "soon", NULL};
    assert_int_equal(hm_cmd_heatmap(g_cfg, 3, bad2), 2);
}

/* Runs `heatmap --format ansi` with stdout on a pty (isatty true) or a pipe; returns output. */
static char *run_ansi(bool tty)
{
    int fds[2] = {-1, -1}, master = -1;
    pid_t pid;
    if (tty) {
        struct winsize ws = {.ws_row = 60, .ws_col = 200};
        pid = forkpty(&master, NULL, NULL, &ws);
    } else {
        assert_int_equal(pipe(fds), 0);
        pid = fork();
    }
    assert_true(pid >= 0);
    if (pid == 0) {
        if (!tty) {
            dup2(fds[1], STDOUT_FILENO);
            close(fds[0]);
        }
        char *argv[] = {"heatmap", "--format", "ansi", NULL};
        fflush(stdout);
        _exit(hm_cmd_heatmap(g_cfg, 3, argv));
    }
    int rfd = tty ? master : fds[0];
    if (!tty)
        close(fds[1]);
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (n + 4096 > cap)
            buf = realloc(buf, cap *= 2);
        ssize_t r = read(rfd, buf + n, 4096);
        if (r <= 0)
            break; /* EOF, or EIO once the pty's child is gone */
        n += (size_t)r;
    }
    buf[n] = 0;
    close(rfd);
    int status;
    waitpid(pid, &status, 0);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    return buf;
}

static void test_ansi_colours(void **state)
{
    (void)state;
    /* SGR parameters per status, written down independently of hm_status.c */
    static const struct {
        const char *status, *sgr, *text;
    } colours[] = {{"red", "97;41", "R red"},
                   {"ok", "30;42", "O ok"},
                   {"warn", "30;43", "W warn"},
                   {"over", "97;45", "+ over"},
                   {"idle", "30;47", "- idle"},
                   {"incomplete", "97;100", "? incomplete"},
                   {"no_counter", "97;44", "N no counter"}};
    char *out = run_ansi(true);
    char path[1024];
    snprintf(path, sizeof path, "%s/heatmap.ansi.txt", hm_test_artifacts());
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(out, f);
        fclose(f);
    }
    /* each pair's cell: find the row line of src; the cells follow in column order nyc chi osl
     * lon; the cell of dst is the k-th "\033[" sequence after the row name. */
    static const char *const order[] = {"nyc", "chi", "osl", "lon"};
    for (size_t i = 0; i < N_CELLS; i++) {
        char rowhead[32];
        snprintf(rowhead, sizeof rowhead, "\n%-14s ", cells[i].src);
        const char *row = strstr(out, rowhead);
        assert_non_null(row);
        size_t col = 0;
        while (strcmp(order[col], cells[i].dst) != 0)
            col++;
        const char *p = row;
        for (size_t k = 0; k <= col; k++) {
            p = strstr(p + 1, "\033[");
            assert_non_null(p);
            if (k < col) /* skip the cell's closing reset */
                p = strstr(p + 1, "\033[");
        }
        const char *sgr = NULL, *text = NULL;
        for (size_t k = 0; k < sizeof colours / sizeof colours[0]; k++)
            if (strcmp(colours[k].status, cells[i].status) == 0)
                sgr = colours[k].sgr, text = colours[k].text;
        char want[64];
        snprintf(want, sizeof want, "\033[%sm %s", sgr, text);
        if (strncmp(p, want, strlen(want)) != 0)
            fail_msg("cell %s->%s: want %s, got %.30s", cells[i].src, cells[i].dst, want + 1,
                     p + 1);
    }
    free(out);
    /* not a terminal: plain text, the letters carry the status */
    out = run_ansi(false);
    assert_null(strchr(out, '\033'));
    assert_non_null(strstr(out, "R red"));
    assert_non_null(strstr(out, "N no counter"));
    assert_non_null(strstr(out, "Open alerts: 2"));
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_heatmap_page_in_chromium),
        cmocka_unit_test(test_cell_page_in_chromium),
        cmocka_unit_test(test_bad_requests),
        cmocka_unit_test(test_svg_file_parses),
        cmocka_unit_test(test_ansi_colours),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
