/* Parsing and mapping of gnmic event messages (see gnmi_event.h). Field names follow gnmic's
 * formatters/event.go (EventMsg: name, timestamp, tags, values, deletes). */
#include "gnmi_event.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonv.h"
#include "timeutil.h"

enum field {
    F_IN_OCT,
    F_OUT_OCT,
    F_IN_PKTS,
    F_OUT_PKTS,
    F_IN_UC,
    F_IN_MC,
    F_IN_BC,
    F_OUT_UC,
    F_OUT_MC,
    F_OUT_BC,
    F_LAST_CLEAR, /* ns since the epoch */
    F_HIGH_SPEED, /* Mbit/s */
    F_PORT_SPEED, /* bit/s */
    N_FIELDS
};

#define BIT(f)        (1u << (f))
#define COUNTER_BITS  (BIT(F_LAST_CLEAR) - 1) /* F_IN_OCT .. F_OUT_BC */
#define SPEED_BITS    (BIT(F_HIGH_SPEED) | BIT(F_PORT_SPEED))
#define NS_PER_CS     10000000ULL
#define MAX_EXACT_DBL 9007199254740992.0 /* 2^53 */

/* Last path element (module prefix removed) -> field: OpenConfig and SR Linux native names. */
static const struct {
    const char *leaf;
    enum field f;
} leaves[] = {
    {"in-octets", F_IN_OCT},
    {"out-octets", F_OUT_OCT},
    {"in-pkts", F_IN_PKTS},
    {"out-pkts", F_OUT_PKTS},
    {"in-packets", F_IN_PKTS}, /* SR Linux */
    {"out-packets", F_OUT_PKTS},
    {"in-unicast-pkts", F_IN_UC},
    {"in-multicast-pkts", F_IN_MC},
    {"in-broadcast-pkts", F_IN_BC},
    {"out-unicast-pkts", F_OUT_UC},
    {"out-multicast-pkts", F_OUT_MC},
    {"out-broadcast-pkts", F_OUT_BC},
    {"in-unicast-packets", F_IN_UC}, /* SR Linux */
    {"in-multicast-packets", F_IN_MC},
    {"in-broadcast-packets", F_IN_BC},
    {"out-unicast-packets", F_OUT_UC},
    {"out-multicast-packets", F_OUT_MC},
    {"out-broadcast-packets", F_OUT_BC},
    {"last-clear", F_LAST_CLEAR},
    {"high-speed", F_HIGH_SPEED},
    {"port-speed", F_PORT_SPEED},
    {"negotiated-port-speed", F_PORT_SPEED},
};

struct pending {
    bool active;
    int64_t ts_ns;
    int64_t touched_us; /* monotonic time of the last event merged */
    uint64_t v[N_FIELDS];
    uint32_t have;
};

struct link_state {
    const char *device, *interface;
    struct pending p;
    int64_t emitted_ts_ns; /* newest timestamp emitted (or given up) */
    bool has_port_speed, has_high_speed, has_clear;
    uint64_t port_speed_bps, high_speed_mbps;
    int64_t disc_cs; /* last-clear carried over */
};

struct gnmi_map {
    const struct cfg *cfg;
    struct link_state *links; /* one per cfg link (those not on gNMI devices stay unused) */
};

struct gnmi_map *gnmi_map_new(const struct cfg *cfg)
{
    struct gnmi_map *m = calloc(1, sizeof(*m));
    if (!m)
        return NULL;
    m->cfg = cfg;
    m->links = calloc(cfg->n_links ? cfg->n_links : 1, sizeof(*m->links));
    if (!m->links) {
        free(m);
        return NULL;
    }
    for (size_t i = 0; i < cfg->n_links; i++) {
        m->links[i].device = cfg->links[i].device;
        m->links[i].interface = cfg->links[i].interface;
    }
    return m;
}

void gnmi_map_free(struct gnmi_map *m)
{
    if (!m)
        return;
    free(m->links);
    free(m);
}

/* Link index for (source, interface), or -1. source may carry ":port" (gnmic's target address). */
static int find_link(const struct gnmi_map *m, const char *source, const char *ifname)
{
    const struct cfg *cfg = m->cfg;
    size_t slen = strlen(source);
    const char *colon = strrchr(source, ':');
    size_t host_len = colon && !strchr(source, ']') && colon == strchr(source, ':')
                          ? (size_t)(colon - source)
                          : slen;
    for (size_t i = 0; i < cfg->n_devices; i++) {
        const struct cfg_device *d = &cfg->devices[i];
        if (!d->has_gnmi)
            continue;
        const char *want = d->gnmi_source ? d->gnmi_source : d->name;
        if (strcmp(want, source) != 0 &&
            !(strlen(want) == host_len && strncmp(want, source, host_len) == 0))
            continue;
        for (size_t l = 0; l < cfg->n_links; l++)
            if (strcmp(cfg->links[l].device, d->name) == 0 &&
                strcmp(cfg->links[l].interface, ifname) == 0)
                return (int)l;
    }
    return -1;
}

/* A non-negative integer from a JSON integer (exact to 2^64-1), an integral JSON float up to 2^53
 * (gnmic's event-convert to float) or a decimal string (JSON_IETF encodes uint64 as strings). */
static int value_u64(const struct jv *v, uint64_t *out)
{
    if (v->type == JV_NUMBER) {
        if (v->is_int) {
            if (v->neg || v->overflow)
                return -1;
            *out = v->u;
            return 0;
        }
        if (!(v->d >= 0) || v->d > MAX_EXACT_DBL || v->d != (double)(uint64_t)v->d)
            return -1;
        *out = (uint64_t)v->d;
        return 0;
    }
    if (v->type != JV_STRING || v->n == 0 || v->n > 20)
        return -1;
    uint64_t x = 0;
    for (uint32_t i = 0; i < v->n; i++) {
        unsigned char c = (unsigned char)v->s[i];
        if (c < '0' || c > '9' || __builtin_mul_overflow(x, 10, &x) ||
            __builtin_add_overflow(x, (uint64_t)(c - '0'), &x))
            return -1;
    }
    *out = x;
    return 0;
}

/* OpenConfig ethernet port-speed identity ("SPEED_100GB", maybe module-prefixed) or SR Linux's
 * port-speed ("100G", "10M", "1T") in bit/s. */
static int port_speed_bps(const char *s, uint64_t *bps)
{
    const char *p = strstr(s, "SPEED_");
    p = p ? p + 6 : s;
    char *end;
    unsigned long long n = strtoull(p, &end, 10);
    if (end == p || *p == '-' || *p == '+')
        return -1;
    uint64_t mul;
    if (strcmp(end, "MB") == 0 || strcmp(end, "M") == 0)
        mul = 1000000ULL;
    else if (strcmp(end, "GB") == 0 || strcmp(end, "G") == 0)
        mul = 1000000000ULL;
    else if (strcmp(end, "TB") == 0 || strcmp(end, "T") == 0)
        mul = 1000000000000ULL;
    else
        return -1;
    return __builtin_mul_overflow((uint64_t)n, mul, bps) ? -1 : 0;
}

/* last-clear: OpenConfig's ns since the epoch (number or string), or SR Linux's RFC 3339
 * date-time ("2024-03-19T23:16:22.812Z"). */
static int last_clear_ns(const struct jv *v, uint64_t *ns)
{
    if (value_u64(v, ns) == 0)
        return 0;
    int64_t us;
    if (v->type != JV_STRING || tm_parse_rfc3339(v->s, &us) != 0 || us < 0)
        return -1;
    *ns = (uint64_t)us * 1000ULL;
    return 0;
}

/* Whether path goes through a subinterface ("/interfaces/interface/subinterfaces/subinterface/
 * state/counters/in-octets", SR Linux "/interface/subinterface/statistics/in-octets"); sets
 * *leaf to the field of its last element or -1. */
static bool path_info(const char *path, int *leaf)
{
    bool subif = false;
    *leaf = -1;
    const char *p = path;
    while (*p) {
        while (*p == '/')
            p++;
        const char *e = p;
        while (*e && *e != '/')
            e++;
        const char *name = p;
        for (const char *c = p; c < e; c++)
            if (*c == ':') /* "openconfig-interfaces:in-octets", "srl_nokia-interfaces:interface" */
                name = c + 1;
        size_t n = (size_t)(e - name);
        if ((n == 12 && memcmp(name, "subinterface", 12) == 0) ||
            (n == 13 && memcmp(name, "subinterfaces", 13) == 0))
            subif = true;
        if (!*e) {
            for (size_t i = 0; i < sizeof(leaves) / sizeof(leaves[0]); i++)
                if (strlen(leaves[i].leaf) == n && memcmp(leaves[i].leaf, name, n) == 0)
                    *leaf = (int)leaves[i].f;
        }
        p = e;
    }
    return subif;
}

struct update {
    int link; /* -1: not applied */
    int64_t ts_ns;
    uint64_t v[N_FIELDS];
    uint32_t have;
    bool subif;
};

static void value_text(const struct jv *v, char *buf, size_t len)
{
    if (v->type == JV_STRING)
        snprintf(buf, len, "\"%.50s\"", v->s);
    else if (v->type == JV_NUMBER && v->is_int && !v->overflow)
        snprintf(buf, len, "%s%llu", v->neg ? "-" : "", (unsigned long long)v->u);
    else if (v->type == JV_NUMBER)
        snprintf(buf, len, "%.17g", v->d);
    else
        snprintf(buf, len, "%s", jv_type_name(v));
}

static int parse_values(const struct jv *values, const char *at, struct update *u, char *err,
                        size_t errlen)
{
    for (const struct jv *val = values ? values->child : NULL; val; val = val->next) {
        int f;
        if (path_info(val->key, &f)) {
            if (f >= 0)
                u->subif = true;
            continue; /* a subinterface's counter is not the interface's */
        }
        if (f < 0)
            continue;
        uint64_t x;
        int bad;
        const char *want = "a non-negative integer";
        if (f == F_PORT_SPEED) {
            bad = val->type != JV_STRING || port_speed_bps(val->s, &x) != 0;
            want = "a speed (SPEED_100GB or 100G)";
        } else if (f == F_LAST_CLEAR) {
            bad = last_clear_ns(val, &x) != 0;
            want = "ns since the epoch or an RFC 3339 date-time";
        } else {
            bad = value_u64(val, &x) != 0;
        }
        if (bad) {
            char txt[64];
            value_text(val, txt, sizeof(txt));
            snprintf(err, errlen, "%s.values[\"%.80s\"]: expected %s, got %s", at, val->key, want,
                     txt);
            return -1;
        }
        u->v[f] = x;
        u->have |= BIT(f);
    }
    return 0;
}

static int parse_event(const struct gnmi_map *m, const struct jv *ev, const char *at,
                       struct update *u, char *err, size_t errlen)
{
    memset(u, 0, sizeof(*u));
    u->link = -1;
    if (ev->type != JV_OBJECT) {
        snprintf(err, errlen, "%s: expected an event object, got %s", at, jv_type_name(ev));
        return -1;
    }
    const struct jv *ts = jv_get(ev, "timestamp");
    if (!ts || ts->type != JV_NUMBER || !ts->is_int || ts->neg || ts->overflow || ts->u == 0 ||
        ts->u > (uint64_t)INT64_MAX) {
        snprintf(err, errlen, "%s.timestamp: expected nanoseconds since the epoch", at);
        return -1;
    }
    u->ts_ns = (int64_t)ts->u;
    const struct jv *tags = jv_get(ev, "tags");
    const struct jv *values = jv_get(ev, "values");
    if (!tags || tags->type != JV_OBJECT) {
        snprintf(err, errlen, "%s.tags: expected an object", at);
        return -1;
    }
    if (values && values->type != JV_OBJECT) {
        snprintf(err, errlen, "%s.values: expected an object", at);
        return -1;
    }
    const struct jv *src = jv_get(tags, "source");
    if (!src || src->type != JV_STRING || src->n == 0) {
        snprintf(err, errlen, "%s.tags.source: expected the target name", at);
        return -1;
    }
    if (parse_values(values, at, u, err, errlen) != 0)
        return -1;
    const struct jv *sub = jv_get(tags, "subinterface_index");
    if (sub && u->have) {
        u->subif = true; /* the keys came in the tags: every value here is the subinterface's */
        u->have = 0;
    }
    const struct jv *ifn = jv_get(tags, "interface_name");
    if (!ifn || ifn->type != JV_STRING) {
        if (u->have) {
            snprintf(err, errlen, "%s.tags.interface_name: expected the interface name", at);
            return -1;
        }
        return 0; /* not an interface event: ignored */
    }
    if (u->have)
        u->link = find_link(m, src->s, ifn->s);
    return 0;
}

static void emit(struct link_state *ls, struct poll_batch *out, struct gnmi_stats *st)
{
    struct pending *p = &ls->p;
    p->active = false;
    ls->emitted_ts_ns = p->ts_ns;
    if (p->have & BIT(F_LAST_CLEAR)) {
        ls->disc_cs = (int64_t)(p->v[F_LAST_CLEAR] / NS_PER_CS);
        ls->has_clear = true;
    }
    const uint32_t oct = BIT(F_IN_OCT) | BIT(F_OUT_OCT);
    if ((p->have & oct) != oct) {
        st->partial++;
        return;
    }
    struct poll_sample s = {0};
    snprintf(s.device, sizeof(s.device), "%s", ls->device);
    snprintf(s.interface, sizeof(s.interface), "%s", ls->interface);
    s.at_us = p->ts_ns / 1000;
    s.in_octets = p->v[F_IN_OCT];
    s.out_octets = p->v[F_OUT_OCT];
    s.counter_bits = 64;
    const uint32_t pk = BIT(F_IN_PKTS) | BIT(F_OUT_PKTS), uc = BIT(F_IN_UC) | BIT(F_OUT_UC);
    if ((p->have & pk) == pk) {
        s.has_pkts = true;
        s.in_pkts = p->v[F_IN_PKTS];
        s.out_pkts = p->v[F_OUT_PKTS];
    } else if ((p->have & uc) == uc) {
        /* sums of 64-bit counters wrap consistently modulo 2^64 */
        s.has_pkts = true;
        s.in_pkts = p->v[F_IN_UC] + p->v[F_IN_MC] + p->v[F_IN_BC];
        s.out_pkts = p->v[F_OUT_UC] + p->v[F_OUT_MC] + p->v[F_OUT_BC];
    }
    if (ls->has_port_speed)
        s.speed_bps = ls->port_speed_bps;
    else if (ls->has_high_speed)
        s.speed_bps = ls->high_speed_mbps * 1000000ULL;
    s.discontinuity_cs = ls->has_clear ? ls->disc_cs : 0;
    if (poll_batch_add(out, &s) != 0)
        st->partial++;
}

static void apply(struct link_state *ls, const struct update *u, int64_t now_us,
                  struct poll_batch *out, struct gnmi_stats *st)
{
    /* speed is state, not a counter of this timestamp: carried whatever its timestamp */
    if (u->have & BIT(F_PORT_SPEED)) {
        ls->has_port_speed = true;
        ls->port_speed_bps = u->v[F_PORT_SPEED];
    }
    if (u->have & BIT(F_HIGH_SPEED)) {
        ls->has_high_speed = true;
        ls->high_speed_mbps = u->v[F_HIGH_SPEED];
    }
    uint32_t have = u->have & ~SPEED_BITS;
    if (!have)
        return;
    if (u->ts_ns <= ls->emitted_ts_ns || (ls->p.active && u->ts_ns < ls->p.ts_ns)) {
        st->stale++; /* older than what is pending or already reported */
        return;
    }
    if (ls->p.active && u->ts_ns > ls->p.ts_ns)
        emit(ls, out, st); /* the timestamp moved on: the previous one is complete */
    if (!ls->p.active) {
        memset(&ls->p, 0, sizeof(ls->p));
        ls->p.active = true;
        ls->p.ts_ns = u->ts_ns;
    }
    for (int f = 0; f < N_FIELDS; f++)
        if (have & BIT(f))
            ls->p.v[f] = u->v[f];
    ls->p.have |= have;
    ls->p.touched_us = now_us;
}

/* gnmic's plain `format: json` (formatters/json.go NotificationRspMsg: source, timestamp,
 * updates[{Path, values}]): an object with "updates", or with "source" and no "tags". */
static bool is_format_json(const struct jv *root)
{
    const struct jv *first = root;
    if (root->type == JV_ARRAY)
        first = root->child;
    if (!first || first->type != JV_OBJECT || jv_get(first, "tags"))
        return false;
    return jv_get(first, "updates") || jv_get(first, "source");
}

enum gnmi_rc gnmi_map_message(struct gnmi_map *m, const char *msg, size_t len, int64_t now_us,
                              int64_t max_at_us, struct poll_batch *out, struct gnmi_stats *st,
                              char *err, size_t errlen)
{
    enum gnmi_rc rc = GNMI_MALFORMED;
    struct update *ups = NULL;
    struct jv *root = NULL;
    size_t n_roots = 0;
    struct jv_error je;
    memset(st, 0, sizeof(*st));
    struct jv_doc *doc = jv_parse(msg, len, false, &root, &n_roots, &je);
    if (!doc) {
        snprintf(err, errlen, "%s: not valid JSON: %s", je.path, je.msg);
        return GNMI_MALFORMED;
    }
    if (is_format_json(root)) {
        snprintf(err, errlen, "a gnmic `format: json` message (gnmic's default output format)");
        rc = GNMI_FORMAT_JSON;
        goto done;
    }
    size_t n = root->type == JV_ARRAY ? root->n : 1;
    ups = calloc(n ? n : 1, sizeof(*ups));
    if (!ups) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    /* validate everything first: a malformed message changes nothing */
    if (root->type == JV_ARRAY) {
        size_t i = 0;
        for (const struct jv *ev = root->child; ev && i < n; ev = ev->next, i++) {
            char at[32];
            snprintf(at, sizeof(at), "$[%zu]", i);
            if (parse_event(m, ev, at, &ups[i], err, errlen) != 0)
                goto done;
        }
    } else if (parse_event(m, root, "$", &ups[0], err, errlen) != 0) {
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        const struct update *u = &ups[i];
        if (u->subif)
            st->subif++;
        if (u->link < 0) {
            if (!u->subif)
                st->ignored++;
            continue;
        }
        if (u->ts_ns / 1000 > max_at_us) {
            st->future++;
            continue;
        }
        apply(&m->links[u->link], u, now_us, out, st);
    }
    rc = GNMI_OK;
done:
    jv_doc_free(doc);
    free(ups);
    return rc;
}

size_t gnmi_map_flush(struct gnmi_map *m, int64_t now_us, int64_t quiet_us, struct poll_batch *out,
                      struct gnmi_stats *st)
{
    size_t before = out->n;
    for (size_t l = 0; l < m->cfg->n_links; l++) {
        struct link_state *ls = &m->links[l];
        if (ls->p.active && (quiet_us < 0 || ls->p.touched_us + quiet_us <= now_us))
            emit(ls, out, st);
    }
    return out->n - before;
}

int64_t gnmi_map_next_due(const struct gnmi_map *m, int64_t quiet_us)
{
    int64_t due = -1;
    for (size_t l = 0; l < m->cfg->n_links; l++) {
        const struct link_state *ls = &m->links[l];
        if (ls->p.active && (due < 0 || ls->p.touched_us + quiet_us < due))
            due = ls->p.touched_us + quiet_us;
    }
    return due;
}
