/* Loss accounting and slot reuse. With 8 flow slots, 60 datagrams to 60 different ports in one
 * burst cannot all be counted; dropped_events must say exactly how many were not: counted calls
 * + dropped_events = 60, and at least 60 - 8 were dropped. With 16 slots and 3 new flows every
 * window for 12 windows, idle flows' slots are freed and reused: all 36 flows are reported with
 * their exact bytes and nothing is dropped. */
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

#define NS_A  "wla-ls-a"
#define NS_B  "wla-ls-b"
#define IP_A  "10.203.0.1"
#define IP_B  "10.203.0.2"
#define SENDS 60
#define SLOTS 8

static void test_map_full_is_counted(void **state)
{
    (void)state;
    th_require_root();
    assert_int_equal(atl_netns_pair(NS_A, NS_B, IP_A, IP_B), 0);
    const char *dir = th_tmpdir("agent-loss");
    struct atl_agent a;
    char *extra[] = {"--map-entries", "8", NULL};
    assert_int_equal(atl_agent_start(&a, dir, "r", NS_A, 1, extra), 0);
    pid_t agent = a.pid;
    const char *rep = a.rep, *log = a.log;
    assert_int_equal(
        th_sh("ip netns exec %s %s many %s 20000 %d", NS_A, atl_bin("wla_traffic"), IP_B, SENDS),
        0);
    sleep(2);
    assert_int_equal(th_stop(agent, 10000), 0);

    struct atl_reports rs;
    long long calls = 0, bytes = 0, dropped = 0;
    assert_int_equal(atl_reports_load(rep, &rs), 0);
    for (size_t i = 0; i < rs.n; i++) {
        const cJSON *f;
        dropped += atl_num(rs.r[i], "dropped_events");
        cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(rs.r[i], "flows"))
        {
            calls += atl_num(f, "tx_calls");
            bytes += atl_num(f, "tx_bytes");
        }
    }
    atl_reports_free(&rs);
    printf("%lld datagrams counted (%lld bytes), %lld reported as dropped, of %d sent\n", calls,
           bytes, dropped, SENDS);
    assert_int_equal(calls + dropped, SENDS);
    assert_int_equal(bytes, calls * 10);
    assert_true(dropped >= SENDS - SLOTS);
    assert_true(atl_wait_contains(log, "events dropped", 0) == 0);
}

static void test_slots_are_reused_without_loss(void **state)
{
    (void)state;
    th_require_root();
    assert_int_equal(atl_netns_pair(NS_A, NS_B, IP_A, IP_B), 0);
    const char *dir = th_tmpdir("agent-reuse");
    struct atl_agent a;
    char *extra[] = {"--map-entries", "16", NULL};
    assert_int_equal(atl_agent_start(&a, dir, "r", NS_A, 1, extra), 0);
    pid_t agent = a.pid;
    const char *rep = a.rep;
    for (int w = 0; w < 12; w++) {
        /* 3 new flows (ports 30000 + 3w ...), 10 bytes each */
        assert_int_equal(th_sh("ip netns exec %s %s many %s %d 3", NS_A, atl_bin("wla_traffic"),
                               IP_B, 30000 + 3 * w),
                         0);
        usleep(1000000);
    }
    sleep(1);
    assert_int_equal(th_stop(agent, 10000), 0);

    struct atl_reports rs;
    long long per_port[36] = {0}, dropped = 0;
    assert_int_equal(atl_reports_load(rep, &rs), 0);
    for (size_t i = 0; i < rs.n; i++) {
        const cJSON *f;
        dropped += atl_num(rs.r[i], "dropped_events");
        cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(rs.r[i], "flows"))
        {
            const char *colon = strrchr(atl_str(f, "remote"), ':');
            int port = colon ? atoi(colon + 1) : 0;
            if (port >= 30000 && port < 30036)
                per_port[port - 30000] += atl_num(f, "tx_bytes");
        }
    }
    atl_reports_free(&rs);
    assert_int_equal(dropped, 0);
    for (int p = 0; p < 36; p++)
        if (per_port[p] != 10)
            fail_msg("flow to port %d: %lld bytes reported, 10 sent", 30000 + p, per_port[p]);
    printf("36 flows through 16 slots, each exact, nothing dropped\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_map_full_is_counted),
        cmocka_unit_test(test_slots_are_reused_without_loss),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
