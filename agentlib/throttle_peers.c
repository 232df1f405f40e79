/* Parsing the reconciler's peer sockets for this host (see throttle_peers.h). */
#include "throttle_peers.h"

#include <arpa/inet.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hostport.h"
#include "throttle_rules.h"

/* "ADDR:PORT" (IPv6 in brackets) into addr (IPv6 form) and port. */
static int addr_port(const cJSON *v, uint8_t addr[16], uint16_t *port)
{
    const char *s = cJSON_GetStringValue(v);
    struct hostport hp;
    char err[128];
    if (!s || hostport_parse(s, strlen(s), 0, &hp, err, sizeof(err)) != 0)
        return -1;
    memset(addr, 0, 16);
    struct in_addr v4;
    if (hp.family == AF_INET && inet_pton(AF_INET, hp.host, &v4) == 1) {
        addr[10] = addr[11] = 0xff;
        memcpy(addr + 12, &v4, 4);
    } else if (hp.family != AF_INET6 || inet_pton(AF_INET6, hp.host, addr) != 1) {
        return -1;
    }
    *port = hp.port;
    return 0;
}

static int whole(const cJSON *o, const char *name, double max, double *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < 0 ||
        v->valuedouble > max || v->valuedouble != floor(v->valuedouble))
        return -1;
    *out = v->valuedouble;
    return 0;
}

static int parse_one(const cJSON *o, int64_t now_us, struct throttle_peer_set *out,
                     const char *where, char *err, size_t errlen)
{
    struct throttle_peer_rule *r = &out->rule[out->n];
    double id, rate, ttl;
    memset(r, 0, sizeof(*r));
    if (!cJSON_IsObject(o) || whole(o, "id", 9e15, &id) != 0 || id < 1 ||
        whole(o, "rate_bps", 1e15, &rate) != 0 || rate < 1 ||
        whole(o, "expires_in_s", 366.0 * 86400, &ttl) != 0) {
        snprintf(err, errlen, "%s: expected {\"id\":N,\"rate_bps\":N,\"expires_in_s\":N,...}",
                 where);
        return -1;
    }
    if (throttle_mode_parse(o, &r->mode, where, err, errlen) != 0)
        return -1;
    const cJSON *socks = cJSON_GetObjectItemCaseSensitive(o, "sockets");
    if (!cJSON_IsArray(socks)) {
        snprintf(err, errlen, "%s.sockets: expected a list", where);
        return -1;
    }
    r->id = (int64_t)id;
    r->rate_bps = (uint64_t)rate;
    r->expires_at_us = now_us + (int64_t)ttl * 1000000;
    r->first = out->n_sock;
    int i = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, socks)
    {
        if (out->n_sock == THROTTLE_MAX_PEERS) {
            snprintf(err, errlen, "%s.sockets[%d]: more than %d peer sockets", where, i,
                     THROTTLE_MAX_PEERS);
            return -1;
        }
        struct throttle_peer *p = &out->sock[out->n_sock];
        memset(p, 0, sizeof(*p));
        if (addr_port(cJSON_GetObjectItemCaseSensitive(it, "local"), p->laddr, &p->lport) != 0 ||
            addr_port(cJSON_GetObjectItemCaseSensitive(it, "remote"), p->raddr, &p->rport) != 0) {
            snprintf(err, errlen,
                     "%s.sockets[%d]: expected {\"local\":\"ADDR:PORT\",\"remote\":\"ADDR:PORT\"}",
                     where, i);
            return -1;
        }
        p->cls = -1;
        out->n_sock++;
        i++;
    }
    r->n = out->n_sock - r->first;
    out->n++;
    return 0;
}

int throttle_peers_parse(const cJSON *peers, int64_t now_us, struct throttle_peer_set *out,
                         char *err, size_t errlen)
{
    out->n = 0;
    out->n_sock = 0;
    if (!peers)
        return 0;
    if (!cJSON_IsArray(peers)) {
        snprintf(err, errlen, "$.peers: expected a list");
        return -1;
    }
    int i = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, peers)
    {
        char where[48];
        snprintf(where, sizeof(where), "$.peers[%d]", i++);
        if (out->n == THROTTLE_MAX_PEER_RULES) {
            snprintf(err, errlen, "%s: more than %d rules with peers", where,
                     THROTTLE_MAX_PEER_RULES);
            goto fail;
        }
        if (parse_one(it, now_us, out, where, err, errlen) != 0)
            goto fail;
    }
    return 0;
fail:
    out->n = 0;
    out->n_sock = 0;
    return -1;
}
