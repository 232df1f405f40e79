/* Look-ups on a parsed configuration: names to indexes, ports and users to services, paths. */
#include "cfg_internal.h"
#include "cfg_names.h"

#include <string.h>

int cfg_site_index(const struct cfg *cfg, const char *name)
{
    if (!name)
        return -1;
    if (cfg->site_names)
        return (int)cfg_names_get(cfg->site_names, name);
    for (size_t i = 0; i < cfg->n_sites; i++)
        if (cfg->sites[i].name && strcmp(cfg->sites[i].name, name) == 0)
            return (int)i;
    return -1;
}

int cfg_device_index(const struct cfg *cfg, const char *name)
{
    if (!name)
        return -1;
    if (cfg->device_names)
        return (int)cfg_names_get(cfg->device_names, name);
    for (size_t i = 0; i < cfg->n_devices; i++)
        if (cfg->devices[i].name && strcmp(cfg->devices[i].name, name) == 0)
            return (int)i;
    return -1;
}

int cfg_site_of_addr(const struct cfg *cfg, const char *addr)
{
    return cfg->sitemap ? sm_lookup_str(cfg->sitemap, addr) : -1;
}

int cfg_service_of_port(const struct cfg *cfg, uint16_t port)
{
    for (size_t i = 0; i < cfg->n_services; i++)
        for (size_t k = 0; k < cfg->services[i].n_ports; k++)
            if (cfg->services[i].ports[k] == port)
                return (int)i;
    return -1;
}

int cfg_service_of_user(const struct cfg *cfg, const char *user)
{
    if (!user)
        return -1;
    for (size_t i = 0; i < cfg->n_services; i++)
        for (size_t k = 0; k < cfg->services[i].n_users; k++)
            if (strcmp(cfg->services[i].users[k], user) == 0)
                return (int)i;
    return -1;
}

int cfg_is_dedup_port(const struct cfg *cfg, uint16_t port)
{
    for (size_t i = 0; i < cfg->n_nfs_ports; i++)
        if (cfg->nfs_ports[i] == port)
            return 1;
    return cfg_service_of_port(cfg, port) >= 0;
}

size_t cfg_path(const struct cfg *cfg, int src, int dst, int *out, size_t max)
{
    if (src < 0 || dst < 0 || max < 2)
        return 0;
    for (size_t i = 0; i < cfg->n_routes; i++) {
        const struct cfg_route *r = &cfg->routes[i];
        if (r->src_idx != src || r->dst_idx != dst)
            continue;
        if (r->n_via + 2 > max)
            return 0;
        size_t n = 0;
        out[n++] = src;
        for (size_t k = 0; k < r->n_via; k++)
            out[n++] = r->via_idx[k];
        out[n++] = dst;
        return n;
    }
    if (cfg_sites_linked(cfg, src, dst)) {
        out[0] = src;
        out[1] = dst;
        return 2;
    }
    return 0;
}

int cfg_sites_linked(const struct cfg *cfg, int a, int b)
{
    for (size_t i = 0; i < cfg->n_links; i++) {
        const struct cfg_link *l = &cfg->links[i];
        if ((l->site_idx == a && l->peer_site_idx == b) ||
            (l->site_idx == b && l->peer_site_idx == a))
            return 1;
    }
    return 0;
}
