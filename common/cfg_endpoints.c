/* $.endpoints: names for the services a workflow talks to (the dependency map names a remote
 * listening endpoint by the first entry whose address and ports match it). */
#include "cfg_internal.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

static void parse_endpoint(struct cfg_pctx *c, const cJSON *e, const char *p,
                           struct cfg_endpoint *ep)
{
    static const char *const keys[] = {"name", "address", "ports", NULL};
    char pp[256];
    cfg_check_keys(c, e, p, keys);
    ep->name = cfg_get_str(c, e, "name", p, 1, "");
    ep->address = cfg_get_str(c, e, "address", p, 0, NULL);
    ep->ports = cfg_get_port_list(c, cfg_get_arr(c, e, "ports", p, 0),
                                  cfg_jp_key(pp, sizeof(pp), p, "ports"), &ep->n_ports);
    if (ep->address) {
        if (inet_pton(AF_INET, ep->address, ep->addr) == 1)
            ep->family = AF_INET;
        else if (inet_pton(AF_INET6, ep->address, ep->addr) == 1)
            ep->family = AF_INET6;
        else
            cfg_err(c, cfg_jp_key(pp, sizeof(pp), p, "address"),
                    "expected an IPv4 or IPv6 address, got \"%s\"", ep->address);
    }
    if (!ep->address && !ep->n_ports)
        cfg_err(c, p, "an endpoint needs an \"address\", \"ports\" or both");
}

void cfg_parse_endpoints(struct cfg_pctx *c, const cJSON *arr)
{
    struct cfg *cfg = c->cfg;
    int n = cJSON_GetArraySize(arr);
    cfg->endpoints = calloc(n ? (size_t)n : 1, sizeof(*cfg->endpoints));
    if (!cfg->endpoints) {
        cfg_err(c, "$.endpoints", "out of memory");
        return;
    }
    char p[256];
    int i = 0;
    for (const cJSON *e = arr->child; e; e = e->next, i++) {
        cfg_jp_idx(p, sizeof(p), "$.endpoints", i);
        if (!cJSON_IsObject(e)) {
            cfg_err(c, p, "expected an endpoint object, got %s", cfg_type_name(e));
            continue;
        }
        parse_endpoint(c, e, p, &cfg->endpoints[cfg->n_endpoints++]);
    }
}

void cfg_free_endpoints(struct cfg *cfg)
{
    for (size_t i = 0; i < cfg->n_endpoints; i++) {
        free(cfg->endpoints[i].name);
        free(cfg->endpoints[i].address);
        free(cfg->endpoints[i].ports);
    }
    free(cfg->endpoints);
    cfg->endpoints = NULL;
    cfg->n_endpoints = 0;
}

const char *cfg_endpoint_name(const struct cfg *cfg, int family, const uint8_t addr[16],
                              uint16_t port)
{
    for (size_t i = 0; i < cfg->n_endpoints; i++) {
        const struct cfg_endpoint *ep = &cfg->endpoints[i];
        if (ep->address &&
            (ep->family != family || memcmp(ep->addr, addr, family == AF_INET ? 4 : 16) != 0))
            continue;
        if (ep->n_ports) {
            size_t k = 0;
            while (k < ep->n_ports && ep->ports[k] != port)
                k++;
            if (k == ep->n_ports)
                continue;
        }
        return ep->name;
    }
    return NULL;
}
