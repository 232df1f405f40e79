/* Flow records reach flow_records exactly as sent when the flows stay in PostgreSQL (no
 * analytics.clickhouse: ingest COPYs them as text into the day's partition, reconciler/store.c),
 * against the real `wanledger reconcile` and PostgreSQL: every column of every row is read back
 * as text and compared with the value the request carried (IPv4, IPv6, IPv4-mapped IPv6, NULLs
 * against empty strings, NFS flows with and without a client address, Kubernetes fields, UTF-8
 * and control characters in names, the largest seq/ops/pid/uid the API accepts and the largest
 * tx_bytes limits.max_flow_bps allows); a report of 5,000 flows (the COPY buffer grows) and one
 * without flows (no COPY) are stored whole, through the parent table flow_records. */
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
static int64_t W; /* a past window, 5 windows ago */

/* every column of flow_records in flow_row.h's order, NULL shown as <null>; addresses through
 * host() (inet's ::text adds the mask, checked on its own below) */
#define COLS                                                                                       \
    "extract(epoch FROM window_start)::bigint, agent_id, seq, idx, host, source, proto,"           \
    " host(local_addr), local_port, host(remote_addr), remote_port, role, tx_bytes, rx_bytes,"     \
    " host(nfs_server), nfs_port, nfs_export, nfs_op, nfs_bytes, nfs_ops, pid, uid, user_name,"    \
    " program, workflow, container, namespace, pod, container_name"

static const char *row_of(const char *agent, int idx)
{
    static char sql[2048];
    snprintf(sql, sizeof sql,
             "SELECT concat_ws('|', VARIADIC (SELECT array_agg(coalesce(v, '<null>') ORDER BY n)"
             " FROM unnest(ARRAY[%s]::text[]) WITH ORDINALITY AS u(v, n)))"
             " FROM flow_records WHERE agent_id = '%s' AND idx = %d",
             COLS, agent, idx);
    return fx_row(&F, sql);
}

/* what one row must read back as (window start in epoch seconds, then the 28 other columns) */
static void expect_row(const char *agent, int idx, const char *want)
{
    char *full = fx_fmt("%lld|%s", (long long)(W / TM_USEC_PER_SEC), want);
    const char *got = row_of(agent, idx);
    if (strcmp(got, full) != 0)
        fprintf(stderr, "row %d:\n got  %s\n want %s\n", idx, got, full);
    assert_string_equal(got, full);
    free(full);
}

static void test_every_column(void **state)
{
    (void)state;
    /* names: UTF-8 of 2, 3 and 4 bytes, a tab, a newline, a backslash, a quote (JSON escapes) */
    char *rep = fx_fmt(
        "{\"version\":1,\"host\":\"h\\u00f6st-\\u65e5\\u672c\",\"agent_id\":\"bin-a\","
        "\"seq\":9223372036854775807,\"window_start\":\"%s\",\"flows\":["
        /* 0: IPv4, every socket field, the largest tx the limit allows, the largest pid/uid */
        "{\"source\":\"socket\",\"proto\":\"tcp\",\"local\":\"10.1.0.2:41522\","
        "\"remote\":\"10.2.255.254:65535\",\"role\":\"client\",\"tx_bytes\":7500000000000000,"
        "\"rx_bytes\":0,\"pid\":2147483647,\"uid\":2147483647,\"user\":\"al\\u00efce\","
        "\"program\":\"py\\tthon\\n3\",\"workflow\":\"tr\\\\ain \\\"42\\\" \\ud83d\\ude80\","
        "\"container\":\"c0ffee\",\"namespace\":\"ml\",\"pod\":\"trainer-7f9c\","
        "\"container_name\":\"worker\"},"
        /* 1: IPv6 both ends, no role, no pid/uid/user, empty strings for program and workflow */
        "{\"source\":\"socket\",\"proto\":\"udp\",\"local\":\"[fd00:1::2]:0\","
        "\"remote\":\"[2001:db8:ffff:ffff:ffff:ffff:ffff:fffe]:9001\",\"tx_bytes\":1,"
        "\"rx_bytes\":18446744,\"user\":null,\"program\":\"\",\"workflow\":\"\"},"
        /* 2: an IPv4-mapped IPv6 address and the zero address */
        "{\"source\":\"socket\",\"proto\":\"tcp\",\"local\":\"[::ffff:10.1.0.9]:22\","
        "\"remote\":\"0.0.0.0:1\",\"role\":\"server\",\"tx_bytes\":255,\"rx_bytes\":256},"
        /* 3: NFS without a client address, default port, the largest ops count */
        "{\"source\":\"nfs\",\"server\":\"10.1.0.50\",\"export\":\"/d\\u00e4ta\",\"op\":\"read\","
        "\"bytes\":1048576,\"ops\":9223372036854775807,\"pid\":0,\"uid\":0,\"user\":\"bob\"},"
        /* 4: NFS over IPv6 with a client address and port, no export, no ops */
        "{\"source\":\"nfs\",\"server\":\"[fd00:3::50]:20049\",\"local\":\"[fd00:1::7]:700\","
        "\"op\":\"write\",\"bytes\":0,\"program\":\"cp\"},"
        /* 5: NFS with a client address without a port */
        "{\"source\":\"nfs\",\"server\":\"10.3.0.5:2049\",\"local\":\"10.1.0.8\",\"op\":\"read\","
        "\"bytes\":7,\"ops\":1}]}",
        fx_ts(W));
    fx_post_ok(&F, "/v1/attributions", FX_TOKEN_AGENT, rep);
    assert_int_equal(fx_num(&F, "SELECT count(*) FROM flow_records WHERE agent_id = 'bin-a'"), 6);
    const char *h = "h\xc3\xb6st-\xe6\x97\xa5\xe6\x9c\xac";
    const char *pre = "bin-a|9223372036854775807";
    char *want[6];
    want[0] = fx_fmt("%s|0|%s|socket|tcp|10.1.0.2|41522|10.2.255.254|65535|client|7500000000000000|"
                     "0|<null>|<null>|<null>|<null>|0|0|2147483647|2147483647|al\xc3\xaf"
                     "ce|"
                     "py\tthon\n3|tr\\ain \"42\" \xf0\x9f\x9a\x80|c0ffee|ml|trainer-7f9c|worker",
                     pre, h);
    want[1] = fx_fmt("%s|1|%s|socket|udp|fd00:1::2|0|2001:db8:ffff:ffff:ffff:ffff:ffff:fffe|9001|"
                     "<null>|1|18446744|<null>|<null>|<null>|<null>|0|0|<null>|<null>|<null>|||"
                     "<null>|||",
                     pre, h);
    want[2] = fx_fmt("%s|2|%s|socket|tcp|::ffff:10.1.0.9|22|0.0.0.0|1|server|255|256|<null>|"
                     "<null>|<null>|<null>|0|0|<null>|<null>|<null>|<null>|<null>|<null>|||",
                     pre, h);
    want[3] =
        fx_fmt("%s|3|%s|nfs|<null>|<null>|<null>|<null>|<null>|<null>|0|0|10.1.0.50|2049|"
               "/d\xc3\xa4ta|read|1048576|9223372036854775807|0|0|bob|<null>|<null>|<null>|||",
               pre, h);
    want[4] = fx_fmt("%s|4|%s|nfs|<null>|fd00:1::7|700|<null>|<null>|<null>|0|0|fd00:3::50|20049|"
                     "<null>|write|0|0|<null>|<null>|<null>|cp|<null>|<null>|||",
                     pre, h);
    want[5] = fx_fmt("%s|5|%s|nfs|<null>|10.1.0.8|<null>|<null>|<null>|<null>|0|0|10.3.0.5|2049|"
                     "<null>|read|7|1|<null>|<null>|<null>|<null>|<null>|<null>|||",
                     pre, h);
    for (int i = 0; i < 6; i++) {
        expect_row("bin-a", i, want[i]);
        free(want[i]);
    }
    /* the addresses are inet host addresses of the family sent, not text */
    assert_string_equal(fx_row(&F, "SELECT string_agg(family(a) || '/' || masklen(a), ','"
                                   " ORDER BY idx, k) FROM flow_records, LATERAL (VALUES (1,"
                                   " local_addr), (2, remote_addr), (3, nfs_server)) v(k, a)"
                                   " WHERE agent_id = 'bin-a' AND a IS NOT NULL"),
                        "4/32,4/32,6/128,6/128,6/128,4/32,4/32,6/128,6/128,4/32,4/32");
    /* the report row and its window mark, as before */
    assert_string_equal(
        fx_row(&F, "SELECT n_flows, host FROM flow_reports WHERE agent_id = 'bin-a'"),
        "6|h\xc3\xb6st-\xe6\x97\xa5\xe6\x9c\xac");
    char *q =
        fx_fmt("SELECT count(*) FROM window_state WHERE window_start = '%s' AND dirty", fx_ts(W));
    assert_int_equal(fx_num(&F, q), 1);
    free(q);
}

/* Version 2 (each process once in procs[], each flow naming it with "proc") stores the same rows
 * as version 1 with the process members in every flow: both forms of one report of 7 flows
 * (5 processes, two of them shared by two flows; members the reconciler does not keep, such as
 * ppid and exe, in an entry) are posted as two agents, and every column but agent_id is compared
 * row by row both ways; flow 6, sharing flow 0's process, is also checked by value. */
static void test_version_2_procs(void **state)
{
    (void)state;
    static const char *const own[] = {
        "\"pid\":2147483647,\"uid\":2147483647,\"user\":\"al\\u00efce\",\"program\":"
        "\"py\\tthon\",\"workflow\":\"tr\\\\ain \\ud83d\\ude80\",\"container\":\"c0ffee\","
        "\"namespace\":\"ml\",\"pod\":\"trainer-7f9c\",\"container_name\":\"worker\"",
        "\"user\":null,\"program\":\"\",\"workflow\":\"\"", "",
        "\"pid\":0,\"uid\":0,\"user\":\"bob\"", "\"program\":\"cp\""};
    static const char *const flow[] = {
        "\"source\":\"socket\",\"proto\":\"tcp\",\"local\":\"10.1.0.2:41522\",\"remote\":"
        "\"10.2.0.9:5201\",\"role\":\"client\",\"tx_bytes\":1000,\"rx_bytes\":2",
        "\"source\":\"socket\",\"proto\":\"udp\",\"local\":\"[fd00:1::2]:0\",\"remote\":"
        "\"[fd00:2::9]:9001\",\"tx_bytes\":1,\"rx_bytes\":3",
        "\"source\":\"socket\",\"proto\":\"tcp\",\"local\":\"10.1.0.9:22\",\"remote\":"
        "\"10.2.0.1:1\",\"role\":\"server\",\"tx_bytes\":255,\"rx_bytes\":256",
        "\"source\":\"nfs\",\"server\":\"10.1.0.50\",\"export\":\"/data\",\"op\":\"read\","
        "\"bytes\":4096,\"ops\":1",
        "\"source\":\"nfs\",\"server\":\"10.3.0.5:2049\",\"local\":\"10.1.0.8\",\"op\":"
        "\"write\",\"bytes\":7",
        "\"source\":\"socket\",\"proto\":\"tcp\",\"local\":\"10.1.0.3:40000\",\"remote\":"
        "\"10.2.0.3:443\",\"tx_bytes\":5,\"rx_bytes\":6",
        "\"source\":\"socket\",\"proto\":\"tcp\",\"local\":\"10.1.0.2:41523\",\"remote\":"
        "\"10.2.0.9:5201\",\"role\":\"client\",\"tx_bytes\":3000,\"rx_bytes\":4"};
    static const int proc_of[] = {0, 1, 2, 3, 4, 2, 0};
    char v1[8192], v2[8192];
    size_t n1 = (size_t)snprintf(v1, sizeof v1,
                                 "{\"version\":1,\"host\":\"h\",\"agent_id\":\"bin-v1\","
                                 "\"seq\":4,\"window_start\":\"%s\",\"flows\":[",
                                 fx_ts(W));
    size_t n2 = (size_t)snprintf(v2, sizeof v2,
                                 "{\"version\":2,\"host\":\"h\",\"agent_id\":\"bin-v2\","
                                 "\"seq\":4,\"window_start\":\"%s\",\"procs\":[",
                                 fx_ts(W));
    for (int k = 0; k < 5; k++)
        n2 += (size_t)snprintf(v2 + n2, sizeof v2 - n2, "%s{%s%s\"ppid\":1,\"exe\":\"/bin/x\"}",
                               k ? "," : "", own[k], own[k][0] ? "," : "");
    n2 += (size_t)snprintf(v2 + n2, sizeof v2 - n2, "],\"flows\":[");
    for (int i = 0; i < 7; i++) {
        const char *o = own[proc_of[i]];
        n1 += (size_t)snprintf(v1 + n1, sizeof v1 - n1, "%s{%s%s%s}", i ? "," : "", flow[i],
                               o[0] ? "," : "", o);
        n2 += (size_t)snprintf(v2 + n2, sizeof v2 - n2, "%s{%s,\"proc\":%d}", i ? "," : "", flow[i],
                               proc_of[i]);
    }
    snprintf(v1 + n1, sizeof v1 - n1, "]}");
    snprintf(v2 + n2, sizeof v2 - n2, "]}");
    fx_post_ok(&F, "/v1/attributions", FX_TOKEN_AGENT, strdup(v1)); /* it frees the body */
    fx_post_ok(&F, "/v1/attributions", FX_TOKEN_AGENT, strdup(v2));
    const char *cols = "window_start, seq, idx, host, source, proto, local_addr, local_port,"
                       " remote_addr, remote_port, role, tx_bytes, rx_bytes, nfs_server, nfs_port,"
                       " nfs_export, nfs_op, nfs_bytes, nfs_ops, pid, uid, user_name, program,"
                       " workflow, container, namespace, pod, container_name";
    char *q =
        fx_fmt("SELECT (SELECT count(*) FROM flow_records WHERE agent_id = 'bin-v2') || '|' ||"
               " (SELECT count(*) FROM (SELECT %s FROM flow_records WHERE agent_id ="
               " 'bin-v1' EXCEPT ALL SELECT %s FROM flow_records WHERE agent_id = 'bin-v2')"
               " d) || '|' || (SELECT count(*) FROM (SELECT %s FROM flow_records WHERE"
               " agent_id = 'bin-v2' EXCEPT ALL SELECT %s FROM flow_records WHERE agent_id"
               " = 'bin-v1') d)",
               cols, cols, cols, cols);
    assert_string_equal(fx_row(&F, q), "7|0|0");
    free(q);
    expect_row("bin-v2", 6,
               "bin-v2|4|6|h|socket|tcp|10.1.0.2|41523|10.2.0.9|5201|client|3000|4|<null>|<null>|"
               "<null>|<null>|0|0|2147483647|2147483647|al\xc3\xaf"
               "ce|py\tthon|tr\\ain \xf0\x9f\x9a\x80|c0ffee|ml|trainer-7f9c|worker");
    expect_row("bin-v2", 3,
               "bin-v2|4|3|h|nfs|<null>|<null>|<null>|<null>|<null>|<null>|0|0|10.1.0.50|2049|"
               "/data|read|4096|1|0|0|bob|<null>|<null>|<null>|||");
}

static void test_big_and_empty_reports(void **state)
{
    (void)state;
    enum { N = 5000 };
    size_t cap = (size_t)N * 200 + 512, len = 0;
    char *b = malloc(cap);
    assert_non_null(b);
    len += (size_t)snprintf(b, cap,
                            "{\"version\":1,\"host\":\"big\",\"agent_id\":\"bin-big\",\"seq\":7,"
                            "\"window_start\":\"%s\",\"flows\":[",
                            fx_ts(W));
    long long tx = 0, ports = 0;
    for (int k = 0; k < N; k++) {
        len += (size_t)snprintf(b + len, cap - len,
                                "%s{\"source\":\"socket\",\"proto\":\"tcp\",\"local\":"
                                "\"10.1.%d.%d:%d\",\"remote\":\"[fd00:2::%x]:5201\","
                                "\"tx_bytes\":%lld,\"rx_bytes\":%d,\"user\":\"u%d\"}",
                                k ? "," : "", k / 250, k % 250, 1024 + k, k + 1, 1000003LL * k,
                                k % 7, k % 13);
        tx += 1000003LL * k;
        ports += 1024 + k;
    }
    snprintf(b + len, cap - len, "]}");
    fx_post_ok(&F, "/v1/attributions", FX_TOKEN_AGENT, b);
    char *want = fx_fmt("%d|%lld|%lld|%d|%d", N, tx, ports, N, N);
    assert_string_equal(fx_row(&F, "SELECT count(*), sum(tx_bytes), sum(local_port),"
                                   " count(DISTINCT remote_addr), count(DISTINCT idx)"
                                   " FROM flow_records WHERE agent_id = 'bin-big'"),
                        want);
    free(want);
    expect_row("bin-big", N - 1,
               "bin-big|7|4999|big|socket|tcp|10.1.19.249|6023|fd00:2::1388|5201|<null>|"
               "4999014997|1|<null>|<null>|<null>|<null>|0|0|<null>|<null>|u7|<null>|<null>|"
               "<null>|||");
    /* a report without flows: its row, no flow records */
    fx_post_ok(&F, "/v1/attributions", FX_TOKEN_AGENT,
               fx_fmt("{\"version\":1,\"host\":\"idle\",\"agent_id\":\"bin-idle\",\"seq\":1,"
                      "\"window_start\":\"%s\",\"flows\":[]}",
                      fx_ts(W)));
    assert_string_equal(fx_row(&F, "SELECT n_flows FROM flow_reports WHERE agent_id = 'bin-idle'"),
                        "0");
    assert_int_equal(fx_num(&F, "SELECT count(*) FROM flow_records WHERE agent_id = 'bin-idle'"),
                     0);
}

int main(void)
{
    fx_setup(&F, "recon-columns", " \"tick_seconds\": 3600, \"limits\": {\"max_flow_bps\": 1e15},");
    W = fx_window_ago(5, 60);
    fx_start(&F);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_column),
        cmocka_unit_test(test_version_2_procs),
        cmocka_unit_test(test_big_and_empty_reports),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    fx_stop(&F);
    return rc;
}
