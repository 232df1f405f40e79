/* Compressed request bodies through the real `wanledger reconcile` and PostgreSQL: a report and a
 * transfer batch compressed by the real `gzip` and `zstd` tools and by Python's zlib (the zlib
 * format and raw deflate, both sent as `deflate`) are stored exactly as their plain forms; a body
 * that decodes past `max_body_bytes` gets 413 with the JSON error (one byte over the bound, and a
 * 64 MiB bomb of a few KiB), an unknown coding 415 naming it, a corrupt stream 400; nothing is
 * stored by any of those. Prints the compression ratio of each coding on the fixtures. */
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

#define LIMIT 65536 /* the test's limits.max_body_bytes */

static struct fx F;

#define COUNTS                                                                                     \
    "SELECT (SELECT count(*) FROM flow_reports) || ',' || (SELECT count(*) FROM flow_records)"     \
    " || ',' || (SELECT count(*) FROM transfers)"

/* Runs `sh -c cmd` with in[0..len) on its stdin (through a file) and returns its stdout. */
static char *filter(const char *cmd, const char *in, size_t len, size_t *out_len)
{
    const char *dir = F.dir;
    char *src = fx_fmt("%s/enc-in", dir), *dst = fx_fmt("%s/enc-out", dir);
    FILE *f = fopen(src, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(in, 1, len, f), len);
    fclose(f);
    assert_int_equal(th_sh("(%s) < %s > %s", cmd, src, dst), 0);
    f = fopen(dst, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *out = malloc((size_t)n + 1);
    assert_int_equal(fread(out, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *out_len = (size_t)n;
    free(src);
    free(dst);
    return out;
}

/* libzstd's ZSTD_compress through python3's ctypes: stdin to stdout. */
#define ZSTD_SIZED                                                                                 \
    "python3 -c 'import sys,ctypes;z=ctypes.CDLL(\"libzstd.so.1\");"                               \
    "z.ZSTD_compressBound.restype=ctypes.c_size_t;z.ZSTD_compress.restype=ctypes.c_size_t;"        \
    "z.ZSTD_compress.argtypes=[ctypes.c_void_p,ctypes.c_size_t,ctypes.c_char_p,ctypes.c_size_t,"   \
    "ctypes.c_int];d=sys.stdin.buffer.read();c=z.ZSTD_compressBound(len(d));"                      \
    "o=ctypes.create_string_buffer(c);n=z.ZSTD_compress(o,c,d,len(d),3);"                          \
    "sys.stdout.buffer.write(o.raw[:n])'"

static const struct coder {
    const char *header; /* Content-Encoding as the clients send it */
    const char *cmd;
} CODERS[] = {
    {"gzip", "gzip -c -6"},
    {"zstd", "zstd -q -c -3"},
    {"deflate", "python3 -c 'import sys,zlib;sys.stdout.buffer.write(zlib.compress("
                "sys.stdin.buffer.read()))'"},
    /* raw deflate (no zlib header), which some clients send as "deflate" */
    {"deflate", "python3 -c 'import sys,zlib;c=zlib.compressobj(6,zlib.DEFLATED,-15);"
                "sys.stdout.buffer.write(c.compress(sys.stdin.buffer.read())+c.flush())'"},
    /* one frame stating its decoded size, as the agent writes it (common/compress.c:
     * ZSTD_compress at level 3); the zstd tool reading a pipe states no size */
    {"zstd", ZSTD_SIZED},
};

static int post(const char *path, const char *token, const char *encoding, const char *body,
                size_t len, char **resp)
{
    char *hdr = encoding ? fx_fmt("Content-Encoding: %s\r\n", encoding) : NULL;
    int st = fx_http(&F, "POST", path, token, hdr, body, len, resp);
    fprintf(stderr, "POST %s (%s, %zu bytes) -> %d %s", path, encoding ? encoding : "plain", len,
            st, resp && *resp ? *resp : "\n");
    free(hdr);
    return st;
}

/* A report of n socket flows in window ws, sequence seq. */
static char *report(int seq, int64_t ws, int n)
{
    size_t cap = 256 + (size_t)n * 300, len = 0;
    char *s = malloc(cap);
    len += (size_t)snprintf(s + len, cap - len,
                            "{\"version\":1,\"host\":\"nyc-gpu-17\",\"agent_id\":\"agent-enc\","
                            "\"seq\":%d,\"window_start\":\"%s\",\"window_seconds\":60,\"flows\":[",
                            seq, fx_ts(ws));
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(s + len, cap - len,
                                "%s{\"source\":\"socket\",\"proto\":\"tcp\",\"local\":\"10.1.0.%d:"
                                "%d\",\"remote\":\"10.2.0.2:5201\",\"role\":\"client\","
                                "\"tx_bytes\":%d,\"rx_bytes\":%d,\"pid\":%d,\"user\":\"alice\","
                                "\"program\":\"python3\",\"workflow\":\"train-42\"}",
                                i ? "," : "", 2 + i % 200, 40000 + i, 1000003 * (i + 1), 17 * i,
                                4000 + i);
    snprintf(s + len, cap - len, "]}");
    return s;
}

static void test_codings_store(void **state)
{
    (void)state;
    int64_t ws = fx_window_ago(5, 60);
    size_t n_coders = sizeof(CODERS) / sizeof(CODERS[0]);
    for (size_t k = 0; k < n_coders; k++) {
        /* 150 flows: ~30 KB of JSON, under the limit in plain text too */
        char *plain = report((int)k + 1, ws, 150);
        size_t plen = strlen(plain), zlen;
        assert_true(plen < LIMIT);
        char *z = filter(CODERS[k].cmd, plain, plen, &zlen);
        char *resp = NULL;
        assert_int_equal(post("/v1/attributions", FX_TOKEN_AGENT, CODERS[k].header, z, zlen, &resp),
                         200);
        assert_string_equal(resp, "{\"received\":150,\"stored\":150,\"duplicate\":0}\n");
        free(resp);
        fprintf(stderr, "ratio %-8s %s: %zu -> %zu bytes (%.1f x)\n", CODERS[k].header,
                k == 3 ? "(raw)" : "", plen, zlen, (double)plen / (double)zlen);
        /* the flows stored are the plain report's: same count and byte sums */
        char *q =
            fx_fmt("SELECT count(*) || ',' || sum(tx_bytes) || ',' || sum(rx_bytes) || ','"
                   " || sum(pid) FROM flow_records WHERE agent_id = 'agent-enc' AND seq = %zu",
                   k + 1);
        /* sums over i < 150 of 1000003 (i + 1), 17 i and 4000 + i */
        assert_string_equal(fx_row(&F, q), "150,11325033975,189975,611175");
        free(q);
        free(plain);
        free(z);
    }
    /* Content-Encoding identity and a list with identity around one coding */
    char *plain = report(10, ws, 2);
    assert_int_equal(
        post("/v1/attributions", FX_TOKEN_AGENT, "identity", plain, strlen(plain), NULL), 200);
    free(plain);
    plain = report(11, ws, 2);
    size_t zlen;
    char *z = filter("gzip -c", plain, strlen(plain), &zlen);
    assert_int_equal(post("/v1/attributions", FX_TOKEN_AGENT, "identity, GZIP", z, zlen, NULL),
                     200);
    free(z);
    free(plain);
    /* a transfer batch, as Fluent Bit (`compress gzip`) and Vector (`compression = "zstd"`)
     * send them: JSON array and NDJSON */
    /* an hour ago: inside the reconciler's max_past_days */
    long long t0 = (long long)(tm_now_us() / TM_USEC_PER_SEC) / 60 * 60 - 3600;
    char *arr = fx_fmt("[{\"service\":\"dupedog\",\"id\":\"e-1\",\"src\":\"nyc\",\"dst\":\"chi\","
                       "\"bytes\":5000000000,\"start\":%lld,\"end\":%lld}]",
                       t0, t0 + 10);
    z = filter("gzip -c", arr, strlen(arr), &zlen);
    assert_int_equal(post("/v1/transfers", FX_TOKEN_SERVICE, "gzip", z, zlen, NULL), 200);
    free(z);
    char *nd = fx_fmt("{\"service\":\"dupedog\",\"id\":\"e-2\",\"src\":\"nyc\",\"dst\":\"chi\","
                      "\"bytes\":7,\"start\":%lld,\"end\":%lld}\n",
                      t0, t0 + 10);
    z = filter("zstd -q -c", nd, strlen(nd), &zlen);
    assert_int_equal(post("/v1/transfers", FX_TOKEN_SERVICE, "zstd", z, zlen, NULL), 200);
    free(z);
    assert_string_equal(fx_row(&F, "SELECT string_agg(id || ':' || bytes, ',' ORDER BY id) FROM "
                                   "transfers WHERE id LIKE 'e-%'"),
                        "e-1:5000000000,e-2:7");
    /* /v1/flowsamples decodes too: a gzip'd batch naming a device without flows is read and
     * refused for its content (422 at the cell), not for its coding; a corrupt one is 400 */
    const char *fs = "{\"version\":1,\"poller\":\"p\",\"batch\":\"p:1:1\",\"window_seconds\":60,"
                     "\"cells\":[{\"device\":\"nyc-border-1\"}]}";
    z = filter("gzip -c", fs, strlen(fs), &zlen);
    char *ans = NULL;
    assert_int_equal(post("/v1/flowsamples", FX_TOKEN_POLLER, "gzip", z, zlen, &ans), 422);
    assert_null(strstr(ans, "Content-Encoding"));
    free(ans);
    ans = NULL;
    assert_int_equal(post("/v1/flowsamples", FX_TOKEN_POLLER, "gzip", z, zlen / 2, &ans), 400);
    assert_non_null(strstr(ans, "Content-Encoding"));
    free(ans);
    free(z);
    free(arr);
    free(nd);
}

static void test_bounds_and_errors(void **state)
{
    (void)state;
    char before[128];
    snprintf(before, sizeof(before), "%s", fx_row(&F, COUNTS));
    int64_t ws = fx_window_ago(6, 60);
    for (size_t k = 0; k < sizeof(CODERS) / sizeof(CODERS[0]); k++) {
        /* exactly LIMIT bytes decoded is accepted, LIMIT + 1 is not: a report padded with
         * spaces after the value (JSON whitespace) to the exact size */
        for (int over = 0; over <= 1; over++) {
            char *rep = report(100 + (int)k * 2 + over, ws, 3);
            size_t rl = strlen(rep), total = LIMIT + (size_t)over;
            char *padded = malloc(total);
            memcpy(padded, rep, rl);
            memset(padded + rl, ' ', total - rl);
            size_t zlen;
            char *z = filter(CODERS[k].cmd, padded, total, &zlen);
            assert_true(zlen < LIMIT / 10);
            char *resp = NULL;
            int st = post("/v1/attributions", FX_TOKEN_AGENT, CODERS[k].header, z, zlen, &resp);
            assert_int_equal(st, over ? 413 : 200);
            if (over) {
                assert_non_null(strstr(resp, "\"error\":\""));
                assert_non_null(strstr(resp, "more than the limit of 65536 bytes"));
                assert_non_null(strstr(resp, "\"path\":\"$\""));
            } else {
                char *q = fx_fmt("SELECT count(*) FROM flow_reports WHERE agent_id = 'agent-enc'"
                                 " AND seq = %zu",
                                 100 + k * 2);
                assert_int_equal(fx_num(&F, q), 1);
                free(q);
            }
            free(resp);
            free(z);
            free(padded);
            free(rep);
        }
    }
    snprintf(before, sizeof(before), "%s", fx_row(&F, COUNTS));
    /* bombs: 32 MiB of spaces in ~33 KB of gzip, 64 MiB in ~2 KB of zstd (both under the
     * 64 KiB limit on what is received); answered 413 quickly */
    for (int k = 0; k < 2; k++) {
        size_t zlen;
        char *z = filter(k == 0 ? "head -c 33554432 /dev/zero | tr '\\0' ' ' | gzip -9 -c"
                                : "head -c 67108864 /dev/zero | tr '\\0' ' ' | zstd -19 -q -c",
                         "", 0, &zlen);
        char *resp = NULL;
        int64_t t0 = tm_mono_ns();
        int st = post("/v1/attributions", FX_TOKEN_AGENT, k == 0 ? "gzip" : "zstd", z, zlen, &resp);
        int64_t took_ms = (tm_mono_ns() - t0) / 1000000;
        fprintf(stderr, "bomb %s: %zu bytes -> %d MiB: %d in %lld ms\n", k == 0 ? "gzip" : "zstd",
                zlen, k == 0 ? 32 : 64, st, (long long)took_ms);
        assert_true(zlen < LIMIT);
        assert_int_equal(st, 413);
        assert_true(took_ms < 2000);
        free(resp);
        free(z);
    }
    /* unknown coding: 415 naming it; corrupt or truncated streams: 400 */
    char *rep = report(200, ws, 2);
    char *resp = NULL;
    assert_int_equal(post("/v1/attributions", FX_TOKEN_AGENT, "br", rep, strlen(rep), &resp), 415);
    assert_non_null(strstr(resp, "Content-Encoding \\\"br\\\" is not supported"));
    assert_non_null(strstr(resp, "\"path\":\"Content-Encoding\""));
    free(resp);
    resp = NULL;
    assert_int_equal(post("/v1/transfers", FX_TOKEN_SERVICE, "snappy", rep, strlen(rep), &resp),
                     415);
    assert_non_null(strstr(resp, "\\\"snappy\\\""));
    free(resp);
    assert_int_equal(post("/v1/attributions", FX_TOKEN_AGENT, "gzip, zstd", rep, strlen(rep), NULL),
                     415);
    assert_int_equal(post("/v1/attributions", FX_TOKEN_AGENT, "gzip", rep, strlen(rep), NULL), 400);
    assert_int_equal(post("/v1/attributions", FX_TOKEN_AGENT, "zstd", rep, strlen(rep), NULL), 400);
    size_t zlen;
    char *z = filter("gzip -c", rep, strlen(rep), &zlen);
    assert_int_equal(post("/v1/attributions", FX_TOKEN_AGENT, "gzip", z, zlen - 9, NULL), 400);
    free(z);
    z = filter("zstd -q -c", rep, strlen(rep), &zlen);
    assert_int_equal(post("/v1/attributions", FX_TOKEN_AGENT, "zstd", z, zlen - 3, NULL), 400);
    free(z);
    /* a frame that states its size (the agent's): cut, 400; two such frames one after the other,
     * one body of two JSON values, 400; a stated size over the limit, 413 */
    z = filter(ZSTD_SIZED, rep, strlen(rep), &zlen);
    assert_int_equal(post("/v1/attributions", FX_TOKEN_AGENT, "zstd", z, zlen - 3, NULL), 400);
    char *two = malloc(2 * zlen);
    memcpy(two, z, zlen);
    memcpy(two + zlen, z, zlen);
    resp = NULL;
    assert_int_equal(post("/v1/attributions", FX_TOKEN_AGENT, "zstd", two, 2 * zlen, &resp), 400);
    assert_non_null(strstr(resp, "unexpected data after the JSON value"));
    free(resp);
    free(two);
    free(z);
    char *big = malloc(LIMIT + 2);
    memset(big, ' ', LIMIT + 1);
    big[LIMIT + 1] = 0;
    z = filter(ZSTD_SIZED, big, LIMIT + 1, &zlen);
    assert_int_equal(post("/v1/attributions", FX_TOKEN_AGENT, "zstd", z, zlen, NULL), 413);
    free(z);
    free(big);
    free(rep);
    assert_string_equal(fx_row(&F, COUNTS), before);
    /* the server still answers after all that */
    assert_int_equal(fx_http(&F, "GET", "/healthz", NULL, NULL, NULL, 0, NULL), 200);
}

int main(void)
{
    th_require(system("command -v gzip >/dev/null && command -v zstd >/dev/null && "
                      "command -v python3 >/dev/null") == 0,
               "gzip, zstd and python3 are needed (scripts/install-deps.sh)");
    fx_setup(&F, "recon-encoding",
             " \"tick_seconds\": 3600, \"limits\": {\"max_body_bytes\": 65536},");
    fx_start(&F);
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_codings_store),
                                       cmocka_unit_test(test_bounds_and_errors)};
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    fx_stop(&F);
    return rc;
}
