/* IPv6: over veth between two namespaces (fd00:207::1 and ::2), 12,345 bytes over TCP one way
 * and 4,321 back, then one 777-byte datagram from an unconnected UDP socket to a server that
 * receives it with recvfrom. Both agents report exactly those bytes, with IPv6 endpoints in
 * "[addr]:port" form and the TCP roles client and server. */
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

#define NS_A "wla-v6-a"
#define NS_B "wla-v6-b"

struct seen {
    long long tx, rx;
    char role[16];
    int n;
};

/* Sums the flows of a report file matching proto, local and remote prefixes. */
static struct seen sum(const char *path, const char *proto, const char *local_prefix,
                       const char *remote_prefix)
{
    struct atl_reports rs;
    struct seen s = {0};
    assert_int_equal(atl_reports_load(path, &rs), 0);
    for (size_t i = 0; i < rs.n; i++) {
        const cJSON *f;
        cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(rs.r[i], "flows"))
        {
            if (strcmp(atl_str(f, "proto"), proto) != 0 ||
                strncmp(atl_str(f, "local"), local_prefix, strlen(local_prefix)) != 0 ||
                strncmp(atl_str(f, "remote"), remote_prefix, strlen(remote_prefix)) != 0)
                continue;
            s.tx += atl_num(f, "tx_bytes");
            s.rx += atl_num(f, "rx_bytes");
            snprintf(s.role, sizeof(s.role), "%s", atl_str(f, "role"));
            s.n++;
        }
    }
    atl_reports_free(&rs);
    return s;
}

static void test_ipv6_tcp_udp_exact(void **state)
{
    (void)state;
    th_require_root();
    assert_int_equal(atl_netns_pair(NS_A, NS_B, "10.207.0.1", "10.207.0.2"), 0);
    assert_int_equal(th_sh("ip -n %s addr add fd00:207::1/64 dev %s-v nodad && "
                           "ip -n %s addr add fd00:207::2/64 dev %s-v nodad",
                           NS_A, NS_A, NS_B, NS_B),
                     0);
    const char *dir = th_tmpdir("agent-v6");
    char srv[512];
    snprintf(srv, sizeof(srv), "%s/server.log", dir);
    struct atl_agent aa, ab;
    assert_int_equal(atl_agent_start(&aa, dir, "a", NS_A, 1, NULL), 0);
    assert_int_equal(atl_agent_start(&ab, dir, "b", NS_B, 1, NULL), 0);
    pid_t pa = aa.pid, pb = ab.pid;
    const char *rep_a = aa.rep, *rep_b = ab.rep;

    const char *traffic = atl_bin("wla_traffic");
    char *argv_s[] = {"ip",        "netns",       "exec", NS_B, (char *)traffic,
                      "v6-server", "fd00:207::2", "6001", NULL};
    pid_t ps = atl_spawn(argv_s, srv, srv);
    assert_int_equal(atl_wait_contains(srv, "ready", 10000), 0);
    assert_int_equal(th_sh("ip netns exec %s %s v6-client fd00:207::2 6001", NS_A, traffic), 0);
    int st = atl_wait_exit(ps, 10000);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    sleep(2);
    assert_int_equal(th_stop(pa, 10000), 0);
    assert_int_equal(th_stop(pb, 10000), 0);

    struct seen c = sum(rep_a, "tcp", "[fd00:207::1]:", "[fd00:207::2]:6001");
    assert_int_equal(c.tx, 12345);
    assert_int_equal(c.rx, 4321);
    assert_string_equal(c.role, "client");
    struct seen s = sum(rep_b, "tcp", "[fd00:207::2]:6001", "[fd00:207::1]:");
    assert_int_equal(s.rx, 12345);
    assert_int_equal(s.tx, 4321);
    assert_string_equal(s.role, "server");
    struct seen cu = sum(rep_a, "udp", "[::]:", "[fd00:207::2]:6002");
    assert_int_equal(cu.tx, 777);
    struct seen su = sum(rep_b, "udp", "[fd00:207::2]:6002", "[fd00:207::1]:");
    assert_int_equal(su.rx, 777);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ipv6_tcp_udp_exact),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
