/* `wanledger poll` under SNMP faults, against a real snmpd (net-snmp) in a network namespace
 * whose veth interface wan0 carries real, paced traffic from a peer namespace:
 * - snmpd restarted under the poller, over `unix:` (a stream: net-snmp closes the transport)
 *   and over UDP: no crash, polling resumes, the restart shows as sysUpTime going down;
 * - wan0 deleted and created again while traffic flows (snmpd keeps the deleted row, oper down,
 *   counters frozen): no interval of zeros; the reconciliation core, fed the poller's samples,
 *   makes the window holding the outage `incomplete`, never `idle`, and the windows after it
 *   count the new interface's traffic;
 * - late answers: a UDP relay (this test, in the router namespace) holds snmpd's answers back
 *   for 1.5 s, and snmpd itself is stopped (SIGSTOP) for 1.5 s; the sample's time must be when
 *   snmpd read the counters (the relay sees that instant), not when the answer arrived. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "harness.h"
#include "pt_util.h"
#include "recon.h"
#include "timeutil.h"

#define SNMP_PORT  16171
#define RELAY_PORT 16172
#define WINDOW_S   10
#define HOLD_US    1500000 /* a late answer: 1.5 s */

static char g_rns[32], g_pns[32], g_veth_peer[32];
static char g_dir[512], g_cfg[600];

static int ns_sh_ok(const char *cmd)
{
    return th_sh("%s >/dev/null 2>&1", cmd) == 0;
}

static int start_snmpd(void)
{
    if (pt_snmpd_start(g_dir, g_rns, SNMP_PORT) != 0)
        return -1;
    /* interface cache 1 s instead of 3 (lost on restart) */
    th_sh("MIBS= ip netns exec %s snmpset -v2c -c private 127.0.0.1:%d "
          "1.3.6.1.4.1.8072.1.5.3.1.2.1.3.6.1.2.1.2.2 i 1 >/dev/null",
          g_rns, SNMP_PORT);
    return 0;
}

static void kill_snmpd(int sig)
{
    pt_snmpd_kill(g_dir, sig);
}

static long snmpd_pid(void)
{
    char path[700];
    snprintf(path, sizeof(path), "%s/snmpd.pid", g_dir);
    char *t = pt_slurp(path);
    long pid = atol(t);
    free(t);
    return pid;
}

/* wan0 (router) <-> peer, addresses and static neighbours. */
static int make_wan0(void)
{
    char cmd[1024];
    const char *steps[] = {
        "ip link add wan0 netns %1$s type veth peer name %3$s netns %2$s",
        "ip -n %1$s addr add 10.79.0.1/30 dev wan0 && ip -n %1$s link set wan0 up",
        "ip -n %2$s addr add 10.79.0.2/30 dev %3$s && ip -n %2$s link set %3$s up",
        "ip -n %1$s neigh replace 10.79.0.2 dev wan0 nud permanent lladdr "
        "$(ip netns exec %2$s cat /sys/class/net/%3$s/address)",
        "ip -n %2$s neigh replace 10.79.0.1 dev %3$s nud permanent lladdr "
        "$(ip netns exec %1$s cat /sys/class/net/wan0/address)",
    };
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        snprintf(cmd, sizeof(cmd), steps[i], g_rns, g_pns, g_veth_peer);
        if (!ns_sh_ok(cmd)) {
            fprintf(stderr, "failed: %s\n", cmd);
            return -1;
        }
    }
    return 0;
}

static int setup(void **state)
{
    (void)state;
    th_require_root();
    th_require(th_sh("command -v snmpd >/dev/null && command -v snmpset >/dev/null") == 0,
               "snmpd and snmp tools (Debian snmpd, snmp) are needed");
    int pid = (int)getpid();
    snprintf(g_rns, sizeof(g_rns), "wlpf-%d-r", pid);
    snprintf(g_pns, sizeof(g_pns), "wlpf-%d-p", pid);
    snprintf(g_veth_peer, sizeof(g_veth_peer), "wlpf%db", pid);
    snprintf(g_dir, sizeof(g_dir), "%s", th_tmpdir("wlp-faults"));
    char cmd[512];
    snprintf(cmd, sizeof(cmd),
             "ip netns add %s && ip netns add %s && ip -n %s link set lo up && "
             "ip -n %s link set lo up",
             g_rns, g_pns, g_rns, g_pns);
    if (!ns_sh_ok(cmd) || make_wan0() != 0)
        return -1;
    th_sh("mkdir -p %s/persist", g_dir);
    char path[700], text[4096];
    snprintf(path, sizeof(path), "%s/snmpd.conf", g_dir);
    snprintf(text, sizeof(text),
             "agentaddress udp:127.0.0.1:%1$d,unix:%2$s/snmpd.sock\n"
             /* unix: peers have no address: com2secunix (as scripts/stack.sh) */
             "com2sec rosec default public\n"
             "com2sec rwsec 127.0.0.1 private\n"
             "com2secunix rosecu %2$s/snmpd.sock public\n"
             "group rogrp v2c rosec\n"
             "group rogrp v2c rosecu\n"
             "group rwgrp v2c rwsec\n"
             "view all included .1\n"
             "access rogrp \"\" any noauth exact all none none\n"
             "access rwgrp \"\" any noauth exact all all none\n",
             SNMP_PORT, g_dir);
    pt_write(path, text);
    snprintf(path, sizeof(path), "%s/community", g_dir);
    pt_write(path, "public\n");
    snprintf(g_cfg, sizeof(g_cfg), "%s/config.json", g_dir);
    snprintf(text, sizeof(text),
             "{\"window_seconds\": %3$d, \"reconciler_url\": \"http://127.0.0.1:9\",\n"
             " \"sites\": [{\"name\": \"nyc\", \"prefixes\": [\"10.1.0.0/16\"]},\n"
             "            {\"name\": \"chi\", \"prefixes\": [\"10.2.0.0/16\"]}],\n"
             " \"devices\": [\n"
             "  {\"name\": \"r-udp\", \"site\": \"nyc\", \"snmp\": {\"address\": "
             "\"udp:127.0.0.1:%2$d\", \"version\": \"2c\", \"community_file\": "
             "\"%1$s/community\", \"interval_seconds\": 1, \"timeout_ms\": 700, \"retries\": 0}},\n"
             "  {\"name\": \"r-unix\", \"site\": \"nyc\", \"snmp\": {\"address\": "
             "\"unix:%1$s/snmpd.sock\", \"version\": \"2c\", \"community_file\": "
             "\"%1$s/community\", \"interval_seconds\": 1, \"timeout_ms\": 700, \"retries\": 0}},\n"
             "  {\"name\": \"r-relay\", \"site\": \"nyc\", \"snmp\": {\"address\": "
             "\"udp:127.0.0.1:%4$d\", \"version\": \"2c\", \"community_file\": "
             "\"%1$s/community\", \"interval_seconds\": 1, \"timeout_ms\": 4000, \"retries\": "
             "0}},\n"
             "  {\"name\": \"dead\", \"site\": \"nyc\", \"snmp\": {\"address\": "
             "\"udp:127.0.0.1:16199\", \"version\": \"2c\", \"community_file\": "
             "\"%1$s/community\", \"interval_seconds\": 1, \"timeout_ms\": 300, \"retries\": "
             "0}},\n"
             "  {\"name\": \"gn\", \"site\": \"nyc\", \"gnmi\": {}}],\n"
             " \"links\": [\n"
             "  {\"device\": \"r-udp\", \"interface\": \"wan0\", \"site\": \"nyc\", \"peer_site\": "
             "\"chi\", \"circuit\": \"c1\", \"capacity_bps\": 100000000},\n"
             "  {\"device\": \"r-unix\", \"interface\": \"wan0\", \"site\": \"nyc\", "
             "\"peer_site\": \"chi\", \"circuit\": \"c2\"},\n"
             "  {\"device\": \"r-relay\", \"interface\": \"wan0\", \"site\": \"nyc\", "
             "\"peer_site\": \"chi\", \"circuit\": \"c3\"},\n"
             "  {\"device\": \"dead\", \"interface\": \"wan0\", \"site\": \"nyc\", "
             "\"peer_site\": \"chi\", \"circuit\": \"c4\"},\n"
             "  {\"device\": \"gn\", \"interface\": \"et1\", \"site\": \"nyc\", "
             "\"peer_site\": \"chi\", \"circuit\": \"c5\"}]}\n",
             g_dir, SNMP_PORT, WINDOW_S, RELAY_PORT);
    pt_write(g_cfg, text);
    if (start_snmpd() != 0) {
        th_sh("cat %s/snmpd.log >&2", g_dir);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    kill_snmpd(9);
    th_sh("ip netns del %s 2>/dev/null; ip netns del %s 2>/dev/null", g_rns, g_pns);
    return 0;
}

/* ---- processes ---- */

/* `wanledger -v poll --stdout` of the given devices in the router namespace. */
static pid_t start_poller(const char *tag, const char *devices)
{
    static char cmd[4096];
    snprintf(cmd, sizeof(cmd),
             "exec ip netns exec %s %s -v --config %s poll --stdout %s --flush-ms 200 "
             ">%s/%s.out 2>%s/%s.err",
             g_rns, th_bin("wanledger"), g_cfg, devices, g_dir, tag, g_dir, tag);
    char *sh[] = {"sh", "-c", cmd, NULL};
    pid_t pid = th_spawn(sh, NULL);
    assert_true(pid > 0);
    return pid;
}

static void stop_poller(pid_t pid, const char *tag, struct pt_samples *all, char **err)
{
    int st = th_stop(pid, 5000);
    char path[700];
    snprintf(path, sizeof(path), "%s/%s.err", g_dir, tag);
    *err = pt_slurp(path);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) /* a crash, or a sanitizer report */
        fail_msg("poller exited with status %d:\n%s", st, *err);
    snprintf(path, sizeof(path), "%s/%s.out", g_dir, tag);
    char *text = pt_slurp(path);
    assert_true(pt_parse_batches(text, all) >= 0);
    free(text);
}

/* Paced UDP from the peer to the router: 1,000-byte datagrams every 2 ms (open loop) for secs;
 * errors (wan0 gone) are skipped. */
static pid_t start_traffic(int secs)
{
    static char cmd[1024];
    snprintf(cmd, sizeof(cmd),
             "exec ip netns exec %s python3 -c \"\n"
             "import socket, time\n"
             "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
             "t0 = time.monotonic(); i = 0\n"
             "while time.monotonic() - t0 < %d:\n"
             "    i += 1\n"
             "    d = t0 + i * 0.002 - time.monotonic()\n"
             "    if d > 0: time.sleep(d)\n"
             "    try: s.sendto(b'x' * 1000, ('10.79.0.1', 9))\n"
             "    except OSError: pass\n"
             "\"",
             g_pns, secs);
    char *sh[] = {"sh", "-c", cmd, NULL};
    pid_t pid = th_spawn(sh, NULL);
    assert_true(pid > 0);
    return pid;
}

static uint64_t kstat_rx(void)
{
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "ip netns exec %s cat /sys/class/net/wan0/statistics/rx_bytes",
             g_rns);
    FILE *p = popen(cmd, "r");
    unsigned long long v = 0;
    if (!p || fscanf(p, "%llu", &v) != 1)
        v = 0;
    if (p)
        pclose(p);
    return v;
}

/* ---- restarts ---- */

static void check_restart(const struct pt_samples *all, const char *dev, const char *err)
{
    struct pt_samples s;
    pt_filter(all, dev, "wan0", &s);
    int downs = 0;
    size_t at_down = 0;
    for (size_t i = 1; i < s.n; i++)
        if (s.v[i].uptime_cs < s.v[i - 1].uptime_cs) {
            downs++;
            at_down = i;
        }
    fprintf(stderr, "# %s: %zu samples, uptime went down %d time(s), %zu after the restart\n", dev,
            s.n, downs, downs ? s.n - at_down : 0);
    if (downs != 1 || at_down < 2 || s.n - at_down < 2)
        fail_msg("%s: polling did not resume after the restart:\n%s", dev, err);
    pt_samples_free(&s);
}

static void test_snmpd_restart_over_unix_and_udp(void **state)
{
    (void)state;
    pid_t pid = start_poller("restart", "--device r-unix --device r-udp");
    /* long enough that snmpd's uptime before the kill exceeds the new one's at the end */
    sleep(8);
    kill_snmpd(15);
    sleep(2); /* polls fail: the unix: connection is closed, UDP times out */
    assert_int_equal(start_snmpd(), 0);
    sleep(5); /* backoff is at most 4 s at a 1 s interval after 3 failures */
    struct pt_samples all = {0};
    char *err;
    stop_poller(pid, "restart", &all, &err);
    check_restart(&all, "r-unix", err);
    check_restart(&all, "r-udp", err);
    if (!strstr(err, "SNMP device r-unix") || !strstr(err, "reachable again"))
        fail_msg("outage not logged:\n%s", err);
    free(err);
    pt_samples_free(&all);
}

/* ---- interface deleted and created again ---- */

static void sleep_until(int64_t t_us)
{
    int64_t d = t_us - tm_now_us();
    if (d > 0)
        usleep((useconds_t)d);
}

/* The reconciler's view of r-udp's wan0 alone (one circuit between nyc and chi). */
static struct cfg *recon_cfg(void)
{
    char text[1024];
    snprintf(text, sizeof(text),
             "{\"window_seconds\": %d, \"sites\": [{\"name\": \"nyc\", \"prefixes\": "
             "[\"10.1.0.0/16\"]}, {\"name\": \"chi\", \"prefixes\": [\"10.2.0.0/16\"]}], "
             "\"devices\": [{\"name\": \"r-udp\", \"site\": \"nyc\", \"snmp\": {\"address\": "
             "\"udp:127.0.0.1:1\", \"community_file\": \"%s/community\"}}], \"links\": "
             "[{\"device\": \"r-udp\", \"interface\": \"wan0\", \"site\": \"nyc\", "
             "\"peer_site\": \"chi\", \"circuit\": \"c1\", \"capacity_bps\": 100000000}]}",
             WINDOW_S, g_dir);
    struct cfg_errors ce;
    struct cfg *cfg = cfg_parse("recon.json", text, &ce);
    assert_non_null(cfg);
    return cfg;
}

/* Status, valid fraction and observed bytes of nyc->chi over [ws, ws + W) from the samples. */
static void reconcile(const struct cfg *cfg, const struct pt_samples *s, int link, int64_t ws,
                      enum cell_status *status, double *valid, uint64_t *observed)
{
    struct recon_sample *rs = calloc(s->n + 1, sizeof(*rs));
    for (size_t i = 0; i < s->n; i++) {
        const struct pt_sample *p = &s->v[i];
        rs[i] = (struct recon_sample){.link = link,
                                      .at_us = p->at_us,
                                      .uptime_cs = p->uptime_cs,
                                      .discontinuity_cs = p->discontinuity_cs,
                                      .counter_bits = p->counter_bits,
                                      .has_in_octets = true,
                                      .has_out_octets = true,
                                      .in_octets = p->in_octets,
                                      .out_octets = p->out_octets,
                                      .speed_bps = p->speed_bps};
    }
    struct recon_input in = {.window_start_us = ws, .samples = rs, .n_samples = s->n};
    struct recon_result out = {0};
    char err[256];
    if (recon_run(cfg, &in, &out, err, sizeof(err)) != 0)
        fail_msg("recon_run: %s", err);
    *status = CELL_NO_COUNTER;
    for (size_t i = 0; i < out.n_cells; i++) {
        const struct recon_cell *c = &out.cells[i];
        /* nyc -> chi: wan0 is nyc's end, its in-counter (what arrived from chi) is chi -> nyc;
         * its out-counter nyc -> chi. The traffic comes in: look at chi -> nyc. */
        if (c->has_link && strcmp(cfg->sites[c->src_site].name, "chi") == 0) {
            *status = c->status;
            *valid = c->valid_fraction;
            *observed = c->observed_bytes;
        }
    }
    recon_result_free(&out);
    free(rs);
}

static void test_interface_deleted_and_recreated(void **state)
{
    (void)state;
    /* start just after a window edge so the outage falls inside one window */
    int64_t w = WINDOW_S * 1000000LL;
    sleep_until(tm_window_start(tm_now_us(), WINDOW_S) + w + 200000);
    pid_t traffic = start_traffic(48);
    pid_t pid = start_poller("veth", "--device r-udp");
    int64_t w0 = tm_window_start(tm_now_us(), WINDOW_S); /* this window: polling starts */
    sleep_until(w0 + w + 3000000);                       /* 3 s into the next window */
    int64_t t_del = tm_now_us();
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "ip -n %s link del wan0", g_rns);
    assert_true(ns_sh_ok(cmd));
    sleep(1);
    assert_int_equal(make_wan0(), 0);
    int64_t t_add = tm_now_us();
    /* two more whole windows of traffic on the new wan0 */
    sleep_until(w0 + 4 * w + 500000);
    struct pt_samples all = {0}, s;
    char *err;
    stop_poller(pid, "veth", &all, &err);
    th_stop(traffic, 2000);
    pt_filter(&all, "r-udp", "wan0", &s);
    struct cfg *cfg = recon_cfg();
    int link = 0;
    /* no valid stretch of zeros while traffic flowed: three consecutive samples with the same
     * discontinuity (valid intervals for the reconciler) and the same counter would be frozen
     * counters (snmpd's 1 s interface cache can repeat a value twice at a 1 s interval, not 3) */
    size_t invalid = 0;
    for (size_t i = 0; i < s.n; i++) {
        if (s.v[i].discontinuity_cs < (1LL << 32))
            invalid++;
        if (i >= 2 && s.v[i].discontinuity_cs == s.v[i - 1].discontinuity_cs &&
            s.v[i - 1].discontinuity_cs == s.v[i - 2].discontinuity_cs &&
            s.v[i].in_octets == s.v[i - 2].in_octets && s.v[i].at_us < t_add + 8 * 1000000)
            fail_msg("a valid stretch of zero bytes: samples %zu..%zu at %lld, in %llu\n%s", i - 2,
                     i, (long long)s.v[i].at_us, (unsigned long long)s.v[i].in_octets, err);
    }
    enum cell_status st[3];
    double valid[3] = {0};
    uint64_t observed[3] = {0};
    for (int k = 0; k < 3; k++)
        reconcile(cfg, &s, link, w0 + (k + 1) * w, &st[k], &valid[k], &observed[k]);
    fprintf(stderr,
            "# %zu samples (%zu marked invalid); wan0 deleted at +%.1f s, back at +%.1f s into "
            "window 1; windows 1..3: %s (valid %.2f, %llu B), %s (valid %.2f, %llu B), %s "
            "(valid %.2f, %llu B)\n",
            s.n, invalid, (double)(t_del - w0 - w) / 1e6, (double)(t_add - w0 - w) / 1e6,
            recon_status_name(st[0]), valid[0], (unsigned long long)observed[0],
            recon_status_name(st[1]), valid[1], (unsigned long long)observed[1],
            recon_status_name(st[2]), valid[2], (unsigned long long)observed[2]);
    assert_int_equal(st[0], CELL_INCOMPLETE); /* the outage's window: unknown, not idle */
    if (!strstr(err, "moved from ifIndex") && !strstr(err, "is no longer wan0"))
        fail_msg("the new wan0 was not found:\n%s", err);
    /* the new interface's traffic is counted: 500 datagrams/s of 1,000 + 42 bytes */
    for (int k = 1; k < 3; k++) {
        assert_int_not_equal(st[k], CELL_INCOMPLETE); /* (idle here: no agent attributes it) */
        assert_true(valid[k] >= 0.9);
        assert_true(observed[k] > (uint64_t)(0.8 * 500 * 1042 * WINDOW_S));
    }
    cfg_free(cfg);
    free(err);
    pt_samples_free(&all);
    pt_samples_free(&s);
}

/* ---- late answers ---- */

struct relay {
    atomic_bool stop;
    atomic_bool hold_next; /* the next answer from snmpd waits HOLD_US before it is passed */
    atomic_llong hold_until_us;
    /* the answer that was held: when snmpd sent it (it read the counters just before) */
    atomic_llong held_answer_us;
    int front, back;
};

static void *relay_main(void *arg)
{
    struct relay *r = arg;
    struct sockaddr_in client = {0};
    socklen_t cl = sizeof(client);
    char buf[65536];
    struct {
        char data[65536];
        ssize_t n;
        bool used;
    } *held = calloc(1, sizeof(*held));
    while (!atomic_load(&r->stop)) {
        struct pollfd p[2] = {{r->front, POLLIN, 0}, {r->back, POLLIN, 0}};
        poll(p, 2, 20);
        int64_t now = tm_now_us();
        if (held->used && now >= atomic_load(&r->hold_until_us)) {
            sendto(r->front, held->data, (size_t)held->n, 0, (struct sockaddr *)&client, cl);
            held->used = false;
        }
        if (p[0].revents & POLLIN) {
            cl = sizeof(client);
            ssize_t n = recvfrom(r->front, buf, sizeof(buf), 0, (struct sockaddr *)&client, &cl);
            if (n > 0)
                send(r->back, buf, (size_t)n, 0);
        }
        if (p[1].revents & POLLIN) {
            ssize_t n = recv(r->back, buf, sizeof(buf), 0);
            if (n <= 0)
                continue;
            if (!held->used && atomic_exchange(&r->hold_next, false)) {
                memcpy(held->data, buf, (size_t)n);
                held->n = n;
                held->used = true;
                atomic_store(&r->hold_until_us, now + HOLD_US);
                atomic_store(&r->held_answer_us, now);
            } else {
                sendto(r->front, buf, (size_t)n, 0, (struct sockaddr *)&client, cl);
            }
        }
    }
    free(held);
    return NULL;
}

/* The sample whose `at` is nearest t. */
static const struct pt_sample *nearest(const struct pt_samples *s, int64_t t)
{
    const struct pt_sample *best = NULL;
    for (size_t i = 0; i < s->n; i++)
        if (!best || llabs(s->v[i].at_us - t) < llabs(best->at_us - t))
            best = &s->v[i];
    return best;
}

/* From the poller's debug line for that response: milliseconds from send to arrival. */
static double arrival_ms(const char *err, size_t nth_late)
{
    const char *p = err;
    size_t k = 0;
    while ((p = strstr(p, "received +")) != NULL) {
        double ms = atof(p + 10);
        p += 10;
        if (ms > 1000 && k++ == nth_late)
            return ms;
    }
    return -1;
}

static void test_late_answers_do_not_move_bytes(void **state)
{
    (void)state;
    struct relay r = {0};
    atomic_store(&r.hold_until_us, 0);
    char nspath[128];
    snprintf(nspath, sizeof(nspath), "/var/run/netns/%s", g_rns);
    int nsfd = open(nspath, O_RDONLY);
    assert_true(nsfd >= 0);
    int self = open("/proc/self/ns/net", O_RDONLY);
    assert_int_equal(setns(nsfd, CLONE_NEWNET), 0); /* the relay's sockets live in the router ns */
    r.front = socket(AF_INET, SOCK_DGRAM, 0);
    r.back = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in fa = {.sin_family = AF_INET,
                             .sin_port = htons(RELAY_PORT),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct sockaddr_in ba = fa;
    ba.sin_port = htons(SNMP_PORT);
    assert_int_equal(bind(r.front, (struct sockaddr *)&fa, sizeof(fa)), 0);
    assert_int_equal(connect(r.back, (struct sockaddr *)&ba, sizeof(ba)), 0);
    assert_int_equal(setns(self, CLONE_NEWNET), 0);
    close(nsfd);
    close(self);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, relay_main, &r), 0);

    pid_t traffic = start_traffic(20);
    pid_t pid = start_poller("late", "--device r-relay");
    sleep(5); /* a few ordinary polls: the device clock is learnt */
    uint64_t rx0 = kstat_rx();
    int64_t t0 = tm_now_us();
    /* 1: the next answer is held back 1.5 s on its way to the poller */
    atomic_store(&r.hold_next, true);
    sleep(4);
    /* 2: snmpd stopped for 1.5 s: requests wait in its socket, it reads when continued */
    long spid = snmpd_pid();
    assert_true(spid > 0);
    int64_t t_stop = tm_now_us();
    kill((pid_t)spid, SIGSTOP);
    usleep(1500000);
    int64_t t_cont = tm_now_us();
    kill((pid_t)spid, SIGCONT);
    sleep(3);
    uint64_t rx1 = kstat_rx();
    int64_t t1 = tm_now_us();
    struct pt_samples all = {0}, relayed;
    char *err;
    stop_poller(pid, "late", &all, &err);
    th_stop(traffic, 2000);
    atomic_store(&r.stop, true);
    pthread_join(th, NULL);
    close(r.front);
    close(r.back);
    pt_filter(&all, "r-relay", "wan0", &relayed);
    double rate = (double)(rx1 - rx0) / ((double)(t1 - t0) / 1e6); /* bytes/s on wan0 */
    int64_t held_at = atomic_load(&r.held_answer_us);
    assert_true(held_at > 0);
    /* 1: snmpd answered at held_at (it read the counters a few hundred us before); the answer
     * reached the poller 1.5 s later. The sample's time must be held_at, give or take snmpd's
     * sysUpTime resolution (10 ms) and the round trips the clock was learnt from. */
    const struct pt_sample *late = nearest(&relayed, held_at);
    double arr = arrival_ms(err, 0);
    double err_held = (double)(late->at_us - held_at) / 1e6;
    /* 2: snmpd read the counters when continued (t_cont); the request was sent earlier */
    const struct pt_sample *stalled = nearest(&relayed, t_cont);
    double err_stop = (double)(stalled->at_us - t_cont) / 1e6;
    fprintf(stderr,
            "# wan0 at %.0f B/s; answer held 1.5 s: arrived %.0f ms after the request, sample "
            "time off by %+.3f s = %+.0f B moved (arrival time would move %+.0f B); snmpd "
            "stopped 1.5 s: sample time off by %+.3f s = %+.0f B (n = %zu samples)\n",
            rate, arr, err_held, err_held * rate, (arr / 1e3) * rate, err_stop, err_stop * rate,
            relayed.n);
    (void)t_stop;
    assert_true(arr > 1400); /* the answer really was late */
    assert_true(err_held > -0.03 && err_held < 0.03);
    assert_true(err_stop > -0.03 && err_stop < 0.05);
    free(err);
    pt_samples_free(&all);
    pt_samples_free(&relayed);
}

/* ---- /metrics of the running poller ---- */

/* The value of the series whose line starts with prefix (name{labels}), or -1. */
static double metric(const char *text, const char *prefix)
{
    const char *p = text;
    size_t n = strlen(prefix);
    while ((p = strstr(p, prefix)) != NULL) {
        if ((p == text || p[-1] == '\n') && p[n] == ' ')
            return atof(p + n + 1);
        p += n;
    }
    return -1;
}

static int count_spool(const char *dir, size_t *samples)
{
    int files = 0;
    *samples = 0;
    char cmd[800];
    snprintf(cmd, sizeof(cmd), "ls %s 2>/dev/null | grep -cE '^[0-9]{20}(\\.json)?$'", dir);
    FILE *p = popen(cmd, "r");
    if (p && fscanf(p, "%d", &files) != 1)
        files = 0;
    if (p)
        pclose(p);
    snprintf(cmd, sizeof(cmd), "cat %s/[0-9]* 2>/dev/null | grep -o '\"device\":' | wc -l", dir);
    p = popen(cmd, "r");
    if (p && fscanf(p, "%zu", samples) != 1)
        *samples = 0;
    if (p)
        pclose(p);
    return files;
}

static void test_metrics_of_the_running_poller(void **state)
{
    (void)state;
    th_require(th_sh("command -v promtool >/dev/null") == 0,
               "promtool (Debian prometheus) is needed to check /metrics");
    char spool[700], cmd[4096], out[700], err[700], mfile[700];
    snprintf(spool, sizeof(spool), "%s/spool", g_dir);
    snprintf(out, sizeof(out), "%s/metrics.out", g_dir);
    snprintf(err, sizeof(err), "%s/metrics.err", g_dir);
    snprintf(mfile, sizeof(mfile), "%s/metrics.txt", g_dir);
    int mport = 19466, gport = 19467;
    /* the reconciler (http://127.0.0.1:9) is down: batches wait in the spool */
    snprintf(cmd, sizeof(cmd),
             "exec ip netns exec %s %s --config %s poll --device r-udp --device dead --spool %s "
             "--flush-ms 200 --metrics 127.0.0.1:%d --gnmi-tcp 127.0.0.1:%d >%s 2>%s",
             g_rns, th_bin("wanledger"), g_cfg, spool, mport, gport, out, err);
    char *sh[] = {"sh", "-c", cmd, NULL};
    pid_t pid = th_spawn(sh, NULL);
    assert_true(pid > 0);
    sleep(4);
    /* a gnmic message in the plain json format: refused, counted */
    char msg[700];
    snprintf(msg, sizeof(msg), "%s/plain.json", g_dir);
    pt_write(msg, "{\"source\":\"gn\",\"timestamp\":1,\"updates\":[]}");
    assert_int_equal(th_sh("ip netns exec %s python3 -c \"import socket; s = "
                           "socket.create_connection(('127.0.0.1', %d)); s.sendall(open('%s', "
                           "'rb').read()); s.close()\"",
                           g_rns, gport, msg),
                     0);
    usleep(300000);
    int64_t t_scrape = tm_now_us();
    assert_int_equal(
        th_sh("ip netns exec %s curl -sf 127.0.0.1:%d/metrics >%s", g_rns, mport, mfile), 0);
    size_t spooled_samples;
    int files = count_spool(spool, &spooled_samples);
    int st = th_stop(pid, 5000);
    char *etext = pt_slurp(err);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fail_msg("poller exited with status %d:\n%s", st, etext);
    size_t final_samples;
    count_spool(spool, &final_samples);
    char *m = pt_slurp(mfile);
    int rc = th_sh("promtool check metrics <%s >&2", mfile);
    if (rc != 0)
        fail_msg("promtool check metrics failed:\n%s", m);
    double last =
        metric(m, "wanledger_poller_snmp_last_success_timestamp_seconds{device=\"r-udp\"}");
    double timeouts = metric(m, "wanledger_poller_snmp_poll_failures_total{device=\"dead\","
                                "reason=\"timeout\"}");
    double ok = metric(m, "wanledger_poller_snmp_poll_duration_seconds_count{device=\"r-udp\"}");
    double fast = metric(m, "wanledger_poller_snmp_poll_duration_seconds_bucket{device=\"r-udp\","
                            "le=\"+Inf\"}");
    double samples = metric(m, "wanledger_poller_samples_total{device=\"r-udp\",source=\"snmp\"}");
    double batches = metric(m, "wanledger_poller_spool_batches");
    double json = metric(m, "wanledger_poller_gnmi_refused_total{reason=\"format_json\"}");
    fprintf(stderr,
            "# /metrics: last success %.3f s before the scrape, %0.f polls ok, %.0f timeouts of "
            "dead, %.0f samples (%zu in the spool then, %zu after the stop), %.0f batches (%d "
            "files), %.0f json refused\n",
            (double)t_scrape / 1e6 - last, ok, timeouts, samples, spooled_samples, final_samples,
            batches, files, json);
    /* polled every second: the last success is at most ~1.1 s old */
    assert_true(last > 0 && (double)t_scrape / 1e6 - last < 1.5);
    assert_true(ok >= 3 && fast == ok); /* the +Inf bucket holds every poll */
    assert_true(timeouts >= 1);
    /* samples emitted = samples that reached the spool: all of those counted at the scrape are
     * there after the stop (which flushes the batch in memory), at most one poll more */
    assert_true(samples >= 3);
    assert_true((double)final_samples >= samples && (double)final_samples <= samples + 1);
    /* the spool depth is the number of batch files (one 200 ms flush may fall in between) */
    assert_true(batches >= 1 && fabs(batches - files) <= 1);
    assert_true(json == 1);
    free(m);
    free(etext);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_snmpd_restart_over_unix_and_udp),
        cmocka_unit_test(test_interface_deleted_and_recreated),
        cmocka_unit_test(test_late_answers_do_not_move_bytes),
        cmocka_unit_test(test_metrics_of_the_running_poller),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
