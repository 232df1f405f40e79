/* $.sites: names and address prefixes, no prefix claimed by two sites. */
#include "cfg_internal.h"

#include <stdlib.h>
#include <string.h>

static int prefixes_overlap(const struct cfg_prefix *a, const struct cfg_prefix *b)
{
    if (a->family != b->family)
        return 0;
    int len = a->len < b->len ? a->len : b->len;
    for (int i = 0; i < len; i++) {
        int ba = (a->addr[i >> 3] >> (7 - (i & 7))) & 1;
        int bb = (b->addr[i >> 3] >> (7 - (i & 7))) & 1;
        if (ba != bb)
            return 0;
    }
    return 1;
}

void cfg_parse_sites(struct cfg_pctx *c, const cJSON *arr)
{
    struct cfg *cfg = c->cfg;
    int n = cJSON_GetArraySize(arr);
    cfg->sites = calloc(n ? n : 1, sizeof(*cfg->sites));
    static const char *const keys[] = {"name", "prefixes", NULL};
    char p[256], pp[256], ppp[256];
    int i = 0;
    for (const cJSON *s = arr->child; s; s = s->next, i++) {
        cfg_jp_idx(p, sizeof(p), "$.sites", i);
        if (!cJSON_IsObject(s)) {
            cfg_err(c, p, "expected a site object, got %s", cfg_type_name(s));
            continue;
        }
        cfg_check_keys(c, s, p, keys);
        struct cfg_site *site = &cfg->sites[cfg->n_sites];
        site->name = cfg_get_str(c, s, "name", p, 1, NULL);
        if (!site->name)
            continue;
        for (size_t j = 0; j < cfg->n_sites; j++)
            if (strcmp(cfg->sites[j].name, site->name) == 0)
                cfg_err(c, cfg_jp_key(pp, sizeof(pp), p, "name"),
                        "duplicate site name \"%s\" (also $.sites[%zu])", site->name, j);
        const cJSON *pre = cfg_get_arr(c, s, "prefixes", p, 1);
        if (pre) {
            int np = cJSON_GetArraySize(pre);
            site->prefixes = calloc(np ? np : 1, sizeof(*site->prefixes));
            int k = 0;
            cfg_jp_key(pp, sizeof(pp), p, "prefixes");
            for (const cJSON *x = pre->child; x; x = x->next, k++) {
                cfg_jp_idx(ppp, sizeof(ppp), pp, k);
                struct cfg_prefix *cp = &site->prefixes[site->n_prefixes];
                if (!cJSON_IsString(x) ||
                    sm_parse_prefix(x->valuestring, &cp->family, cp->addr, &cp->len) != 0) {
                    cfg_err(c, ppp,
                            "expected an address prefix like \"10.1.0.0/16\" or \"fd00:1::/48\" "
                            "with no host bits set, got %s%s%s",
                            cJSON_IsString(x) ? "\"" : cfg_type_name(x),
                            cJSON_IsString(x) ? x->valuestring : "", cJSON_IsString(x) ? "\"" : "");
                    continue;
                }
                /* overlaps with other sites' prefixes (nested prefixes within one site are
                 * allowed; across sites they would make a site's traffic ambiguous) */
                for (size_t j = 0; j < cfg->n_sites; j++)
                    for (size_t q = 0; q < cfg->sites[j].n_prefixes; q++)
                        if (prefixes_overlap(cp, &cfg->sites[j].prefixes[q]))
                            cfg_err(c, ppp,
                                    "prefix %s overlaps $.sites[%zu].prefixes[%zu] of site "
                                    "\"%s\"",
                                    x->valuestring, j, q, cfg->sites[j].name);
                site->n_prefixes++;
            }
            if (site->n_prefixes == 0 && np == 0)
                cfg_err(c, pp, "expected at least one prefix");
        }
        cfg->n_sites++;
    }
    if (n == 0)
        cfg_err(c, "$.sites", "expected at least one site");
}
