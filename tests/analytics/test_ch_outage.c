/* ClickHouse stopped in the middle of ingest and started again, through the real service:
 * `wanledger reconcile` with analytics.clickhouse, 30 agent reports of 40 flows each posted over
 * HTTP; ClickHouse is stopped (by pid) after the 10th. Every report is still acknowledged (the
 * acknowledgement never waits for ClickHouse), /metrics shows the outbox and the waiting window,
 * no cell is computed from part of the window while its flows wait; after the restart every
 * acknowledged flow is in ClickHouse exactly once and the window's cell counts each once.
 * Flow k of report s: 10.1.0.2:(20000+k) -> 10.2.0.2:5201, client, tx_bytes 1000 s + k, so
 *   sum tx = 1000 x 40 x (1 + … + 30) + 30 x (0 + … + 39) = 18,600,000 + 23,400 = 18,623,400. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "fixture.h"
#include "harness.h"
#include "th_clickhouse.h"
#include "timeutil.h"

#define REPORTS 30
#define FLOWS   40
#define TX_SUM  18623400LL

static struct fx F;
static struct th_ch CH;

static void post_report(int64_t ws, int s)
{
    size_t cap = 200 + FLOWS * 200, n = 0;
    char *b = malloc(cap);
    n += (size_t)snprintf(b + n, cap - n,
                          "{\"version\":1,\"host\":\"nyc-gpu-1\",\"agent_id\":\"agent-o\","
                          "\"seq\":%d,\"window_start\":\"%s\",\"flows\":[",
                          s, fx_ts(ws));
    for (int k = 0; k < FLOWS; k++)
        n +=
            (size_t)snprintf(b + n, cap - n,
                             "%s{\"source\":\"socket\",\"proto\":\"tcp\",\"local\":\"10.1.0.2:%d\","
                             "\"remote\":\"10.2.0.2:5201\",\"role\":\"client\",\"tx_bytes\":%d,"
                             "\"rx_bytes\":0,\"user\":\"alice\",\"program\":\"python3\"}",
                             k ? "," : "", 20000 + k, 1000 * s + k);
    n += (size_t)snprintf(b + n, cap - n, "]}");
    char *resp = NULL;
    int st = fx_http(&F, "POST", "/v1/attributions", FX_TOKEN_AGENT, NULL, b, n, &resp);
    if (st != 200)
        fail_msg("report %d: HTTP %d %s", s, st, resp ? resp : "");
    free(resp);
    free(b);
}

static long long metric(const char *name)
{
    char *m = NULL;
    assert_int_equal(fx_http(&F, "GET", "/metrics", NULL, NULL, NULL, 0, &m), 200);
    char key[128];
    snprintf(key, sizeof key, "\n%s ", name);
    const char *p = strstr(m, key);
    long long v = p ? atoll(p + strlen(key)) : -1;
    free(m);
    return v;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void test_outage_and_restart(void **state)
{
    (void)state;
    int64_t ws = fx_window_ago(3, 60);
    char cell[256];
    snprintf(cell, sizeof cell,
             "SELECT coalesce(max(attributed_bytes), -1) FROM heatmap_cells WHERE window_start ="
             " '%s' AND src_site = 'nyc' AND dst_site = 'chi'",
             fx_ts(ws));
    for (int s = 1; s <= 10; s++)
        post_report(ws, s);
    th_ch_stop(&CH);
    for (int s = 11; s <= 20; s++)
        post_report(ws, s); /* acknowledged while ClickHouse is down */
    /* the flows wait in PostgreSQL, visibly, and the window waits for them */
    long long waiting = 0;
    for (int i = 0; i < 50 && waiting < 1; i++, sleep_ms(100))
        waiting = metric("wanledger_clickhouse_windows_waiting");
    assert_int_equal(waiting, 1);
    assert_true(metric("wanledger_clickhouse_outbox_reports") >= 10);
    assert_true(metric("wanledger_clickhouse_outbox_flows") >= 10 * FLOWS);
    sleep_ms(2500); /* two reconcile ticks: the window is due, but not computed from half */
    /* at most the 10 reports shipped before the stop: 1000 x 40 x 55 + 10 x 780 */
    assert_true(fx_num(&F, cell) <= 2207800);
    assert_true(metric("wanledger_clickhouse_deferred_total") >= 1);
    char dirty[256];
    snprintf(dirty, sizeof dirty,
             "SELECT count(*) FROM window_state WHERE dirty AND window_start = '%s'", fx_ts(ws));
    assert_int_equal(fx_num(&F, dirty), 1); /* still due, not marked reconciled */
    assert_int_equal(th_ch_restart(&CH), 0);
    for (int s = 21; s <= REPORTS; s++)
        post_report(ws, s);
    long long pending = -1;
    for (int i = 0; i < 300 && pending != 0; i++, sleep_ms(100))
        pending = fx_num(&F, "SELECT count(*) FROM flow_reports WHERE ch_pending");
    assert_int_equal(pending, 0);
    assert_int_equal(metric("wanledger_clickhouse_outbox_reports"), 0);
    /* exactly once in ClickHouse */
    assert_int_equal(th_ch_num(&CH, "SELECT count() FROM wanledger.flow_records FINAL"),
                     REPORTS * FLOWS);
    assert_int_equal(th_ch_num(&CH, "SELECT count() FROM (SELECT DISTINCT agent_id, seq, idx"
                                    " FROM wanledger.flow_records)"),
                     REPORTS * FLOWS);
    assert_int_equal(th_ch_num(&CH, "SELECT sum(tx_bytes) FROM wanledger.flow_records FINAL"),
                     TX_SUM);
    /* and the window's cell, summed by ClickHouse, counts every flow once */
    long long attributed = -1;
    for (int i = 0; i < 100 && attributed != TX_SUM; i++, sleep_ms(100))
        attributed = fx_num(&F, cell);
    assert_int_equal(attributed, TX_SUM);
}

static int setup(void **state)
{
    (void)state;
    th_ch_start(&CH, NULL);
    char extra[600];
    snprintf(extra, sizeof extra,
             " \"tick_seconds\": 1, \"grace_seconds\": 1,\n"
             " \"analytics\": {\"clickhouse\": {\"url\": \"%s\", \"database\": \"wanledger\","
             " \"cluster\": null, \"password_file\": \"%s\", \"batch_rows\": 1000,"
             " \"timeout_ms\": 2000}},",
             CH.url, CH.password_file);
    fx_setup(&F, "ch-outage", extra);
    fx_start(&F);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    fx_stop(&F);
    th_ch_stop(&CH);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_outage_and_restart)};
    return cmocka_run_group_tests(tests, setup, teardown);
}
