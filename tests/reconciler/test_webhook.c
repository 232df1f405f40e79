/* Alert delivery end to end: the real `wanledger reconcile` (tick 1 s, resend_seconds 2) and a
 * small HTTP receiver in this test standing in for Alertmanager. Three red windows open a gap
 * alert; the receiver fails the first POST (503), so it must come again after the 1 s backoff;
 * while open it is re-sent every 2 s; three good windows resolve it and the receiver gets it
 * with endsAt, once. Payloads are checked against Alertmanager API v2 and the gap_alerts row.
 *
 * Counters (nyc -> chi): +1,000,000,000 octets, +1,000,000 packets per window: payload
 * 934,000,000 bytes. Windows 1-3: alice's flow 100,000,000 bytes -> coverage 0.107 (red);
 * windows 4-6: 920,000,000 -> 0.985 (ok). alert_windows = resolve_windows = 3. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
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
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "fixture.h"
#include "fx_hook.h"
#include "harness.h"
#include "timeutil.h"

#define SEC      TM_USEC_PER_SEC
#define MAX_POST 64

static struct fx F;
static int64_t W[8]; /* window starts W[1..7] */

/* ---- the test ----------------------------------------------------------------------------- */

static char *body_of(int i)
{
    char *b = strdup(fx_hook_get(i).body);
    return b;
}

/* endsAt of the POST's (one) alert minus the time it arrived, in seconds; cuts endsAt out of
 * the body so that bodies compare equal otherwise. */
static double ends_in(int i, char *b)
{
    char *e = strstr(b, ",\"endsAt\":\"");
    assert_non_null(e);
    char ts[40];
    assert_int_equal(sscanf(e + 11, "%39[^\"]", ts), 1);
    int64_t us;
    assert_int_equal(tm_parse_rfc3339(ts, &us), 0);
    memmove(e, e + 11 + strlen(ts) + 1, strlen(e + 11 + strlen(ts) + 1) + 1);
    double d = (double)(us - fx_hook_get(i).wall_us) / 1e6;
    return d;
}

static void test_open_resend_resolve(void **state)
{
    (void)state;
    /* windows 1-3 red: samples at the starts of 1..4 (window 4 then has only its start sample:
     * incomplete, which counts for neither opening nor resolving) */
    fx_gap_samples(&F, W, 1, 4);
    for (int i = 1; i <= 3; i++)
        fx_gap_report(&F, W, i, 100000000);

    /* 1st POST (answered 503), 2nd after the backoff, 3rd as the re-send */
    assert_int_equal(fx_hook_wait(3, 30), 3);
    const char *row = fx_row(&F, "SELECT id, state, to_char(first_window AT TIME ZONE 'UTC',"
                                 " 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), to_char(last_window AT TIME"
                                 " ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), to_char("
                                 "opened_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS')"
                                 " FROM gap_alerts WHERE kind = 'gap'");
    fprintf(stderr, "gap_alerts: %s\n", row);
    char id[32], st[16], fw[40], lw[40], opened[40];
    assert_int_equal(sscanf(row, "%31[^|]|%15[^|]|%39[^|]|%39[^|]|%39s", id, st, fw, lw, opened),
                     5);
    assert_string_equal(st, "open");
    assert_string_equal(fw, fx_ts(W[1]));
    assert_string_equal(lw, fx_ts(W[3]));

    char *b0 = body_of(0), *b1 = body_of(1), *b2 = body_of(2);
    fprintf(stderr, "POST 1 (answered %d): %s\nPOST 2: %s\nPOST 3: %s\n", fx_hook_get(0).status, b0,
            b1, b2);
    assert_int_equal(fx_hook_get(0).status, 503);
    assert_int_equal(fx_hook_get(1).status, 200);
    assert_string_equal(fx_hook_get(0).path, "/api/v2/alerts");
    /* Alertmanager API v2: an array of alerts with labels, annotations, startsAt, generatorURL */
    assert_int_equal(b0[0], '[');
    assert_non_null(strstr(b0, "\"labels\":{\"alertname\":\"WanledgerGap\",\"kind\":\"gap\","
                               "\"src_site\":\"nyc\",\"dst_site\":\"chi\","
                               "\"severity\":\"warning\"}"));
    assert_non_null(strstr(b0, "\"annotations\":{\"summary\":\""));
    char *starts = fx_fmt("\"startsAt\":\"%s", opened);
    assert_non_null(strstr(b0, starts));
    free(starts);
    char *gen = fx_fmt("\"generatorURL\":\"http://wl.example:7070/heatmap/cell?src=nyc&dst=chi&"
                       "window=%.4s-%.2s-%.2sT%.2s%%3A%.2s%%3A%.2sZ\"",
                       lw, lw + 5, lw + 8, lw + 11, lw + 14, lw + 17);
    assert_non_null(strstr(b0, gen));
    free(gen);
    /* "peak" figures: window 1-3 each left 934,000,000 - 100,000,000 = 834,000,000 unexplained */
    assert_non_null(strstr(b0, "\"peak_unattributed_bytes\":\"834000000\""));
    /* open: endsAt = now + 4 x resend_seconds (8 s), renewed by every (re-)send */
    double e0 = ends_in(0, b0), e1 = ends_in(1, b1), e2 = ends_in(2, b2);
    fprintf(stderr, "endsAt - arrival: %.2f %.2f %.2f s\n", e0, e1, e2);
    /* (less the time the POST took to arrive, which load can stretch) */
    assert_true(e0 > 4.0 && e0 <= 8.1 && e1 > 4.0 && e1 <= 8.1 && e2 > 4.0 && e2 <= 8.1);
    /* the retry carries the same alert; the re-send too */
    assert_string_equal(b0, b1);
    assert_string_equal(b1, b2);
    /* backoff: >= 1 s after the failure; re-send: >= resend_seconds (2 s) after the delivery */
    int64_t backoff_ns = fx_hook_get(1).at_ns - fx_hook_get(0).at_ns;
    int64_t resend_ns = fx_hook_get(2).at_ns - fx_hook_get(1).at_ns;
    fprintf(stderr, "retry after %.2f s, re-send after %.2f s\n", backoff_ns / 1e9,
            resend_ns / 1e9);
    assert_true(backoff_ns >= 900000000LL && backoff_ns < 5000000000LL);
    assert_true(resend_ns >= 1900000000LL && resend_ns < 6000000000LL);
    free(b0);
    free(b1);
    free(b2);

    /* windows 4-6 good: the alert resolves, and is sent once with endsAt */
    fx_gap_samples(&F, W, 5, 7);
    for (int i = 4; i <= 6; i++)
        fx_gap_report(&F, W, i, 920000000);
    int64_t until = tm_mono_ns() + 30 * 1000000000LL;
    int resolved_at = -1;
    while (resolved_at < 0 && tm_mono_ns() < until) {
        int n = fx_hook_wait(fx_hook_count() + 1, 5);
        for (int i = 3; i < n && resolved_at < 0; i++) {
            char *b = body_of(i);
            if (ends_in(i, b) < 1.0) /* the resolution: endsAt = resolved_at, not ahead */
                resolved_at = i;
            free(b);
        }
    }
    assert_true(resolved_at >= 3);
    char *br = body_of(resolved_at);
    fprintf(stderr, "resolution: %s\n", br);
    assert_non_null(strstr(br, "\"alertname\":\"WanledgerGap\""));
    /* resolved_sent is written once the receiver's 200 is back: after the receiver saw it */
    const char *sent_sql = "SELECT state, resolved_sent, resolved_at IS NOT NULL"
                           " FROM gap_alerts WHERE kind = 'gap'";
    assert_string_equal(fx_row_within(&F, sent_sql, "resolved|t|t", 5000), "resolved|t|t");
    free(br);
    /* nothing more about it: no re-send of a resolved alert */
    int before = fx_hook_count();
    assert_int_equal(fx_hook_wait(before + 1, 4), before);

    char *out = NULL;
    assert_int_equal(fx_run(&F, "alerts", &out), 0);
    fprintf(stderr, "%s", out);
    assert_non_null(strstr(out, "gap        nyc->chi         resolved"));
    free(out);
    assert_int_equal(fx_run(&F, "alerts --open", &out), 0);
    assert_non_null(strstr(out, "(no open alerts)"));
    free(out);

    char *m = NULL;
    assert_int_equal(fx_http(&F, "GET", "/metrics", NULL, NULL, NULL, 0, &m), 200);
    assert_non_null(strstr(m, "wanledger_webhook_posts_total{result=\"error\"} 1\n"));
    assert_non_null(strstr(m, "wanledger_alerts_open{kind=\"gap\"} 0\n"));
    free(m);
}

/* Recording a delivery never holds ingest: the mark (UPDATE gap_alerts SET last_sent_at) of an
 * alert whose row another transaction holds (as a window's alert phase does until the window
 * commits) waits on the webhooks' own database thread; an agent's report meanwhile is
 * acknowledged at once. Before, the mark ran on the event loop and the report waited for the
 * row (HOLD_S). The alerts made here name sites the configuration does not have (lon, par):
 * the reconciler's own alert phase leaves such rows as they are, where it would withdraw an open
 * saturation alert of a configured pair that its replayed windows do not show (it did, in some
 * runs, between the two holds, and no re-send came to be held). */
#define HOLD_S 8
static _Atomic int row_locked;

static void *hold_alert_row(void *arg)
{
    (void)arg;
    PGconn *c = PQconnectdb(F.conninfo);
    PGresult *r = PQexec(c, "BEGIN; SELECT id FROM gap_alerts WHERE kind = 'saturation'"
                            " FOR UPDATE");
    row_locked = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 ? 1 : -1;
    PQclear(r);
    char sql[64];
    snprintf(sql, sizeof sql, "SELECT pg_sleep(%d)", HOLD_S);
    PQclear(PQexec(c, sql));
    PQclear(PQexec(c, "COMMIT"));
    PQfinish(c);
    return NULL;
}

/* The backends of delivery marks waiting for a row lock. */
#define MARK_WAITING                                                                               \
    " FROM pg_stat_activity WHERE wait_event_type = 'Lock'"                                        \
    " AND query LIKE 'UPDATE gap_alerts SET last_sent_at%'"

/* Starts *locker holding the saturation alert's row for HOLD_S, then waits until a delivery mark
 * waits for it, for at most HOLD_S - 2 s (the alert is posted now or at its re-send, due 2-3 s
 * after the last post and found by the 1 s poll: up to ~4 s, more on a loaded machine); returns
 * how many marks wait. */
static long long hold_until_mark_waits(pthread_t *locker)
{
    row_locked = 0;
    assert_int_equal(pthread_create(locker, NULL, hold_alert_row, NULL), 0);
    while (!row_locked)
        usleep(10000);
    assert_int_equal(row_locked, 1);
    long long waiting = 0;
    int64_t until = tm_mono_ns() + (int64_t)(HOLD_S - 2) * 1000000000LL;
    while (!waiting && tm_mono_ns() < until) {
        usleep(50000);
        waiting = fx_num(&F, "SELECT count(*)" MARK_WAITING);
    }
    return waiting;
}

/* A number from /metrics: the value after prefix (the sample's name and labels and a space). */
static long long hook_metric(const char *prefix)
{
    char *m = NULL;
    assert_int_equal(fx_http(&F, "GET", "/metrics", NULL, NULL, NULL, 0, &m), 200);
    char *line = fx_fmt("\n%s", prefix); /* the sample, not its # HELP line */
    const char *at = strstr(m, line);
    assert_non_null(at);
    long long v = strtoll(at + strlen(line), NULL, 10);
    free(line);
    free(m);
    return v;
}

static void test_mark_waits_off_the_loop(void **state)
{
    (void)state;
    char *sql = fx_fmt("INSERT INTO gap_alerts (kind, src_site, dst_site, state, first_window,"
                       " last_window, summary) VALUES ('saturation', 'lon', 'par', 'open', '%s',"
                       " '%s', 'lon->par at 97%% of its circuit')",
                       fx_ts(W[5]), fx_ts(W[6]));
    PGresult *r = PQexec(F.db, sql);
    assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
    PQclear(r);
    free(sql);
    pthread_t locker;
    int64_t t_lock = tm_mono_ns();
    long long waiting = hold_until_mark_waits(&locker);
    double waited_s = (double)(tm_mono_ns() - t_lock) / 1e9;
    assert_int_equal(waiting, 1);
    assert_true(waited_s < HOLD_S - 1.5); /* room left to measure the report below */
    /* the waiting mark is seen in /metrics */
    assert_true(hook_metric("wanledger_webhook_db_jobs_pending ") >= 1);

    int64_t t0 = tm_mono_ns();
    fx_gap_report(&F, W, 7, 5000000);
    double post_s = (double)(tm_mono_ns() - t0) / 1e9;
    char *resp = NULL;
    t0 = tm_mono_ns();
    assert_int_equal(fx_http(&F, "GET", "/healthz", NULL, NULL, NULL, 0, &resp), 200);
    double health_s = (double)(tm_mono_ns() - t0) / 1e9;
    free(resp);
    double held_s = (double)(tm_mono_ns() - t_lock) / 1e9;
    print_message("a delivery mark waiting on the alert's row (%.3f s into the %d s hold): report "
                  "acknowledged in %.3f s, /healthz in %.3f s\n",
                  waited_s, HOLD_S, post_s, health_s);
    assert_true(held_s < HOLD_S - 0.5); /* both answered while the row was still held */
    assert_true(post_s < 1.0 && health_s < 1.0);
    pthread_join(locker, NULL);
    /* the mark went through once the row was free */
    const char *q = "SELECT last_sent_at IS NOT NULL FROM gap_alerts WHERE kind = 'saturation'";
    assert_string_equal(fx_row_within(&F, q, "t", 5000), "t");
    assert_int_equal(fx_num(&F, "SELECT count(*) FROM flow_reports WHERE agent_id = 'agent-nyc'"
                                " AND seq = 7"),
                     1);
    /* nothing waits once the marks are done (a poll may be running: 1/s, quick) */
    long long pending = -1;
    for (int k = 0; k < 40 && pending != 0; k++) {
        pending = hook_metric("wanledger_webhook_db_jobs_pending ");
        if (pending)
            usleep(50000);
    }
    assert_int_equal(pending, 0);
    assert_int_equal(hook_metric("wanledger_webhook_marks_lost_total{reason=\"error\"} "), 0);

    /* A mark that fails (its backend ended, as a database restart would) is counted as lost in
     * /metrics, and the thread goes on with a new connection. */
    assert_int_equal(hold_until_mark_waits(&locker), 1);
    assert_int_equal(fx_num(&F, "SELECT count(pg_terminate_backend(pid))" MARK_WAITING), 1);
    long long lost = 0;
    for (int k = 0; k < 40 && !lost; k++) {
        usleep(50000);
        lost = hook_metric("wanledger_webhook_marks_lost_total{reason=\"error\"} ");
    }
    assert_int_equal(lost, 1); /* the one alert its record named */
    assert_int_equal(hook_metric("wanledger_webhook_marks_lost_total{reason=\"queue_full\"} "), 0);
    pthread_join(locker, NULL);
    /* the webhook's database thread connects again: the next alert's delivery is recorded */
    sql = fx_fmt("INSERT INTO gap_alerts (kind, src_site, dst_site, state, first_window,"
                 " last_window, summary) VALUES ('saturation', 'par', 'lon', 'open', '%s',"
                 " '%s', 'par->lon at 96%% of its circuit')",
                 fx_ts(W[5]), fx_ts(W[6]));
    r = PQexec(F.db, sql);
    assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
    PQclear(r);
    free(sql);
    const char *q2 = "SELECT last_sent_at IS NOT NULL FROM gap_alerts WHERE kind = 'saturation'"
                     " AND src_site = 'par'";
    assert_string_equal(fx_row_within(&F, q2, "t", 5000), "t");
    r = PQexec(F.db, "DELETE FROM gap_alerts WHERE kind = 'saturation'");
    assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
    PQclear(r);
}

/* `reconcile --once` (no server) delivers what is due and waits for the answer before exiting:
 * an `over` alert put in gap_alerts by hand reaches the receiver by the time --once returns. */
static void test_once_delivers(void **state)
{
    (void)state;
    int st = th_stop(F.pid, 10000);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    F.pid = 0;
    int before = fx_hook_count();
    char *sql = fx_fmt("INSERT INTO gap_alerts (kind, src_site, dst_site, state, first_window,"
                       " last_window, peak_unattributed_bytes, peak_ratio, summary) VALUES ('over',"
                       " 'chi', 'nyc', 'open', '%s', '%s', 0, 1.31, 'chi->nyc claims 131%%')",
                       fx_ts(W[1]), fx_ts(W[3]));
    PGresult *r = PQexec(F.db, sql);
    assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
    PQclear(r);
    free(sql);
    char *out = NULL;
    assert_int_equal(fx_run(&F, "reconcile --once", &out), 0);
    fprintf(stderr, "%s", out);
    free(out);
    assert_int_equal(fx_hook_wait(before + 1, 0), before + 1);
    char *b = body_of(before);
    fprintf(stderr, "--once delivered: %s\n", b);
    assert_non_null(strstr(b, "\"labels\":{\"alertname\":\"WanledgerOver\",\"kind\":\"over\","
                              "\"src_site\":\"chi\",\"dst_site\":\"nyc\",\"severity\":\"info\"}"));
    assert_non_null(strstr(b, "\"summary\":\"chi->nyc claims 131%\""));
    assert_non_null(strstr(b, "\"peak_ratio\":\"1.3100\""));
    free(b);
    assert_string_equal(fx_row(&F, "SELECT last_sent_at IS NOT NULL FROM gap_alerts"
                                   " WHERE kind = 'over'"),
                        "t");
}

int main(void)
{
    fx_hook_start(1);
    char extra[512];
    snprintf(extra, sizeof(extra),
             " \"tick_seconds\": 1, \"public_url\": \"http://wl.example:7070\","
             " \"alerts\": {\"webhooks\": [\"http://127.0.0.1:%d/api/v2/alerts\"],"
             " \"resend_seconds\": 2},",
             fx_hook_port());
    fx_setup(&F, "recon-webhook", extra);
    int64_t w = fx_window_ago(20, 60);
    for (int i = 1; i <= 7; i++)
        W[i] = w + (int64_t)(i - 1) * 60 * SEC;
    fx_start(&F);
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_open_resend_resolve),
                                       cmocka_unit_test(test_mark_waits_off_the_loop),
                                       cmocka_unit_test(test_once_delivers)};
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    fx_stop(&F);
    fx_hook_stop();
    return rc;
}
