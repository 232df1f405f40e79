/* Flows to links by device and ifIndex (see flow_link.h). */
#include "flow_link.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

struct flow_links {
    const struct cfg *cfg;
    long *if_index; /* per configured link: its interface's ifIndex, 0 = not known yet */
};

struct flow_links *flow_links_new(const struct cfg *cfg)
{
    struct flow_links *fl = calloc(1, sizeof(*fl));
    if (!fl)
        return NULL;
    fl->cfg = cfg;
    fl->if_index = calloc(cfg->n_links ? cfg->n_links : 1, sizeof(*fl->if_index));
    if (!fl->if_index) {
        free(fl);
        return NULL;
    }
    return fl;
}

void flow_links_free(struct flow_links *fl)
{
    if (!fl)
        return;
    free(fl->if_index);
    free(fl);
}

void flow_links_learn(struct flow_links *fl, const char *device, const char *interface,
                      long if_index)
{
    if (!fl || if_index <= 0)
        return;
    for (size_t i = 0; i < fl->cfg->n_links; i++) {
        const struct cfg_link *l = &fl->cfg->links[i];
        if (strcmp(l->device, device) == 0 && strcmp(l->interface, interface) == 0)
            fl->if_index[i] = if_index;
    }
}

/* The link of device dev whose interface is ifIndex idx, or -1. */
static int link_of(const struct flow_links *fl, uint32_t dev, uint32_t idx)
{
    if (idx == 0)
        return -1;
    for (size_t i = 0; i < fl->cfg->n_links; i++)
        if (fl->cfg->links[i].device_idx == (int)dev && fl->if_index[i] == (long)idx)
            return (int)i;
    return -1;
}

bool flow_links_sites(const struct flow_links *fl, uint32_t dev, uint32_t in_if, uint32_t out_if,
                      uint8_t family, const uint8_t *dst, int *src_site, int *dst_site)
{
    if (!fl)
        return false;
    int out = link_of(fl, dev, out_if), in = link_of(fl, dev, in_if);
    const struct cfg_link *l;
    bool leaving;
    if (out >= 0 && out != in) {
        l = &fl->cfg->links[out];
        leaving = true;
    } else if (in >= 0 && in != out) {
        l = &fl->cfg->links[in];
        leaving = false;
    } else if (out >= 0) { /* one interface seen both ways: the destination decides */
        l = &fl->cfg->links[out];
        char a[INET6_ADDRSTRLEN];
        if (!inet_ntop(family == 4 ? AF_INET : AF_INET6, dst, a, sizeof(a)))
            return false;
        leaving = cfg_site_of_addr(fl->cfg, a) != l->site_idx;
    } else {
        return false;
    }
    *src_site = leaving ? l->site_idx : l->peer_site_idx;
    *dst_site = leaving ? l->peer_site_idx : l->site_idx;
    return *src_site >= 0 && *dst_site >= 0;
}
