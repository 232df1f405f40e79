/* The gnmic listener of `wanledger poll`: `format: event` messages over TCP (newline-delimited,
 * as gnmic's tcp output with `delimiter: "\n"` sends them) and UDP become samples; numbers may be
 * strings (and exceed 2^53); a changed last-clear changes discontinuity_cs; malformed messages
 * are rejected whole, each with a log line. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "pt_util.h"

#define T1   "1764446400000000000" /* 2025-11-29T20:00:00Z in ns */
#define T2   "1764446430000000000" /* +30 s */
#define T3   "1764446460000000000" /* +60 s */
#define LC_A "1764000000000000000"
#define LC_B "1764446450000000000" /* counters cleared between T2 and T3 */
#define CNT  "/interfaces/interface/state/counters/"

static void test_events_over_tcp_and_udp(void **state)
{
    (void)state;
    const char *dir = th_tmpdir("wlp-gnmi");
    char cfg[512], out[512], err[512], text[2048];
    snprintf(cfg, sizeof(cfg), "%s/config.json", dir);
    snprintf(out, sizeof(out), "%s/out", dir);
    snprintf(err, sizeof(err), "%s/err", dir);
    pt_write(cfg, "{\"sites\": [{\"name\": \"nyc\", \"prefixes\": [\"10.1.0.0/16\"]},\n"
                  "            {\"name\": \"chi\", \"prefixes\": [\"10.2.0.0/16\"]}],\n"
                  " \"devices\": [{\"name\": \"leaf1\", \"site\": \"nyc\", \"gnmi\": {\"source\": "
                  "\"clab-leaf1\"}},\n"
                  "             {\"name\": \"spine2\", \"site\": \"chi\", \"gnmi\": {}}],\n"
                  " \"links\": [{\"device\": \"leaf1\", \"interface\": \"Ethernet1\", \"site\": "
                  "\"nyc\", \"peer_site\": \"chi\", \"circuit\": \"c1\"},\n"
                  "           {\"device\": \"spine2\", \"interface\": \"Ethernet7\", \"site\": "
                  "\"chi\", \"peer_site\": \"nyc\", \"circuit\": \"c1\"}]}\n");
    int tport = th_free_port(), uport = th_free_udp_port();
    snprintf(text, sizeof(text),
             "exec %s --config %s poll --no-snmp --stdout --flush-ms 100 --gnmi-tcp "
             "127.0.0.1:%d --gnmi-udp 127.0.0.1:%d >%s 2>%s",
             th_bin("wanledger"), cfg, tport, uport, out, err);
    char *sh[] = {"sh", "-c", text, NULL};
    pid_t pid = th_spawn(sh, NULL);
    assert_true(pid > 0);
    assert_int_equal(th_wait_port(tport, 5000), 0);

    int fd = pt_connect_tcp(tport);
    assert_true(fd >= 0);
    /* T1: one notification split in two events (numbers and strings mixed) */
    assert_int_equal(
        pt_send_all(
            fd,
            "[{\"name\":\"if\",\"timestamp\":" T1 ",\"tags\":{\"source\":\"clab-leaf1:57400\","
            "\"interface_name\":\"Ethernet1\",\"subscription-name\":\"if\"},\"values\":{\"" CNT
            "in-octets\":1000,\"" CNT "in-unicast-pkts\":\"10\",\"" CNT "last-clear\":\"" LC_A
            "\"}},"
            "{\"name\":\"if\",\"timestamp\":" T1 ",\"tags\":{\"source\":\"clab-leaf1:57400\","
            "\"interface_name\":\"Ethernet1\"},\"values\":{\"" CNT "out-octets\":\"2000\",\"" CNT
            "out-unicast-pkts\":20,\"/interfaces/interface/ethernet/state/port-speed\":"
            "\"openconfig-if-ethernet:SPEED_100GB\"}}]\n"),
        0);
    /* T2: counters beyond 2^53, as strings and as a bare number */
    assert_int_equal(pt_send_all(fd, "[{\"name\":\"if\",\"timestamp\":" T2
                                     ",\"tags\":{\"source\":\"clab-leaf1\","
                                     "\"interface_name\":\"Ethernet1\"},\"values\":{\"" CNT
                                     "in-octets\":\"18446744073709551000\",\"" CNT
                                     "out-octets\":9007199254740993,\"" CNT
                                     "in-unicast-pkts\":11,\"" CNT "out-unicast-pkts\":21,\"" CNT
                                     "last-clear\":" LC_A "}}]\n"),
                     0);
    /* malformed: a bad value after a good event (nothing of it may be applied), a bad
     * timestamp, and a line that is not JSON */
    assert_int_equal(
        pt_send_all(fd,
                    "[{\"timestamp\":" T3 ",\"tags\":{\"source\":\"clab-leaf1\",\"interface_name\":"
                    "\"Ethernet1\"},\"values\":{\"" CNT "in-octets\":999999,\"" CNT
                    "out-octets\":999999}},"
                    "{\"timestamp\":" T3 ",\"tags\":{\"source\":\"clab-leaf1\",\"interface_name\":"
                    "\"Ethernet1\"},\"values\":{\"" CNT "out-octets\":\"12x\"}}]\n"),
        0);
    assert_int_equal(
        pt_send_all(fd, "[{\"timestamp\":\"yesterday\",\"tags\":{\"source\":\"clab-leaf1\"}}]\n"),
        0);
    assert_int_equal(pt_send_all(fd, "hello gnmic\n"), 0);
    /* T3: last-clear changed (a discontinuity) */
    assert_int_equal(pt_send_all(fd, "[{\"name\":\"if\",\"timestamp\":" T3
                                     ",\"tags\":{\"source\":\"clab-leaf1\","
                                     "\"interface_name\":\"Ethernet1\"},\"values\":{\"" CNT
                                     "in-octets\":\"5\",\"" CNT "out-octets\":\"6\",\"" CNT
                                     "in-unicast-pkts\":1,\"" CNT "out-unicast-pkts\":1,\"" CNT
                                     "last-clear\":\"" LC_B "\"}}]\n"),
                     0);
    close(fd);
    /* UDP: a known and an unknown interface; then a malformed datagram */
    assert_int_equal(
        pt_send_udp(uport,
                    "[{\"name\":\"if\",\"timestamp\":" T1 ",\"tags\":{\"source\":\"spine2:57400\","
                    "\"interface_name\":\"Ethernet7\"},\"values\":{\"" CNT
                    "in-octets\":\"7\",\"" CNT "out-octets\":\"8\"}},"
                    "{\"name\":\"if\",\"timestamp\":" T1 ",\"tags\":{\"source\":\"spine2:57400\","
                    "\"interface_name\":\"Ethernet99\"},\"values\":{\"" CNT "in-octets\":1}}]"),
        0);
    assert_int_equal(pt_send_udp(uport, "[{\"timestamp\":" T1 ",\"values\":{}}]"), 0);
    /* a router clock 75 years ahead: dropped with a log line (the reconciler would refuse the
     * whole batch) */
    assert_int_equal(
        pt_send_udp(uport, "[{\"timestamp\":4102444800000000000,\"tags\":{\"source\":\"spine2\","
                           "\"interface_name\":\"Ethernet7\"},\"values\":{\"" CNT
                           "in-octets\":70,\"" CNT "out-octets\":80}}]"),
        0);
    /* ... and it did not hold the link back: a later sample with a true clock still counts */
    assert_int_equal(pt_send_udp(uport, "[{\"timestamp\":" T2
                                        ",\"tags\":{\"source\":\"spine2\",\"interface_name\":"
                                        "\"Ethernet7\"},\"values\":{\"" CNT "in-octets\":9,\"" CNT
                                        "out-octets\":10}}]"),
                     0);
    usleep(600000);
    int st = th_stop(pid, 5000);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0); /* clean stop, no leak report */

    char *o = pt_slurp(out), *e = pt_slurp(err);
    struct pt_samples all = {0}, leaf, spine;
    assert_true(pt_parse_batches(o, &all) > 0);
    pt_filter(&all, "leaf1", "Ethernet1", &leaf);
    pt_filter(&all, "spine2", "Ethernet7", &spine);
    if (leaf.n != 3 || spine.n != 2 || all.n != 5)
        fail_msg("expected 3 + 2 samples, got %zu + %zu of %zu:\n%s\n%s", leaf.n, spine.n, all.n, o,
                 e);
    assert_int_equal(leaf.v[0].at_us, 1764446400000000LL);
    assert_int_equal(leaf.v[0].in_octets, 1000);
    assert_int_equal(leaf.v[0].out_octets, 2000);
    assert_int_equal(leaf.v[0].in_pkts, 10);
    assert_int_equal(leaf.v[0].out_pkts, 20);
    assert_int_equal(leaf.v[0].speed_bps, 100000000000ULL);
    assert_int_equal(leaf.v[0].uptime_cs, -1); /* gNMI has no sysUpTime */
    /* exact 64-bit values, checked on the text (a double would round them) */
    if (!strstr(o, "\"in_octets\":18446744073709551000,\"out_octets\":9007199254740993,"))
        fail_msg("big counters not exact:\n%s", o);
    assert_int_equal(leaf.v[1].at_us, 1764446430000000LL);
    assert_int_equal(leaf.v[1].in_pkts, 11);
    /* same last-clear -> same discontinuity; changed -> different */
    assert_int_equal(leaf.v[0].discontinuity_cs, leaf.v[1].discontinuity_cs);
    assert_true(leaf.v[2].discontinuity_cs != leaf.v[1].discontinuity_cs);
    assert_int_equal(leaf.v[2].in_octets, 5);
    assert_int_equal(leaf.v[2].out_octets, 6);
    assert_int_equal(spine.v[0].in_octets, 7);
    assert_int_equal(spine.v[0].out_octets, 8);
    assert_int_equal(spine.v[1].in_octets, 9);
    assert_int_equal(spine.v[1].at_us, 1764446430000000LL);
    assert_null(strstr(o, "999999")); /* the half-bad message changed nothing */
    if (pt_count(e, "ahead of this clock") != 1)
        fail_msg("future sample not reported:\n%s", e);
    /* one log line per malformed message: 3 over TCP, 1 over UDP */
    if (pt_count(e, "rejected") != 4 || !strstr(e, "$[1].values[\"" CNT "out-octets\"]") ||
        !strstr(e, "$[0].timestamp") || !strstr(e, "hello gnmic") || !strstr(e, "$[0].tags"))
        fail_msg("expected 4 rejections naming the problem:\n%s", e);
    free(o);
    free(e);
    pt_samples_free(&all);
    pt_samples_free(&leaf);
    pt_samples_free(&spine);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_events_over_tcp_and_udp),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
