/* A window's NFS records with their error counts and latency histograms. */
#include "nfsops.h"

#include <stdlib.h>
#include <string.h>

struct flow_rec *nfsops_add(struct nfsops *o, struct nfsop_detail **detail)
{
    if (o->recs.n == o->detail_cap) {
        size_t cap = o->detail_cap ? o->detail_cap * 2 : 64;
        struct nfsop_detail *d = realloc(o->detail, cap * sizeof(*d));
        if (!d)
            return NULL;
        o->detail = d;
        o->detail_cap = cap;
    }
    struct flow_rec *r = flowset_add(&o->recs);
    if (!r)
        return NULL;
    *detail = &o->detail[o->recs.n - 1];
    memset(*detail, 0, sizeof(**detail));
    return r;
}

void nfsops_clear(struct nfsops *o)
{
    flowset_clear(&o->recs);
}

void nfsops_free(struct nfsops *o)
{
    flowset_free(&o->recs);
    free(o->detail);
    o->detail = NULL;
    o->detail_cap = 0;
}
