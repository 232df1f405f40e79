/* Reads never hold ingest (reconciler/readers.h), against the real `wanledger reconcile` and
 * PostgreSQL: while a read request waits in the database (here on a table lock, as behind a
 * migration or a long prune; in production also a week-long page at 500 sites, or a ClickHouse
 * that does not answer), an agent's report is still acknowledged at once, /healthz still
 * answers, and the waiting read gets its answer once the lock goes. Before the readers, every
 * page and API ran on the event loop: the report waited for the lock (its answer came only
 * once hold_lock committed). */
#include <pthread.h>
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

#define STR_(x) #x
#define STR(x)  STR_(x)

static struct fx F;

struct slow_get {
    pthread_t th;
    _Atomic int status; /* 0 until the answer */
    double seconds;
};

static void *get_cells(void *arg)
{
    struct slow_get *g = arg;
    int64_t t0 = tm_mono_ns();
    char *resp = NULL;
    int st = fx_http(&F, "GET", "/api/v1/cells", FX_TOKEN_READER, NULL, NULL, 0, &resp);
    g->seconds = (double)(tm_mono_ns() - t0) / 1e9;
    g->status = st;
    free(resp);
    return NULL;
}

/* Holds heatmap_cells (which /api/v1/cells reads) for HOLD_S seconds on its own connection,
 * then commits: on code that waits for the lock the test ends with its assertions, not a hang. */
#define HOLD_S 4
static _Atomic int locked;

static void *hold_lock(void *arg)
{
    (void)arg;
    PGconn *c = PQconnectdb(F.conninfo);
    PGresult *r = PQexec(c, "BEGIN; LOCK TABLE heatmap_cells IN ACCESS EXCLUSIVE MODE");
    locked = PQresultStatus(r) == PGRES_COMMAND_OK ? 1 : -1;
    PQclear(r);
    PQclear(PQexec(c, "SELECT pg_sleep(" STR(HOLD_S) ")"));
    PQclear(PQexec(c, "COMMIT"));
    PQfinish(c);
    return NULL;
}

static void test_report_while_a_read_waits(void **state)
{
    (void)state;
    pthread_t locker;
    int64_t t_lock = tm_mono_ns();
    assert_int_equal(pthread_create(&locker, NULL, hold_lock, NULL), 0);
    while (!locked)
        usleep(10000);
    assert_int_equal(locked, 1);
    struct slow_get g = {0};
    assert_int_equal(pthread_create(&g.th, NULL, get_cells, &g), 0);
    /* the read is in the database, waiting for the lock */
    long long waiting = 0;
    for (int i = 0; i < 40 && waiting == 0; i++) {
        usleep(50000);
        waiting = fx_num(&F, "SELECT count(*) FROM pg_locks WHERE NOT granted"
                             " AND relation = 'heatmap_cells'::regclass");
    }
    assert_true(waiting >= 1); /* the read (and the leader's first pass, if it reads them) */

    int64_t w[2] = {0, fx_window_ago(3, 60)};
    int64_t t0 = tm_mono_ns();
    fx_gap_report(&F, w, 1, 123456789);
    double post_s = (double)(tm_mono_ns() - t0) / 1e9;
    t0 = tm_mono_ns();
    char *resp = NULL;
    assert_int_equal(fx_http(&F, "GET", "/healthz", NULL, NULL, NULL, 0, &resp), 200);
    double health_s = (double)(tm_mono_ns() - t0) / 1e9;
    free(resp);
    /* /metrics (the other reader) shows the held read, nothing queued, no body pending */
    assert_int_equal(fx_http(&F, "GET", "/metrics", NULL, NULL, NULL, 0, &resp), 200);
    assert_non_null(strstr(resp, "\nwanledger_reads_running 1\n"));
    assert_non_null(strstr(resp, "\nwanledger_reads_queued 0\n"));
    assert_non_null(strstr(resp, "\nwanledger_ingest_bodies_pending 0\n"));
    free(resp);
    double held_s = (double)(tm_mono_ns() - t_lock) / 1e9;
    int still = g.status;
    print_message("with a read waiting on a lock: report acknowledged in %.3f s, /healthz in "
                  "%.3f s, %.3f s into the %d s hold (read answered yet: %s)\n",
                  post_s, health_s, held_s, HOLD_S, still ? "yes" : "no");
    /* both answered while the lock was still held, the read still waiting */
    assert_int_equal(still, 0);
    assert_true(held_s < HOLD_S - 0.5);
    assert_true(post_s < 2.0 && health_s < 2.0);

    pthread_join(locker, NULL);
    pthread_join(g.th, NULL);
    print_message("the read answered %d after %.3f s\n", g.status, g.seconds);
    assert_int_equal(g.status, 200);
    assert_true(g.seconds >= HOLD_S - 1.5);
    assert_int_equal(fx_http(&F, "GET", "/metrics", NULL, NULL, NULL, 0, &resp), 200);
    assert_non_null(strstr(resp, "\nwanledger_reads_running 0\n"));
    free(resp);
    /* and the report is stored once */
    assert_int_equal(fx_num(&F, "SELECT count(*) FROM flow_reports WHERE agent_id = 'agent-nyc'"),
                     1);
    assert_int_equal(
        fx_num(&F, "SELECT sum(tx_bytes) FROM flow_records WHERE agent_id = 'agent-nyc'"),
        123456789);
}

int main(void)
{
    fx_setup(&F, "recon-reads", " \"tick_seconds\": 3600,");
    fx_start(&F);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_report_while_a_read_waits),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    fx_stop(&F);
    return rc;
}
