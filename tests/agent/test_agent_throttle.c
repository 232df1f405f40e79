/* Throttling on real traffic (issue 12): iperf3 between two network namespaces, one agent per
 * namespace (A: the clients, workflow bulk-1; B: iperf3's server) with its rules from the real
 * reconciler (PostgreSQL, /v1/throttles); both agents report 2 s windows of flows to it.
 * Rates are iperf3's own (-J: end.sum_received.bits_per_second, what the receiver got), each
 * run 4 s after a 1 s omitted warm-up.
 * Asserted: baseline >= 10x the cap; an enforced 40 Mbit/s rule holds 1 and 8 TCP streams
 * within +-10% of the cap; a download of the workflow (iperf3 -R: B's server sends) within
 * -15%..+10% of the cap on the wire (B's veth tx_bytes, resends included) and where it is received
 * (the payload, without the headers and resends the wire carries): B's agent limits the connection
 * at the source once the reconciler matched its two ends (the first 4 s are left out), A's receive
 * window stays clamped (rcv_ssthresh <= 64 KiB) and B reports the rule's bytes; UDP offered at 100
 * Mbit/s arrives at the cap
 * +-10% and the agent reports the excess dropped; another workflow keeps >= 10x the cap; an
 * allow-listed program is never limited; a rule scoped to another destination site or to another
 * site's hosts leaves the rate alone, one scoped to B's site holds it at the cap; dry-run leaves
 * the rate >= 10x the cap and reports would-delay bytes; after revocation and after expiry the rate
 * is back (>= 10x the cap) two fetch intervals later; with the reconciler stopped the agent removes
 * its rules after
 * --throttle-fail-open. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "agent_testlib.h"
#include "fixture.h"
#include "harness.h"

#define NS_A     "wla-th-a"
#define NS_B     "wla-th-b"
#define IP_A     "10.204.0.1"
#define IP_B     "10.204.0.2"
#define HOST     "th-host-a"
#define HOST_B   "th-host-b" /* the second agent's (B: iperf3's server, a download's sender) */
#define WINDOW   2           /* the agents' and the reconciler's window (s) */
#define CAP      40000000.0
#define INTERVAL 1 /* --throttle-interval */
#define FAILOPEN 4 /* --throttle-fail-open */
#define TOKEN_OP "operator-token-0123456789abcdef"

static struct fx g_fx;
static const char *g_dir;
static pid_t g_agent, g_agent_b, g_srv[2];
static char g_agent_log[600], g_agent_b_log[600];
static int g_omit = 1; /* iperf3 -O: seconds left out of the result (and of the wire count) */
static int g_run;
static bool g_reverse;      /* the next iperf run: -R (the server sends, the workflow receives) */
static double g_sender_bps; /* -R runs: what B's veth sent (tx_bytes) from 1.5 s to 4.5 s */
static long g_rcv_ssthresh; /* -R runs: rcv_ssthresh of A's busiest socket (ss -ti) at 4.5 s */

/* From `ss -tin` output: rcv_ssthresh of the socket that received the most bytes. */
static long busiest_rcv_ssthresh(const char *path)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[4096];
    long long best = -1;
    long th = -1;
    while (fgets(line, sizeof(line), f)) {
        const char *b = strstr(line, "bytes_received:"), *t = strstr(line, "rcv_ssthresh:");
        if (!b || !t)
            continue;
        long long n = atoll(b + strlen("bytes_received:"));
        if (n > best) {
            best = n;
            th = atol(t + strlen("rcv_ssthresh:"));
        }
    }
    fclose(f);
    return th;
}

/* One iperf3 client run from namespace A as workflow wf; returns the received bit/s. */
static double iperf(const char *wf, int port, int streams, const char *udp_rate)
{
    char out[700];
    snprintf(out, sizeof(out), "%s/iperf-%d.json", g_dir, g_run++);
    char udp[64] = "";
    if (udp_rate)
        snprintf(udp, sizeof(udp), "-u -b %s", udp_rate);
    char tx[700];
    snprintf(tx, sizeof(tx), "%s/tx-%d.txt", g_dir, g_run);
    /* -R: the sender's own wire count (resends included), sampled on B's veth for 3 s while the
     * transfer runs (after the omitted warm-up), independent of iperf3 and of the agent */
    /* iperf3 3.12 answers a client that comes while the server still ends the previous test
     * (the -P 8 run's streams) with {"error": "the server is busy running a test. try again
     * later"} in its JSON and exit status 0: that attempt is made again, after a pause, up to 10
     * times; any other error fails the test with iperf3's own words */
    static char buf[1 << 20];
    cJSON *j = NULL;
    for (int attempt = 0;; attempt++) {
        int rc =
            th_sh("ip netns exec %s env WANLEDGER_WORKFLOW=%s iperf3 -c %s -p %d -t 4 -O %d -P %d "
                  "%s %s -J > '%s' 2>&1 & p=$!; "
                  "if [ %d = 1 ]; then c=/sys/class/net/%s-v/statistics/tx_bytes; sleep %d.5; "
                  "a=$(ip netns exec %s cat $c); ta=$(date +%%s%%N); sleep 3; "
                  "ip netns exec %s ss -tin dst %s > '%s.ss'; b=$(ip netns exec %s cat $c); "
                  "tb=$(date +%%s%%N); echo $a $ta $b $tb > '%s'; "
                  "fi; wait $p",
                  NS_A, wf, IP_B, port, g_omit, streams, udp, g_reverse ? "-R" : "", out, g_reverse,
                  NS_B, g_omit, NS_B, NS_A, IP_B, tx, NS_B, tx);
        if (g_reverse) {
            FILE *t = fopen(tx, "r");
            assert_non_null(t);
            double a, ta, b, tb;
            assert_int_equal(fscanf(t, "%lf %lf %lf %lf", &a, &ta, &b, &tb), 4);
            fclose(t);
            assert_true(tb > ta && b >= a);
            g_sender_bps = (b - a) * 8 / ((tb - ta) / 1e9);
            char ss[720];
            snprintf(ss, sizeof(ss), "%s.ss", tx);
            g_rcv_ssthresh = busiest_rcv_ssthresh(ss);
            fprintf(stderr,
                    "# sender (B's veth tx) %.1f Mbit/s; receiver's rcv_ssthresh %ld bytes\n",
                    g_sender_bps / 1e6, g_rcv_ssthresh);
        }
        FILE *f = fopen(out, "r");
        assert_non_null(f);
        size_t n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = 0;
        if (rc != 0)
            fprintf(stderr, "iperf3 failed: %s\n", buf);
        assert_int_equal(rc, 0);
        j = cJSON_Parse(buf);
        assert_non_null(j);
        const char *err = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "error"));
        if (!err)
            break;
        fprintf(stderr, "# iperf3 (attempt %d): %s\n", attempt + 1, err);
        assert_true(strstr(err, "busy") != NULL && attempt < 9);
        cJSON_Delete(j);
        usleep(500000);
    }
    const cJSON *end = cJSON_GetObjectItemCaseSensitive(j, "end");
    double bps;
    if (udp_rate) {
        /* the receiver's count (the server's bytes, sent back to the client) */
        const cJSON *rcv = cJSON_GetObjectItemCaseSensitive(end, "sum_received");
        const cJSON *snd = cJSON_GetObjectItemCaseSensitive(end, "sum_sent");
        bps = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(rcv, "bits_per_second"));
        double sent =
            cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(snd, "bits_per_second"));
        fprintf(stderr, "# udp %s offered %.1f Mbit/s, received %.1f Mbit/s (%.0f of %.0f lost)\n",
                wf, sent / 1e6, bps / 1e6,
                cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(rcv, "lost_packets")),
                cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(rcv, "packets")));
        if (!(bps > 0))
            fprintf(stderr, "%s\n", buf);
        assert_true(bps > 0 && sent > 0);
    } else {
        bps = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(end, "sum_received"), "bits_per_second"));
        fprintf(stderr, "# tcp %s -P %d%s: %.1f Mbit/s\n", wf, streams, g_reverse ? " -R" : "",
                bps / 1e6);
    }
    cJSON_Delete(j);
    return bps;
}

static void assert_near_cap(double bps)
{
    if (bps < 0.9 * CAP || bps > 1.1 * CAP)
        fprintf(stderr, "rate %.1f Mbit/s is not within 10%% of %.0f Mbit/s\n", bps / 1e6,
                CAP / 1e6);
    assert_true(bps >= 0.9 * CAP && bps <= 1.1 * CAP);
}

static void assert_free(double bps)
{
    if (bps < 10 * CAP)
        fprintf(stderr, "rate %.1f Mbit/s is below 10x the cap\n", bps / 1e6);
    assert_true(bps >= 10 * CAP);
}

/* POST /v1/throttles (scope: a JSON object or NULL); returns the rule id. */
static long long add_scoped_rule(const char *selector, const char *mode, int ttl, const char *scope)
{
    char body[768], *resp = NULL;
    snprintf(body, sizeof(body),
             "{\"selector\":%s,\"rate_bps\":%.0f,\"ttl_seconds\":%d,\"mode\":\"%s\","
             "\"reason\":\"test\",\"created_by\":\"test\"%s%s}",
             selector, CAP, ttl, mode, scope ? ",\"scope\":" : "", scope ? scope : "");
    int st = fx_http(&g_fx, "POST", "/v1/throttles", TOKEN_OP, NULL, body, strlen(body), &resp);
    if (st != 201)
        fprintf(stderr, "POST /v1/throttles: %d %s\n", st, resp ? resp : "");
    assert_int_equal(st, 201);
    cJSON *j = cJSON_Parse(resp);
    long long id = (long long)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(j, "id"));
    cJSON_Delete(j);
    free(resp);
    assert_true(id > 0);
    return id;
}

static long long add_rule(const char *selector, const char *mode, int ttl)
{
    return add_scoped_rule(selector, mode, ttl, NULL);
}

static void revoke_rule(long long id)
{
    char path[64];
    snprintf(path, sizeof(path), "/v1/throttles/%lld", id);
    assert_int_equal(fx_http(&g_fx, "DELETE", path, TOKEN_OP, NULL, NULL, 0, NULL), 200);
}

/* A counter the agent of host reported for the rule (-1 before its first report). */
static long long stat_host(long long id, const char *host, const char *col)
{
    char *sql = fx_fmt("SELECT coalesce((SELECT %s FROM throttle_host_stats WHERE rule_id = %lld "
                       "AND host = '%s'), -1)",
                       col, id, host);
    long long v = fx_num(&g_fx, sql);
    free(sql);
    return v;
}

static long long stat_of(long long id, const char *col)
{
    return stat_host(id, HOST, col);
}

/* Waits until the agent has applied rule id (its first report), at most 4 fetch intervals. */
static void wait_applied(long long id)
{
    for (int i = 0; i < 40 * INTERVAL && stat_of(id, "processes") < 0; i++)
        usleep(100000);
    assert_true(stat_of(id, "processes") >= 0);
}

/* Waits until the reported counter is at least min (reports come every interval). */
static long long wait_stat_host(long long id, const char *host, const char *col, long long min)
{
    long long v = stat_host(id, host, col);
    for (int i = 0; i < 40 * INTERVAL && v < min; i++) {
        usleep(100000);
        v = stat_host(id, host, col);
    }
    return v;
}

static long long wait_stat(long long id, const char *col, long long min)
{
    return wait_stat_host(id, HOST, col, min);
}

/* Each test starts without live rules (a failed test may have left one). */
static void no_rules(void)
{
    fx_num(&g_fx, "WITH r AS (UPDATE throttle_rules SET revoked_at = now(), revoked_by = 'test' "
                  "WHERE revoked_at IS NULL RETURNING 1) SELECT count(*) FROM r");
    sleep(2 * INTERVAL);
}

static void test_baseline_and_enforce(void **state)
{
    (void)state;
    assert_free(iperf("bulk-1", 5201, 1, NULL));
    long long id = add_rule("{\"workflow\":\"bulk-1\"}", "enforce", 300);
    wait_applied(id);
    assert_near_cap(iperf("bulk-1", 5201, 1, NULL));
    assert_near_cap(iperf("bulk-1", 5201, 8, NULL));
    assert_true(wait_stat(id, "processes", 0) >= 0);

    /* a download (the server sends to the workflow): limited where it is sent. B's agent gets
     * the connection from the reconciler once both agents reported it (a window of 2 s, then a
     * fetch: ~2-4 s), so this run leaves out its first 4 s; A's ingress policer and receive-window
     * clamp hold until then (and stay: the lower limit wins) */
    long long delayed = stat_of(id, "delayed_bytes");
    long long b_before = stat_host(id, HOST_B, "passed_bytes");
    g_reverse = true;
    g_omit = 4;
    double down = iperf("bulk-1", 5201, 1, NULL);
    g_reverse = false;
    g_omit = 1;
    fprintf(stderr,
            "# download: sender (B's veth) %.1f Mbit/s on the wire for %.1f Mbit/s "
            "received\n",
            g_sender_bps / 1e6, down / 1e6);
    /* the payload received: the cap holds on the wire (asserted next, +-10%); the headers of the
     * clamped window's small segments and the resends come out of it, so the payload is 4-11 %
     * under the wire's figure (35.8 Mbit/s received for 38.7 on the wire in a CI run of
     * 2026-12-02): -15 % .. +10 % of the cap */
    if (down < 0.85 * CAP || down > 1.1 * CAP)
        fprintf(stderr, "download payload %.1f Mbit/s is not within -15%%..+10%% of %.0f Mbit/s\n",
                down / 1e6, CAP / 1e6);
    assert_true(down >= 0.85 * CAP && down <= 1.1 * CAP);
    /* what crossed the link, resends included: at most the cap + 10 % (before the sender side,
     * the policer's drops were resent: +20-26% over the cap in the runs of 2026-12-01), and not
     * far under it. The window clamp makes the rate window / RTT, and a busy 2-core machine
     * stretches the RTT: 34.3 Mbit/s on the wire (34.5 received) in a run of 2026-12-02 beside
     * two other sessions' builds and benchmarks, so the floor is the payload's -15 % */
    if (g_sender_bps < 0.85 * CAP || g_sender_bps > 1.1 * CAP)
        fprintf(stderr,
                "download on the wire %.1f Mbit/s is not within -15%%..+10%% of %.0f "
                "Mbit/s\n",
                g_sender_bps / 1e6, CAP / 1e6);
    assert_true(g_sender_bps >= 0.85 * CAP && g_sender_bps <= 1.1 * CAP);
    /* the receive window is clamped (throttle_probe_clamp): to the class's rate times the RTT,
     * at least 4 segments (5.8-7.7 KB between two namespaces); 64 KiB is far below what an
     * unclamped receiver at this rate reaches (its receive buffer grew to 14 MB in 1 s) */
    if (g_rcv_ssthresh <= 0 || g_rcv_ssthresh > 65536)
        fprintf(stderr, "receive window threshold %ld bytes, expected 1..65536 (clamped)\n",
                g_rcv_ssthresh);
    assert_true(g_rcv_ssthresh > 0 && g_rcv_ssthresh <= 65536);
    /* both agents count the rule's bytes: B's (the sender side) are the download's */
    long long b_after = wait_stat_host(id, HOST_B, "passed_bytes", b_before + 1);
    fprintf(stderr, "# download: B passed %lld bytes for the rule, A delayed %lld more\n",
            b_after - b_before, stat_of(id, "delayed_bytes") - delayed);
    assert_true(b_after - b_before >= (long long)(0.5 * CAP * 4 / 8));

    /* UDP offered at 100 Mbit/s: the cap arrives, the excess is dropped and counted */
    long long before = stat_of(id, "dropped_bytes");
    /* iperf3 gives up when its one UDP setup datagram is lost: let the class's credit (in debt
     * after the TCP runs, at most 100 ms of its rate) refill first */
    usleep(500000);
    assert_near_cap(iperf("bulk-1", 5201, 1, "100M"));
    /* at least half of what exceeds the cap over the 5 s run */
    long long want = before + (long long)(0.5 * (100e6 - CAP) * 5 / 8);
    long long dropped = wait_stat(id, "dropped_bytes", want);
    fprintf(stderr, "# udp excess dropped: %lld bytes (expected >= %lld)\n", dropped - before,
            want - before);
    assert_true(dropped >= want);

    /* another workflow on the same host keeps its rate */
    assert_free(iperf("other-2", 5202, 1, NULL));

    /* an allow-listed program is never limited, even when a rule's selector covers it */
    char *resp = NULL;
    assert_int_equal(fx_num(&g_fx, "WITH i AS (INSERT INTO throttle_allow VALUES ('program', "
                                   "'iperf3', 'test') RETURNING 1) SELECT count(*) FROM i"),
                     1);
    const char *b = "{\"selector\":{\"program\":\"iperf3\"},\"rate_bps\":1000,\"ttl_seconds\":60,"
                    "\"reason\":\"x\"}";
    assert_int_equal(fx_http(&g_fx, "POST", "/v1/throttles", TOKEN_OP, NULL, b, strlen(b), &resp),
                     422);
    assert_non_null(strstr(resp, "allow-listed"));
    free(resp);
    sleep(2 * INTERVAL + 1);
    assert_free(iperf("bulk-1", 5201, 1, NULL));
    assert_int_equal(fx_num(&g_fx, "WITH d AS (DELETE FROM throttle_allow WHERE selector_value "
                                   "= 'iperf3' RETURNING 1) SELECT count(*) FROM d"),
                     1);
    sleep(2 * INTERVAL + 1);
    assert_near_cap(iperf("bulk-1", 5201, 1, NULL));

    /* B's count for the rule stays cumulative after the download's connection is gone (it left
     * the recent windows: its sender-side slot went) */
    long long b_end = stat_host(id, HOST_B, "passed_bytes");
    if (b_end < b_after)
        fprintf(stderr, "B's passed bytes went back from %lld to %lld\n", b_after, b_end);
    assert_true(b_end >= b_after);

    /* revocation: back to full rate within two fetch intervals */
    revoke_rule(id);
    sleep(2 * INTERVAL);
    assert_free(iperf("bulk-1", 5201, 1, NULL));
    /* one creation, one revocation, one application per host (A's and B's agents) */
    char *sql = fx_fmt("SELECT count(*) FROM throttle_audit WHERE rule_id = %lld AND (event IN "
                       "('creation', 'revocation') OR (event = 'application' AND host IN ('%s', "
                       "'%s')))",
                       id, HOST, HOST_B);
    assert_int_equal(fx_num(&g_fx, sql), 4);
    free(sql);
}

static void test_dry_run(void **state)
{
    (void)state;
    no_rules();
    long long id = add_rule("{\"workflow\":\"bulk-1\"}", "dry_run", 300);
    wait_applied(id);
    assert_free(iperf("bulk-1", 5201, 1, NULL));
    long long d = wait_stat(id, "delayed_bytes", 1);
    fprintf(stderr, "# dry-run would have delayed %lld bytes\n", d);
    assert_true(d > 0);
    revoke_rule(id);
}

/* Scope: a rule for traffic to another site (nyc: 10.1.0.0/16, the fixture's) or for hosts of
 * a site this agent is not at (it has no --site) leaves the rate alone; a rule for traffic to
 * the site of B's address (lab: 10.204.0.0/16) holds it at the cap. */
static void test_scope(void **state)
{
    (void)state;
    no_rules();
    assert_int_equal(fx_num(&g_fx, "WITH i AS (INSERT INTO sites VALUES ('lab', "
                                   "'{10.204.0.0/16}') ON CONFLICT DO NOTHING RETURNING 1) "
                                   "SELECT count(*) FROM i"),
                     1);
    long long other =
        add_scoped_rule("{\"workflow\":\"bulk-1\"}", "enforce", 300, "{\"dst_sites\":[\"nyc\"]}");
    long long away =
        add_scoped_rule("{\"workflow\":\"bulk-1\"}", "enforce", 300, "{\"site\":\"chi\"}");
    wait_applied(other);
    assert_free(iperf("bulk-1", 5201, 1, NULL));
    assert_true(stat_of(away, "processes") < 0); /* never sent to this agent */
    revoke_rule(other);
    revoke_rule(away);
    long long lab =
        add_scoped_rule("{\"workflow\":\"bulk-1\"}", "enforce", 300, "{\"dst_sites\":[\"lab\"]}");
    wait_applied(lab);
    assert_near_cap(iperf("bulk-1", 5201, 1, NULL));
    revoke_rule(lab);
}

static void test_expiry(void **state)
{
    (void)state;
    no_rules();
    long long id = add_rule("{\"workflow\":\"bulk-1\"}", "enforce", 8);
    wait_applied(id);
    assert_near_cap(iperf("bulk-1", 5201, 1, NULL)); /* ~5 s of the 8 */
    sleep(3 + 2 * INTERVAL);
    assert_free(iperf("bulk-1", 5201, 1, NULL));
}

static void test_fail_open(void **state)
{
    (void)state;
    no_rules();
    long long id = add_rule("{\"workflow\":\"bulk-1\"}", "enforce", 300);
    wait_applied(id);
    fx_stop(&g_fx);
    assert_int_equal(atl_wait_contains(g_agent_log, "removing every rule", (FAILOPEN + 3) * 1000),
                     0);
    assert_free(iperf("bulk-1", 5201, 1, NULL));
}

static int setup(void **state)
{
    (void)state;
    th_require_root();
    th_require(system("command -v iperf3 >/dev/null") == 0, "iperf3 is not installed");
    fx_setup(&g_fx, "agent-throttle", "\"window_seconds\": 2,");
    g_dir = g_fx.dir;
    char path[700];
    snprintf(path, sizeof(path), "%s/tokens.json", g_dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fchmod(fileno(f), 0600);
    fprintf(f, "{\"agent\": [\"" FX_TOKEN_AGENT "\"], \"operator\": [\"" TOKEN_OP "\"], "
               "\"reader\": [\"" FX_TOKEN_READER "\"]}\n");
    fclose(f);
    fx_start(&g_fx);
    if (atl_netns_pair(NS_A, NS_B, IP_A, IP_B) != 0)
        return -1;
    for (int i = 0; i < 2; i++) {
        char port[8], log[700];
        snprintf(port, sizeof(port), "%d", 5201 + i);
        snprintf(log, sizeof(log), "%s/iperf-server-%d.log", g_dir, i);
        char *argv[] = {"ip", "netns",        "exec", NS_B, "iperf3",
                        "-s", "--forceflush", "-p",   port, NULL};
        g_srv[i] = atl_spawn(argv, log, log);
        assert_int_equal(atl_wait_contains(log, "listening", 5000), 0);
    }
    char tok[700], url[64], spool[700], rep[700], nspath[64];
    snprintf(tok, sizeof(tok), "%s/agent.token", g_dir);
    f = fopen(tok, "w");
    assert_non_null(f);
    fprintf(f, FX_TOKEN_AGENT "\n");
    fclose(f);
    assert_int_equal(chmod(tok, 0600), 0); /* the agent refuses a token others can read */
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", g_fx.port);
    snprintf(spool, sizeof(spool), "%s/spool", g_dir);
    snprintf(rep, sizeof(rep), "%s/agent.jsonl", g_dir);
    snprintf(g_agent_log, sizeof(g_agent_log), "%s/agent.log", g_dir);
    snprintf(nspath, sizeof(nspath), "/run/netns/%s", NS_A);
    char iv[8], fo[8], win[8];
    snprintf(iv, sizeof(iv), "%d", INTERVAL);
    snprintf(fo, sizeof(fo), "%d", FAILOPEN);
    snprintf(win, sizeof(win), "%d", WINDOW);
    /* both agents report their flows (the reconciler matches a download's two ends) */
    char *argv[] = {(char *)th_bin("wanledger-agent"),
                    "--window",
                    win,
                    "--reconciler",
                    url,
                    "--token-file",
                    tok,
                    "--host",
                    HOST,
                    "--netns",
                    nspath,
                    "--spool",
                    spool,
                    "--throttle-interval",
                    iv,
                    "--throttle-fail-open",
                    fo,
                    NULL};
    g_agent = atl_spawn(argv, rep, g_agent_log);
    /* B: iperf3's server's host (a download's sender), its own spool and pins */
    char spool_b[700], rep_b[700], nspath_b[64], pins_b[64];
    snprintf(spool_b, sizeof(spool_b), "%s/spool-b", g_dir);
    snprintf(rep_b, sizeof(rep_b), "%s/agent-b.out", g_dir);
    snprintf(g_agent_b_log, sizeof(g_agent_b_log), "%s/agent-b.log", g_dir);
    snprintf(nspath_b, sizeof(nspath_b), "/run/netns/%s", NS_B);
    snprintf(pins_b, sizeof(pins_b), "none");
    char *argv_b[] = {(char *)th_bin("wanledger-agent"),
                      "--window",
                      win,
                      "--reconciler",
                      url,
                      "--token-file",
                      tok,
                      "--host",
                      HOST_B,
                      "--netns",
                      nspath_b,
                      "--spool",
                      spool_b,
                      "--pin-dir",
                      pins_b,
                      "--throttle-interval",
                      iv,
                      "--throttle-fail-open",
                      fo,
                      NULL};
    g_agent_b = atl_spawn(argv_b, rep_b, g_agent_b_log);
    const char *logs[] = {g_agent_log, g_agent_b_log};
    for (int i = 0; i < 2; i++) {
        int up = atl_wait_contains(logs[i], "reporting to", 15000);
        if (up == 0)
            up = atl_wait_contains(logs[i], "throttle] on", 1000);
        if (up != 0)
            th_sh("cat '%s' >&2", logs[i]);
        assert_int_equal(up, 0);
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    if (g_agent > 0)
        th_stop(g_agent, 10000);
    if (g_agent_b > 0)
        th_stop(g_agent_b, 10000);
    for (int i = 0; i < 2; i++)
        if (g_srv[i] > 0)
            th_stop(g_srv[i], 5000);
    fx_stop(&g_fx);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_baseline_and_enforce),
        cmocka_unit_test(test_dry_run),
        cmocka_unit_test(test_scope),
        cmocka_unit_test(test_expiry),
        cmocka_unit_test(test_fail_open),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
