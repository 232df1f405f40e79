/* Growable array of flow records for one window. */
#include "flowset.h"

#include <stdlib.h>
#include <string.h>

struct flow_rec *flowset_add(struct flowset *fs)
{
    if (fs->n == fs->cap) {
        size_t cap = fs->cap ? fs->cap * 2 : 256;
        struct flow_rec *v = realloc(fs->v, cap * sizeof(*v));
        if (!v)
            return NULL;
        fs->v = v;
        fs->cap = cap;
    }
    struct flow_rec *r = &fs->v[fs->n++];
    memset(r, 0, sizeof(*r));
    return r;
}

void flowset_clear(struct flowset *fs)
{
    fs->n = 0;
}

void flowset_free(struct flowset *fs)
{
    free(fs->v);
    fs->v = NULL;
    fs->n = fs->cap = 0;
}

uint64_t flowset_weight(const struct flow_rec *r)
{
    return r->source == FLOW_SRC_SOCKET ? r->tx_bytes + r->rx_bytes : r->bytes;
}
