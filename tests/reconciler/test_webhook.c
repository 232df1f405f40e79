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
#include "harness.h"
#include "timeutil.h"

#define SEC      TM_USEC_PER_SEC
#define MAX_POST 64

static struct fx F;
static int64_t W[8]; /* window starts W[1..7] */

/* ---- the receiver ------------------------------------------------------------------------- */

struct post {
    int64_t at_ns;   /* monotonic */
    int64_t wall_us; /* wall clock, to compare with endsAt */
    int status;      /* what we answered */
    char *path;
    char *body;
};

static struct {
    int fd, port;
    pthread_t thread;
    pthread_mutex_t mu;
    struct post posts[MAX_POST];
    int n;
    int fail_first; /* answer 503 to this many POSTs */
    bool stop;
} R = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* Reads one request from fd (headers + Content-Length body); 0 or -1 at EOF/error. */
static int read_request(int fd, char **path, char **body)
{
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    char *end = NULL;
    while (!end) {
        ssize_t r = recv(fd, buf + n, cap - n, 0);
        if (r <= 0) {
            if (r == 0)
                errno = 0; /* end of stream: not a timeout, so the caller closes */
            free(buf);
            return -1;
        }
        n += (size_t)r;
        buf[n] = 0;
        end = strstr(buf, "\r\n\r\n");
        if (!end && n == cap) {
            free(buf);
            return -1;
        }
    }
    size_t head = (size_t)(end - buf) + 4;
    size_t clen = 0;
    char *cl = strcasestr(buf, "\r\nContent-Length:");
    if (cl)
        clen = strtoul(cl + 17, NULL, 10);
    if (head + clen > cap) {
        cap = head + clen;
        buf = realloc(buf, cap + 1);
    }
    while (n < head + clen) {
        ssize_t r = recv(fd, buf + n, head + clen - n, 0);
        if (r <= 0) {
            if (r == 0)
                errno = 0; /* end of stream: not a timeout, so the caller closes */
            free(buf);
            return -1;
        }
        n += (size_t)r;
    }
    char method[16], p[512];
    if (sscanf(buf, "%15s %511s", method, p) != 2) {
        free(buf);
        return -1;
    }
    *path = strdup(p);
    *body = strndup(buf + head, clen);
    free(buf);
    return 0;
}

static void *receiver(void *arg)
{
    (void)arg;
    while (!R.stop) {
        int c = accept(R.fd, NULL, NULL);
        if (c < 0)
            continue;
        struct timeval tv = {1, 0};
        setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        for (;;) {
            char *path = NULL, *body = NULL;
            if (read_request(c, &path, &body) < 0) {
                if (errno == EAGAIN && !R.stop)
                    continue;
                break;
            }
            pthread_mutex_lock(&R.mu);
            int status = R.fail_first > 0 ? 503 : 200;
            if (R.fail_first > 0)
                R.fail_first--;
            if (R.n < MAX_POST)
                R.posts[R.n++] = (struct post){.at_ns = tm_mono_ns(),
                                               .wall_us = tm_now_us(),
                                               .status = status,
                                               .path = path,
                                               .body = body};
            else
                free(path), free(body);
            pthread_mutex_unlock(&R.mu);
            char resp[128];
            int len = snprintf(resp, sizeof(resp), "HTTP/1.1 %d %s\r\nContent-Length: 0\r\n\r\n",
                               status, status == 200 ? "OK" : "Service Unavailable");
            if (send(c, resp, (size_t)len, MSG_NOSIGNAL) != len)
                break;
        }
        close(c);
    }
    return NULL;
}

static void receiver_start(int fail_first)
{
    R.fail_first = fail_first;
    R.fd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(R.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    assert_int_equal(bind(R.fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(getsockname(R.fd, (struct sockaddr *)&a, &len), 0);
    R.port = ntohs(a.sin_port);
    struct timeval tv = {0, 200000};
    setsockopt(R.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)); /* accept wakes up for stop */
    assert_int_equal(listen(R.fd, 8), 0);
    assert_int_equal(pthread_create(&R.thread, NULL, receiver, NULL), 0);
}

static void receiver_stop(void)
{
    R.stop = true;
    pthread_join(R.thread, NULL);
    close(R.fd);
    for (int i = 0; i < R.n; i++) {
        free(R.posts[i].path);
        free(R.posts[i].body);
    }
}

/* Waits until at least n POSTs arrived (timeout_s); returns how many there are. */
static int wait_posts(int n, int timeout_s)
{
    int64_t until = tm_mono_ns() + (int64_t)timeout_s * 1000000000LL;
    for (;;) {
        pthread_mutex_lock(&R.mu);
        int have = R.n;
        pthread_mutex_unlock(&R.mu);
        if (have >= n || tm_mono_ns() > until)
            return have;
        usleep(50000);
    }
}

/* ---- inputs ------------------------------------------------------------------------------- */

static void post(const char *path, const char *token, char *body)
{
    char *resp = NULL;
    int st = fx_http(&F, "POST", path, token, NULL, body, strlen(body), &resp);
    if (st != 200)
        fprintf(stderr, "POST %s -> %d %s\n", path, st, resp ? resp : "");
    assert_int_equal(st, 200);
    free(resp);
    free(body);
}

/* Samples at the starts of windows first..last (cumulative from window 1). */
static void post_samples(int first, int last)
{
    for (int i = first; i <= last; i++)
        post("/v1/counters", FX_TOKEN_POLLER,
             fx_fmt("{\"version\":1,\"poller\":\"p1\",\"samples\":[{\"device\":\"nyc-border-1\","
                    "\"interface\":\"et-0/0/1\",\"at\":\"%s\",\"uptime_cs\":%d,\"in_octets\":0,"
                    "\"out_octets\":%lld,\"in_pkts\":0,\"out_pkts\":%lld}]}",
                    fx_ts(W[i]), 100000 + i * 6000, (long long)(i - 1) * 1000000000LL,
                    (long long)(i - 1) * 1000000LL));
}

static void post_report(int i, long long tx)
{
    post("/v1/attributions", FX_TOKEN_AGENT,
         fx_fmt("{\"version\":1,\"host\":\"nyc-gpu-17\",\"agent_id\":\"agent-nyc\",\"seq\":%d,"
                "\"window_start\":\"%s\",\"flows\":[{\"source\":\"socket\",\"proto\":\"tcp\","
                "\"local\":\"10.1.0.2:41522\",\"remote\":\"10.2.0.2:5201\",\"role\":\"client\","
                "\"tx_bytes\":%lld,\"rx_bytes\":0,\"user\":\"alice\",\"workflow\":\"train-42\"}]}",
                i, fx_ts(W[i]), tx));
}

/* ---- the test ----------------------------------------------------------------------------- */

static char *body_of(int i)
{
    pthread_mutex_lock(&R.mu);
    char *b = strdup(R.posts[i].body);
    pthread_mutex_unlock(&R.mu);
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
    pthread_mutex_lock(&R.mu);
    double d = (double)(us - R.posts[i].wall_us) / 1e6;
    pthread_mutex_unlock(&R.mu);
    return d;
}

static void test_open_resend_resolve(void **state)
{
    (void)state;
    /* windows 1-3 red: samples at the starts of 1..4 (window 4 then has only its start sample:
     * incomplete, which counts for neither opening nor resolving) */
    post_samples(1, 4);
    for (int i = 1; i <= 3; i++)
        post_report(i, 100000000);

    /* 1st POST (answered 503), 2nd after the backoff, 3rd as the re-send */
    assert_int_equal(wait_posts(3, 30), 3);
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
    fprintf(stderr, "POST 1 (answered %d): %s\nPOST 2: %s\nPOST 3: %s\n", R.posts[0].status, b0, b1,
            b2);
    assert_int_equal(R.posts[0].status, 503);
    assert_int_equal(R.posts[1].status, 200);
    assert_string_equal(R.posts[0].path, "/api/v2/alerts");
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
    int64_t backoff_ns = R.posts[1].at_ns - R.posts[0].at_ns;
    int64_t resend_ns = R.posts[2].at_ns - R.posts[1].at_ns;
    fprintf(stderr, "retry after %.2f s, re-send after %.2f s\n", backoff_ns / 1e9,
            resend_ns / 1e9);
    assert_true(backoff_ns >= 900000000LL && backoff_ns < 5000000000LL);
    assert_true(resend_ns >= 1900000000LL && resend_ns < 6000000000LL);
    free(b0);
    free(b1);
    free(b2);

    /* windows 4-6 good: the alert resolves, and is sent once with endsAt */
    post_samples(5, 7);
    for (int i = 4; i <= 6; i++)
        post_report(i, 920000000);
    int64_t until = tm_mono_ns() + 30 * 1000000000LL;
    int resolved_at = -1;
    while (resolved_at < 0 && tm_mono_ns() < until) {
        int n = wait_posts(R.n + 1, 5);
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
    assert_string_equal(fx_row(&F, "SELECT state, resolved_sent, resolved_at IS NOT NULL"
                                   " FROM gap_alerts WHERE kind = 'gap'"),
                        "resolved|t|t");
    free(br);
    /* nothing more about it: no re-send of a resolved alert */
    int before = wait_posts(1000, 0);
    assert_int_equal(wait_posts(before + 1, 4), before);

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

/* `reconcile --once` (no server) delivers what is due and waits for the answer before exiting:
 * an `over` alert put in gap_alerts by hand reaches the receiver by the time --once returns. */
static void test_once_delivers(void **state)
{
    (void)state;
    int st = th_stop(F.pid, 10000);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    F.pid = 0;
    int before = wait_posts(1000, 0);
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
    assert_int_equal(wait_posts(before + 1, 0), before + 1);
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
    receiver_start(1);
    char extra[512];
    snprintf(extra, sizeof(extra),
             " \"tick_seconds\": 1, \"public_url\": \"http://wl.example:7070\","
             " \"alerts\": {\"webhooks\": [\"http://127.0.0.1:%d/api/v2/alerts\"],"
             " \"resend_seconds\": 2},",
             R.port);
    fx_setup(&F, "recon-webhook", extra);
    int64_t w = fx_window_ago(20, 60);
    for (int i = 1; i <= 7; i++)
        W[i] = w + (int64_t)(i - 1) * 60 * SEC;
    fx_start(&F);
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_open_resend_resolve),
                                       cmocka_unit_test(test_once_delivers)};
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    fx_stop(&F);
    receiver_stop();
    return rc;
}
