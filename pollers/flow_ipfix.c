/* IPFIX and NetFlow v9 decoding over a per-exporter template cache (see flow_ipfix.h). Field
 * layouts: RFC 7011 section 3 (message, set, template and options template record formats,
 * variable-length encoding), RFC 3954 section 5 (v9 header, template and options template
 * FlowSets), information elements from RFC 7012 / IANA's IPFIX registry and RFC 5477 (PSAMP:
 * selectorAlgorithm 304, samplingPacketInterval 305, samplingPacketSpace 306, samplingSize 309,
 * samplingPopulation 310, samplingProbability 311). Cross-checked with what softflowd 1.1.0
 * sends (irino/softflowd ipfix.c, commit 01f77c1e: options template 256 with scope
 * meteringProcessId and samplingPacketInterval = 1, samplingPacketSpace = N - 1). */
#include "flow_ipfix.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flow_wire.h"

#define MAX_FIELDS    128
#define MAX_TEMPLATES 4096
#define MAX_DOMAINS   1024
#define MAX_SAMPLERS  64

/* information elements (IPFIX IE = NetFlow v9 field type for ids < 128) */
enum {
    IE_OCTETS = 1,
    IE_PACKETS = 2,
    IE_PROTO = 4,
    IE_SPORT = 7,
    IE_SRC4 = 8,
    IE_INIF = 10,
    IE_DPORT = 11,
    IE_DST4 = 12,
    IE_OUTIF = 14,
    IE_END_UPTIME = 21,
    IE_SRC6 = 27,
    IE_DST6 = 28,
    IE_SAMPLING_INTERVAL = 34,
    IE_SAMPLING_ALGORITHM = 35,
    IE_SAMPLER_ID = 48,
    IE_SAMPLER_MODE = 49,
    IE_SAMPLER_RANDOM_INTERVAL = 50,
    IE_OCTETS_TOTAL = 85,
    IE_PACKETS_TOTAL = 86,
    IE_END_SECONDS = 151,
    IE_END_MS = 153,
    IE_END_US = 155,
    IE_END_NS = 157,
    IE_SYSINIT_MS = 160,
    IE_SELECTOR_ID = 302,
    IE_SELECTOR_ALGORITHM = 304,
    IE_SAMPLING_PKT_INTERVAL = 305,
    IE_SAMPLING_PKT_SPACE = 306,
    IE_SAMPLING_SIZE = 309,
    IE_SAMPLING_POPULATION = 310,
    IE_SAMPLING_PROBABILITY = 311,
};

struct field {
    uint16_t ie;  /* without the enterprise bit */
    uint16_t len; /* 65535 = variable */
    bool enterprise;
};

struct template
{
    struct flow_exporter ex;
    uint32_t domain;
    uint16_t id;
    uint8_t version;
    bool options;
    uint16_t n_fields, n_scope;
    uint16_t min_len; /* bytes of a record with every variable field empty */
    int64_t seen_ms;
    struct field f[MAX_FIELDS];
};

struct sampler {
    bool used;
    uint64_t id;
    uint32_t rate;
};

struct domain {
    struct flow_exporter ex;
    uint32_t domain;
    uint32_t rate;      /* domain-wide sampling rate, 0 = not announced (unsampled) */
    int algorithm;      /* as announced, 0 = unknown */
    int64_t sysinit_ms; /* IPFIX systemInitTimeMilliseconds, 0 = unknown */
    struct sampler s[MAX_SAMPLERS];
};

struct flow_ipfix {
    struct template **t;
    size_t n_t;
    struct domain *d;
    size_t n_d;
};

struct flow_ipfix *flow_ipfix_new(void)
{
    struct flow_ipfix *fx = calloc(1, sizeof(*fx));
    if (fx) {
        fx->t = calloc(MAX_TEMPLATES, sizeof(*fx->t));
        fx->d = calloc(MAX_DOMAINS, sizeof(*fx->d));
        if (!fx->t || !fx->d) {
            flow_ipfix_free(fx);
            return NULL;
        }
    }
    return fx;
}

void flow_ipfix_free(struct flow_ipfix *fx)
{
    if (!fx)
        return;
    for (size_t i = 0; fx->t && i < fx->n_t; i++)
        free(fx->t[i]);
    free(fx->t);
    free(fx->d);
    free(fx);
}

size_t flow_ipfix_templates(const struct flow_ipfix *fx)
{
    return fx->n_t;
}

/* An unsigned integer of 1..8 bytes (reduced-size encoding, RFC 7011 6.2). */
static uint64_t beN(const uint8_t *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n && i < 8; i++)
        v = (v << 8) | p[i];
    return v;
}

static bool same_ex(const struct flow_exporter *a, const struct flow_exporter *b)
{
    return a->port == b->port && memcmp(a->addr, b->addr, 16) == 0;
}

static struct domain *domain_get(struct flow_ipfix *fx, const struct flow_exporter *ex,
                                 uint32_t dom, bool create)
{
    for (size_t i = 0; i < fx->n_d; i++)
        if (fx->d[i].domain == dom && same_ex(&fx->d[i].ex, ex))
            return &fx->d[i];
    if (!create || fx->n_d == MAX_DOMAINS)
        return NULL;
    struct domain *d = &fx->d[fx->n_d++];
    memset(d, 0, sizeof(*d));
    d->ex = *ex;
    d->domain = dom;
    return d;
}

static size_t tmpl_find(const struct flow_ipfix *fx, const struct flow_exporter *ex, uint32_t dom,
                        uint16_t id, uint8_t version)
{
    for (size_t i = 0; i < fx->n_t; i++) {
        const struct template *t = fx->t[i];
        if (t->id == id && t->domain == dom && t->version == version && same_ex(&t->ex, ex))
            return i;
    }
    return (size_t)-1;
}

static void tmpl_remove(struct flow_ipfix *fx, size_t i)
{
    free(fx->t[i]);
    fx->t[i] = fx->t[--fx->n_t];
}

/* Drops templates of any exporter not refreshed within the lifetime. */
static void tmpl_expire(struct flow_ipfix *fx, int64_t now_ms, struct flow_stats *st)
{
    for (size_t i = 0; i < fx->n_t;) {
        if (now_ms - fx->t[i]->seen_ms > FLOW_TEMPLATE_LIFETIME_MS) {
            tmpl_remove(fx, i);
            st->templates_expired++;
        } else {
            i++;
        }
    }
}

static int tmpl_store(struct flow_ipfix *fx, const struct template *nt)
{
    size_t i = tmpl_find(fx, &nt->ex, nt->domain, nt->id, nt->version);
    if (i != (size_t)-1) {
        *fx->t[i] = *nt; /* a redefinition replaces the old one */
        return 0;
    }
    if (fx->n_t == MAX_TEMPLATES)
        return -1;
    struct template *t = malloc(sizeof(*t));
    if (!t)
        return -1;
    *t = *nt;
    fx->t[fx->n_t++] = t;
    return 0;
}

/* ---- template sets ----------------------------------------------------------------------- */

/* Parses n field specifiers at p (IPFIX: with enterprise numbers) into t->f[from..]. Returns
 * bytes consumed or -1. */
static long parse_fields(const uint8_t *p, size_t left, uint16_t n, bool ipfix, struct template *t,
                         uint16_t from)
{
    size_t off = 0;
    for (uint16_t k = 0; k < n; k++) {
        if (from + k >= MAX_FIELDS || off + 4 > left)
            return -1;
        struct field *f = &t->f[from + k];
        uint16_t ie = flow_be16(p + off);
        f->len = flow_be16(p + off + 2);
        f->enterprise = ipfix && (ie & 0x8000);
        f->ie = ipfix ? (uint16_t)(ie & 0x7fff) : ie;
        off += 4;
        if (f->enterprise) {
            if (off + 4 > left)
                return -1;
            off += 4;
        }
        if (f->len == 65535) {
            if (!ipfix)
                return -1; /* v9 has no variable-length fields */
        } else {
            if (f->len == 0)
                return -1;
            t->min_len = (uint16_t)(t->min_len + f->len);
        }
        if (f->len == 65535)
            t->min_len = (uint16_t)(t->min_len + 1);
    }
    return (long)off;
}

/* One template or options template set; with apply false only checks it. */
static int template_set(struct flow_ipfix *fx, const struct flow_exporter *ex, uint32_t dom,
                        uint8_t version, bool options, const uint8_t *p, size_t len, bool apply,
                        int64_t now_ms, struct flow_stats *st, char *err, size_t errlen, size_t at)
{
    bool ipfix = version == 10;
    size_t off = 0;
    while (off + 4 <= len) {
        struct template t;
        memset(&t, 0, sizeof(t));
        t.ex = *ex;
        t.domain = dom;
        t.version = version;
        t.options = options;
        t.seen_ms = now_ms;
        t.id = flow_be16(p + off);
        uint16_t count = flow_be16(p + off + 2);
        off += 4;
        if (t.id == 0 && count == 0)
            break;                 /* padding to the set's end */
        if (ipfix && count == 0) { /* withdrawal (RFC 7011 8.1) */
            if (t.id != 2 && t.id != 3 && t.id < 256)
                return flow_fail(err, errlen, "byte %zu: withdrawal of template %u", at + off,
                                 t.id);
            if (apply) {
                for (size_t i = 0; i < fx->n_t;) {
                    struct template *o = fx->t[i];
                    bool all = t.id == 2 || t.id == 3;
                    if (o->domain == dom && o->version == 10 && same_ex(&o->ex, ex) &&
                        (all ? o->options == options : o->id == t.id)) {
                        tmpl_remove(fx, i);
                        st->templates_withdrawn++;
                    } else {
                        i++;
                    }
                }
            }
            continue;
        }
        if (t.id < 256) {
            return flow_fail(err, errlen, "byte %zu: template id %u (data set ids start at 256)",
                             at + off - 4, t.id);
        }
        uint16_t n_fields, n_scope;
        if (!options) {
            n_fields = count;
            n_scope = 0;
        } else if (ipfix) {
            if (off + 2 > len)
                return flow_fail(err, errlen, "byte %zu: options template cut short", at + off);
            n_fields = count;
            n_scope = flow_be16(p + off);
            off += 2;
            if (n_scope == 0 || n_scope > n_fields)
                return flow_fail(err, errlen, "byte %zu: options template %u: scope count %u of %u",
                                 at + off, t.id, n_scope, n_fields);
        } else { /* v9: scope length and option length in bytes */
            if (off + 2 > len)
                return flow_fail(err, errlen, "byte %zu: options template cut short", at + off);
            uint16_t scope_bytes = count, opt_bytes = flow_be16(p + off);
            off += 2;
            if (scope_bytes % 4 || opt_bytes % 4)
                return flow_fail(err, errlen, "byte %zu: options template %u: lengths %u/%u",
                                 at + off, t.id, scope_bytes, opt_bytes);
            n_scope = scope_bytes / 4;
            n_fields = (uint16_t)(n_scope + opt_bytes / 4);
        }
        if (n_fields == 0 || n_fields > MAX_FIELDS)
            return flow_fail(err, errlen, "byte %zu: template %u has %u fields", at + off, t.id,
                             n_fields);
        long used = parse_fields(p + off, len - off, n_fields, ipfix, &t, 0);
        if (used < 0)
            return flow_fail(err, errlen, "byte %zu: template %u: bad or cut field list", at + off,
                             t.id);
        off += (size_t)used;
        t.n_fields = n_fields;
        t.n_scope = n_scope;
        if (apply) {
            if (tmpl_store(fx, &t) < 0)
                return flow_fail(err, errlen, "template cache full (%d)", MAX_TEMPLATES);
            st->templates++;
        }
        /* v9 options template sets are padded to 4 bytes */
        if (!ipfix && options && len - off < 4)
            break;
    }
    return 0;
}

/* ---- data sets --------------------------------------------------------------------------- */

struct hdr {
    uint8_t version;
    uint32_t export_s;
    uint32_t uptime_ms; /* v9 only */
    uint32_t domain;
};

static uint32_t rate_of(uint64_t interval, uint64_t space, uint64_t size, uint64_t population,
                        double prob, uint64_t nf_interval)
{
    uint64_t r = 0;
    if (nf_interval)
        r = nf_interval;
    else if (interval && (space || interval))
        r = (interval + space) / interval;
    else if (size && population)
        r = population / size;
    else if (prob > 0 && prob <= 1)
        r = (uint64_t)(1.0 / prob + 0.5);
    return r > UINT32_MAX ? UINT32_MAX : (uint32_t)r;
}

struct vals {
    uint64_t octets, packets, octets_total, packets_total;
    uint64_t proto, sport, dport, inif, outif;
    bool has_src4, has_dst4, has_src6, has_dst6;
    uint8_t src[16], dst[16];
    uint64_t end_uptime, end_s, end_ms, end_us, end_ns;
    bool has_end_uptime;
    uint64_t sysinit_ms;
    uint64_t sampler_id;
    bool has_sampler_id;
    uint64_t nf_interval, algorithm, interval, space, size, population;
    double probability;
};

static void take(struct vals *v, const struct field *f, const uint8_t *p, size_t n)
{
    if (f->enterprise)
        return;
    uint64_t u = n <= 8 ? beN(p, n) : 0;
    switch (f->ie) {
    case IE_OCTETS:
        v->octets = u;
        break;
    case IE_PACKETS:
        v->packets = u;
        break;
    case IE_OCTETS_TOTAL:
        v->octets_total = u;
        break;
    case IE_PACKETS_TOTAL:
        v->packets_total = u;
        break;
    case IE_PROTO:
        v->proto = u;
        break;
    case IE_SPORT:
        v->sport = u;
        break;
    case IE_DPORT:
        v->dport = u;
        break;
    case IE_INIF:
        v->inif = u;
        break;
    case IE_OUTIF:
        v->outif = u;
        break;
    case IE_SRC4:
    case IE_DST4:
        if (n == 4) {
            memcpy(f->ie == IE_SRC4 ? v->src : v->dst, p, 4);
            *(f->ie == IE_SRC4 ? &v->has_src4 : &v->has_dst4) = true;
        }
        break;
    case IE_SRC6:
    case IE_DST6:
        if (n == 16) {
            memcpy(f->ie == IE_SRC6 ? v->src : v->dst, p, 16);
            *(f->ie == IE_SRC6 ? &v->has_src6 : &v->has_dst6) = true;
        }
        break;
    case IE_END_UPTIME:
        v->end_uptime = u;
        v->has_end_uptime = true;
        break;
    case IE_END_SECONDS:
        v->end_s = u;
        break;
    case IE_END_MS:
        v->end_ms = u;
        break;
    case IE_END_US:
        v->end_us = u; /* NTP format */
        break;
    case IE_END_NS:
        v->end_ns = u;
        break;
    case IE_SYSINIT_MS:
        v->sysinit_ms = u;
        break;
    case IE_SAMPLER_ID:
    case IE_SELECTOR_ID:
        v->sampler_id = u;
        v->has_sampler_id = true;
        break;
    case IE_SAMPLING_INTERVAL:
    case IE_SAMPLER_RANDOM_INTERVAL:
        v->nf_interval = u;
        break;
    case IE_SAMPLING_ALGORITHM:
    case IE_SAMPLER_MODE:
    case IE_SELECTOR_ALGORITHM:
        v->algorithm = u;
        break;
    case IE_SAMPLING_PKT_INTERVAL:
        v->interval = u;
        break;
    case IE_SAMPLING_PKT_SPACE:
        v->space = u;
        break;
    case IE_SAMPLING_SIZE:
        v->size = u;
        break;
    case IE_SAMPLING_POPULATION:
        v->population = u;
        break;
    case IE_SAMPLING_PROBABILITY:
        if (n == 8) {
            double d;
            memcpy(&d, &u, sizeof(d)); /* u holds the big-endian bits as a host integer */
            v->probability = d;
        }
        break;
    default:
        break;
    }
}

static void options_record(struct flow_ipfix *fx, const struct flow_exporter *ex, uint32_t dom,
                           const struct vals *v)
{
    struct domain *d = domain_get(fx, ex, dom, true);
    if (!d)
        return;
    if (v->sysinit_ms && v->sysinit_ms < (1ULL << 42))
        d->sysinit_ms = (int64_t)v->sysinit_ms;
    uint32_t rate =
        rate_of(v->interval, v->space, v->size, v->population, v->probability, v->nf_interval);
    if (!rate)
        return;
    if (!v->has_sampler_id) {
        d->rate = rate;
        d->algorithm = (int)v->algorithm;
        return;
    }
    struct sampler *free_slot = NULL;
    for (int i = 0; i < MAX_SAMPLERS; i++) {
        if (d->s[i].used && d->s[i].id == v->sampler_id) {
            d->s[i].rate = rate;
            return;
        }
        if (!d->s[i].used && !free_slot)
            free_slot = &d->s[i];
    }
    if (free_slot)
        *free_slot = (struct sampler){.used = true, .id = v->sampler_id, .rate = rate};
}

/* Unix ms plausible for a flow's end (2001..2096), else 0 (unknown: the arrival time is used). */
static int64_t plausible_ms(int64_t ms)
{
    return ms >= 1000000000000LL && ms < 4000000000000LL ? ms : 0;
}

static int64_t end_time_raw(const struct flow_ipfix *fx, const struct flow_exporter *ex,
                            const struct hdr *h, const struct vals *v);

static int64_t end_time_ms(const struct flow_ipfix *fx, const struct flow_exporter *ex,
                           const struct hdr *h, const struct vals *v)
{
    return plausible_ms(end_time_raw(fx, ex, h, v));
}

/* Every input is at most 2^32 s or 2^42 ms after the checks below: no overflow. */
static int64_t end_time_raw(const struct flow_ipfix *fx, const struct flow_exporter *ex,
                            const struct hdr *h, const struct vals *v)
{
    if (v->end_ms)
        return v->end_ms < (1ULL << 42) ? (int64_t)v->end_ms : 0;
    if (v->end_s)
        return v->end_s < (1ULL << 32) ? (int64_t)v->end_s * 1000 : 0;
    uint64_t ntp = v->end_us ? v->end_us : v->end_ns;
    if (ntp) {
        int64_t s = (int64_t)(ntp >> 32) - 2208988800LL;
        return s * 1000 + (int64_t)(((ntp & 0xffffffffULL) * 1000) >> 32);
    }
    if (v->has_end_uptime) {
        if (h->version == 9 && v->end_uptime < (1ULL << 32))
            return (int64_t)h->export_s * 1000 - (int64_t)h->uptime_ms + (int64_t)v->end_uptime;
        struct domain *d = domain_get((struct flow_ipfix *)fx, ex, h->domain, false);
        if (d && d->sysinit_ms && v->end_uptime < (1ULL << 32))
            return d->sysinit_ms + (int64_t)v->end_uptime;
    }
    return 0;
}

static void data_record(struct flow_ipfix *fx, const struct flow_exporter *ex, const struct hdr *h,
                        const struct vals *v, flow_emit_fn emit, void *arg, struct flow_stats *st)
{
    uint64_t bytes = v->octets ? v->octets : v->octets_total;
    uint64_t pkts = v->packets ? v->packets : v->packets_total;
    bool v4 = v->has_src4 && v->has_dst4, v6 = v->has_src6 && v->has_dst6;
    if (!bytes || (!v4 && !v6))
        return; /* nothing to count (or not an IP flow) */
    struct flow_rec r;
    memset(&r, 0, sizeof(r));
    r.family = v4 ? 4 : 6;
    memcpy(r.src, v->src, 16);
    memcpy(r.dst, v->dst, 16);
    r.proto = (uint8_t)v->proto;
    r.sport = (uint16_t)v->sport;
    r.dport = (uint16_t)v->dport;
    r.bytes = bytes;
    r.packets = pkts ? pkts : 1;
    r.sq_bytes = (double)bytes * (double)bytes / (double)r.packets;
    r.in_if = (uint32_t)v->inif;
    r.out_if = (uint32_t)v->outif;
    r.end_ms = end_time_ms(fx, ex, h, v);
    uint32_t rate =
        rate_of(v->interval, v->space, v->size, v->population, v->probability, v->nf_interval);
    if (!rate) {
        struct domain *d = domain_get(fx, ex, h->domain, false);
        if (d && v->has_sampler_id)
            for (int i = 0; i < MAX_SAMPLERS; i++)
                if (d->s[i].used && d->s[i].id == v->sampler_id)
                    rate = d->s[i].rate;
        if (!rate && d)
            rate = d->rate;
    }
    r.rate = rate ? rate : 1;
    st->records++;
    emit(arg, &r);
}

/* Decodes the records of one data set with template t. */
static void data_set(struct flow_ipfix *fx, const struct flow_exporter *ex, const struct hdr *h,
                     const struct template *t, const uint8_t *p, size_t len, flow_emit_fn emit,
                     void *arg, struct flow_stats *st)
{
    size_t off = 0;
    while (off + t->min_len <= len && t->min_len > 0) {
        struct vals v;
        memset(&v, 0, sizeof(v));
        bool bad = false;
        for (uint16_t k = 0; k < t->n_fields && !bad; k++) {
            const struct field *f = &t->f[k];
            size_t n = f->len;
            if (n == 65535) {
                if (off + 1 > len) {
                    bad = true;
                    break;
                }
                n = p[off++];
                if (n == 255) {
                    if (off + 2 > len) {
                        bad = true;
                        break;
                    }
                    n = flow_be16(p + off);
                    off += 2;
                }
            }
            if (off + n > len) {
                bad = true;
                break;
            }
            take(&v, f, p + off, n); /* scope fields too: samplerId is a scope */
            off += n;
        }
        if (bad) {
            st->malformed++;
            return;
        }
        if (t->options) {
            st->options_records++;
            options_record(fx, ex, h->domain, &v);
        } else {
            data_record(fx, ex, h, &v, emit, arg, st);
        }
    }
}

/* ---- datagram ---------------------------------------------------------------------------- */

/* Walks the sets; pass 0 checks every set header and template, pass 1 applies. */
static int walk(struct flow_ipfix *fx, const struct flow_exporter *ex, const struct hdr *h,
                const uint8_t *buf, size_t len, size_t hlen, int pass, int64_t now_ms,
                flow_emit_fn emit, void *arg, struct flow_stats *st, char *err, size_t errlen)
{
    bool ipfix = h->version == 10;
    size_t off = hlen;
    while (off < len) {
        if (len - off < 4) {
            if (!ipfix)
                break; /* v9 exporters may pad the datagram */
            return flow_fail(err, errlen, "byte %zu: %zu stray bytes after the last set", off,
                             len - off);
        }
        uint16_t id = flow_be16(buf + off), slen = flow_be16(buf + off + 2);
        if (slen < 4 || slen > len - off)
            return flow_fail(err, errlen, "byte %zu: set %u of length %u in a %zu-byte datagram",
                             off, id, slen, len);
        const uint8_t *p = buf + off + 4;
        size_t plen = slen - 4u;
        bool tmpl = ipfix ? id == 2 : id == 0, opts = ipfix ? id == 3 : id == 1;
        if (tmpl || opts) {
            if (template_set(fx, ex, h->domain, h->version, opts, p, plen, pass == 1, now_ms, st,
                             err, errlen, off + 4) < 0)
                return -1;
        } else if (id < 256) {
            if (pass == 0)
                return flow_fail(err, errlen, "byte %zu: reserved set id %u", off, id);
        } else if (pass == 1) {
            size_t i = tmpl_find(fx, ex, h->domain, id, h->version);
            if (i == (size_t)-1)
                st->sets_unknown_template++;
            else
                data_set(fx, ex, h, fx->t[i], p, plen, emit, arg, st);
        }
        off += slen;
    }
    return 0;
}

int flow_ipfix_decode(struct flow_ipfix *fx, const struct flow_exporter *ex, const uint8_t *buf,
                      size_t len, int64_t now_ms, flow_emit_fn emit, void *arg,
                      struct flow_stats *st, char *err, size_t errlen)
{
    st->datagrams++;
    tmpl_expire(fx, now_ms, st);
    struct hdr h = {0};
    size_t hlen;
    if (len < 2) {
        st->malformed++;
        return flow_fail(err, errlen, "datagram of %zu bytes", len);
    }
    h.version = (uint8_t)flow_be16(buf);
    if (flow_be16(buf) == 10) {
        hlen = 16;
        if (len < hlen || flow_be16(buf + 2) != len) {
            st->malformed++;
            return flow_fail(err, errlen, "IPFIX message length %u, datagram %zu bytes",
                             len >= 4 ? flow_be16(buf + 2) : 0, len);
        }
        h.export_s = flow_be32(buf + 4);
        h.domain = flow_be32(buf + 12);
    } else if (flow_be16(buf) == 9) {
        hlen = 20;
        if (len < hlen) {
            st->malformed++;
            return flow_fail(err, errlen, "NetFlow v9 header cut short (%zu bytes)", len);
        }
        h.uptime_ms = flow_be32(buf + 4);
        h.export_s = flow_be32(buf + 8);
        h.domain = flow_be32(buf + 16);
    } else {
        st->malformed++;
        return flow_fail(err, errlen, "version %u: expected 9 (NetFlow v9) or 10 (IPFIX)",
                         flow_be16(buf));
    }
    if (walk(fx, ex, &h, buf, len, hlen, 0, now_ms, emit, arg, st, err, errlen) < 0) {
        st->malformed++;
        return -1;
    }
    return walk(fx, ex, &h, buf, len, hlen, 1, now_ms, emit, arg, st, err, errlen);
}
