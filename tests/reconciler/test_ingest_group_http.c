/* The grouped commit through the real `wanledger reconcile` (reconciler/workers.c's ready list
 * and store_group.h): twelve agent reports posted at once, two of them resends of others, while
 * the test holds window_state locked — so the workers' transactions cannot commit. No report is
 * answered before its COMMIT; after the lock is released every one gets 200 with its own exact
 * body (of two identical posts, one stored, the other a duplicate), every flow is stored once,
 * and /metrics counts twelve reports in fewer than twelve transactions. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fixture.h"
#include "harness.h"

#define N_AGENTS 10
#define N_POSTS  12 /* agents 0 and 1 posted twice */
#define FLOWS    200

static struct fx F;
static char *g_body[N_POSTS];
static char *g_resp[N_POSTS];
static int g_status[N_POSTS];
static atomic_int g_answered;
static long long g_tx[N_AGENTS];

static void *poster(void *arg)
{
    size_t i = (size_t)(intptr_t)arg;
    g_status[i] = fx_http(&F, "POST", "/v1/attributions", FX_TOKEN_AGENT, NULL, g_body[i],
                          strlen(g_body[i]), &g_resp[i]);
    atomic_fetch_add(&g_answered, 1);
    return NULL;
}

static char *report(int a, int64_t ws)
{
    size_t cap = 512 + FLOWS * 200, n = 0;
    char *b = malloc(cap);
    assert_non_null(b);
    n += (size_t)snprintf(b + n, cap - n,
                          "{\"version\":1,\"host\":\"hg%d\",\"agent_id\":\"hg%d\",\"seq\":1,"
                          "\"window_start\":\"%s\",\"flows\":[",
                          a, a, fx_ts(ws));
    g_tx[a] = 0;
    for (int k = 0; k < FLOWS; k++) {
        long long tx = 1000LL * a + k;
        n += (size_t)snprintf(b + n, cap - n,
                              "%s{\"source\":\"socket\",\"proto\":\"tcp\",\"local\":"
                              "\"10.1.0.%d:%d\",\"remote\":\"10.2.0.2:5201\",\"role\":\"client\","
                              "\"tx_bytes\":%lld,\"rx_bytes\":1}",
                              k ? "," : "", 1 + a, 30000 + k, tx);
        g_tx[a] += tx;
    }
    snprintf(b + n, cap - n, "]}");
    return b;
}

static long long metric(const char *text, const char *name)
{
    char key[128];
    snprintf(key, sizeof key, "\n%s ", name);
    const char *p = strstr(text, key);
    if (!p)
        fail_msg("%s not in /metrics", name);
    return atoll(p + strlen(key));
}

static void test_group_over_http(void **state)
{
    (void)state;
    int64_t w = fx_window_ago(5, 60);
    for (int a = 0; a < N_AGENTS; a++)
        g_body[a] = report(a, w);
    g_body[10] = strdup(g_body[0]);
    g_body[11] = strdup(g_body[1]);
    PGresult *r = PQexec(F.db, "BEGIN; LOCK TABLE window_state IN EXCLUSIVE MODE");
    assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
    PQclear(r);
    pthread_t t[N_POSTS];
    for (size_t i = 0; i < N_POSTS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, poster, (void *)(intptr_t)i), 0);
    /* both workers wait for a lock in their transactions — window_state, or the row of a report
     * the other worker's transaction holds (a resend) — the other reports parsed or queued:
     * nothing is committed, so nothing may be answered */
    PGconn *watch = PQconnectdb(F.conninfo); /* outside the locking transaction, whose view
                                                 of pg_stat_activity stays as first read */
    assert_int_equal(PQstatus(watch), CONNECTION_OK);
    int waiting = 0;
    for (int k = 0; k < 100 && waiting < 2; k++) {
        usleep(50000);
        PGresult *q = PQexec(watch, "SELECT count(*) FROM pg_stat_activity WHERE"
                                    " wait_event_type = 'Lock' AND (query LIKE '%window_state%'"
                                    " OR query LIKE '%flow_reports%')");
        waiting = PQresultStatus(q) == PGRES_TUPLES_OK ? atoi(PQgetvalue(q, 0, 0)) : -1;
        PQclear(q);
    }
    PQfinish(watch);
    assert_true(waiting >= 2);
    usleep(200000);
    assert_int_equal(atomic_load(&g_answered), 0);
    r = PQexec(F.db, "COMMIT");
    assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
    PQclear(r);
    for (size_t i = 0; i < N_POSTS; i++)
        pthread_join(t[i], NULL);
    char fresh[64], dup[64];
    snprintf(fresh, sizeof fresh, "{\"received\":%d,\"stored\":%d,\"duplicate\":0}\n", FLOWS,
             FLOWS);
    snprintf(dup, sizeof dup, "{\"received\":%d,\"stored\":0,\"duplicate\":%d}\n", FLOWS, FLOWS);
    for (size_t i = 0; i < N_POSTS; i++) {
        assert_int_equal(g_status[i], 200);
        assert_non_null(g_resp[i]);
    }
    for (int a = 2; a < N_AGENTS; a++)
        assert_string_equal(g_resp[a], fresh);
    for (int a = 0; a < 2; a++) { /* one of the two identical posts stored it */
        bool first = !strcmp(g_resp[a], fresh);
        assert_string_equal(g_resp[a], first ? fresh : dup);
        assert_string_equal(g_resp[10 + a], first ? dup : fresh);
    }
    assert_int_equal(fx_num(&F, "SELECT count(*) FROM flow_reports WHERE agent_id LIKE 'hg%'"),
                     N_AGENTS);
    assert_int_equal(fx_num(&F, "SELECT count(*) FROM flow_records WHERE agent_id LIKE 'hg%'"),
                     N_AGENTS * FLOWS);
    for (int a = 0; a < N_AGENTS; a++) {
        char *q = fx_fmt("SELECT sum(tx_bytes) FROM flow_records WHERE agent_id = 'hg%d'", a);
        assert_int_equal(fx_num(&F, q), g_tx[a]);
        free(q);
    }
    char *m = NULL;
    assert_int_equal(fx_http(&F, "GET", "/metrics", NULL, NULL, NULL, 0, &m), 200);
    long long reports = metric(m, "wanledger_ingest_commit_reports_sum");
    long long commits = metric(m, "wanledger_ingest_commit_reports_count");
    fprintf(stderr, "%lld reports in %lld transactions\n", reports, commits);
    assert_int_equal(reports, N_POSTS);
    assert_true(commits < N_POSTS);
    assert_int_equal(metric(m, "wanledger_ingest_group_fallbacks_total"), 0);
    free(m);
    for (size_t i = 0; i < N_POSTS; i++) {
        free(g_body[i]);
        free(g_resp[i]);
    }
}

int main(void)
{
    fx_setup(&F, "recon-group", " \"tick_seconds\": 3600, \"open_on_loopback\": true,");
    fx_start(&F);
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_group_over_http)};
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    fx_stop(&F);
    return rc;
}
