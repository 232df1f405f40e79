/* Alerts through a real Alertmanager (Debian's prometheus-alertmanager, its default
 * resolve_timeout of 5 m): the real `wanledger reconcile` (tick 1 s, resend_seconds 3) opens a
 * gap alert from three red windows; Alertmanager's /api/v2/alerts is read every 0.4 s for 15 s
 * (five resend intervals) and must show the alert active every time, with an endsAt we set
 * (now + 4 x 3 s, renewed by each re-send: never Alertmanager's own now + 5 m); three green
 * windows resolve it and it leaves Alertmanager's active alerts. Then a batch Alertmanager
 * refuses (one resolution whose endsAt is before its startsAt, next to a valid one): the valid
 * resolution still reaches it, the invalid one is logged and not re-sent (Alertmanager's
 * alertmanager_alerts_invalid_total stops growing), both rows end resolved_sent.
 *
 * Data as tests/reconciler/test_webhook.c: counters nyc -> chi +1,000,000,000 octets and
 * +1,000,000 packets per window (payload 934,000,000 bytes); windows 1-3: alice 100,000,000
 * bytes (coverage 0.107, red), windows 4-6: 920,000,000 (0.985, ok). */
#include <cjson/cJSON.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
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

#define SEC    TM_USEC_PER_SEC
#define AM_BIN "/usr/bin/prometheus-alertmanager"

static struct fx F;
static struct fx AM; /* only .port: fx_http to Alertmanager */
static pid_t am_pid;
static int64_t W[8];

/* Alertmanager's view of our gap alert nyc -> chi: 1 active (*ends_in = endsAt - now, s),
 * 0 absent, -1 present but not active. */
static int am_gap(double *ends_in)
{
    char *resp = NULL;
    int st = fx_http(&AM, "GET", "/api/v2/alerts", NULL, NULL, NULL, 0, &resp);
    assert_int_equal(st, 200);
    int64_t now = tm_now_us();
    cJSON *arr = cJSON_Parse(resp);
    assert_non_null(arr);
    int found = 0;
    cJSON *a;
    cJSON_ArrayForEach(a, arr)
    {
        cJSON *labels = cJSON_GetObjectItem(a, "labels");
        cJSON *name = cJSON_GetObjectItem(labels, "alertname");
        cJSON *src = cJSON_GetObjectItem(labels, "src_site");
        if (!cJSON_IsString(name) || strcmp(name->valuestring, "WanledgerGap") != 0 ||
            !cJSON_IsString(src) || strcmp(src->valuestring, "nyc") != 0)
            continue;
        cJSON *state = cJSON_GetObjectItem(cJSON_GetObjectItem(a, "status"), "state");
        cJSON *ends = cJSON_GetObjectItem(a, "endsAt");
        int64_t us = 0;
        assert_true(cJSON_IsString(ends));
        assert_int_equal(tm_parse_rfc3339(ends->valuestring, &us), 0);
        *ends_in = (double)(us - now) / 1e6;
        found = cJSON_IsString(state) && strcmp(state->valuestring, "active") == 0 ? 1 : -1;
    }
    cJSON_Delete(arr);
    free(resp);
    return found;
}

static long long am_metric(const char *line_prefix)
{
    char *resp = NULL;
    assert_int_equal(fx_http(&AM, "GET", "/metrics", NULL, NULL, NULL, 0, &resp), 200);
    const char *p = strstr(resp, line_prefix);
    long long v = p ? atoll(p + strlen(line_prefix)) : -1;
    free(resp);
    return v;
}

static void test_open_stays_active(void **state)
{
    (void)state;
    fx_gap_samples(&F, W, 1, 4);
    for (int i = 1; i <= 3; i++)
        fx_gap_report(&F, W, i, 100000000);
    /* wait for the alert to reach Alertmanager */
    double ends = 0;
    int64_t t0 = tm_mono_ns(), until = t0 + 90 * 1000000000LL;
    while (am_gap(&ends) != 1 && tm_mono_ns() < until)
        usleep(200000);
    assert_int_equal(am_gap(&ends), 1);
    fprintf(stderr, "alert active in Alertmanager %.1f s after the red windows were posted\n",
            (tm_mono_ns() - t0) / 1e9);
    /* 38 looks over 15 s = 5 resend intervals: active every time, endsAt ours (<= 12 s ahead) */
    double min_ends = 1e9, max_ends = 0;
    for (int k = 0; k < 38; k++) {
        int st = am_gap(&ends);
        if (st != 1)
            fail_msg("look %d (%.1f s): the alert is %s", k, k * 0.4,
                     st == 0 ? "gone" : "no longer active");
        if (ends < min_ends)
            min_ends = ends;
        if (ends > max_ends)
            max_ends = ends;
        usleep(400000);
    }
    fprintf(stderr,
            "timeline: 38 looks over 15 s, active in all; endsAt ahead of now by %.2f .. %.2f s"
            " (4 x resend_seconds = 12 s, renewed every 3 s)\n",
            min_ends, max_ends);
    assert_true(max_ends <= 12.5); /* ours, not Alertmanager's now + resolve_timeout (300 s) */
    assert_true(min_ends >= 3.0);  /* renewed: never close to lapsing */
    /* green windows: the alert resolves and leaves the active alerts */
    fx_gap_samples(&F, W, 5, 7);
    for (int i = 4; i <= 6; i++)
        fx_gap_report(&F, W, i, 920000000);
    int64_t g0 = tm_mono_ns();
    until = g0 + 90 * 1000000000LL;
    int st;
    while ((st = am_gap(&ends)) == 1 && tm_mono_ns() < until)
        usleep(200000);
    fprintf(stderr, "resolved in Alertmanager %.1f s after the green windows were posted\n",
            (tm_mono_ns() - g0) / 1e9);
    assert_int_not_equal(st, 1);
    /* resolved_sent is written once Alertmanager's 200 is back, after it already shows the
     * alert resolved: wait for it (bounded) rather than read it in the same instant */
    const char *sent_sql = "SELECT state, resolved_sent FROM gap_alerts WHERE kind = 'gap'";
    assert_string_equal(fx_row_within(&F, sent_sql, "resolved|t", 10000), "resolved|t");
}

static void test_refused_batch(void **state)
{
    (void)state;
    const char *inv = "alertmanager_alerts_invalid_total{version=\"v2\"} ";
    long long inv0 = am_metric(inv);
    /* two resolutions due at once: one valid (chi -> nyc), one ending before it starts */
    char *sql =
        fx_fmt("INSERT INTO gap_alerts (kind, src_site, dst_site, state, first_window, last_window,"
               " opened_at, resolved_at, summary) VALUES"
               " ('over', 'chi', 'nyc', 'resolved', '%s', '%s', now() - interval '10 min',"
               " now() - interval '1 min', 'valid'),"
               " ('over', 'osl', 'nyc', 'resolved', '%s', '%s', now() - interval '1 min',"
               " now() - interval '10 min', 'ends before it starts')",
               fx_ts(W[1]), fx_ts(W[3]), fx_ts(W[1]), fx_ts(W[3]));
    PGresult *r = PQexec(F.db, sql);
    assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
    PQclear(r);
    free(sql);
    int64_t until = tm_mono_ns() + 60 * 1000000000LL;
    while (fx_num(&F, "SELECT count(*) FROM gap_alerts WHERE kind = 'over' AND resolved_sent") <
               2 &&
           tm_mono_ns() < until)
        usleep(200000);
    assert_int_equal(
        fx_num(&F, "SELECT count(*) FROM gap_alerts WHERE kind = 'over' AND resolved_sent"), 2);
    long long inv1 = am_metric(inv);
    sleep(5); /* not re-sent: Alertmanager sees no further invalid alert */
    long long inv2 = am_metric(inv);
    fprintf(stderr, "alertmanager_alerts_invalid_total: %lld before, %lld after, %lld 5 s later\n",
            inv0, inv1, inv2);
    assert_true(inv1 >= inv0 + 1 && inv1 <= inv0 + 2); /* the batch, then the alert alone */
    assert_int_equal(inv2, inv1);
    char *m = NULL;
    assert_int_equal(fx_http(&F, "GET", "/metrics", NULL, NULL, NULL, 0, &m), 200);
    assert_non_null(strstr(m, "wanledger_webhook_alerts_refused_total 1\n"));
    free(m);
    /* the log names the refused alert with its JSON */
    assert_int_equal(th_sh("grep -q 'refused alert .*ends before it starts' %s", F.log_path), 0);
}

int main(void)
{
    th_require(access(AM_BIN, X_OK) == 0,
               "prometheus-alertmanager is needed (scripts/install-deps.sh)");
    AM.port = th_free_port();
    char extra[512];
    snprintf(extra, sizeof(extra),
             " \"tick_seconds\": 1, \"alerts\": {\"webhooks\":"
             " [\"http://127.0.0.1:%d/api/v2/alerts\"], \"resend_seconds\": 3},",
             AM.port);
    fx_setup(&F, "recon-alertmanager", extra);
    char *amcfg = fx_fmt("%s/alertmanager.yml", F.dir);
    FILE *f = fopen(amcfg, "w");
    assert_non_null(f);
    /* global.resolve_timeout left at its default (5m) */
    fprintf(f, "route:\n  receiver: 'null'\nreceivers:\n  - name: 'null'\n");
    fclose(f);
    char *listen = fx_fmt("--web.listen-address=127.0.0.1:%d", AM.port);
    char *cfgarg = fx_fmt("--config.file=%s", amcfg);
    char *storage = fx_fmt("--storage.path=%s/am-data", F.dir);
    char *amlog = fx_fmt("%s/alertmanager.log", F.dir);
    char *argv[] = {AM_BIN, cfgarg, storage, listen, "--cluster.listen-address=", NULL};
    am_pid = th_spawn(argv, amlog);
    assert_int_equal(th_wait_port(AM.port, 20000), 0);
    int64_t w = fx_window_ago(20, 60);
    for (int i = 1; i <= 7; i++)
        W[i] = w + (int64_t)(i - 1) * 60 * SEC;
    fx_start(&F);
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_open_stays_active),
                                       cmocka_unit_test(test_refused_batch)};
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    fx_stop(&F);
    th_stop(am_pid, 5000);
    free(amcfg);
    free(listen);
    free(cfgarg);
    free(storage);
    free(amlog);
    return rc;
}
