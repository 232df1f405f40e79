/* gnmic as routers really feed `wanledger poll`: the bytes below are written the way gnmic's own
 * serializers write them (openconfig/gnmic, files and commits named per fixture), sent over real
 * TCP and UDP sockets to the real poller, and the samples it emits are compared field by field
 * with figures worked out here from the fixture's values.
 *
 * What gnmic's code does, and what the fixtures therefore look like:
 * - formatters/event.go @ c57ae4f1f4c5: EventMsg {name, timestamp (int64 ns), tags, values}
 *   marshalled by encoding/json: struct fields in that order, map keys sorted, no spaces; tags
 *   are the path keys as ELEM_KEY ("interface_name", "subinterface_index") plus the meta tags
 *   "source" (target address) and "subscription-name"; values are keyed by the path without
 *   keys. uint64 leaves in proto encoding are JSON numbers; in JSON_IETF they are strings
 *   (RFC 7951), which gnmic passes through unchanged.
 * - formatters/formats.go @ 8783ef9d0408 ("event"): one message is json.Marshal([]*EventMsg), a
 *   JSON array; outputs/output.go @ 0bfa527cbb67 marshalSplit (`split-events: true`): one
 *   json.Marshal(*EventMsg) per event, a bare object per message.
 * - outputs/tcp_output/tcp_output.go @ 523bd909aef1: each message is written followed by the
 *   configured `delimiter` (none by default: messages are simply concatenated).
 * - outputs/udp_output/udp_output.go @ 8783ef9d0408: one message per datagram, no delimiter,
 *   no split-events.
 * - formatters/json.go @ ec3e6af1776e + msg.go @ 8783ef9d0408: the plain `format: json` (the
 *   default when an output sets no format): NotificationRspMsg {source, subscription-name,
 *   timestamp, time, updates:[{Path, values}]} — no tags, so no interface to map: refused.
 * - SR Linux native leaf names as in gnmic docs/cmd/processor.md @ 2b7d788e345e
 *   ("/interface/statistics/in-packets", "...-unicast-packets"); SR Linux's last-clear is a
 *   yang date-and-time string. */
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

/* 2025-11-29T20:00:00Z, +10 s, +20 s, in ns */
#define T1    "1764446400000000000"
#define T2    "1764446410000000000"
#define T3    "1764446420000000000"
#define T1_US 1764446400000000LL

/* ---- fixture 1: SR Linux, proto encoding, split-events: true, delimiter "\n" ---- */
#define SRL_TAGS                                                                                   \
    "{\"interface_name\":\"ethernet-1/1\",\"source\":\"clab-srl1\",\"subscription-name\":\"srl\"}"
#define SRL_SUB_TAGS                                                                               \
    "{\"interface_name\":\"ethernet-1/1\",\"source\":\"clab-srl1\",\"subinterface_index\":\"0\","  \
    "\"subscription-name\":\"srl\"}"
#define SRL(ts, leaf, v)                                                                           \
    "{\"name\":\"srl\",\"timestamp\":" ts ",\"tags\":" SRL_TAGS                                    \
    ",\"values\":{\"/interface/statistics/" leaf "\":" v "}}\n"
#define SRL_SUB(ts, leaf, v)                                                                       \
    "{\"name\":\"srl\",\"timestamp\":" ts ",\"tags\":" SRL_SUB_TAGS                                \
    ",\"values\":{\"/interface/subinterface/statistics/" leaf "\":" v "}}\n"
#define SRL_CLEAR "\"2025-11-29T19:00:00.123Z\""

static const char *const srl_split[] = {
    /* T1: one event per leaf, a subinterface's counters interleaved */
    SRL(T1, "in-octets", "35284165"),
    SRL(T1, "in-packets", "351770"),
    SRL_SUB(T1, "in-octets", "99999999"),
    SRL(T1, "last-clear", SRL_CLEAR),
    SRL(T1, "out-octets", "219527024"),
    SRL_SUB(T1, "out-octets", "88888888"),
    SRL(T1, "out-packets", "568218"),
    /* T2: its first event must not close a sample carrying T1's other counters */
    SRL(T2, "in-octets", "36284165"),
    SRL(T2, "in-packets", "352770"),
    SRL(T2, "last-clear", SRL_CLEAR),
    SRL(T2, "out-octets", "229527024"),
    SRL(T2, "out-packets", "578218"),
    /* T3: nothing comes after it; the quiet time must emit it while the connection stays open */
    SRL(T3, "in-octets", "37284165"),
    SRL(T3, "out-octets", "239527024"),
    SRL(T3, "in-packets", "353770"),
    SRL(T3, "out-packets", "588218"),
};

/* ---- fixture 2: OpenConfig, JSON_IETF (uint64 as strings), one array per notification ---- */
#define OC_TAGS(src)                                                                               \
    "{\"interface_name\":\"Ethernet1\",\"source\":\"" src "\",\"subscription-name\":\"oc\"}"
#define OC_SUB_TAGS(src)                                                                           \
    "{\"interface_name\":\"Ethernet1\",\"source\":\"" src "\",\"subinterface_index\":\"0\","       \
    "\"subscription-name\":\"oc\"}"
#define OCC "/interfaces/interface/state/counters/"
#define OC_MSG(src, ts, in, out, inu, outu, clear)                                                 \
    "[{\"name\":\"oc\",\"timestamp\":" ts ",\"tags\":" OC_TAGS(                                    \
        src) ",\"values\":{"                                                                       \
             "\"" OCC "in-broadcast-pkts\":\"1\",\"" OCC "in-multicast-pkts\":\"2\",\"" OCC        \
             "in-octets\":\"" in "\",\"" OCC "in-unicast-pkts\":\"" inu "\",\"" OCC                \
             "last-clear\":\"" clear "\",\"" OCC "out-broadcast-pkts\":\"3\",\"" OCC               \
             "out-multicast-pkts\":\"4\",\"" OCC "out-octets\":\"" out "\",\"" OCC                 \
             "out-unicast-pkts\":\"" outu "\"}},"                                                  \
             "{\"name\":\"oc\",\"timestamp\":" ts ",\"tags\":" OC_SUB_TAGS(                        \
                 src) ",\"values\":{"                                                              \
                      "\"/interfaces/interface/subinterfaces/subinterface/state/counters/"         \
                      "in-octets\":\"5\","                                                         \
                      "\"/interfaces/interface/subinterfaces/subinterface/state/counters/"         \
                      "out-octets\":\"6\"}},"                                                      \
                      "{\"name\":\"oc\",\"timestamp\":" ts ",\"tags\":" OC_TAGS(                   \
                          src) ",\"values\":{"                                                     \
                               "\"/interfaces/interface/ethernet/state/"                           \
                               "port-speed\":\"openconfig-if-ethernet:SPEED_10GB\"}}]"
#define CLEAR_A   "1764000000000000000"
#define CLEAR_B   "1764446405000000000" /* cleared between T1 and T2 */
#define OC_1(src) OC_MSG(src, T1, "123456789", "987654321", "1000", "2000", CLEAR_A)
#define OC_2(src)                                                                                  \
    OC_MSG(src, T2, "18446744073709551000", "9007199254740993", "1010", "2020", CLEAR_B)

/* ---- fixture 3: gnmic's plain `format: json` (formatters/json.go formatSubscribeResponse) ---- */
#define PLAIN_JSON                                                                                 \
    "{\"source\":\"ceos1:6030\",\"subscription-name\":\"oc\",\"timestamp\":" T1 ",\"time\":"       \
    "\"2025-11-29T20:00:00Z\",\"updates\":[{\"Path\":\"interfaces/interface[name=Ethernet1]/"      \
    "state/"                                                                                       \
    "counters/in-octets\",\"values\":{\"interfaces/interface/state/counters/in-octets\":"          \
    "\"100\"}}]}"

static char g_dir[512], g_cfg[600];

static void write_config(void)
{
    snprintf(g_dir, sizeof(g_dir), "%s", th_tmpdir("wlp-gnmic"));
    snprintf(g_cfg, sizeof(g_cfg), "%s/config.json", g_dir);
    pt_write(g_cfg,
             "{\"sites\": [{\"name\": \"nyc\", \"prefixes\": [\"10.1.0.0/16\"]},\n"
             "            {\"name\": \"chi\", \"prefixes\": [\"10.2.0.0/16\"]}],\n"
             " \"devices\": [{\"name\": \"srl1\", \"site\": \"nyc\", \"gnmi\": {\"source\": "
             "\"clab-srl1\"}},\n"
             "   {\"name\": \"ceos1\", \"site\": \"chi\", \"gnmi\": {}},\n"
             "   {\"name\": \"ceos2\", \"site\": \"chi\", \"gnmi\": {}},\n"
             "   {\"name\": \"ceos3\", \"site\": \"chi\", \"gnmi\": {}}],\n"
             " \"links\": [{\"device\": \"srl1\", \"interface\": \"ethernet-1/1\", \"site\": "
             "\"nyc\", \"peer_site\": \"chi\", \"circuit\": \"c1\"},\n"
             "   {\"device\": \"ceos1\", \"interface\": \"Ethernet1\", \"site\": \"chi\", "
             "\"peer_site\": \"nyc\", \"circuit\": \"c1\"},\n"
             "   {\"device\": \"ceos2\", \"interface\": \"Ethernet1\", \"site\": \"chi\", "
             "\"peer_site\": \"nyc\", \"circuit\": \"c2\"},\n"
             "   {\"device\": \"ceos3\", \"interface\": \"Ethernet1\", \"site\": \"chi\", "
             "\"peer_site\": \"nyc\", \"circuit\": \"c3\"}]}\n");
}

struct run {
    pid_t pid;
    int tport, uport;
    char out[700], err[700];
};

static void start(struct run *r, const char *tag, const char *extra)
{
    snprintf(r->out, sizeof(r->out), "%s/%s.out", g_dir, tag);
    snprintf(r->err, sizeof(r->err), "%s/%s.err", g_dir, tag);
    r->tport = th_free_port();
    r->uport = th_free_udp_port();
    static char cmd[4096];
    snprintf(cmd, sizeof(cmd),
             "exec %s --config %s poll --no-snmp --stdout --flush-ms 50 --gnmi-quiet-ms 300 "
             "--gnmi-tcp 127.0.0.1:%d --gnmi-udp 127.0.0.1:%d %s >%s 2>%s",
             th_bin("wanledger"), g_cfg, r->tport, r->uport, extra, r->out, r->err);
    char *sh[] = {"sh", "-c", cmd, NULL};
    r->pid = th_spawn(sh, NULL);
    assert_true(r->pid > 0);
    assert_int_equal(th_wait_port(r->tport, 5000), 0);
}

static void stop(struct run *r, struct pt_samples *all, char **out, char **err)
{
    int st = th_stop(r->pid, 5000);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0); /* clean stop, no leak report */
    *out = pt_slurp(r->out);
    *err = pt_slurp(r->err);
    assert_true(pt_parse_batches(*out, all) >= 0);
}

/* Samples of (device, interface) printed so far, waiting up to timeout_ms for want of them. */
static size_t wait_samples(const struct run *r, const char *dev, size_t want, int timeout_ms)
{
    size_t n = 0;
    for (int t = 0; t < timeout_ms; t += 20) {
        char *text = pt_slurp(r->out);
        struct pt_samples all = {0}, s;
        if (pt_parse_batches(text, &all) >= 0) {
            pt_filter(&all, dev, dev[0] == 's' ? "ethernet-1/1" : "Ethernet1", &s);
            n = s.n;
            pt_samples_free(&s);
        }
        pt_samples_free(&all);
        free(text);
        if (n >= want)
            break;
        usleep(20000);
    }
    return n;
}

static void expect(const struct pt_sample *s, int64_t at_us, uint64_t in, uint64_t out,
                   uint64_t in_pkts, uint64_t out_pkts, uint64_t speed, int64_t disc)
{
    if (s->at_us != at_us || s->in_octets != in || s->out_octets != out || s->in_pkts != in_pkts ||
        s->out_pkts != out_pkts || s->speed_bps != speed || s->discontinuity_cs != disc ||
        s->counter_bits != 64 || s->uptime_cs != -1)
        fail_msg("%s %s: at %lld in %llu out %llu pkts %llu/%llu speed %llu disc %lld", s->device,
                 s->interface, (long long)s->at_us, (unsigned long long)s->in_octets,
                 (unsigned long long)s->out_octets, (unsigned long long)s->in_pkts,
                 (unsigned long long)s->out_pkts, (unsigned long long)s->speed_bps,
                 (long long)s->discontinuity_cs);
}

/* gnmic's tcp output with split-events: true and delimiter "\n" (SR Linux), its default (no
 * delimiter: concatenated arrays), its udp output, and the plain JSON format. */
static void test_gnmic_default_delimiter_split_events_udp_and_plain_json(void **state)
{
    (void)state;
    struct run r;
    start(&r, "a", "");
    int fd = pt_connect_tcp(r.tport);
    assert_true(fd >= 0);
    for (size_t i = 0; i < sizeof(srl_split) / sizeof(srl_split[0]); i++) {
        assert_int_equal(pt_send_all(fd, srl_split[i]), 0);
        usleep(2000); /* one TCP segment per message, as gnmic writes them */
    }
    /* T3 is emitted after the 300 ms quiet time, the connection still open */
    size_t n_srl = wait_samples(&r, "srl1", 3, 3000);
    assert_int_equal(n_srl, 3);
    /* gnmic's default: no delimiter, arrays back to back, here in one write */
    int fd2 = pt_connect_tcp(r.tport);
    assert_true(fd2 >= 0);
    assert_int_equal(pt_send_all(fd2, OC_1("ceos1:6030") OC_2("ceos1:6030")), 0);
    /* udp output: one array per datagram */
    assert_int_equal(pt_send_udp(r.uport, OC_1("ceos2:6030")), 0);
    assert_int_equal(pt_send_udp(r.uport, OC_2("ceos2:6030")), 0);
    /* plain format: json on two connections: refused, one log line per connection */
    int fd3 = pt_connect_tcp(r.tport), fd4 = pt_connect_tcp(r.tport);
    assert_true(fd3 >= 0 && fd4 >= 0);
    assert_int_equal(pt_send_all(fd3, PLAIN_JSON PLAIN_JSON), 0);
    assert_int_equal(pt_send_all(fd4, PLAIN_JSON), 0);
    assert_int_equal(wait_samples(&r, "ceos2", 2, 3000), 2);
    close(fd);
    close(fd2);
    close(fd3);
    close(fd4);
    usleep(200000);
    struct pt_samples all = {0}, srl, c1, c2, c3;
    char *o, *e;
    stop(&r, &all, &o, &e);
    pt_filter(&all, "srl1", "ethernet-1/1", &srl);
    pt_filter(&all, "ceos1", "Ethernet1", &c1);
    pt_filter(&all, "ceos2", "Ethernet1", &c2);
    pt_filter(&all, "ceos3", "Ethernet1", &c3);
    if (srl.n != 3 || c1.n != 2 || c2.n != 2 || c3.n != 0)
        fail_msg("samples: srl %zu ceos1 %zu ceos2 %zu ceos3 %zu\n%s\n%s", srl.n, c1.n, c2.n, c3.n,
                 o, e);
    /* SR Linux: last-clear 2025-11-29T19:00:00.123Z = 1764442800.123 s = 176444280012 cs;
     * packets are in-packets/out-packets; the subinterface's 99999999/88888888 are not taken */
    expect(&srl.v[0], T1_US, 35284165, 219527024, 351770, 568218, 0, 176444280012LL);
    expect(&srl.v[1], T1_US + 10000000, 36284165, 229527024, 352770, 578218, 0, 176444280012LL);
    /* no last-clear at T3: the one of T2 is carried */
    expect(&srl.v[2], T1_US + 20000000, 37284165, 239527024, 353770, 588218, 0, 176444280012LL);
    /* OpenConfig: packets = unicast + multicast + broadcast (1000+2+1, 2000+4+3), port-speed
     * 10 Gbit/s, last-clear ns / 1e7 = cs; counters above 2^53 checked on the text below */
    for (int k = 0; k < 2; k++) {
        const struct pt_samples *c = k ? &c2 : &c1;
        expect(&c->v[0], T1_US, 123456789, 987654321, 1003, 2007, 10000000000ULL, 176400000000LL);
        assert_int_equal(c->v[1].at_us, T1_US + 10000000);
        assert_int_equal(c->v[1].in_pkts, 1013);
        assert_int_equal(c->v[1].out_pkts, 2027);
        assert_int_equal(c->v[1].discontinuity_cs, 176444640500LL);
    }
    if (pt_count(o, "\"in_octets\":18446744073709551000,\"out_octets\":9007199254740993,") != 2)
        fail_msg("counters above 2^53 not exact:\n%s", o);
    assert_null(strstr(o, "99999999"));
    if (pt_count(e, "set `format: event`") != 2)
        fail_msg("expected one format-json line per connection:\n%s", e);
    free(o);
    free(e);
    pt_samples_free(&all);
    pt_samples_free(&srl);
    pt_samples_free(&c1);
    pt_samples_free(&c2);
    pt_samples_free(&c3);
}

/* gnmic's tcp output with a non-whitespace `delimiter` ("\n###", as gnmic's own processor docs
 * use): accepted once configured, and refused with a hint naming the setting when not. */
static void test_gnmic_configured_delimiter(void **state)
{
    (void)state;
    struct run r;
    start(&r, "b", "--gnmi-delimiter \"$(printf '\\n###')\"");
    int fd = pt_connect_tcp(r.tport);
    assert_true(fd >= 0);
    assert_int_equal(pt_send_all(fd, OC_1("ceos3") "\n###"), 0);
    usleep(5000);
    assert_int_equal(pt_send_all(fd, OC_2("ceos3") "\n#"), 0); /* a delimiter cut by the read */
    usleep(5000);
    assert_int_equal(pt_send_all(fd, "##"), 0);
    close(fd);
    assert_int_equal(wait_samples(&r, "ceos3", 2, 3000), 2);
    struct pt_samples all = {0}, c3;
    char *o, *e;
    stop(&r, &all, &o, &e);
    pt_filter(&all, "ceos3", "Ethernet1", &c3);
    if (c3.n != 2 || strstr(e, "rejected"))
        fail_msg("%zu samples\n%s\n%s", c3.n, o, e);
    expect(&c3.v[0], T1_US, 123456789, 987654321, 1003, 2007, 10000000000ULL, 176400000000LL);
    free(o);
    free(e);
    pt_samples_free(&all);
    pt_samples_free(&c3);

    /* the same bytes without the setting: rejected, and the log says what to set */
    start(&r, "c", "");
    fd = pt_connect_tcp(r.tport);
    assert_true(fd >= 0);
    assert_int_equal(pt_send_all(fd, OC_1("ceos3") "\n###" OC_2("ceos3") "\n###"), 0);
    close(fd);
    usleep(300000);
    all = (struct pt_samples){0};
    stop(&r, &all, &o, &e);
    if (!strstr(e, "gnmi_delimiter"))
        fail_msg("no hint about the delimiter:\n%s", e);
    free(o);
    free(e);
    pt_samples_free(&all);
}

int main(void)
{
    write_config();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gnmic_default_delimiter_split_events_udp_and_plain_json),
        cmocka_unit_test(test_gnmic_configured_delimiter),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
