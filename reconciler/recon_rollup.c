/* The attribution rollup of one run (recon_internal.h): owners interned once (their strings hashed
 * and compared once per owner met, not once per hop and row), rows keyed by two integers (owner,
 * cell), and the final order (pair, bytes descending, then the owner's strings) by a counting sort
 * on the cells' order and a rank of the owners' strings, so no row compares a string.
 *
 * What it replaced (2.03 M rows of a 5 M-flow window): a table of full recon_rollup keys hashed
 * over seven strings per hop and compared with strcmp per probe, and a qsort of every row with a
 * strcmp comparator. */
#include <stdlib.h>
#include <string.h>

#include "hindex.h"
#include "hugealloc.h"
#include "recon_internal.h"

static bool same_owner(const struct recon_rollup *a, const struct recon_rollup *b)
{
    return a->source == b->source && hix_str_eq(a->workflow, b->workflow) &&
           hix_str_eq(a->user, b->user) && hix_str_eq(a->program, b->program) &&
           hix_str_eq(a->host, b->host) && hix_str_eq(a->kube.ns, b->kube.ns) &&
           hix_str_eq(a->kube.pod, b->kube.pod) && hix_str_eq(a->kube.container, b->kube.container);
}

static struct recon_rollup owner_key(const char *source, const char *workflow, const char *user,
                                     const char *program, const char *host,
                                     const struct recon_kube *kube)
{
    return (struct recon_rollup){.source = source,
                                 .workflow = rcn_str(workflow),
                                 .user = rcn_str(user),
                                 .program = rcn_str(program),
                                 .host = rcn_str(host),
                                 .kube = {rcn_str(kube ? kube->ns : NULL),
                                          rcn_str(kube ? kube->pod : NULL),
                                          rcn_str(kube ? kube->container : NULL)}};
}

static uint64_t key_hash(const struct recon_rollup *k)
{
    uint64_t h = hix_hash_str(
        hix_hash_str(
            hix_hash_str(hix_hash_str(hix_mix(0, (uintptr_t)k->source), k->workflow), k->user),
            k->program),
        k->host);
    return hix_hash_str(hix_hash_str(hix_hash_str(h, k->kube.ns), k->kube.pod), k->kube.container);
}

uint64_t rcn_owner_hash(const char *source, const char *workflow, const char *user,
                        const char *program, const char *host, const struct recon_kube *kube)
{
    struct recon_rollup k = owner_key(source, workflow, user, program, host, kube);
    return key_hash(&k);
}

int rcn_owners_init(struct rcn_owners *t, size_t expect)
{
    memset(t, 0, sizeof *t);
    return hix_init(&t->ix, expect);
}

void rcn_owners_free(struct rcn_owners *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->v[i].rows);
    huge_free(t->v);
    hix_free(&t->ix);
    memset(t, 0, sizeof *t);
}

static int eq_owner(const void *ctx, size_t idx, const void *key)
{
    return same_owner(&((const struct rcn_owners *)ctx)->v[idx].key, key);
}

int64_t rcn_owner_id_h(struct rcn_owners *t, const uint64_t *hash, const char *source,
                       const char *workflow, const char *user, const char *program,
                       const char *host, const struct recon_kube *kube)
{
    struct recon_rollup k = owner_key(source, workflow, user, program, host, kube);
    /* the flows of one report often share an owner: the last one first */
    if (t->last1 && same_owner(&t->v[t->last1 - 1].key, &k))
        return (int64_t)t->last1 - 1;
    uint64_t h = hash ? *hash : key_hash(&k);
    struct hix_slot *s = hix_find(&t->ix, h, eq_owner, t, &k);
    if (!s->idx1) {
        if (hix_grow((void **)&t->v, &t->cap, t->n + 1, sizeof *t->v))
            return -1;
        t->v[t->n] = (struct rcn_owner_ent){.key = k, .hash = h, .dep_owner = -1};
        if (hix_put(&t->ix, s, h, t->n))
            return -1;
        t->last1 = ++t->n;
        return (int64_t)t->n - 1;
    }
    t->last1 = s->idx1;
    return (int64_t)s->idx1 - 1;
}

int64_t rcn_owner_id(struct rcn_owners *t, const char *source, const char *workflow,
                     const char *user, const char *program, const char *host,
                     const struct recon_kube *kube)
{
    return rcn_owner_id_h(t, NULL, source, workflow, user, program, host, kube);
}

/* A row's first slot in a table of cap slots (a power of two). */
static size_t roll_home(uint64_t key, uint32_t cap)
{
    return (size_t)((key * 0x9e3779b97f4a7c15ULL) >> 32) & (cap - 1);
}

static struct rcn_roll_slot *roll_find(struct rcn_roll_slot *rows, uint32_t cap, uint64_t key)
{
    for (size_t j = roll_home(key, cap);; j = (j + 1) & (cap - 1))
        if (rows[j].key == key || !rows[j].key)
            return &rows[j];
}

/* The owner's table doubled (made, with 4: an owner of one row costs 64 bytes). 0 or -1. */
static int roll_grow(struct rcn_owner_ent *o)
{
    uint32_t cap = o->cap ? o->cap * 2 : 4;
    struct rcn_roll_slot *rows = calloc(cap, sizeof *rows);
    if (!rows)
        return -1;
    for (uint32_t i = 0; i < o->cap; i++)
        if (o->rows[i].key)
            *roll_find(rows, cap, o->rows[i].key) = o->rows[i];
    free(o->rows);
    o->rows = rows;
    o->cap = cap;
    return 0;
}

void rcn_roll_prefetch(const struct run *r, uint32_t owner, uint32_t cell)
{
    const struct rcn_owner_ent *o = &r->owners.v[owner];
    if (o->cap)
        __builtin_prefetch(&o->rows[roll_home((uint64_t)cell + 1, o->cap)], 1);
}

int rcn_roll_add(struct run *r, uint32_t owner, uint32_t cell, uint64_t bytes)
{
    struct rcn_owner_ent *o = &r->owners.v[owner];
    uint64_t key = (uint64_t)cell + 1;
    struct rcn_roll_slot *s = o->cap ? roll_find(o->rows, o->cap, key) : NULL;
    if (!s || !s->key) {
        if (((uint64_t)o->n + 1) * 4 >
            (uint64_t)o->cap * 3) { /* load <= 3/4: the table is in cache */
            if (roll_grow(o))
                return -1;
        }
        s = roll_find(o->rows, o->cap, key);
        s->key = key;
        o->n++;
        r->owners.n_rows++;
    }
    s->bytes += bytes;
    return 0;
}

/* The owners' rows appended to r->rolls; their tables freed. */
static int roll_flatten(struct run *r)
{
    struct rcn_owners *t = &r->owners;
    if (!t->n_rows)
        return 0;
    if (!r->rolls) {
        if (!(r->rolls = huge_alloc_filled((t->n_rows + 1) * sizeof *r->rolls)))
            return -1;
        r->cap_rolls = t->n_rows + 1;
    } else if (hix_grow((void **)&r->rolls, &r->cap_rolls, r->n_rolls + t->n_rows + 1,
                        sizeof *r->rolls)) {
        return -1;
    }
    for (size_t i = 0; i < t->n; i++) {
        struct rcn_owner_ent *o = &t->v[i];
        for (uint32_t k = 0; k < o->cap; k++)
            if (o->rows[k].key)
                r->rolls[r->n_rolls++] = (struct rcn_roll){.bytes = o->rows[k].bytes,
                                                           .owner = (uint32_t)i,
                                                           .cell = (uint32_t)o->rows[k].key - 1};
        free(o->rows);
        o->rows = NULL;
        o->cap = o->n = 0;
    }
    t->n_rows = 0;
    return 0;
}

int rcn_roll_merge(struct run *r0, struct run *rk, const uint32_t *cell_map)
{
    /* appended, not looked up: no owner of rk is in r0 (owner_part, recon_socket.c), so no row
     * either; r0's owner index no longer covers every owner, and nothing looks one up after
     * the merge */
    size_t base = r0->owners.n;
    if (roll_flatten(r0) || roll_flatten(rk) ||
        hix_grow((void **)&r0->owners.v, &r0->owners.cap, base + rk->owners.n + 1,
                 sizeof *r0->owners.v) ||
        hix_grow((void **)&r0->rolls, &r0->cap_rolls, r0->n_rolls + rk->n_rolls + 1,
                 sizeof *r0->rolls))
        return -1;
    for (size_t i = 0; i < rk->owners.n; i++) {
        r0->owners.v[base + i] = rk->owners.v[i];
        r0->owners.v[base + i].dep_owner = -1; /* rk's dependency ids mean nothing in r0 */
    }
    r0->owners.n += rk->owners.n;
    r0->owners.last1 = 0;
    for (size_t i = 0; i < rk->n_rolls; i++) {
        struct rcn_roll x = rk->rolls[i];
        x.owner += (uint32_t)base;
        x.cell = cell_map[x.cell];
        r0->rolls[r0->n_rolls++] = x;
    }
    return 0;
}

/* ---- the final order ---- */

static int cmp_owner_str(const void *a, const void *b, void *ctx)
{
    const struct rcn_owner_ent *v = ctx;
    const struct recon_rollup *x = &v[*(const uint32_t *)a].key, *y = &v[*(const uint32_t *)b].key;
    int c;
    if ((c = strcmp(x->source, y->source)) || (c = strcmp(x->workflow, y->workflow)) ||
        (c = strcmp(x->user, y->user)) || (c = strcmp(x->program, y->program)) ||
        (c = strcmp(x->host, y->host)) || (c = strcmp(x->kube.ns, y->kube.ns)) ||
        (c = strcmp(x->kube.pod, y->kube.pod)))
        return c;
    return strcmp(x->kube.container, y->kube.container);
}

/* Within one pair: bytes descending, then the owner's strings (its rank). */
struct roll_ord {
    uint64_t bytes;
    uint32_t rank, idx;
};

static int cmp_roll_ord(const void *a, const void *b)
{
    const struct roll_ord *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

int rcn_roll_finish(struct run *r, const uint32_t *cell_pos, struct recon_result *out)
{
    if (roll_flatten(r))
        return -1;
    size_t n = r->n_rolls, no = r->owners.n, nc = r->n_cells;
    int rc = -1;
    uint32_t *order = malloc((no + 1) * sizeof *order);
    uint32_t *rank = malloc((no + 1) * sizeof *rank);
    size_t *start = calloc(nc + 2, sizeof *start);
    struct roll_ord *ord = huge_alloc_filled((n + 1) * sizeof *ord);
    out->rollup = huge_alloc_filled((n + 1) * sizeof *out->rollup);
    if (!order || !rank || !start || !ord || !out->rollup)
        goto cleanup;
    for (size_t i = 0; i < no; i++)
        order[i] = (uint32_t)i;
    if (no)
        qsort_r(order, no, sizeof *order, cmp_owner_str, r->owners.v);
    for (size_t i = 0; i < no; i++)
        rank[order[i]] = (uint32_t)i;
    /* counting sort by the pair's place among the sorted cells, then each pair's rows */
    for (size_t i = 0; i < n; i++)
        start[cell_pos[r->rolls[i].cell] + 1]++;
    for (size_t c = 0; c < nc; c++)
        start[c + 1] += start[c];
    for (size_t i = 0; i < n; i++) {
        const struct rcn_roll *x = &r->rolls[i];
        ord[start[cell_pos[x->cell]]++] =
            (struct roll_ord){.bytes = x->bytes, .rank = rank[x->owner], .idx = (uint32_t)i};
    }
    for (size_t c = 0, lo = 0; c < nc; lo = start[c++])
        if (start[c] - lo > 1)
            qsort(ord + lo, start[c] - lo, sizeof *ord, cmp_roll_ord);
    for (size_t i = 0; i < n; i++) {
        const struct rcn_roll *x = &r->rolls[ord[i].idx];
        struct recon_rollup *o = &out->rollup[i];
        *o = r->owners.v[x->owner].key;
        o->owner = rank[x->owner];
        o->src_site = r->cells[x->cell].cell.src_site;
        o->dst_site = r->cells[x->cell].cell.dst_site;
        o->bytes = x->bytes;
    }
    out->n_rollup = n;
    out->n_owners = no;
    rc = 0;
cleanup:
    free(order);
    free(rank);
    free(start);
    huge_free(ord);
    return rc;
}
