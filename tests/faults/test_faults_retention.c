/* Retention for every table, and partition caches that notice another process' prune.
 * retention: raw 10 days, results/alerts/gaps 3 days. Inputs for a window 5 days ago (OLD) and
 * one 1 day ago (NEW) are ingested and reconciled; then `wanledger prune` (another process) must
 * leave only NEW's rows in heatmap_cells, attribution_rollup and link_windows but both days' raw
 * rows, delete the old delivered resolution but keep an old open alert and an old undelivered
 * resolution, and delete old agent_gaps; `prune --older-than 4d` then drops OLD's raw day, its
 * clean window_state row, its sampled router flows (flow_samples, their batch, collector
 * counters) and the report tail of an agent whose reports were all in that day, while NEW's stay.
 * The running reconciler had made OLD's and NEW's partitions; after a `prune --older-than 0d` by
 * another process, a batch for NEW's day must still be stored (before the fix: 503 for ever, "no
 * partition of relation"). And a reconciler that starts leading prunes by itself. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
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

#define SEC TM_USEC_PER_SEC
#define DAY (86400LL * SEC)

static struct fx F;
static int64_t OLD, NEW;

static int post(const char *path, const char *token, char *body)
{
    char *resp = NULL;
    int st = fx_http(&F, "POST", path, token, NULL, body, strlen(body), &resp);
    if (st != 200)
        fprintf(stderr, "POST %s -> %d %s\n", path, st, resp ? resp : "");
    free(resp);
    free(body);
    return st;
}

static void inputs(int64_t ws, int seq)
{
    assert_int_equal(
        post("/v1/counters", FX_TOKEN_POLLER,
             fx_fmt("{\"version\":1,\"poller\":\"p1\",\"samples\":["
                    "{\"device\":\"nyc-border-1\",\"interface\":\"et-0/0/1\",\"at\":\"%s\","
                    "\"in_octets\":0,\"out_octets\":0},"
                    "{\"device\":\"nyc-border-1\",\"interface\":\"et-0/0/1\",\"at\":\"%s\","
                    "\"in_octets\":0,\"out_octets\":1000000000}]}",
                    fx_ts(ws), fx_ts(ws + 60 * SEC))),
        200);
    assert_int_equal(
        post("/v1/attributions", FX_TOKEN_AGENT,
             fx_fmt("{\"version\":1,\"host\":\"nyc-gpu-1\",\"agent_id\":\"ret-1\",\"seq\":%d,"
                    "\"window_start\":\"%s\",\"flows\":[{\"source\":\"socket\",\"proto\":\"tcp\","
                    "\"local\":\"10.1.0.2:40000\",\"remote\":\"10.2.0.2:5201\",\"role\":"
                    "\"client\",\"tx_bytes\":500000000,\"rx_bytes\":0,\"user\":\"alice\"}]}",
                    seq, fx_ts(ws))),
        200);
}

static long long rows(const char *table, int64_t ws)
{
    char *sql = fx_fmt("SELECT count(*) FROM %s WHERE window_start = '%s'", table, fx_ts(ws));
    long long n = fx_num(&F, sql);
    free(sql);
    return n;
}

static void exec(const char *sql)
{
    PGresult *r = PQexec(F.db, sql);
    if (PQresultStatus(r) != PGRES_COMMAND_OK)
        fail_msg("%s: %s", sql, PQresultErrorMessage(r));
    PQclear(r);
}

/* Sampled router flows (sql/008) for window ws, their batch, collector counters and an sFlow
 * counter sample (sql/014) received then: raw inputs, kept as long as the raw partitions. */
static void flow_samples_at(int64_t ws, const char *tag)
{
    char *sql = fx_fmt(
        "INSERT INTO flow_samples (window_start, window_seconds, device, src_addr, dst_addr,"
        " proto, dst_port, src_site, dst_site, samples, sampled_bytes, estimated_bytes, variance,"
        " rate_min, rate_max) VALUES ('%1$s', 60, 'r-%2$s', '10.1.0.20', '10.2.0.20', 6, 8800,"
        " 'nyc', 'chi', 10, 15000, 150000, 1.35e9, 10, 10);"
        "INSERT INTO flow_sample_batches (batch, poller, n_cells, received_at) VALUES"
        " ('p:%2$s', 'p', 1, '%1$s');"
        "INSERT INTO flow_collector_stats (poller, device, protocol, datagrams, malformed, records,"
        " unknown_template_sets, undecodable_samples, agg_dropped, updated_at) VALUES ('p',"
        " 'r-%2$s', 'ipfix', 1, 0, 1, 0, 0, 0, '%1$s');"
        "INSERT INTO flow_if_counters (device, if_index, at, poller, in_octets, out_octets,"
        " in_pkts, out_pkts) VALUES ('r-%2$s', 1, '%1$s', 'p', 1, 2, 3, 4)",
        fx_ts(ws), tag);
    exec(sql);
    free(sql);
}

static long long flow_rows(const char *tag)
{
    char *sql = fx_fmt("SELECT (SELECT count(*) FROM flow_samples WHERE device = 'r-%1$s') +"
                       " (SELECT count(*) FROM flow_sample_batches WHERE batch = 'p:%1$s') +"
                       " (SELECT count(*) FROM flow_collector_stats WHERE device = 'r-%1$s') +"
                       " (SELECT count(*) FROM flow_if_counters WHERE device = 'r-%1$s')",
                       tag);
    long long n = fx_num(&F, sql);
    free(sql);
    return n;
}

static void old_bookkeeping(void)
{
    exec("INSERT INTO gap_alerts (kind, src_site, dst_site, state, opened_at, resolved_at,"
         " resolved_sent, summary) VALUES"
         " ('gap', 'osl', 'nyc', 'resolved', now() - interval '6 days',"
         "  now() - interval '5 days', true, 'old-delivered'),"
         " ('gap', 'osl', 'chi', 'resolved', now() - interval '6 days',"
         "  now() - interval '5 days', false, 'old-undelivered'),"
         " ('gap', 'chi', 'osl', 'open', now() - interval '6 days', NULL, false, 'old-open')");
    exec("INSERT INTO agent_gaps (agent_id, host, reason, lost_from, lost_to, reported_seq) VALUES"
         " ('ret-1', 'h', 'x', now() - interval '5 days', now() - interval '5 days', 9),"
         " ('ret-1', 'h', 'y', now() - interval '1 day', now() - interval '1 day', 10)");
}

/* Waits until the reconciler leads and has had time for its first pass and the prune that comes
 * with leading (else that prune races with the inputs below). */
static void wait_settled(void)
{
    for (int i = 0; i < 100; i++) {
        char *resp = NULL;
        int st = fx_http(&F, "GET", "/metrics", NULL, NULL, NULL, 0, &resp);
        bool lead = st == 200 && strstr(resp, "\nwanledger_leader 1\n");
        free(resp);
        if (lead)
            break;
        usleep(100000);
    }
    usleep(1500000);
}

static void test_prune_every_table(void **state)
{
    (void)state;
    wait_settled();
    inputs(OLD, 1);
    inputs(NEW, 2);
    /* an agent whose only report is in OLD's day: its report tail (sql/033) goes with the day */
    assert_int_equal(
        post("/v1/attributions", FX_TOKEN_AGENT,
             fx_fmt("{\"version\":1,\"host\":\"nyc-gpu-2\",\"agent_id\":\"ret-2\",\"seq\":7,"
                    "\"window_start\":\"%s\",\"flows\":[]}",
                    fx_ts(OLD))),
        200);
    char *out = NULL;
    assert_int_equal(fx_run(&F, "reconcile --once", &out), 0);
    free(out);
    static const char *const results[] = {"heatmap_cells", "attribution_rollup", "link_windows",
                                          "flow_reports", "flow_records"};
    for (size_t i = 0; i < 5; i++) {
        assert_true(rows(results[i], OLD) > 0);
        assert_true(rows(results[i], NEW) > 0);
    }
    char *cs = fx_fmt("SELECT count(*) FROM counter_samples WHERE at < '%s'", fx_ts(NEW));
    assert_int_equal(fx_num(&F, cs), 2);
    old_bookkeeping();
    flow_samples_at(OLD, "old");
    flow_samples_at(NEW, "new");
    assert_int_equal(fx_run(&F, "prune", &out), 0);
    fprintf(stderr, "%s", out);
    free(out);
    for (size_t i = 0; i < 3; i++) {
        printf("%s: old window %lld rows, new window %lld rows\n", results[i],
               rows(results[i], OLD), rows(results[i], NEW));
        assert_int_equal(rows(results[i], OLD), 0);
        assert_true(rows(results[i], NEW) > 0);
    }
    assert_string_equal(fx_row(&F, "SELECT string_agg(summary, ',' ORDER BY summary) FROM"
                                   " gap_alerts WHERE summary LIKE 'old-%'"),
                        "old-open,old-undelivered");
    assert_string_equal(fx_row(&F, "SELECT string_agg(reason, ',') FROM agent_gaps"), "y");
    /* raw data is kept 10 days: OLD's is still there, and so is its window_state row */
    assert_int_equal(rows("flow_reports", OLD), 2); /* ret-1's and ret-2's */
    assert_int_equal(fx_num(&F, cs), 2);
    assert_int_equal(rows("window_state", OLD), 1);
    assert_int_equal(flow_rows("old"), 4); /* sampled flows are raw data too */
    assert_int_equal(flow_rows("new"), 4);
    /* a shorter raw bound: OLD's raw day and its clean window_state row go, NEW's stay */
    assert_string_equal(fx_row(&F, "SELECT string_agg(agent_id || ':' || seq, ',' ORDER BY"
                                   " agent_id) FROM agent_report_tail"),
                        "ret-1:2,ret-2:7");
    assert_int_equal(fx_run(&F, "prune --older-than 4d", &out), 0);
    assert_non_null(strstr(out, "agent_report_tail: 1 row(s) past retention deleted"));
    free(out);
    assert_int_equal(rows("flow_reports", OLD), 0);
    assert_int_equal(rows("flow_records", OLD), 0);
    /* ret-1 still has NEW's report, ret-2 has none left */
    assert_string_equal(fx_row(&F, "SELECT string_agg(agent_id || ':' || seq, ',' ORDER BY"
                                   " agent_id) FROM agent_report_tail"),
                        "ret-1:2");
    assert_int_equal(fx_num(&F, cs), 0);
    assert_int_equal(rows("window_state", OLD), 0);
    assert_int_equal(rows("flow_reports", NEW), 1);
    assert_int_equal(rows("window_state", NEW), 1);
    /* flow_samples, its batch, its collector's counters, sFlow counter samples */
    assert_int_equal(flow_rows("old"), 0);
    assert_int_equal(flow_rows("new"), 4);
    free(cs);
}

static void test_partition_cache_after_foreign_prune(void **state)
{
    (void)state;
    /* the running reconciler made NEW's partitions (test above); another process drops them */
    char *out = NULL;
    assert_int_equal(fx_run(&F, "prune --older-than 0d", &out), 0);
    free(out);
    assert_int_equal(rows("flow_reports", NEW), 0);
    int st = post("/v1/counters", FX_TOKEN_POLLER,
                  fx_fmt("{\"version\":1,\"poller\":\"p1\",\"samples\":["
                         "{\"device\":\"nyc-border-1\",\"interface\":\"et-0/0/1\",\"at\":\"%s\","
                         "\"in_octets\":1,\"out_octets\":1}]}",
                         fx_ts(NEW + 30 * SEC)));
    assert_int_equal(st, 200);
    char *sql =
        fx_fmt("SELECT count(*) FROM counter_samples WHERE at = '%s'", fx_ts(NEW + 30 * SEC));
    assert_int_equal(fx_num(&F, sql), 1);
    free(sql);
}

static void test_leader_prunes_on_start(void **state)
{
    (void)state;
    exec("INSERT INTO agent_gaps (agent_id, host, reason, lost_from, lost_to, reported_seq) VALUES"
         " ('ret-1', 'h', 'z', now() - interval '9 days', now() - interval '9 days', 11)");
    fx_stop(&F);
    fx_start(&F);
    F.db = PQconnectdb(F.conninfo); /* fx_stop closed the test's own connection */
    assert_int_equal(PQstatus(F.db), CONNECTION_OK);
    long long n = -1;
    for (int i = 0; i < 100; i++) {
        n = fx_num(&F, "SELECT count(*) FROM agent_gaps WHERE reason = 'z'");
        if (n == 0)
            break;
        usleep(100000);
    }
    assert_int_equal(n, 0);
}

int main(void)
{
    fx_setup(&F, "faults-retention",
             " \"retention\": {\"raw_days\": 10, \"results_days\": 3, \"alerts_days\": 3,"
             " \"gaps_days\": 3},");
    OLD = fx_window_ago(5 * 1440, 60);
    NEW = fx_window_ago(1440, 60);
    fx_start(&F);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prune_every_table),
        cmocka_unit_test(test_partition_cache_after_foreign_prune),
        cmocka_unit_test(test_leader_prunes_on_start),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    fx_stop(&F);
    return rc;
}
