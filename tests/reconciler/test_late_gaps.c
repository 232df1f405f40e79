/* Late drains against the real reconciler and PostgreSQL (agentlib/README.md "Late ticks",
 * reconciler/README.md "Agent seq gaps"). The nyc agent reports windows 0 and 1 with flows; the
 * windows are reconciled; then its drain runs late: windows 2 and 3 come as empty reports, each
 * carrying the lost span [2:00, 4:10) (late_drain), and window 4 with what it counted after the
 * drain. Checked: one agent_gaps row for the span told twice, with the agent's site (nyc) though
 * both reports are empty; the cells of both directions of nyc-chi in windows 2, 3 and 4 (those
 * the span overlaps) are incomplete without coverage, also those reconciled before the span
 * arrived, and windows 0, 1 and 5 are not; a second span overlapping the first counts once in
 * wanledger_agent_gap_seconds (the union, 160 s); the cell page names the late drain. Also a
 * second agent's missing seqs make the windows they span incomplete, until they arrive. */
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
static int64_t W0;

static void post(const char *body)
{
    char *resp = NULL;
    int st =
        fx_http(&F, "POST", "/v1/attributions", FX_TOKEN_AGENT, NULL, body, strlen(body), &resp);
    if (st != 200)
        fprintf(stderr, "-> %d %s\n", st, resp ? resp : "");
    assert_int_equal(st, 200);
    free(resp);
}

/* Report seq of window w (minutes after W0): flows (1 flow of 1000 bytes nyc -> chi) or none,
 * with the lost span [lf, lt) (seconds after W0) when lt > 0. */
static void report_as(const char *agent, int seq, int w, bool flows, int lf, int lt)
{
    char lost[256] = "";
    if (lt > 0) {
        char a[TM_RFC3339_LEN];
        snprintf(a, sizeof(a), "%s", fx_ts(W0 + lf * SEC));
        snprintf(lost, sizeof(lost),
                 "\"lost\":{\"from\":\"%s\",\"to\":\"%s\",\"reason\":\"late_drain\"},", a,
                 fx_ts(W0 + lt * SEC));
    }
    char *body =
        fx_fmt("{\"version\":1,\"host\":\"nyc-gpu-1\",\"agent_id\":\"%s\",\"seq\":%d,"
               "\"window_start\":\"%s\",\"window_seconds\":60,\"dropped_events\":0,%s"
               "\"spool\":{\"dropped_reports\":0},\"flows\":[%s]}",
               agent, seq, fx_ts(W0 + (int64_t)w * 60 * SEC), lost,
               flows ? "{\"source\":\"socket\",\"proto\":\"tcp\",\"local\":\"10.1.0.2:40000\","
                       "\"remote\":\"10.2.0.2:5201\",\"role\":\"client\",\"tx_bytes\":1000,"
                       "\"rx_bytes\":0,\"pid\":1,\"uid\":0,\"program\":\"iperf3\"}"
                     : "");
    post(body);
    free(body);
}

static void report(int seq, int w, bool flows, int lf, int lt)
{
    report_as("ag-late", seq, w, flows, lf, lt);
}

static void reconcile(void)
{
    char *out = NULL;
    assert_int_equal(fx_run(&F, "reconcile --once", &out), 0);
    free(out);
}

/* "status/coverage" of nyc->chi and chi->nyc in window w, e.g. "incomplete/-,incomplete/-". */
static const char *cells(int w)
{
    char *q = fx_fmt("SELECT string_agg(status || '/' || coalesce(round(coverage::numeric, 2)"
                     "::text, '-'), ',' ORDER BY src_site DESC) FROM heatmap_cells"
                     " WHERE window_start = '%s'",
                     fx_ts(W0 + (int64_t)w * 60 * SEC));
    const char *v = fx_row(&F, q);
    free(q);
    return v;
}

/* The circuit's counter samples at the starts of windows [from, to] (minutes after W0): the
 * cumulative octets (i + 1) x 100,000, so 100,000 bytes a window. */
static void post_counters(int from, int to)
{
    char *batch = strdup("");
    for (int i = from; i <= to; i++) {
        char *next = fx_fmt("%s%s{\"device\":\"nyc-border-1\",\"interface\":\"et-0/0/1\","
                            "\"at\":\"%s\",\"in_octets\":0,\"out_octets\":%d}",
                            batch, i > from ? "," : "", fx_ts(W0 + i * 60 * SEC), (i + 1) * 100000);
        free(batch);
        batch = next;
    }
    char *body = fx_fmt("{\"version\":1,\"poller\":\"p1\",\"samples\":[%s]}", batch);
    char *resp = NULL;
    assert_int_equal(
        fx_http(&F, "POST", "/v1/counters", FX_TOKEN_POLLER, NULL, body, strlen(body), &resp), 200);
    free(resp);
    free(body);
    free(batch);
}

static void test_late_span_makes_windows_incomplete(void **state)
{
    (void)state;
    post_counters(-1, 8);
    report(1, 0, true, 0, 0);
    report(2, 1, true, 0, 0);
    reconcile();
    for (int w = 0; w <= 5; w++)
        assert_null(strstr(cells(w), "incomplete"));
    /* the late drain at 4:10: windows 2 and 3 skipped, both reported empty with the span */
    report(3, 2, false, 120, 250);
    report(4, 3, false, 120, 250);
    report(5, 4, true, 0, 0);
    report(6, 5, true, 0, 0);
    assert_string_equal(fx_row(&F, "SELECT count(*) || ':' || array_to_string(sites, ',')"
                                   " FROM agent_gaps WHERE reason = 'late_drain' GROUP BY sites"),
                        "1:nyc");
    reconcile();
    for (int w = 2; w <= 4; w++) {
        printf("window %d: %s\n", w, cells(w));
        assert_string_equal(cells(w), "incomplete/-,incomplete/-");
    }
    for (int w = 0; w <= 5; w += (w == 1 ? 4 : 1)) {
        printf("window %d: %s\n", w, cells(w));
        assert_null(strstr(cells(w), "incomplete"));
    }
}

/* Reports that never arrived: agent ag-miss reports windows 10, 11, 14 and 15 as seqs 1, 2, 5
 * and 6, all reconciled once seqs 1 and 2 are in. Seqs 3 and 4 (windows 12 and 13) are missing:
 * those windows become incomplete on both directions, the others not; when seq 3 (window 12)
 * arrives late, window 12 is complete again and window 13 stays incomplete. */
static void test_missing_seqs_make_windows_incomplete(void **state)
{
    (void)state;
    post_counters(9, 17); /* the counters continue */
    report_as("ag-miss", 1, 10, true, 0, 0);
    report_as("ag-miss", 2, 11, true, 0, 0);
    reconcile();
    for (int w = 10; w <= 15; w++)
        assert_null(strstr(cells(w), "incomplete"));
    report_as("ag-miss", 5, 14, true, 0, 0);
    report_as("ag-miss", 6, 15, true, 0, 0);
    assert_string_equal(fx_row(&F, "SELECT seq_from || '-' || seq_to || ':' || "
                                   "array_to_string(sites, ',') FROM agent_gaps WHERE agent_id = "
                                   "'ag-miss'"),
                        "3-4:nyc");
    reconcile();
    for (int w = 10; w <= 15; w++) {
        printf("window %d: %s\n", w, cells(w));
        if (w == 12 || w == 13)
            assert_string_equal(cells(w), "incomplete/-,incomplete/-");
        else
            assert_null(strstr(cells(w), "incomplete"));
    }
    report_as("ag-miss", 3, 12, true, 0, 0);
    reconcile();
    printf("after seq 3: window 12: %s\n", cells(12)); /* cells() returns one buffer */
    printf("after seq 3: window 13: %s\n", cells(13));
    assert_null(strstr(cells(12), "incomplete"));
    assert_string_equal(cells(13), "incomplete/-,incomplete/-");
}

static void test_gap_seconds_are_the_union(void **state)
{
    (void)state;
    /* a second span, [3:20, 4:40), overlapping the first: the union is [2:00, 4:40) = 160 s */
    report(7, 6, true, 200, 280);
    char *resp = NULL;
    assert_int_equal(fx_http(&F, "GET", "/metrics", NULL, NULL, NULL, 0, &resp), 200);
    assert_non_null(strstr(resp, "wanledger_agent_gaps{reason=\"late_drain\"} 2\n"));
    assert_non_null(strstr(resp, "wanledger_agent_gap_seconds{reason=\"late_drain\"} 160\n"));
    free(resp);
}

static void test_cell_page_names_the_late_drain(void **state)
{
    (void)state;
    char *path = fx_fmt("/heatmap/cell?src=nyc&dst=chi&window=%s", fx_ts(W0 + 180 * SEC));
    char *resp = NULL;
    assert_int_equal(fx_http(&F, "GET", path, FX_TOKEN_READER, NULL, NULL, 0, &resp), 200);
    assert_non_null(strstr(resp, "nyc-gpu-1 (agent ag-late)"));
    assert_non_null(strstr(resp, "drained late (the agent was stalled)"));
    assert_null(strstr(resp, "lost its counts (late_drain)"));
    free(resp);
    free(path);
}

int main(void)
{
    fx_setup(&F, "late-gaps", " \"tick_seconds\": 3600,");
    W0 = fx_window_ago(20, 60);
    fx_start(&F);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_late_span_makes_windows_incomplete),
        cmocka_unit_test(test_missing_seqs_make_windows_incomplete),
        cmocka_unit_test(test_gap_seconds_are_the_union),
        cmocka_unit_test(test_cell_page_names_the_late_drain),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    fx_stop(&F);
    return rc;
}
