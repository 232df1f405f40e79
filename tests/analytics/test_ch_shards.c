/* Straight-to-shard inserts (reconciler/chshard.h) against two real clickhouse-server 18.16
 * shards of one cluster ("wl", one replica each, behind the Distributed table flow_records) and
 * the real `wanledger reconcile` with analytics.clickhouse.shard_urls:
 *  - the sharding key computed in C (CityHash64 v1.0.2 of agent_id combined with intHash64 of
 *    seq) equals the server's own cityHash64(agent_id, seq) on 300 pairs, agent ids of 0 to 120
 *    bytes (every branch of CityHash64) and seqs up to 2^64 - 1;
 *  - 40 reports of 20 flows (8 agents x seqs 1..5) posted over HTTP all reach ClickHouse; every
 *    row lies on the shard ClickHouse itself computes for it (cityHash64(agent_id, seq) % 2),
 *    both shards hold rows, and the Distributed table reads each flow once:
 *    sum tx = 20 x 1000 x 8 x (1 + … + 5) + 40 x (0 + … + 19) = 2,400,000 + 7,600 = 2,407,600;
 *  - the same rows inserted again through the Distributed table (as an insert retried by an
 *    older version, or by hand) land on the same shards: FINAL still counts each flow once, and
 *    so does the window's cell reconciled after them;
 *  - shard URLs in the wrong order, or too few, are refused with an error naming the URL. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "chshard.h"
#include "fixture.h"
#include "harness.h"
#include "th_clickhouse.h"
#include "timeutil.h"

#define AGENTS 8
#define SEQS   5
#define FLOWS  20
#define ROWS   (AGENTS * SEQS * FLOWS)
#define TX_SUM 2407600LL

static struct fx F;
static struct th_ch S[2];

static void post_report(const char *agent, int64_t ws, int s)
{
    fx_socket_report(&F, agent, ws, s, FLOWS);
}

static void test_key_is_clickhouses(void **state)
{
    (void)state;
    enum { N = 300 };
    static char agent[N][128];
    static uint64_t seq[N];
    uint64_t x = 0x9e3779b97f4a7c15ULL; /* xorshift: the same pairs every run */
    size_t cap = (size_t)N * 180 + 200, n = 0;
    char *sql = malloc(cap);
    n += (size_t)snprintf(sql + n, cap - n,
                          "SELECT cityHash64(tupleElement(t, 1), toUInt64(tupleElement(t, 2)))"
                          " FROM (SELECT arrayJoin([");
    for (int i = 0; i < N; i++) {
        size_t len = (size_t)(i % 121); /* 0..120 bytes: 0-16, 17-32, 33-64 and > 64 */
        for (size_t k = 0; k < len; k++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            agent[i][k] = "abcdefghijklmnopqrstuvwxyz0123456789-_."[x % 39];
        }
        agent[i][len] = 0;
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        seq[i] = i % 7 == 0 ? UINT64_MAX - (uint64_t)i : i % 3 == 0 ? (uint64_t)i : x;
        n += (size_t)snprintf(sql + n, cap - n, "%s('%s', %llu)", i ? "," : "", agent[i],
                              (unsigned long long)seq[i]);
    }
    n += (size_t)snprintf(sql + n, cap - n, "]) AS t) FORMAT TabSeparated");
    char *ans = th_ch_query(&S[0], sql);
    assert_non_null(ans);
    const char *p = ans;
    int same = 0;
    for (int i = 0; i < N; i++) {
        char *end;
        unsigned long long theirs = strtoull(p, &end, 10);
        assert_true(end != p);
        p = end + (*end == '\n');
        uint64_t mine = chshard_key(agent[i], strlen(agent[i]), seq[i]);
        if (mine != theirs)
            print_message("differs: cityHash64('%s', %llu): ClickHouse %llu, chshard_key %llu\n",
                          agent[i], (unsigned long long)seq[i], theirs, (unsigned long long)mine);
        same += mine == theirs;
    }
    print_message("sharding key equal to ClickHouse's on %d of %d pairs\n", same, N);
    assert_int_equal(same, N);
    free(ans);
    free(sql);
}

static void test_rows_on_their_shards(void **state)
{
    (void)state;
    int64_t ws = fx_window_ago(3, 60);
    for (int a = 0; a < AGENTS; a++) {
        char agent[32];
        snprintf(agent, sizeof agent, "agent-%02d", a);
        for (int s = 1; s <= SEQS; s++)
            post_report(agent, ws, s);
    }
    /* every acknowledged report reaches ClickHouse */
    long long pending = -1;
    for (int i = 0; i < 300 && pending != 0; i++) {
        pending = fx_num(&F, "SELECT count(*) FROM flow_reports WHERE ch_pending");
        if (pending) {
            struct timespec ts = {0, 100000000};
            nanosleep(&ts, NULL);
        }
    }
    assert_int_equal(pending, 0);
    assert_int_equal(fx_num(&F, "SELECT count(*) FROM ch_outbox"), 0);
    long long on[2];
    for (int i = 0; i < 2; i++) {
        on[i] = th_ch_num(&S[i], "SELECT count() FROM wanledger.flow_records_local");
        char sql[256];
        snprintf(sql, sizeof sql,
                 "SELECT count() FROM wanledger.flow_records_local"
                 " WHERE cityHash64(agent_id, seq) %% 2 != %d",
                 i);
        long long elsewhere = th_ch_num(&S[i], sql);
        print_message("shard %d (%s): %lld rows, %lld of them belong to the other shard\n", i + 1,
                      S[i].url, on[i], elsewhere);
        assert_int_equal(elsewhere, 0);
        assert_true(on[i] > 0);
    }
    assert_int_equal(on[0] + on[1], ROWS);
    /* and they went there straight, not through the Distributed table */
    char *m = NULL;
    assert_int_equal(fx_http(&F, "GET", "/metrics", NULL, NULL, NULL, 0, &m), 200);
    const char *k = strstr(m, "\nwanledger_clickhouse_shard_inserts_total ");
    assert_non_null(k);
    long long straight = atoll(k + strlen("\nwanledger_clickhouse_shard_inserts_total "));
    print_message("INSERTs sent straight to a shard: %lld\n", straight);
    assert_true(straight >= 2);
    free(m);
    assert_int_equal(th_ch_num(&S[1], "SELECT count() FROM wanledger.flow_records FINAL"), ROWS);
    assert_int_equal(th_ch_num(&S[0], "SELECT sum(tx_bytes) FROM wanledger.flow_records FINAL"),
                     TX_SUM);

    /* the same rows again through the Distributed table: collapsed by FINAL on their shard */
    char *ok = th_ch_query(&S[0], "INSERT INTO wanledger.flow_records SELECT * FROM"
                                  " wanledger.flow_records WHERE agent_id IN ('agent-01',"
                                  " 'agent-02', 'agent-05')");
    assert_non_null(ok);
    free(ok);
    long long raw = 0;
    for (int i = 0; i < 60 && raw != ROWS + 3 * SEQS * FLOWS; i++) { /* sent asynchronously */
        raw = th_ch_num(&S[0], "SELECT count() FROM wanledger.flow_records");
        if (raw != ROWS + 3 * SEQS * FLOWS) {
            struct timespec ts = {0, 100000000};
            nanosleep(&ts, NULL);
        }
    }
    assert_int_equal(raw, ROWS + 3 * SEQS * FLOWS); /* stored twice */
    assert_int_equal(th_ch_num(&S[0], "SELECT count() FROM wanledger.flow_records FINAL"), ROWS);
    assert_int_equal(th_ch_num(&S[0], "SELECT sum(tx_bytes) FROM wanledger.flow_records FINAL"),
                     TX_SUM);
    /* the window reconciled again now, summed by ClickHouse: each flow once */
    char sql[300];
    snprintf(sql, sizeof sql, "UPDATE window_state SET dirty = true WHERE window_start = '%s'",
             fx_ts(ws));
    PQclear(PQexec(F.db, sql));
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM window_state WHERE dirty AND window_start = '%s'", fx_ts(ws));
    for (int i = 0; i < 300 && fx_num(&F, sql) != 0; i++) {
        struct timespec ts = {0, 100000000};
        nanosleep(&ts, NULL);
    }
    assert_int_equal(fx_num(&F, sql), 0);
    snprintf(sql, sizeof sql,
             "SELECT coalesce(max(attributed_bytes), -1) FROM heatmap_cells WHERE window_start ="
             " '%s' AND src_site = 'nyc' AND dst_site = 'chi'",
             fx_ts(ws));
    print_message("cell nyc->chi after the duplicates: %lld attributed bytes\n", fx_num(&F, sql));
    assert_int_equal(fx_num(&F, sql), TX_SUM);
}

static struct cfg_clickhouse node(const char *first, const char *second)
{
    static char *urls[2];
    urls[0] = (char *)first;
    urls[1] = (char *)second;
    return (struct cfg_clickhouse){.enabled = true,
                                   .url = (char *)first,
                                   .database = "wanledger",
                                   .cluster = "wl",
                                   .shard_urls = urls,
                                   .n_shard_urls = second ? 2 : 1,
                                   .user = "default",
                                   .password = TH_CH_PASSWORD,
                                   .batch_rows = 1000,
                                   .timeout_ms = 5000};
}

static void test_wrong_urls_refused(void **state)
{
    (void)state;
    struct chshard m;
    char err[512];
    struct cfg_clickhouse ch = node(S[0].url, S[1].url);
    assert_int_equal(chshard_resolve(&ch, &m, err, sizeof err), 0);
    assert_int_equal(m.n, 2);
    assert_int_equal(m.n_slots, 2);
    chshard_free(&m);

    ch = node(S[1].url, S[0].url);
    assert_int_equal(chshard_resolve(&ch, &m, err, sizeof err), -1);
    print_message("reversed: %s\n", err);
    char want[160];
    snprintf(want, sizeof want, "shard_urls[0]: %s is shard 2 of cluster wl, not shard 1",
             S[1].url);
    assert_non_null(strstr(err, want));

    ch = node(S[0].url, NULL);
    assert_int_equal(chshard_resolve(&ch, &m, err, sizeof err), -1);
    print_message("one URL: %s\n", err);
    assert_non_null(strstr(err, "1 URLs, but cluster wl has 2 shards"));
}

static int setup(void **state)
{
    (void)state;
    int tcp[2] = {th_free_port(), th_free_port()};
    char xml[1024];
    snprintf(xml, sizeof xml,
             " <remote_servers><wl>"
             "<shard><replica><host>127.0.0.1</host><port>%d</port><user>default</user>"
             "<password>" TH_CH_PASSWORD "</password></replica></shard>"
             "<shard><replica><host>127.0.0.1</host><port>%d</port><user>default</user>"
             "<password>" TH_CH_PASSWORD "</password></replica></shard>"
             "</wl></remote_servers>\n",
             tcp[0], tcp[1]);
    th_ch_start_on(&S[0], xml, tcp[0]);
    th_ch_start_on(&S[1], xml, tcp[1]);
    char extra[1200];
    snprintf(extra, sizeof extra,
             " \"tick_seconds\": 1, \"grace_seconds\": 1,\n"
             " \"analytics\": {\"clickhouse\": {\"url\": \"%s\", \"database\": \"wanledger\","
             " \"cluster\": \"wl\", \"shard_urls\": [\"%s\", \"%s\"], \"password_file\": \"%s\","
             " \"batch_rows\": 1000, \"timeout_ms\": 5000}},",
             S[0].url, S[0].url, S[1].url, S[0].password_file);
    fx_setup(&F, "ch-shards", extra);
    fx_start(&F);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    fx_stop(&F);
    th_ch_stop(&S[0]);
    th_ch_stop(&S[1]);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_key_is_clickhouses),
                                       cmocka_unit_test(test_rows_on_their_shards),
                                       cmocka_unit_test(test_wrong_urls_refused)};
    return cmocka_run_group_tests(tests, setup, teardown);
}
