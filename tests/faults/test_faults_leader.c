/* Two (and more) reconcilers on one real PostgreSQL:
 * - concurrent start-ups: 3 rounds of 4 reconcilers started at the same instant; every one must
 *   come up and stay up (before the fix the config sync raced on the sites primary key);
 * - one leader: A and B both take ingest (reports posted to each are stored), exactly one holds
 *   the leader lock (wanledger_leader 1) and only that one reconciles windows;
 * - takeover with a gap alert open: the leader is SIGKILLed; the other one leads within a few
 *   seconds (measured from the kill to its /metrics saying wanledger_leader 1), and the webhook
 *   receiver gets exactly one delivery per resend period before, across and after the kill. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "fixture.h"
#include "fx_hook.h"
#include "harness.h"
#include "timeutil.h"

#define SEC      TM_USEC_PER_SEC
#define RESEND_S 3

/* ---- reconcilers ---------------------------------------------------------------------------- */

static char *config_extra(void)
{
    return fx_fmt(" \"tick_seconds\": 1, \"grace_seconds\": 0,"
                  " \"alerts\": {\"webhooks\": [\"http://127.0.0.1:%d/api/v2/alerts\"],"
                  " \"resend_seconds\": %d},",
                  fx_hook_port(), RESEND_S);
}

static pid_t spawn(struct fx *f)
{
    char *argv[] = {(char *)th_bin("wanledger"), "--config", f->cfg_path, "reconcile", NULL};
    pid_t p = th_spawn(argv, f->log_path);
    assert_true(p > 0);
    return p;
}

static bool alive(pid_t p)
{
    int st;
    return waitpid(p, &st, WNOHANG) == 0;
}

/* A gauge or counter value from the reconciler's /metrics (-1 when absent or unreachable). */
static long long metric(struct fx *f, const char *line_prefix)
{
    char *resp = NULL;
    long long v = -1;
    if (fx_http(f, "GET", "/metrics", NULL, NULL, NULL, 0, &resp) == 200) {
        char *want = fx_fmt("\n%s", line_prefix); /* a sample line, not the HELP text */
        const char *p = strstr(resp, want);
        if (p)
            v = atoll(p + strlen(want));
        free(want);
    }
    free(resp);
    return v;
}

static void test_concurrent_startups(void **state)
{
    (void)state;
    static struct fx f[4];
    for (int round = 0; round < 3; round++) {
        pid_t pid[4];
        char tag[32];
        for (int i = 0; i < 4; i++) {
            snprintf(tag, sizeof(tag), "faults-start-%d-%d", round, i);
            fx_setup(&f[i], tag, " \"tick_seconds\": 3600,");
        }
        for (int i = 0; i < 4; i++)
            pid[i] = spawn(&f[i]);
        int up = 0;
        for (int i = 0; i < 4; i++) {
            bool ok = th_wait_port(f[i].port, 20000) == 0 && alive(pid[i]);
            if (!ok)
                th_sh("tail -5 '%s' >&2", f[i].log_path);
            up += ok;
        }
        printf("round %d: %d of 4 simultaneous start-ups serving\n", round + 1, up);
        assert_int_equal(up, 4);
        for (int i = 0; i < 4; i++) {
            f[i].pid = pid[i];
            fx_stop(&f[i]);
        }
    }
}

static struct fx A, B;
static pid_t pa, pb;

static void post_report(struct fx *f, int seq, int64_t ws)
{
    char *body =
        fx_fmt("{\"version\":1,\"host\":\"nyc-gpu-1\",\"agent_id\":\"lead-1\",\"seq\":%d,"
               "\"window_start\":\"%s\",\"window_seconds\":60,\"flows\":[{\"source\":\"socket\","
               "\"proto\":\"tcp\",\"local\":\"10.1.0.2:40000\",\"remote\":\"10.2.0.2:5201\","
               "\"role\":\"client\",\"tx_bytes\":1000,\"rx_bytes\":0}]}",
               seq, fx_ts(ws));
    char *resp = NULL;
    assert_int_equal(
        fx_http(f, "POST", "/v1/attributions", FX_TOKEN_AGENT, NULL, body, strlen(body), &resp),
        200);
    free(resp);
    free(body);
}

static void test_one_leader_reconciles(void **state)
{
    (void)state;
    char *extra = config_extra();
    fx_setup(&A, "faults-lead-a", extra);
    fx_setup(&B, "faults-lead-b", extra);
    free(extra);
    pa = spawn(&A);
    assert_int_equal(th_wait_port(A.port, 20000), 0);
    for (int i = 0; i < 100 && metric(&A, "wanledger_leader ") != 1; i++)
        usleep(50000);
    assert_int_equal(metric(&A, "wanledger_leader "), 1);
    pb = spawn(&B);
    assert_int_equal(th_wait_port(B.port, 20000), 0);
    /* both take ingest */
    int64_t w0 = fx_window_ago(30, 60);
    for (int i = 0; i < 10; i++)
        post_report(i % 2 ? &B : &A, i + 1, w0 + (int64_t)i * 60 * SEC);
    assert_int_equal(fx_num(&A, "SELECT count(*) FROM flow_reports WHERE agent_id = 'lead-1'"), 10);
    /* the leader reconciles them; the follower reconciles nothing */
    char sql[256];
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM window_state WHERE NOT dirty AND reconciled_at IS NOT NULL"
             " AND window_start >= '%s'",
             fx_ts(w0));
    for (int i = 0; i < 200 && fx_num(&A, sql) < 10; i++)
        usleep(50000);
    assert_int_equal(fx_num(&A, sql), 10);
    sleep(2); /* a few more ticks of both */
    long long ra = metric(&A, "wanledger_reconcile_windows_total{result=\"ok\"} ");
    long long rb = metric(&B, "wanledger_reconcile_windows_total{result=\"ok\"} ");
    printf("leader A reconciled %lld windows, follower B %lld; leader gauges %lld / %lld\n", ra, rb,
           metric(&A, "wanledger_leader "), metric(&B, "wanledger_leader "));
    assert_true(ra >= 10);
    assert_int_equal(rb, 0);
    assert_int_equal(metric(&B, "wanledger_leader "), 0);
}

static void test_takeover_with_open_alert(void **state)
{
    (void)state;
    /* an open gap alert on a pair no window touches: nothing resolves it during the test */
    PGresult *r = PQexec(A.db, "INSERT INTO gap_alerts (kind, src_site, dst_site, state,"
                               " first_window, last_window, summary, circuit) VALUES ('gap',"
                               " 'osl', 'nyc', 'open', now() - interval '1 hour',"
                               " now() - interval '1 hour', 'test alert', '')");
    assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
    PQclear(r);
    assert_true(fx_hook_wait(3, 20) >= 3);
    /* kill the leader somewhere inside a resend period */
    usleep(1100000);
    int before = fx_hook_count();
    int64_t kill_ns = tm_mono_ns();
    assert_int_equal(kill(pa, SIGKILL), 0);
    int st;
    assert_int_equal(waitpid(pa, &st, 0), pa);
    int64_t took_ns = -1;
    while (tm_mono_ns() - kill_ns < 20 * 1000000000LL) {
        if (metric(&B, "wanledger_leader ") == 1) {
            took_ns = tm_mono_ns() - kill_ns;
            break;
        }
        usleep(20000);
    }
    printf("takeover: B leads %.3f s after A was SIGKILLed\n", (double)took_ns / 1e9);
    assert_true(took_ns > 0 && took_ns < 5 * 1000000000LL);
    assert_true(fx_hook_wait(before + 3, 30) >= before + 3);
    B.pid = pb; /* stopped here, and it must exit cleanly (it was left running before) */
    fx_stop(&B);
    int n = fx_hook_count();
    double min_gap = 1e9, max_gap = 0;
    for (int i = 1; i < n; i++) {
        double g = (double)(fx_hook_get(i).at_ns - fx_hook_get(i - 1).at_ns) / 1e9;
        min_gap = g < min_gap ? g : min_gap;
        max_gap = g > max_gap ? g : max_gap;
    }
    printf("%d deliveries (%d before the kill), gaps between them %.3f .. %.3f s (resend %d s)\n",
           n, before, min_gap, max_gap, RESEND_S);
    /* exactly one per resend period: never two within one, none missed beyond the takeover */
    assert_true(min_gap >= RESEND_S - 0.25);
    /* none missed: at most the takeover plus a poll and some scheduling slack on a loaded host */
    assert_true(max_gap <= RESEND_S + (double)took_ns / 1e9 + 3.0);
    A.pid = 0;
    fx_stop(&A);
}

int main(void)
{
    fx_hook_start(0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_concurrent_startups),
        cmocka_unit_test(test_one_leader_reconciles),
        cmocka_unit_test(test_takeover_with_open_alert),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    fx_hook_stop();
    return rc;
}
