/* sFlow v5 decoding (see flow_sflow.h). Layouts from sflow.org's sflow_version_5.txt (sample
 * formats 1-4, flow record formats 1 raw header, 3 sampled IPv4, 4 sampled IPv6, counter record
 * format 1 generic interface counters), cross-checked with the encoder of pmacct's sfprobe plugin
 * (pmacct/pmacct src/sfprobe_plugin/sflow_receiver.c, which pmacctd 1.7.7 runs here). */
#include "flow_sflow.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "flow_wire.h"

#define MAX_SAMPLES 4096
#define MAX_RECORDS 256

struct rd {
    const uint8_t *p;
    size_t len, off;
    bool bad;
};

static uint32_t u32(struct rd *r)
{
    if (r->bad || r->len - r->off < 4) {
        r->bad = true;
        return 0;
    }
    const uint8_t *p = r->p + r->off;
    r->off += 4;
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

static uint64_t u64(struct rd *r)
{
    uint64_t hi = u32(r);
    return (hi << 32) | u32(r);
}

static const uint8_t *bytes(struct rd *r, size_t n)
{
    if (r->bad || r->len - r->off < n) {
        r->bad = true;
        return NULL;
    }
    const uint8_t *p = r->p + r->off;
    r->off += n;
    return p;
}

int flow_sflow_header(const uint8_t *p, size_t n, int ether, struct flow_rec *r)
{
    size_t off = 0;
    uint16_t type = 0;
    if (ether) {
        if (n < 14)
            return -1;
        type = flow_be16(p + 12);
        off = 14;
        for (int tags = 0; (type == 0x8100 || type == 0x88a8) && tags < 2; tags++) {
            if (n < off + 4)
                return -1;
            type = flow_be16(p + off + 2);
            off += 4;
        }
        if (type != 0x0800 && type != 0x86dd)
            return -1;
    }
    if (n < off + 1)
        return -1;
    int ver = p[off] >> 4;
    size_t l4;
    if (ver == 4) {
        if (n < off + 20 || (ether && type != 0x0800))
            return -1;
        size_t ihl = (size_t)(p[off] & 0x0f) * 4;
        if (ihl < 20)
            return -1;
        r->family = 4;
        memcpy(r->src, p + off + 12, 4);
        memcpy(r->dst, p + off + 16, 4);
        r->proto = p[off + 9];
        r->bytes = flow_be16(p + off + 2);
        bool first_fragment = (flow_be16(p + off + 6) & 0x1fff) == 0;
        l4 = first_fragment ? off + ihl : (size_t)-1;
    } else if (ver == 6) {
        if (n < off + 40 || (ether && type != 0x86dd))
            return -1;
        r->family = 6;
        memcpy(r->src, p + off + 8, 16);
        memcpy(r->dst, p + off + 24, 16);
        r->proto = p[off + 6];
        r->bytes = 40u + flow_be16(p + off + 4);
        l4 = off + 40; /* extension headers are not walked: ports stay 0 for them */
    } else {
        return -1;
    }
    if (r->bytes == 0)
        return -1;
    r->sport = r->dport = 0;
    if ((r->proto == 6 || r->proto == 17) && l4 != (size_t)-1 && n >= l4 + 4) {
        r->sport = flow_be16(p + l4);
        r->dport = flow_be16(p + l4 + 2);
    }
    return 0;
}

struct ctx {
    flow_emit_fn emit;
    flow_counters_fn counters;
    void *arg;
    struct flow_stats *st;
    bool apply;
};

/* One flow record of a flow sample; r holds the sample's rate and interfaces. */
static void flow_record(struct ctx *c, uint32_t fmt, struct rd *rec, struct flow_rec *r,
                        bool *emitted)
{
    if (*emitted)
        return; /* one packet per sample: the first record that decodes counts */
    struct flow_rec k = *r;
    int ok = -1;
    if (fmt == 1) { /* raw packet header */
        uint32_t proto = u32(rec), frame_len = u32(rec), stripped = u32(rec), hlen = u32(rec);
        const uint8_t *h = bytes(rec, hlen);
        (void)frame_len;
        (void)stripped;
        if (h && (proto == 1 || proto == 11 || proto == 12))
            ok = flow_sflow_header(h, hlen, proto == 1, &k);
    } else if (fmt == 3 || fmt == 4) { /* sampled IPv4 / IPv6 */
        uint32_t length = u32(rec), proto = u32(rec);
        const uint8_t *a = bytes(rec, fmt == 3 ? 4 : 16), *b = bytes(rec, fmt == 3 ? 4 : 16);
        uint32_t sport = u32(rec), dport = u32(rec);
        if (!rec->bad && length > 0) {
            k.family = fmt == 3 ? 4 : 6;
            memcpy(k.src, a, fmt == 3 ? 4 : 16);
            memcpy(k.dst, b, fmt == 3 ? 4 : 16);
            k.proto = (uint8_t)proto;
            k.sport = (uint16_t)sport;
            k.dport = (uint16_t)dport;
            k.bytes = length;
            ok = 0;
        }
    } else {
        return; /* extended data (switch, router, gateway, user, url...): not needed */
    }
    if (ok < 0 || rec->bad)
        return;
    k.packets = 1;
    k.sq_bytes = (double)k.bytes * (double)k.bytes;
    *emitted = true;
    if (c->apply) {
        c->st->records++;
        c->emit(c->arg, &k);
    }
}

static void counter_record(struct ctx *c, uint32_t fmt, struct rd *rec)
{
    if (fmt != 1)
        return;
    struct flow_ifcounters ic;
    memset(&ic, 0, sizeof(ic));
    ic.if_index = u32(rec);
    (void)u32(rec); /* ifType */
    (void)u64(rec); /* ifSpeed */
    (void)u32(rec); /* ifDirection */
    (void)u32(rec); /* ifStatus */
    ic.in_octets = u64(rec);
    ic.in_pkts = u32(rec);
    for (int i = 0; i < 5; i++)
        (void)u32(rec); /* multicast, broadcast, discards, errors, unknown protos */
    ic.out_octets = u64(rec);
    ic.out_pkts = u32(rec);
    if (!rec->bad && c->apply) {
        c->st->counter_samples++;
        if (c->counters)
            c->counters(c->arg, &ic);
    }
}

/* The records of one sample; flow says flow (else counter) records. */
static int records(struct ctx *c, struct rd *s, bool flow, struct flow_rec *r, char *err,
                   size_t errlen, size_t base)
{
    uint32_t n = u32(s);
    if (s->bad || n > MAX_RECORDS)
        return flow_fail(err, errlen, "byte %zu: %u records", base + s->off, n);
    bool emitted = false;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t fmt = u32(s), len = u32(s);
        size_t at = base + s->off;
        const uint8_t *p = bytes(s, len);
        if (!p || len % 4)
            return flow_fail(err, errlen, "byte %zu: record %u of %u bytes overruns its sample", at,
                             i, len);
        if (fmt >> 12) /* another enterprise's record */
            continue;
        struct rd rec = {.p = p, .len = len};
        if (flow)
            flow_record(c, fmt, &rec, r, &emitted);
        else
            counter_record(c, fmt, &rec);
    }
    if (flow && !emitted && c->apply)
        c->st->samples_undecodable++;
    return 0;
}

static int walk(struct ctx *c, const uint8_t *buf, size_t len, struct flow_sflow_info *info,
                char *err, size_t errlen)
{
    struct rd d = {.p = buf, .len = len};
    uint32_t version = u32(&d);
    if (d.bad || version != 5)
        return flow_fail(err, errlen, "version %u: expected sFlow 5", version);
    uint32_t at = u32(&d);
    if (at != 1 && at != 2)
        return flow_fail(err, errlen, "byte 4: agent address type %u", at);
    bytes(&d, at == 1 ? 4 : 16);
    (void)u32(&d); /* sub agent id */
    info->sequence = u32(&d);
    info->uptime_ms = u32(&d);
    uint32_t n = u32(&d);
    if (d.bad || n > MAX_SAMPLES)
        return flow_fail(err, errlen, "header cut short or %u samples", n);
    info->samples = n;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t fmt = u32(&d), slen = u32(&d);
        size_t at_s = d.off;
        const uint8_t *p = bytes(&d, slen);
        if (!p || slen % 4)
            return flow_fail(err, errlen, "byte %zu: sample %u of %u bytes overruns the datagram",
                             at_s, i, slen);
        if (fmt >> 12)
            continue;
        struct rd s = {.p = p, .len = slen};
        struct flow_rec r;
        memset(&r, 0, sizeof(r));
        if (fmt == 1 || fmt == 3) {
            (void)u32(&s); /* sequence */
            if (fmt == 3) {
                (void)u32(&s);
                (void)u32(&s);
            } else {
                (void)u32(&s);
            }
            r.rate = u32(&s);
            (void)u32(&s); /* sample pool: packets the sampler saw */
            uint32_t drops = u32(&s);
            if (fmt == 3) {
                (void)u32(&s);
                r.in_if = u32(&s);
                (void)u32(&s);
                r.out_if = u32(&s);
            } else {
                r.in_if = u32(&s) & 0x3fffffff;
                r.out_if = u32(&s) & 0x3fffffff;
            }
            if (s.bad)
                return flow_fail(err, errlen, "byte %zu: flow sample %u cut short", at_s, i);
            if (r.rate == 0)
                return flow_fail(err, errlen, "byte %zu: flow sample %u with sampling rate 0", at_s,
                                 i);
            if (c->apply)
                info->drops += drops;
            if (records(c, &s, true, &r, err, errlen, at_s) < 0)
                return -1;
        } else if (fmt == 2 || fmt == 4) {
            (void)u32(&s);
            (void)u32(&s);
            if (fmt == 4)
                (void)u32(&s);
            if (records(c, &s, false, &r, err, errlen, at_s) < 0)
                return -1;
        }
    }
    if (d.off != len)
        return flow_fail(err, errlen, "byte %zu: %zu stray bytes after the last sample", d.off,
                         len - d.off);
    return 0;
}

int flow_sflow_decode(const uint8_t *buf, size_t len, flow_emit_fn emit, flow_counters_fn counters,
                      void *arg, struct flow_sflow_info *info, struct flow_stats *st, char *err,
                      size_t errlen)
{
    struct flow_sflow_info tmp = {0};
    struct ctx c = {.emit = emit, .counters = counters, .arg = arg, .st = st, .apply = false};
    st->datagrams++;
    memset(info, 0, sizeof(*info));
    if (walk(&c, buf, len, &tmp, err, errlen) < 0) {
        st->malformed++;
        return -1;
    }
    c.apply = true;
    return walk(&c, buf, len, info, err, errlen);
}
