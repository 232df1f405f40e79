/* Parsing and mapping of gnmic event messages (see gnmi_event.h). */
#include "gnmi_event.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    F_LAST_CLEAR,
    F_HIGH_SPEED,
    F_PORT_SPEED,
    N_FIELDS
};

/* last element of the OpenConfig path -> field */
static const char *const field_leaf[N_FIELDS] = {
    [F_IN_OCT] = "in-octets",          [F_OUT_OCT] = "out-octets",
    [F_IN_PKTS] = "in-pkts",           [F_OUT_PKTS] = "out-pkts",
    [F_IN_UC] = "in-unicast-pkts",     [F_IN_MC] = "in-multicast-pkts",
    [F_IN_BC] = "in-broadcast-pkts",   [F_OUT_UC] = "out-unicast-pkts",
    [F_OUT_MC] = "out-multicast-pkts", [F_OUT_BC] = "out-broadcast-pkts",
    [F_LAST_CLEAR] = "last-clear",     [F_HIGH_SPEED] = "high-speed",
    [F_PORT_SPEED] = "port-speed",
};

struct link_state {
    const char *device, *interface;
    uint64_t v[N_FIELDS];
    uint32_t have;
    bool dirty;    /* updated by the message being applied */
    int64_t ts_ns; /* newest timestamp applied */
};

struct gnmi_map {
    const struct cfg *cfg;
    struct link_state *links; /* one per cfg link on a gNMI device (others unused) */
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

/* An unsigned 64-bit integer from a JSON number (exact up to 2^53) or a decimal string. */
static int json_u64(const cJSON *v, uint64_t *out)
{
    if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        if (!(d >= 0) || d > 9007199254740992.0 || d != (double)(uint64_t)d)
            return -1;
        *out = (uint64_t)d;
        return 0;
    }
    if (cJSON_IsString(v)) {
        const char *s = v->valuestring;
        if (!*s || strlen(s) > 20)
            return -1;
        for (const char *c = s; *c; c++)
            if (!isdigit((unsigned char)*c))
                return -1;
        errno = 0;
        unsigned long long x = strtoull(s, NULL, 10);
        if (errno == ERANGE)
            return -1;
        *out = x;
        return 0;
    }
    return -1;
}

/* OpenConfig ethernet port-speed identity ("SPEED_100GB", maybe module-prefixed) in bit/s. */
static int port_speed_bps(const char *s, uint64_t *bps)
{
    const char *p = strstr(s, "SPEED_");
    if (!p)
        return -1;
    char *end;
    unsigned long long n = strtoull(p + 6, &end, 10);
    if (end == p + 6)
        return -1;
    if (strcmp(end, "MB") == 0)
        *bps = n * 1000000ULL;
    else if (strcmp(end, "GB") == 0)
        *bps = n * 1000000000ULL;
    else
        return -1;
    return 0;
}

static int leaf_field(const char *path)
{
    const char *leaf = strrchr(path, '/');
    leaf = leaf ? leaf + 1 : path;
    const char *colon = strrchr(leaf, ':'); /* "openconfig-interfaces:in-octets" */
    if (colon)
        leaf = colon + 1;
    for (int f = 0; f < N_FIELDS; f++)
        if (strcmp(leaf, field_leaf[f]) == 0)
            return f;
    if (strcmp(leaf, "negotiated-port-speed") == 0)
        return F_PORT_SPEED;
    return -1;
}

struct update {
    int link; /* -1: unknown, ignored */
    int64_t ts_ns;
    uint64_t v[N_FIELDS];
    uint32_t have;
};

/* Copies msg, quoting integer literals too long for a double (> 15 digits) so that cJSON keeps
 * them exact as strings; numbers in strings are accepted anyway. */
static char *quote_big_ints(const char *msg, size_t len)
{
    char *out = malloc(len * 3 + 1);
    if (!out)
        return NULL;
    size_t o = 0;
    bool in_str = false;
    for (size_t i = 0; i < len;) {
        char c = msg[i];
        if (in_str) {
            out[o++] = c;
            if (c == '\\' && i + 1 < len)
                out[o++] = msg[++i];
            else if (c == '"')
                in_str = false;
            i++;
            continue;
        }
        if (c == '"') {
            in_str = true;
            out[o++] = c;
            i++;
            continue;
        }
        if (isdigit((unsigned char)c) && (i == 0 || !isalnum((unsigned char)msg[i - 1])) &&
            (i == 0 || (msg[i - 1] != '-' && msg[i - 1] != '.'))) {
            size_t j = i;
            while (j < len && isdigit((unsigned char)msg[j]))
                j++;
            bool plain = j - i > 15 && (j == len || !strchr(".eE", msg[j]));
            if (plain)
                out[o++] = '"';
            memcpy(out + o, msg + i, j - i);
            o += j - i;
            if (plain)
                out[o++] = '"';
            i = j;
            continue;
        }
        out[o++] = c;
        i++;
    }
    out[o] = '\0';
    return out;
}

static int parse_event(const struct gnmi_map *m, const cJSON *ev, const char *at, struct update *u,
                       char *err, size_t errlen)
{
    if (!cJSON_IsObject(ev)) {
        snprintf(err, errlen, "%s: expected an event object", at);
        return -1;
    }
    const cJSON *ts = cJSON_GetObjectItemCaseSensitive(ev, "timestamp");
    uint64_t ts_ns;
    if (!ts || json_u64(ts, &ts_ns) != 0 || ts_ns == 0) {
        snprintf(err, errlen, "%s.timestamp: expected nanoseconds since the epoch", at);
        return -1;
    }
    const cJSON *tags = cJSON_GetObjectItemCaseSensitive(ev, "tags");
    const cJSON *values = cJSON_GetObjectItemCaseSensitive(ev, "values");
    if (!cJSON_IsObject(tags)) {
        snprintf(err, errlen, "%s.tags: expected an object", at);
        return -1;
    }
    if (values && !cJSON_IsObject(values)) {
        snprintf(err, errlen, "%s.values: expected an object", at);
        return -1;
    }
    const cJSON *src = cJSON_GetObjectItemCaseSensitive(tags, "source");
    if (!cJSON_IsString(src) || !*src->valuestring) {
        snprintf(err, errlen, "%s.tags.source: expected the target name", at);
        return -1;
    }
    const cJSON *ifn = cJSON_GetObjectItemCaseSensitive(tags, "interface_name");
    memset(u, 0, sizeof(*u));
    u->ts_ns = (int64_t)ts_ns;
    const cJSON *val;
    cJSON_ArrayForEach(val, values)
    {
        int f = leaf_field(val->string);
        if (f < 0)
            continue;
        uint64_t x;
        int bad;
        if (f == F_PORT_SPEED)
            bad = !cJSON_IsString(val) || port_speed_bps(val->valuestring, &x) != 0;
        else
            bad = json_u64(val, &x) != 0;
        if (bad) {
            char *txt = cJSON_PrintUnformatted(val);
            snprintf(err, errlen, "%s.values[\"%s\"]: expected %s, got %.60s", at, val->string,
                     f == F_PORT_SPEED ? "a SPEED_* identity" : "a non-negative integer",
                     txt ? txt : "?");
            free(txt);
            return -1;
        }
        u->v[f] = x;
        u->have |= 1u << f;
    }
    if (!cJSON_IsString(ifn)) {
        if (u->have) {
            snprintf(err, errlen, "%s.tags.interface_name: expected the interface name", at);
            return -1;
        }
        u->link = -1; /* not an interface event: ignored */
        return 0;
    }
    u->link = find_link(m, src->valuestring, ifn->valuestring);
    return 0;
}

static void emit(struct gnmi_map *m, struct link_state *ls, struct poll_batch *out)
{
    const uint32_t oct = (1u << F_IN_OCT) | (1u << F_OUT_OCT);
    ls->dirty = false;
    if ((ls->have & oct) != oct)
        return;
    (void)m;
    struct poll_sample s = {0};
    snprintf(s.device, sizeof(s.device), "%s", ls->device);
    snprintf(s.interface, sizeof(s.interface), "%s", ls->interface);
    s.at_us = ls->ts_ns / 1000;
    s.in_octets = ls->v[F_IN_OCT];
    s.out_octets = ls->v[F_OUT_OCT];
    s.counter_bits = 64;
    if ((ls->have & (1u << F_IN_PKTS)) && (ls->have & (1u << F_OUT_PKTS))) {
        s.has_pkts = true;
        s.in_pkts = ls->v[F_IN_PKTS];
        s.out_pkts = ls->v[F_OUT_PKTS];
    } else if ((ls->have & (1u << F_IN_UC)) && (ls->have & (1u << F_OUT_UC))) {
        s.has_pkts = true;
        s.in_pkts = ls->v[F_IN_UC] + ls->v[F_IN_MC] + ls->v[F_IN_BC];
        s.out_pkts = ls->v[F_OUT_UC] + ls->v[F_OUT_MC] + ls->v[F_OUT_BC];
    }
    if (ls->have & (1u << F_PORT_SPEED))
        s.speed_bps = ls->v[F_PORT_SPEED];
    else if (ls->have & (1u << F_HIGH_SPEED))
        s.speed_bps = ls->v[F_HIGH_SPEED] * 1000000ULL;
    /* last-clear is ns since the epoch; any change in it must change discontinuity_cs */
    s.discontinuity_cs = (int64_t)(ls->v[F_LAST_CLEAR] / 10000000ULL);
    if (poll_batch_add(out, &s) != 0)
        return;
}

int gnmi_map_message(struct gnmi_map *m, const char *msg, size_t len, int64_t max_at_us,
                     struct poll_batch *out, struct gnmi_stats *st, char *err, size_t errlen)
{
    int rc = -1;
    struct update *ups = NULL;
    char *text = quote_big_ints(msg, len);
    cJSON *root = text ? cJSON_ParseWithLength(text, strlen(text)) : NULL;
    memset(st, 0, sizeof(*st));
    if (!root) {
        snprintf(err, errlen, "$: not valid JSON");
        goto done;
    }
    size_t n = cJSON_IsArray(root) ? (size_t)cJSON_GetArraySize(root) : 1;
    ups = calloc(n ? n : 1, sizeof(*ups));
    if (!ups) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    /* validate everything first: a malformed message changes nothing */
    if (cJSON_IsArray(root)) {
        size_t i = 0;
        const cJSON *ev;
        cJSON_ArrayForEach(ev, root)
        {
            char at[32];
            snprintf(at, sizeof(at), "$[%zu]", i);
            if (parse_event(m, ev, at, &ups[i], err, errlen) != 0)
                goto done;
            i++;
        }
    } else if (parse_event(m, root, "$", &ups[0], err, errlen) != 0) {
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        struct update *u = &ups[i];
        if (u->link < 0) {
            st->ignored++;
            continue;
        }
        if (u->ts_ns / 1000 > max_at_us) {
            st->future++;
            continue;
        }
        struct link_state *ls = &m->links[u->link];
        if (ls->dirty && u->ts_ns != ls->ts_ns)
            emit(m, ls, out); /* a new timestamp closes the previous sample */
        if (u->ts_ns < ls->ts_ns) {
            st->ignored++; /* older than what we already reported */
            continue;
        }
        for (int f = 0; f < N_FIELDS; f++)
            if (u->have & (1u << f))
                ls->v[f] = u->v[f];
        ls->have |= u->have;
        ls->ts_ns = u->ts_ns;
        if (u->have)
            ls->dirty = true;
    }
    for (size_t l = 0; l < m->cfg->n_links; l++)
        if (m->links[l].dirty)
            emit(m, &m->links[l], out);
    rc = 0;
done:
    cJSON_Delete(root);
    free(text);
    free(ups);
    return rc;
}
