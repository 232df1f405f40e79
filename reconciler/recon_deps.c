/* Accumulates the dependency rows of one window (recon_deps.h). */
#include "recon_deps.h"

#include "hugealloc.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

const char *recon_dep_kind_name(enum recon_dep_kind k)
{
    switch (k) {
    case RECON_DEP_SERVICE:
        return "service";
    case RECON_DEP_NFS:
        return "nfs";
    case RECON_DEP_TRANSFER:
        return "transfer";
    case RECON_DEP_PEER:
    default:
        return "peer";
    }
}

/* A row while it accumulates (recon_deps.h): 64 bytes, one cache line. */
#define EP_INLINE 24

struct recon_deps_slot {
    uint64_t out, in, conns;
    uint32_t owner1; /* owner id + 1; 0: an empty slot */
    int32_t local, remote;
    uint8_t kind;
    uint8_t long_ep; /* the endpoint is ep.p (owned), too long for ep.s */
    uint16_t unused;
    union {
        char s[EP_INLINE];
        char *p;
    } ep;
};

_Static_assert(sizeof(struct recon_deps_slot) == 64, "a row's slot is one cache line");

int recon_deps_init(struct recon_deps_acc *a, size_t expect)
{
    memset(a, 0, sizeof *a);
    return hix_init(&a->owner_ix, expect / 64 + 256);
}

static int eq_owner(const void *ctx, size_t idx, const void *key)
{
    const struct recon_deps_owner *x = &((const struct recon_deps_acc *)ctx)->owners[idx], *y = key;
    return hix_str_eq(x->workflow, y->workflow) && hix_str_eq(x->user, y->user) &&
           hix_str_eq(x->program, y->program);
}

int64_t recon_deps_owner(struct recon_deps_acc *a, const char *workflow, const char *user,
                         const char *program)
{
    struct recon_deps_owner k = {.workflow = workflow ? workflow : "",
                                 .user = user ? user : "",
                                 .program = program ? program : ""};
    if (a->owner_last1 && eq_owner(a, a->owner_last1 - 1, &k))
        return (int64_t)a->owner_last1 - 1;
    k.hash = hix_hash_str(hix_hash_str(hix_hash_str(0, k.workflow), k.user), k.program);
    struct hix_slot *s = hix_find(&a->owner_ix, k.hash, eq_owner, a, &k);
    if (!s->idx1) {
        if (hix_grow((void **)&a->owners, &a->cap_owners, a->n_owners + 1, sizeof *a->owners))
            return -1;
        a->owners[a->n_owners] = k;
        if (hix_put(&a->owner_ix, s, k.hash, a->n_owners))
            return -1;
        a->owner_last1 = ++a->n_owners;
    } else {
        a->owner_last1 = s->idx1;
    }
    return (int64_t)a->owner_last1 - 1;
}

static const char *slot_ep(const struct recon_deps_slot *s)
{
    return s->long_ep ? s->ep.p : s->ep.s;
}

static uint64_t key_hash(uint32_t owner, int local, int remote, int kind, const char *ep,
                         size_t len)
{
    uint64_t h =
        hix_mix(hix_mix((uint64_t)owner, (uint64_t)(uint32_t)local << 32 | (uint32_t)remote),
                (uint64_t)kind);
    return hix_hash_bytes(h, ep, len);
}

/* The slot of this key in its owner's table (cap > 0), or the empty one where it goes. */
static struct recon_deps_slot *find(struct recon_deps_slot *slots, uint32_t cap, uint64_t h,
                                    int local, int remote, int kind, const char *ep, size_t len)
{
    size_t mask = cap - 1;
    for (size_t j = (h >> 20) & mask;; j = (j + 1) & mask) {
        struct recon_deps_slot *s = &slots[j];
        if (!s->owner1)
            return s;
        if (s->local != local || s->remote != remote || s->kind != kind)
            continue;
        if (s->long_ep ? len >= EP_INLINE && strcmp(s->ep.p, ep) == 0
                       : len < EP_INLINE && memcmp(s->ep.s, ep, len + 1) == 0)
            return s;
    }
}

/* The owner's table doubled (made, with 2: an owner of one row costs 128 bytes). 0 or -1. */
static int grow(struct recon_deps_owner *o)
{
    uint32_t cap = o->cap ? o->cap * 2 : 2;
    struct recon_deps_slot *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return -1;
    for (uint32_t i = 0; i < o->cap; i++) {
        const struct recon_deps_slot *x = &o->slots[i];
        if (!x->owner1)
            continue;
        const char *ep = slot_ep(x);
        size_t len = strlen(ep);
        *find(slots, cap, key_hash(x->owner1 - 1, x->local, x->remote, x->kind, ep, len), x->local,
              x->remote, x->kind, ep, len) = *x;
    }
    free(o->slots);
    o->slots = slots;
    o->cap = cap;
    return 0;
}

uint64_t recon_deps_prefetch(const struct recon_deps_acc *a, uint32_t owner, int local_site,
                             int remote_site, enum recon_dep_kind kind, const char *endpoint)
{
    const struct recon_deps_owner *o = &a->owners[owner];
    const char *ep = endpoint ? endpoint : "";
    uint64_t h = key_hash(owner, local_site, remote_site, (int)kind, ep, strlen(ep));
    if (o->cap)
        __builtin_prefetch(&o->slots[(h >> 20) & (o->cap - 1)], 1);
    return h;
}

int recon_deps_add_o(struct recon_deps_acc *a, uint32_t owner, int local_site, int remote_site,
                     enum recon_dep_kind kind, const char *endpoint, uint64_t bytes_out,
                     uint64_t bytes_in, uint64_t connections)
{
    const char *ep = endpoint ? endpoint : "";
    return recon_deps_add_oh(a, owner,
                             key_hash(owner, local_site, remote_site, (int)kind, ep, strlen(ep)),
                             local_site, remote_site, kind, ep, bytes_out, bytes_in, connections);
}

int recon_deps_add_oh(struct recon_deps_acc *a, uint32_t owner, uint64_t h, int local_site,
                      int remote_site, enum recon_dep_kind kind, const char *endpoint,
                      uint64_t bytes_out, uint64_t bytes_in, uint64_t connections)
{
    if (bytes_out == 0 && bytes_in == 0)
        return 0;
    struct recon_deps_owner *o = &a->owners[owner];
    const char *ep = endpoint ? endpoint : "";
    size_t len = strlen(ep);
    struct recon_deps_slot *s =
        o->cap ? find(o->slots, o->cap, h, local_site, remote_site, (int)kind, ep, len) : NULL;
    if (!s || !s->owner1) {
        if (((uint64_t)o->n + 1) * 4 > (uint64_t)o->cap * 3 &&
            grow(o)) /* load <= 3/4: the table is in cache */
            return -1;
        s = find(o->slots, o->cap, h, local_site, remote_site, (int)kind, ep, len);
        struct recon_deps_slot v = {
            .owner1 = owner + 1, .local = local_site, .remote = remote_site, .kind = (uint8_t)kind};
        if (len < EP_INLINE) {
            memcpy(v.ep.s, ep, len + 1);
        } else {
            v.long_ep = 1;
            if (!(v.ep.p = strdup(ep)))
                return -1;
        }
        *s = v;
        o->n++;
        a->n++;
    }
    s->out += bytes_out;
    s->in += bytes_in;
    s->conns += connections;
    return 0;
}

int recon_deps_add(struct recon_deps_acc *a, int local_site, int remote_site, const char *workflow,
                   const char *user, const char *program, enum recon_dep_kind kind,
                   const char *endpoint, uint64_t bytes_out, uint64_t bytes_in,
                   uint64_t connections)
{
    if (bytes_out == 0 && bytes_in == 0)
        return 0;
    int64_t o = recon_deps_owner(a, workflow, user, program);
    return o < 0 ? -1
                 : recon_deps_add_o(a, (uint32_t)o, local_site, remote_site, kind, endpoint,
                                    bytes_out, bytes_in, connections);
}

int recon_deps_merge(struct recon_deps_acc *into, const struct recon_deps_acc *from)
{
    for (size_t i = 0; i < from->n_owners; i++) {
        const struct recon_deps_owner *o = &from->owners[i];
        for (uint32_t k = 0; k < o->cap; k++) {
            const struct recon_deps_slot *s = &o->slots[k];
            if (s->owner1 &&
                recon_deps_add(into, s->local, s->remote, o->workflow, o->user, o->program,
                               (enum recon_dep_kind)s->kind, slot_ep(s), s->out, s->in, s->conns))
                return -1;
        }
    }
    return 0;
}

/* ---- the order: local site, owner (workflow, user, program), bytes descending, remote site,
 * kind, endpoint. The owners are ranked once (a sort of the distinct owners by strcmp) and the
 * rows sorted on integers, the endpoint compared only between rows equal in all the rest. ---- */

struct dep_ord {
    int32_t local, remote;
    uint32_t rank, kind;
    uint64_t total;
    const struct recon_deps_slot *slot;
};

static int cmp_owner_str(const void *pa, const void *pb, void *ctx)
{
    const struct recon_deps_owner *v = ctx;
    const struct recon_deps_owner *x = &v[*(const uint32_t *)pa], *y = &v[*(const uint32_t *)pb];
    int c = strcmp(x->workflow, y->workflow);
    if (!c)
        c = strcmp(x->user, y->user);
    if (!c)
        c = strcmp(x->program, y->program);
    return c;
}

static int cmp_dep_ord(const void *pa, const void *pb)
{
    const struct dep_ord *x = pa, *y = pb;
    if (x->local != y->local)
        return x->local < y->local ? -1 : 1;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    if (x->total != y->total)
        return x->total > y->total ? -1 : 1;
    if (x->remote != y->remote)
        return x->remote < y->remote ? -1 : 1;
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    return strcmp(slot_ep(x->slot), slot_ep(y->slot));
}

int recon_deps_take(struct recon_deps_acc *a, struct recon_dep **rows, size_t *n)
{
    int rc = -1;
    size_t m = 0;
    uint32_t *order = malloc((a->n_owners + 1) * sizeof *order);
    uint32_t *rank = malloc((a->n_owners + 1) * sizeof *rank);
    struct dep_ord *ord = huge_alloc_filled((a->n + 1) * sizeof *ord);
    struct recon_dep *out = huge_alloc_filled((a->n + 1) * sizeof *out);
    if (!order || !rank || !ord || !out)
        goto cleanup;
    for (size_t i = 0; i < a->n_owners; i++)
        order[i] = (uint32_t)i;
    if (a->n_owners)
        qsort_r(order, a->n_owners, sizeof *order, cmp_owner_str, a->owners);
    for (size_t i = 0; i < a->n_owners; i++)
        rank[order[i]] = (uint32_t)i;
    for (size_t i = 0; i < a->n_owners; i++)
        for (uint32_t k = 0; k < a->owners[i].cap; k++) {
            const struct recon_deps_slot *s = &a->owners[i].slots[k];
            if (s->owner1)
                ord[m++] = (struct dep_ord){.local = s->local,
                                            .remote = s->remote,
                                            .rank = rank[i],
                                            .kind = s->kind,
                                            .total = s->out + s->in,
                                            .slot = s};
        }
    if (m)
        qsort(ord, m, sizeof *ord, cmp_dep_ord);
    for (size_t i = 0; i < m; i++) {
        const struct recon_deps_slot *s = ord[i].slot;
        const struct recon_deps_owner *o = &a->owners[s->owner1 - 1];
        char *ep = strdup(slot_ep(s));
        if (!ep) {
            recon_deps_free(out, i);
            out = NULL;
            goto cleanup;
        }
        out[i] = (struct recon_dep){.local_site = s->local,
                                    .remote_site = s->remote,
                                    .workflow = o->workflow,
                                    .user = o->user,
                                    .program = o->program,
                                    .kind = (enum recon_dep_kind)s->kind,
                                    .endpoint = ep,
                                    .bytes_out = s->out,
                                    .bytes_in = s->in,
                                    .connections = s->conns};
    }
    *rows = out;
    *n = m;
    out = NULL;
    rc = 0;
cleanup:
    free(order);
    free(rank);
    huge_free(ord);
    huge_free(out);
    return rc;
}

void recon_deps_free(struct recon_dep *rows, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(rows[i].endpoint);
    huge_free(rows);
}

void recon_deps_acc_free(struct recon_deps_acc *a)
{
    for (size_t i = 0; i < a->n_owners; i++) {
        struct recon_deps_owner *o = &a->owners[i];
        for (uint32_t k = 0; k < o->cap; k++)
            if (o->slots[k].owner1 && o->slots[k].long_ep)
                free(o->slots[k].ep.p);
        free(o->slots);
    }
    huge_free(a->owners);
    hix_free(&a->owner_ix);
    memset(a, 0, sizeof *a);
}
