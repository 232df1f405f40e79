/* ClickHouse stopped in the middle of ingest and started again, through the real service:
 * `wanledger reconcile` with analytics.clickhouse, 30 agent reports of 40 flows each posted over
 * HTTP; ClickHouse is stopped (by pid) after the 10th. Every report is still acknowledged (the
 * acknowledgement never waits for ClickHouse), /metrics shows the outbox and the waiting window,
 * no cell is computed from part of the window while its flows wait; after the restart every
 * acknowledged flow is in ClickHouse exactly once and the window's cell counts each once.
 * Flow k of report s: 10.1.0.2:(20000+k) -> 10.2.0.2:5201, client, tx_bytes 1000 s + k, so
 *   sum tx = 1000 x 40 x (1 + … + 30) + 30 x (0 + … + 39) = 18,600,000 + 23,400 = 18,623,400.
 * The reports' flows never become flow_records rows: each waits as one compressed block in
 * ch_outbox (sql/017). Beside them, one report written the way a database from before sql/017
 * holds it (flow_reports.ch_pending and 5 flow_records rows, 10.1.0.3:(3000+k) -> 10.2.0.2:5201,
 * tx 7 each: 35) must ship too. After the restart, ClickHouse is frozen (SIGSTOP) while reports
 * arrive: the flusher's insert times out, is retried once ClickHouse runs again, and the rows
 * are still counted once. A second test kills the reconciler while blocks wait in its memory
 * queue (test_crash_with_queued_blocks); a third that gap rows get their sites though the flows
 * are not in PostgreSQL (test_gap_sites_without_flows_in_postgres). */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include <cmocka.h>

#include "fixture.h"
#include "harness.h"
#include "th_clickhouse.h"
#include "timeutil.h"

#define REPORTS 30
#define FLOWS   40
#define TX_SUM  18623400LL
#define LEGACY  5 /* flows of the pre-017 report, tx 7 each */

static struct fx F;
static struct th_ch CH;

static void post_report_as(const char *agent, int64_t ws, int s)
{
    fx_socket_report(&F, agent, ws, s, FLOWS);
}

static void post_report(int64_t ws, int s)
{
    post_report_as("agent-o", ws, s);
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
    char sql[1024];
    snprintf(sql, sizeof sql,
             "WITH r AS (INSERT INTO flow_reports (agent_id, seq, host, window_start,"
             " window_seconds, n_flows, ch_pending) VALUES ('agent-legacy', 1, 'nyc-gpu-2', '%s',"
             " 60, %d, true) RETURNING 1), f AS (INSERT INTO flow_records (window_start, agent_id,"
             " seq, idx, host, source, proto, local_addr, local_port, remote_addr, remote_port,"
             " role, tx_bytes, rx_bytes) SELECT '%s', 'agent-legacy', 1, k, 'nyc-gpu-2', 'socket',"
             " 'tcp', '10.1.0.3', 3000 + k, '10.2.0.2', 5201, 'client', 7, 0"
             " FROM generate_series(0, %d) k RETURNING 1) SELECT (SELECT count(*) FROM r) +"
             " (SELECT count(*) FROM f)",
             fx_ts(ws), LEGACY, fx_ts(ws), LEGACY - 1);
    assert_int_equal(fx_num(&F, sql), 1 + LEGACY);
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
    /* the new reports wait as one block each, compressed; none as flow_records rows */
    /* 11..20, and those of 1..10 the flusher had not shipped before the stop */
    long long blocks = metric("wanledger_clickhouse_outbox_blocks");
    assert_true(blocks >= 10 && blocks <= 20);
    assert_int_equal(metric("wanledger_clickhouse_outbox_block_rows"), blocks * FLOWS);
    long long stored = metric("wanledger_clickhouse_outbox_bytes");
    long long raw = metric("wanledger_clickhouse_outbox_raw_bytes");
    print_message("outbox during the outage: %lld blocks, %lld bytes stored, %lld as TSV\n", blocks,
                  stored, raw);
    assert_true(stored > 0 && stored < raw);
    assert_int_equal(fx_num(&F, "SELECT count(*) FROM flow_records"), LEGACY);
    sleep_ms(2500); /* two reconcile ticks: the window is due, but not computed from half */
    /* at most the 10 reports shipped before the stop: 1000 x 40 x 55 + 10 x 780 */
    assert_true(fx_num(&F, cell) <= 2207800 + 7 * LEGACY);
    assert_true(metric("wanledger_clickhouse_deferred_total") >= 1);
    char dirty[256];
    snprintf(dirty, sizeof dirty,
             "SELECT count(*) FROM window_state WHERE dirty AND window_start = '%s'", fx_ts(ws));
    assert_int_equal(fx_num(&F, dirty), 1); /* still due, not marked reconciled */
    assert_int_equal(th_ch_restart(&CH), 0);
    long long pending = -1;
    for (int i = 0; i < 300 && pending != 0; i++, sleep_ms(100))
        pending = fx_num(&F, "SELECT count(*) FROM flow_reports WHERE ch_pending");
    assert_int_equal(pending, 0); /* the backlog, both kinds, shipped */
    /* frozen, not down: the insert is sent and its answer never comes (timeout_ms 2000) */
    long long failed = metric("wanledger_clickhouse_insert_failures_total");
    assert_int_equal(kill(CH.pid, SIGSTOP), 0);
    for (int s = 21; s <= 25; s++)
        post_report(ws, s);
    long long now_failed = failed;
    for (int i = 0; i < 80 && now_failed == failed; i++, sleep_ms(100))
        now_failed = metric("wanledger_clickhouse_insert_failures_total");
    assert_int_equal(kill(CH.pid, SIGCONT), 0);
    assert_true(now_failed > failed);
    assert_true(fx_num(&F, "SELECT count(*) FROM flow_reports WHERE ch_pending") >= 1);
    for (int s = 26; s <= REPORTS; s++)
        post_report(ws, s);
    pending = -1;
    for (int i = 0; i < 300 && pending != 0; i++, sleep_ms(100))
        pending = fx_num(&F, "SELECT count(*) FROM flow_reports WHERE ch_pending");
    assert_int_equal(pending, 0);
    assert_int_equal(metric("wanledger_clickhouse_outbox_reports"), 0);
    assert_int_equal(metric("wanledger_clickhouse_outbox_blocks"), 0);
    assert_int_equal(fx_num(&F, "SELECT count(*) FROM ch_outbox"), 0);
    /* exactly once in ClickHouse */
    print_message("rows stored in ClickHouse before FINAL: %lld\n",
                  th_ch_num(&CH, "SELECT count() FROM wanledger.flow_records"));
    assert_int_equal(th_ch_num(&CH, "SELECT count() FROM wanledger.flow_records FINAL"),
                     REPORTS * FLOWS + LEGACY);
    assert_int_equal(th_ch_num(&CH, "SELECT count() FROM (SELECT DISTINCT agent_id, seq, idx"
                                    " FROM wanledger.flow_records)"),
                     REPORTS * FLOWS + LEGACY);
    assert_int_equal(th_ch_num(&CH, "SELECT sum(tx_bytes) FROM wanledger.flow_records FINAL"),
                     TX_SUM + 7 * LEGACY);
    /* and the window's cell, summed by ClickHouse, counts every flow once */
    long long attributed = -1;
    for (int i = 0; i < 100 && attributed != TX_SUM + 7 * LEGACY; i++, sleep_ms(100))
        attributed = fx_num(&F, cell);
    assert_int_equal(attributed, TX_SUM + 7 * LEGACY);
}

/* The reconciler killed (SIGKILL) while committed blocks wait in its memory queue for the flusher
 * (chstore_queue.h) and ClickHouse is frozen with one insert in flight: after the restart the
 * blocks are shipped from ch_outbox, every flow is in ClickHouse once (the in-flight insert may
 * have landed too: FINAL collapses it), the window's cell counts each once, and reports posted
 * after the restart go from memory. Flow k of report s (agent-q, 10 reports of 40): tx 1000 s + k,
 *   sum = 1000 x 40 x (1 + … + 10) + 10 x (0 + … + 39) = 2,200,000 + 7,800 = 2,207,800. */
#define Q_REPORTS 10
#define Q_KILLED  8
#define Q_TX_SUM  2207800LL

static void test_crash_with_queued_blocks(void **state)
{
    (void)state;
    int64_t ws = fx_window_ago(6, 60);
    char cell[256], ch[256];
    snprintf(cell, sizeof cell,
             "SELECT coalesce(max(attributed_bytes), -1) FROM heatmap_cells WHERE window_start ="
             " '%s' AND src_site = 'nyc' AND dst_site = 'chi'",
             fx_ts(ws));
    assert_int_equal(kill(CH.pid, SIGSTOP), 0);
    post_report_as("agent-q", ws, 1);
    /* the flusher takes it from memory ~0.1 s later and its insert hangs on the frozen server */
    long long queued = 1;
    for (int i = 0; i < 50 && queued != 0; i++, sleep_ms(50))
        queued = metric("wanledger_clickhouse_queue_blocks");
    assert_int_equal(queued, 0);
    for (int s = 2; s <= Q_KILLED; s++)
        post_report_as("agent-q", ws, s);
    queued = metric("wanledger_clickhouse_queue_blocks");
    print_message("blocks in the memory queue when the reconciler is killed: %lld\n", queued);
    assert_true(queued >= 1);
    assert_int_equal(metric("wanledger_clickhouse_queue_overflow_total"), 0);
    assert_int_equal(kill(F.pid, SIGKILL), 0);
    int st = 0;
    assert_int_equal(waitpid(F.pid, &st, 0), F.pid);
    F.pid = 0;
    assert_int_equal(kill(CH.pid, SIGCONT), 0);
    /* acknowledged, so in PostgreSQL: one block each */
    assert_int_equal(fx_num(&F, "SELECT count(*) FROM flow_reports WHERE agent_id = 'agent-q'"
                                " AND ch_pending"),
                     Q_KILLED);
    fx_start(&F);
    long long pending = -1;
    for (int i = 0; i < 200 && pending != 0; i++, sleep_ms(100))
        pending = fx_num(&F, "SELECT count(*) FROM flow_reports WHERE ch_pending");
    assert_int_equal(pending, 0);
    assert_int_equal(metric("wanledger_clickhouse_queue_shipped_total"), 0); /* from ch_outbox */
    for (int s = Q_KILLED + 1; s <= Q_REPORTS; s++)
        post_report_as("agent-q", ws, s);
    long long shipped = 0;
    for (int i = 0; i < 100 && shipped < Q_REPORTS - Q_KILLED; i++, sleep_ms(100))
        shipped = metric("wanledger_clickhouse_queue_shipped_total");
    assert_int_equal(shipped, Q_REPORTS - Q_KILLED); /* from memory */
    pending = -1;
    for (int i = 0; i < 100 && pending != 0; i++, sleep_ms(100))
        pending = fx_num(&F, "SELECT count(*) FROM ch_outbox");
    assert_int_equal(pending, 0);
    snprintf(ch, sizeof ch,
             "SELECT count() FROM wanledger.flow_records FINAL WHERE agent_id = 'agent-q'");
    assert_int_equal(th_ch_num(&CH, ch), Q_REPORTS * FLOWS);
    snprintf(ch, sizeof ch,
             "SELECT sum(tx_bytes) FROM wanledger.flow_records FINAL WHERE agent_id = 'agent-q'");
    assert_int_equal(th_ch_num(&CH, ch), Q_TX_SUM);
    long long attributed = -1;
    for (int i = 0; i < 100 && attributed != Q_TX_SUM; i++, sleep_ms(100))
        attributed = fx_num(&F, cell);
    assert_int_equal(attributed, Q_TX_SUM);
}

/* A gap's sites in ClickHouse mode (sql/028): the flows are not in PostgreSQL, so the sites of
 * agent-g's missing seq 2 and of its lost span come from what ingest kept with each report
 * (flow_reports.local_sites: its flows' local addresses, 10.1.0.2 = nyc). Before, both rows had
 * no sites, and no cell became incomplete for them. */
static void test_gap_sites_without_flows_in_postgres(void **state)
{
    (void)state;
    int64_t ws = fx_window_ago(12, 60);
    post_report_as("agent-g", ws, 1);
    char *body = fx_fmt("{\"version\":1,\"host\":\"nyc-gpu-1\",\"agent_id\":\"agent-g\","
                        "\"seq\":3,\"window_start\":\"%s\",\"lost\":{\"from\":\"%s\","
                        "\"to\":\"%s\",\"reason\":\"late_drain\"},\"flows\":[]}",
                        fx_ts(ws + 120 * TM_USEC_PER_SEC), fx_ts(ws + 120 * TM_USEC_PER_SEC),
                        fx_ts(ws + 150 * TM_USEC_PER_SEC));
    char *resp = NULL;
    int st =
        fx_http(&F, "POST", "/v1/attributions", FX_TOKEN_AGENT, NULL, body, strlen(body), &resp);
    if (st != 200)
        fail_msg("seq 3: HTTP %d %s", st, resp ? resp : "");
    free(resp);
    free(body);
    assert_int_equal(fx_num(&F, "SELECT count(*) FROM flow_records WHERE agent_id = 'agent-g'"), 0);
    assert_string_equal(fx_row(&F, "SELECT string_agg(seq || ':' || coalesce(array_to_string("
                                   "local_sites, ','), 'NULL'), ' ' ORDER BY seq) FROM "
                                   "flow_reports WHERE agent_id = 'agent-g'"),
                        "1:nyc 3:");
    assert_string_equal(fx_row(&F, "SELECT string_agg(reason || ':' || array_to_string(sites, "
                                   "','), ' ' ORDER BY reason) FROM agent_gaps WHERE agent_id = "
                                   "'agent-g'"),
                        "late_drain:nyc seq_missing:nyc");
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
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_outage_and_restart),
                                       cmocka_unit_test(test_crash_with_queued_blocks),
                                       cmocka_unit_test(test_gap_sites_without_flows_in_postgres)};
    return cmocka_run_group_tests(tests, setup, teardown);
}
