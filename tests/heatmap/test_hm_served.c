/* The pages as `wanledger reconcile` serves them: the real program on a loopback port, a reader
 * token required (401 without one from a client that is not on loopback is the reconciler's own
 * test; here: the token is accepted, and open_on_loopback opens the pages to the browser), the
 * heatmap loaded in headless Chromium with one cell per pair and the seeded statuses; and
 * `wanledger heatmap` / `wanledger report` run as programs with a configuration file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db.h"
#include "harness.h"
#include "hm_seed.h"

#define READER_TOKEN "reader-token-for-hm-tests-0001"

static char g_cfg_path[1024];
static int g_port;
static pid_t g_pid = -1;

static int setup(void **state)
{
    (void)state;
    th_require(access("/usr/bin/chromium", X_OK) == 0, "Debian's chromium is not installed");
    const char *conninfo = th_pg_default();
    char err[256];
    PGconn *db = db_connect_str(conninfo, err, sizeof err);
    assert_non_null(db);
    hm_test_exec(db, hm_test_seed_sql);
    PQfinish(db);
    const char *dir = th_tmpdir("hm-served");
    char tokens[1024];
    snprintf(tokens, sizeof tokens, "%s/tokens.json", dir);
    FILE *f = fopen(tokens, "w");
    assert_non_null(f);
    fprintf(f, "{\"agent\": [\"agent-token-for-hm-tests-0001\"], \"reader\": [\"%s\"]}\n",
            READER_TOKEN);
    fclose(f);
    chmod(tokens, 0600);
    g_port = th_free_port();
    snprintf(g_cfg_path, sizeof g_cfg_path, "%s/wanledger.json", dir);
    f = fopen(g_cfg_path, "w");
    assert_non_null(f);
    fprintf(f,
            "{\"window_seconds\": 60, \"database\": \"%s\", \"listen\": \"127.0.0.1:%d\","
            " \"tokens_file\": \"%s\", \"open_on_loopback\": true,"
            " \"sites\": [{\"name\": \"nyc\", \"prefixes\": [\"10.1.0.0/16\"]},"
            " {\"name\": \"chi\", \"prefixes\": [\"10.2.0.0/16\"]},"
            " {\"name\": \"osl\", \"prefixes\": [\"10.3.0.0/16\"]},"
            " {\"name\": \"lon\", \"prefixes\": [\"10.4.0.0/16\"]}]}\n",
            conninfo, g_port, tokens);
    fclose(f);
    char log[1100];
    snprintf(log, sizeof log, "%s/reconcile.log", hm_test_artifacts());
    char *argv[] = {(char *)th_bin("wanledger"), "--config", g_cfg_path, "reconcile", NULL};
    g_pid = th_spawn(argv, log);
    assert_true(g_pid > 0);
    if (th_wait_port(g_port, 30000) < 0) {
        th_sh("cat '%s' >&2", log);
        fail_msg("wanledger reconcile did not listen on %d", g_port);
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    if (g_pid > 0)
        th_stop(g_pid, 5000);
    return 0;
}

static void test_reconciler_serves_heatmap(void **state)
{
    (void)state;
    /* with the reader token, over HTTP: the page, as HTML */
    char *dir = strdup(th_tmpdir("hm-served-curl"));
    assert_int_equal(th_sh("curl -sS -o '%s/h.html' -w '%%{http_code} %%{content_type}' -H "
                           "'Authorization: Bearer " READER_TOKEN "' "
                           "'http://127.0.0.1:%d/heatmap' >'%s/status'",
                           dir, g_port, dir),
                     0);
    char path[1100];
    snprintf(path, sizeof path, "%s/status", dir);
    char *status = hm_test_slurp(path, NULL);
    assert_non_null(status);
    assert_non_null(strstr(status, "200 text/html"));
    free(status);
    /* a bad parameter is the page's 400 with the JSON error naming it */
    assert_int_equal(th_sh("curl -sS -o '%s/bad.json' -w '%%{http_code}' -H 'Authorization: "
                           "Bearer " READER_TOKEN "' 'http://127.0.0.1:%d/heatmap?window=noon' "
                           ">'%s/status'",
                           dir, g_port, dir),
                     0);
    status = hm_test_slurp(path, NULL);
    assert_string_equal(status, "400");
    free(status);
    snprintf(path, sizeof path, "%s/bad.json", dir);
    char *bad = hm_test_slurp(path, NULL);
    assert_non_null(strstr(bad, "\"path\":\"window\""));
    free(bad);
    free(dir);

    /* in Chromium, with no token: open_on_loopback */
    char *html = hm_test_page(g_port, "/heatmap", "heatmap-served", 1400, 1000);
    hm_test_check_grid_dom(html);
    assert_null(strstr(html, "<script"));
    free(html);
    html = hm_test_page(g_port, "/heatmap/cell?src=nyc&dst=chi&window=2026-11-29T18:53:00Z",
                        "cell-served", 1200, 1900);
    assert_null(strstr(html, "<script"));
    assert_null(strstr(html, "<img"));
    assert_non_null(strstr(html, "&lt;script&gt;alert(1)&lt;/script&gt;"));
    free(html);
}

static void test_programs_write_files(void **state)
{
    (void)state;
    const char *art = hm_test_artifacts();
    assert_int_equal(th_sh("'%s' --config '%s' heatmap --format html --window "
                           "2026-11-29T18:53:00Z --output '%s/heatmap-cli.html'",
                           th_bin("wanledger"), g_cfg_path, art),
                     0);
    char path[1100];
    snprintf(path, sizeof path, "%s/heatmap-cli.html", art);
    char *html = hm_test_slurp(path, NULL);
    assert_non_null(html);
    assert_int_equal(hm_test_count(html, "<g class=\"cell\""), HM_TEST_N_CELLS);
    free(html);
    /* plain text when stdout is not a terminal */
    assert_int_equal(th_sh("'%s' --config '%s' heatmap --format ansi > '%s/heatmap-cli.txt'",
                           th_bin("wanledger"), g_cfg_path, art),
                     0);
    snprintf(path, sizeof path, "%s/heatmap-cli.txt", art);
    char *txt = hm_test_slurp(path, NULL);
    assert_non_null(txt);
    assert_null(strchr(txt, '\033'));
    assert_non_null(strstr(txt, "R red"));
    free(txt);
    assert_int_equal(th_sh("'%s' --config '%s' report --week 2026-W48 --format md > '%s/r.md'",
                           th_bin("wanledger"), g_cfg_path, art),
                     0);
    /* usage errors exit 2 */
    assert_int_equal(th_sh("'%s' --config '%s' heatmap --format png 2>/dev/null",
                           th_bin("wanledger"), g_cfg_path),
                     2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reconciler_serves_heatmap),
        cmocka_unit_test(test_programs_write_files),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
