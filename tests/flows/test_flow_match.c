/* The reconciler's side of sampled flows against a real PostgreSQL: POST /v1/flowsamples bodies
 * (stored once per batch id, cells adding up, a bad cell refused whole with its JSON path),
 * matching against agent reports (unrecorded, under-reported, explained pairs; one exporter per
 * pair), sFlow counter samples stored beside the interface counters, the 95% interval against
 * exact Poisson (Garwood) bounds from statistical tables, and
 * the places it shows: the cell page's panel, the gap alert's note, the weekly report. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <event2/buffer.h>

#include "config.h"
#include "db.h"
#include "flowin.h"
#include "harness.h"
#include "hm_cell.h"
#include "hm_report.h"
#include "hm_unrec.h"
#include "timeutil.h"

static PGconn *g_db;
static struct cfg *g_cfg;
static const int64_t W0 = 1796119200000000LL; /* 2026-12-01T10:00:00Z */

static const char CFG[] =
    "{\"window_seconds\": 60, \"database\": \"host=/nonexistent\", \"listen\": \"127.0.0.1:1\","
    " \"sites\": [{\"name\": \"a\", \"prefixes\": [\"10.0.1.0/24\"]},"
    "             {\"name\": \"b\", \"prefixes\": [\"10.0.2.0/24\"]}],"
    " \"devices\": [{\"name\": \"r1\", \"site\": \"a\", \"flows\": {\"listen\": \"127.0.0.1:4739\","
    " \"protocol\": \"ipfix\"}}, {\"name\": \"r2\", \"site\": \"b\", \"flows\": {\"listen\":"
    " \"127.0.0.1:6343\", \"protocol\": \"sflow\"}}, {\"name\": \"s1\", \"site\": \"a\", \"gnmi\": "
    "{}}],"
    " \"links\": [{\"device\": \"r1\", \"interface\": \"x\", \"site\": \"a\", \"peer_site\": \"b\","
    " \"circuit\": \"ab\"}],"
    " \"overhead\": {\"ratio_without_packets\": 0.95}}";

static void exec(const char *sql)
{
    PGresult *r = PQexec(g_db, sql);
    if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK)
        fail_msg("%s: %s", sql, PQerrorMessage(g_db));
    PQclear(r);
}

static char *value(const char *sql)
{
    PGresult *r = PQexec(g_db, sql);
    char *v =
        PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) ? strdup(PQgetvalue(r, 0, 0)) : NULL;
    PQclear(r);
    return v;
}

static int post(const char *body, char *answer, size_t len)
{
    struct evbuffer *out = evbuffer_new();
    int st = flowin_post(g_db, g_cfg, body, strlen(body), W0 + 3600000000LL, out);
    size_t n = evbuffer_get_length(out);
    if (n >= len)
        n = len - 1;
    evbuffer_remove(out, answer, n);
    answer[n] = 0;
    evbuffer_free(out);
    return st;
}

#define CELL(dev, src, dst, proto, port, samples, bytes, est, var)                                 \
    "{\"window_start\":\"2026-12-01T10:00:00Z\",\"device\":\"" dev "\",\"src_addr\":\"" src        \
    "\",\"dst_addr\":\"" dst "\",\"proto\":" #proto ",\"dst_port\":" #port                         \
    ",\"samples\":" #samples ",\"sampled_bytes\":" #bytes ",\"estimated_bytes\":" #est             \
    ",\"variance\":" #var ",\"rate_min\":4,\"rate_max\":4}"

static int setup(void **state)
{
    (void)state;
    char err[256];
    g_db = db_connect_str(th_pg_default(), err, sizeof err);
    assert_non_null(g_db);
    struct cfg_errors errs = {0};
    g_cfg = cfg_parse("flow-match.json", CFG, &errs);
    if (!g_cfg) {
        for (size_t i = 0; i < errs.n; i++)
            fprintf(stderr, "%s: %s\n", errs.items[i].jpath, errs.items[i].msg);
        return -1;
    }
    assert_int_equal(
        db_ensure_partitions(g_db, W0 - 86400000000LL, W0 + 86400000000LL, err, sizeof err), 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    cfg_free(g_cfg);
    PQfinish(g_db);
    return 0;
}

static void test_ingest(void **state)
{
    (void)state;
    char ans[512];
    /* a cell naming a device without flows: refused with its path, nothing stored */
    const char *bad = "{\"version\":1,\"poller\":\"p\",\"batch\":\"p:1:1\",\"window_seconds\":60,"
                      "\"cells\":[" CELL("r1", "10.0.1.5", "10.0.2.7", 6, 2049, 1000, 1000000,
                                         4000000, 1.2e10) "," CELL("s1", "10.0.1.5", "10.0.2.7", 6,
                                                                   2049, 1, 1, 4, 12) "]}";
    assert_int_equal(post(bad, ans, sizeof ans), 422);
    assert_non_null(strstr(ans, "$.cells[1].device"));
    char *n = value("SELECT count(*) FROM flow_samples");
    assert_string_equal(n, "0");
    free(n);

    /* 10.0.1.5 -> 10.0.2.7:2049, split over two batches (adds up), seen by both exporters */
    const char *b1 =
        "{\"version\":1,\"poller\":\"p\",\"batch\":\"p:1:2\",\"window_seconds\":60,\"devices\":"
        "[{\"device\":\"r1\",\"protocol\":\"ipfix\",\"datagrams\":10,\"malformed\":1,\"records\":"
        "30,\"unknown_template_sets\":0,\"undecodable_samples\":0,\"agg_dropped\":0}],\"cells\":"
        "[" CELL("r1", "10.0.1.5", "10.0.2.7", 6, 2049, 600, 600000, 2400000, 7.2e9) "," CELL(
            "r2", "10.0.1.5", "10.0.2.7", 6, 2049, 900, 900000, 3600000,
            1.08e10) "," CELL("r1", "10.0.1.6", "10.0.2.8", 17, 5000, 250, 250000, 1000000,
                              3e9) "," CELL("r1", "10.0.1.9", "10.0.2.9", 6, 443, 500, 500000,
                                            2000000, 6e9) "]}";
    assert_int_equal(post(b1, ans, sizeof ans), 200);
    assert_non_null(strstr(ans, "\"stored\":4"));
    /* the same batch again (a resend after a lost answer): a duplicate, nothing added */
    assert_int_equal(post(b1, ans, sizeof ans), 200);
    assert_non_null(strstr(ans, "\"duplicate\":4"));
    const char *b2 =
        "{\"version\":1,\"poller\":\"p\",\"batch\":\"p:1:3\",\"window_seconds\":60,"
        "\"cells\":[" CELL("r1", "10.0.1.5", "10.0.2.7", 6, 2049, 400, 400000, 1600000, 4.8e9) "]}";
    assert_int_equal(post(b2, ans, sizeof ans), 200);
    n = value("SELECT estimated_bytes || ' ' || samples || ' ' || src_site || ' ' || dst_site "
              "FROM flow_samples WHERE device = 'r1' AND dst_port = 2049");
    assert_string_equal(n, "4000000 1000 a b");
    free(n);
    n = value("SELECT malformed FROM flow_collector_stats WHERE device = 'r1'");
    assert_string_equal(n, "1");
    free(n);
    struct evbuffer *m = evbuffer_new();
    flowin_metrics(g_db, m);
    evbuffer_add(m, "", 1);
    assert_non_null(strstr((const char *)evbuffer_pullup(m, -1),
                           "wanledger_flow_malformed_total{poller=\"p\",device=\"r1\","
                           "protocol=\"ipfix\"} 1\n"));
    evbuffer_free(m);

    /* agents: 10.0.1.6's agent sent 950,000 payload bytes to 10.0.2.8:5000 (= 1 MB of IP bytes
     * at ratio 0.95: explained); 10.0.2.9's agent received 500,000 from 10.0.1.9 on 443 (less
     * than the routers carried) */
    exec("INSERT INTO flow_records (window_start, agent_id, seq, idx, host, source, proto,"
         " local_addr, local_port, remote_addr, remote_port, role, tx_bytes, rx_bytes) VALUES"
         " ('2026-12-01T10:00:00Z', 'h6', 1, 0, 'h6', 'socket', 'udp', '10.0.1.6', 40000,"
         "  '10.0.2.8', 5000, 'client', 950000, 0),"
         " ('2026-12-01T10:00:00Z', 'h9', 1, 0, 'h9', 'socket', 'tcp', '10.0.2.9', 443,"
         "  '10.0.1.9', 51000, 'server', 0, 500000)");
}

/* sFlow counter samples ride in a batch as "if_counters" and are stored beside the interface
 * counters: exact 64-bit octets (2^64 - 1 included), once per (device, if_index, at) however
 * often the batch is resent; a sample naming a device without flows, or a packet count beyond
 * Counter32, refuses the whole batch with its path and stores nothing of it. */
static void test_if_counters(void **state)
{
    (void)state;
    char ans[512];
#define IFC(dev, idx, at, in, out, ip, op)                                                         \
    "{\"device\":\"" dev "\",\"if_index\":" #idx ",\"at\":\"" at "\",\"in_octets\":" #in           \
    ",\"out_octets\":" #out ",\"in_pkts\":" #ip ",\"out_pkts\":" #op "}"
    const char *bad =
        "{\"version\":1,\"poller\":\"p\",\"batch\":\"p:9:1\",\"window_seconds\":60,\"cells\":[],"
        "\"if_counters\":[" IFC("r2", 7, "2026-12-01T10:00:20Z", 1, 2, 3, 4) "," IFC(
            "r2", 7, "2026-12-01T10:00:40Z", 1, 2, 4294967296, 4) "]}";
    assert_int_equal(post(bad, ans, sizeof ans), 422);
    assert_non_null(strstr(ans, "$.if_counters[1].in_pkts"));
    const char *bad_dev =
        "{\"version\":1,\"poller\":\"p\",\"batch\":\"p:9:2\",\"window_seconds\":60,\"cells\":[],"
        "\"if_counters\":[" IFC("s1", 7, "2026-12-01T10:00:20Z", 1, 2, 3, 4) "]}";
    assert_int_equal(post(bad_dev, ans, sizeof ans), 422);
    assert_non_null(strstr(ans, "$.if_counters[0].device"));
    char *n = value("SELECT count(*) FROM flow_if_counters");
    assert_string_equal(n, "0");
    free(n);
    const char *good =
        "{\"version\":1,\"poller\":\"p\",\"batch\":\"p:9:3\",\"window_seconds\":60,\"cells\":[],"
        "\"if_counters\":[" IFC("r2", 7, "2026-12-01T10:00:20Z", 18446744073709551615, 1000, 3,
                                4294967295) "," IFC("r2", 7, "2026-12-01T10:00:40Z", 5, 1500, 6,
                                                    7) "]}";
    assert_int_equal(post(good, ans, sizeof ans), 200);
    assert_int_equal(post(good, ans, sizeof ans), 200); /* a resend: nothing more */
    n = value("SELECT string_agg(in_octets || '/' || out_octets || '/' || in_pkts || '/' ||"
              " out_pkts || '@' || to_char(at AT TIME ZONE 'UTC', 'HH24:MI:SS'), ' ' ORDER BY at)"
              " FROM flow_if_counters WHERE device = 'r2' AND if_index = 7 AND poller = 'p'");
    assert_string_equal(n, "18446744073709551615/1000/3/4294967295@10:00:20 5/1500/6/7@10:00:40");
    free(n);
#undef IFC
}

/* A cell the collector placed on a link (src_site/dst_site from the exporter's interface,
 * pollers/flow_link.h) is stored with those sites, not its addresses' (here 10.0.9.x: outside
 * every site); naming an unknown site, or only one of the two, refuses the batch. */
static void test_link_sites(void **state)
{
    (void)state;
    char ans[512];
#define LCELL(port, sites)                                                                         \
    "{\"window_start\":\"2026-12-01T10:01:00Z\",\"device\":\"r1\",\"src_addr\":\"10.0.9.1\","      \
    "\"dst_addr\":\"10.0.9.2\",\"proto\":6,\"dst_port\":" #port ",\"samples\":1,"                  \
    "\"sampled_bytes\":100,\"estimated_bytes\":100,\"variance\":0,\"rate_min\":1,"                 \
    "\"rate_max\":1" sites "}"
    const char *bad = "{\"version\":1,\"poller\":\"p\",\"batch\":\"p:8:1\",\"window_seconds\":60,"
                      "\"cells\":[" LCELL(1, ",\"src_site\":\"a\",\"dst_site\":\"zz\"") "]}";
    assert_int_equal(post(bad, ans, sizeof ans), 422);
    assert_non_null(strstr(ans, "$.cells[0].dst_site"));
    const char *half = "{\"version\":1,\"poller\":\"p\",\"batch\":\"p:8:2\",\"window_seconds\":60,"
                       "\"cells\":[" LCELL(1, ",\"src_site\":\"a\"") "]}";
    assert_int_equal(post(half, ans, sizeof ans), 422);
    const char *good =
        "{\"version\":1,\"poller\":\"p\",\"batch\":\"p:8:3\",\"window_seconds\":60,\"cells\":"
        "[" LCELL(1, ",\"src_site\":\"a\",\"dst_site\":\"b\"") "," LCELL(2, "") "]}";
    assert_int_equal(post(good, ans, sizeof ans), 200);
    char *n = value("SELECT string_agg(dst_port || ':' || coalesce(src_site, '-') || '>' ||"
                    " coalesce(dst_site, '-'), ' ' ORDER BY dst_port) FROM flow_samples"
                    " WHERE src_addr = '10.0.9.1'");
    assert_string_equal(n, "1:a>b 2:->-");
    free(n);
    exec("DELETE FROM flow_samples WHERE src_addr = '10.0.9.1'");
#undef LCELL
}

static void test_match(void **state)
{
    (void)state;
    struct hm_unrec_row *rows;
    size_t n;
    char err[256];
    assert_int_equal(hm_unrec_query(g_db, g_cfg, "a", "b", NULL, W0, W0 + 60000000LL, 10, &rows, &n,
                                    err, sizeof err),
                     0);
    assert_int_equal(n, 2);
    /* one exporter per pair and window: r1 (1000 samples) over r2 (900) */
    assert_string_equal(rows[0].src_addr, "10.0.1.5");
    assert_string_equal(rows[0].dst_addr, "10.0.2.7");
    assert_int_equal((int64_t)rows[0].estimated_bytes, 4000000);
    assert_string_equal(rows[0].recorded_by, "none");
    assert_true(rows[0].service_port); /* 2049: NFS */
    assert_true(rows[0].low_bytes < 4000000 && rows[0].high_bytes > 4000000);
    assert_string_equal(rows[1].src_addr, "10.0.1.9");
    assert_string_equal(rows[1].recorded_by, "dst");
    assert_int_equal((int64_t)(rows[1].recorded_bytes + 0.5), 526316); /* 500000 / 0.95 */
    free(rows);
    /* device filter: r2's own view */
    assert_int_equal(hm_unrec_query(g_db, g_cfg, "a", "b", "r2", W0, W0 + 60000000LL, 10, &rows, &n,
                                    err, sizeof err),
                     0);
    assert_int_equal(n, 1);
    assert_int_equal((int64_t)rows[0].estimated_bytes, 3600000);
    free(rows);
}

/* Exact (Garwood) 95% bounds of a Poisson mean given n events, from statistical tables:
 * n=1 [0.0253, 5.572], n=10 [4.795, 18.39], n=100 [81.37, 121.63]. With x = v = n the estimate
 * is the count itself; the interval must contain the exact one's and be within 2% of it for
 * n >= 10 (Wilson-Hilferty). */
static void test_interval(void **state)
{
    (void)state;
    const double t[][3] = {{1, 0.0253, 5.572}, {10, 4.795, 18.39}, {100, 81.37, 121.63}};
    for (size_t i = 0; i < 3; i++) {
        double lo, hi;
        hm_unrec_interval(t[i][0], t[i][0], &lo, &hi);
        assert_true(lo <= t[i][1] * 1.01);
        assert_true(hi >= t[i][2] * 0.99);
        if (t[i][0] >= 10) {
            assert_true(lo >= t[i][1] * 0.98);
            assert_true(hi <= t[i][2] * 1.02);
        }
    }
    double lo, hi;
    hm_unrec_interval(5000, 0, &lo, &hi); /* unsampled: exact */
    assert_true(lo == 5000 && hi == 5000);
}

static void test_shown(void **state)
{
    (void)state;
    exec("INSERT INTO heatmap_cells (window_start, window_seconds, src_site, dst_site,"
         " observed_bytes, observed_payload_bytes, attributed_bytes, socket_bytes, nfs_bytes,"
         " service_bytes, unattributed_bytes, coverage, status) VALUES ('2026-12-01T10:00:00Z',"
         " 60, 'a', 'b', 8000000, 7600000, 1200000, 1200000, 0, 0, 6400000, 0.158, 'red')");
    struct evbuffer *out = evbuffer_new();
    struct hm_span span = {.kind = HM_SPAN_WINDOW, .window_us = W0};
    char err[256];
    assert_int_equal(hm_cell_html(out, g_db, g_cfg, "a", "b", &span, NULL, err, sizeof err), 200);
    evbuffer_add(out, "", 1);
    const char *page = (const char *)evbuffer_pullup(out, -1);
    const char *panel = strstr(page, "Unexplained host pairs");
    assert_non_null(panel);
    assert_non_null(strstr(panel, "data-src-addr=\"10.0.1.5\" data-dst-addr=\"10.0.2.7\""));
    assert_non_null(strstr(panel, "no agent at either end"));
    /* share of the gap: 4 MB of IP bytes x 7.6/8 payload ratio / 6.4 MB unattributed = 0.59375 */
    assert_non_null(strstr(panel, "data-share=\"0.5938\""));
    evbuffer_free(out);

    char summary[512] = "a->b: 6.4 MB unattributed";
    hm_unrec_note(g_db, g_cfg, "a", "b", W0, W0 + 60000000LL, summary, sizeof summary);
    assert_non_null(strstr(summary, "; top unexplained pair (sampled flows): 10.0.1.5 -> "
                                    "10.0.2.7 tcp/2049 ~4 MB"));
    assert_non_null(strstr(summary, "no agent at either end"));
    /* its share of the gap, as on the page: 4 MB x 7.6/8 / 6.4 MB = 59.375 % */
    assert_non_null(strstr(summary, ", 59.4 % of the gap"));

    out = evbuffer_new();
    assert_int_equal(hm_report_render(out, g_db, g_cfg, 1795996800000000LL /* 2026-W49 */,
                                      HM_REPORT_MD, err, sizeof err),
                     0);
    evbuffer_add(out, "", 1);
    const char *rep = strstr((const char *)evbuffer_pullup(out, -1), "Hosts behind unexplained");
    assert_non_null(rep);
    /* 10.0.1.5 and 10.0.2.7 (one window each, 4 MB); 10.0.1.9 -> 10.0.2.9 had an agent */
    assert_non_null(strstr(rep, "10.0.1.5"));
    assert_non_null(strstr(rep, "10.0.2.7"));
    assert_null(strstr(rep, "10.0.2.9"));
    evbuffer_free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ingest),      cmocka_unit_test(test_match),
        cmocka_unit_test(test_if_counters), cmocka_unit_test(test_link_sites),
        cmocka_unit_test(test_interval),    cmocka_unit_test(test_shown),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
