/* Seq gaps per agent, against the real reconciler and PostgreSQL: an agent's reports 1, 2, 5, 6
 * arrive (3 and 4 were dropped by its full spool: its "spool" counter goes 0 -> 2), then 3 late,
 * then 7 saying it lost a span ("lost"). agent_gaps holds seqs 3-4 with the 2 spool drops and the
 * windows between reports 2 and 5, shrinks to seq 4 when 3 arrives, and records the agent's own
 * span; /metrics shows the gauges; the cell page of nyc->chi shows the line under the cell for
 * the windows of the gap and not for a window without one; the gap's sites come from the
 * reports' local_sites without reading flow_packed (flows only for a report without them). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fixture.h"
#include "harness.h"
#include "timeutil.h"

#define SEC TM_USEC_PER_SEC

static struct fx F;
static int64_t W0; /* window of seq 1 */

static void post_report(int seq, int64_t ws, int spool_dropped, const char *lost)
{
    char *body = fx_fmt(
        "{\"version\":1,\"host\":\"nyc-gpu-1\",\"agent_id\":\"ag-1\",\"seq\":%d,"
        "\"window_start\":\"%s\",\"window_seconds\":60,\"dropped_events\":0,%s"
        "\"spool\":{\"dropped_reports\":%d},\"flows\":[{\"source\":\"socket\",\"proto\":\"tcp\","
        "\"local\":\"10.1.0.2:40000\",\"remote\":\"10.2.0.2:5201\",\"role\":\"client\","
        "\"tx_bytes\":%d,\"rx_bytes\":0,\"pid\":1,\"uid\":0,\"program\":\"iperf3\"}]}",
        seq, fx_ts(ws), lost ? lost : "", spool_dropped, 1000 + seq);
    char *resp = NULL;
    int st =
        fx_http(&F, "POST", "/v1/attributions", FX_TOKEN_AGENT, NULL, body, strlen(body), &resp);
    if (st != 200)
        fprintf(stderr, "seq %d -> %d %s", seq, st, resp ? resp : "");
    assert_int_equal(st, 200);
    free(resp);
    free(body);
}

static const char *gaps(void)
{
    return fx_row(&F, "SELECT string_agg(reason || ':' || coalesce(seq_from::text, '-') || '-' ||"
                      " coalesce(seq_to::text, '-') || ':' || to_char(lost_from AT TIME ZONE"
                      " 'UTC', 'HH24:MI:SS') || '-' || to_char(lost_to AT TIME ZONE 'UTC',"
                      " 'HH24:MI:SS') || ':' || spool_dropped_reports || ':' ||"
                      " array_to_string(sites, ',') || ':' || reported_seq, ' ' ORDER BY id)"
                      " FROM agent_gaps");
}

static const char *hhmmss(int64_t us)
{
    static char buf[4][16];
    static int k;
    char *b = buf[k++ % 4];
    int64_t s = (us / SEC) % 86400;
    snprintf(b, 16, "%02d:%02d:%02d", (int)(s / 3600), (int)(s / 60 % 60), (int)(s % 60));
    return b;
}

static void test_gaps_recorded(void **state)
{
    (void)state;
    post_report(1, W0, 0, NULL);
    post_report(2, W0 + 60 * SEC, 0, NULL);
    post_report(5, W0 + 240 * SEC, 2, NULL);
    post_report(6, W0 + 300 * SEC, 2, NULL);
    char want[256];
    snprintf(want, sizeof(want), "seq_missing:3-4:%s-%s:2:nyc:5", hhmmss(W0 + 120 * SEC),
             hhmmss(W0 + 240 * SEC));
    assert_string_equal(gaps(), want);
    /* a resend of 5 changes nothing */
    post_report(5, W0 + 240 * SEC, 2, NULL);
    assert_string_equal(gaps(), want);
    /* 3 arrives late: only 4 is missing now, between 3's and 5's windows */
    post_report(3, W0 + 120 * SEC, 1, NULL);
    snprintf(want, sizeof(want), "seq_missing:4-4:%s-%s:1:nyc:5", hhmmss(W0 + 180 * SEC),
             hhmmss(W0 + 240 * SEC));
    assert_string_equal(gaps(), want);
    /* 7 says its probe was lost from the end of 6's window for 90 s */
    char *lost = fx_fmt("\"lost\":{\"from\":\"%s\",\"to\":\"%s\",\"reason\":"
                        "\"restarted_without_pinned_probe\"},",
                        fx_ts(W0 + 360 * SEC), fx_ts(W0 + 450 * SEC));
    post_report(7, W0 + 480 * SEC, 2, lost);
    free(lost);
    char want2[512];
    snprintf(want2, sizeof(want2), "%s restarted_without_pinned_probe:---:%s-%s:0:nyc:7", want,
             hhmmss(W0 + 360 * SEC), hhmmss(W0 + 450 * SEC));
    assert_string_equal(gaps(), want2);
    /* a "lost" that ends before it starts is refused, naming the member */
    char *resp = NULL;
    char *bad = fx_fmt("{\"version\":1,\"host\":\"h\",\"agent_id\":\"ag-2\",\"seq\":1,"
                       "\"window_start\":\"%s\",\"lost\":{\"from\":\"%s\",\"to\":\"%s\","
                       "\"reason\":\"x\"},\"flows\":[]}",
                       fx_ts(W0), fx_ts(W0 + 60 * SEC), fx_ts(W0));
    assert_int_equal(
        fx_http(&F, "POST", "/v1/attributions", FX_TOKEN_AGENT, NULL, bad, strlen(bad), &resp),
        422);
    assert_non_null(strstr(resp, "$.lost.to"));
    free(resp);
    free(bad);
    assert_int_equal(fx_num(&F, "SELECT count(*) FROM flow_reports WHERE agent_id = 'ag-2'"), 0);
}

/* A gap row's sites come from the reports' local_sites without reading any flow (sql/031): with
 * flow_packed locked by another session the lookup still answers within the lock timeout; a
 * report stored before local_sites existed (NULL) has its sites read from its flows. */
static void exec_ok(PGconn *db, const char *sql)
{
    PGresult *r = PQexec(db, sql);
    if (PQresultStatus(r) != PGRES_COMMAND_OK)
        fail_msg("%s: %s", sql, PQresultErrorMessage(r));
    PQclear(r);
}

static void test_gap_sites_from_reports(void **state)
{
    (void)state;
    PGconn *holder = PQconnectdb(F.conninfo);
    assert_int_equal(PQstatus(holder), CONNECTION_OK);
    exec_ok(holder, "BEGIN; LOCK TABLE flow_packed IN ACCESS EXCLUSIVE MODE");
    exec_ok(F.db, "SET lock_timeout = '2s'");
    assert_string_equal(
        fx_row(&F, "SELECT array_to_string(wl_agent_sites('ag-1', ARRAY[2, 5]::bigint[]), ',')"),
        "nyc");
    exec_ok(holder, "ROLLBACK");
    PQfinish(holder);
    exec_ok(F.db, "RESET lock_timeout");
    exec_ok(F.db, "UPDATE flow_reports SET local_sites = NULL WHERE agent_id = 'ag-1' AND seq = 6");
    assert_string_equal(
        fx_row(&F, "SELECT array_to_string(wl_agent_sites('ag-1', ARRAY[6]::bigint[]), ',')"),
        "nyc");
    assert_string_equal(
        fx_row(&F, "SELECT array_to_string(wl_agent_sites('ag-1', ARRAY[99]::bigint[]), ',')"), "");
    exec_ok(F.db,
            "UPDATE flow_reports SET local_sites = '{nyc}' WHERE agent_id = 'ag-1' AND seq = 6");
}

static void test_gaps_in_metrics(void **state)
{
    (void)state;
    char *resp = NULL;
    assert_int_equal(fx_http(&F, "GET", "/metrics", NULL, NULL, NULL, 0, &resp), 200);
    assert_non_null(strstr(resp, "wanledger_agent_gaps{reason=\"seq_missing\"} 1\n"));
    assert_non_null(
        strstr(resp, "wanledger_agent_gaps{reason=\"restarted_without_pinned_probe\"} 1\n"));
    assert_non_null(strstr(resp, "wanledger_agent_gap_reports_missing 1\n"));
    assert_non_null(strstr(resp, "wanledger_agent_gap_spool_dropped_reports 1\n"));
    assert_non_null(strstr(
        resp, "wanledger_agent_gap_seconds{reason=\"restarted_without_pinned_probe\"} 90\n"));
    free(resp);
}

static void test_gaps_on_cell_page(void **state)
{
    (void)state;
    /* the link's counters for every window, so that every window of the pair has a cell */
    char *batch = strdup("{\"version\":1,\"poller\":\"p1\",\"samples\":[");
    for (int i = -1; i <= 10; i++) {
        char *next = fx_fmt("%s%s{\"device\":\"nyc-border-1\",\"interface\":\"et-0/0/1\","
                            "\"at\":\"%s\",\"in_octets\":0,\"out_octets\":%d}",
                            batch, i > -1 ? "," : "", fx_ts(W0 + i * 60 * SEC), (i + 1) * 100000);
        free(batch);
        batch = next;
    }
    char *body = fx_fmt("%s]}", batch);
    char *resp0 = NULL;
    assert_int_equal(
        fx_http(&F, "POST", "/v1/counters", FX_TOKEN_POLLER, NULL, body, strlen(body), &resp0),
        200);
    free(resp0);
    free(body);
    free(batch);
    char *out = NULL;
    assert_int_equal(fx_run(&F, "reconcile --once", &out), 0);
    free(out);
    struct {
        int64_t ws;
        const char *needle; /* NULL: no gap line */
    } cases[] = {
        {W0 + 180 * SEC, "report seq 4 never arrived (1 dropped by its full spool)"},
        {W0 + 360 * SEC, "lost its counts (restarted_without_pinned_probe)"},
        {W0 + 60 * SEC, NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *path = fx_fmt("/heatmap/cell?src=nyc&dst=chi&window=%s", fx_ts(cases[i].ws));
        char *resp = NULL;
        int st = fx_http(&F, "GET", path, FX_TOKEN_READER, NULL, NULL, 0, &resp);
        if (st != 200) {
            fprintf(stderr, "%s -> %d %s\n", path, st, resp ? resp : "");
            free(resp);
            free(path);
            fail();
        }
        if (cases[i].needle) {
            assert_non_null(strstr(resp, "class=\"agent-gaps\""));
            assert_non_null(strstr(resp, cases[i].needle));
            assert_non_null(strstr(resp, "nyc-gpu-1 (agent ag-1)"));
        } else {
            assert_null(strstr(resp, "agent-gaps"));
        }
        free(resp);
        free(path);
    }
}

int main(void)
{
    fx_setup(&F, "faults-gaps", " \"tick_seconds\": 3600,");
    W0 = fx_window_ago(20, 60);
    fx_start(&F);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gaps_recorded),
        cmocka_unit_test(test_gap_sites_from_reports),
        cmocka_unit_test(test_gaps_in_metrics),
        cmocka_unit_test(test_gaps_on_cell_page),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    fx_stop(&F);
    return rc;
}
