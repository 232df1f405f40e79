/* `wanledger ship --metrics` against the real reconciler and PostgreSQL: a log of 6 lines
 * (3 good records, 1 the reconciler quarantines, 1 that is not JSON, 1 blank) is tailed; its
 * /metrics must say 6 lines read, 3 records sent, 1 rejected by the reconciler and 1 skipped by
 * ship, a lag of 0 bytes once shipped, and 2 more lines appended later move the figures by
 * exactly that much (lag > 0 is seen while a partial line waits for its newline); the
 * exposition passes `promtool check metrics`. */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fixture.h"
#include "harness.h"
#include "timeutil.h"

static struct fx F;
static struct fx M; /* .port: ship's /metrics */

static char *record(const char *id, const char *src, int64_t t0)
{
    return fx_fmt("{\"service\":\"dupedog\",\"id\":\"%s\",\"src\":\"%s\",\"dst\":\"chi\","
                  "\"bytes\":1000,\"start\":%" PRId64 ",\"end\":%" PRId64 "}\n",
                  id, src, t0, t0 + 5);
}

static void append(const char *path, const char *text)
{
    FILE *f = fopen(path, "a");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* The value of the sample whose line starts with prefix, or -1. */
static long long sample(const char *text, const char *prefix)
{
    const char *p = strstr(text, prefix);
    return p ? atoll(p + strlen(prefix)) : -1;
}

/* not inlined: GCC 12 at -O2 takes the returned body for the local pointer (-Wdangling-pointer) */
__attribute__((noinline)) static char *scrape(void)
{
    char *resp = NULL;
    int st = fx_http(&M, "GET", "/metrics", NULL, NULL, NULL, 0, &resp);
    assert_int_equal(st, 200);
    return resp;
}

/* Waits until the metrics show want for prefix (10 s). */
static char *wait_for(const char *prefix, long long want)
{
    int64_t until = tm_mono_ns() + 10000000000LL;
    for (;;) {
        char *m = scrape();
        if (sample(m, prefix) == want || tm_mono_ns() > until)
            return m;
        free(m);
        usleep(100000);
    }
}

static void test_ship_metrics(void **state)
{
    (void)state;
    int64_t t0 = tm_now_us() / TM_USEC_PER_SEC - 3600;
    char *log = fx_fmt("%s/dupedog.log", F.dir);
    char *r1 = record("sm-1", "nyc", t0), *r2 = record("sm-2", "nyc", t0),
         *r3 = record("sm-3", "nyc", t0), *bad = record("sm-4", "atlantis", t0);
    char *text = fx_fmt("%s%s\nnot json at all\n%s%s", r1, r2, bad, r3);
    append(log, text);
    M.port = th_free_port();
    char *state_path = fx_fmt("%s/ship.state", F.dir);
    char *listen = fx_fmt("127.0.0.1:%d", M.port);
    char *slog = fx_fmt("%s/ship.log", F.dir);
    char *argv[] = {(char *)th_bin("wanledger"),
                    "--config",
                    F.cfg_path,
                    "ship",
                    "--state",
                    state_path,
                    "--interval-ms",
                    "100",
                    "--metrics",
                    listen,
                    log,
                    NULL};
    pid_t pid = th_spawn(argv, slog);
    assert_int_equal(th_wait_port(M.port, 10000), 0);
    char *q = fx_fmt("{log=\"%s\"} ", log);
    char *p_read = fx_fmt("wanledger_ship_lines_read_total%s", q);
    char *p_sent = fx_fmt("wanledger_ship_records_sent_total%s", q);
    char *p_rej =
        fx_fmt("wanledger_ship_records_rejected_total{log=\"%s\",by=\"reconciler\"} ", log);
    char *p_skip = fx_fmt("wanledger_ship_records_rejected_total{log=\"%s\",by=\"ship\"} ", log);
    char *p_lag = fx_fmt("wanledger_ship_lag_bytes%s", q);
    char *m = wait_for(p_read, 6);
    fprintf(stderr, "%s", m);
    assert_int_equal(sample(m, p_read), 6);
    assert_int_equal(sample(m, p_sent), 3);
    assert_int_equal(sample(m, p_rej), 1);
    assert_int_equal(sample(m, p_skip), 1);
    assert_int_equal(sample(m, p_lag), 0);
    assert_true(sample(m, "\nwanledger_ship_last_success_timestamp_seconds ") >=
                tm_now_us() / TM_USEC_PER_SEC - 15);
    /* the figures are the database's: 3 transfers stored, 1 record quarantined */
    assert_int_equal(fx_num(&F, "SELECT count(*) FROM transfers WHERE id LIKE 'sm-%'"), 3);
    assert_int_equal(fx_num(&F, "SELECT count(*) FROM rejected_records WHERE raw LIKE '%sm-4%'"),
                     1);
    th_require(system("command -v promtool >/dev/null") == 0,
               "promtool is needed (package prometheus, scripts/install-deps.sh)");
    FILE *pr = popen("promtool check metrics", "w");
    assert_non_null(pr);
    fputs(m, pr);
    assert_int_equal(pclose(pr), 0);
    free(m);
    /* a partial line waits: the lag is its length */
    const char *partial = "{\"service\":\"dupedog\",";
    append(log, partial);
    m = wait_for(p_lag, (long long)strlen(partial));
    assert_int_equal(sample(m, p_lag), (long long)strlen(partial));
    free(m);
    char *r5 = record("sm-5", "nyc", t0);
    append(log, r5 + strlen(partial));
    char *r6 = record("sm-6", "nyc", t0);
    append(log, r6);
    m = wait_for(p_read, 8);
    assert_int_equal(sample(m, p_read), 8);
    assert_int_equal(sample(m, p_sent), 5);
    assert_int_equal(sample(m, p_lag), 0);
    free(m);
    assert_int_equal(th_stop(pid, 10000), 0);
    free(r1), free(r2), free(r3), free(bad), free(r5), free(r6), free(text);
    free(q), free(p_read), free(p_sent), free(p_rej), free(p_skip), free(p_lag);
    free(log), free(state_path), free(listen), free(slog);
}

int main(void)
{
    fx_setup(&F, "recon-ship-metrics", " \"tick_seconds\": 3600,");
    fx_start(&F);
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_ship_metrics)};
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    fx_stop(&F);
    return rc;
}
