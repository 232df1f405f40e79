/* `wanledger poll` against a real snmpd (net-snmp) in a network namespace whose veth interface
 * carries real traffic. Expected figures come from the kernel's own /sys/class/net counters. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "pt_util.h"
#include "timeutil.h"

#define SNMP_PORT 16161

static char g_rns[32], g_pns[32]; /* router (snmpd) and peer namespaces */
static const char *g_dir;
static char g_cfg[512];

static int ns_sh_ok(const char *cmd)
{
    return th_sh("%s >/dev/null 2>&1", cmd) == 0;
}

/* Counter of wan0 from the kernel, read in the router namespace. */
static uint64_t kstat(const char *name)
{
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "ip netns exec %s cat /sys/class/net/wan0/statistics/%s", g_rns,
             name);
    FILE *p = popen(cmd, "r");
    unsigned long long v = 0;
    if (!p || fscanf(p, "%llu", &v) != 1)
        fail_msg("cannot read %s", name);
    pclose(p);
    return v;
}

static int start_snmpd(void)
{
    return pt_snmpd_start(g_dir, g_rns, SNMP_PORT);
}

static void kill_snmpd(int sig)
{
    pt_snmpd_kill(g_dir, sig);
}

/* Makes snmpd's interface cache expire after 1 s instead of 3 (nsCacheTimeout of the ifTable
 * row; no snmpd.conf setting does this, an SNMP SET does). */
static void set_cache_timeout(int secs)
{
    assert_int_equal(th_sh("MIBS= ip netns exec %s snmpset -v2c -c private 127.0.0.1:%d "
                           "1.3.6.1.4.1.8072.1.5.3.1.2.1.3.6.1.2.1.2.2 i %d >/dev/null",
                           g_rns, SNMP_PORT, secs),
                     0);
}

static int setup(void **state)
{
    (void)state;
    th_require_root();
    th_require(th_sh("command -v snmpd >/dev/null && command -v snmpset >/dev/null") == 0,
               "snmpd and snmp tools (Debian snmpd, snmp) are needed");
    int pid = (int)getpid();
    snprintf(g_rns, sizeof(g_rns), "wlp-%d-r", pid);
    snprintf(g_pns, sizeof(g_pns), "wlp-%d-p", pid);
    g_dir = th_tmpdir("wlp-snmp");
    char cmd[1024];
    const char *steps[] = {
        "ip netns add %1$s && ip netns add %2$s",
        "ip netns exec %1$s sysctl -qw net.ipv6.conf.all.disable_ipv6=1 "
        "net.ipv6.conf.default.disable_ipv6=1",
        "ip netns exec %2$s sysctl -qw net.ipv6.conf.all.disable_ipv6=1 "
        "net.ipv6.conf.default.disable_ipv6=1",
        "ip -n %1$s link set lo up && ip -n %2$s link set lo up",
        "ip link add wlp%3$da netns %1$s type veth peer name wlp%3$db netns %2$s",
        "ip -n %1$s link set wlp%3$da name wan0 && ip -n %1$s addr add 10.77.0.1/30 dev wan0 "
        "&& ip -n %1$s link set wan0 up",
        "ip -n %2$s addr add 10.77.0.2/30 dev wlp%3$db && ip -n %2$s link set wlp%3$db up",
        /* a spare interface, for the renaming test */
        "ip -n %1$s link add spare0 type veth peer name spare1 && ip -n %1$s link set spare0 up "
        "&& ip -n %1$s link set spare1 up",
        /* static ARP: no neighbour probes land between a kernel read and a poll */
        "ip -n %1$s neigh replace 10.77.0.2 dev wan0 nud permanent lladdr "
        "$(cat /sys/class/net/wlp%3$db/address 2>/dev/null || ip netns exec %2$s cat "
        "/sys/class/net/wlp%3$db/address)",
        "ip -n %2$s neigh replace 10.77.0.1 dev wlp%3$db nud permanent lladdr "
        "$(ip netns exec %1$s cat /sys/class/net/wan0/address)",
    };
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        snprintf(cmd, sizeof(cmd), steps[i], g_rns, g_pns, pid);
        if (!ns_sh_ok(cmd)) {
            fprintf(stderr, "setup failed: %s\n", cmd);
            return -1;
        }
    }
    char path[600], text[4096];
    th_sh("mkdir -p %s/persist", g_dir);
    snprintf(path, sizeof(path), "%s/snmpd.conf", g_dir);
    snprintf(text, sizeof(text),
             "agentaddress udp:127.0.0.1:%d\n"
             "rocommunity public 127.0.0.1\n"
             "rwcommunity private 127.0.0.1\n"
             "createUser wluser SHA \"authpass123\" AES \"privpass123\"\n"
             "rouser wluser authpriv\n"
             /* old gear: no 64-bit ifXTable counters for community "nohc" */
             "view nohc included .1\n"
             "view nohc excluded .1.3.6.1.2.1.31.1.1.1.6\n"
             "view nohc excluded .1.3.6.1.2.1.31.1.1.1.7\n"
             "view nohc excluded .1.3.6.1.2.1.31.1.1.1.8\n"
             "view nohc excluded .1.3.6.1.2.1.31.1.1.1.9\n"
             "view nohc excluded .1.3.6.1.2.1.31.1.1.1.10\n"
             "view nohc excluded .1.3.6.1.2.1.31.1.1.1.11\n"
             "view nohc excluded .1.3.6.1.2.1.31.1.1.1.12\n"
             "view nohc excluded .1.3.6.1.2.1.31.1.1.1.13\n"
             "rocommunity nohc 127.0.0.1 -V nohc\n"
             /* no ifName for community "noname": names resolve through ifDescr (snmpd on Linux
              * also never updates ifName after a rename; ifDescr it does) */
             "view noname included .1\n"
             "view noname excluded .1.3.6.1.2.1.31.1.1.1.1\n"
             "rocommunity noname 127.0.0.1 -V noname\n",
             SNMP_PORT);
    pt_write(path, text);
    const char *secrets[][2] = {{"community", "public\n"},
                                {"nohc", "nohc\n"},
                                {"noname", "noname\n"},
                                {"authpw", "authpass123\n"},
                                {"privpw", "privpass123\n"},
                                {"badpw", "wrongpass99\n"},
                                {"tokens.json", "{\"poller\": [\"ptok-0123456789abcdef\"]}\n"}};
    for (size_t i = 0; i < sizeof(secrets) / sizeof(secrets[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", g_dir, secrets[i][0]);
        pt_write(path, secrets[i][1]);
        chmod(path, 0600); /* secret files may not be group/world readable */
    }
    snprintf(g_cfg, sizeof(g_cfg), "%s/config.json", g_dir);
    snprintf(
        text, sizeof(text),
        "{\"sites\": [{\"name\": \"nyc\", \"prefixes\": [\"10.1.0.0/16\"]},\n"
        "            {\"name\": \"chi\", \"prefixes\": [\"10.2.0.0/16\"]}],\n"
        " \"tokens_file\": \"%1$s/tokens.json\",\n"
        " \"devices\": [\n"
        "  {\"name\": \"r-v2\", \"site\": \"nyc\", \"snmp\": {\"address\": \"udp:127.0.0.1:%2$d\", "
        "\"version\": \"2c\", \"community_file\": \"%1$s/community\", \"interval_seconds\": 1}},\n"
        "  {\"name\": \"r-v3\", \"site\": \"nyc\", \"snmp\": {\"address\": \"udp:127.0.0.1:%2$d\", "
        "\"version\": \"3\", \"user\": \"wluser\", \"auth_password_file\": \"%1$s/authpw\", "
        "\"priv_password_file\": \"%1$s/privpw\", \"interval_seconds\": 1}},\n"
        "  {\"name\": \"r-badpw\", \"site\": \"nyc\", \"snmp\": {\"address\": "
        "\"udp:127.0.0.1:%2$d\", \"version\": \"3\", \"user\": \"wluser\", \"auth_password_file\": "
        "\"%1$s/badpw\", \"priv_password_file\": \"%1$s/privpw\", \"timeout_ms\": 500}},\n"
        "  {\"name\": \"dead\", \"site\": \"nyc\", \"snmp\": {\"address\": "
        "\"udp:127.0.0.1:16199\", "
        "\"version\": \"2c\", \"community_file\": \"%1$s/community\", \"interval_seconds\": 1, "
        "\"timeout_ms\": 1000, \"retries\": 2}},\n"
        "  {\"name\": \"r-32\", \"site\": \"nyc\", \"snmp\": {\"address\": \"udp:127.0.0.1:%2$d\", "
        "\"version\": \"2c\", \"community_file\": \"%1$s/nohc\"}},\n"
        "  {\"name\": \"r-v1\", \"site\": \"nyc\", \"snmp\": {\"address\": \"udp:127.0.0.1:%2$d\", "
        "\"version\": \"1\", \"community_file\": \"%1$s/community\"}},\n"
        "  {\"name\": \"r-descr\", \"site\": \"nyc\", \"snmp\": {\"address\": "
        "\"udp:127.0.0.1:%2$d\", \"version\": \"2c\", \"community_file\": \"%1$s/noname\", "
        "\"interval_seconds\": 1}},\n"
        "  {\"name\": \"dead3\", \"site\": \"nyc\", \"snmp\": {\"address\": "
        "\"udp:127.0.0.1:16198\", "
        "\"version\": \"3\", \"user\": \"wluser\", \"auth_password_file\": \"%1$s/authpw\", "
        "\"priv_password_file\": \"%1$s/privpw\", \"timeout_ms\": 1000, \"retries\": 2}}],\n"
        " \"links\": [\n"
        "  {\"device\": \"r-v2\", \"interface\": \"wan0\", \"site\": \"nyc\", \"peer_site\": "
        "\"chi\", \"circuit\": \"c1\"},\n"
        "  {\"device\": \"r-v3\", \"interface\": \"wan0\", \"site\": \"nyc\", \"peer_site\": "
        "\"chi\", \"circuit\": \"c2\"},\n"
        "  {\"device\": \"r-badpw\", \"interface\": \"wan0\", \"site\": \"nyc\", \"peer_site\": "
        "\"chi\", \"circuit\": \"c3\"},\n"
        "  {\"device\": \"dead\", \"interface\": \"wan0\", \"site\": \"nyc\", \"peer_site\": "
        "\"chi\", \"circuit\": \"c4\"},\n"
        "  {\"device\": \"r-32\", \"interface\": \"wan0\", \"site\": \"nyc\", \"peer_site\": "
        "\"chi\", \"circuit\": \"c6\"},\n"
        "  {\"device\": \"r-v1\", \"interface\": \"wan0\", \"site\": \"nyc\", \"peer_site\": "
        "\"chi\", \"circuit\": \"c7\"},\n"
        "  {\"device\": \"r-descr\", \"interface\": \"wan0\", \"site\": \"nyc\", "
        "\"peer_site\": \"chi\", \"circuit\": \"c8\"},\n"
        "  {\"device\": \"dead3\", \"interface\": \"wan0\", \"site\": \"nyc\", \"peer_site\": "
        "\"chi\", \"circuit\": \"c5\"}]}\n",
        g_dir, SNMP_PORT);
    pt_write(g_cfg, text);
    if (start_snmpd() != 0) {
        fprintf(stderr, "snmpd did not start; log:\n%s\n", pt_slurp("/dev/null"));
        th_sh("cat %s/snmpd.log >&2", g_dir);
        return -1;
    }
    set_cache_timeout(1);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    kill_snmpd(9);
    th_sh("ip netns del %s 2>/dev/null; ip netns del %s 2>/dev/null", g_rns, g_pns);
    return 0;
}

/* Runs `wanledger poll --once --stdout ARGS` in the router namespace; returns its exit code and
 * appends its samples to out; its stderr is returned in *err (caller frees). */
static int poll_once(const char *args, struct pt_samples *out, char **err)
{
    char o[600], e[600];
    snprintf(o, sizeof(o), "%s/once.out", g_dir);
    snprintf(e, sizeof(e), "%s/once.err", g_dir);
    int rc = th_sh("ip netns exec %s %s --config %s poll --once --stdout %s >%s 2>%s", g_rns,
                   th_bin("wanledger"), g_cfg, args, o, e);
    char *text = pt_slurp(o);
    if (out)
        assert_true(pt_parse_batches(text, out) >= 0);
    free(text);
    char *etext = pt_slurp(e);
    if (err)
        *err = etext;
    else
        free(etext);
    return rc;
}

/* Real traffic over the veth pair, bounded in count: 300 UDP datagrams of 1,200 bytes from the
 * peer to the router (which answers some with ICMP port unreachable: traffic the other way). */
static void traffic(void)
{
    assert_int_equal(th_sh("ip netns exec %s python3 -c \"import socket; s = socket.socket("
                           "socket.AF_INET, socket.SOCK_DGRAM); [s.sendto(b'x' * 1200, "
                           "('10.77.0.1', 9)) for _ in range(300)]\"",
                           g_pns),
                     0);
}

/* Deltas between two polls equal the kernel's deltas for the same span. Traffic stops more than
 * snmpd's (1 s) cache timeout before each read, so the cache error bound is 0 bytes here. */
static void check_deltas(const char *device)
{
    char args[64];
    snprintf(args, sizeof(args), "--device %s", device);
    usleep(1300000);
    uint64_t rx0 = kstat("rx_bytes"), tx0 = kstat("tx_bytes"), rxp0 = kstat("rx_packets"),
             txp0 = kstat("tx_packets");
    struct pt_samples a = {0}, b = {0}, s0, s1;
    char *err = NULL;
    int rc = poll_once(args, &a, &err);
    if (rc != 0)
        fail_msg("poll exit %d: %s", rc, err);
    free(err);
    traffic();
    usleep(1300000);
    uint64_t rx1 = kstat("rx_bytes"), tx1 = kstat("tx_bytes"), rxp1 = kstat("rx_packets"),
             txp1 = kstat("tx_packets");
    assert_int_equal(poll_once(args, &b, NULL), 0);
    pt_filter(&a, device, "wan0", &s0);
    pt_filter(&b, device, "wan0", &s1);
    assert_int_equal(s0.n, 1);
    assert_int_equal(s1.n, 1);
    /* 300 datagrams of 1,200 + 8 (UDP) + 20 (IP) + 14 (Ethernet) bytes came in */
    assert_true(rx1 - rx0 >= 300 * 1242);
    assert_true(tx1 - tx0 > 0);
    assert_int_equal(s1.v[0].in_octets - s0.v[0].in_octets, rx1 - rx0);
    assert_int_equal(s1.v[0].out_octets - s0.v[0].out_octets, tx1 - tx0);
    assert_int_equal(s1.v[0].in_pkts - s0.v[0].in_pkts, rxp1 - rxp0);
    assert_int_equal(s1.v[0].out_pkts - s0.v[0].out_pkts, txp1 - txp0);
    assert_int_equal(s1.v[0].counter_bits, 64);
    assert_int_equal(s1.v[0].speed_bps, 10000000000ULL); /* veth reports 10 Gbit/s */
    assert_true(s1.v[0].uptime_cs > s0.v[0].uptime_cs);
    assert_true(s1.v[0].at_us > s0.v[0].at_us);
    pt_samples_free(&a);
    pt_samples_free(&b);
    pt_samples_free(&s0);
    pt_samples_free(&s1);
}

static void test_v2c_deltas_match_kernel(void **state)
{
    (void)state;
    check_deltas("r-v2");
}

static void test_v3_authpriv_deltas_match_kernel(void **state)
{
    (void)state;
    check_deltas("r-v3");
}

/* An agent without the HC columns (a view hiding them), and an SNMPv1 device (no Counter64 in
 * v1): 32-bit ifInOctets/ifOutOctets, counter_bits 32, no packet counters; the values are the
 * kernel's counters modulo 2^32. */
static void check_32bit(const char *device)
{
    traffic();
    usleep(1300000);
    uint64_t rx = kstat("rx_bytes"), tx = kstat("tx_bytes");
    struct pt_samples all = {0}, s;
    char *err = NULL;
    char args[64];
    snprintf(args, sizeof(args), "--device %s", device);
    int rc = poll_once(args, &all, &err);
    if (rc != 0)
        fail_msg("poll exit %d: %s", rc, err);
    pt_filter(&all, device, "wan0", &s);
    assert_int_equal(s.n, 1);
    assert_int_equal(s.v[0].counter_bits, 32);
    assert_true(rx > 300 * 1242);
    assert_int_equal(s.v[0].in_octets, rx % 4294967296ULL);
    assert_int_equal(s.v[0].out_octets, tx % 4294967296ULL);
    assert_int_equal(s.v[0].in_pkts, 0);               /* absent */
    assert_int_equal(s.v[0].speed_bps, 4294967295ULL); /* ifSpeed saturates above 4.29 Gbit/s */
    free(err);
    pt_samples_free(&all);
    pt_samples_free(&s);
}

static void test_32bit_fallback_without_hc_columns(void **state)
{
    (void)state;
    check_32bit("r-32");
}

static void test_32bit_snmpv1(void **state)
{
    (void)state;
    check_32bit("r-v1");
}

static void test_wrong_v3_password_names_device(void **state)
{
    (void)state;
    char *err = NULL;
    struct pt_samples s = {0};
    int rc = poll_once("--device r-badpw", &s, &err);
    assert_int_equal(rc, 1);
    assert_int_equal(s.n, 0);
    if (!strstr(err, "SNMP device r-badpw") || !strstr(err, "wrong SNMPv3 user, password"))
        fail_msg("unclear error: %s", err);
    free(err);
    pt_samples_free(&s);
}

/* Dead devices (3 tries of 1 s each; one v2c, one v3 whose engine ID discovery never gets an
 * answer) polled with live v2c and v3 ones: the live samples arrive at once. `at` is the response
 * arrival time, so it measures when each live device was read. */
static void test_unreachable_device_does_not_delay_others(void **state)
{
    (void)state;
    int64_t t0 = tm_now_us();
    char *err = NULL;
    struct pt_samples s = {0}, v2, v3;
    int rc = poll_once("--device r-v2 --device dead --device dead3 --device r-v3", &s, &err);
    int64_t t1 = tm_now_us();
    assert_int_equal(rc, 1); /* the dead ones failed */
    if (!strstr(err, "SNMP device dead ") || !strstr(err, "SNMP device dead3 "))
        fail_msg("dead devices not named: %s", err);
    pt_filter(&s, "r-v2", "wan0", &v2);
    pt_filter(&s, "r-v3", "wan0", &v3);
    assert_int_equal(v2.n, 1);
    assert_int_equal(v3.n, 1);
    fprintf(stderr, "# live samples after %.3f s (v2c) and %.3f s (v3); whole run %.3f s\n",
            (double)(v2.v[0].at_us - t0) / 1e6, (double)(v3.v[0].at_us - t0) / 1e6,
            (double)(t1 - t0) / 1e6);
    assert_true(t1 - t0 >= 3000000);           /* the dead devices were waited for */
    assert_true(v2.v[0].at_us - t0 < 1000000); /* but the live ones were read at once */
    assert_true(v3.v[0].at_us - t0 < 1000000);
    free(err);
    pt_samples_free(&s);
    pt_samples_free(&v2);
    pt_samples_free(&v3);
}

/* Continuous polling (1 s interval) while snmpd is killed and restarted: a later sample's
 * uptime_cs is lower than the one before (so the reconciler discards that interval), the outage
 * is logged once, and polling resumes. */
static void test_snmpd_restart_uptime_goes_down(void **state)
{
    (void)state;
    char out[600], err[600];
    snprintf(out, sizeof(out), "%s/cont.out", g_dir);
    snprintf(err, sizeof(err), "%s/cont.err", g_dir);
    static char cmd[4096];
    snprintf(cmd, sizeof(cmd),
             "exec ip netns exec %s %s --config %s poll --stdout --device r-v2 --flush-ms 200 "
             ">%s 2>%s",
             g_rns, th_bin("wanledger"), g_cfg, out, err);
    char *sh[] = {"sh", "-c", cmd, NULL};
    pid_t pid = th_spawn(sh, NULL);
    assert_true(pid > 0);
    sleep(4);
    kill_snmpd(9);
    sleep(3); /* a few polls fail */
    assert_int_equal(start_snmpd(), 0);
    sleep(5); /* backoff is at most 4 s at a 1 s interval after 3 failures */
    int st = th_stop(pid, 5000);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0); /* clean stop, no leak report */
    char *text = pt_slurp(out), *etext = pt_slurp(err);
    struct pt_samples all = {0}, s;
    assert_true(pt_parse_batches(text, &all) >= 0);
    pt_filter(&all, "r-v2", "wan0", &s);
    int downs = 0;
    size_t at_down = 0;
    for (size_t i = 1; i < s.n; i++)
        if (s.v[i].uptime_cs < s.v[i - 1].uptime_cs) {
            downs++;
            at_down = i;
        }
    fprintf(stderr, "# %zu samples, uptime went down %d time(s)\n", s.n, downs);
    assert_int_equal(downs, 1);
    assert_true(at_down >= 2);       /* samples before the kill */
    assert_true(s.n - at_down >= 1); /* and after the restart */
    /* the outage is logged once per state change, not once per failed poll */
    if (pt_count(etext, "poll failed") != 1 || pt_count(etext, "reachable again") != 1)
        fail_msg("expected one failure and one recovery line:\n%s", etext);
    set_cache_timeout(1); /* lost on restart */
    free(text);
    free(etext);
    pt_samples_free(&all);
    pt_samples_free(&s);
}

/* The configured name moves to another ifIndex while polling (wan0 renamed away, another
 * interface renamed to wan0): the poller notices on the next GET (it re-reads the name), resolves
 * the name again, and its samples then carry the new interface's counters. Device r-descr sees no
 * ifName, so this also covers resolution through ifDescr. */
static void test_renamed_interface_is_resolved_again(void **state)
{
    (void)state;
    char out[600], err[600];
    snprintf(out, sizeof(out), "%s/rename.out", g_dir);
    snprintf(err, sizeof(err), "%s/rename.err", g_dir);
    static char cmd[4096];
    snprintf(cmd, sizeof(cmd),
             "exec ip netns exec %s %s --config %s poll --stdout --device r-descr --flush-ms 200 "
             ">%s 2>%s",
             g_rns, th_bin("wanledger"), g_cfg, out, err);
    char *sh[] = {"sh", "-c", cmd, NULL};
    traffic(); /* wan0 has traffic, spare0 has none */
    pid_t pid = th_spawn(sh, NULL);
    assert_true(pid > 0);
    sleep(3);
    uint64_t old_rx = kstat("rx_bytes");
    assert_int_equal(th_sh("ip -n %1$s link set wan0 down && ip -n %1$s link set wan0 name wanold "
                           "&& ip -n %1$s link set spare0 down && ip -n %1$s link set spare0 name "
                           "wan0 && ip -n %1$s link set wan0 up && ip -n %1$s link set wanold up",
                           g_rns),
                     0);
    sleep(4);
    uint64_t new_rx = kstat("rx_bytes"); /* the interface now named wan0 */
    int st = th_stop(pid, 5000);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0); /* clean stop, no leak report */
    /* put the names back for the other tests */
    th_sh(
        "ip -n %1$s link set wan0 down && ip -n %1$s link set wan0 name spare0 && ip -n %1$s link "
        "set wanold down && ip -n %1$s link set wanold name wan0 && ip -n %1$s link set wan0 up "
        "&& ip -n %1$s link set spare0 up",
        g_rns);
    char *text = pt_slurp(out), *etext = pt_slurp(err);
    struct pt_samples all = {0}, s;
    assert_true(pt_parse_batches(text, &all) >= 0);
    pt_filter(&all, "r-descr", "wan0", &s);
    fprintf(stderr, "# %zu samples; wan0 rx %llu before the rename, %llu after\n", s.n,
            (unsigned long long)old_rx, (unsigned long long)new_rx);
    assert_true(s.n >= 4);
    assert_true(old_rx > 300 * 1242 && new_rx < old_rx);
    assert_int_equal(s.v[0].in_octets, old_rx);       /* first samples: the old wan0 */
    assert_int_equal(s.v[s.n - 1].in_octets, new_rx); /* last: the interface now named wan0 */
    if (!strstr(etext, "is no longer wan0"))
        fail_msg("the move was not noticed:\n%s", etext);
    free(text);
    free(etext);
    pt_samples_free(&all);
    pt_samples_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_v2c_deltas_match_kernel),
        cmocka_unit_test(test_v3_authpriv_deltas_match_kernel),
        cmocka_unit_test(test_32bit_fallback_without_hc_columns),
        cmocka_unit_test(test_32bit_snmpv1),
        cmocka_unit_test(test_wrong_v3_password_names_device),
        cmocka_unit_test(test_unreachable_device_does_not_delay_others),
        cmocka_unit_test(test_snmpd_restart_uptime_goes_down),
        cmocka_unit_test(test_renamed_interface_is_resolved_again),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
