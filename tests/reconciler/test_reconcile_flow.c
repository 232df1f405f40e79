/* End to end through the real service: post counters, agent reports (one connection seen from
 * both ends, one flow on a service's port) and a service transfer for three past windows, run
 * `wanledger reconcile --once`, and compare heatmap_cells and attribution_rollup with figures
 * computed by hand below; then late data for one window is posted, a second --once re-reconciles
 * it, and `wanledger top` / GET /api/v1/top / GET /api/v1/cells report the same totals; last,
 * pods' flows reach the rollup, top and the cell page with their Kubernetes identity.
 *
 * Windows A = W, B = W+60 s, C = W+120 s (60 s windows, well past their 90 s grace).
 * Link nyc-border-1 et-0/0/1, nyc -> chi, capacity 10 Gbit/s. Samples at A, B, C, C+60 s:
 *   out_octets +1,000,000,000 and out_pkts +1,000,000 per window (nyc -> chi, sender side),
 *   in_octets +0 (chi -> nyc).
 *   observed_payload = 1,000,000,000 - 1,000,000 x 66 = 934,000,000 bytes per window.
 * Attributed nyc -> chi:
 *   A: alice's socket flow tx 900,000,000                        = 900,000,000
 *   B: alice tx 500,000,000; the dupedog transfer (120,000,000 over [B, C+60 s], 60,000,000 in
 *      each of B and C); a socket flow on dupedog's port 7100 (60,000,000) is left out
 *                                                                = 560,000,000
 *   C: one connection: nyc says tx 690,000,000, chi says rx 700,000,000 -> max = 700,000,000,
 *      credited to the client (alice); + 60,000,000 transfer     = 760,000,000
 * coverage = attributed / 934,000,000: A 0.963597 ok (>= 0.95), B 0.599572 red (< 0.80),
 *   C 0.813704 warn; unattributed A 34,000,000, B 374,000,000, C 174,000,000.
 * chi -> nyc: observed 0, alice's rx 1,000 bytes attributed -> idle. */
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
static int64_t A, B, C;

static char *socket_flow(const char *local, const char *remote, const char *role, long long tx,
                         long long rx, const char *user, const char *program)
{
    return fx_fmt("{\"source\":\"socket\",\"proto\":\"tcp\",\"local\":\"%s\",\"remote\":\"%s\","
                  "\"role\":\"%s\",\"tx_bytes\":%lld,\"rx_bytes\":%lld,\"user\":\"%s\","
                  "\"program\":\"%s\",\"workflow\":\"train-42\"}",
                  local, remote, role, tx, rx, user, program);
}

static void post_report(const char *host, const char *agent, int seq, int64_t ws, char *flows)
{
    fx_post_ok(
        &F, "/v1/attributions", FX_TOKEN_AGENT,
        fx_fmt(
            "{\"version\":1,\"host\":\"%s\",\"agent_id\":\"%s\",\"seq\":%d,\"window_start\":\"%s\","
            "\"window_seconds\":60,\"flows\":[%s]}",
            host, agent, seq, fx_ts(ws), flows));
    free(flows);
}

static void post_inputs(void)
{
    /* counters: 4 samples, cumulative */
    char *s = fx_fmt("{\"version\":1,\"poller\":\"p1\",\"samples\":[");
    for (int i = 0; i < 4; i++) {
        char *n =
            fx_fmt("%s%s{\"device\":\"nyc-border-1\",\"interface\":\"et-0/0/1\",\"at\":\"%s\","
                   "\"uptime_cs\":%d,\"in_octets\":5000,\"out_octets\":%lld,\"in_pkts\":50,"
                   "\"out_pkts\":%lld,\"counter_bits\":64}",
                   s, i ? "," : "", fx_ts(A + i * 60 * SEC), 100000 + i * 6000,
                   7000LL + i * 1000000000LL, 70LL + i * 1000000LL);
        free(s);
        s = n;
    }
    char *body = fx_fmt("%s]}", s);
    free(s);
    fx_post_ok(&F, "/v1/counters", FX_TOKEN_POLLER, body);

    post_report("nyc-gpu-17", "agent-nyc", 1, A,
                socket_flow("10.1.0.2:41522", "10.2.0.2:5201", "client", 900000000, 1000, "alice",
                            "python3"));
    char *f1 = socket_flow("10.1.0.2:41522", "10.2.0.2:5201", "client", 500000000, 1000, "alice",
                           "python3");
    char *f2 = socket_flow("10.1.0.50:7100", "10.2.0.9:40000", "server", 60000000, 0, "dupedog",
                           "dupedogd");
    post_report("nyc-gpu-17", "agent-nyc", 2, B, fx_fmt("%s,%s", f1, f2));
    free(f1);
    free(f2);
    post_report("nyc-gpu-17", "agent-nyc", 3, C,
                socket_flow("10.1.0.2:41522", "10.2.0.2:5201", "client", 690000000, 1000, "alice",
                            "python3"));
    post_report(
        "chi-gpu-1", "agent-chi", 1, C,
        socket_flow("10.2.0.2:5201", "10.1.0.2:41522", "server", 1000, 700000000, "svc", "iperf3"));
    fx_post_ok(&F, "/v1/transfers", FX_TOKEN_SERVICE,
               fx_fmt("{\"service\":\"dupedog\",\"id\":\"d-1\",\"requester\":\"carol\","
                      "\"workflow\":\"replicate\",\"src\":\"10.1.0.50\",\"dst\":\"10.2.0.9\","
                      "\"bytes\":120000000,\"start\":\"%s\",\"end\":\"%s\"}\n",
                      fx_ts(B), fx_ts(C + 60 * SEC)));
}

static const char *cell(const char *src, const char *dst, int64_t ws)
{
    char sql[512];
    snprintf(
        sql, sizeof(sql),
        "SELECT observed_bytes, observed_payload_bytes, attributed_bytes, socket_bytes,"
        " nfs_bytes, service_bytes, unattributed_bytes, round(coverage::numeric, 6), status"
        " FROM heatmap_cells WHERE src_site = '%s' AND dst_site = '%s' AND window_start = '%s'",
        src, dst, fx_ts(ws));
    return fx_row(&F, sql);
}

static void run_once(void)
{
    char *out = NULL;
    int rc = fx_run(&F, "reconcile --once", &out);
    fprintf(stderr, "%s", out);
    assert_int_equal(rc, 0);
    free(out);
}

static void test_reconcile_once(void **state)
{
    (void)state;
    post_inputs();
    assert_int_equal(fx_num(&F, "SELECT count(*) FROM heatmap_cells"), 0);
    run_once();
    assert_string_equal(cell("nyc", "chi", A),
                        "1000000000|934000000|900000000|900000000|0|0|34000000|0.963597|ok");
    assert_string_equal(
        cell("nyc", "chi", B),
        "1000000000|934000000|560000000|500000000|0|60000000|374000000|0.599572|red");
    assert_string_equal(
        cell("nyc", "chi", C),
        "1000000000|934000000|760000000|700000000|0|60000000|174000000|0.813704|warn");
    /* chi -> nyc: no counter bytes; alice's flow received 1,000 bytes (rx) -> attributed 1,000,
     * no coverage without observed payload, idle */
    assert_string_equal(cell("chi", "nyc", A), "0|0|1000|1000|0|0|0|NULL|idle");

    /* who: C's connection counted once, credited to alice on nyc-gpu-17 (the client) */
    char sql[512];
    snprintf(sql, sizeof(sql),
             "SELECT string_agg(source || ':' || workflow || ':' || user_name || ':' || program ||"
             " ':' || host || ':' || bytes, ',' ORDER BY source) FROM attribution_rollup"
             " WHERE src_site = 'nyc' AND dst_site = 'chi' AND window_start = '%s'",
             fx_ts(C));
    assert_string_equal(fx_row(&F, sql), "service:replicate:carol:dupedog::60000000,"
                                         "socket:train-42:alice:python3:nyc-gpu-17:700000000");
    /* nothing is left dirty among A..C */
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM window_state WHERE NOT dirty AND reconciled_at IS NOT NULL"
             " AND window_start IN ('%s','%s','%s')",
             fx_ts(A), fx_ts(B), fx_ts(C));
    assert_int_equal(fx_num(&F, sql), 3);
}

static void test_late_data_rereconciles(void **state)
{
    (void)state;
    /* late report for B: +400,000,000 -> 960,000,000 / 934,000,000 = 1.027837: ok (<= 1.05) */
    post_report(
        "nyc-gpu-17", "agent-nyc", 4, B,
        socket_flow("10.1.0.2:41600", "10.2.0.3:22", "client", 400000000, 0, "dave", "rsync"));
    char sql[256];
    snprintf(sql, sizeof(sql), "SELECT dirty FROM window_state WHERE window_start = '%s'",
             fx_ts(B));
    assert_string_equal(fx_row(&F, sql), "t");
    run_once();
    assert_string_equal(cell("nyc", "chi", B),
                        "1000000000|934000000|960000000|900000000|0|60000000|0|1.027837|ok");
    /* the other windows were not touched */
    assert_string_equal(cell("nyc", "chi", A),
                        "1000000000|934000000|900000000|900000000|0|0|34000000|0.963597|ok");
}

static void test_top_and_api(void **state)
{
    (void)state;
    /* over A..C: observed payload 3 x 934,000,000 = 2,802,000,000; alice 900+500+700 =
     * 2,100,000,000 (0.749465); dave 400,000,000 (0.142755); carol's transfer 120,000,000
     * (0.042827); unattributed 34,000,000 + 0 + 174,000,000 = 208,000,000 (0.074233) */
    char *args =
        fx_fmt("top --src nyc --dst chi --from %s --to %s --json", fx_ts(A), fx_ts(C + 60 * SEC));
    char *out = NULL;
    assert_int_equal(fx_run(&F, args, &out), 0);
    fprintf(stderr, "%s", out);
    assert_non_null(strstr(out, "\"windows\":3,\"incomplete_windows\":0,"
                                "\"observed_payload_bytes\":2802000000,"
                                "\"attributed_bytes\":2620000000,"
                                "\"unattributed_bytes\":208000000,"
                                "\"unattributed_share\":0.074233"));
    assert_non_null(strstr(out, "{\"source\":\"socket\",\"workflow\":\"train-42\",\"user\":"
                                "\"alice\",\"program\":\"python3\",\"bytes\":2100000000,"
                                "\"share\":0.749465}"));
    assert_non_null(strstr(out, "\"user\":\"dave\",\"program\":\"rsync\",\"bytes\":400000000,"
                                "\"share\":0.142755}"));
    assert_non_null(strstr(out, "{\"source\":\"service\",\"workflow\":\"replicate\",\"user\":"
                                "\"carol\",\"program\":\"dupedog\",\"bytes\":120000000,"
                                "\"share\":0.042827}"));
    free(out);
    free(args);
    /* the text form names what stays unattributed */
    args = fx_fmt("top --src nyc --dst chi --from %s --to %s", fx_ts(A), fx_ts(C + 60 * SEC));
    assert_int_equal(fx_run(&F, args, &out), 0);
    fprintf(stderr, "%s", out);
    assert_non_null(strstr(out, "(unattributed)"));
    assert_non_null(strstr(out, "208000000    7.4%"));
    free(out);
    free(args);

    /* an incomplete window D an hour before A, where nothing else is (a poll gap: 500,000,000 of
     * payload seen, erin's 900,000,000 attributed): counted, and left out of every figure, so the
     * totals and shares over D..C are A..C's; summed in, alice's share would read 2,100 / 3,302 =
     * 0.635978 */
    int64_t D = A - 3600 * SEC;
    char *sql;
    assert_string_equal(
        fx_row(&F,
               sql = fx_fmt("WITH c AS (INSERT INTO heatmap_cells (window_start, window_seconds, "
                            "src_site, dst_site, observed_bytes, observed_payload_bytes, "
                            "attributed_bytes, socket_bytes, nfs_bytes, service_bytes, "
                            "unattributed_bytes, status, valid_fraction) VALUES ('%s', 60, 'nyc', "
                            "'chi', 535000000, 500000000, 900000000, 900000000, 0, 0, 0, "
                            "'incomplete', 0.5) RETURNING 1), o AS (INSERT INTO attribution_rollup "
                            "(window_start, src_site, dst_site, source, workflow, user_name, "
                            "program, host, bytes) VALUES ('%s', 'nyc', 'chi', 'socket', "
                            "'wf-partial', 'erin', 'python3', 'nyc-gpu-9', 900000000) RETURNING 1) "
                            "SELECT (SELECT count(*) FROM c) + (SELECT count(*) FROM o)",
                            fx_ts(D), fx_ts(D))),
        "2");
    free(sql);
    args =
        fx_fmt("top --src nyc --dst chi --from %s --to %s --json", fx_ts(D), fx_ts(C + 60 * SEC));
    assert_int_equal(fx_run(&F, args, &out), 0);
    fprintf(stderr, "%s", out);
    /* every window of D..C counted (those without a reconciled neighbour are incomplete too) */
    sql = fx_fmt("SELECT '\"windows\":' || count(*) || ',\"incomplete_windows\":' || count(*) "
                 "FILTER (WHERE status = 'incomplete') || ',' FROM heatmap_cells WHERE src_site = "
                 "'nyc' AND dst_site = 'chi' AND window_start >= '%s' AND window_start < '%s'",
                 fx_ts(D), fx_ts(C + 60 * SEC));
    const char *counts = fx_row(&F, sql);
    free(sql);
    assert_non_null(strstr(out, counts));
    assert_null(strstr(out, "\"incomplete_windows\":0,"));
    assert_non_null(strstr(out, "\"observed_payload_bytes\":2802000000,"
                                "\"attributed_bytes\":2620000000,"
                                "\"unattributed_bytes\":208000000,"));
    assert_non_null(strstr(out, "\"bytes\":2100000000,\"share\":0.749465}"));
    assert_null(strstr(out, "wf-partial"));
    free(out);
    free(args);
    fx_row(&F, sql = fx_fmt("WITH c AS (DELETE FROM heatmap_cells WHERE window_start = '%s' "
                            "RETURNING 1), o AS (DELETE FROM attribution_packed WHERE "
                            "window_start = '%s' RETURNING 1) SELECT 1",
                            fx_ts(D), fx_ts(D)));
    free(sql);

    /* the same through GET /api/v1/top (reader token) */
    char *path = fx_fmt("/api/v1/top?src=nyc&dst=chi&from=%s&to=%s", fx_ts(A), fx_ts(C + 60 * SEC));
    char *resp = NULL;
    assert_int_equal(fx_http(&F, "GET", path, FX_TOKEN_READER, NULL, NULL, 0, &resp), 200);
    assert_non_null(strstr(resp, "\"observed_payload_bytes\":2802000000"));
    assert_non_null(strstr(resp, "\"bytes\":2100000000,\"share\":0.749465}"));
    free(resp);
    free(path);
    path = fx_fmt("/api/v1/top?src=nyc&dst=nowhere");
    assert_int_equal(fx_http(&F, "GET", path, FX_TOKEN_READER, NULL, NULL, 0, &resp), 400);
    assert_string_equal(resp, "{\"error\":\"expected a configured site name\",\"path\":\"dst\"}\n");
    free(resp);
    free(path);

    /* GET /api/v1/cells: the nyc -> chi cells of A..C, as stored */
    path = fx_fmt("/api/v1/cells?from=%s&to=%s&src=nyc&dst=chi", fx_ts(A), fx_ts(C + 60 * SEC));
    assert_int_equal(fx_http(&F, "GET", path, FX_TOKEN_READER, NULL, NULL, 0, &resp), 200);
    char *want = fx_fmt("{\"window_start\":\"%s\",\"window_seconds\":60,\"src_site\":\"nyc\","
                        "\"dst_site\":\"chi\",\"observed_bytes\":1000000000,"
                        "\"observed_payload_bytes\":934000000,\"attributed_bytes\":760000000,",
                        fx_ts(C));
    assert_non_null(strstr(resp, want));
    assert_non_null(strstr(resp, "\"status\":\"warn\""));
    assert_null(strstr(resp, "\"status\":\"red\"")); /* B is ok after the late data */
    free(want);
    free(resp);
    free(path);
}

static void test_pages_routed(void **state)
{
    (void)state;
    /* the heatmap page is the heatmap component's; the server authenticates and routes it */
    char *path = fx_fmt("/heatmap?from=%s&to=%s", fx_ts(A), fx_ts(C + 60 * SEC));
    char *resp = NULL;
    assert_int_equal(fx_http(&F, "GET", path, NULL, NULL, NULL, 0, &resp), 401);
    free(resp);
    assert_int_equal(fx_http(&F, "GET", path, FX_TOKEN_AGENT, NULL, NULL, 0, &resp), 403);
    free(resp);
    assert_int_equal(fx_http(&F, "GET", path, FX_TOKEN_READER, NULL, NULL, 0, &resp), 200);
    assert_non_null(strstr(resp, "data-src=\"nyc\" data-dst=\"chi\""));
    assert_non_null(strstr(resp, "data-status=\"warn\""));
    free(resp);
    free(path);
    path = fx_fmt("/heatmap/cell?src=nyc&dst=chi&window=%s", fx_ts(C));
    assert_int_equal(fx_http(&F, "GET", path, FX_TOKEN_READER, NULL, NULL, 0, &resp), 200);
    assert_non_null(strstr(resp, "data-status=\"warn\""));
    free(resp);
    free(path);
}

/* Kubernetes identity (sql/015_kube_owner.sql): a late report for A from a node whose two pods
 * of one workflow, user and program (alice/python3/train-42) send to osl (no circuit: shares
 * are of the attributed bytes). worker-0 tx 30,000,000, worker-1 tx 20,000,000 -> two rollup
 * rows; top: worker-0 30,000,000 / 50,000,000 = 0.6, worker-1 0.4; the cell page's pods table
 * names "ml/train-42-worker-0/trainer" with 30.0 MB. */
static char *pod_flow(const char *local, long long tx, const char *pod)
{
    return fx_fmt("{\"source\":\"socket\",\"proto\":\"tcp\",\"local\":\"%s\","
                  "\"remote\":\"10.3.0.5:443\",\"role\":\"client\",\"tx_bytes\":%lld,"
                  "\"rx_bytes\":0,\"user\":\"alice\",\"program\":\"python3\","
                  "\"workflow\":\"train-42\",\"namespace\":\"ml\",\"pod\":\"%s\","
                  "\"container_name\":\"trainer\"}",
                  local, tx, pod);
}

static void test_kube_owner_shown(void **state)
{
    (void)state;
    char *f1 = pod_flow("10.1.0.30:40000", 30000000, "train-42-worker-0");
    char *f2 = pod_flow("10.1.0.31:40001", 20000000, "train-42-worker-1");
    post_report("nyc-k8s-3", "agent-k8s", 1, A, fx_fmt("%s,%s", f1, f2));
    free(f1);
    free(f2);
    run_once();
    char sql[512];
    snprintf(sql, sizeof(sql),
             "SELECT string_agg(user_name || ':' || program || ':' || namespace || '/' || pod ||"
             " '/' || container_name || ':' || bytes, ',' ORDER BY pod) FROM attribution_rollup"
             " WHERE src_site = 'nyc' AND dst_site = 'osl' AND window_start = '%s'",
             fx_ts(A));
    assert_string_equal(fx_row(&F, sql), "alice:python3:ml/train-42-worker-0/trainer:30000000,"
                                         "alice:python3:ml/train-42-worker-1/trainer:20000000");
    /* the hourly rollup (sql/013 trigger, 015's owner) keeps the pods apart too, once the hour
     * is folded (sql/020; --once folds only hours that have ended) */
    snprintf(sql, sizeof(sql),
             "SELECT wl_fold_owner_hour(date_bin('1 hour', '%s'::timestamptz, timestamptz "
             "'epoch')) IS NOT NULL",
             fx_ts(A));
    assert_string_equal(fx_row(&F, sql), "t");
    assert_int_equal(fx_num(&F, "SELECT sum(bytes) FROM attribution_rollup_hourly WHERE"
                                " src_site = 'nyc' AND dst_site = 'osl' AND namespace = 'ml'"
                                " AND pod = 'train-42-worker-1' AND container_name = 'trainer'"),
                     20000000);
    /* rows outside pods keep '' */
    assert_int_equal(fx_num(&F, "SELECT count(*) FROM attribution_rollup WHERE src_site = 'nyc'"
                                " AND dst_site = 'chi' AND (namespace, pod, container_name) <>"
                                " ('', '', '')"),
                     0);

    char *path = fx_fmt("/api/v1/top?src=nyc&dst=osl&from=%s&to=%s", fx_ts(A), fx_ts(B));
    char *resp = NULL;
    assert_int_equal(fx_http(&F, "GET", path, FX_TOKEN_READER, NULL, NULL, 0, &resp), 200);
    assert_non_null(strstr(resp, "{\"source\":\"socket\",\"workflow\":\"train-42\",\"user\":"
                                 "\"alice\",\"program\":\"python3\",\"namespace\":\"ml\","
                                 "\"pod\":\"train-42-worker-0\",\"container\":\"trainer\","
                                 "\"bytes\":30000000,\"share\":0.600000}"));
    assert_non_null(strstr(resp, "\"pod\":\"train-42-worker-1\",\"container\":\"trainer\","
                                 "\"bytes\":20000000,\"share\":0.400000}"));
    free(resp);
    free(path);

    char *args = fx_fmt("top --src nyc --dst osl --from %s --to %s", fx_ts(A), fx_ts(B));
    char *out = NULL;
    assert_int_equal(fx_run(&F, args, &out), 0);
    fprintf(stderr, "%s", out);
    const char *row = strstr(out, "ml/train-42-worker-0/trainer");
    assert_non_null(row);
    assert_non_null(strstr(row, "30000000   60.0%"));
    free(out);
    free(args);

    path = fx_fmt("/heatmap/cell?src=nyc&dst=osl&window=%s", fx_ts(A));
    assert_int_equal(fx_http(&F, "GET", path, FX_TOKEN_READER, NULL, NULL, 0, &resp), 200);
    const char *pods = strstr(resp, "data-dimension=\"pod\"");
    assert_non_null(pods);
    const char *w0 = strstr(pods, "ml/train-42-worker-0/trainer");
    assert_non_null(w0);
    assert_non_null(strstr(w0, "30.0 MB"));
    free(resp);
    free(path);
}

int main(void)
{
    fx_setup(&F, "recon-flow", " \"tick_seconds\": 3600,");
    int64_t w = fx_window_ago(12, 60);
    A = w, B = w + 60 * SEC, C = w + 120 * SEC;
    /* the test's connection holds the leader lock (leader.c), so the server it starts stays a
     * follower: only `reconcile --once` reconciles here. A server that became leader late
     * reconciled the windows the first test had just posted before its --once ran */
    PGresult *lock = PQexec(F.db, "SELECT pg_advisory_lock(hashtext('wanledger.leader'))");
    if (PQresultStatus(lock) != PGRES_TUPLES_OK) {
        fprintf(stderr, "taking the leader lock: %s", PQerrorMessage(F.db));
        return 1;
    }
    PQclear(lock);
    fx_start(&F);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reconcile_once),   cmocka_unit_test(test_late_data_rereconciles),
        cmocka_unit_test(test_top_and_api),      cmocka_unit_test(test_pages_routed),
        cmocka_unit_test(test_kube_owner_shown),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    fx_stop(&F);
    return rc;
}
