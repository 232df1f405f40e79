/* Acknowledged = stored exactly once, across PostgreSQL fast and immediate restarts and a
 * reconciler SIGKILL, all while ingest runs. Two agents (threads) post reports of 3 flows each,
 * seq 1, 2, ... as fast as they are answered, and a poller posts counter samples; like the real
 * clients, each retries the same body until it gets 200. Meanwhile PostgreSQL is restarted with
 * `pg_ctl -m fast`, then `-m immediate` (a crash: only what was flushed survives), then the
 * reconciler is SIGKILLed and started again. Afterwards every acknowledged report is stored once
 * with its 3 flows, nothing else is stored, and every acknowledged sample is stored once.
 * The database commits synchronously (ALTER DATABASE ... synchronous_commit = on, what
 * scripts/pg.sh now does for the demo): with synchronous_commit = off an immediate restart may
 * drop commits the reconciler already acknowledged. */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "fixture.h"
#include "harness.h"
#include "timeutil.h"

#define SEC TM_USEC_PER_SEC

static struct fx F;
static int64_t W0;
static atomic_bool stop_clients;

struct client {
    pthread_t t;
    int id; /* 0, 1: agents; 2: poller */
    long acked;
    long attempts, failures;
};

static int post_until_ok(const char *path, const char *token, const char *body)
{
    for (int tries = 0;; tries++) {
        char *resp = NULL;
        int st = fx_http(&F, "POST", path, token, NULL, body, strlen(body), &resp);
        free(resp);
        if (st == 200)
            return tries;
        usleep(50000);
        if (tries > 2000)
            return -1; /* 100 s: give up, the test fails on the count */
    }
}

static void *agent(void *arg)
{
    struct client *c = arg;
    while (!atomic_load(&stop_clients)) {
        long seq = c->acked + 1;
        char ws[TM_RFC3339_LEN];
        tm_format_rfc3339(W0 + (seq % 50) * 60 * SEC, ws);
        char *body = fx_fmt("{\"version\":1,\"host\":\"h%d\",\"agent_id\":\"pgr-%d\",\"seq\":%ld,"
                            "\"window_start\":\"%s\",\"flows\":["
                            "{\"source\":\"socket\",\"proto\":\"tcp\",\"local\":\"10.1.0.2:%ld\","
                            "\"remote\":\"10.2.0.2:5201\",\"tx_bytes\":%ld,\"rx_bytes\":1},"
                            "{\"source\":\"socket\",\"proto\":\"tcp\",\"local\":\"10.1.0.3:%ld\","
                            "\"remote\":\"10.2.0.2:5201\",\"tx_bytes\":%ld,\"rx_bytes\":2},"
                            "{\"source\":\"socket\",\"proto\":\"udp\",\"local\":\"10.1.0.4:%ld\","
                            "\"remote\":\"10.2.0.2:53\",\"tx_bytes\":%ld,\"rx_bytes\":3}]}",
                            c->id, c->id, seq, ws, 10000 + seq % 50000, seq, 10000 + seq % 50000,
                            2 * seq, 10000 + seq % 50000, 3 * seq);
        int tries = post_until_ok("/v1/attributions", FX_TOKEN_AGENT, body);
        free(body);
        if (tries < 0)
            break;
        c->attempts += tries + 1;
        c->failures += tries;
        c->acked = seq;
    }
    return NULL;
}

static void *poller(void *arg)
{
    struct client *c = arg;
    while (!atomic_load(&stop_clients)) {
        long i = c->acked;
        char at[TM_RFC3339_LEN];
        tm_format_rfc3339(W0 + i * SEC, at);
        char *body = fx_fmt("{\"version\":1,\"poller\":\"p1\",\"samples\":["
                            "{\"device\":\"nyc-border-1\",\"interface\":\"et-0/0/1\",\"at\":\"%s\","
                            "\"in_octets\":%ld,\"out_octets\":%ld}]}",
                            at, i, 2 * i);
        int tries = post_until_ok("/v1/counters", FX_TOKEN_POLLER, body);
        free(body);
        if (tries < 0)
            break;
        c->attempts += tries + 1;
        c->failures += tries;
        c->acked = i + 1;
    }
    return NULL;
}

static void pg_ctl(const char *mode)
{
    const char *bindir = fx_row(&F, "SELECT setting FROM pg_config WHERE name = 'BINDIR'");
    char bin[512], data[512];
    snprintf(bin, sizeof(bin), "%s", bindir);
    snprintf(data, sizeof(data), "%s", fx_row(&F, "SHOW data_directory"));
    PQfinish(F.db);
    F.db = NULL;
    int64_t t0 = tm_mono_ns();
    assert_int_equal(th_sh("su postgres -s /bin/sh -c '%s/pg_ctl -D %s -m %s -w -t 60 restart' "
                           ">/dev/null 2>&1",
                           bin, data, mode),
                     0);
    printf("PostgreSQL restarted (-m %s) in %.2f s\n", mode, (double)(tm_mono_ns() - t0) / 1e9);
    F.db = PQconnectdb(F.conninfo);
    assert_int_equal(PQstatus(F.db), CONNECTION_OK);
}

static void test_acked_stored_once(void **state)
{
    (void)state;
    static struct client cl[3];
    atomic_store(&stop_clients, false);
    for (int i = 0; i < 3; i++) {
        cl[i].id = i;
        assert_int_equal(pthread_create(&cl[i].t, NULL, i < 2 ? agent : poller, &cl[i]), 0);
    }
    sleep(2);
    long before_fast = cl[0].acked + cl[1].acked;
    pg_ctl("fast");
    sleep(2);
    pg_ctl("immediate");
    sleep(2);
    assert_int_equal(kill(F.pid, SIGKILL), 0);
    int st;
    assert_int_equal(waitpid(F.pid, &st, 0), F.pid);
    F.pid = 0;
    usleep(500000);
    fx_start(&F);
    sleep(2);
    atomic_store(&stop_clients, true);
    for (int i = 0; i < 3; i++)
        pthread_join(cl[i].t, NULL);
    printf("acked: agent 0 %ld reports (%ld failed attempts), agent 1 %ld (%ld), poller %ld "
           "samples (%ld); %ld reports before the first restart\n",
           cl[0].acked, cl[0].failures, cl[1].acked, cl[1].failures, cl[2].acked, cl[2].failures,
           before_fast);
    /* the faults were felt, and ingest went on after each */
    assert_true(cl[0].failures + cl[1].failures + cl[2].failures > 0);
    assert_true(cl[0].acked > before_fast / 2 + 10);
    for (int i = 0; i < 2; i++) {
        char *sql = fx_fmt("SELECT count(*) || '|' || coalesce(min(seq), 0) || '|' ||"
                           " coalesce(max(seq), 0) FROM flow_reports WHERE agent_id = 'pgr-%d'",
                           i);
        char want[96];
        snprintf(want, sizeof(want), "%ld|%d|%ld", cl[i].acked, cl[i].acked ? 1 : 0, cl[i].acked);
        assert_string_equal(fx_row(&F, sql), want);
        free(sql);
        sql = fx_fmt("SELECT count(*) FROM (SELECT seq FROM flow_records WHERE agent_id = 'pgr-%d'"
                     " GROUP BY seq HAVING count(*) <> 3) x",
                     i);
        assert_int_equal(fx_num(&F, sql), 0);
        free(sql);
        sql = fx_fmt("SELECT count(*) FROM flow_records WHERE agent_id = 'pgr-%d'", i);
        assert_int_equal(fx_num(&F, sql), 3 * cl[i].acked);
        free(sql);
        /* the bytes: sum over seq 1..n of (seq + 2 seq + 3 seq) */
        sql = fx_fmt("SELECT sum(tx_bytes) FROM flow_records WHERE agent_id = 'pgr-%d'", i);
        assert_int_equal(fx_num(&F, sql), 6 * cl[i].acked * (cl[i].acked + 1) / 2);
        free(sql);
    }
    assert_int_equal(fx_num(&F, "SELECT count(*) FROM counter_samples"), cl[2].acked);
    assert_int_equal(fx_num(&F, "SELECT count(DISTINCT at) FROM counter_samples"), cl[2].acked);
}

int main(void)
{
    fx_setup(&F, "faults-pg-restart", "");
    PGresult *r = PQexec(F.db, "ALTER DATABASE wanledger SET synchronous_commit = on");
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
        fprintf(stderr, "%s", PQresultErrorMessage(r));
        return 1;
    }
    PQclear(r);
    W0 = fx_window_ago(60, 60);
    fx_start(&F);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_acked_stored_once),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    fx_stop(&F);
    return rc;
}
