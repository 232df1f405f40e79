/* Every resend is stored once, against the real `wanledger reconcile` and PostgreSQL: an agent
 * report (agent_id + seq), poller samples (device, interface, at) and transfer records (service,
 * id) sent twice, in every framing /v1/transfers accepts (JSON array, NDJSON with and without a
 * final newline, concatenated objects, Fluent Bit's `date` key). Stored values are read back and
 * compared with the request, and the windows marked for reconciliation are checked. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "fixture.h"
#include "harness.h"
#include "timeutil.h"

static struct fx F;
static int64_t W; /* a past window, 5 windows ago */

/* POSTs and returns the response body (caller frees); asserts 200. */
static char *post_ok(const char *path, const char *token, const char *body)
{
    char *resp = NULL;
    int st = fx_http(&F, "POST", path, token, NULL, body, strlen(body), &resp);
    fprintf(stderr, "POST %s -> %d %s", path, st, resp ? resp : "\n");
    assert_int_equal(st, 200);
    return resp;
}

static void expect_post(const char *path, const char *token, const char *body, const char *want)
{
    char *resp = post_ok(path, token, body);
    assert_string_equal(resp, want);
    free(resp);
}

static void test_report_resend(void **state)
{
    (void)state;
    char *rep = fx_fmt(
        "{\"version\":1,\"host\":\"nyc-gpu-17\",\"agent_id\":\"agent-a\",\"seq\":1832,"
        "\"window_start\":\"%s\",\"window_seconds\":60,\"dropped_events\":3,"
        "\"sampling\":{\"k\":1000,\"threshold\":0,\"flows_seen\":3},\"flows\":["
        "{\"source\":\"socket\",\"proto\":\"tcp\",\"local\":\"10.1.0.2:41522\","
        "\"remote\":\"10.2.0.2:5201\",\"role\":\"client\",\"tx_bytes\":123456789012,"
        "\"rx_bytes\":456,\"pid\":4307,\"uid\":1000,\"user\":\"alice\",\"program\":\"python3\","
        "\"workflow\":\"train-42\",\"container\":\"c0ffee\"},"
        "{\"source\":\"nfs\",\"server\":\"10.1.0.50:2049\",\"export\":\"/data\",\"op\":\"read\","
        "\"bytes\":1048576,\"ops\":1,\"pid\":4308,\"user\":\"bob\",\"program\":\"cp\","
        "\"workflow\":\"etl\"},"
        "{\"source\":\"socket\",\"proto\":\"udp\",\"local\":\"[fd00:1::2]:9000\","
        "\"remote\":\"[fd00:2::2]:9001\",\"tx_bytes\":0,\"rx_bytes\":77,\"user\":null}]}",
        fx_ts(W));
    expect_post("/v1/attributions", FX_TOKEN_AGENT, rep,
                "{\"received\":3,\"stored\":3,\"duplicate\":0}\n");
    /* the same report again, e.g. from the agent's spool after a lost answer */
    expect_post("/v1/attributions", FX_TOKEN_AGENT, rep,
                "{\"received\":3,\"stored\":0,\"duplicate\":3}\n");
    assert_int_equal(fx_num(&F, "SELECT count(*) FROM flow_reports"), 1);
    assert_int_equal(fx_num(&F, "SELECT count(*) FROM flow_records"), 3);
    assert_string_equal(fx_row(&F, "SELECT host, dropped_events, sampling_k, flows_seen, n_flows"
                                   " FROM flow_reports WHERE agent_id = 'agent-a' AND seq = 1832"),
                        "nyc-gpu-17|3|1000|3|3");
    assert_string_equal(
        fx_row(&F, "SELECT source, proto, host(local_addr), local_port, host(remote_addr),"
                   " remote_port, role, tx_bytes, rx_bytes, pid, uid, user_name, program, workflow,"
                   " container FROM flow_records WHERE idx = 0"),
        "socket|tcp|10.1.0.2|41522|10.2.0.2|5201|client|123456789012|456|4307|1000|alice|python3|"
        "train-42|c0ffee");
    assert_string_equal(fx_row(&F,
                               "SELECT source, host(nfs_server), nfs_port, nfs_export, nfs_op,"
                               " nfs_bytes, nfs_ops, user_name FROM flow_records WHERE idx = 1"),
                        "nfs|10.1.0.50|2049|/data|read|1048576|1|bob");
    assert_string_equal(fx_row(&F, "SELECT proto, host(local_addr), host(remote_addr), rx_bytes,"
                                   " role, user_name FROM flow_records WHERE idx = 2"),
                        "udp|fd00:1::2|fd00:2::2|77|NULL|NULL");
    /* the next report of the same agent is new */
    char *rep2 =
        fx_fmt("{\"version\":1,\"host\":\"nyc-gpu-17\",\"agent_id\":\"agent-a\",\"seq\":1833,"
               "\"window_start\":\"%s\",\"flows\":[]}",
               fx_ts(W + 60 * TM_USEC_PER_SEC));
    expect_post("/v1/attributions", FX_TOKEN_AGENT, rep2,
                "{\"received\":0,\"stored\":0,\"duplicate\":0}\n");
    assert_int_equal(fx_num(&F, "SELECT count(*) FROM flow_reports"), 2);
    /* both report windows are marked for reconciliation (the loop's first pass, once this
     * reconciler becomes the leader, may already have reconciled them: marked = a row whose last
     * data is not older than its reconciliation) */
    char sql[512];
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM window_state WHERE (dirty OR reconciled_at >= last_data_at)"
             " AND window_start IN ('%s', '%s')",
             fx_ts(W), fx_ts(W + 60 * TM_USEC_PER_SEC));
    assert_int_equal(fx_num(&F, sql), 2);
    free(rep);
    free(rep2);
}

static void test_counter_resend(void **state)
{
    (void)state;
    const char *t0 = fx_ts(W + 10 * TM_USEC_PER_SEC), *t1 = fx_ts(W + 40 * TM_USEC_PER_SEC);
    char *batch = fx_fmt(
        "{\"version\":1,\"poller\":\"p1\",\"samples\":["
        "{\"device\":\"nyc-border-1\",\"interface\":\"et-0/0/1\",\"at\":\"%s\",\"uptime_cs\":100,"
        "\"in_octets\":18446744073709551615,\"out_octets\":1,\"in_pkts\":5,\"out_pkts\":6,"
        "\"speed_bps\":100000000000,\"counter_bits\":64,\"discontinuity_cs\":0},"
        "{\"device\":\"nyc-border-1\",\"interface\":\"et-0/0/1\",\"at\":\"%s\",\"uptime_cs\":3100,"
        "\"in_octets\":10,\"out_octets\":2},"
        "{\"device\":\"nyc-border-1\",\"interface\":\"et-0/0/2\",\"at\":\"%s\","
        "\"counter_bits\":32,\"in_octets\":4294967295}]}",
        t0, t1, t0);
    expect_post("/v1/counters", FX_TOKEN_POLLER, batch,
                "{\"received\":3,\"stored\":3,\"duplicate\":0}\n");
    expect_post("/v1/counters", FX_TOKEN_POLLER, batch,
                "{\"received\":3,\"stored\":0,\"duplicate\":3}\n");
    /* one old sample and one new */
    char *mixed = fx_fmt("{\"version\":1,\"poller\":\"p2\",\"samples\":["
                         "{\"device\":\"nyc-border-1\",\"interface\":\"et-0/0/1\",\"at\":\"%s\","
                         "\"in_octets\":10,\"out_octets\":2},"
                         "{\"device\":\"nyc-border-1\",\"interface\":\"et-0/0/1\",\"at\":\"%s\","
                         "\"in_octets\":20,\"out_octets\":3}]}",
                         t1, fx_ts(W + 70 * TM_USEC_PER_SEC));
    expect_post("/v1/counters", FX_TOKEN_POLLER, mixed,
                "{\"received\":2,\"stored\":1,\"duplicate\":1}\n");
    assert_int_equal(fx_num(&F, "SELECT count(*) FROM counter_samples"), 4);
    char sql[512];
    snprintf(sql, sizeof(sql),
             "SELECT poller, uptime_cs, in_octets, out_octets, in_pkts, out_pkts, speed_bps,"
             " counter_bits, discontinuity_cs FROM counter_samples WHERE interface = 'et-0/0/1'"
             " AND at = '%s'",
             t0);
    assert_string_equal(fx_row(&F, sql), "p1|100|18446744073709551615|1|5|6|100000000000|64|0");
    assert_string_equal(fx_row(&F, "SELECT counter_bits, in_octets, out_octets, uptime_cs"
                                   " FROM counter_samples WHERE interface = 'et-0/0/2'"),
                        "32|4294967295|NULL|NULL");
    free(batch);
    free(mixed);
}

static void test_transfer_framings(void **state)
{
    (void)state;
    /* W .. W+150 s spans three windows: W, W+60, W+120 */
    const char *s0 = fx_ts(W), *e0 = fx_ts(W + 150 * TM_USEC_PER_SEC);
    double s1 = (double)W / 1e6 + 0.5, e1 = (double)W / 1e6 + 20.25;
    char *array = fx_fmt("[{\"service\":\"dupedog\",\"id\":\"x-1\",\"requester\":\"alice\","
                         "\"workflow\":\"train-42\",\"src\":\"10.1.0.50\",\"dst\":\"10.2.0.9\","
                         "\"bytes\":3000000000,\"start\":\"%s\",\"end\":\"%s\"},"
                         " {\"service\":\"dupedog\",\"id\":\"x-2\",\"src\":\"nyc\",\"dst\":\"chi\","
                         "\"bytes\":10,\"start\":%.2f,\"end\":%.2f}]",
                         s0, e0, s1, e1);
    expect_post("/v1/transfers", FX_TOKEN_SERVICE, array,
                "{\"received\":2,\"stored\":2,\"duplicate\":0,\"rejected\":0,"
                "\"errors_listed\":0,\"errors\":[]}\n");
    expect_post("/v1/transfers", FX_TOKEN_SERVICE, array,
                "{\"received\":2,\"stored\":0,\"duplicate\":2,\"rejected\":0,"
                "\"errors_listed\":0,\"errors\":[]}\n");
    /* NDJSON with a final newline: x-2 again, x-3 new */
    char *nd = fx_fmt("{\"service\":\"dupedog\",\"id\":\"x-2\",\"src\":\"nyc\",\"dst\":\"chi\","
                      "\"bytes\":10,\"start\":%.2f,\"end\":%.2f}\n"
                      "{\"service\":\"dupedog\",\"id\":\"x-3\",\"src\":\"nyc\",\"dst\":\"chi\","
                      "\"bytes\":11,\"start\":\"%s\",\"end\":\"%s\"}\n",
                      s1, e1, s0, s0);
    expect_post("/v1/transfers", FX_TOKEN_SERVICE, nd,
                "{\"received\":2,\"stored\":1,\"duplicate\":1,\"rejected\":0,"
                "\"errors_listed\":0,\"errors\":[]}\n");
    /* the same without the final newline, and CRLF line ends */
    char *nd2 = fx_fmt("{\"service\":\"dupedog\",\"id\":\"x-3\",\"src\":\"nyc\",\"dst\":\"chi\","
                       "\"bytes\":11,\"start\":\"%s\",\"end\":\"%s\"}\r\n"
                       "{\"service\":\"dupedog\",\"id\":\"x-4\",\"src\":\"nyc\",\"dst\":\"chi\","
                       "\"bytes\":12,\"start\":\"%s\",\"end\":\"%s\"}",
                       s0, s0, s0, s0);
    expect_post("/v1/transfers", FX_TOKEN_SERVICE, nd2,
                "{\"received\":2,\"stored\":1,\"duplicate\":1,\"rejected\":0,"
                "\"errors_listed\":0,\"errors\":[]}\n");
    /* concatenated objects (Fluent Bit json_stream), with Fluent Bit's `date` standing in for a
     * missing end, and a numeric id */
    char *cat =
        fx_fmt("{\"date\":%.3f,\"service\":\"rsyncd\",\"id\":\"r-9\",\"src\":\"10.1.0.7\","
               "\"dst\":\"10.3.0.7\",\"bytes\":99,\"start\":%.2f}{\"service\":\"rsyncd\","
               "\"id\":77,\"src\":\"fd00:1::7\",\"dst\":\"osl\",\"bytes\":5,\"start\":\"%s\","
               "\"end\":\"%s\"}",
               e1, s1, s0, s0);
    expect_post("/v1/transfers", FX_TOKEN_SERVICE, cat,
                "{\"received\":2,\"stored\":2,\"duplicate\":0,\"rejected\":0,"
                "\"errors_listed\":0,\"errors\":[]}\n");
    expect_post("/v1/transfers", FX_TOKEN_SERVICE, cat,
                "{\"received\":2,\"stored\":0,\"duplicate\":2,\"rejected\":0,"
                "\"errors_listed\":0,\"errors\":[]}\n");
    /* x-1, x-2, x-3, x-4, r-9, 77 */
    assert_int_equal(fx_num(&F, "SELECT count(*) FROM transfers"), 6);
    assert_string_equal(fx_row(&F, "SELECT requester, workflow, src, dst, bytes,"
                                   " extract(epoch FROM end_at - start_at) FROM transfers"
                                   " WHERE id = 'x-1'"),
                        "alice|train-42|10.1.0.50|10.2.0.9|3000000000|150.000000");
    /* float epoch seconds keep their fraction: 20.25 - 0.5 = 19.75 s */
    assert_string_equal(fx_row(&F, "SELECT extract(epoch FROM end_at - start_at) FROM transfers"
                                   " WHERE id = 'r-9'"),
                        "19.750000");
    assert_string_equal(fx_row(&F, "SELECT service, src, dst FROM transfers WHERE id = '77'"),
                        "rsyncd|fd00:1::7|osl");
    /* x-1 spans W .. W+150 s: the windows W, W+60 and W+120 are all marked (as above) */
    char sql[512];
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM window_state WHERE (dirty OR reconciled_at >= last_data_at)"
             " AND window_start IN ('%s','%s','%s')",
             fx_ts(W), fx_ts(W + 60 * TM_USEC_PER_SEC), fx_ts(W + 120 * TM_USEC_PER_SEC));
    assert_int_equal(fx_num(&F, sql), 3);
    free(array);
    free(nd);
    free(nd2);
    free(cat);
}

/* A client that hangs up before the answer: the batch still commits (the answer is lost, the
 * resend will be a duplicate), and the server is unharmed. */
static void test_client_gone(void **state)
{
    (void)state;
    char *rep = fx_fmt("{\"version\":1,\"host\":\"h\",\"agent_id\":\"agent-gone\",\"seq\":1,"
                       "\"window_start\":\"%s\",\"flows\":[{\"source\":\"nfs\","
                       "\"server\":\"10.1.0.50\",\"op\":\"write\",\"bytes\":5}]}",
                       fx_ts(W));
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)F.port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    char head[512];
    int hn = snprintf(head, sizeof(head),
                      "POST /v1/attributions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                      "Content-Length: %zu\r\n\r\n",
                      FX_TOKEN_AGENT, strlen(rep));
    assert_int_equal(send(fd, head, (size_t)hn, 0), hn);
    assert_int_equal(send(fd, rep, strlen(rep), 0), (ssize_t)strlen(rep));
    close(fd);
    /* wait for the commit, then the resend is a duplicate */
    for (int i = 0; i < 100 && fx_num(&F, "SELECT count(*) FROM flow_reports WHERE agent_id ="
                                          " 'agent-gone'") == 0;
         i++)
        usleep(50000);
    assert_int_equal(fx_num(&F, "SELECT count(*) FROM flow_reports WHERE agent_id = 'agent-gone'"),
                     1);
    expect_post("/v1/attributions", FX_TOKEN_AGENT, rep,
                "{\"received\":1,\"stored\":0,\"duplicate\":1}\n");
    assert_string_equal(fx_row(&F, "SELECT nfs_server, nfs_port, nfs_op, nfs_bytes FROM"
                                   " flow_records WHERE agent_id = 'agent-gone'"),
                        "10.1.0.50|2049|write|5");
    free(rep);
}

static void test_metrics_count_rows(void **state)
{
    (void)state;
    char *resp = NULL;
    assert_int_equal(fx_http(&F, "GET", "/metrics", NULL, NULL, NULL, 0, &resp), 200);
    /* rows received by the tests above: attributions 3+3+0+1+1, counters 3+3+2, transfers
     * 2+2+2+2+2+2; stored 3+1, 4, 6 */
    assert_non_null(strstr(resp, "wanledger_ingest_rows_total{endpoint=\"attributions\"} 8\n"));
    assert_non_null(strstr(resp, "wanledger_ingest_rows_total{endpoint=\"counters\"} 8\n"));
    assert_non_null(strstr(resp, "wanledger_ingest_rows_total{endpoint=\"transfers\"} 12\n"));
    assert_non_null(
        strstr(resp, "wanledger_ingest_rows_stored_total{endpoint=\"attributions\"} 4\n"));
    assert_non_null(strstr(resp, "wanledger_ingest_rows_stored_total{endpoint=\"counters\"} 4\n"));
    assert_non_null(strstr(resp, "wanledger_ingest_rows_stored_total{endpoint=\"transfers\"} 6\n"));
    assert_non_null(
        strstr(resp, "wanledger_http_requests_total{endpoint=\"transfers\",code=\"200\"} 6\n"));
    free(resp);
    assert_int_equal(fx_http(&F, "GET", "/healthz", NULL, NULL, NULL, 0, &resp), 200);
    assert_string_equal(resp, "{\"status\":\"ok\"}\n");
    free(resp);
    /* open_on_loopback: the pages need no token from 127.0.0.1, the API still does */
    assert_int_equal(fx_http(&F, "GET", "/heatmap", NULL, NULL, NULL, 0, &resp), 200);
    assert_non_null(strstr(resp, "<svg"));
    free(resp);
    assert_int_equal(fx_http(&F, "GET", "/api/v1/cells", NULL, NULL, NULL, 0, &resp), 401);
    free(resp);
}

int main(void)
{
    fx_setup(&F, "recon-resend", " \"tick_seconds\": 3600, \"open_on_loopback\": true,");
    W = fx_window_ago(5, 60);
    fx_start(&F);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_report_resend),      cmocka_unit_test(test_counter_resend),
        cmocka_unit_test(test_transfer_framings),  cmocka_unit_test(test_client_gone),
        cmocka_unit_test(test_metrics_count_rows),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    fx_stop(&F);
    return rc;
}
