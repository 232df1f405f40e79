/* $.dedup: NFS ports and transfer services whose socket bytes the service reports replace. */
#include "cfg_internal.h"

#include <stdlib.h>
#include <string.h>

void cfg_parse_dedup(struct cfg_pctx *c, const cJSON *o)
{
    struct cfg *cfg = c->cfg;
    static const char *const keys[] = {"nfs_ports", "services", NULL};
    static const char *const skeys[] = {"name", "ports", "users", NULL};
    cfg_check_keys(c, o, "$.dedup", keys);
    const cJSON *np = cfg_get_arr(c, o, "nfs_ports", "$.dedup", 0);
    if (np) {
        free(cfg->nfs_ports);
        cfg->nfs_ports = cfg_get_port_list(c, np, "$.dedup.nfs_ports", &cfg->n_nfs_ports);
    }
    const cJSON *sv = cfg_get_arr(c, o, "services", "$.dedup", 0);
    if (!sv)
        return;
    int n = cJSON_GetArraySize(sv);
    cfg->services = calloc(n ? n : 1, sizeof(*cfg->services));
    char p[256], pp[256];
    int i = 0;
    for (const cJSON *s = sv->child; s; s = s->next, i++) {
        cfg_jp_idx(p, sizeof(p), "$.dedup.services", i);
        if (!cJSON_IsObject(s)) {
            cfg_err(c, p, "expected a service object, got %s", cfg_type_name(s));
            continue;
        }
        cfg_check_keys(c, s, p, skeys);
        struct cfg_service *svc = &cfg->services[cfg->n_services++];
        svc->name = cfg_get_str(c, s, "name", p, 1, "");
        svc->ports = cfg_get_port_list(c, cfg_get_arr(c, s, "ports", p, 0),
                                       cfg_jp_key(pp, sizeof(pp), p, "ports"), &svc->n_ports);
        svc->users = cfg_get_str_list(c, cfg_get_arr(c, s, "users", p, 0),
                                      cfg_jp_key(pp, sizeof(pp), p, "users"), &svc->n_users);
        if (!svc->n_ports && !svc->n_users)
            cfg_err(c, p, "a service needs \"ports\" or \"users\" to be left out of socket counts");
    }
}
