/* The flow decoders on datagrams captured here from the real exporters (tests/flows/corpus,
 * README there), with the values tshark 4.0's cflow/sflow dissectors show for the same bytes;
 * template withdrawal and expiry, per-sampler rates, and every truncation and byte flip of the
 * corpus decoding without a crash (ASan/UBSan build). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "flow_agg.h"
#include "flow_ipfix.h"
#include "flow_sflow.h"
#include "harness.h"

#define MAX_RECS 4096

struct got {
    struct flow_rec r[MAX_RECS];
    size_t n;
};

static void on_rec(void *arg, const struct flow_rec *r)
{
    struct got *g = arg;
    if (g->n < MAX_RECS)
        g->r[g->n++] = *r;
}

static uint8_t *load(const char *name, size_t *len)
{
    char path[1024];
    const char *src = getenv("WL_SOURCE_DIR");
    snprintf(path, sizeof(path), "%s/tests/flows/corpus/%s", src ? src : ".", name);
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s", path);
    uint8_t *buf = malloc(65536);
    *len = fread(buf, 1, 65536, f);
    fclose(f);
    return buf;
}

/* Sums bytes/packets of records to a destination port; *rate gets the last rate seen. */
static void sum_port(const struct got *g, uint16_t port, uint64_t *bytes, uint64_t *pkts,
                     uint32_t *rate)
{
    *bytes = *pkts = 0;
    for (size_t i = 0; i < g->n; i++)
        if (g->r[i].dport == port) {
            *bytes += g->r[i].bytes;
            *pkts += g->r[i].packets;
            *rate = g->r[i].rate;
        }
}

static const struct flow_exporter EX = {
    .addr = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1}, .port = 50202};

static void test_softflowd_ipfix(void **state)
{
    (void)state;
    struct flow_ipfix *fx = flow_ipfix_new();
    struct flow_stats st = {0};
    static struct got g;
    g.n = 0;
    char err[256];
    for (int i = 0; i < 2; i++) {
        char name[64];
        size_t len;
        snprintf(name, sizeof(name), "softflowd-ipfix-s4-%03d.bin", i);
        uint8_t *b = load(name, &len);
        assert_int_equal(
            flow_ipfix_decode(fx, &EX, b, len, 1764582700000LL, on_rec, &g, &st, err, sizeof(err)),
            0);
        free(b);
    }
    /* tshark -T fields -e cflow.octets -e cflow.packets -e cflow.dstport on the same bytes:
     * 3696/42/5999, 117192/114/5001, 4920/15/5002; options record: interval 1, space 3 */
    uint64_t bytes, pkts;
    uint32_t rate = 0;
    sum_port(&g, 5001, &bytes, &pkts, &rate);
    assert_int_equal(bytes, 117192);
    assert_int_equal(pkts, 114);
    assert_int_equal(rate, 4);
    sum_port(&g, 5002, &bytes, &pkts, &rate);
    assert_int_equal(bytes, 4920);
    assert_int_equal(pkts, 15);
    sum_port(&g, 5999, &bytes, &pkts, &rate);
    assert_int_equal(bytes, 3696);
    assert_int_equal(pkts, 42);
    assert_int_equal(g.n, 3);
    assert_int_equal(g.r[0].family, 4);
    assert_memory_equal(g.r[1].src, ((uint8_t[]){10, 81, 1, 2}), 4);
    assert_memory_equal(g.r[1].dst, ((uint8_t[]){10, 81, 2, 2}), 4);
    assert_int_equal(g.r[1].proto, 17);
    assert_true(g.r[1].end_ms > 1764500000000LL); /* sysUpTime + systemInitTimeMilliseconds */
    assert_int_equal(st.malformed, 0);
    assert_int_equal(flow_ipfix_templates(fx), 5);
    flow_ipfix_free(fx);
}

static void test_softflowd_nf9(void **state)
{
    (void)state;
    struct flow_ipfix *fx = flow_ipfix_new();
    struct flow_stats st = {0};
    static struct got g;
    g.n = 0;
    char err[256];
    size_t len;
    uint8_t *b = load("softflowd-nf9-s2-000.bin", &len);
    assert_int_equal(
        flow_ipfix_decode(fx, &EX, b, len, 1764582700000LL, on_rec, &g, &st, err, sizeof(err)), 0);
    free(b);
    /* the v4 record (template 1024): 10.81.1.2:1197 -> 10.81.2.2:5001 (xxd of the datagram) */
    size_t v4 = 0;
    for (size_t i = 0; i < g.n; i++)
        if (g.r[i].family == 4)
            v4 = i + 1;
    assert_true(v4 > 0);
    const struct flow_rec *r = &g.r[v4 - 1];
    assert_int_equal(r->dport, 5001);
    assert_int_equal(r->rate, 2);        /* options record: SAMPLING_INTERVAL 2 */
    assert_int_equal(r->bytes % 728, 0); /* 700-byte datagrams: 728 IP bytes each */
    assert_int_equal(r->bytes / 728, r->packets);
    flow_ipfix_free(fx);
}

static void test_pmacctd_sflow(void **state)
{
    (void)state;
    struct flow_stats st = {0};
    static struct got g;
    g.n = 0;
    char err[256];
    for (int i = 0; i < 22; i++) {
        char name[64];
        size_t len;
        snprintf(name, sizeof(name), "pmacctd-sflow-s4-%03d.bin", i);
        uint8_t *b = load(name, &len);
        struct flow_sflow_info info;
        assert_int_equal(flow_sflow_decode(b, len, on_rec, NULL, &g, &info, &st, err, sizeof(err)),
                         0);
        free(b);
    }
    /* tshark: 107 flow samples with Destination Port 5001 and Frame Length 1046 (14 Ethernet +
     * 1028 IP + 4 FCS), 22 with 5002 and 346; every sample "1 out of 4 packets" */
    uint64_t bytes, pkts;
    uint32_t rate = 0;
    sum_port(&g, 5001, &bytes, &pkts, &rate);
    assert_int_equal(pkts, 107);
    assert_int_equal(bytes, 107 * 1028);
    assert_int_equal(rate, 4);
    sum_port(&g, 5002, &bytes, &pkts, &rate);
    assert_int_equal(pkts, 22);
    assert_int_equal(bytes, 22 * 328);
    assert_int_equal(g.n, 129);
    assert_int_equal(st.malformed, 0);
}

/* ---- hand-built IPFIX messages: withdrawal, expiry, per-sampler rates ----------------------- */

struct msg {
    uint8_t b[512];
    size_t n, set;
};

static void put16(struct msg *m, unsigned v)
{
    m->b[m->n++] = (uint8_t)(v >> 8);
    m->b[m->n++] = (uint8_t)v;
}

static void put32(struct msg *m, uint32_t v)
{
    put16(m, v >> 16);
    put16(m, v & 0xffff);
}

static void begin(struct msg *m)
{
    m->n = 0;
    put16(m, 10);
    put16(m, 0);
    put32(m, 1764582700);
    put32(m, 1);
    put32(m, 7); /* observation domain */
}

static void set_begin(struct msg *m, unsigned id)
{
    m->set = m->n;
    put16(m, id);
    put16(m, 0);
}

static void set_end(struct msg *m)
{
    m->b[m->set + 2] = (uint8_t)((m->n - m->set) >> 8);
    m->b[m->set + 3] = (uint8_t)(m->n - m->set);
}

static void finish(struct msg *m)
{
    m->b[2] = (uint8_t)(m->n >> 8);
    m->b[3] = (uint8_t)m->n;
}

/* template 300: src4, dst4, octets(8), packets(4), proto(1), dport(2), samplerId(1) */
static void add_template(struct msg *m)
{
    set_begin(m, 2);
    put16(m, 300);
    put16(m, 7);
    unsigned f[7][2] = {{8, 4}, {12, 4}, {1, 8}, {2, 4}, {4, 1}, {11, 2}, {48, 1}};
    for (int i = 0; i < 7; i++) {
        put16(m, f[i][0]);
        put16(m, f[i][1]);
    }
    set_end(m);
}

static void add_record(struct msg *m, uint8_t sampler, uint32_t octets)
{
    set_begin(m, 300);
    put32(m, 0x0a000001);
    put32(m, 0x0a000002);
    put32(m, 0);
    put32(m, octets);
    put32(m, 1);
    m->b[m->n++] = 6;
    put16(m, 2049);
    m->b[m->n++] = sampler;
    set_end(m);
}

/* options template 400: scope samplerId(1); samplingPacketInterval(4), samplingPacketSpace(4) */
static void add_sampler(struct msg *m, uint8_t id, uint32_t space)
{
    set_begin(m, 3);
    put16(m, 400);
    put16(m, 3);
    put16(m, 1);
    put16(m, 48);
    put16(m, 1);
    put16(m, 305);
    put16(m, 4);
    put16(m, 306);
    put16(m, 4);
    set_end(m);
    set_begin(m, 400);
    m->b[m->n++] = id;
    put32(m, 1);
    put32(m, space);
    m->b[m->n++] = 0; /* padding */
    m->b[m->n++] = 0;
    m->b[m->n++] = 0;
    set_end(m);
}

static size_t decode_msg(struct flow_ipfix *fx, struct msg *m, int64_t now_ms, struct got *g,
                         struct flow_stats *st, int want_rc)
{
    char err[256];
    g->n = 0;
    finish(m);
    int rc = flow_ipfix_decode(fx, &EX, m->b, m->n, now_ms, on_rec, g, st, err, sizeof(err));
    if (rc != want_rc)
        fail_msg("decode returned %d (want %d): %s", rc, want_rc, err);
    return g->n;
}

static void test_templates_samplers(void **state)
{
    (void)state;
    struct flow_ipfix *fx = flow_ipfix_new();
    struct flow_stats st = {0};
    static struct got g;
    struct msg m;
    int64_t t = 1764582700000LL;

    /* data before its template: counted, nothing emitted */
    begin(&m);
    add_record(&m, 1, 1000);
    assert_int_equal(decode_msg(fx, &m, t, &g, &st, 0), 0);
    assert_int_equal(st.sets_unknown_template, 1);

    /* two samplers, 1 in 10 and 1 in 100 */
    begin(&m);
    add_template(&m);
    add_sampler(&m, 1, 9);
    add_sampler(&m, 2, 99);
    add_record(&m, 1, 1000);
    add_record(&m, 2, 500);
    add_record(&m, 3, 100); /* an unannounced sampler: unsampled */
    assert_int_equal(decode_msg(fx, &m, t, &g, &st, 0), 3);
    assert_int_equal(g.r[0].rate, 10);
    assert_int_equal(g.r[1].rate, 100);
    assert_int_equal(g.r[2].rate, 1);

    /* withdrawal of template 300: its data sets are no longer decoded */
    begin(&m);
    set_begin(&m, 2);
    put16(&m, 300);
    put16(&m, 0);
    set_end(&m);
    add_record(&m, 1, 1000);
    assert_int_equal(decode_msg(fx, &m, t + 1000, &g, &st, 0), 0);
    assert_int_equal(st.templates_withdrawn, 1);

    /* learnt again, then expired after the lifetime without a refresh */
    begin(&m);
    add_template(&m);
    add_record(&m, 1, 1000);
    assert_int_equal(decode_msg(fx, &m, t + 2000, &g, &st, 0), 1);
    begin(&m);
    add_record(&m, 1, 1000);
    assert_int_equal(decode_msg(fx, &m, t + 2000 + FLOW_TEMPLATE_LIFETIME_MS + 1, &g, &st, 0), 0);
    assert_true(st.templates_expired >= 1);

    /* a set longer than the message: malformed, and its template is not learnt */
    begin(&m);
    add_template(&m);
    m.b[m.set + 3] = 200;
    size_t before = flow_ipfix_templates(fx);
    assert_int_equal(decode_msg(fx, &m, t + 3000, &g, &st, -1), 0);
    assert_int_equal(flow_ipfix_templates(fx), before);
    flow_ipfix_free(fx);
}

/* Every prefix and single-byte change of every corpus datagram decodes or is refused; the
 * sanitizers catch any read out of bounds. */
static void test_mangled_corpus(void **state)
{
    (void)state;
    const char *names[] = {"softflowd-ipfix-s4-000.bin", "softflowd-ipfix-s4-001.bin",
                           "softflowd-nf9-s2-000.bin", "pmacctd-sflow-s4-000.bin"};
    static struct got g;
    for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
        size_t len;
        uint8_t *b = load(names[k], &len);
        bool sflow = names[k][0] == 'p';
        uint8_t *c = malloc(len);
        for (size_t cut = 0; cut <= len; cut++) {
            for (size_t flip = 0; flip <= cut; flip += 29) {
                memcpy(c, b, cut);
                if (flip < cut)
                    c[flip] ^= 0xa5;
                struct flow_stats st = {0};
                char err[256];
                g.n = 0;
                if (sflow) {
                    struct flow_sflow_info info;
                    (void)flow_sflow_decode(c, cut, on_rec, NULL, &g, &info, &st, err, sizeof(err));
                } else {
                    struct flow_ipfix *fx = flow_ipfix_new();
                    (void)flow_ipfix_decode(fx, &EX, c, cut, 1764582700000LL, on_rec, &g, &st, err,
                                            sizeof(err));
                    flow_ipfix_free(fx);
                }
                if (cut < len && names[k][10] == 'i' && st.malformed == 0) /* IPFIX: length */
                    fail_msg("%s cut at %zu accepted", names[k], cut);
            }
        }
        free(c);
        free(b);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_softflowd_ipfix), cmocka_unit_test(test_softflowd_nf9),
        cmocka_unit_test(test_pmacctd_sflow),   cmocka_unit_test(test_templates_samplers),
        cmocka_unit_test(test_mangled_corpus),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
