/* $.links (WAN interfaces and the circuits they form) and $.routes (multi-hop site paths). */
#include "cfg_internal.h"
#include "cfg_names.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cfg_parse_links(struct cfg_pctx *c, const cJSON *arr)
{
    struct cfg *cfg = c->cfg;
    int n = cJSON_GetArraySize(arr);
    cfg->links = calloc(n ? n : 1, sizeof(*cfg->links));
    static const char *const keys[] = {"device",  "interface",    "site", "peer_site",
                                       "circuit", "capacity_bps", NULL};
    char p[256], pp[256];
    int i = 0;
    /* (device, interface) -> link, circuit -> first end, circuits with two ends */
    struct cfg_names *ifaces = cfg_names_new((size_t)n), *circuits = cfg_names_new((size_t)n),
                     *full = cfg_names_new((size_t)n);
    for (const cJSON *l = arr->child; l; l = l->next, i++) {
        cfg_jp_idx(p, sizeof(p), "$.links", i);
        if (!cJSON_IsObject(l)) {
            cfg_err(c, p, "expected a link object, got %s", cfg_type_name(l));
            continue;
        }
        cfg_check_keys(c, l, p, keys);
        struct cfg_link *lk = &cfg->links[cfg->n_links];
        lk->device = cfg_get_str(c, l, "device", p, 1, NULL);
        lk->interface = cfg_get_str(c, l, "interface", p, 1, NULL);
        lk->site = cfg_get_str(c, l, "site", p, 0, NULL);
        lk->peer_site = cfg_get_str(c, l, "peer_site", p, 1, NULL);
        lk->circuit = cfg_get_str(c, l, "circuit", p, 1, NULL);
        lk->capacity_bps = (uint64_t)cfg_get_num(c, l, "capacity_bps", p, 0, 1.0e15, 0, 1);
        lk->device_idx = lk->device ? cfg_device_index(cfg, lk->device) : -1;
        if (lk->device && lk->device_idx < 0)
            cfg_err(c, cfg_jp_key(pp, sizeof(pp), p, "device"),
                    "expected a device name from $.devices, got \"%s\"", lk->device);
        if (!lk->site && lk->device_idx >= 0)
            lk->site = strdup(cfg->devices[lk->device_idx].site);
        lk->site_idx = lk->site ? cfg_site_index(cfg, lk->site) : -1;
        if (lk->site && lk->site_idx < 0)
            cfg_err(c, cfg_jp_key(pp, sizeof(pp), p, "site"),
                    "expected a site name from $.sites, got \"%s\"", lk->site);
        else if (lk->site && lk->device_idx >= 0 &&
                 strcmp(lk->site, cfg->devices[lk->device_idx].site) != 0)
            cfg_err(c, cfg_jp_key(pp, sizeof(pp), p, "site"),
                    "device \"%s\" is at site \"%s\", not \"%s\"", lk->device,
                    cfg->devices[lk->device_idx].site, lk->site);
        lk->peer_site_idx = lk->peer_site ? cfg_site_index(cfg, lk->peer_site) : -1;
        if (lk->peer_site && lk->peer_site_idx < 0)
            cfg_err(c, cfg_jp_key(pp, sizeof(pp), p, "peer_site"),
                    "expected a site name from $.sites, got \"%s\"", lk->peer_site);
        else if (lk->peer_site_idx >= 0 && lk->peer_site_idx == lk->site_idx)
            cfg_err(c, cfg_jp_key(pp, sizeof(pp), p, "peer_site"),
                    "a WAN link joins two different sites; both ends are \"%s\"", lk->site);
        if (lk->device && lk->interface) {
            /* device and interface joined by a byte names cannot hold (NUL is refused in JSON
             * strings by the reader; cJSON stops at it) */
            size_t kl = strlen(lk->device) + strlen(lk->interface) + 2;
            char *key = malloc(kl);
            if (key) {
                snprintf(key, kl, "%s%c%s", lk->device, 1, lk->interface);
                long dup = cfg_names_add(ifaces, key, (long)cfg->n_links);
                if (dup >= 0)
                    cfg_err(c, cfg_jp_key(pp, sizeof(pp), p, "interface"),
                            "interface \"%s\" of \"%s\" is already $.links[%ld]", lk->interface,
                            lk->device, dup);
                free(key);
            }
        }
        if (lk->circuit) {
            /* a circuit has at most two ends, and they must mirror each other */
            long first = cfg_names_add(circuits, lk->circuit, (long)cfg->n_links);
            if (first >= 0 && cfg_names_get(full, lk->circuit) >= 0) {
                cfg_err(c, cfg_jp_key(pp, sizeof(pp), p, "circuit"),
                        "circuit \"%s\" already has two ends; a circuit has at most two",
                        lk->circuit);
            } else if (first >= 0) {
                struct cfg_link *o = &cfg->links[first];
                cfg_names_add(full, lk->circuit, (long)cfg->n_links);
                if (o->site_idx != lk->peer_site_idx || o->peer_site_idx != lk->site_idx)
                    cfg_err(c, cfg_jp_key(pp, sizeof(pp), p, "circuit"),
                            "circuit \"%s\" joins %s-%s at $.links[%ld], but this end says %s-%s",
                            lk->circuit, o->site ? o->site : "?", o->peer_site ? o->peer_site : "?",
                            first, lk->site ? lk->site : "?", lk->peer_site ? lk->peer_site : "?");
            }
        }
        cfg->n_links++;
    }
    cfg_names_free(ifaces);
    cfg_names_free(circuits);
    cfg_names_free(full);
}
void cfg_parse_routes(struct cfg_pctx *c, const cJSON *arr)
{
    struct cfg *cfg = c->cfg;
    int n = cJSON_GetArraySize(arr);
    cfg->routes = calloc(n ? n : 1, sizeof(*cfg->routes));
    static const char *const keys[] = {"src", "dst", "via", NULL};
    char p[256], pp[256], ppp[256];
    int i = 0;
    for (const cJSON *r = arr->child; r; r = r->next, i++) {
        cfg_jp_idx(p, sizeof(p), "$.routes", i);
        if (!cJSON_IsObject(r)) {
            cfg_err(c, p, "expected a route object, got %s", cfg_type_name(r));
            continue;
        }
        cfg_check_keys(c, r, p, keys);
        struct cfg_route *rt = &cfg->routes[cfg->n_routes];
        rt->src = cfg_get_str(c, r, "src", p, 1, NULL);
        rt->dst = cfg_get_str(c, r, "dst", p, 1, NULL);
        rt->src_idx = rt->src ? cfg_site_index(cfg, rt->src) : -1;
        rt->dst_idx = rt->dst ? cfg_site_index(cfg, rt->dst) : -1;
        if (rt->src && rt->src_idx < 0)
            cfg_err(c, cfg_jp_key(pp, sizeof(pp), p, "src"), "expected a site name, got \"%s\"",
                    rt->src);
        if (rt->dst && rt->dst_idx < 0)
            cfg_err(c, cfg_jp_key(pp, sizeof(pp), p, "dst"), "expected a site name, got \"%s\"",
                    rt->dst);
        const cJSON *via = cfg_get_arr(c, r, "via", p, 1);
        cfg_jp_key(pp, sizeof(pp), p, "via");
        rt->via = cfg_get_str_list(c, via, pp, &rt->n_via);
        rt->via_idx = calloc(rt->n_via ? rt->n_via : 1, sizeof(int));
        int ok = rt->src_idx >= 0 && rt->dst_idx >= 0;
        for (size_t k = 0; k < rt->n_via; k++) {
            rt->via_idx[k] = cfg_site_index(cfg, rt->via[k]);
            if (rt->via_idx[k] < 0) {
                cfg_err(c, cfg_jp_idx(ppp, sizeof(ppp), pp, (int)k),
                        "expected a site name, got \"%s\"", rt->via[k]);
                ok = 0;
            }
        }
        /* a path that visits a site twice is a cycle: its bytes would be laid on a hop twice */
        for (size_t k = 0; ok && k < rt->n_via; k++) {
            int s = rt->via_idx[k];
            bool again = s == rt->src_idx || s == rt->dst_idx;
            for (size_t q = 0; q < k && !again; q++)
                again = rt->via_idx[q] == s;
            if (again) {
                cfg_err(c, cfg_jp_idx(ppp, sizeof(ppp), pp, (int)k),
                        "route %s->%s visits \"%s\" twice: a route may not loop", rt->src, rt->dst,
                        rt->via[k]);
                ok = 0;
            }
        }
        if (ok && rt->src_idx == rt->dst_idx)
            cfg_err(c, p, "a route joins two different sites");
        else if (ok) {
            /* every hop src -> via... -> dst must be a linked pair */
            int prev = rt->src_idx;
            for (size_t k = 0; k <= rt->n_via; k++) {
                int next = k < rt->n_via ? rt->via_idx[k] : rt->dst_idx;
                if (!cfg_sites_linked(cfg, prev, next)) {
                    cfg_err(c, pp, "route %s->%s does not connect: no link joins \"%s\" and \"%s\"",
                            rt->src, rt->dst, cfg->sites[prev].name, cfg->sites[next].name);
                    break;
                }
                prev = next;
            }
        }
        for (size_t j = 0; j < cfg->n_routes; j++)
            if (ok && cfg->routes[j].src_idx == rt->src_idx &&
                cfg->routes[j].dst_idx == rt->dst_idx)
                cfg_err(c, p, "duplicate route %s->%s (also $.routes[%zu])", rt->src, rt->dst, j);
        cfg->n_routes++;
    }
}
