/* The heatmap's raw-flow reads in ClickHouse mode (heatmap/hm_chflows.h): the agents' reports
 * go through the real ingest (ingest_parse, store_write with analytics.clickhouse; a resend
 * adds nothing) and the flusher into a real clickhouse-server, so PostgreSQL's flow_records
 * stays empty; the
 * unrecorded-traffic query (hm_unrec_query) and the weekly report's "Hosts behind unexplained
 * bytes" must still see them, from ClickHouse. The routers' sampled flows and the agents' flows
 * are test_flow_match's (tests/flows), whose PostgreSQL-only expectations are the reference:
 *   sampled (flow_samples): 10.0.1.5 -> 10.0.2.7 tcp/2049, r1 1000 samples / 4,000,000 bytes
 *     (r2 saw 900 / 3,600,000): no agent at either end;
 *   10.0.1.6 -> 10.0.2.8 udp/5000, 1,000,000 bytes: its agent sent 950,000 payload bytes
 *     (= 1,000,000 IP bytes at ratio 0.95): explained, not listed;
 *   10.0.1.9 -> 10.0.2.9 tcp/443, 2,000,000 bytes: 10.0.2.9's agent received 500,000 payload
 *     bytes: under-reported, recorded by "dst", 500,000 / 0.95 = 526,316 IP bytes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <event2/buffer.h>

#include "chstore.h"
#include "chstore_flush.h"
#include "config.h"
#include "db.h"
#include "flowin.h"
#include "harness.h"
#include "hm_report.h"
#include "hm_unrec.h"
#include "ingest.h"
#include "store.h"
#include "th_clickhouse.h"
#include "timeutil.h"

static PGconn *g_db;
static struct cfg *g_cfg;
static struct th_ch CH;
static const int64_t W0 = 1796119200000000LL; /* 2026-12-01T10:00:00Z */

#define CELL(dev, src, dst, proto, port, samples, bytes, est, var)                                 \
    "{\"window_start\":\"2026-12-01T10:00:00Z\",\"device\":\"" dev "\",\"src_addr\":\"" src        \
    "\",\"dst_addr\":\"" dst "\",\"proto\":" #proto ",\"dst_port\":" #port                         \
    ",\"samples\":" #samples ",\"sampled_bytes\":" #bytes ",\"estimated_bytes\":" #est             \
    ",\"variance\":" #var ",\"rate_min\":4,\"rate_max\":4}"

static long long num(const char *sql)
{
    PGresult *r = PQexec(g_db, sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1)
        fail_msg("%s: %s", sql, PQerrorMessage(g_db));
    long long v = atoll(PQgetvalue(r, 0, 0));
    PQclear(r);
    return v;
}

/* One agent report through ingest and the store, as POST /v1/attributions does; stored: the
 * flows it must store (0 for a resend). */
static void report(const char *agent, const char *flow, size_t stored)
{
    char body[1024];
    int n = snprintf(body, sizeof body,
                     "{\"version\":1,\"host\":\"%s\",\"agent_id\":\"%s\",\"seq\":1,"
                     "\"window_start\":\"2026-12-01T10:00:00Z\",\"flows\":[%s]}",
                     agent, agent, flow);
    struct ingest_batch b;
    struct ingest_error e;
    if (ingest_parse(g_cfg, INGEST_ATTRIBUTIONS, body, (size_t)n, W0 + 3600000000LL, &b, &e) != 0)
        fail_msg("%s: %s %s", agent, e.path, e.msg);
    char err[512];
    struct store *st = store_open(g_cfg, err, sizeof err);
    assert_non_null(st);
    struct store_result res;
    if (store_write(st, &b, &res, err, sizeof err) != 0)
        fail_msg("%s: %s", agent, err);
    assert_int_equal(res.stored, stored);
    store_close(st);
    ingest_batch_free(&b);
}

static int setup(void **state)
{
    (void)state;
    th_ch_start(&CH, NULL);
    const char *pg = th_pg_default();
    char err[512];
    g_db = db_connect_str(pg, err, sizeof err);
    assert_non_null(g_db);
    char json[2048];
    snprintf(json, sizeof json,
             "{\"window_seconds\": 60, \"database\": \"%s\", \"listen\": \"127.0.0.1:1\","
             " \"sites\": [{\"name\": \"a\", \"prefixes\": [\"10.0.1.0/24\"]},"
             "             {\"name\": \"b\", \"prefixes\": [\"10.0.2.0/24\"]}],"
             " \"devices\": [{\"name\": \"r1\", \"site\": \"a\", \"flows\": {\"listen\":"
             " \"127.0.0.1:4739\", \"protocol\": \"ipfix\"}}, {\"name\": \"r2\", \"site\": \"b\","
             " \"flows\": {\"listen\": \"127.0.0.1:6343\", \"protocol\": \"sflow\"}}],"
             " \"overhead\": {\"ratio_without_packets\": 0.95},"
             " \"analytics\": {\"clickhouse\": {\"url\": \"%s\", \"database\": \"wanledger\","
             " \"password_file\": \"%s\"}}}",
             pg, CH.url, CH.password_file);
    struct cfg_errors errs = {0};
    g_cfg = cfg_parse("ch-heatmap.json", json, &errs);
    if (!g_cfg) {
        for (size_t i = 0; i < errs.n; i++)
            fprintf(stderr, "%s: %s\n", errs.items[i].jpath, errs.items[i].msg);
        return -1;
    }
    assert_true(g_cfg->clickhouse.enabled);
    assert_int_equal(
        db_ensure_partitions(g_db, W0 - 86400000000LL, W0 + 86400000000LL, err, sizeof err), 0);
    if (chstore_ensure_schema(&g_cfg->clickhouse, err, sizeof err) != 0)
        fail_msg("%s", err);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    cfg_free(g_cfg);
    PQfinish(g_db);
    th_ch_stop(&CH);
    return 0;
}

static void test_reads_clickhouse(void **state)
{
    (void)state;
    const char *cells =
        "{\"version\":1,\"poller\":\"p\",\"batch\":\"p:1:2\",\"window_seconds\":60,\"cells\":"
        "[" CELL("r1", "10.0.1.5", "10.0.2.7", 6, 2049, 1000, 1000000, 4000000, 1.2e10) "," CELL(
            "r2", "10.0.1.5", "10.0.2.7", 6, 2049, 900, 900000, 3600000,
            1.08e10) "," CELL("r1", "10.0.1.6", "10.0.2.8", 17, 5000, 250, 250000, 1000000,
                              3e9) "," CELL("r1", "10.0.1.9", "10.0.2.9", 6, 443, 500, 500000,
                                            2000000, 6e9) "]}";
    struct evbuffer *ans = evbuffer_new();
    assert_int_equal(flowin_post(g_db, g_cfg, cells, strlen(cells), W0 + 3600000000LL, ans), 200);
    evbuffer_free(ans);
    report("h6",
           "{\"source\":\"socket\",\"proto\":\"udp\",\"local\":\"10.0.1.6:40000\","
           "\"remote\":\"10.0.2.8:5000\",\"role\":\"client\",\"tx_bytes\":950000,"
           "\"rx_bytes\":0}",
           1);
    report("h9",
           "{\"source\":\"socket\",\"proto\":\"tcp\",\"local\":\"10.0.2.9:443\","
           "\"remote\":\"10.0.1.9:51000\",\"role\":\"server\",\"tx_bytes\":0,"
           "\"rx_bytes\":500000}",
           1);
    /* a resend (a lost answer): nothing more, in the outbox or anywhere */
    report("h9",
           "{\"source\":\"socket\",\"proto\":\"tcp\",\"local\":\"10.0.2.9:443\","
           "\"remote\":\"10.0.1.9:51000\",\"role\":\"server\",\"tx_bytes\":0,"
           "\"rx_bytes\":500000}",
           0);
    assert_int_equal(num("SELECT count(*) FROM flow_reports"), 2);
    assert_int_equal(num("SELECT count(*) FROM window_state WHERE dirty"), 1);
    /* the flows are in the outbox, not in flow_records; shipped, they are in ClickHouse */
    assert_int_equal(num("SELECT count(*) FROM flow_records"), 0);
    assert_int_equal(num("SELECT count(*) FROM ch_outbox"), 2);
    char err[512];
    if (chflush_drain(g_db, g_cfg, err, sizeof err) != 0)
        fail_msg("%s", err);
    assert_int_equal(num("SELECT count(*) FROM ch_outbox"), 0);
    assert_int_equal(th_ch_num(&CH, "SELECT count() FROM wanledger.flow_records FINAL"), 2);

    struct hm_unrec_row *rows;
    size_t n;
    if (hm_unrec_query(g_db, g_cfg, "a", "b", NULL, W0, W0 + 60000000LL, 10, &rows, &n, err,
                       sizeof err) != 0)
        fail_msg("%s", err);
    assert_int_equal(n, 2);
    assert_string_equal(rows[0].src_addr, "10.0.1.5");
    assert_string_equal(rows[0].dst_addr, "10.0.2.7");
    assert_int_equal((int64_t)rows[0].estimated_bytes, 4000000);
    assert_string_equal(rows[0].recorded_by, "none");
    assert_string_equal(rows[1].src_addr, "10.0.1.9");
    assert_string_equal(rows[1].recorded_by, "dst");
    assert_int_equal((int64_t)(rows[1].recorded_bytes + 0.5), 526316);
    free(rows);

    struct evbuffer *out = evbuffer_new();
    if (hm_report_render(out, g_db, g_cfg, 1795996800000000LL /* 2026-W49 */, HM_REPORT_MD, err,
                         sizeof err) != 0)
        fail_msg("%s", err);
    evbuffer_add(out, "", 1);
    const char *rep = strstr((const char *)evbuffer_pullup(out, -1), "Hosts behind unexplained");
    assert_non_null(rep);
    assert_non_null(strstr(rep, "10.0.1.5"));
    assert_non_null(strstr(rep, "10.0.2.7"));
    assert_null(strstr(rep, "10.0.2.9")); /* its agent's flow is in ClickHouse */
    assert_null(strstr(rep, "10.0.1.6"));
    evbuffer_free(out);

    /* ClickHouse down: a clear error, not a page that calls every pair unrecorded */
    th_ch_stop(&CH);
    assert_int_equal(hm_unrec_query(g_db, g_cfg, "a", "b", NULL, W0, W0 + 60000000LL, 10, &rows, &n,
                                    err, sizeof err),
                     -1);
    assert_non_null(strstr(err, "clickhouse"));
    assert_int_equal(th_ch_restart(&CH), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_reads_clickhouse)};
    return cmocka_run_group_tests(tests, setup, teardown);
}
