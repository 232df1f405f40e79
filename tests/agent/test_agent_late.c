/* Late ticks (agentlib/README.md "Late ticks"). A real agent counts UDP datagrams the test sends
 * from a namespace at known times (each in the middle of a window, so its window is not in doubt);
 * the test stops the agent (SIGSTOP) for more than two windows while it keeps sending, then lets
 * it go on (SIGCONT). From its own send times the test computes what must come out:
 * - the drain that ran late reports a lost span (late_drain) from the start of the window being
 *   counted at the stop to the drain (after SIGCONT): it covers the stall;
 * - every window from that start to the window of the drain has exactly one report (seqs
 *   consecutive over the run, no window missing), the skipped ones empty;
 * - a report has exactly the bytes sent in its window outside the span (none of a window the
 *   span covers): no byte is placed in a window it was not counted in;
 * - /metrics: wanledger_agent_late_ticks_total 1, wanledger_agent_windows_skipped_total = the
 *   windows the span skipped, wanledger_agent_late_bytes_total = the bytes sent in the span.
 * A stall of more than 60 windows sends 60 empty reports and counts the rest as unreported. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent_testlib.h"
#include "harness.h"
#include "httpc.h"

#define NS_A  "wla-lt-a"
#define NS_B  "wla-lt-b"
#define IP_A  "10.207.0.1"
#define IP_B  "10.207.0.2"
#define PORT0 41000
#define MAXS  256

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Sleeps until phase (0..1) of the next window of w seconds that starts after now. */
static void sleep_to_phase(int w, double phase)
{
    int64_t W = (int64_t)w * 1000000, t = now_us();
    int64_t at = t / W * W + (int64_t)(phase * (double)W);
    if (at <= t)
        at += W;
    usleep((useconds_t)(at - t));
}

struct send {
    int64_t at; /* the middle of the send, wall clock */
    int bytes;
};
static struct send g_sends[MAXS];
static int g_n;

/* One datagram of bytes to IP_B from NS_A; its send time is recorded (asserted to fall in one
 * window of w seconds). */
static void send_one(int w, int bytes)
{
    int64_t W = (int64_t)w * 1000000, t0 = now_us();
    assert_int_equal(th_sh("ip netns exec %s %s udp %s %d %d 0", NS_A, atl_bin("wla_traffic"), IP_B,
                           PORT0 + g_n % 50, bytes),
                     0);
    int64_t t1 = now_us();
    assert_true(t0 / W == t1 / W); /* the send's window is not in doubt */
    assert_true(g_n < MAXS);
    g_sends[g_n++] = (struct send){(t0 + t1) / 2, bytes};
}

static int64_t metric(const char *body, const char *name)
{
    char key[160];
    snprintf(key, sizeof(key), "\n%s ", name);
    const char *p = strstr(body, key);
    if (!p)
        fail_msg("/metrics has no %s", name);
    return atoll(p + strlen(key));
}

static int64_t parse_time(const char *s)
{
    struct tm tm = {0};
    int us = 0;
    char frac[16] = "";
    if (sscanf(s, "%d-%d-%dT%d:%d:%d%15[^Z]", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
               &tm.tm_min, &tm.tm_sec, frac) < 6)
        fail_msg("bad time %s", s);
    if (frac[0] == '.') {
        char digits[7] = "000000";
        memcpy(digits, frac + 1, strlen(frac + 1) < 6 ? strlen(frac + 1) : 6);
        us = atoi(digits);
    }
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    return (int64_t)timegm(&tm) * 1000000 + us;
}

/* Runs one stall of stall_windows windows (the agent at w-second windows, sends_each datagrams at
 * most during the stall) and checks the reports and metrics. */
static void run_stall(const char *tag, int w, double stall_windows, int sends_each)
{
    th_require_root();
    assert_int_equal(atl_netns_pair(NS_A, NS_B, IP_A, IP_B), 0);
    const char *dir = th_tmpdir(tag);
    int port = th_free_port();
    char addr[64], url[128];
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
    snprintf(url, sizeof(url), "http://%s/metrics", addr);
    char *extra[] = {"--metrics", addr, NULL};
    struct atl_agent a;
    g_n = 0;
    assert_int_equal(atl_agent_start(&a, dir, "r", NS_A, w, extra), 0);
    const int64_t W = (int64_t)w * 1000000;
    /* before: 3 windows with datagrams in their middle */
    for (int i = 0; i < 3; i++) {
        sleep_to_phase(w, 0.4);
        send_one(w, 1000 + i);
    }
    sleep_to_phase(w, 0.5);
    int64_t t_stop = now_us();
    assert_int_equal(kill(a.pid, SIGSTOP), 0);
    /* during the stall: the kernel keeps counting */
    int64_t stall_end = t_stop + (int64_t)(stall_windows * (double)W);
    for (int i = 0; i < sends_each && now_us() + W < stall_end; i++) {
        sleep_to_phase(w, 0.4);
        send_one(w, 2000 + i);
    }
    while (now_us() < stall_end)
        usleep(10000);
    int64_t t_cont = now_us();
    assert_int_equal(kill(a.pid, SIGCONT), 0);
    assert_int_equal(atl_wait_contains(a.log, "late tick", 10000), 0);
    /* after: 3 more windows with datagrams */
    for (int i = 0; i < 3; i++) {
        sleep_to_phase(w, 0.4);
        send_one(w, 3000 + i);
    }
    sleep_to_phase(w, 0.5); /* the last send's window drained */
    struct httpc_response resp = {0};
    char err[256];
    assert_int_equal(httpc_get(url, NULL, 5000, &resp, err, sizeof(err)), 0);
    assert_int_equal(resp.status, 200);
    assert_non_null(resp.body);
    int64_t m_late = metric(resp.body, "wanledger_agent_late_ticks_total");
    int64_t m_skipped = metric(resp.body, "wanledger_agent_windows_skipped_total");
    int64_t m_unrep = metric(resp.body, "wanledger_agent_windows_skipped_unreported_total");
    int64_t m_bytes = metric(resp.body, "wanledger_agent_late_bytes_total");
    assert_non_null(strstr(resp.body, "# HELP wanledger_agent_late_ticks_total "));
    assert_non_null(strstr(resp.body, "# HELP wanledger_agent_windows_skipped_total "));
    assert_non_null(strstr(resp.body, "# HELP wanledger_agent_windows_skipped_unreported_total "));
    httpc_response_free(&resp);
    assert_int_equal(th_stop(a.pid, 10000), 0);

    struct atl_reports rs;
    assert_int_equal(atl_reports_load(a.rep, &rs), 0);
    assert_true(rs.n > 0);
    /* the one lost span */
    int64_t lf = 0, lt = 0;
    int n_late = 0;
    for (size_t i = 0; i < rs.n; i++) {
        const cJSON *lost = cJSON_GetObjectItemCaseSensitive(rs.r[i], "lost");
        if (!lost)
            continue;
        assert_string_equal(atl_str(lost, "reason"), "late_drain");
        int64_t f = parse_time(atl_str(lost, "from")), t = parse_time(atl_str(lost, "to"));
        if (n_late++ == 0) {
            lf = f;
            lt = t;
        }
        assert_true(f == lf && t == lt); /* every report of the late drain says the same span */
    }
    assert_true(n_late > 0);
    /* it covers the stall: from the start of the window counted at the stop, to the drain */
    assert_true(lf == t_stop / W * W);
    assert_true(lt >= t_cont && lt < t_cont + W);
    int64_t skipped = (lt / W * W - lf) / W;
    int64_t want_reports = skipped < 60 ? skipped : 60;
    printf("stall %.2f s: lost span %.3f s from the window start %lld, %lld windows skipped, "
           "%d reports carry the span\n",
           (double)(t_cont - t_stop) / 1e6, (double)(lt - lf) / 1e6, (long long)(lf / 1000000),
           (long long)skipped, n_late);
    assert_int_equal(n_late, want_reports);
    /* one report per window, consecutive seqs, no window missing */
    for (size_t i = 1; i < rs.n; i++) {
        assert_int_equal(atl_num(rs.r[i], "seq"), atl_num(rs.r[i - 1], "seq") + 1);
        int64_t p = parse_time(atl_str(rs.r[i - 1], "window_start"));
        int64_t c = parse_time(atl_str(rs.r[i], "window_start"));
        if (c != p + W && !(c > p && c <= lt / W * W - want_reports * W))
            fail_msg("report %zu: window %lld after %lld", i, (long long)c, (long long)p);
    }
    /* bytes per report window against the sends */
    long long in_span = 0, placed = 0, sent = 0;
    for (int j = 0; j < g_n; j++) {
        sent += g_sends[j].bytes;
        if (g_sends[j].at >= lf && g_sends[j].at < lt)
            in_span += g_sends[j].bytes;
    }
    for (size_t i = 0; i < rs.n; i++) {
        int64_t ws = parse_time(atl_str(rs.r[i], "window_start"));
        long long got = 0, want = 0;
        const cJSON *f;
        cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(rs.r[i], "flows"))
        {
            const char *colon = strrchr(atl_str(f, "remote"), ':');
            int rp = colon ? atoi(colon + 1) : 0;
            if (rp >= PORT0 && rp < PORT0 + 50)
                got += atl_num(f, "tx_bytes");
        }
        /* what was sent in the window and not in the span (a window the span ends in keeps
         * what it counted after the late drain) */
        bool overlaps = ws < lt && ws + W > lf;
        for (int j = 0; j < g_n; j++)
            if (g_sends[j].at >= ws && g_sends[j].at < ws + W &&
                !(g_sends[j].at >= lf && g_sends[j].at < lt))
                want += g_sends[j].bytes;
        if (got != want)
            fail_msg("window %lld (%s): %lld bytes reported, %lld sent in it", (long long)ws,
                     overlaps ? "in the lost span" : "outside it", got, want);
        placed += got;
    }
    atl_reports_free(&rs);
    printf("%lld bytes sent: %lld placed in their windows, %lld in the lost span; metrics: late "
           "%lld, skipped %lld, unreported %lld, late bytes %lld\n",
           sent, placed, in_span, (long long)m_late, (long long)m_skipped, (long long)m_unrep,
           (long long)m_bytes);
    assert_true(in_span > 0);
    assert_int_equal(placed + in_span, sent);
    assert_int_equal(m_late, 1);
    assert_int_equal(m_skipped, skipped);
    assert_int_equal(m_unrep, skipped - want_reports);
    assert_int_equal(m_bytes, in_span);
}

/* 2 s windows, a stall of 2.6 windows: 2 or 3 windows skipped, each reported. */
static void test_stall_reports_skipped_windows(void **state)
{
    (void)state;
    run_stall("agent-late", 2, 2.6, 2);
}

/* 1 s windows, a stall of 63 windows: 60 reports, the rest counted as unreported. */
static void test_long_stall_caps_the_reports(void **state)
{
    (void)state;
    run_stall("agent-late-long", 1, 63.0, 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stall_reports_skipped_windows),
        cmocka_unit_test(test_long_stall_caps_the_reports),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
