/* $.sites: names and address prefixes, no prefix claimed by two sites. */
#include "cfg_internal.h"
#include "cfg_names.h"

#include <arpa/inet.h>
#include <stdbool.h>
#include <stdio.h>
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

struct pref_ref {
    const struct cfg_prefix *p;
    size_t site, k; /* $.sites[site].prefixes[k] */
};

static int cmp_pref(const void *a, const void *b)
{
    const struct cfg_prefix *x = ((const struct pref_ref *)a)->p,
                            *y = ((const struct pref_ref *)b)->p;
    if (x->family != y->family)
        return x->family < y->family ? -1 : 1;
    int d = memcmp(x->addr, y->addr, 16);
    if (d)
        return d;
    return x->len - y->len; /* the wider prefix first */
}

static bool before(const struct pref_ref *a, const struct pref_ref *b)
{
    return a->site < b->site || (a->site == b->site && a->k < b->k);
}

/* No prefix may overlap another site's (nested prefixes within one site are allowed; across
 * sites they would make a site's traffic ambiguous). Prefixes overlap only by containment, so
 * sorted by address (wider first) each one's containing prefixes form a stack: n log n, not the
 * n^2 of comparing every pair. The error is reported at the later prefix in file order. */
static void check_overlaps(struct cfg_pctx *c)
{
    const struct cfg *cfg = c->cfg;
    size_t n = 0, k = 0;
    for (size_t i = 0; i < cfg->n_sites; i++)
        n += cfg->sites[i].n_prefixes;
    struct pref_ref *v = calloc(n ? n : 1, sizeof(*v)), *stack = calloc(n ? n : 1, sizeof(*v));
    if (!v || !stack) {
        free(v);
        free(stack);
        return;
    }
    for (size_t i = 0; i < cfg->n_sites; i++)
        for (size_t q = 0; q < cfg->sites[i].n_prefixes; q++)
            v[k++] = (struct pref_ref){&cfg->sites[i].prefixes[q], i, q};
    qsort(v, n, sizeof(*v), cmp_pref);
    size_t depth = 0;
    char path[256], a[64];
    for (size_t i = 0; i < n; i++) {
        while (depth && !prefixes_overlap(stack[depth - 1].p, v[i].p))
            depth--;
        for (size_t s = depth; s-- > 0;) {
            if (stack[s].site == v[i].site)
                continue;
            const struct pref_ref *late = before(&stack[s], &v[i]) ? &v[i] : &stack[s];
            const struct pref_ref *early = late == &v[i] ? &stack[s] : &v[i];
            snprintf(path, sizeof(path), "$.sites[%zu].prefixes[%zu]", late->site, late->k);
            inet_ntop(late->p->family, late->p->addr, a, sizeof(a));
            cfg_err(c, path, "prefix %s/%d overlaps $.sites[%zu].prefixes[%zu] of site \"%s\"", a,
                    late->p->len, early->site, early->k, cfg->sites[early->site].name);
            break;
        }
        stack[depth++] = v[i];
    }
    free(v);
    free(stack);
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
        if (!cfg->site_names)
            cfg->site_names = cfg_names_new((size_t)n);
        long dup = cfg_names_add(cfg->site_names, site->name, (long)cfg->n_sites);
        if (dup >= 0)
            cfg_err(c, cfg_jp_key(pp, sizeof(pp), p, "name"),
                    "duplicate site name \"%s\" (also $.sites[%ld])", site->name, dup);
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
                site->n_prefixes++;
            }
            if (site->n_prefixes == 0 && np == 0)
                cfg_err(c, pp, "expected at least one prefix");
        }
        cfg->n_sites++;
    }
    if (n == 0)
        cfg_err(c, "$.sites", "expected at least one site");
    check_overlaps(c);
}
