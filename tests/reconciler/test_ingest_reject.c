/* Bad requests to the real `wanledger reconcile`: each kind is answered with the right 4xx, a
 * JSON {"error","path"} naming where, and NOTHING written (every raw table and window_state are
 * counted before and after each request). Then one good request per endpoint proves that the
 * counting would have seen a write. */
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

static struct fx F;

static const char *const COUNTS =
    "SELECT (SELECT count(*) FROM flow_reports) || ',' || (SELECT count(*) FROM flow_records)"
    " || ',' || (SELECT count(*) FROM counter_samples) || ',' || (SELECT count(*) FROM transfers)"
    " || ',' || (SELECT count(*) FROM window_state)";

struct bad {
    const char *name;
    const char *method, *path, *token, *headers;
    char *body; /* NULL: no body */
    int status;
    const char *json_path; /* expected "path" of the error, NULL: not checked */
};

/* strings nested inside a case's body, freed at the end */
static char *g_keep[8];
static size_t g_nkeep;
static char *keep(char *s)
{
    if (g_nkeep < sizeof(g_keep) / sizeof(g_keep[0]))
        g_keep[g_nkeep++] = s;
    return s;
}

/* A report of two socket flows; the second flow's members are given whole (F2 by default). */
#define F2         "\"local\":\"10.1.0.2:41523\",\"remote\":\"10.2.0.2:5201\",\"tx_bytes\":1,\"rx_bytes\":2"
#define F2_NO_TX   "\"local\":\"10.1.0.2:41523\",\"remote\":\"10.2.0.2:5201\",\"rx_bytes\":2"
#define F2_NO_RX   "\"local\":\"10.1.0.2:41523\",\"remote\":\"10.2.0.2:5201\",\"tx_bytes\":1"
#define F2_NO_ADDR "\"tx_bytes\":1,\"rx_bytes\":2"
static char *report(const char *top_extra, const char *ws, const char *flow2)
{
    return fx_fmt(
        "{%s\"host\":\"nyc-gpu-17\",\"agent_id\":\"a-1\",\"seq\":7,\"window_start\":\"%s\","
        "\"window_seconds\":60,\"flows\":[{\"source\":\"socket\",\"proto\":\"tcp\","
        "\"local\":\"10.1.0.2:41522\",\"remote\":\"10.2.0.2:5201\",\"role\":\"client\","
        "\"tx_bytes\":123,\"rx_bytes\":456,\"user\":\"alice\"},{\"source\":\"socket\","
        "\"proto\":\"tcp\",%s}]}",
        top_extra, ws, flow2);
}

static char *sample(const char *version, const char *at, const char *extra)
{
    return fx_fmt(
        "{\"version\":%s,\"poller\":\"p1\",\"samples\":[{\"device\":\"nyc-border-1\","
        "\"interface\":\"et-0/0/1\",\"at\":\"%s\",\"in_octets\":1000,\"out_octets\":2000%s}]}",
        version, at, extra);
}

static char *transfer(const char *extra_first, const char *second)
{
    return fx_fmt(
        "{\"service\":\"dupedog\",\"id\":\"x-1\",\"requester\":\"alice\",\"src\":\"10.1.0.50\","
        "\"dst\":\"chi\",\"bytes\":1000,\"start\":1764442380.5,\"end\":1764442390%s}\n%s",
        extra_first, second);
}

static void test_rejects(void **state)
{
    (void)state;
    int64_t w = fx_window_ago(3, 60);
    const char *ws = fx_ts(w);
    const char *unaligned = fx_ts(w + 30 * TM_USEC_PER_SEC);
    const char *future = fx_ts(fx_window_ago(-10, 60)); /* 10 windows ahead: beyond 120 s */
    const char *at = fx_ts(w + 7 * TM_USEC_PER_SEC);
    const char *V = "\"version\":1,";
    char *big = malloc(5001);
    memset(big, ' ', 5000);
    memcpy(big, "{\"version\":1", 12);
    big[4999] = '}';
    big[5000] = 0;
    char *bad_utf8 = report(V, ws, F2 ",\"program\":\"py\xC3\x28thon\"");
    char *raw_ctl = report(V, ws, F2 ",\"program\":\"a\tb\"");

    struct bad cases[] = {
        /* authentication: 401 for none or unknown, 403 for another role's token */
        {"no token", "POST", "/v1/attributions", NULL, NULL, report(V, ws, F2), 401,
         "Authorization"},
        {"unknown token", "POST", "/v1/attributions", "agent-token-0123456789abcdeX", NULL,
         report(V, ws, F2), 401, "Authorization"},
        {"poller token on attributions", "POST", "/v1/attributions", FX_TOKEN_POLLER, NULL,
         report(V, ws, F2), 403, "Authorization"},
        {"agent token on counters", "POST", "/v1/counters", FX_TOKEN_AGENT, NULL,
         sample("1", at, ""), 403, "Authorization"},
        {"reader token on transfers", "POST", "/v1/transfers", FX_TOKEN_READER, NULL,
         transfer("", ""), 403, "Authorization"},
        {"agent token on the read API", "GET", "/api/v1/cells", FX_TOKEN_AGENT, NULL, NULL, 403,
         "Authorization"},
        {"no token on the read API", "GET", "/api/v1/top?src=nyc&dst=chi", NULL, NULL, NULL, 401,
         "Authorization"},
        /* routing */
        {"unknown endpoint", "POST", "/v1/nothing", FX_TOKEN_AGENT, NULL, report(V, ws, F2), 404,
         "/v1/nothing"},
        {"GET on an ingest endpoint", "GET", "/v1/counters", FX_TOKEN_POLLER, NULL, NULL, 405,
         "/v1/counters"},
        {"plain body labelled gzip", "POST", "/v1/attributions", FX_TOKEN_AGENT,
         "Content-Encoding: gzip\r\n", report(V, ws, F2), 400, "$"},
        {"unknown Content-Encoding", "POST", "/v1/attributions", FX_TOKEN_AGENT,
         "Content-Encoding: br\r\n", report(V, ws, F2), 415, "Content-Encoding"},
        {"body over max_body_bytes", "POST", "/v1/attributions", FX_TOKEN_AGENT, NULL, big, 413,
         NULL},
        /* syntax: 400 */
        {"empty body", "POST", "/v1/attributions", FX_TOKEN_AGENT, NULL, fx_fmt("%s", ""), 400,
         "$"},
        {"truncated JSON", "POST", "/v1/attributions", FX_TOKEN_AGENT, NULL,
         fx_fmt("{\"version\":1,\"host\":\"h\",\"flows\":[{\"source\":\"socket\""), 400,
         "$.flows[0]"},
        {"invalid UTF-8", "POST", "/v1/attributions", FX_TOKEN_AGENT, NULL, bad_utf8, 400,
         "$.flows[1].program"},
        {"raw control character", "POST", "/v1/attributions", FX_TOKEN_AGENT, NULL, raw_ctl, 400,
         "$.flows[1].program"},
        {"lone surrogate escape", "POST", "/v1/attributions", FX_TOKEN_AGENT, NULL,
         report(V, ws, F2 ",\"user\":\"\\ud800x\""), 400, "$.flows[1].user"},
        {"trailing garbage", "POST", "/v1/counters", FX_TOKEN_POLLER, NULL,
         fx_fmt("%s}", keep(sample("1", at, ""))), 400, "$"},
        /* content: 422 */
        {"unknown version", "POST", "/v1/attributions", FX_TOKEN_AGENT, NULL,
         report("\"version\":2,", ws, F2), 422, "$.version"},
        {"missing version", "POST", "/v1/attributions", FX_TOKEN_AGENT, NULL, report("", ws, F2),
         422, "$.version"},
        {"version as a string", "POST", "/v1/counters", FX_TOKEN_POLLER, NULL,
         sample("\"1\"", at, ""), 422, "$.version"},
        {"top level is an array", "POST", "/v1/attributions", FX_TOKEN_AGENT, NULL, fx_fmt("[1,2]"),
         422, "$"},
        {"negative tx_bytes", "POST", "/v1/attributions", FX_TOKEN_AGENT, NULL,
         report(V, ws, F2_NO_TX ",\"tx_bytes\":-5"), 422, "$.flows[1].tx_bytes"},
        {"non-integer rx_bytes", "POST", "/v1/attributions", FX_TOKEN_AGENT, NULL,
         report(V, ws, F2_NO_RX ",\"rx_bytes\":1.5"), 422, "$.flows[1].rx_bytes"},
        {"tx_bytes as a string", "POST", "/v1/attributions", FX_TOKEN_AGENT, NULL,
         report(V, ws, F2_NO_TX ",\"tx_bytes\":\"123\""), 422, "$.flows[1].tx_bytes"},
        /* 400 Gbit/s x 60 s / 8 = 3,000,000,000,000 bytes is the most one flow may claim */
        {"tx_bytes beyond 400 Gbit/s x window", "POST", "/v1/attributions", FX_TOKEN_AGENT, NULL,
         report(V, ws, F2_NO_TX ",\"tx_bytes\":3000000000001"), 422, "$.flows[1].tx_bytes"},
        {"address that does not parse", "POST", "/v1/attributions", FX_TOKEN_AGENT, NULL,
         report(V, ws, F2_NO_ADDR ",\"local\":\"10.1.0.300:41522\",\"remote\":\"10.2.0.2:5201\""),
         422, "$.flows[1].local"},
        {"socket address without a port", "POST", "/v1/attributions", FX_TOKEN_AGENT, NULL,
         report(V, ws, F2_NO_ADDR ",\"local\":\"10.1.0.2:1\",\"remote\":\"10.2.0.2\""), 422,
         "$.flows[1].remote"},
        {"unknown flow source", "POST", "/v1/attributions", FX_TOKEN_AGENT, NULL,
         fx_fmt(
             "{\"version\":1,\"host\":\"h\",\"agent_id\":\"a\",\"seq\":1,\"window_start\":\"%s\","
             "\"flows\":[{\"source\":\"ebpf\",\"bytes\":1}]}",
             ws),
         422, "$.flows[0].source"},
        {"duplicate key", "POST", "/v1/attributions", FX_TOKEN_AGENT, NULL,
         report(V, ws, F2 ",\"tx_bytes\":9"), 422, "$.flows[1].tx_bytes"},
        /* duplicates anywhere, not only in flows (common/jsonv.c refuses them all) */
        {"duplicate seq at the top", "POST", "/v1/attributions", FX_TOKEN_AGENT, NULL,
         report("\"version\":1,\"seq\":8,", ws, F2), 422, "$.seq"},
        {"duplicate member in sampling", "POST", "/v1/attributions", FX_TOKEN_AGENT, NULL,
         report("\"version\":1,\"sampling\":{\"k\":1,\"k\":2},", ws, F2), 422, "$.sampling.k"},
        {"duplicate out_octets in a sample", "POST", "/v1/counters", FX_TOKEN_POLLER, NULL,
         sample("1", at, ",\"out_octets\":1"), 422, "$.samples[0].out_octets"},
        {"duplicate bytes in a transfer", "POST", "/v1/transfers", FX_TOKEN_SERVICE, NULL,
         transfer(",\"bytes\":2", ""), 422, "$[0].bytes"},
        {"U+0000 in a key", "POST", "/v1/counters", FX_TOKEN_POLLER, NULL,
         sample("1", at, ",\"x\\u0000\":1"), 422, "$.samples[0]"},
        {"exponent beyond a double", "POST", "/v1/counters", FX_TOKEN_POLLER, NULL,
         sample("1", at, ",\"speed_bps\":1e999"), 422, "$.samples[0].speed_bps"},
        {"U+0000 in a name", "POST", "/v1/attributions", FX_TOKEN_AGENT, NULL,
         report(V, ws, F2 ",\"user\":\"a\\u0000b\""), 422, "$.flows[1].user"},
        {"window_start not aligned", "POST", "/v1/attributions", FX_TOKEN_AGENT, NULL,
         report(V, unaligned, F2), 422, "$.window_start"},
        {"window_start too far ahead", "POST", "/v1/attributions", FX_TOKEN_AGENT, NULL,
         report(V, future, F2), 422, "$.window_start"},
        {"window_seconds differs", "POST", "/v1/attributions", FX_TOKEN_AGENT, NULL,
         fx_fmt(
             "{\"version\":1,\"host\":\"h\",\"agent_id\":\"a\",\"seq\":1,\"window_start\":\"%s\","
             "\"window_seconds\":30,\"flows\":[]}",
             ws),
         422, "$.window_seconds"},
        {"missing flows", "POST", "/v1/attributions", FX_TOKEN_AGENT, NULL,
         fx_fmt(
             "{\"version\":1,\"host\":\"h\",\"agent_id\":\"a\",\"seq\":1,\"window_start\":\"%s\"}",
             ws),
         422, "$.flows"},
        {"missing host", "POST", "/v1/attributions", FX_TOKEN_AGENT, NULL,
         fx_fmt("{\"version\":1,\"agent_id\":\"a\",\"seq\":1,\"window_start\":\"%s\",\"flows\":[]}",
                ws),
         422, "$.host"},
        {"negative seq", "POST", "/v1/attributions", FX_TOKEN_AGENT, NULL,
         fx_fmt(
             "{\"version\":1,\"host\":\"h\",\"agent_id\":\"a\",\"seq\":-1,\"window_start\":\"%s\","
             "\"flows\":[]}",
             ws),
         422, "$.seq"},
        {"nfs op unknown", "POST", "/v1/attributions", FX_TOKEN_AGENT, NULL,
         fx_fmt(
             "{\"version\":1,\"host\":\"h\",\"agent_id\":\"a\",\"seq\":1,\"window_start\":\"%s\","
             "\"flows\":[{\"source\":\"nfs\",\"server\":\"10.1.0.50:2049\",\"op\":\"mkdir\","
             "\"bytes\":1}]}",
             ws),
         422, "$.flows[0].op"},
        {"nfs client address not an address", "POST", "/v1/attributions", FX_TOKEN_AGENT, NULL,
         fx_fmt(
             "{\"version\":1,\"host\":\"h\",\"agent_id\":\"a\",\"seq\":1,\"window_start\":\"%s\","
             "\"flows\":[{\"source\":\"nfs\",\"server\":\"10.1.0.50:2049\",\"op\":\"read\","
             "\"bytes\":1,\"local\":\"nyc-gpu-17\"}]}",
             ws),
         422, "$.flows[0].local"},
        {"negative counter", "POST", "/v1/counters", FX_TOKEN_POLLER, NULL,
         sample("1", at, ",\"in_pkts\":-1"), 422, "$.samples[0].in_pkts"},
        {"32-bit counter beyond 2^32-1", "POST", "/v1/counters", FX_TOKEN_POLLER, NULL,
         fx_fmt(
             "{\"version\":1,\"poller\":\"p1\",\"samples\":[{\"device\":\"d\",\"interface\":\"i\","
             "\"at\":\"%s\",\"counter_bits\":32,\"in_octets\":4294967296}]}",
             at),
         422, "$.samples[0].in_octets"},
        {"counter beyond 2^64-1", "POST", "/v1/counters", FX_TOKEN_POLLER, NULL,
         sample("1", at, ",\"out_pkts\":18446744073709551616"), 422, "$.samples[0].out_pkts"},
        {"sample time not a time", "POST", "/v1/counters", FX_TOKEN_POLLER, NULL,
         sample("1", "yesterday", ""), 422, "$.samples[0].at"},
        {"sample in the future", "POST", "/v1/counters", FX_TOKEN_POLLER, NULL,
         sample("1", future, ""), 422, "$.samples[0].at"},
        {"transfer ends before it starts", "POST", "/v1/transfers", FX_TOKEN_SERVICE, NULL,
         fx_fmt("{\"service\":\"s\",\"id\":\"1\",\"src\":\"nyc\",\"dst\":\"chi\",\"bytes\":1,"
                "\"start\":\"%s\",\"end\":\"%s\"}",
                at, ws),
         200, "$[0].end"},
        {"transfer place unknown", "POST", "/v1/transfers", FX_TOKEN_SERVICE, NULL,
         fx_fmt("{\"service\":\"dupedog\",\"id\":\"x-1\",\"src\":\"atlantis\","
                "\"dst\":\"chi\",\"bytes\":1,\"start\":\"%s\",\"end\":\"%s\"}",
                ws, at),
         200, "$[0].src"},
        {"transfer bytes non-integer", "POST", "/v1/transfers", FX_TOKEN_SERVICE, NULL,
         fx_fmt("{\"service\":\"s\",\"id\":\"1\",\"src\":\"nyc\",\"dst\":\"chi\",\"bytes\":2.5,"
                "\"start\":\"%s\",\"end\":\"%s\"}",
                ws, at),
         200, "$[0].bytes"},
        {"second NDJSON record truncated", "POST", "/v1/transfers", FX_TOKEN_SERVICE, NULL,
         transfer("", "{\"service\":\"dupedog\",\"id\":\"x-2\",\"by"), 400, "$[1]"},
        /* one invalid record among valid ones: the valid ones are stored (200): test_shippers
         * (fixtures/shippers/fb-mixed-batch.txt). A record alone that is invalid gets 200 with
         * "rejected":1 and its path (the quarantine, not the raw tables, holds it). */
        {"transfers array with a non-object", "POST", "/v1/transfers", FX_TOKEN_SERVICE, NULL,
         fx_fmt("[42]"), 200, "$[0]"},
        {"empty transfer stream", "POST", "/v1/transfers", FX_TOKEN_SERVICE, NULL, fx_fmt("\n"),
         422, "$"},
    };
    size_t n = sizeof(cases) / sizeof(cases[0]);
    assert_true(n >= 20);
    char before[256];
    snprintf(before, sizeof(before), "%s", fx_row(&F, COUNTS));
    assert_string_equal(before, "0,0,0,0,0");
    for (size_t i = 0; i < n; i++) {
        struct bad *c = &cases[i];
        char *resp = NULL;
        int st = fx_http(&F, c->method, c->path, c->token, c->headers, c->body,
                         c->body ? strlen(c->body) : 0, &resp);
        fprintf(stderr, "case %2zu %-40s -> %d %s", i, c->name, st, resp ? resp : "\n");
        assert_int_equal(st, c->status);
        if (c->json_path) {
            char want[300];
            snprintf(want, sizeof(want), "\"path\":\"%s\"", c->json_path);
            assert_non_null(strstr(resp, "\"error\":\""));
            assert_non_null(strstr(resp, want));
        }
        assert_string_equal(fx_row(&F, COUNTS), before);
        free(resp);
        free(c->body);
    }

    /* the same counts do move for good requests: one of each */
    char *good_r = report(V, ws, F2);
    char *good_c = sample("1", at, "");
    char *good_t = transfer("", "");
    assert_int_equal(
        fx_http(&F, "POST", "/v1/attributions", FX_TOKEN_AGENT, NULL, good_r, strlen(good_r), NULL),
        200);
    assert_int_equal(
        fx_http(&F, "POST", "/v1/counters", FX_TOKEN_POLLER, NULL, good_c, strlen(good_c), NULL),
        200);
    assert_int_equal(
        fx_http(&F, "POST", "/v1/transfers", FX_TOKEN_SERVICE, NULL, good_t, strlen(good_t), NULL),
        200);
    /* 1 report with 2 flows, 1 sample, 1 transfer. Windows marked dirty: the report's (w); the
     * sample at w+7 s has no stored neighbour, so no interval ends or starts at it: only its own
     * window w; the 10 s transfer of 2025-11-29T18:53 one more. {w, 18:53} = 2 rows. */
    assert_string_equal(fx_row(&F, COUNTS), "1,2,1,1,2");
    assert_true(fx_num(&F, "SELECT count(*) FROM window_state WHERE dirty") >= 1);
    /* a second sample of the interface at w+127 s closes the interval (w+7, w+127]: it touches
     * windows w, w+60 and w+120 -> two new rows (w+60, w+120), nothing beyond */
    char *next_c = sample("1", fx_ts(w + 127 * TM_USEC_PER_SEC), "");
    assert_int_equal(
        fx_http(&F, "POST", "/v1/counters", FX_TOKEN_POLLER, NULL, next_c, strlen(next_c), NULL),
        200);
    assert_string_equal(fx_row(&F, COUNTS), "1,2,2,1,4");
    char *marked = fx_fmt("SELECT count(*) FROM window_state WHERE window_start IN ('%s', '%s')",
                          fx_ts(w + 60 * TM_USEC_PER_SEC), fx_ts(w + 120 * TM_USEC_PER_SEC));
    assert_int_equal(fx_num(&F, marked), 2);
    free(marked);
    free(next_c);
    free(good_r);
    free(good_c);
    free(good_t);
    for (size_t i = 0; i < g_nkeep; i++)
        free(g_keep[i]);
}

int main(void)
{
    /* tick once an hour: the reconcile loop must not touch window_state during the test */
    fx_setup(&F, "recon-reject",
             " \"tick_seconds\": 3600, \"limits\": {\"max_body_bytes\": 4096},");
    fx_start(&F);
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_rejects)};
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    fx_stop(&F);
    return rc;
}
