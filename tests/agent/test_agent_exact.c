/* Exactness and roles: two namespaces joined by veth, one agent per namespace (--netns) draining
 * every second; wla_traffic moves TCP (many connections, mixed writes, writev, sendfile, MSG_PEEK
 * reads) and UDP (unconnected and connected) and writes its own per-flow sums. The sums of the
 * agents' reports must equal them exactly, flow for flow, with nothing for loopback or the host's
 * own address, over at least 20 windows; every TCP flow of the connecting side is "client" and
 * of the accepting side "server". */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent_testlib.h"
#include "harness.h"

#define NS_A "wla-ex-a"
#define NS_B "wla-ex-b"
#define IP_A "10.201.0.1"
#define IP_B "10.201.0.2"

/* The agent's reports summed per flow; returns the number of windows that had flows. */
static int load_agent(const char *path, struct atl_sums *s, int *nreports, long long *dropped)
{
    struct atl_reports rs;
    int busy = 0;
    assert_int_equal(atl_reports_load(path, &rs), 0);
    *nreports = (int)rs.n;
    *dropped = 0;
    for (size_t i = 0; i < rs.n; i++) {
        const cJSON *flows = cJSON_GetObjectItemCaseSensitive(rs.r[i], "flows");
        const cJSON *f;
        *dropped += atl_num(rs.r[i], "dropped_events");
        /* with k=100000 nothing is sampled: the threshold must stay 0 */
        const cJSON *smp = cJSON_GetObjectItemCaseSensitive(rs.r[i], "sampling");
        assert_int_equal(atl_num(smp, "threshold"), 0);
        if (cJSON_GetArraySize(flows) > 0)
            busy++;
        cJSON_ArrayForEach(f, flows)
        {
            char key[160];
            snprintf(key, sizeof(key), "%s %s %s", atl_str(f, "proto"), atl_str(f, "local"),
                     atl_str(f, "remote"));
            struct atl_sum *e = atl_sum_of(s, key);
            assert_non_null(e);
            e->tx += (unsigned long long)atl_num(f, "tx_bytes");
            e->rx += (unsigned long long)atl_num(f, "rx_bytes");
            e->windows++;
            if (!e->role[0] || strcmp(atl_str(f, "role"), "unknown") != 0)
                snprintf(e->role, sizeof(e->role), "%s", atl_str(f, "role"));
        }
    }
    atl_reports_free(&rs);
    return busy;
}

static void compare(const char *side, struct atl_sums *truth, struct atl_sums *agent,
                    const char *tcp_role)
{
    size_t tcp = 0, udp = 0;
    for (size_t i = 0; i < truth->n; i++) {
        struct atl_sum *t = &truth->v[i];
        struct atl_sum *a = NULL;
        for (size_t j = 0; j < agent->n; j++)
            if (!strcmp(agent->v[j].key, t->key))
                a = &agent->v[j];
        if (!a || a->tx != t->tx || a->rx != t->rx)
            fail_msg("%s: flow %s: program counted tx %llu rx %llu, agent reported tx %llu rx "
                     "%llu",
                     side, t->key, t->tx, t->rx, a ? a->tx : 0, a ? a->rx : 0);
        if (!strncmp(t->key, "tcp", 3)) {
            tcp++;
            if (strcmp(a->role, tcp_role) != 0)
                fail_msg("%s: flow %s has role %s, expected %s", side, t->key, a->role, tcp_role);
        } else {
            udp++;
        }
    }
    /* nothing else: no loopback, no own-address flows, no MSG_PEEK artefacts */
    for (size_t j = 0; j < agent->n; j++) {
        int known = 0;
        for (size_t i = 0; i < truth->n; i++)
            known |= !strcmp(agent->v[j].key, truth->v[i].key);
        if (!known)
            fail_msg("%s: agent reported a flow the program never made: %s tx %llu rx %llu", side,
                     agent->v[j].key, agent->v[j].tx, agent->v[j].rx);
    }
    printf("%s: %zu TCP and %zu UDP flows exact\n", side, tcp, udp);
    assert_true(tcp >= 30);
    assert_true(udp >= 2);
}

static void test_exact_over_veth(void **state)
{
    (void)state;
    th_require_root();
    assert_int_equal(atl_netns_pair(NS_A, NS_B, IP_A, IP_B), 0);
    const char *dir = th_tmpdir("agent-exact");
    char truth_c[512], truth_s[512], srv_log[512];
    snprintf(truth_c, sizeof(truth_c), "%s/client.txt", dir);
    snprintf(truth_s, sizeof(truth_s), "%s/server.txt", dir);
    snprintf(srv_log, sizeof(srv_log), "%s/server.log", dir);

    struct atl_agent aa, ab;
    char *extra_a[] = {"--k", "100000", "--agent-id", "ex-a", "--host", "ex-a", NULL};
    char *extra_b[] = {"--k", "100000", "--agent-id", "ex-b", "--host", "ex-b", NULL};
    assert_int_equal(atl_agent_start(&aa, dir, "a", NS_A, 1, extra_a), 0);
    assert_int_equal(atl_agent_start(&ab, dir, "b", NS_B, 1, extra_b), 0);
    pid_t pa = aa.pid, pb = ab.pid;
    const char *rep_a = aa.rep, *rep_b = ab.rep;

    const char *traffic = atl_bin("wla_traffic");
    char *argv_s[] = {"ip",   "netns", "exec",  NS_B, (char *)traffic, "server", IP_B,
                      "5001", "5002",  truth_s, NULL};
    pid_t ps = atl_spawn(argv_s, srv_log, srv_log);
    assert_int_equal(atl_wait_contains(srv_log, "ready", 10000), 0);

    /* 40 connections spread over 22 s: at least 20 one-second windows carry traffic */
    assert_int_equal(th_sh("ip netns exec %s %s client %s 5001 5002 40 22000 %s %s", NS_A, traffic,
                           IP_B, IP_A, truth_c),
                     0);
    usleep(500000);
    int st = th_stop(ps, 5000);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    sleep(2); /* a window boundary passes; then SIGTERM reports the partial window */
    assert_int_equal(th_stop(pa, 10000), 0);
    assert_int_equal(th_stop(pb, 10000), 0);

    static struct atl_sums tc, ts, ac, as;
    int nrep_a, nrep_b;
    long long drop_a, drop_b;
    assert_int_equal(atl_load_truth(truth_c, &tc), 0);
    assert_int_equal(atl_load_truth(truth_s, &ts), 0);
    int busy_a = load_agent(rep_a, &ac, &nrep_a, &drop_a);
    int busy_b = load_agent(rep_b, &as, &nrep_b, &drop_b);
    printf("agent a: %d reports, %d with flows; agent b: %d reports, %d with flows\n", nrep_a,
           busy_a, nrep_b, busy_b);
    assert_int_equal(drop_a, 0);
    assert_int_equal(drop_b, 0);
    assert_true(busy_a >= 20);
    assert_true(busy_b >= 20);
    compare("client side (" NS_A ")", &tc, &ac, "client");
    compare("server side (" NS_B ")", &ts, &as, "server");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exact_over_veth),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
