/* The heatmap page and the cell page served over real HTTP (libevent) from a real PostgreSQL,
 * loaded in headless Chromium: screenshots kept under the build dir, the DOM holds one cell per
 * pair with the seeded status, hostile names stay text. Also the 400/404 answers, the standalone
 * SVG (parsed by xmllint) and the terminal view (colour on a pty, plain text on a pipe); incomplete
 * windows left out of a span's sums and shown as unknown alone. */
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
    hm_test_exec(db, hm_test_seed_sql);
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

static void test_heatmap_page_in_chromium(void **state)
{
    (void)state;
    char *html = hm_test_page(g_port, "/heatmap", "heatmap", 1400, 1000);
    hm_test_check_grid_dom(html);
    /* volumes with units: nyc->chi observed 10.6 GB, unattributed 4 GB */
    assert_non_null(strstr(html, "10.6 GB"));
    assert_non_null(strstr(html, "4.00 GB"));
    /* a legend entry per status, the open alerts beside the grid, hostile summary as text */
    assert_int_equal(hm_test_count(html, "class=\"legend-item\""), 7);
    assert_int_equal(hm_test_count(html, "<li class=\"alert"), 2);
    assert_null(strstr(html, "<script"));
    assert_non_null(strstr(html, "&lt;script&gt;alert(3)&lt;/script&gt;"));
    /* the strip: 24 hour bars per cell. nyc->chi has rows in 7 clock hours (12:53 .. 18:53).
     * By hand from the seed: hour 12:00 holds windows 12:53-12:59 at coverage 0.99 (ok); hour
     * 18:00 holds 53 history windows at 0.64 (8 GB payload each) and L (6 of 10 GB):
     * (53 x 8 x 0.64 + 6) / (53 x 8 + 10) = 277.36 / 434 = 63.9 % (red). */
    assert_int_equal(hm_test_count(html, "class=\"hour\""), HM_TEST_N_CELLS * 24);
    const char *nc = strstr(html, "data-src=\"nyc\" data-dst=\"chi\"");
    assert_non_null(nc);
    const char *nc_end = strstr(nc, "</g>");
    assert_non_null(nc_end);
    char *cell = strndup(nc, (size_t)(nc_end - nc));
    assert_int_equal(hm_test_count(cell, "<title>"), 1 + 7); /* the cell's own + 7 hours */
    assert_non_null(strstr(cell, "12:00: ok, coverage 99.0 %"));
    assert_non_null(strstr(cell, "18:00: red, coverage 63.9 %"));
    free(cell);
    free(html);
}

static void test_cell_page_in_chromium(void **state)
{
    (void)state;
    char *html = hm_test_page(g_port, "/heatmap/cell?src=nyc&dst=chi&window=2026-11-29T18:53:00Z",
                              "cell", 1200, 1900);
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
    /* a time inside window L (60 s windows) shows L */
    assert_int_equal(
        hm_page_cell(db, g_cfg, "src=nyc&dst=chi&window=2026-11-29T18:53:41Z", out, &ct), 200);
    evbuffer_add(out, "", 1);
    assert_non_null(strstr((char *)evbuffer_pullup(out, -1), "data-status=\"red\""));
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
    assert_int_equal(atoi(got), (int)HM_TEST_N_CELLS);
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
    for (size_t i = 0; i < HM_TEST_N_CELLS; i++) {
        char rowhead[32];
        snprintf(rowhead, sizeof rowhead, "\n%-14s ", hm_test_cells[i].src);
        const char *row = strstr(out, rowhead);
        assert_non_null(row);
        size_t col = 0;
        while (strcmp(order[col], hm_test_cells[i].dst) != 0)
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
            if (strcmp(colours[k].status, hm_test_cells[i].status) == 0)
                sgr = colours[k].sgr, text = colours[k].text;
        char want[64];
        snprintf(want, sizeof want, "\033[%sm %s", sgr, text);
        if (strncmp(p, want, strlen(want)) != 0)
            fail_msg("cell %s->%s: want %s, got %.30s", hm_test_cells[i].src, hm_test_cells[i].dst,
                     want + 1, p + 1);
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

/* Incomplete windows in the cell page: alone, the figures are "unknown" and there is no coverage
 * (the seeded osl->chi window holds 3 GB payload, 2 GB attributed over part of it); in a range
 * of 10 windows (9 added here at 1 GB payload, 0.97 GB attributed), the sums are the 9 complete
 * windows': coverage 97.0 %, status ok (1 of 10 incomplete is not more than 10 %). Summed in, the
 * incomplete one would make it (8.73 + 2) / (9 + 3) = 89.4 %, warn. */
static char *cell_page(PGconn *db, const char *query)
{
    struct evbuffer *out = evbuffer_new();
    const char *ct = NULL;
    assert_int_equal(hm_page_cell(db, g_cfg, query, out, &ct), 200);
    evbuffer_add(out, "", 1);
    char *html = strdup((const char *)evbuffer_pullup(out, -1));
    evbuffer_free(out);
    return html;
}

static void test_incomplete_windows(void **state)
{
    (void)state;
    char err[256];
    PGconn *db = db_connect_str(g_conninfo, err, sizeof err);
    assert_non_null(db);
    char *html = cell_page(db, "src=osl&dst=chi&window=2026-11-29T18:53:00Z");
    assert_non_null(strstr(html, "data-status=\"incomplete\" data-coverage=\"\""));
    assert_non_null(strstr(html, "data-incomplete-windows=\"1\"><b>1 of 1</b>"));
    assert_non_null(strstr(html, "<b>unknown</b><span>observed on the wire, avg unknown"));
    assert_null(strstr(html, "66.7 %"));
    free(html);
    hm_test_exec(db, "INSERT INTO heatmap_cells (window_start, window_seconds, src_site, "
                     "dst_site, observed_bytes, observed_payload_bytes, attributed_bytes, "
                     "socket_bytes, nfs_bytes, service_bytes, unattributed_bytes, coverage, "
                     "status, valid_fraction) SELECT t, 60, 'osl', 'chi', 1050000000, "
                     "1000000000, 970000000, 970000000, 0, 0, 30000000, 0.97, 'ok', 1 FROM "
                     "generate_series(timestamptz '2026-11-29T18:44:00Z', "
                     "'2026-11-29T18:52:00Z', interval '1 minute') AS t");
    html = cell_page(db, "src=osl&dst=chi&from=2026-11-29T18:44:00Z&to=2026-11-29T18:54:00Z");
    assert_non_null(strstr(html, "data-status=\"ok\" data-coverage=\"0.9700\""));
    assert_non_null(strstr(html, "data-incomplete-windows=\"1\"><b>1 of 10</b>"));
    assert_non_null(strstr(html, "<b>9.00 GB</b><span>observed payload"));
    free(html);
    hm_test_exec(db, "DELETE FROM heatmap_cells WHERE src_site = 'osl' AND dst_site = 'chi' AND "
                     "window_start < '2026-11-29T18:53:00Z'");
    PQfinish(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_heatmap_page_in_chromium),
        cmocka_unit_test(test_cell_page_in_chromium),
        cmocka_unit_test(test_bad_requests),
        cmocka_unit_test(test_svg_file_parses),
        cmocka_unit_test(test_ansi_colours),
        cmocka_unit_test(test_incomplete_windows),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
